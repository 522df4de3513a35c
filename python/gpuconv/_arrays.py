"""Array types gpuconv accepts, seen through one small interface.

NumPy arrays (and CPU PyTorch tensors, through NumPy) are host buffers; CuPy arrays and CUDA
PyTorch tensors are device buffers, used in place through their data pointers
(``__cuda_array_interface__`` / ``data_ptr``) on the caller's current stream. Other objects
that expose ``__cuda_array_interface__`` or ``__dlpack__`` on a CUDA device are viewed as CuPy
arrays (zero-copy) when CuPy is installed. Nothing here imports CuPy or PyTorch unless the
caller passed one of their arrays.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Tuple

import numpy as np

#: dtypes the C++ plan executes on (narrow types rounded half to even and saturated on store)
SUPPORTED = ("float32", "uint8", "uint16")


def unsupported_dtype(name: str, where: str) -> TypeError:
    hint = ""
    if name == "float64":
        hint = " (convert with .astype('float32'); gpuconv.fftconvolve converts float64 itself)"
    return TypeError(f"{where}: dtype {name} is not supported: use float32, uint8 or uint16{hint}")


_DTYPE_NAMES: dict = {}  # dtype object -> its name ("float32", ...), filled as dtypes are seen


class Ops:
    """How gpuconv handles one array type. ``device`` is False for host buffers."""

    kind = "numpy"
    device = False

    def dtype_name(self, x: Any) -> str:
        d = x.dtype  # NumPy's and CuPy's dtype.name is Python code: looked up once per dtype
        name = _DTYPE_NAMES.get(d)
        if name is None:
            name = _DTYPE_NAMES[d] = d.name
        return name

    def to_host_numpy(self, x: Any) -> np.ndarray:
        return x

    def from_host_numpy(self, out: np.ndarray, like: Any) -> Any:
        return out

    def moveaxis(self, x: Any, src: Tuple[int, ...], dst: Tuple[int, ...]) -> Any:
        return np.moveaxis(x, src, dst)

    def contiguous(self, x: Any) -> Any:
        return np.ascontiguousarray(x)

    def is_contiguous(self, x: Any) -> bool:
        return x.flags.c_contiguous

    def empty(self, shape: Tuple[int, ...], dtype: str, like: Any) -> Any:
        return np.empty(shape, dtype=dtype)

    # device arrays only
    def device_index(self, x: Any) -> int:
        raise NotImplementedError

    def pointer(self, x: Any) -> int:
        raise NotImplementedError

    def stream(self, x: Any) -> int:
        raise NotImplementedError


def _torch_dtype_name(x: Any) -> str:
    d = x.dtype
    name = _DTYPE_NAMES.get(d)
    if name is None:
        name = _DTYPE_NAMES[d] = str(d).replace("torch.", "")
    return name


class TorchCpuOps(Ops):
    kind = "torch"

    def dtype_name(self, x: Any) -> str:
        return _torch_dtype_name(x)

    def to_host_numpy(self, x: Any) -> np.ndarray:
        return x.detach().numpy()

    def from_host_numpy(self, out: np.ndarray, like: Any) -> Any:
        import torch

        return torch.from_numpy(out)

    def moveaxis(self, x: Any, src: Tuple[int, ...], dst: Tuple[int, ...]) -> Any:
        return x.movedim(src, dst)

    def contiguous(self, x: Any) -> Any:
        return x.contiguous()

    def is_contiguous(self, x: Any) -> bool:
        return x.is_contiguous()


class CupyOps(Ops):
    kind = "cupy"
    device = True

    def __init__(self) -> None:
        import cupy

        self._cp = cupy

    def moveaxis(self, x: Any, src: Tuple[int, ...], dst: Tuple[int, ...]) -> Any:
        return self._cp.moveaxis(x, src, dst)

    def contiguous(self, x: Any) -> Any:
        with x.device:
            return self._cp.ascontiguousarray(x)

    def empty(self, shape: Tuple[int, ...], dtype: str, like: Any) -> Any:
        # on like's device: entering its context only where another one is current (as stream())
        if self._cp.cuda.runtime.getDevice() == like.device.id:
            return self._cp.empty(shape, dtype=dtype)
        with like.device:
            return self._cp.empty(shape, dtype=dtype)

    def device_index(self, x: Any) -> int:
        return x.device.id

    def pointer(self, x: Any) -> int:
        return x.data.ptr

    def stream(self, x: Any) -> int:
        # CuPy's current stream is per device: read it with x's device current
        cuda = self._cp.cuda
        if cuda.runtime.getDevice() == x.device.id:
            return cuda.get_current_stream().ptr
        with x.device:
            return cuda.get_current_stream().ptr


class TorchCudaOps(Ops):
    kind = "torch"
    device = True

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._dtypes = {"float32": torch.float32, "uint8": torch.uint8}
        if hasattr(torch, "uint16"):
            self._dtypes["uint16"] = torch.uint16

    def dtype_name(self, x: Any) -> str:
        return _torch_dtype_name(x)

    def moveaxis(self, x: Any, src: Tuple[int, ...], dst: Tuple[int, ...]) -> Any:
        return self._torch.movedim(x, src, dst)

    def contiguous(self, x: Any) -> Any:
        return x.contiguous()

    def is_contiguous(self, x: Any) -> bool:
        return x.is_contiguous()

    def empty(self, shape: Tuple[int, ...], dtype: str, like: Any) -> Any:
        return self._torch.empty(shape, dtype=self._dtypes[dtype], device=like.device)

    def device_index(self, x: Any) -> int:
        return x.device.index

    def pointer(self, x: Any) -> int:
        return x.data_ptr()

    def stream(self, x: Any) -> int:
        return self._torch.cuda.current_stream(x.device).cuda_stream


_NUMPY = Ops()
_cache: dict = {}


def _ops(cls: Callable[[], Ops]) -> Ops:
    ops = _cache.get(cls)
    if ops is None:
        ops = _cache[cls] = cls()
    return ops


def classify(x: Any, where: str) -> Tuple[Ops, Any]:
    """(ops, array) for x: array is x itself, or x seen as a CuPy array (foreign CUDA arrays)."""
    if isinstance(x, np.ndarray):
        return _NUMPY, x
    module = type(x).__module__.split(".", 1)[0]
    if module == "cupy":
        return _ops(CupyOps), x
    if module == "torch" and "torch" in sys.modules and isinstance(x, sys.modules["torch"].Tensor):
        if x.is_cuda:
            return _ops(TorchCudaOps), x
        if x.device.type != "cpu":
            raise TypeError(f"{where}: PyTorch tensors on '{x.device}' are not supported (CPU or CUDA)")
        return _ops(TorchCpuOps), x
    if hasattr(x, "__cuda_array_interface__") or _dlpack_on_cuda(x):
        try:
            import cupy
        except ImportError:
            raise TypeError(
                f"{where}: {type(x).__name__} is a CUDA array: gpuconv takes those as CuPy arrays or "
                "PyTorch tensors (CuPy is not installed to view it)") from None
        view = cupy.asarray(x) if hasattr(x, "__cuda_array_interface__") else cupy.from_dlpack(x)
        return _ops(CupyOps), view
    if hasattr(x, "__array__") or isinstance(x, (list, tuple)):
        return _NUMPY, np.asarray(x)
    raise TypeError(f"{where}: cannot take {type(x).__name__} as an image "
                    "(NumPy, CuPy, PyTorch or an object with __cuda_array_interface__/__dlpack__)")


def _dlpack_on_cuda(x: Any) -> bool:
    device = getattr(x, "__dlpack_device__", None)
    if device is None:
        return False
    try:
        kind, _ = device()
    except Exception:
        return False
    return int(kind) in (2, 13)  # kDLCUDA, kDLCUDAManaged


def host_kernel(kernel: Any, where: str) -> np.ndarray:
    """The kernel as a NumPy array on the host (device kernels are copied, which synchronises)."""
    if isinstance(kernel, np.ndarray):
        k = kernel
    else:
        module = type(kernel).__module__.split(".", 1)[0]
        if module == "cupy":
            k = kernel.get()
        elif module == "torch":
            k = kernel.detach().cpu().numpy()
        else:
            k = np.asarray(kernel)
    if k.dtype.kind == "c":
        raise TypeError(f"{where}: complex kernels are not supported (dtype {k.dtype.name})")
    if k.dtype.kind not in "fiub":
        raise TypeError(f"{where}: kernel dtype {k.dtype.name} is not a real number type")
    return k
