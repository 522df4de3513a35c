"""The drop-ins: gpuconv.fftconvolve against scipy.signal.fftconvolve (float64, 1e-6 relative
L2; SciPy's output dtypes) and gpuconv.filter2D against cv2.filter2D (borders, anchors, delta,
ddepth, channels; 1 LSB on 8/16-bit)."""
import numpy as np
import pytest
import scipy.signal

import gpuconv
from conftest import random_image, random_kernel


def rel_l2(got, ref):
    return np.linalg.norm(np.asarray(got, np.float64) - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", [((40, 50), (7, 7)), ((33, 64), (8, 3)), ((20, 30), (20, 30)), ((9, 11), (15, 13))],
                         ids=["k7", "k8x3", "equal", "in2-larger"])
def test_fftconvolve_matches_scipy(rng, mode, shapes):
    a = rng.standard_normal(shapes[0])
    b = rng.standard_normal(shapes[1])
    ref = scipy.signal.fftconvolve(a, b, mode=mode)
    got = gpuconv.fftconvolve(a, b, mode=mode)
    assert got.dtype == ref.dtype == np.float64 and got.shape == ref.shape
    assert rel_l2(got, ref) <= 1e-6


def test_fftconvolve_dtypes_follow_scipy(rng):
    a32 = rng.standard_normal((16, 16)).astype(np.float32)
    b32 = rng.standard_normal((3, 3)).astype(np.float32)
    ai = rng.integers(-5, 5, (16, 16))
    for x, y in ((a32, b32), (a32, b32.astype(np.float64)), (ai, b32), (ai, ai[:4, :4]), (ai.astype(bool), b32)):
        ref = scipy.signal.fftconvolve(x, y)
        got = gpuconv.fftconvolve(x, y)
        assert got.dtype == ref.dtype, (x.dtype, y.dtype)
        assert rel_l2(got, ref) <= 1e-6


def test_fftconvolve_batches_and_one_axis(rng):
    a = rng.standard_normal((4, 30, 3, 25))
    b = rng.standard_normal((1, 5, 1, 4))
    for mode in ("full", "same", "valid"):
        ref = scipy.signal.fftconvolve(a, b, mode=mode, axes=(1, 3))
        assert rel_l2(gpuconv.fftconvolve(a, b, mode=mode, axes=(1, 3)), ref) <= 1e-6
    s = rng.standard_normal((6, 100))
    t = rng.standard_normal((1, 9))
    for axes in (1, [-1], None):
        ref = scipy.signal.fftconvolve(s, t, axes=axes) if axes is not None else scipy.signal.fftconvolve(s, t)
        assert rel_l2(gpuconv.fftconvolve(s, t, axes=axes), ref) <= 1e-6
    v, w = rng.standard_normal(200), rng.standard_normal(17)
    assert rel_l2(gpuconv.fftconvolve(v, w, mode="same"), scipy.signal.fftconvolve(v, w, mode="same")) <= 1e-6


def test_fftconvolve_unsupported_raises(rng):
    a = rng.standard_normal((8, 8))
    with pytest.raises(TypeError, match="complex"):
        gpuconv.fftconvolve(a + 1j, a)
    with pytest.raises(ValueError, match="3 convolved axes"):
        gpuconv.fftconvolve(rng.standard_normal((4, 8, 8)), rng.standard_normal((2, 3, 3)))
    with pytest.raises(ValueError, match="one kernel"):
        gpuconv.fftconvolve(rng.standard_normal((4, 8, 8)), rng.standard_normal((2, 3, 3)), axes=(1, 2))
    with pytest.raises(ValueError, match="same dimensionality"):
        gpuconv.fftconvolve(a, a[0])
    with pytest.raises(ValueError, match="mode"):
        gpuconv.fftconvolve(a, a, mode="bogus")
    with pytest.raises(ValueError, match="at least as large"):
        gpuconv.fftconvolve(rng.standard_normal((8, 3)), rng.standard_normal((3, 8)), mode="valid")


cv2 = pytest.importorskip("cv2", reason="OpenCV (cv2) is not installed: filter2D is compared with it")


def test_constants_are_opencvs():
    for name in ("BORDER_CONSTANT", "BORDER_REPLICATE", "BORDER_REFLECT", "BORDER_WRAP", "BORDER_REFLECT_101",
                 "BORDER_REFLECT101", "BORDER_DEFAULT", "BORDER_TRANSPARENT", "BORDER_ISOLATED", "CV_8U", "CV_16U",
                 "CV_32F", "CV_64F"):
        assert getattr(gpuconv, name) == getattr(cv2, name), name


def check_filter2d(got, ref):
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if ref.dtype == np.float32:
        assert rel_l2(got, ref.astype(np.float64)) <= 1e-5  # OpenCV itself computes in float32
    else:
        assert np.abs(got.astype(np.int64) - ref.astype(np.int64)).max() <= 1


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
@pytest.mark.parametrize("border", [0, 1, 2, 4, 4 | 16], ids=["constant", "replicate", "reflect", "reflect101",
                                                              "default-isolated"])
@pytest.mark.parametrize("kshape", [(5, 5), (4, 7)], ids=["k5x5", "k4x7"])
def test_filter2d_matches_cv2(rng, dtype, border, kshape):
    src = random_image(rng, (27, 35), dtype)
    k = random_kernel(rng, kshape)
    check_filter2d(gpuconv.filter2D(src, -1, k, borderType=border), cv2.filter2D(src, -1, k, borderType=border))


@pytest.mark.parametrize("anchor", [(0, 0), (3, 1), (1, 4), (-1, -1)])
def test_filter2d_anchor_delta_ddepth(rng, anchor):
    src = random_image(rng, (30, 26), "uint8")
    k = random_kernel(rng, (5, 4))
    for ddepth, delta in ((-1, 0), (-1, 17.5), (cv2.CV_32F, 0), (cv2.CV_32F, -3.25), (cv2.CV_8U, 0)):
        ref = cv2.filter2D(src, ddepth, k, anchor=anchor, delta=delta, borderType=cv2.BORDER_REPLICATE)
        got = gpuconv.filter2D(src, ddepth, k, anchor=anchor, delta=delta, borderType=gpuconv.BORDER_REPLICATE)
        check_filter2d(got, ref)


def test_filter2d_channels_and_dst(rng):
    src = random_image(rng, (21, 19, 3), "uint16")
    k = random_kernel(rng, (3, 3))
    ref = cv2.filter2D(src, -1, k)
    dst = np.empty_like(src)
    assert gpuconv.filter2D(src, -1, k, dst=dst) is dst
    check_filter2d(dst, ref)


def test_filter2d_rejects_what_opencv_rejects(rng):
    src = random_image(rng, (10, 10), "uint8")
    k = np.ones((3, 3), np.float32) / 9
    with pytest.raises(ValueError, match="BORDER_WRAP"):
        gpuconv.filter2D(src, -1, k, borderType=gpuconv.BORDER_WRAP)
    with pytest.raises(cv2.error):
        cv2.filter2D(src, -1, k, borderType=cv2.BORDER_WRAP)
    with pytest.raises(ValueError, match="borderType 5"):
        gpuconv.filter2D(src, -1, k, borderType=5)
    with pytest.raises(ValueError, match="ddepth 6"):
        gpuconv.filter2D(src, gpuconv.CV_64F, k)
    with pytest.raises(ValueError, match="anchor x = 3"):
        gpuconv.filter2D(src, -1, k, anchor=(3, 0))
    with pytest.raises(TypeError, match="float64"):
        gpuconv.filter2D(src.astype(np.float64), -1, k)
