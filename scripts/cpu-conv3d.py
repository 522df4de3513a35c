#!/usr/bin/env python3
"""The CPU backend's 3D convolution against scipy.signal.fftconvolve on the same machine
(issue 15's CPU backend): gpuconv.Plan3D(device="cpu") on every core and on one thread,
'same', zero boundary, fp32, general K^3 PSFs (random, normalised); medians of wall-clock
timings and the relative L2 between the two results. Needs the gpuconv package importable
(installed, or on PYTHONPATH). Usage: python3 scripts/cpu-conv3d.py [--repeat 5]
"""
import argparse
import os
import statistics
import time

import numpy as np
import scipy.signal as ss

import gpuconv

CASES = [((64, 256, 256), 15), ((64, 256, 256), 31), ((128, 256, 256), 31), ((32, 128, 128), 9)]


def median_s(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(f"cpu-conv3d: {os.cpu_count()} cores; gpuconv {gpuconv.__version__}, scipy "
          f"{__import__('scipy').__version__}; medians of {args.repeat}")
    for shape, k in CASES:
        x = rng.random(shape, dtype=np.float32)
        psf = rng.random((k, k, k)).astype(np.float32)
        psf /= psf.sum()
        every = gpuconv.Plan3D(shape, psf, boundary="zero", device="cpu")
        one = gpuconv.Plan3D(shape, psf, boundary="zero", device="cpu", threads=1)
        ours = median_s(lambda: every(x), args.repeat)
        ours1 = median_s(lambda: one(x), args.repeat)
        peer = median_s(lambda: ss.fftconvolve(x, psf, mode="same"), args.repeat)
        ref = ss.fftconvolve(x, psf, mode="same")
        err = float(np.linalg.norm(every(x) - ref) / np.linalg.norm(ref))
        print(f"{'x'.join(map(str, shape)):>12} K={k:<3} gpuconv ({every.method}, tiles {'x'.join(map(str, every.tile))}) "
              f"{ours:.4f} s, one thread {ours1:.4f} s | scipy.signal.fftconvolve {peer:.4f} s "
              f"({peer / ours:.1f}x, one thread {peer / ours1:.1f}x) | rel L2 {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
