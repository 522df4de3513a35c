#!/usr/bin/env python3
"""The whole-command peer of `gpuconv STACK PSF OUT` and `gpuconv deconvolve` (issue 15): what a
CuPy user runs instead - read the TIFF stack, convolve or deconvolve on the GPU, write the
result - timed from the shell the same way as our CLI (process start to exit).

    python3 scripts/stack-peer.py make DIR [--depth 128 --size 512 --psf 31]
        DIR/stack.tif: uint16 beads (sigma 1.5) blurred by DIR/psf.tif, plus noise;
        DIR/psf.tif: float32, a core and an out-of-focus halo (rank 2: not a product of 1D
        kernels), one page per z slice.
    python3 scripts/stack-peer.py convolve STACK PSF OUT
        cupyx.scipy.signal.fftconvolve(mode='same') (zero boundary) of the stack with the
        normalised PSF, rounded and saturated to the stack's dtype.
    python3 scripts/stack-peer.py deconvolve STACK PSF OUT [--iterations 50]
        Richardson-Lucy (conv/deconvolve.hpp's algorithm, zero boundary) with the PSF's spectra
        computed once (scripts/rl_cupy.py's otf_rl), written as float32 (the CLI's default).
    python3 scripts/stack-peer.py compare A B
        relative L2 and the largest difference between two stacks.

TIFF stacks are read and written with tifffile where it is installed, else OpenCV's
imreadmulti / imwritemulti. Each command prints its stages' times (read, upload, compute,
download, write) on stderr.
"""
import argparse
import pathlib
import sys
import time

import numpy as np


def read_stack(path):
    try:
        import tifffile
        return np.ascontiguousarray(tifffile.imread(path))
    except ImportError:
        import cv2
        ok, pages = cv2.imreadmulti(str(path), flags=cv2.IMREAD_UNCHANGED)
        if not ok:
            sys.exit(f"stack-peer: cannot read {path}")
        return np.ascontiguousarray(np.stack(pages))


def write_stack(path, volume):
    try:
        import tifffile
        tifffile.imwrite(path, volume)
    except ImportError:
        import cv2
        # uncompressed, as tifffile and our writer (microscopes mostly write raw strips too)
        if not cv2.imwritemulti(str(path), list(volume), [cv2.IMWRITE_TIFF_COMPRESSION, 1]):
            sys.exit(f"stack-peer: cannot write {path}")


def make(args):
    out = pathlib.Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    k = args.psf
    r = np.arange(k) - (k - 1) // 2
    z, y, x = np.meshgrid(r, r, r, indexing="ij")
    psf = np.exp(-0.5 * (x * x / 2.0 ** 2 + y * y / 2.0 ** 2 + z * z / 4.0 ** 2))
    psf += 0.05 * np.exp(-0.5 * (x * x / 64.0 + y * y / 64.0 + z * z / 9.0))
    psf = (psf / psf.sum()).astype(np.float32)
    rng = np.random.default_rng(7)
    d, n = args.depth, args.size
    beads = np.zeros((d, n, n), np.float32)
    count = d * n * n // 4000
    beads[rng.integers(0, d, count), rng.integers(0, n, count), rng.integers(0, n, count)] = rng.uniform(2e5, 6e5, count)
    try:  # CuPy where there is one (SciPy takes ~10 s on 128 x 512 x 512)
        import cupy as cp
        from cupyx.scipy.signal import fftconvolve as cp_fftconvolve
        blurred = cp.asnumpy(cp_fftconvolve(cp.asarray(beads), cp.asarray(psf), mode="same")) + 100.0
    except ImportError:
        from scipy.signal import fftconvolve
        blurred = fftconvolve(beads, psf, mode="same") + 100.0
    noisy = rng.poisson(np.maximum(blurred, 0)).astype(np.float64)
    stack = np.clip(np.rint(noisy), 0, 65535).astype(np.uint16)
    write_stack(out / "stack.tif", stack)
    write_stack(out / "psf.tif", psf)
    print(f"stack-peer: {out}/stack.tif {stack.shape} uint16 (max {stack.max()}), {out}/psf.tif {psf.shape} float32")


def to_dtype(x, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(x), info.min, info.max).astype(dtype)
    return x.astype(dtype)


def run_gpu(args, what):
    t = [time.perf_counter()]
    import cupy as cp
    from cupyx.scipy.signal import fftconvolve
    t.append(time.perf_counter())
    stack = read_stack(args.stack)
    psf = read_stack(args.psf).astype(np.float32)
    psf /= psf.sum()
    t.append(time.perf_counter())
    y = cp.asarray(stack, dtype=cp.float32)
    h = cp.asarray(psf)
    cp.cuda.Device().synchronize()
    t.append(time.perf_counter())
    if what == "convolve":
        result = fftconvolve(y, h, mode="same")
    else:
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        from rl_cupy import otf_rl
        result = otf_rl(y.shape, h, 1e-6)(y, args.iterations)
    cp.cuda.Device().synchronize()
    t.append(time.perf_counter())
    host = cp.asnumpy(result)
    t.append(time.perf_counter())
    # the CLI's defaults: `gpuconv STACK` writes the stack's dtype, `gpuconv deconvolve` float32
    write_stack(args.out, to_dtype(host, stack.dtype if what == "convolve" else np.float32))
    t.append(time.perf_counter())
    names = ["import cupy", "read", "upload", what, "download", "write"]
    print("stack-peer " + what + ": " + ", ".join(f"{n} {1e3 * (b - a):.1f} ms" for n, a, b in zip(names, t, t[1:])),
          file=sys.stderr)


def compare(args):
    a = read_stack(args.a).astype(np.float64)
    b = read_stack(args.b).astype(np.float64)
    if a.shape != b.shape:
        sys.exit(f"stack-peer: shapes differ: {a.shape} and {b.shape}")
    rel = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)
    print(f"rel L2 {rel:.3g}, max |diff| {np.max(np.abs(a - b)):.3g}, "
          f"{np.count_nonzero(a != b) / a.size * 100:.3f}% of the voxels differ")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--depth", type=int, default=128)
    m.add_argument("--size", type=int, default=512)
    m.add_argument("--psf", type=int, default=31)
    for name in ("convolve", "deconvolve"):
        c = sub.add_parser(name)
        c.add_argument("stack")
        c.add_argument("psf")
        c.add_argument("out")
        c.add_argument("--iterations", type=int, default=50)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = p.parse_args()
    if args.cmd == "make":
        make(args)
    elif args.cmd == "compare":
        compare(args)
    else:
        run_gpu(args, args.cmd)


if __name__ == "__main__":
    main()
