"""gpuconv.Plan (a conv::plan reused across calls), gpuconv.convolve and its plan cache.

The layer between the array types (_arrays) and the C++ plan (_gpuconv): shapes, dtypes,
devices and streams are checked here, the arithmetic happens in C++.

Rules, in one place:
- Images: the last two axes (or ``axes``) are convolved, every leading axis is a batch (the
  C++ plan's planes). dtypes float32, uint8, uint16; narrow outputs are rounded half to even
  and saturated. Other dtypes raise TypeError naming the dtype (float64 included: convert
  with ``.astype('float32')``, or use gpuconv.fftconvolve, which converts float64 itself).
- Non-contiguous inputs (slices, transposes, moved axes) are copied to a C-contiguous buffer
  first, on the same device; outputs are always new C-contiguous buffers (when ``axes`` are
  not the last two, the output is that buffer with the axes moved back: a view). Host results
  of 1 MiB or more come from blocks reused once nothing refers to them (_hostbuf).
- NumPy inputs run on the CPU backend, or through the GPU (host -> device -> host) when
  ``device`` is "cuda" (or "auto" with a CUDA device present). CuPy arrays and CUDA PyTorch
  tensors run zero-copy on their own device, asynchronously on the caller's current stream
  (cupy.cuda.get_current_stream(), torch.cuda.current_stream()); the result is an array of
  the same type on the same device.
- Kernels are read on the host: a CuPy or PyTorch kernel is copied (and so synchronises);
  pass NumPy kernels to avoid that. Kernels are converted to float32.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _gpuconv, _hostbuf
from ._arrays import SUPPORTED, Ops, classify, host_kernel, unsupported_dtype

MODES = ("same", "full", "valid")
BOUNDARIES = ("zero", "constant", "replicate", "reflect", "reflect101", "wrap")

_cuda_count: Optional[int] = None
_thread = threading.local()


def cuda_available() -> bool:
    """True when gpuconv's CUDA runtime sees a device (checked once)."""
    global _cuda_count
    if _cuda_count is None:
        _cuda_count = _gpuconv.cuda_device_count()
    return _cuda_count > 0


def _use_device(index: int) -> None:
    # gpuconv links its own (static) CUDA runtime: its current device is set here, per thread
    if getattr(_thread, "device", 0) != index:
        _gpuconv.set_device(index)
        _thread.device = index


def _parse_device(device: Union[str, int, None], where: str) -> Tuple[str, int]:
    """("cpu" | "cuda" | "auto", index) from "auto", "cpu", "cuda", "cuda:N" or N."""
    if device is None or device == "auto":
        return "auto", 0
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        return "cuda", int(device)
    if isinstance(device, str):
        if device == "cpu":
            return "cpu", 0
        if device == "cuda":
            return "cuda", 0
        if device.startswith("cuda:") and device[5:].isdigit():
            return "cuda", int(device[5:])
    raise ValueError(f"{where}: device {device!r} is not one of 'auto', 'cpu', 'cuda', 'cuda:N'")


def _check_option(value: Any, allowed: Sequence[str], name: str, where: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{where}: {name} {value!r} is not one of " + ", ".join(repr(a) for a in allowed))
    return value


def _check_plan_args(shape: Sequence[int], axes: str, mode: str, boundary: str, dtype: Optional[str], threads: int,
                     where: str) -> Tuple[Tuple[int, ...], Optional[str]]:
    """A plan's shape (at least the named axes, none empty) and options checked; (shape, dtype name)."""
    shape = tuple(int(s) for s in shape)
    if len(shape) < len(axes):
        count = {2: "two", 3: "three"}[len(axes)]
        raise ValueError(f"{where}: shape {shape} needs at least {count} axes ({', '.join(axes)})")
    if any(s < 1 for s in shape):
        raise ValueError(f"{where}: shape {shape} has an empty axis")
    if int(threads) < 0:
        raise ValueError(f"{where}: threads {threads} is < 0")
    _check_option(mode, MODES, "mode", where)
    _check_option(boundary, BOUNDARIES, "boundary", where)
    if dtype is not None:
        dtype = np.dtype(dtype).name
        if dtype not in SUPPORTED:
            raise unsupported_dtype(dtype, where)
    return shape, dtype


def _plan_device(device: Union[str, int], where: str) -> Tuple[str, int]:
    """("cuda" | "cpu", index) a plan is built for: "auto" takes CUDA when present; the device made current."""
    kind, index = _parse_device(device, where)
    if kind == "auto":
        kind = "cuda" if cuda_available() else "cpu"
    elif kind == "cuda" and not cuda_available():
        raise RuntimeError(f"{where}: device {device!r} asked for, but no CUDA device is present")
    if kind == "cuda":
        _use_device(index)
    return kind, index


def _call_device(ops: Ops, x: Any, device: Union[str, int], where: str, what: str = "image"
                 ) -> Tuple[str, int, Optional[int]]:
    """(kind, index, stream) a call on x runs with: CUDA arrays on their own device and the
    caller's current stream (a `device` naming another raises), host arrays as `device` says."""
    kind, index = _parse_device(device, where)
    if ops.device:
        named = index if kind == "cuda" and device != "cuda" else None
        index = ops.device_index(x)
        if kind == "cpu" or (named is not None and named != index):
            raise ValueError(f"{where}: device {device!r}, but the {what} is a CUDA array on device {index}")
        return "cuda", index, ops.stream(x)
    if kind == "auto":
        kind = "cuda" if cuda_available() else "cpu"
    return kind, index, None


class _HeldPlan:
    """What Plan and Plan3D share: the C++ plan (``_core``) and the properties read from it."""

    _core: Any

    @property
    def backend(self) -> str:
        """The backend the plan runs on: "cuda" or "cpu"."""
        return self._core.backend

    @property
    def path(self) -> str:
        """The CUDA route ("direct", "separable", "fused", "three_pass", "multipass" for images;
        "separable", "fused" - the FFT tiles' slice path - or "multipass" for volumes); "none" on the CPU."""
        return self._core.path

    @property
    def method(self) -> str:
        """The CPU backend's method ("direct", "separable", "fft"); on CUDA "automatic", or
        "separable" for a volume's rank-1 PSF."""
        return self._core.method

    # The checks and the host call both plans make; `noun` names the input ("image", "volume").
    # Subclasses hold shape, dtype, device_index and _lock.
    def _input_dtype(self, ops: Ops, x: Any, where: str, noun: str) -> str:
        """The input's dtype name, after its shape and dtype are checked against the plan."""
        if tuple(x.shape) != self.shape:
            raise ValueError(f"{where}: {noun} shape {tuple(x.shape)} differs from the plan's {self.shape}")
        dtype = ops.dtype_name(x)
        if dtype not in SUPPORTED:
            raise unsupported_dtype(dtype, where)
        if self.dtype is not None and dtype != self.dtype:
            raise TypeError(f"{where}: {noun} dtype {dtype} differs from the plan's {self.dtype}")
        return dtype

    def _cuda_index(self, ops: Ops, x: Any, where: str, noun: str) -> int:
        """The device of a CUDA input, which must be the plan's."""
        index = ops.device_index(x)
        if self.backend != "cuda":
            raise ValueError(f"{where}: the plan runs on the CPU backend; the {noun} is a CUDA array "
                             f"(build the plan with device='cuda:{index}')")
        if index != self.device_index:
            raise ValueError(f"{where}: the {noun} is on CUDA device {index}, the plan on device {self.device_index}")
        return index

    def _execute_host(self, host: np.ndarray, result: np.ndarray) -> None:
        """The plan on host arrays (through the GPU when its backend is CUDA)."""
        if self.backend == "cuda":
            _use_device(self.device_index)
        with self._lock:
            self._core.execute(host, result)


class Plan(_HeldPlan):
    """A convolution planned once for an image shape, a kernel (or a bank of kernels) and options.

    ``Plan(shape, kernel)`` builds the C++ plan (tiling, kernel spectrum, device buffers);
    ``plan(image)`` and ``plan(image, out=...)`` run it. Reusing a plan skips that set-up:
    this is the fastest way to convolve many images of one shape.

    Args:
        shape: the image shape ``(..., H, W)``; leading axes are a batch.
        kernel: ``(kh, kw)``, or a bank ``(count, kh, kw)``: every image plane is convolved
            with every kernel and the output gains an axis of ``count`` before ``(oh, ow)``.
        mode: "same" (H x W), "full" (H+kh-1 x W+kw-1) or "valid" (H-kh+1 x W-kw+1).
        boundary: how the image extends past its edges: "zero", "constant" (``cval``),
            "replicate" (aaa|abc), "reflect" (cba|abc), "reflect101" (cb|abc, OpenCV's default)
            or "wrap" (abc|abc).
        correlate: correlation (the kernel not flipped) instead of convolution.
        dtype: when given ("float32", "uint8", "uint16"), calls with another dtype raise.
        device: "auto" (CUDA when a device is present), "cpu", "cuda" or "cuda:N".
        cval: the outside value for boundary "constant".
        threads: the CPU backend's threads (0: every core).

    A plan runs one call at a time (calls from several threads are serialised); on CUDA its
    workspace is shared, so do not run one plan on two streams at once: build one per stream.
    """

    def __init__(self, shape: Sequence[int], kernel: Any, mode: str = "same", boundary: str = "reflect101",
                 correlate: bool = False, dtype: Optional[str] = None, device: Union[str, int] = "auto",
                 cval: float = 0.0, threads: int = 0) -> None:
        where = "gpuconv.Plan"
        shape, dtype = _check_plan_args(shape, "HW", mode, boundary, dtype, threads, where)
        k = host_kernel(kernel, where)
        if k.ndim not in (2, 3):
            raise ValueError(f"{where}: kernel shape {k.shape}: expected (kh, kw) or a bank (count, kh, kw)")
        bank = np.ascontiguousarray(k.reshape((1,) + k.shape) if k.ndim == 2 else k, dtype=np.float32)
        kind, index = _plan_device(device, where)
        planes = math.prod(shape[:-2])
        self._core = _gpuconv.Plan(shape[-2], shape[-1], planes, bank, mode, boundary, bool(correlate),
                                   float(cval), kind, 0, int(threads))
        self.shape: Tuple[int, ...] = shape
        self.kernel_shape: Tuple[int, ...] = k.shape
        self.mode, self.boundary, self.correlate, self.cval, self.dtype = mode, boundary, bool(correlate), cval, dtype
        self.device_index: int = index
        out_hw = (self._core.output_height, self._core.output_width)
        self.output_shape: Tuple[int, ...] = shape[:-2] + ((k.shape[0],) if k.ndim == 3 else ()) + out_hw
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"gpuconv.Plan(shape={self.shape}, kernel={self.kernel_shape}, mode={self.mode!r}, "
                f"boundary={self.boundary!r}, correlate={self.correlate}, backend={self.backend!r}"
                + (f", device={self.device_index}" if self.backend == "cuda" else "") + ")")

    def __call__(self, image: Any, out: Any = None) -> Any:
        """Convolves ``image`` (shape ``self.shape``); returns ``out`` or a new array of its type."""
        ops, x = classify(image, "gpuconv.Plan")
        return self._run(ops, x, out, None)

    def _run(self, ops: Ops, x: Any, out: Any, stream: Optional[int]) -> Any:
        where = "gpuconv.Plan"
        dtype = self._input_dtype(ops, x, where, "image")
        if ops.device:
            return self._run_device(ops, x, out, dtype, stream)
        host = ops.to_host_numpy(x)
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        if out is None:
            result = _hostbuf.empty(self.output_shape, dtype)
        else:
            result = ops.to_host_numpy(out)
            self._check_out(result, type(host), dtype, result.flags.c_contiguous)
        self._execute_host(host, result)
        return out if out is not None else ops.from_host_numpy(result, x)

    def _run_device(self, ops: Ops, x: Any, out: Any, dtype: str, stream: Optional[int],
                    index: Optional[int] = None, out_shape: Optional[Tuple[int, ...]] = None) -> Any:
        """x a CUDA array; index: its device, already checked against the plan's (else checked
        here); out_shape: a new output's shape where not output_shape (the same count of values)."""
        where = "gpuconv.Plan"
        if index is None:
            index = self._cuda_index(ops, x, where, "image")
        if not ops.is_contiguous(x):
            x = ops.contiguous(x)
        if out is None:
            out = ops.empty(out_shape or self.output_shape, dtype, x)
        else:
            if type(out) is not type(x) or ops.device_index(out) != index:
                raise ValueError(f"{where}: out must be a {type(x).__name__} on CUDA device {index}")
            self._check_out(out, type(x), dtype, ops.is_contiguous(out), ops)
        if stream is None:
            stream = ops.stream(x)
        _use_device(index)
        with self._lock:
            self._core.execute_device(ops.pointer(x), ops.pointer(out), dtype, stream)
        return out

    def _check_out(self, out: Any, kind: type, dtype: str, contiguous: bool, ops: Optional[Ops] = None) -> None:
        where = "gpuconv.Plan"
        if not isinstance(out, kind):
            raise TypeError(f"{where}: out is a {type(out).__name__}, expected {kind.__name__}")
        out_dtype = ops.dtype_name(out) if ops is not None else out.dtype.name
        if tuple(out.shape) != self.output_shape or out_dtype != dtype:
            raise ValueError(f"{where}: out has shape {tuple(out.shape)} and dtype {out_dtype}; "
                             f"expected {self.output_shape} and {dtype}")
        if not contiguous:
            raise ValueError(f"{where}: out must be C-contiguous")


# --- the plan cache behind convolve ---------------------------------------------------------

_cache: "OrderedDict[tuple, Plan]" = OrderedDict()
_cache_lock = threading.Lock()
_cache_size = 16


def set_plan_cache_size(size: int) -> None:
    """How many plans ``convolve`` keeps (least recently used dropped first; 0 disables)."""
    global _cache_size
    if size < 0:
        raise ValueError(f"gpuconv.set_plan_cache_size: size {size} is < 0")
    with _cache_lock:
        _cache_size = int(size)
        while len(_cache) > _cache_size:
            _cache.popitem(last=False)


def clear_plan_cache() -> None:
    """Drops every cached plan (and the device memory they hold)."""
    with _cache_lock:
        _cache.clear()


def plan_cache_info() -> dict:
    """{"size": plans held, "maxsize": the limit}."""
    with _cache_lock:
        return {"size": len(_cache), "maxsize": _cache_size}


def _cached_plan(key: tuple, make: Any, check: Any = None) -> Plan:
    """The cached plan for key, or make()'s (then cached). check(plan): False makes a cached
    plan a miss (keys that hold a fingerprint of the kernel rather than all of it)."""
    with _cache_lock:
        plan = _cache.get(key)
        if plan is not None and (check is None or check(plan)):
            _cache.move_to_end(key)
            return plan
    plan = make()
    with _cache_lock:
        if _cache_size > 0:
            _cache[key] = plan
            while len(_cache) > _cache_size:
                _cache.popitem(last=False)
    return plan


def _normalize_axes(axes: Sequence[int], ndim: int, where: str) -> Tuple[int, int]:
    if type(axes) is tuple and axes == (-2, -1):  # the default, without the general checks' cost
        return (ndim - 2, ndim - 1)
    try:
        a = tuple(int(v) for v in axes)
    except TypeError:
        raise ValueError(f"{where}: axes {axes!r} must be two axis numbers") from None
    if len(a) != 2:
        raise ValueError(f"{where}: axes {axes!r} must name two axes (the convolved ones)")
    if any(v < -ndim or v >= ndim for v in a):
        raise ValueError(f"{where}: axes {axes!r} out of range for an image of {ndim} dimensions")
    n = (a[0] % ndim, a[1] % ndim)
    if n[0] == n[1]:
        raise ValueError(f"{where}: axes {axes!r} name the same axis twice")
    return n


def convolve(image: Any, kernel: Any, mode: str = "same", boundary: str = "reflect101", correlate: bool = False,
             axes: Sequence[int] = (-2, -1), device: Union[str, int] = "auto", cval: float = 0.0) -> Any:
    """Convolves (or correlates) images with a 2D kernel.

    Args:
        image: NumPy or CuPy array, or PyTorch tensor (CPU or CUDA), float32, uint8 or uint16.
            The two ``axes`` are convolved; every other axis is a batch.
        kernel: 2D, any real dtype (converted to float32); read on the host.
        mode: "same", "full" or "valid" (scipy.signal's meanings).
        boundary: "zero", "constant" (with ``cval``), "replicate", "reflect", "reflect101"
            (the default, OpenCV's BORDER_DEFAULT) or "wrap".
        correlate: correlation instead of convolution (the kernel not flipped).
        axes: the two convolved axes; others than the last two are moved to the end and the
            output's moved back.
        device: for NumPy inputs, "cpu", "cuda"/"cuda:N" (through the GPU) or "auto" (CUDA
            when present). CUDA arrays always run on their own device ("cpu" raises).
        cval: the outside value for boundary "constant".

    Returns:
        An array of the input's type, device and dtype. CUDA inputs are computed
        asynchronously on the caller's current CuPy/PyTorch stream.

    Plans are cached (keyed on shape, dtype, kernel, options, device and stream): repeated
    calls with one shape cost one set-up. See ``Plan`` to hold one explicitly.
    """
    where = "gpuconv.convolve"
    ops, x = classify(image, where)
    dtype = ops.dtype_name(x)
    if dtype not in SUPPORTED:
        raise unsupported_dtype(dtype, where)
    k = host_kernel(kernel, where)
    if k.ndim != 2:
        raise ValueError(f"{where}: kernel shape {k.shape} is not 2D (kernel banks: gpuconv.Plan)")
    if x.ndim < 2:
        raise ValueError(f"{where}: image shape {tuple(x.shape)} needs at least two axes")
    ndim = x.ndim
    ax = _normalize_axes(axes, ndim, where)
    moved = ax != (ndim - 2, ndim - 1)
    if moved:
        x = ops.moveaxis(x, ax, (-2, -1))
    shape = tuple(x.shape)
    if 0 in shape:
        raise ValueError(f"{where}: image shape {shape} has an empty axis")
    planes = math.prod(shape[:-2])
    _check_option(mode, MODES, "mode", where)
    _check_option(boundary, BOUNDARIES, "boundary", where)

    kind, index, stream = _call_device(ops, x, device, where)
    kf = np.ascontiguousarray(k, dtype=np.float32)
    key = (planes, shape[-2], shape[-1], dtype, kf.shape, kf.tobytes(), mode, boundary, bool(correlate),
           float(cval), kind, index, stream)
    plan = _cached_plan(key, lambda: Plan((planes,) + shape[-2:], kf, mode=mode, boundary=boundary,
                                          correlate=correlate, device=f"{kind}:{index}" if kind == "cuda" else kind,
                                          cval=cval))
    if not ops.is_contiguous(x):
        x = ops.contiguous(x)
    if ops.device:
        # the key holds the shape, dtype and device the plan was built for: CUDA arrays skip the
        # checks a held Plan's call makes, and neither array is reshaped (a CuPy / PyTorch call a
        # few us long): the plan reads x's bytes as (planes, H, W) and writes out's likewise
        out = plan._run_device(ops, x, None, dtype, stream, index, shape[:-2] + plan.output_shape[-2:])
    else:
        flat = x if len(shape) == 3 else x.reshape((planes,) + shape[-2:])
        out = plan._run(ops, flat, None, stream)
        if len(shape) != 3:
            out = out.reshape(shape[:-2] + tuple(out.shape[-2:]))
    if moved:
        out = ops.moveaxis(out, (-2, -1), ax)
    return out
