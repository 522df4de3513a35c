"""Volumes: gpuconv.Plan3D, gpuconv.convolve3d and gpuconv.richardson_lucy (image stacks, 3D PSFs).

The same rules as the 2D calls (_plan): NumPy arrays run on the CPU backend or through the GPU
(``device``); CuPy arrays and CUDA PyTorch tensors run zero-copy on their own device,
asynchronously on the caller's current stream, and come back as the same type. The last three
axes (D, H, W) are convolved; leading axes are a batch of volumes. PSFs are read on the host.
A PSF that is a product of three 1D kernels (a gaussian) runs as three 1D passes; any other as
3D overlap-save FFT tiles (``Plan3D.path`` says which on CUDA).
"""
from __future__ import annotations

import math
import threading
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _gpuconv, _hostbuf
from ._arrays import SUPPORTED, Ops, classify, host_kernel, unsupported_dtype
from ._plan import (BOUNDARIES, MODES, _HeldPlan, _cached_plan, _call_device, _check_option, _check_plan_args,
                    _plan_device, _use_device, cuda_available)


def _psf_key(k: np.ndarray) -> tuple:
    """The PSF's part of a cache key: its shape and a fingerprint of at most 4096 of its values,
    not all of its bytes (hashing a 63^3 PSF's 1 MB took ~0.5 ms a call); a cached plan is
    used only after its PSF compares equal (_same_psf), so a collision costs a rebuild, never a
    wrong result."""
    flat = k.reshape(-1)
    step = max(1, flat.size // 4096)
    return k.shape, flat[::step].tobytes(), float(flat.sum(dtype=np.float64))


def _same_psf(k: np.ndarray) -> Any:
    return lambda held: np.array_equal(held.psf, k)


def _host_psf(psf: Any, where: str) -> np.ndarray:
    k = host_kernel(psf, where)
    if k.ndim != 3:
        raise ValueError(f"{where}: PSF shape {k.shape} is not 3D (kd, kh, kw)")
    if any(s < 1 for s in k.shape):
        raise ValueError(f"{where}: PSF shape {k.shape} has an empty axis")
    return np.ascontiguousarray(k, dtype=np.float32)


class Plan3D(_HeldPlan):
    """A volume convolution planned once for a shape, a 3D PSF and options.

    ``Plan3D(shape, psf)`` builds the C++ plan (tiles, the PSF's spectrum or its 1D factors,
    device buffers); ``plan(volume)`` runs it. Args as ``Plan``'s: ``shape`` is ``(..., D, H,
    W)`` (leading axes a batch), ``psf`` is ``(kd, kh, kw)``; mode, boundary (on every axis),
    correlate, dtype, device, cval, threads. One call at a time per plan (calls from several
    threads are serialised); build one plan per stream.
    """

    def __init__(self, shape: Sequence[int], psf: Any, mode: str = "same", boundary: str = "reflect101",
                 correlate: bool = False, dtype: Optional[str] = None, device: Union[str, int] = "auto",
                 cval: float = 0.0, threads: int = 0) -> None:
        where = "gpuconv.Plan3D"
        shape, dtype = _check_plan_args(shape, "DHW", mode, boundary, dtype, threads, where)
        k = _host_psf(psf, where)
        kind, index = _plan_device(device, where)
        volumes = math.prod(shape[:-3])
        self._core = _gpuconv.Plan3D(shape[-3], shape[-2], shape[-1], volumes, k, mode, boundary, bool(correlate),
                                     float(cval), kind, 0, int(threads))
        self.shape: Tuple[int, ...] = shape
        self.psf_shape: Tuple[int, ...] = k.shape
        self.psf: np.ndarray = k.copy()  # the PSF the plan was built with (float32)
        self.mode, self.boundary, self.correlate, self.cval, self.dtype = mode, boundary, bool(correlate), cval, dtype
        self.device_index: int = index
        self.output_shape: Tuple[int, ...] = shape[:-3] + tuple(self._core.output_shape)
        self._lock = threading.Lock()

    @property
    def tile(self) -> Tuple[int, int, int]:
        """The FFT tiles' sides (D, H, W)."""
        return tuple(self._core.tile)

    def __repr__(self) -> str:
        return (f"gpuconv.Plan3D(shape={self.shape}, psf={self.psf_shape}, mode={self.mode!r}, "
                f"boundary={self.boundary!r}, correlate={self.correlate}, backend={self.backend!r})")

    def __call__(self, volume: Any) -> Any:
        """Convolves ``volume`` (shape ``self.shape``); returns a new array of its type and device."""
        ops, x = classify(volume, "gpuconv.Plan3D")
        return self._run(ops, x, None)

    def _run(self, ops: Ops, x: Any, stream: Optional[int]) -> Any:
        where = "gpuconv.Plan3D"
        dtype = self._input_dtype(ops, x, where, "volume")
        if ops.device:
            index = self._cuda_index(ops, x, where, "volume")
            if not ops.is_contiguous(x):
                x = ops.contiguous(x)
            out = ops.empty(self.output_shape, dtype, x)
            _use_device(index)
            with self._lock:
                self._core.execute_device(ops.pointer(x), ops.pointer(out), dtype,
                                          ops.stream(x) if stream is None else stream)
            return out
        host = ops.to_host_numpy(x)
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)
        result = _hostbuf.empty(self.output_shape, dtype)
        self._execute_host(host, result)
        return ops.from_host_numpy(result, x)


def convolve3d(volume: Any, psf: Any, mode: str = "same", boundary: str = "reflect101", correlate: bool = False,
               device: Union[str, int] = "auto", cval: float = 0.0) -> Any:
    """Convolves (or correlates) volumes with a 3D PSF over their last three axes (D, H, W).

    Args:
        volume: NumPy or CuPy array, or PyTorch tensor (CPU or CUDA), float32, uint8 or uint16,
            at least 3D; leading axes are a batch of volumes.
        psf: ``(kd, kh, kw)``, any real dtype (converted to float32), read on the host; not
            normalised (scale it to sum 1 for a PSF that should keep the mean).
        mode, boundary, correlate, cval: as ``convolve`` (the boundary applies on every axis).
        device: for NumPy inputs "cpu", "cuda"/"cuda:N" or "auto"; CUDA arrays run on their own.

    Returns:
        An array of the input's type, device and dtype (narrow types rounded half to even and
        saturated). Plans are cached as ``convolve``'s are.
    """
    where = "gpuconv.convolve3d"
    ops, x = classify(volume, where)
    dtype = ops.dtype_name(x)
    if dtype not in SUPPORTED:
        raise unsupported_dtype(dtype, where)
    if x.ndim < 3:
        raise ValueError(f"{where}: volume shape {tuple(x.shape)} needs at least three axes (D, H, W)")
    shape = tuple(x.shape)
    if any(s == 0 for s in shape):
        raise ValueError(f"{where}: volume shape {shape} has an empty axis")
    k = _host_psf(psf, where)
    _check_option(mode, MODES, "mode", where)
    _check_option(boundary, BOUNDARIES, "boundary", where)
    kind, index, stream = _call_device(ops, x, device, where, "volume")
    volumes = math.prod(shape[:-3])
    key = ("3d", volumes, shape[-3:], dtype, _psf_key(k), mode, boundary, bool(correlate), float(cval), kind, index,
           stream)
    plan = _cached_plan(key, lambda: Plan3D((volumes,) + shape[-3:], k, mode=mode, boundary=boundary,
                                            correlate=correlate, device=f"{kind}:{index}" if kind == "cuda" else kind,
                                            cval=cval), _same_psf(k))
    if not ops.is_contiguous(x):
        x = ops.contiguous(x)
    out = plan._run(ops, x.reshape((volumes,) + shape[-3:]), stream)
    return out.reshape(shape[:-3] + tuple(out.shape[-3:]))


def richardson_lucy(stack: Any, psf: Any, iterations: int = 10, tv: float = 0.0, epsilon: float = 1e-6,
                    boundary: str = "reflect", device: Union[str, int] = "auto", cval: float = 0.0) -> Any:
    """Richardson-Lucy deconvolution of a 3D stack (conv::richardson_lucy; the CLI's ``deconvolve``).

    u_0 = max(y, 0); u <- max(u * ((y / (u (*) h)) (*corr) h), 0), h the PSF scaled to sum 1;
    y / b only where b > epsilon * max(y), else 0. ``tv`` > 0 adds the total-variation
    regulariser (0 <= tv < 1/6; 0.001-0.01 typical). The boundary applies on every axis; the
    estimate has the stack's shape.

    Args:
        stack: a float32 ``(D, H, W)`` NumPy or CuPy array or PyTorch tensor (other dtypes:
            convert with ``.astype('float32')``).
        psf: ``(kd, kh, kw)``, non-negative, read on the host.

    Returns:
        The estimate, float32, of the stack's type and device (CUDA: on the caller's current
        stream, asynchronously).
    """
    where = "gpuconv.richardson_lucy"
    ops, y = classify(stack, where)
    dtype = ops.dtype_name(y)
    if dtype != "float32":
        raise TypeError(f"{where}: stack dtype {dtype} is not float32 (convert with .astype('float32'))")
    if y.ndim != 3:
        raise ValueError(f"{where}: stack shape {tuple(y.shape)} is not 3D (D, H, W)")
    if any(s == 0 for s in y.shape):
        raise ValueError(f"{where}: stack shape {tuple(y.shape)} has an empty axis")
    if int(iterations) < 1:
        raise ValueError(f"{where}: iterations {iterations} is < 1")
    _check_option(boundary, BOUNDARIES, "boundary", where)
    k = _host_psf(psf, where)
    kind, index, stream = _call_device(ops, y, device, where, "stack")
    if kind == "cuda":
        if not ops.device and not cuda_available():
            raise RuntimeError(f"{where}: device {device!r} asked for, but no CUDA device is present")
        _use_device(index)
    # cached as plans are: its two plans and device buffers outlive an asynchronous run
    key = ("rl", tuple(y.shape), _psf_key(k), int(iterations), float(tv), float(epsilon), boundary, float(cval), kind,
           index, stream)
    rl = _cached_plan(key, lambda: _Deconvolver(tuple(y.shape), k, int(iterations), float(tv), float(epsilon),
                                                boundary, float(cval), kind), _same_psf(k))
    if ops.device:
        if not ops.is_contiguous(y):
            y = ops.contiguous(y)
        out = ops.empty(tuple(y.shape), "float32", y)
        with rl.lock:
            rl.core.run_device(ops.pointer(y), ops.pointer(out), stream)
        return out
    host = np.ascontiguousarray(ops.to_host_numpy(y))
    result = _hostbuf.empty(host.shape, "float32")
    with rl.lock:
        rl.core.run(host, result)
    return ops.from_host_numpy(result, y)


class _Deconvolver:
    """A conv::richardson_lucy and the lock that serialises its runs."""

    def __init__(self, shape: Tuple[int, int, int], psf: np.ndarray, iterations: int, tv: float, epsilon: float,
                 boundary: str, cval: float, kind: str) -> None:
        self.core = _gpuconv.RichardsonLucy(shape[0], shape[1], shape[2], psf, iterations, tv, epsilon, boundary, cval,
                                            kind, 0)
        self.psf = psf.copy()
        self.lock = threading.Lock()
