"""Volumes from Python: gpuconv.convolve3d / Plan3D against a float64 reference (every mode x
boundary x dtype, batches, correlation) and gpuconv.richardson_lucy against the same algorithm
in NumPy float64; on the CPU backend here, on CuPy arrays and CUDA PyTorch tensors under
@pytest.mark.gpu (skipped with a reason where there is no GPU, CuPy or PyTorch)."""
import numpy as np
import pytest

import gpuconv
from conftest import assert_close, random_image, reference3d

DTYPES = ["float32", "uint8", "uint16"]


def random_psf(rng, shape):
    k = rng.standard_normal(shape) * 0.2
    k[tuple(s // 2 for s in shape)] += 1.0
    return k.astype(np.float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boundary", gpuconv.BOUNDARIES)
@pytest.mark.parametrize("mode", gpuconv.MODES)
def test_convolve3d_cpu_every_mode_boundary_dtype(rng, dtype, boundary, mode):
    x = random_image(rng, (2, 7, 11, 9), dtype)  # two volumes
    k = random_psf(rng, (3, 4, 2))
    got = gpuconv.convolve3d(x, k, mode=mode, boundary=boundary, device="cpu", cval=2.0)
    assert isinstance(got, np.ndarray) and got.dtype == x.dtype
    assert_close(got, reference3d(x, k, mode, boundary, cval=2.0), dtype)


def test_convolve3d_cpu_correlation_fft_tiles_and_plan(rng):
    x = random_image(rng, (12, 30, 26), "float32")
    k = random_psf(rng, (5, 7, 6))
    got = gpuconv.convolve3d(x, k, correlate=True, boundary="reflect", device="cpu")
    assert_close(got, reference3d(x, k, boundary="reflect", correlate=True), "float32")
    plan = gpuconv.Plan3D(x.shape, k, boundary="wrap", device="cpu")
    assert plan.backend == "cpu" and plan.output_shape == x.shape
    assert_close(plan(x), reference3d(x, k, boundary="wrap"), "float32")
    # a rank-1 PSF takes the separable method
    g = np.exp(-0.5 * (np.arange(-3, 4) / 1.5) ** 2)
    sep = (g[:, None, None] * g[None, :, None] * g[None, None, :]).astype(np.float32)
    plan = gpuconv.Plan3D(x.shape, sep, device="cpu")
    assert plan.method == "separable"
    assert_close(plan(x), reference3d(x, sep), "float32")


def test_convolve3d_cache_tells_psfs_apart(rng):
    # two PSFs that agree on every sampled value (the cache key holds a sample of a large PSF)
    x = random_image(rng, (6, 20, 20), "float32")
    a = random_psf(rng, (21, 21, 21))  # 9261 values: the key samples every other one
    b = a.copy()
    b[0, 0, 1], b[0, 0, 3] = a[0, 0, 3], a[0, 0, 1]  # two unsampled values swapped: the same sum
    from gpuconv._volume import _psf_key
    assert _psf_key(a) == _psf_key(b) and not np.array_equal(a, b)  # the premise: one cache key
    first = gpuconv.convolve3d(x, a, device="cpu")
    second = gpuconv.convolve3d(x, b, device="cpu")
    # each equals its own plan's result bit for bit
    assert np.array_equal(first, gpuconv.Plan3D(x.shape, a, device="cpu")(x))
    assert np.array_equal(second, gpuconv.Plan3D(x.shape, b, device="cpu")(x))
    assert not np.array_equal(first, second)
    assert gpuconv.plan_cache_info()["size"] == 1  # the second replaced the first under one key


def test_convolve3d_errors():
    x = np.zeros((4, 5, 6), np.float32)
    with pytest.raises(ValueError, match="not 3D"):
        gpuconv.convolve3d(x, np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="three axes"):
        gpuconv.convolve3d(np.zeros((5, 6), np.float32), np.ones((1, 1, 1), np.float32))
    with pytest.raises(TypeError, match="float64"):
        gpuconv.convolve3d(x.astype(np.float64), np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="boundary 'mirror'"):
        gpuconv.convolve3d(x, np.ones((1, 1, 1)), boundary="mirror")
    with pytest.raises(ValueError, match="NaN|finite|Inf"):
        gpuconv.convolve3d(x, np.full((1, 1, 1), np.nan), device="cpu")
    with pytest.raises(ValueError, match="valid"):
        gpuconv.convolve3d(x, np.ones((5, 1, 1)), mode="valid", device="cpu")


def reference_rl(y, psf, iterations, boundary, epsilon=1e-6):
    """conv/deconvolve.hpp's algorithm in float64 (no TV): u0 = max(y, 0),
    u <- max(u * corr(ratio(y, conv(u))), 0), the PSF scaled to sum 1."""
    h = np.asarray(psf, np.float64)
    h = h / h.sum()
    y = np.asarray(y, np.float64)
    eps = epsilon * max(y.max(), 0.0)
    u = np.maximum(y, 0.0)
    for _ in range(iterations):
        b = reference3d(u, h, boundary=boundary)
        r = np.where(b > eps, np.maximum(y, 0.0) / np.where(b > eps, b, 1.0), 0.0)
        u = np.maximum(u * reference3d(r, h, boundary=boundary, correlate=True), 0.0)
    return u


def beads(rng, shape=(12, 24, 20)):
    truth = np.full(shape, 5.0)
    for _ in range(5):
        truth[tuple(int(rng.integers(2, s - 2)) for s in shape)] += 3000.0
    z, yy, x = np.meshgrid(*[np.arange(-2, 3)] * 3, indexing="ij")
    psf = np.exp(-0.5 * (z ** 2 / 1.5 + yy ** 2 + x ** 2)) * (1 + 0.2 * ((z + yy + x) % 3))  # not rank-1
    psf = (psf / psf.sum()).astype(np.float32)
    y = reference3d(truth, psf, boundary="reflect")
    y = np.maximum(y + np.sqrt(y) * rng.standard_normal(shape), 0).astype(np.float32)
    return y, psf


@pytest.mark.parametrize("boundary", ["reflect", "zero"])
def test_richardson_lucy_cpu(rng, boundary):
    y, psf = beads(rng)
    got = gpuconv.richardson_lucy(y, psf, iterations=6, boundary=boundary, device="cpu")
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == y.shape
    ref = reference_rl(y, psf, 6, boundary)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err <= 1e-5, f"relative L2 {err:.3g}"
    assert (got >= 0).all()


def test_richardson_lucy_errors():
    y = np.ones((4, 5, 6), np.float32)
    with pytest.raises(TypeError, match="float32"):
        gpuconv.richardson_lucy(y.astype(np.uint8), np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="not 3D"):
        gpuconv.richardson_lucy(y[0], np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="iterations 0"):
        gpuconv.richardson_lucy(y, np.ones((1, 1, 1)), iterations=0)
    with pytest.raises(ValueError, match="negative|PSF"):
        gpuconv.richardson_lucy(y, -np.ones((1, 1, 1)), device="cpu")


# ---- the GPU: CuPy arrays and CUDA PyTorch tensors, zero-copy on the current stream ----------
# (the cp and torch fixtures, conftest.py, skip with their reason where either is missing)

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boundary", gpuconv.BOUNDARIES)
@pytest.mark.parametrize("mode", gpuconv.MODES)
def test_convolve3d_cupy_every_mode_boundary_dtype(cp, rng, dtype, boundary, mode):
    x = random_image(rng, (2, 9, 13, 11), dtype)
    k = random_psf(rng, (3, 4, 5))
    got = gpuconv.convolve3d(cp.asarray(x), k, mode=mode, boundary=boundary, cval=2.0)
    assert isinstance(got, cp.ndarray) and got.dtype == x.dtype
    assert_close(cp.asnumpy(got), reference3d(x, k, mode, boundary, cval=2.0), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("boundary", ["reflect101", "zero", "wrap"])
def test_convolve3d_cupy_slice_path_and_multipass(cp, rng, boundary):
    # 40 x 100 x 100 with a 9^3 PSF: the FFT tiles' slice path (48 x 64 x 64 tiles: one layer of
    # a mixed-radix depth, 3 x 16)
    x = random_image(rng, (40, 100, 100), "float32")
    k = random_psf(rng, (9, 9, 9))
    plan = gpuconv.Plan3D(x.shape, k, boundary=boundary, device="cuda")
    assert plan.backend == "cuda" and plan.path == "fused" and plan.tile == (48, 64, 64)
    d = cp.asarray(x)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        got = plan(d)
    s.synchronize()
    assert_close(cp.asnumpy(got), reference3d(x, k, boundary=boundary), "float32")
    # a gaussian: the separable method
    g = np.exp(-0.5 * (np.arange(-4, 5) / 2.0) ** 2)
    sep = (g[:, None, None] * g[None, :, None] * g[None, None, :]).astype(np.float32)
    assert gpuconv.Plan3D(x.shape, sep, device="cuda").path == "separable"
    assert_close(cp.asnumpy(gpuconv.convolve3d(d, sep, boundary=boundary)), reference3d(x, sep, boundary=boundary),
                 "float32")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_convolve3d_torch_and_numpy_through_the_gpu(torch, rng, dtype):
    x = random_image(rng, (10, 33, 30), dtype)
    k = random_psf(rng, (5, 5, 5))
    got = gpuconv.convolve3d(torch.from_numpy(x).cuda(), k, boundary="replicate")
    assert isinstance(got, torch.Tensor) and got.is_cuda and str(got.dtype) == f"torch.{dtype}"
    assert_close(got.cpu().numpy(), reference3d(x, k, boundary="replicate"), dtype)
    host = gpuconv.convolve3d(x, k, boundary="replicate", device="cuda")
    assert isinstance(host, np.ndarray)
    assert_close(host, reference3d(x, k, boundary="replicate"), dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("boundary", ["reflect", "zero"])
def test_richardson_lucy_cupy_and_torch(cp, torch, rng, boundary):
    y, psf = beads(rng)
    ref = reference_rl(y, psf, 6, boundary)
    for stack, back in ((cp.asarray(y), cp.asnumpy), (torch.from_numpy(y).cuda(), lambda t: t.cpu().numpy())):
        got = gpuconv.richardson_lucy(stack, psf, iterations=6, boundary=boundary)
        assert type(got) is type(stack)
        g = back(got)
        err = np.linalg.norm(g - ref) / np.linalg.norm(ref)
        assert err <= 1e-5, f"relative L2 {err:.3g}"
        assert (g >= 0).all()
