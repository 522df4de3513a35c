"""python -m gpuconv.bench: gpuconv.convolve on CuPy arrays against the peers Python users have.

In one run, per case (planes x N^2, fp32, 'same', zero boundary, so that every peer computes
the same thing) and kernel size K:
- gpuconv.convolve (plan cache) and a held gpuconv.Plan with a preallocated output;
- the C++ execute_device time of that plan (CUDA events, in the module: the floor for the
  Python calls above);
- cupyx.scipy.signal.fftconvolve, torch.nn.functional.conv2d (cuDNN, fp32, TF32 off,
  cudnn.benchmark on) and a torch.fft pipeline (rfft2 of the zero-padded image to a 7-smooth
  size, a multiply by the kernel's spectrum computed once, irfft2, the centre cropped).
Times are medians of CUDA-event timings around each call on the current stream. Results are
checked against gpuconv's (relative L2). Then the Python per-call overhead on a 64^2 image
with a cached plan: a Python loop of plan calls against the module's C++ loop of
execute_device calls, wall time per call.

Prints a table (ms, Gpix/s, ratio to the best peer) and writes it as markdown to --out.
Needs a CUDA device and CuPy (PyTorch optional: its peers are then left out); without them it
says so and exits 0.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

import gpuconv

CASES = [(1, 4096), (64, 256), (1024, 64)]
KERNELS = [3, 7, 15, 31, 63, 127]


def smooth_size(n: int) -> int:
    """Smallest 7-smooth integer >= n (sizes cuFFT transforms fastest)."""
    m = n
    while True:
        r = m
        for p in (2, 3, 5, 7):
            while r % p == 0:
                r //= p
        if r == 1:
            return m
        m += 1


class Bench:
    def __init__(self, repeat: int) -> None:
        import cupy

        self.cp = cupy
        self.repeat = repeat
        try:
            import torch

            self.torch: Optional[Any] = torch if torch.cuda.is_available() else None
        except ImportError:
            self.torch = None
        if self.torch is not None:
            self.torch.backends.cudnn.allow_tf32 = False
            self.torch.backends.cuda.matmul.allow_tf32 = False
            self.torch.backends.cudnn.benchmark = True

    def time_cupy(self, fn: Callable[[], Any]) -> float:
        """Median milliseconds of fn() between two events on CuPy's current stream."""
        cp = self.cp
        for _ in range(3):
            fn()
        events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(self.repeat)]
        for start, stop in events:
            start.record()
            fn()
            stop.record()
        events[-1][1].synchronize()
        return statistics.median(cp.cuda.get_elapsed_time(a, b) for a, b in events)

    def time_torch(self, fn: Callable[[], Any]) -> float:
        torch = self.torch
        for _ in range(3):
            fn()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(self.repeat)]
        for start, stop in events:
            start.record()
            fn()
            stop.record()
        events[-1][1].synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in events)

    def case(self, planes: int, n: int, K: int, rng: np.random.Generator) -> Dict[str, Any]:
        cp = self.cp
        x = cp.asarray(rng.standard_normal((planes, n, n), dtype=np.float32))
        k = rng.standard_normal((K, K)).astype(np.float32) / K
        row: Dict[str, Any] = {"case": f"{planes}x{n}^2", "K": K, "pixels": planes * n * n}

        ref = gpuconv.convolve(x, k, boundary="zero")
        row["convolve"] = self.time_cupy(lambda: gpuconv.convolve(x, k, boundary="zero"))
        plan = gpuconv.Plan(x.shape, k, boundary="zero", device=f"cuda:{x.device.id}")
        out = cp.empty_like(x)
        row["plan"] = self.time_cupy(lambda: plan(x, out=out))
        stream = cp.cuda.get_current_stream().ptr
        ms, _ = plan._core.time_execute_device(x.data.ptr, out.data.ptr, "float32", stream, self.repeat, 3)
        row["cpp"] = statistics.median(ms)
        row["path"] = plan.path
        diffs: List[float] = []

        def agree(y: Any) -> None:
            y = cp.asarray(y).reshape(ref.shape)
            diffs.append(float(cp.linalg.norm(y - ref) / cp.linalg.norm(ref)))

        import cupyx.scipy.signal

        k3 = cp.asarray(k[None])
        agree(cupyx.scipy.signal.fftconvolve(x, k3, mode="same", axes=(-2, -1)))
        row["cupy"] = self.time_cupy(lambda: cupyx.scipy.signal.fftconvolve(x, k3, mode="same", axes=(-2, -1)))
        if self.torch is not None:
            torch = self.torch
            xt = torch.as_tensor(x, device="cuda").view(planes, 1, n, n)
            # conv2d correlates: the flipped kernel convolves
            w = torch.as_tensor(np.ascontiguousarray(k[::-1, ::-1]), device="cuda").view(1, 1, K, K)
            F = torch.nn.functional
            try:
                agree(F.conv2d(xt, w, padding=K // 2))
                row["cudnn"] = self.time_torch(lambda: F.conv2d(xt, w, padding=K // 2))
            except RuntimeError as e:  # e.g. out of memory for a workspace
                row["cudnn"] = None
                row["note"] = f"cuDNN: {str(e).splitlines()[0][:60]}"
            L = smooth_size(n + K - 1)
            kf = torch.fft.rfft2(torch.as_tensor(k, device="cuda"), s=(L, L))
            c = (K - 1) // 2

            def fft_pipeline() -> Any:
                y = torch.fft.irfft2(torch.fft.rfft2(xt, s=(L, L)) * kf, s=(L, L))
                return y[..., c:c + n, c:c + n]

            agree(fft_pipeline())
            row["torchfft"] = self.time_torch(fft_pipeline)
        row["maxdiff"] = max(diffs) if diffs else float("nan")
        peers = [row.get(p) for p in ("cupy", "cudnn", "torchfft") if row.get(p)]
        row["best_peer"] = min(peers)
        return row

    def overhead(self, rng: np.random.Generator, calls: int = 2000) -> Dict[str, float]:
        """Wall time per call of plan(x, out=out) in a Python loop against the C++ loop."""
        cp = self.cp
        x = cp.asarray(rng.standard_normal((1, 64, 64), dtype=np.float32))
        out = cp.empty_like(x)
        k = rng.standard_normal((7, 7)).astype(np.float32)
        plan = gpuconv.Plan(x.shape, k, boundary="zero")
        stream = cp.cuda.get_current_stream()
        results = {}
        for _ in range(3):  # the best of three rounds of each
            for _ in range(100):
                plan(x, out=out)
            stream.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                plan(x, out=out)
            stream.synchronize()
            py = (time.perf_counter() - t0) / calls * 1e3
            ms, cpp = plan._core.time_execute_device(x.data.ptr, out.data.ptr, "float32", stream.ptr, calls, 100)
            for _ in range(100):
                gpuconv.convolve(x, k, boundary="zero")
            stream.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                gpuconv.convolve(x, k, boundary="zero")
            stream.synchronize()
            conv = (time.perf_counter() - t0) / calls * 1e3
            if not results or py < results["python_ms"]:
                results.update(python_ms=py, cpp_ms=cpp, gpu_ms=statistics.median(ms))
            results["convolve_ms"] = min(conv, results.get("convolve_ms", conv))
        return results


def fmt(v: Optional[float], spec: str = ".3f") -> str:
    return "-" if v is None else format(v, spec)


def table(rows: List[Dict[str, Any]], torch: bool) -> List[str]:
    head = ["case", "K", "path", "convolve ms", "Gpix/s", "Plan ms", "Gpix/s", "C++ ms", "Plan vs C++",
            "cupyx fftconvolve ms"]
    if torch:
        head += ["cuDNN conv2d ms", "torch.fft ms"]
    head += ["best peer / convolve", "max rel diff"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        gp = lambda ms: r["pixels"] / (ms * 1e-3) / 1e9  # noqa: E731
        cells = [r["case"], str(r["K"]), r["path"], fmt(r["convolve"]), fmt(gp(r["convolve"]), ".1f"),
                 fmt(r["plan"]), fmt(gp(r["plan"]), ".1f"), fmt(r["cpp"]),
                 f"{(r['plan'] / r['cpp'] - 1) * 100:+.1f}%", fmt(r["cupy"])]
        if torch:
            cells += [fmt(r.get("cudnn")), fmt(r.get("torchfft"))]
        cells += [f"{r['best_peer'] / r['convolve']:.2f}x", f"{r['maxdiff']:.1e}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpuconv.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the table as markdown to this file")
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per measurement (median)")
    ap.add_argument("--cases", default=",".join(f"{p}x{n}" for p, n in CASES), help="PLANESxN,... (default %(default)s)")
    ap.add_argument("--kernels", default=",".join(map(str, KERNELS)), help="K,... (default %(default)s)")
    args = ap.parse_args(argv)

    try:
        import cupy
        import cupyx.scipy.signal  # noqa: F401
    except ImportError:
        print("gpuconv.bench: needs CuPy (and a CUDA device) to run; not run.")
        return 0
    if not gpuconv.cuda_available() or cupy.cuda.runtime.getDeviceCount() == 0:
        print("gpuconv.bench: needs a CUDA device; none is present: not run.")
        return 0

    bench = Bench(args.repeat)
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    versions = f"gpuconv {gpuconv.__version__}, CuPy {cupy.__version__}"
    if bench.torch is not None:
        versions += f", PyTorch {bench.torch.__version__} (cuDNN {bench.torch.backends.cudnn.version()})"
    else:
        versions += ", PyTorch not available: cuDNN and torch.fft left out"
    print(f"gpuconv.bench on {name}: {versions}", flush=True)
    cases = [tuple(int(v) for v in c.split("x")) for c in args.cases.split(",")]
    rng = np.random.default_rng(1)
    rows = []
    for planes, n in cases:
        for K in (int(v) for v in args.kernels.split(",")):
            r = bench.case(planes, n, K, rng)
            rows.append(r)
            print(f"  {r['case']:>10} K={K:<3} convolve {r['convolve']:.3f} ms, plan {r['plan']:.3f} ms, "
                  f"C++ {r['cpp']:.3f} ms, best peer {r['best_peer']:.3f} ms "
                  f"({r['best_peer'] / r['convolve']:.2f}x), max rel diff {r['maxdiff']:.1e}"
                  + (f" [{r['note']}]" if r.get("note") else ""), flush=True)
            bench.cp.get_default_memory_pool().free_all_blocks()
    o = bench.overhead(rng)
    over_us = (o["python_ms"] - o["cpp_ms"]) * 1e3
    over_line = (f"Python overhead, 1x64^2, K = 7, cached plan: Plan call {o['python_ms'] * 1e3:.1f} us wall per call, "
                 f"C++ execute_device loop {o['cpp_ms'] * 1e3:.1f} us per call (GPU {o['gpu_ms'] * 1e3:.1f} us): "
                 f"{over_us:.1f} us overhead, within {(o['python_ms'] / o['cpp_ms'] - 1) * 100:.0f}% of C++; "
                 f"gpuconv.convolve (plan cache) {o['convolve_ms'] * 1e3:.1f} us per call")
    worst = max(r["maxdiff"] for r in rows)
    agree_line = f"Results agree with every peer: max relative L2 difference {worst:.1e}" + (
        "" if worst <= 1e-4 else " (ABOVE 1e-4: check)")
    lines = table(rows, bench.torch is not None)
    print()
    print("\n".join(lines))
    print()
    print(over_line)
    print(agree_line)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# python -m gpuconv.bench\n\n{name}; {versions}. fp32, 'same', zero boundary; medians of "
                    f"{args.repeat} CUDA-event timings per call on the current stream. Gpix/s = planes x N^2 / time. "
                    "'Plan vs C++': a held Plan's call against the C++ execute_device time of the same plan. "
                    "'best peer / convolve' > 1: gpuconv is faster.\n\n")
            f.write("\n".join(lines) + "\n\n" + over_line + "\n\n" + agree_line + "\n")
        print(f"gpuconv.bench: markdown table in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
