#!/usr/bin/env python3
"""CuPy's peer figures for `gpuconv-bench conv3d` (issue 15): cupyx.scipy.signal.fftconvolve
(mode='same', fp32) on the bench's 128 x 512 x 512 volume with the same K^3 PSFs, plus the
same algorithm spelt out in CuPy (pad to next_fast_len, rfftn, multiply, irfftn, crop) with
the PSF spectrum computed once. Medians of CUDA-event timings around each call. Run it in the
same session as gpuconv-bench conv3d and compare Gvox/s (the bench prints ours and a cuFFT
pipeline). Where the gpuconv package imports (PYTHONPATH), gpuconv.convolve3d on the same CuPy
arrays (zero boundary, through its plan cache, and a held gpuconv.Plan3D; the route and
tiles) is timed in the same way beside them, with its relative L2 to fftconvolve.
Usage: PYTHON scripts/cupy-conv3d.py [--sizes 15,31,63] [--repeat 10]
(PYTHON: /opt/torch/.venv/bin/python on the GPU machines, as scripts/python-gpu-check.sh).
"""
import argparse
import statistics

import numpy as np


def psf(k):
    # gpuconv-bench conv3d's make_psf: ((i * 2654435761) mod 1000) / 1000 / k^3, 64-bit i
    i = np.arange(k * k * k, dtype=np.uint64)
    return (((i * np.uint64(2654435761)) % np.uint64(1000)).astype(np.float32) / 1000.0 / (k ** 3)).reshape(k, k, k)


def median_ms(cp, fn, repeat):
    fn()
    cp.cuda.Stream.null.synchronize()
    times = []
    for _ in range(repeat):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="15,31,63")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    import cupy as cp
    import cupyx.scipy.fft as cfft
    import cupyx.scipy.signal as csig

    d, h, w = 128, 512, 512
    x = cp.random.default_rng(1).uniform(-1, 1, (d, h, w), dtype=cp.float32)
    voxels = d * h * w
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    print(f"cupy-conv3d on {props['name'].decode()}; CuPy {cp.__version__}; 'same', zero boundary, fp32, "
          f"median of {args.repeat}")
    try:
        import gpuconv
    except ImportError:
        gpuconv = None
    ours = []
    print(f"{'D x H x W':>15} {'K':>4} | {'fftconvolve ms':>14} {'Gvox/s':>7} | {'rfftn pipeline ms':>17} {'Gvox/s':>7} {'padded':>14}")
    for k in (int(s) for s in args.sizes.split(",")):
        kern = cp.asarray(psf(k))
        if gpuconv is not None:
            host_psf = psf(k)
            got = gpuconv.convolve3d(x, host_psf, boundary="zero")
            plan = gpuconv.Plan3D(x.shape, host_psf, boundary="zero", device="cuda")
            ref = csig.fftconvolve(x, kern, mode="same")
            gerr = float(cp.linalg.norm(got - ref) / cp.linalg.norm(ref))
            gms = median_ms(cp, lambda: gpuconv.convolve3d(x, host_psf, boundary="zero"), args.repeat)
            hms = median_ms(cp, lambda: plan(x), args.repeat)
            ours.append((k, gms, hms, plan.path, plan.tile, gerr))
        ms = median_ms(cp, lambda: csig.fftconvolve(x, kern, mode="same"), args.repeat)
        shape = [cfft.next_fast_len(n + k - 1, real=True) for n in (d, h, w)]
        kspec = cfft.rfftn(kern, shape)
        o = (k - 1) // 2

        def pipeline():
            y = cfft.irfftn(cfft.rfftn(x, shape) * kspec, shape)
            return y[o:o + d, o:o + h, o:o + w]

        ref = csig.fftconvolve(x, kern, mode="same")
        err = float(cp.linalg.norm(pipeline() - ref) / cp.linalg.norm(ref))
        assert err < 1e-5, f"pipeline disagrees with fftconvolve: {err}"
        pms = median_ms(cp, pipeline, args.repeat)
        print(f"{f'{d}x{h}x{w}':>15} {k:>4} | {ms:14.3f} {voxels / (ms * 1e6):7.2f} | {pms:17.3f} {voxels / (pms * 1e6):7.2f} "
              f"{'x'.join(map(str, shape)):>14}")

    if ours:
        print(f"\ngpuconv.convolve3d (Python, CuPy arrays, zero boundary):")
        print(f"{'D x H x W':>15} {'K':>4} | {'convolve3d ms':>13} {'Gvox/s':>7} | {'held Plan3D ms':>14} {'Gvox/s':>7} | "
              f"{'route':>9} {'tiles':>12} {'rel L2':>8}")
        for k, gms, hms, route, tile, gerr in ours:
            print(f"{f'{d}x{h}x{w}':>15} {k:>4} | {gms:13.3f} {voxels / (gms * 1e6):7.2f} | {hms:14.3f} "
                  f"{voxels / (hms * 1e6):7.2f} | {route:>9} {'x'.join(map(str, tile)):>12} {gerr:8.1e}")

    # gaussian (rank-1) PSFs, as gpuconv-bench conv3d's second table: sigma (k-1)/8, k taps per
    # axis; the separable peer is cupyx.scipy.ndimage.gaussian_filter (truncate 4 gives the same
    # k taps, mode 'constant' the zero boundary)
    import cupyx.scipy.ndimage as cnd
    print(f"\ngaussian PSFs (sigma (K-1)/8):")
    print(f"{'D x H x W':>15} {'K':>4} | {'fftconvolve ms':>14} {'Gvox/s':>7} | {'gaussian_filter ms':>18} {'Gvox/s':>7} {'rel diff':>9}")
    for k in (int(s) for s in args.sizes.split(",")):
        sigma = (k - 1) / 8.0
        r = np.arange(k) - (k - 1) // 2
        g = np.exp(-0.5 * r * r / (sigma * sigma))
        g /= g.sum()
        kern = cp.asarray((g[:, None, None] * g[None, :, None] * g[None, None, :]).astype(np.float32))
        ms = median_ms(cp, lambda: csig.fftconvolve(x, kern, mode="same"), args.repeat)
        gms = median_ms(cp, lambda: cnd.gaussian_filter(x, sigma, mode="constant", cval=0.0, truncate=4.0), args.repeat)
        ref = csig.fftconvolve(x, kern, mode="same")
        err = float(cp.linalg.norm(cnd.gaussian_filter(x, sigma, mode="constant", truncate=4.0) - ref) / cp.linalg.norm(ref))
        print(f"{f'{d}x{h}x{w}':>15} {k:>4} | {ms:14.3f} {voxels / (ms * 1e6):7.2f} | {gms:18.3f} {voxels / (gms * 1e6):7.2f} "
              f"{err:9.1e}")


if __name__ == "__main__":
    main()
