#!/usr/bin/env python3
"""NumPy in, NumPy out: gpuconv on host arrays against what a NumPy user would do instead.

Issue 12 (host calls at PCIe speed) as a Python user meets it: the image is a NumPy array in
ordinary (pageable) memory and the result must come back as one. In one run, per case
(3 x 3000 x 4000 and 1 x 4096^2 float32, and 3 x 3000 x 4000 uint8 - a photo's planes -, K = 9
and 31, 'same', zero boundary, convolution - scipy.signal.fftconvolve's function), medians of
interleaved calls:

- gpuconv.Plan(device="cuda") called on the NumPy array with ``out=``, without (a new result:
  "gpuconv ms" from the package's reused host blocks, "fresh ms" in fresh memory with
  GPUCONV_HOST_CACHE_MB=0), and the
  same calls back to back inside C++ (``Plan._core.time_execute_host``: no Python, no peer
  between them) - the call's own time against what happens between calls;
- CuPy: cupy.asarray -> cupyx.scipy.signal.fftconvolve per plane -> .get();
- PyTorch: torch.from_numpy(...).cuda() -> torch.nn.functional.conv2d (cuDNN) -> .cpu();
- OpenCV on the CPU: cv2.filter2D per plane, BORDER_CONSTANT, every core;
- the floor: the input's host-to-device plus the output's device-to-host copy from and to
  page-locked memory (CuPy), each alone.

Results are checked against the CuPy output (relative L2; uint8: at most 1 level apart). Needs numpy, gpuconv (installed),
cupy, torch, cv2; a peer whose module is missing is left out with a note.

    python scripts/numpy-peer.py [--repeat 9] [--out table.md] [--peers cupy,torch,cv2]

--peers names the peers to import and time (the floor and the reference always use CuPy);
--peers '' times gpuconv alone (with GPUCONV_HOST_STATS=1 in the environment the library then
prints each call's copy time and rate). The header prints the CPUs the process may run on
after the imports (a peer's import that narrowed them would slow gpuconv's copy threads).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import gpuconv

CASES = [((3, 3000, 4000), 9, "float32"), ((3, 3000, 4000), 31, "float32"), ((1, 4096, 4096), 9, "float32"),
         ((1, 4096, 4096), 31, "float32"), ((3, 3000, 4000), 9, "uint8"), ((3, 3000, 4000), 31, "uint8")]
# uint8 cases: a photo's planes (random levels) and a non-negative kernel of sum 1; every path
# rounds and saturates (CuPy / torch compute in float32 then round half to even and clip, cv2
# filters uint8 itself); checked by the largest difference in levels against CuPy's (<= 1)


def medians(calls, repeat):
    """Medians (ms) of `repeat` interleaved rounds over `calls` ({name: call}), after one
    warm-up each; {name: ms}."""
    for c in calls.values():
        c()
    times = {name: [] for name in calls}
    for _ in range(repeat):
        for name, c in calls.items():
            t0 = time.perf_counter()
            c()
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def rel_l2(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--out", help="write the table as markdown here too")
    ap.add_argument("--peers", default="cupy,torch,cv2", help="peers to time (default %(default)s)")
    args = ap.parse_args()
    if not gpuconv.cuda_available():
        print("numpy-peer: no CUDA device; nothing to measure")
        return 0
    try:
        import cupy as cp
        import cupyx.scipy.signal as cps
    except ImportError:
        print("numpy-peer: needs CuPy (the reference and the floor)")
        return 1
    peers = [p for p in args.peers.split(",") if p]
    torch = cv2 = None
    if "torch" in peers:
        try:
            import torch
            import torch.nn.functional as F
        except ImportError:
            print("numpy-peer: no torch")
    if "cv2" in peers:
        try:
            import cv2
        except ImportError:
            print("numpy-peer: no cv2")
    time_cupy = "cupy" in peers

    rng = np.random.default_rng(7)
    rows = []
    failed = []
    header = ("case", "MB in", "floor ms", "gpuconv out= ms", "C++ loop ms", "gpuconv ms", "fresh ms", "CuPy ms", "torch ms", "cv2 ms",
              "gpuconv/best peer", "% floor", "rel L2 (CuPy) / max levels")
    print(f"numpy-peer: gpuconv {gpuconv.__version__}, CuPy {cp.__version__}"
          + (f", torch {torch.__version__}" if torch else ", no torch")
          + (f", cv2 {cv2.__version__} ({cv2.getNumThreads()} threads)" if cv2 else ", no cv2")
          + f"; medians of {args.repeat} interleaved calls, NumPy arrays in pageable memory in and out;"
          + f" CPUs allowed: {len(os.sched_getaffinity(0))} of {os.cpu_count()}")
    for shape, K, dtype in CASES:
        planes, h, w = shape
        narrow = dtype == "uint8"
        if narrow:
            x = rng.integers(0, 256, shape, dtype=np.uint8)
            k = rng.random((K, K), dtype=np.float32)
            k /= k.sum()
        else:
            x = rng.standard_normal(shape, dtype=np.float32)
            k = rng.standard_normal((K, K), dtype=np.float32) / K
        plan = gpuconv.Plan(shape, k, mode="same", boundary="zero", dtype=dtype, device="cuda")
        out = np.empty(plan.output_shape, dtype=dtype)
        kd = cp.asarray(k)

        def narrowed_cp(y):  # float32 -> uint8 as gpuconv does: round half to even, saturate
            return cp.clip(cp.rint(y), 0, 255).astype(cp.uint8) if narrow else y

        def ours_out():
            plan(x, out=out)

        def ours_new():  # a new result each call: the package's reused host blocks (gpuconv._hostbuf)
            return plan(x)

        def ours_fresh():  # a new result in fresh memory (the block cache off): first-touch page faults
            before = os.environ.get("GPUCONV_HOST_CACHE_MB")
            os.environ["GPUCONV_HOST_CACHE_MB"] = "0"
            try:
                return plan(x)
            finally:
                if before is None:
                    del os.environ["GPUCONV_HOST_CACHE_MB"]
                else:
                    os.environ["GPUCONV_HOST_CACHE_MB"] = before

        def cupy_trip():
            xd = cp.asarray(x).astype(cp.float32, copy=False)
            y = cp.stack([cps.fftconvolve(xd[p], kd, mode="same") for p in range(planes)])
            return narrowed_cp(y).get()

        calls = {"ours_out": ours_out, "ours_new": ours_new, "ours_fresh": ours_fresh}
        if time_cupy:
            calls["cupy"] = cupy_trip
        if torch is not None:
            # conv2d correlates: the flipped kernel makes it a convolution; 'same' for odd K
            kt = torch.from_numpy(np.ascontiguousarray(k[::-1, ::-1])).cuda().reshape(1, 1, K, K)

            def torch_trip():
                xt = torch.from_numpy(x).cuda().reshape(planes, 1, h, w).float()
                y = F.conv2d(xt, kt, padding=K // 2).reshape(planes, h, w)
                if narrow:
                    y = y.round().clamp(0, 255).to(torch.uint8)
                return y.cpu().numpy()

            calls["torch"] = torch_trip
        if cv2 is not None:
            kflip = np.ascontiguousarray(k[::-1, ::-1])
            cv_out = np.empty_like(x)

            def cv_cpu():
                for p in range(planes):
                    cv2.filter2D(x[p], -1, kflip, dst=cv_out[p], borderType=cv2.BORDER_CONSTANT)
                return cv_out

            calls["cv2"] = cv_cpu

        # the floor: page-locked H2D of the input and D2H of the output, each alone
        pin_in = cp.cuda.alloc_pinned_memory(x.nbytes)
        pin_out = cp.cuda.alloc_pinned_memory(x.nbytes)
        hin = np.frombuffer(pin_in, dtype=x.dtype, count=x.size).reshape(shape)
        hout = np.frombuffer(pin_out, dtype=x.dtype, count=x.size).reshape(shape)
        hin[...] = x
        dbuf = cp.empty(shape, dtype=x.dtype)

        def h2d():
            dbuf.set(hin)
            cp.cuda.Device().synchronize()

        def d2h():
            dbuf.get(out=hout)
            cp.cuda.Device().synchronize()

        ms = medians({**calls, "h2d": h2d, "d2h": d2h}, args.repeat)
        floor = ms["h2d"] + ms["d2h"]
        loop_ms = statistics.median(plan._core.time_execute_host(x, out, args.repeat, 1))
        ref = cupy_trip()
        ours_out()

        def differs(a):  # (figure, too large?): rel L2 for float32, the largest level difference for uint8
            if narrow:
                d = float(np.abs(a.astype(np.int16) - ref.astype(np.int16)).max())
                return d, d > 1
            d = rel_l2(a, ref)
            return d, d > 1e-5

        err, bad_ours = differs(out)
        if torch is not None:
            err_t, bad = differs(torch_trip())
            if bad:
                print(f"numpy-peer: torch differs from CuPy ({err_t:.2g})")
        if cv2 is not None:
            err_c, bad = differs(cv_cpu())
            if bad:
                print(f"numpy-peer: cv2 differs from CuPy ({err_c:.2g})")
        peer = {name: ms.get(name, float("nan")) for name in ("cupy", "torch", "cv2")}
        timed = [v for name, v in peer.items() if name in ms]
        best = min(timed) if timed else float("nan")
        ours = ms["ours_out"]
        name = f"{planes}x{h}x{w} K={K}" + (" uint8" if narrow else "")
        rows.append((name, f"{x.nbytes / 1e6:.0f}", f"{floor:.2f}", f"{ours:.2f}", f"{loop_ms:.2f}",
                     f"{ms['ours_new']:.2f}", f"{ms['ours_fresh']:.2f}", f"{peer['cupy']:.2f}", f"{peer['torch']:.2f}", f"{peer['cv2']:.2f}",
                     f"{best / ours:.2f}x", f"{100 * floor / ours:.0f}%", f"{err:.0f} levels" if narrow else f"{err:.1e}"))
        if bad_ours:
            failed.append(name)
        print("  ".join(rows[-1]), flush=True)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    table = ["  ".join(h.ljust(wd) for h, wd in zip(header, widths))]
    table += ["  ".join(c.ljust(wd) for c, wd in zip(r, widths)) for r in rows]
    print("\n".join(table))
    if args.out:
        with open(args.out, "w") as f:
            f.write("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
            for r in rows:
                f.write("| " + " | ".join(r) + " |\n")
    if failed:
        print(f"numpy-peer: results differ from CuPy's in {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
