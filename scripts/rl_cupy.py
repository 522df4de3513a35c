#!/usr/bin/env python3
"""The CuPy peer of `gpuconv-bench deconvolve` (issue 15): Richardson-Lucy in CuPy on the same
data, timed in the same session, and compared with our result.

    build/apps/gpuconv-bench deconvolve --dump /tmp/rl      # ours: times, writes the data
    python3 scripts/rl_cupy.py /tmp/rl [--reps 3]           # CuPy: times, compares

The algorithm is conv/deconvolve.hpp's with a zero boundary (what fftconvolve computes):
u_0 = max(y, 0); b = u (*) h; r = y / b where b > epsilon * max(y), else 0;
c = r (*corr) h; u = max(u * c, 0). Two CuPy versions:
  fftconvolve  cupyx.scipy.signal.fftconvolve(mode='same') per convolution, as most scripts
               write it (the PSF's FFT recomputed every call);
  otf          the PSF's spectra (h and its flip) computed once at the padded size
               (next_fast_len(n + k - 1) per axis), per convolution one rfftn, a multiply
               and one irfftn: the stronger peer, and the one the issue's >= 5x target is
               measured against.
  separable    for a rank-1 PSF (a product of 1D kernels: the bench's gaussian), each
               convolution as three cupyx.scipy.ndimage.convolve1d passes (mode
               'constant'): what a CuPy user writes for a separable PSF.
Prints a markdown table: ms per run, ms per iteration, our speed-up, rel L2 to ours.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import cupy as cp
from cupyx.scipy import fft as cufft
from cupyx.scipy.signal import fftconvolve


def rl_fftconvolve(y, psf, iterations, epsilon):
    y = cp.maximum(y, 0)
    eps = epsilon * float(y.max())
    flipped = cp.ascontiguousarray(psf[::-1, ::-1, ::-1])
    u = y.copy()
    for _ in range(iterations):
        b = fftconvolve(u, psf, mode="same")
        r = cp.where(b > eps, y / b, 0).astype(cp.float32)
        c = fftconvolve(r, flipped, mode="same")
        u = cp.maximum(u * c, 0)
    return u


class otf_rl:
    def __init__(self, shape, psf, epsilon):
        self.shape = shape
        self.k = psf.shape
        self.padded = tuple(cufft.next_fast_len(n + k - 1, real=True) for n, k in zip(shape, self.k))
        self.h = cufft.rfftn(psf, self.padded)
        self.hf = cufft.rfftn(cp.ascontiguousarray(psf[::-1, ::-1, ::-1]), self.padded)
        self.crop = tuple(slice((k - 1) // 2, (k - 1) // 2 + n) for n, k in zip(shape, self.k))
        self.epsilon = epsilon

    def conv(self, x, spectrum):
        full = cufft.irfftn(cufft.rfftn(x, self.padded) * spectrum, self.padded)
        return full[self.crop]

    def __call__(self, y, iterations):
        y = cp.maximum(y, 0)
        eps = self.epsilon * float(y.max())
        u = y.copy()
        for _ in range(iterations):
            b = self.conv(u, self.h)
            r = cp.where(b > eps, y / b, 0).astype(cp.float32)
            c = self.conv(r, self.hf)
            u = cp.maximum(u * c, 0)
        return u


def rank1_factors(psf):
    """(a, b, c) with psf ~= a[:, None, None] * b[None, :, None] * c[None, None, :] to 1e-6 of its
    peak (a product of 1D kernels, as a gaussian), else None."""
    h = cp.asnumpy(psf).astype(np.float64)
    s, p_, q = np.unravel_index(np.argmax(np.abs(h)), h.shape)
    centre = h[s, p_, q]
    a, b, c = h[:, p_, q], h[s, :, q] / centre, h[s, p_, :] / centre
    if np.max(np.abs(a[:, None, None] * b[None, :, None] * c[None, None, :] - h)) > 1e-6 * abs(centre):
        return None
    return [cp.asarray(v.astype(np.float32)) for v in (a, b, c)]


def rl_separable(y, factors, iterations, epsilon):
    """RL with each convolution as three cupyx.scipy.ndimage.convolve1d passes (zero boundary):
    what a CuPy user writes for a gaussian PSF."""
    from cupyx.scipy.ndimage import convolve1d

    def conv(x, fs):
        for axis, w in enumerate(fs):
            x = convolve1d(x, w, axis=axis, mode="constant", cval=0.0)
        return x

    flipped = [w[::-1].copy() for w in factors]
    y = cp.maximum(y, 0)
    eps = epsilon * float(y.max())
    u = y.copy()
    for _ in range(iterations):
        b = conv(u, factors)
        r = cp.where(b > eps, y / b, 0).astype(cp.float32)
        c = conv(r, flipped)
        u = cp.maximum(u * c, 0)
    return u


def median_ms(f, reps, warmup):
    for _ in range(warmup):
        f()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        out = f()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return sorted(times)[len(times) // 2], out


def relative_l2(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="the directory gpuconv-bench deconvolve --dump wrote")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    a = p.parse_args()
    d = pathlib.Path(a.dir)
    meta = json.loads((d / "ours.json").read_text())
    shape = (meta["depth"], meta["height"], meta["width"])
    k = meta["psf"]
    iterations, epsilon = meta["iterations"], meta["epsilon"]
    if meta["boundary"] != "zero":
        sys.exit("rl_cupy.py: the peer computes a zero boundary; ours.json says " + meta["boundary"])
    y = cp.asarray(np.fromfile(d / "observed.f32", dtype=np.float32).reshape(shape))
    psf = cp.asarray(np.fromfile(d / "psf.f32", dtype=np.float32).reshape(k, k, k))
    ours = np.fromfile(d / "ours.f32", dtype=np.float32).reshape(shape)

    rows = []
    ms, u = median_ms(lambda: rl_fftconvolve(y, psf, iterations, epsilon), a.reps, a.warmup)
    rows.append(("CuPy fftconvolve", ms, relative_l2(cp.asnumpy(u), ours)))
    del u
    cp.get_default_memory_pool().free_all_blocks()
    peer = otf_rl(shape, psf, epsilon)
    ms, u = median_ms(lambda: peer(y, iterations), a.reps, a.warmup)
    rows.append(("CuPy otf (PSF spectrum once)", ms, relative_l2(cp.asnumpy(u), ours)))
    factors = rank1_factors(psf) if k % 2 == 1 else None
    if factors is not None:  # a separable PSF: the separable peer too
        del u
        cp.get_default_memory_pool().free_all_blocks()
        ms, u = median_ms(lambda: rl_separable(y, factors, iterations, epsilon), a.reps, a.warmup)
        rows.append(("CuPy separable (convolve1d x 3)", ms, relative_l2(cp.asnumpy(u), ours)))

    print(f"Richardson-Lucy, {shape[0]} x {shape[1]} x {shape[2]} fp32, {k}^3 PSF, zero boundary, {iterations} iterations "
          f"({meta['gpu']}; CuPy {cp.__version__}, median of {a.reps})\n")
    print("| implementation | ms | ms/iteration | ours is | rel L2 to ours |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| gpuconv (gpuconv-bench deconvolve) | {meta['ms']:.1f} | {meta['ms'] / iterations:.2f} | 1.00x | 0 |")
    for name, t, err in rows:
        print(f"| {name} | {t:.1f} | {t / iterations:.2f} | {t / meta['ms']:.2f}x | {err:.2e} |")
    worst = max(err for _, _, err in rows)
    if worst > 1e-5:
        print(f"\nrl_cupy.py: results differ by {worst:.2e} rel L2 (target 1e-5)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
