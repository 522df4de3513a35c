"""python -m gpuconv.bench_cpu: gpuconv's CPU backend against OpenCV on the same cores.

In one run, per case, a held ``gpuconv.Plan(device="cpu", threads=T)`` against
``cv2.filter2D`` (a dense random kernel) and ``cv2.sepFilter2D`` (a gaussian, which gpuconv's
method chooser detects as rank-1), both correlating with BORDER_REFLECT_101 ("reflect101"),
OpenCV on ``cv2.setNumThreads(T)``. Cases: 4096^2 float32 and uint8, and a 12 MP RGB photo
(3000 x 4000 x 3 uint8, interleaved as OpenCV holds it; gpuconv convolves the three planes of
the same pixels, its layout - the deinterleave is not timed), K in 3..127. Times are medians of
wall-clock calls, after one warm-up of each, in interleaved rounds (gpuconv, OpenCV, gpuconv,
...) so that both sides meet the same state of a shared machine (memory bandwidth moved 2-3x
between minutes on the GPU host); a 20 ms pause precedes every timed call, so that each side
starts on idle cores (OpenCV's workers spin for a while after a call). Ratios above 1 mean
gpuconv is faster. Results are checked (float: relative L2; uint8: largest difference in levels).

Then thread scaling (``--scaling``, on by default), K=31, timed with 1, 2, 4, ... up to T threads,
gpuconv and OpenCV alike, every thread count in every round: 4096^2 float32 dense and gaussian,
4096^2 uint8 gaussian, 12 MP RGB uint8 gaussian; parallel efficiency = time on one thread /
(threads x time on them).

Needs cv2 (opencv-python); without it says so and exits 0. This is the run for the 16-core GPU
host, where OpenCV's C++ library is missing (gpuconv-bench-cpu needs it).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, List, Tuple

import numpy as np

import gpuconv

KERNELS = [3, 7, 15, 31, 63, 127]


def interleaved_medians(calls: List[Tuple[Callable[[], Any], Callable[[], Any]]], repeat: int) -> List[float]:
    """Medians (ms) of `repeat` interleaved rounds over `calls`, (prepare, call) pairs: every call
    once a round, in order, after a warm-up of each; prepare runs untimed before its call, then a
    20 ms pause, then the timed call."""
    for prepare, call in calls:
        prepare()
        call()
    times: List[List[float]] = [[] for _ in calls]
    for _ in range(repeat):
        for (prepare, call), into in zip(calls, times):
            prepare()
            time.sleep(0.02)
            t0 = time.perf_counter()
            call()
            into.append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(t) for t in times]


def interleaved_ms(ours: Callable[[], Any], theirs: Callable[[], Any], repeat: int) -> Tuple[float, float]:
    """Medians (ms) of `repeat` interleaved rounds {ours, theirs}, after a warm-up of each; each
    timed call starts after a 20 ms pause."""
    ours_ms, theirs_ms = interleaved_medians([(lambda: None, ours), (lambda: None, theirs)], repeat)
    return ours_ms, theirs_ms


def gaussian_1d(k: int) -> np.ndarray:
    sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8  # OpenCV's getGaussianKernel rule
    x = np.arange(k) - (k - 1) / 2
    g = np.exp(-x * x / (2 * sigma * sigma))
    return (g / g.sum()).astype(np.float32)


def photo_like(rng: Any) -> np.ndarray:
    """A photo-like 12 MP image, 3000 x 4000 x 3 uint8: smooth structure plus texture, not flat noise."""
    yy, xx = np.mgrid[0:3000, 0:4000].astype(np.float32)
    photo = np.stack([128 + 80 * np.sin(xx * 0.002 * (c + 1) + yy * 0.003) + 25 * np.cos(xx * 0.05 - yy * 0.04)
                      for c in range(3)], axis=-1)
    return np.clip(photo + rng.normal(0, 6, photo.shape), 0, 255).astype(np.uint8)


def difference(a: np.ndarray, b: np.ndarray) -> str:
    if a.dtype == np.float32:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        return f"{np.linalg.norm(a64 - b64) / max(np.linalg.norm(b64), 1e-30):.1e}"
    return f"{int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())} lv"


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gpuconv.bench_cpu", description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for both (default: every core)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per case (median)")
    ap.add_argument("--kernels", default=",".join(map(str, KERNELS)), help="kernel sizes, comma-separated")
    ap.add_argument("--out", help="also write the table as markdown to this file")
    ap.add_argument("--no-scaling", dest="scaling", action="store_false", help="skip the thread-scaling table")
    args = ap.parse_args(argv)
    try:
        import cv2
    except ImportError:
        print("gpuconv.bench_cpu: cv2 (OpenCV for Python) is not installed; nothing to compare with")
        return 0
    cv2.setNumThreads(args.threads)
    kernels = [int(k) for k in args.kernels.split(",")]
    rng = np.random.default_rng(1)

    photo = photo_like(rng)  # H x W x 3
    planar = np.ascontiguousarray(np.moveaxis(photo, -1, 0))  # 3 x H x W, the same pixels
    square = rng.random((4096, 4096), dtype=np.float32) * 255

    cases = [("4096^2 f32", square, square), ("4096^2 u8", square.astype(np.uint8), square.astype(np.uint8)),
             ("12MP RGB u8", photo, planar)]
    rows = []
    header = (f"{'case':<13} {'kind':<5} {'K':>4} | {'gpuconv ms':>10} {'method':>9} | {'OpenCV ms':>9} | "
              f"{'ratio':>6} | {'diff':>8}")
    print(f"gpuconv.bench_cpu: {args.threads} threads each (os.cpu_count() = {os.cpu_count()}), OpenCV {cv2.__version__}, "
          f"medians of {args.repeat}; ratio = OpenCV time / gpuconv time")
    print(header)
    print("-" * len(header))
    for name, cv_image, our_image in cases:
        for kind in ("dense", "sep"):
            for k in kernels:
                if kind == "dense":
                    kernel = rng.standard_normal((k, k)).astype(np.float32) / k
                    kernel[k // 2, k // 2] += 1.0

                    def opencv(img=cv_image, kern=kernel):
                        return cv2.filter2D(img, -1, kern, borderType=cv2.BORDER_REFLECT_101)
                else:
                    g = gaussian_1d(k)
                    kernel = np.outer(g, g).astype(np.float32)

                    def opencv(img=cv_image, g=g):
                        return cv2.sepFilter2D(img, -1, g, g, borderType=cv2.BORDER_REFLECT_101)
                plan = gpuconv.Plan(our_image.shape, kernel, boundary="reflect101", correlate=True, device="cpu",
                                    threads=args.threads)
                out = np.empty(plan.output_shape, our_image.dtype)
                ours_ms, cv_ms = interleaved_ms(lambda: plan(our_image, out=out), opencv, args.repeat)
                expected = opencv()
                if expected.ndim == 3:
                    expected = np.moveaxis(expected, -1, 0)
                diff = difference(out, expected)
                method = plan.method if hasattr(plan, "method") else "?"
                line = (f"{name:<13} {kind:<5} {k:>4} | {ours_ms:>10.2f} {method:>9} | {cv_ms:>9.2f} | "
                        f"{cv_ms / ours_ms:>5.2f}x | {diff:>8}")
                print(line, flush=True)
                rows.append((name, kind, k, ours_ms, method, cv_ms, cv_ms / ours_ms, diff))
    scaling = scaling_table(cv2, square, photo, planar, args.threads, min(args.repeat, 5), rng) if args.scaling else []
    cv2.setNumThreads(args.threads)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"{args.threads} threads each, OpenCV {cv2.__version__}, medians of {args.repeat}\n\n")
            f.write("| case | kernel | K | gpuconv ms | method | OpenCV ms | ratio | diff |\n|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]} | {r[5]:.2f} | {r[6]:.2f}x | {r[7]} |\n")
            if scaling:
                f.write("\nThread scaling, K=31 (efficiency = t1 / (threads x t))\n\n")
                f.write("| case | threads | gpuconv ms | efficiency | OpenCV ms | efficiency |\n|---|---|---|---|---|---|\n")
                for r in scaling:
                    f.write(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.0%} | {r[4]:.2f} | {r[5]:.0%} |\n")
    return 0


def scaling_table(cv2: Any, square: np.ndarray, photo: np.ndarray, planar: np.ndarray, threads: int, repeat: int,
                  rng: Any) -> list:
    """gpuconv and OpenCV on 1, 2, 4, ... threads (and `threads`), K=31."""
    counts = sorted({t for t in (1, 2, 4, 8, 16, 32, 64) if t < threads} | {threads})
    k = 31
    dense = rng.standard_normal((k, k)).astype(np.float32) / k
    g = gaussian_1d(k)
    gauss = np.outer(g, g).astype(np.float32)
    square_u8 = square.astype(np.uint8)

    def sep(img: np.ndarray) -> Callable[[], Any]:
        return lambda: cv2.sepFilter2D(img, -1, g, g, borderType=cv2.BORDER_REFLECT_101)
    cases = [("4096^2 f32 dense", square, dense, lambda: cv2.filter2D(square, -1, dense, borderType=cv2.BORDER_REFLECT_101)),
             ("4096^2 f32 sep", square, gauss, sep(square)),
             ("4096^2 u8 sep", square_u8, gauss, sep(square_u8)),
             ("12MP RGB u8 sep", planar, gauss, sep(photo))]
    print(f"\nthread scaling, K={k}: efficiency = t1 / (threads x t)")
    print(f"{'case':<16} {'threads':>7} | {'gpuconv ms':>10} {'eff':>5} | {'OpenCV ms':>9} {'eff':>5}")
    rows = []
    for name, image, kernel, opencv in cases:
        # every thread count in every round (the host's drift between rounds falls on all alike:
        # one thread's time moved by a third between rounds on the GPU host, session 38)
        calls = []
        for t in counts:
            plan = gpuconv.Plan(image.shape, kernel, boundary="reflect101", correlate=True, device="cpu", threads=t)
            out = np.empty(plan.output_shape, image.dtype)
            calls.append((lambda: None, lambda plan=plan, out=out: plan(image, out=out)))
            calls.append((lambda t=t: cv2.setNumThreads(t), opencv))
        medians = interleaved_medians(calls, repeat)
        ours_1, cv_1 = medians[0], medians[1]
        for i, t in enumerate(counts):
            ours, theirs = medians[2 * i], medians[2 * i + 1]
            eff_ours, eff_cv = ours_1 / (t * ours), cv_1 / (t * theirs)
            print(f"{name:<16} {t:>7} | {ours:>10.2f} {eff_ours:>5.0%} | {theirs:>9.2f} {eff_cv:>5.0%}", flush=True)
            rows.append((name, t, ours, eff_ours, theirs, eff_cv))
    return rows


if __name__ == "__main__":
    sys.exit(main())
