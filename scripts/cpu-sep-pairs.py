#!/usr/bin/env python3
"""The CPU backend's uint8 separable method against cv2.sepFilter2D in one process: a held
gpuconv.Plan(device="cpu") and OpenCV on the same threads, interleaved calls after a 20 ms pause
each (gpuconv.bench_cpu's interleaved_ms), medians; gaussians (OpenCV's sigma rule),
BORDER_REFLECT_101, 4096^2 uint8 and a 12 MP RGB photo-like image. Run it in alternating
processes with GPUCONV_CPU_ISA=avx512 (the float passes) and unset (the fixed point on hosts with
AVX-512 VNNI) to compare the two on one machine start. One line a case:
  label  threads  K  ours_ms  opencv_ms  ratio  max_level_difference
"""
import argparse
import os
import sys

import numpy as np

import gpuconv
from gpuconv.bench_cpu import difference, gaussian_1d, interleaved_ms, photo_like


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", default="7,15,31,63")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--label", default=os.environ.get("GPUCONV_CPU_ISA", "default") or "default")
    ap.add_argument("--no-extra", dest="extra", action="store_false",
                    help="only the 4096^2 cases (no 12 MP photo, no one-thread K = 31)")
    args = ap.parse_args()
    import cv2
    rng = np.random.default_rng(1)
    square = (rng.random((4096, 4096), dtype=np.float32) * 255).astype(np.uint8)
    photo = photo_like(rng)
    planar = np.ascontiguousarray(np.moveaxis(photo, -1, 0))
    cases = [("4096^2", square, square, int(k), args.threads) for k in args.kernels.split(",")]
    if args.extra:
        cases += [("12MP-RGB", photo, planar, 31, args.threads), ("4096^2", square, square, 31, 1)]
    for name, cv_image, our_image, k, threads in cases:
        cv2.setNumThreads(threads)
        g = gaussian_1d(k)
        plan = gpuconv.Plan(our_image.shape, np.outer(g, g).astype(np.float32), boundary="reflect101", correlate=True,
                            device="cpu", threads=threads)
        out = np.empty(plan.output_shape, our_image.dtype)

        def opencv(img=cv_image, g=g):
            return cv2.sepFilter2D(img, -1, g, g, borderType=cv2.BORDER_REFLECT_101)
        ours, theirs = interleaved_ms(lambda: plan(our_image, out=out), opencv, args.repeat)
        expected = opencv()
        if expected.ndim == 3:
            expected = np.moveaxis(expected, -1, 0)
        print(f"{args.label:<8} {name:<9} threads {threads:>2} K {k:>3}  ours {ours:7.2f} ms  cv2 {theirs:7.2f} ms  "
              f"{theirs / ours:5.2f}x  {difference(out, expected)}  ({plan.method})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
