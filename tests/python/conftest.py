"""Shared helpers of the Python tests: float64 references and tolerances.

Tolerances: float32 outputs within 1e-6 relative L2 of a float64 reference (the FFT in fp32
has a relative error of a few 1e-8 per butterfly level: ~1e-7 for these sizes); uint8/uint16
outputs within 1 LSB of the rounded-and-saturated float64 reference (the fp32 result may round
the other way when the exact value is within ~1e-5 of a half).
GPU tests carry @pytest.mark.gpu and are skipped with a reason (shown by pytest -rs) where no
CUDA device, CuPy or PyTorch is present.
"""
import numpy as np
import pytest
import scipy.signal

import gpuconv

# gpuconv boundary -> numpy.pad mode (any overshoot) and scipy.ndimage mode
NP_PAD = {"zero": "constant", "constant": "constant", "replicate": "edge", "reflect": "symmetric",
          "reflect101": "reflect", "wrap": "wrap"}
NDIMAGE = {"zero": "constant", "constant": "constant", "replicate": "nearest", "reflect": "reflect",
           "reflect101": "mirror", "wrap": "wrap"}


def reference(x, k, mode="same", boundary="reflect101", correlate=False, cval=0.0):
    """float64 result of conv/semantics.hpp's formula over the last two axes, by padding.

    out(y, x) = sum k(i, j) in_ext(y + oy - i, x + ox - j): pad the image so that every index
    in_ext needs exists, then a 'valid' convolution (scipy.signal, float64).
    """
    x = np.asarray(x, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if correlate:
        k = k[::-1, ::-1]
    H, W = x.shape[-2:]
    kh, kw = k.shape
    if mode == "same":
        oh, ow, oy, ox = H, W, (kh - 1) // 2, (kw - 1) // 2
    elif mode == "full":
        oh, ow, oy, ox = H + kh - 1, W + kw - 1, 0, 0
    else:
        oh, ow, oy, ox = H - kh + 1, W - kw + 1, kh - 1, kw - 1
    before = (kh - 1 - oy, kw - 1 - ox)
    after = (oh - 1 + oy - (H - 1), ow - 1 + ox - (W - 1))
    pad = [(0, 0)] * (x.ndim - 2) + [(before[0], after[0]), (before[1], after[1])]  # all >= 0
    kwargs = {"constant_values": cval if boundary == "constant" else 0.0} if NP_PAD[boundary] == "constant" else {}
    padded = np.pad(x, pad, mode=NP_PAD[boundary], **kwargs)
    kb = k.reshape((1,) * (x.ndim - 2) + k.shape)
    return scipy.signal.convolve(padded, kb, mode="valid", method="auto")  # fft for large kernels: float64, ~1e-15


def reference3d(x, k, mode="same", boundary="reflect101", correlate=False, cval=0.0):
    """float64 result of conv/semantics3d.hpp's formula over the last three axes, by padding
    (the 2D reference's rule on each axis: anchor (K-1)/2 for 'same')."""
    x = np.asarray(x, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if correlate:
        k = k[::-1, ::-1, ::-1]
    pad = [(0, 0)] * (x.ndim - 3)
    for n, kn in zip(x.shape[-3:], k.shape):
        if mode == "same":
            on, o = n, (kn - 1) // 2
        elif mode == "full":
            on, o = n + kn - 1, 0
        else:
            on, o = n - kn + 1, kn - 1
        pad.append((kn - 1 - o, on - 1 + o - (n - 1)))
    kwargs = {"constant_values": cval if boundary == "constant" else 0.0} if NP_PAD[boundary] == "constant" else {}
    padded = np.pad(x, pad, mode=NP_PAD[boundary], **kwargs)
    kb = k.reshape((1,) * (x.ndim - 3) + k.shape)
    return scipy.signal.convolve(padded, kb, mode="valid", method="auto")


def to_dtype(ref, dtype):
    """The reference as gpuconv stores it: narrow types rounded half to even and saturated."""
    if np.dtype(dtype) == np.float32:
        return ref
    info = np.iinfo(dtype)
    return np.clip(np.rint(ref), info.min, info.max)


def assert_close(got, ref, dtype):
    got = np.asarray(got)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if np.dtype(dtype) == np.float32:
        err = np.linalg.norm(got.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-300)
        assert err <= 1e-6, f"relative L2 error {err:.3g} > 1e-6"
    else:
        diff = np.abs(got.astype(np.float64) - to_dtype(ref, dtype)).max()
        assert diff <= 1, f"max difference {diff} LSB > 1"


def random_image(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(0, np.iinfo(dtype).max + 1, size=shape, dtype=dtype)


def random_kernel(rng, shape):
    # mixed signs and a sum near 1: narrow outputs saturate at both ends somewhere
    k = rng.standard_normal(shape) * 0.3
    k[shape[0] // 2, shape[1] // 2] += 1.0
    return k.astype(np.float32)


def need_gpu():
    if not gpuconv.cuda_available():
        pytest.skip("no CUDA device (gpuconv's CUDA runtime sees none)")


@pytest.fixture
def cp():
    """CuPy, where there is a CUDA device and CuPy is installed (else the test is skipped)."""
    need_gpu()
    return pytest.importorskip("cupy", reason="CuPy is not installed")


@pytest.fixture
def torch():
    """PyTorch with CUDA, where there is a CUDA device and PyTorch sees it (else skipped)."""
    need_gpu()
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    return torch


@pytest.fixture
def rng():
    return np.random.default_rng(12)


@pytest.fixture(autouse=True)
def _fresh_cache():
    yield
    gpuconv.clear_plan_cache()
