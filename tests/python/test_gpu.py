"""GPU tests (@pytest.mark.gpu): CuPy arrays and CUDA PyTorch tensors, zero-copy, on the
caller's current stream; outputs of the input's type and device; dtypes; non-contiguous
inputs; results equal to the CPU backend's (float32 within 1e-6 relative L2 of the float64
reference, 8/16-bit within 1 LSB). Each test is skipped with its reason where there is no
CUDA device, or no CuPy / PyTorch (pytest -rs lists them); none passes without running."""
import numpy as np
import pytest

import gpuconv
from conftest import assert_close, need_gpu, random_image, random_kernel, reference

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "uint8", "uint16"]


def torch_dtype(torch, name):
    if not hasattr(torch, name):
        pytest.skip(f"this PyTorch has no torch.{name}")
    return getattr(torch, name)


def test_numpy_through_the_gpu(rng):
    need_gpu()
    for dtype in DTYPES:
        x = random_image(rng, (3, 50, 70), dtype)
        k = random_kernel(rng, (9, 6))
        got = gpuconv.convolve(x, k, device="cuda")
        assert isinstance(got, np.ndarray)
        assert_close(got, reference(x, k), dtype)
        assert gpuconv.Plan(x.shape, k).backend == "cuda"  # 'auto' picks the GPU


def test_numpy_through_the_gpu_into_reused_buffers(rng):
    """Large NumPy results through the GPU come from gpuconv._hostbuf's blocks: a held result
    keeps its values while later calls write other blocks, and a dropped one is reused."""
    need_gpu()
    gpuconv.clear_host_cache()
    xs = [random_image(rng, (2, 512, 640), "float32") for _ in range(3)]
    k = random_kernel(rng, (9, 9))
    plan = gpuconv.Plan(xs[0].shape, k, device="cuda")
    wants = [reference(x, k) for x in xs]
    held = plan(xs[0])
    address = held.__array_interface__["data"][0]
    for _ in range(3):
        for x, want in zip(xs[1:], wants[1:]):
            got = plan(x)
            assert got.__array_interface__["data"][0] != address
            assert_close(got, want, "float32")
    assert_close(held, wants[0], "float32")
    del held
    assert plan(xs[0]).__array_interface__["data"][0] == address
    gpuconv.clear_host_cache()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("boundary", gpuconv.BOUNDARIES)
@pytest.mark.parametrize("mode", gpuconv.MODES)
def test_cupy_every_mode_boundary_dtype(cp, rng, dtype, boundary, mode):
    x = random_image(rng, (2, 45, 61), dtype)
    k = random_kernel(rng, (7, 4))
    got = gpuconv.convolve(cp.asarray(x), k, mode=mode, boundary=boundary, cval=2.0)
    assert isinstance(got, cp.ndarray) and got.dtype == np.dtype(dtype)
    assert got.device.id == cp.cuda.Device().id
    host = got.get()
    assert_close(host, reference(x, k, mode, boundary, cval=2.0), dtype)
    cpu = gpuconv.convolve(x, k, mode=mode, boundary=boundary, cval=2.0, device="cpu")
    if dtype == "float32":
        assert np.linalg.norm(host - cpu) <= 1e-6 * np.linalg.norm(cpu)
    else:
        assert np.abs(host.astype(np.int64) - cpu).max() <= 1


@pytest.mark.parametrize("K", [3, 31, 127, 200])
def test_cupy_kernel_sizes_and_paths(cp, rng, K):
    """Kernel sizes that take the direct path (K = 3), the fused path, and past 128 the three-pass path."""
    x = random_image(rng, (1, 300, 280), "float32")
    k = random_kernel(rng, (K, K))
    plan = gpuconv.Plan(x.shape, k, boundary="zero")
    got = plan(cp.asarray(x)).get()
    assert_close(got, reference(x, k, "same", "zero"), "float32")
    assert plan.path in ("direct", "separable", "fused", "three_pass", "multipass")


SPIN = r"""
extern "C" __global__ void spin_then_fill(float* x, long long n, long long cycles, float value) {
  long long start = clock64();
  while (clock64() - start < cycles) {}
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] = value;
}
"""


def test_cupy_runs_on_the_current_stream(cp, rng):
    """The input is written on a non-blocking stream by a kernel that first spins ~50 ms; the
    convolution, enqueued on that stream without a sync, must see the written values (on any
    other stream it would read the zeros). Plans are built (and run once) beforehand, so that
    no set-up synchronises while the spin runs."""
    spin = cp.RawKernel(SPIN, "spin_then_fill")
    k = np.ones((3, 3), np.float32)
    x = cp.zeros((4, 128, 128), cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        gpuconv.convolve(x, k, boundary="replicate")  # the cached plan for this stream
        plan = gpuconv.Plan(x.shape, k, boundary="replicate")
        out2 = cp.empty_like(x)
        plan(x, out=out2)
    cp.cuda.Device().synchronize()
    with stream:
        spin((64,), (256,), (x, np.int64(x.size), np.int64(100_000_000), np.float32(1.0)))
        out = gpuconv.convolve(x, k, boundary="replicate")
        plan(x, out=out2)
    stream.synchronize()
    np.testing.assert_allclose(out.get(), 9.0, rtol=1e-6)
    np.testing.assert_allclose(out2.get(), 9.0, rtol=1e-6)


def test_cupy_non_contiguous_and_axes(cp, rng):
    x = random_image(rng, (60, 80, 3), "uint8")
    k = random_kernel(rng, (5, 5))
    xd = cp.asarray(x)
    got = gpuconv.convolve(xd, k, axes=(0, 1))
    assert got.shape == x.shape and isinstance(got, cp.ndarray)
    assert_close(np.moveaxis(got.get(), 2, 0), reference(np.moveaxis(x, 2, 0), k), "uint8")
    view = xd[::2, 1::2, 0]
    assert not view.flags.c_contiguous
    assert_close(gpuconv.convolve(view, k).get(), reference(x[::2, 1::2, 0], k), "uint8")


def test_cupy_plan_bank_and_out(cp, rng):
    x = random_image(rng, (2, 64, 64), "float32")
    bank = np.stack([random_kernel(rng, (5, 5)) for _ in range(4)])
    plan = gpuconv.Plan(x.shape, bank, mode="full", boundary="zero", device="cuda")
    out = cp.empty(plan.output_shape, cp.float32)
    assert plan(cp.asarray(x), out=out) is out
    for p in range(2):
        for c in range(4):
            assert_close(out[p, c].get(), reference(x[p], bank[c], "full", "zero"), "float32")
    with pytest.raises(ValueError, match="out has shape"):
        plan(cp.asarray(x), out=cp.empty((2, 4, 68, 67), cp.float32))
    with pytest.raises(ValueError, match="CPU backend"):
        gpuconv.Plan(x.shape, bank, device="cpu")(cp.asarray(x))
    with pytest.raises(ValueError, match="device 'cpu'"):
        gpuconv.convolve(cp.asarray(x), bank[0], device="cpu")


def test_cupy_fftconvolve_and_filter2d(cp, rng):
    a = rng.standard_normal((100, 90))
    b = rng.standard_normal((9, 9))
    import scipy.signal
    ref = scipy.signal.fftconvolve(a, b, mode="same")
    got = gpuconv.fftconvolve(cp.asarray(a), cp.asarray(b), mode="same")
    assert isinstance(got, cp.ndarray) and got.dtype == cp.float64
    assert np.linalg.norm(got.get() - ref) <= 1e-6 * np.linalg.norm(ref)
    src = random_image(rng, (40, 50), "uint8")
    k = random_kernel(rng, (3, 3))
    cpu = gpuconv.filter2D(src, -1, k, delta=3)
    assert np.abs(gpuconv.filter2D(cp.asarray(src), -1, k, delta=3).get().astype(int) - cpu).max() <= 1


def test_cupy_timer(cp, rng):
    x = cp.asarray(random_image(rng, (1, 256, 256), "float32"))
    out = cp.empty_like(x)
    plan = gpuconv.Plan(x.shape, random_kernel(rng, (7, 7)), boundary="zero")
    ms, wall = plan._core.time_execute_device(x.data.ptr, out.data.ptr, "float32", 0, 5, 1)
    assert len(ms) == 5 and all(t > 0 for t in ms) and wall > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_tensors(torch, rng, dtype):
    tdtype = torch_dtype(torch, dtype)
    x = random_image(rng, (3, 40, 52), dtype)
    k = random_kernel(rng, (5, 8))
    xt = torch.from_numpy(x.astype(np.int32) if dtype == "uint16" else x).to("cuda").to(tdtype)
    got = gpuconv.convolve(xt, k, boundary="reflect")
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == tdtype
    assert got.device == xt.device
    host = got.cpu()
    host = host.to(torch.int32).numpy() if dtype == "uint16" else host.numpy()
    assert_close(host, reference(x, k, "same", "reflect"), dtype)


def test_torch_runs_on_the_current_stream(torch):
    """As for CuPy: a ~50 ms spin then the input's write on a side stream, the convolution
    enqueued behind them on that stream (its plan built and run beforehand)."""
    k = np.ones((3, 3), np.float32)
    x = torch.zeros((2, 96, 96), device="cuda")
    ones = torch.ones_like(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gpuconv.convolve(x, k, boundary="replicate")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)
        x.copy_(ones)
        out = gpuconv.convolve(x, k, boundary="replicate")
    stream.synchronize()
    assert torch.allclose(out, torch.full_like(out, 9.0))


def test_torch_non_contiguous(torch, rng):
    x = random_image(rng, (64, 48), "float32")
    k = random_kernel(rng, (3, 5))
    xt = torch.from_numpy(x).cuda()
    view = xt.t()
    assert not view.is_contiguous()
    got = gpuconv.convolve(view, k, mode="valid")
    assert_close(got.cpu().numpy(), reference(x.T, k, "valid"), "float32")
    batch = torch.from_numpy(random_image(rng, (4, 3, 40, 40), "float32")).cuda()[:, 1]
    got = gpuconv.convolve(batch, k)
    assert got.shape == (4, 40, 40)
    assert_close(got.cpu().numpy(), reference(batch.cpu().numpy(), k), "float32")


def test_torch_and_cupy_agree(torch, cp, rng):
    x = random_image(rng, (2, 70, 70), "float32")
    k = random_kernel(rng, (11, 11))
    a = gpuconv.convolve(torch.from_numpy(x).cuda(), k).cpu().numpy()
    b = gpuconv.convolve(cp.asarray(x), k).get()
    np.testing.assert_array_equal(a, b)
