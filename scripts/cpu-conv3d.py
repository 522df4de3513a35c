#!/usr/bin/env python3
"""The CPU backend's 3D convolution against scipy.signal.fftconvolve on the same machine
(issue 15's CPU backend): gpuconv.Plan3D(device="cpu") on every core and on one thread,
'same', zero boundary, fp32, general K^3 PSFs (random, normalised); medians of wall-clock
timings and the relative L2 between the two results. Needs the gpuconv package importable
(installed, or on PYTHONPATH). Then Richardson-Lucy (--rl-iterations, 10; 0 skips it) on 64 x
256 x 256 with a 31^3 rank-2 PSF (a core and a halo, as gpuconv-bench deconvolve --psf general)
against the same algorithm over scipy.signal.fftconvolve, once each.
Usage: python3 scripts/cpu-conv3d.py [--repeat 5] [--rl-iterations 10]
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


def rl_scipy(y, h, iterations, epsilon=1e-6):
    """conv/deconvolve.hpp's algorithm (no TV, zero boundary) over scipy.signal.fftconvolve."""
    u = np.maximum(y, 0)
    flipped = h[::-1, ::-1, ::-1]
    eps = epsilon * max(float(y.max()), 0.0)
    for _ in range(iterations):
        b = ss.fftconvolve(u, h, mode="same")
        r = np.where(b > eps, np.maximum(y, 0) / np.where(b > eps, b, 1), 0).astype(np.float32)
        u = np.maximum(u * ss.fftconvolve(r, flipped, mode="same"), 0).astype(np.float32)
    return u


def rl_case(rng, iterations):
    d, h, w, k = 64, 256, 256, 31
    z, y, x = np.meshgrid(*[np.arange(k) - k // 2] * 3, indexing="ij")
    psf = np.exp(-0.5 * (x ** 2 / 16 + y ** 2 / 16 + z ** 2 / 36)) + 0.05 * np.exp(-0.5 * (x ** 2 / 64 + y ** 2 / 64 + z ** 2 / 9))
    psf = (psf / psf.sum()).astype(np.float32)
    truth = np.full((d, h, w), 10.0, np.float32)
    truth[tuple(rng.integers(0, s, 200) for s in (d, h, w))] += 5000
    observed = np.maximum(ss.fftconvolve(truth, psf, mode="same"), 0).astype(np.float32)
    start = time.perf_counter()
    ours = gpuconv.richardson_lucy(observed, psf, iterations=iterations, boundary="zero", device="cpu")
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    ref = rl_scipy(observed, psf, iterations)
    peer_s = time.perf_counter() - start
    err = float(np.linalg.norm(ours - ref) / np.linalg.norm(ref))
    print(f"Richardson-Lucy {d}x{h}x{w}, {k}^3 rank-2 PSF, {iterations} iterations, zero boundary: gpuconv (cpu) "
          f"{ours_s:.2f} s | over scipy.signal.fftconvolve {peer_s:.2f} s ({peer_s / ours_s:.1f}x) | rel L2 {err:.1e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rl-iterations", type=int, default=10)
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
    if args.rl_iterations > 0:
        rl_case(rng, args.rl_iterations)


if __name__ == "__main__":
    main()
