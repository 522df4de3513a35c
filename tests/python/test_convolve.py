"""gpuconv.convolve and gpuconv.Plan on NumPy inputs (the CPU backend): every mode x boundary x
dtype x operation against float64 references (padding + scipy.signal; scipy.ndimage for 'same';
scipy.signal.fftconvolve/correlate for the zero boundary), batches, axes, non-contiguous
inputs, plan reuse, kernel banks and the plan cache."""
import numpy as np
import pytest
import scipy.ndimage
import scipy.signal

import gpuconv
from conftest import NDIMAGE, assert_close, random_image, random_kernel, reference

DTYPES = ["float32", "uint8", "uint16"]
KERNELS = [(5, 4), (3, 7)]  # an even side and odd sides


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boundary", gpuconv.BOUNDARIES)
@pytest.mark.parametrize("mode", gpuconv.MODES)
@pytest.mark.parametrize("correlate", [False, True], ids=["conv", "corr"])
@pytest.mark.parametrize("kshape", KERNELS, ids=lambda s: f"k{s[0]}x{s[1]}")
def test_every_mode_boundary_dtype(rng, dtype, boundary, mode, correlate, kshape):
    x = random_image(rng, (2, 23, 31), dtype)
    k = random_kernel(rng, kshape)
    cval = 0.75 if dtype == "float32" else 100.0
    got = gpuconv.convolve(x, k, mode=mode, boundary=boundary, correlate=correlate, device="cpu", cval=cval)
    assert isinstance(got, np.ndarray) and got.dtype == np.dtype(dtype)
    assert_close(got, reference(x, k, mode, boundary, correlate, cval), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boundary", gpuconv.BOUNDARIES)
@pytest.mark.parametrize("kshape", [(5, 5), (4, 6)], ids=["k5x5", "k4x6"])
def test_same_matches_ndimage(rng, dtype, boundary, kshape):
    """'same' correlation is scipy.ndimage.correlate (origin 0) with the mode mapping
    reflect101=mirror, reflect=reflect, replicate=nearest, wrap=wrap, constant/zero=constant;
    convolution is ndimage.convolve for odd kernels (for even sides ndimage.convolve puts the
    centre one sample lower: it is ndimage.correlate with the flipped kernel that matches)."""
    x = random_image(rng, (29, 26), dtype)
    k = random_kernel(rng, kshape).astype(np.float64)
    cval = 3.0 if boundary == "constant" else 0.0
    xf = x.astype(np.float64)
    corr = scipy.ndimage.correlate(xf, k, mode=NDIMAGE[boundary], cval=cval)
    got = gpuconv.convolve(x, k, boundary=boundary, correlate=True, device="cpu", cval=cval)
    assert_close(got, corr, dtype)
    conv = scipy.ndimage.correlate(xf, k[::-1, ::-1], mode=NDIMAGE[boundary], cval=cval)
    if kshape[0] % 2 and kshape[1] % 2:
        np.testing.assert_allclose(conv, scipy.ndimage.convolve(xf, k, mode=NDIMAGE[boundary], cval=cval))
    got = gpuconv.convolve(x, k, boundary=boundary, device="cpu", cval=cval)
    assert_close(got, conv, dtype)


@pytest.mark.parametrize("mode", gpuconv.MODES)
@pytest.mark.parametrize("kshape", [(7, 7), (6, 9), (1, 5)], ids=lambda s: f"k{s[0]}x{s[1]}")
def test_zero_boundary_matches_scipy_signal(rng, mode, kshape):
    x = rng.standard_normal((37, 41)).astype(np.float32)
    k = rng.standard_normal(kshape)
    ref = scipy.signal.fftconvolve(x.astype(np.float64), k, mode=mode)
    assert_close(gpuconv.convolve(x, k, mode=mode, boundary="zero", device="cpu"), ref, "float32")
    ref = scipy.signal.correlate(x.astype(np.float64), k, mode=mode)
    assert_close(gpuconv.convolve(x, k, mode=mode, boundary="zero", correlate=True, device="cpu"), ref, "float32")


@pytest.mark.parametrize("boundary", ["reflect101", "reflect", "wrap", "replicate"])
def test_kernel_larger_than_image(rng, boundary):
    """Borders that reach past the image more than once (reflections repeat, wrap cycles)."""
    x = rng.standard_normal((5, 6)).astype(np.float32)
    k = random_kernel(rng, (13, 15))
    for mode in ("same", "full"):
        got = gpuconv.convolve(x, k, mode=mode, boundary=boundary, device="cpu")
        assert_close(got, reference(x, k, mode, boundary), "float32")


def test_batch_is_planes(rng):
    x = random_image(rng, (2, 3, 20, 24), "float32")
    k = random_kernel(rng, (5, 5))
    got = gpuconv.convolve(x, k, mode="full", device="cpu")
    assert got.shape == (2, 3, 24, 28)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(got[i, j], gpuconv.convolve(x[i, j], k, mode="full", device="cpu"))


@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (-3, -2), (2, 0)])
def test_axes_moved_to_the_end(rng, axes):
    x = random_image(rng, (18, 21, 3), "uint8")
    k = random_kernel(rng, (3, 5))
    got = gpuconv.convolve(x, k, mode="full", axes=axes, device="cpu")
    moved = np.moveaxis(x, axes, (-2, -1))
    want = np.moveaxis(gpuconv.convolve(np.ascontiguousarray(moved), k, mode="full", device="cpu"), (-2, -1), axes)
    np.testing.assert_array_equal(got, want)
    assert_close(np.moveaxis(got, axes, (-2, -1)), reference(moved, k, "full"), "uint8")


def test_non_contiguous_input_is_copied(rng):
    x = random_image(rng, (40, 60), "uint16")
    k = random_kernel(rng, (4, 4))
    for view in (x[::2, 1::3], x.T, x[5:30, 7:50]):
        assert not view.flags.c_contiguous
        np.testing.assert_array_equal(gpuconv.convolve(view, k, device="cpu"),
                                      gpuconv.convolve(np.ascontiguousarray(view), k, device="cpu"))


def test_read_only_and_broadcast_inputs(rng):
    x = random_image(rng, (20, 20), "float32")
    want = gpuconv.convolve(x, np.ones((3, 3)), device="cpu")
    x.flags.writeable = False
    np.testing.assert_array_equal(gpuconv.convolve(x, np.ones((3, 3)), device="cpu"), want)
    b = np.broadcast_to(x, (2, 20, 20))
    got = gpuconv.convolve(b, np.ones((3, 3)), device="cpu")
    np.testing.assert_array_equal(got[1], want)


def test_plan_reuse_and_out(rng):
    shape = (3, 32, 30)
    k = random_kernel(rng, (7, 5))
    plan = gpuconv.Plan(shape, k, mode="valid", boundary="replicate", device="cpu")
    assert plan.backend == "cpu" and plan.output_shape == (3, 26, 26)
    out = np.empty(plan.output_shape, np.float32)
    for _ in range(3):
        x = random_image(rng, shape, "float32")
        assert plan(x, out=out) is out
        assert_close(out, reference(x, k, "valid", "replicate"), "float32")
        assert_close(plan(x), reference(x, k, "valid", "replicate"), "float32")
    x8 = random_image(rng, shape, "uint8")  # one plan runs every dtype unless dtype= is given
    assert_close(plan(x8), reference(x8, k, "valid", "replicate"), "uint8")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_plan_threads(rng, threads):
    x = random_image(rng, (2, 300, 257), "float32")
    for kshape in [(3, 3), (9, 1), (17, 17)]:  # direct, separable and FFT methods
        k = random_kernel(rng, kshape)
        plan = gpuconv.Plan(x.shape, k, boundary="reflect", device="cpu", threads=threads)
        assert plan.method in ("direct", "separable", "fft")
        assert_close(plan(x), reference(x, k, "same", "reflect"), "float32")


def test_plan_threads_must_not_be_negative():
    with pytest.raises(ValueError, match="threads -1"):
        gpuconv.Plan((8, 8), np.ones((3, 3)), device="cpu", threads=-1)


def test_plan_kernel_bank(rng):
    x = random_image(rng, (2, 24, 20), "float32")
    bank = np.stack([random_kernel(rng, (5, 5)) for _ in range(3)])
    plan = gpuconv.Plan(x.shape, bank, boundary="wrap", correlate=True, device="cpu")
    got = plan(x)
    assert got.shape == (2, 3, 24, 20)
    for p in range(2):
        for c in range(3):
            assert_close(got[p, c], reference(x[p], bank[c], "same", "wrap", True), "float32")


def test_plan_cache(rng):
    gpuconv.clear_plan_cache()
    x = random_image(rng, (16, 16), "float32")
    k = random_kernel(rng, (3, 3))
    gpuconv.convolve(x, k, device="cpu")
    gpuconv.convolve(x + 1, k, device="cpu")
    assert gpuconv.plan_cache_info()["size"] == 1
    gpuconv.convolve(x, k * 2, device="cpu")                   # another kernel
    gpuconv.convolve(x.astype(np.uint8), k, device="cpu")      # another dtype
    gpuconv.convolve(x, k, mode="full", device="cpu")          # other options
    assert gpuconv.plan_cache_info()["size"] == 4
    gpuconv.set_plan_cache_size(2)
    try:
        assert gpuconv.plan_cache_info() == {"size": 2, "maxsize": 2}
    finally:
        gpuconv.set_plan_cache_size(16)


def test_torch_cpu_tensor_round_trip(rng):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = random_image(rng, (2, 20, 22), "float32")
    k = random_kernel(rng, (3, 3))
    got = gpuconv.convolve(torch.from_numpy(x), k, device="cpu")
    assert isinstance(got, torch.Tensor) and got.device.type == "cpu"
    np.testing.assert_array_equal(got.numpy(), gpuconv.convolve(x, k, device="cpu"))


def test_lists_follow_the_dtype_rule():
    with pytest.raises(TypeError, match="float64"):  # Python floats are float64
        gpuconv.convolve(np.eye(4).tolist(), [[1.0]], device="cpu")
    got = gpuconv.convolve(np.eye(4, dtype=np.uint8), [[2]], device="cpu")
    assert got.dtype == np.uint8 and got[1, 1] == 2


def test_auto_device_without_gpu_is_cpu():
    if gpuconv.cuda_available():
        pytest.skip("a CUDA device is present: 'auto' picks it")
    assert gpuconv.Plan((8, 8), np.ones((3, 3))).backend == "cpu"


def test_time_execute_host_times_the_plans_own_calls(rng):
    """Plan._core.time_execute_host (scripts/numpy-peer.py): `iterations` host calls back to back
    in C++, each timed; the output is the plan's result, and bad arguments are refused."""
    x = random_image(rng, (2, 40, 50), "float32")
    k = random_kernel(rng, (5, 5))
    plan = gpuconv.Plan(x.shape, k, device="cpu")
    want = plan(x)
    out = np.full(plan.output_shape, np.nan, dtype=np.float32)
    ms = plan._core.time_execute_host(x, out, 4, 1)
    assert len(ms) == 4 and all(t > 0 for t in ms)
    np.testing.assert_array_equal(out, want)
    with pytest.raises(ValueError, match="iterations 0"):
        plan._core.time_execute_host(x, out, 0, 0)
    with pytest.raises(ValueError, match="output holds"):
        plan._core.time_execute_host(x, out[:1], 2, 0)
    with pytest.raises(TypeError, match="dtypes differ"):
        plan._core.time_execute_host(x, out.astype(np.float64), 2, 0)


def _address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_host_results_reuse_only_dropped_buffers(rng, kind):
    """Host results (no out=) come from cached blocks (gpuconv._hostbuf): a dropped result's
    memory is handed out again, but never while the caller holds the result, a view of it, a
    memoryview or a tensor over it - those keep their values through later calls."""
    if kind == "torch":
        torch = pytest.importorskip("torch")
    gpuconv.clear_host_cache()
    x = random_image(rng, (3, 300, 400), "float32")  # 1.44 MB results: cached
    k = random_kernel(rng, (5, 5))
    plan = gpuconv.Plan(x.shape, k, device="cpu")
    arg = torch.from_numpy(x) if kind == "torch" else x
    want = np.asarray(plan(x)).copy()

    def host(r):
        return r.numpy() if kind == "torch" else r

    first = plan(arg)
    a = _address(host(first))
    del first
    second = plan(arg)
    assert _address(host(second)) == a  # dropped: reused
    np.testing.assert_array_equal(host(second), want)

    held = [second]  # a held result: the next call gets other memory and leaves it alone
    view = host(second)[1:, ::2]
    mv = memoryview(host(second))
    del second
    x2 = random_image(rng, x.shape, "float32")
    arg2 = torch.from_numpy(x2) if kind == "torch" else x2
    want2 = plan(x2).copy()
    for _ in range(6):  # more calls than the cache has blocks
        other = plan(arg2)
        assert _address(host(other)) != a
        np.testing.assert_array_equal(host(other), want2)
    np.testing.assert_array_equal(host(held[0]), want)
    np.testing.assert_array_equal(view, want[1:, ::2])
    del held
    np.testing.assert_array_equal(np.asarray(mv), want)
    del mv
    other = plan(arg2)  # the view alone still holds the block
    assert _address(host(other)) != a
    np.testing.assert_array_equal(view, want[1:, ::2])
    info = gpuconv.host_cache_info()
    assert info["blocks"] <= info["max_blocks"]
    gpuconv.clear_host_cache()
    assert gpuconv.host_cache_info()["blocks"] == 0


def test_host_results_cache_bounds(rng, monkeypatch):
    """GPUCONV_HOST_CACHE_MB=0 turns the cache off; small results are never cached; a bad value is
    refused naming it."""
    gpuconv.clear_host_cache()
    x = random_image(rng, (3, 300, 400), "float32")
    plan = gpuconv.Plan(x.shape, random_kernel(rng, (3, 3)), device="cpu")
    small = gpuconv.Plan((20, 20), random_kernel(rng, (3, 3)), device="cpu")
    small(random_image(rng, (20, 20), "float32"))
    assert gpuconv.host_cache_info()["blocks"] == 0
    monkeypatch.setenv("GPUCONV_HOST_CACHE_MB", "0")
    r = plan(x)
    assert r.flags.owndata and gpuconv.host_cache_info()["blocks"] == 0
    monkeypatch.setenv("GPUCONV_HOST_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="GPUCONV_HOST_CACHE_MB='lots'"):
        plan(x)
    monkeypatch.setenv("GPUCONV_HOST_CACHE_MB", "2")  # one 2 MiB block at most
    results = [plan(x) for _ in range(3)]
    info = gpuconv.host_cache_info()
    assert info["blocks"] == 1 and info["bytes"] <= 2 << 20
    assert len({_address(r) for r in results}) == 3  # all held: three buffers
    gpuconv.clear_host_cache()
