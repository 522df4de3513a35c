"""gpuconv.fftconvolve: scipy.signal.fftconvolve's signature and results, on gpuconv's plans.

Supported: real inputs of any real dtype (bool, integers, floats), one or two convolved axes,
and a batch: with ``axes``, every other axis of ``in2`` must have length 1 (one kernel for
every image; ``in1``'s other axes are the batch). Computed in float32 with zero boundary;
the result has SciPy's dtype (float32 when both inputs are float16/float32, else float64) and
is within about 1e-6 relative L2 of SciPy's float64 result. Inputs may be NumPy, CuPy or
PyTorch (as for gpuconv.convolve; cupyx.scipy.signal.fftconvolve has the same signature).

Not supported (these raise): complex inputs (TypeError), more than two convolved axes
(including ``axes=None`` on inputs of more than two dimensions; ValueError), and a batch of
different kernels (``in2`` with a non-convolved axis longer than 1; ValueError).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ._arrays import classify, host_kernel
from ._plan import convolve


def _fft_dtype(dtype: np.dtype) -> np.dtype:
    # scipy.fft computes float16/float32 in float32 and everything else real in float64
    if dtype.kind == "c":
        raise TypeError(f"gpuconv.fftconvolve: complex inputs are not supported (dtype {dtype.name})")
    if dtype.kind not in "biuf":
        raise TypeError(f"gpuconv.fftconvolve: dtype {dtype.name} is not a real number type")
    return np.dtype(np.float32) if dtype in (np.float16, np.float32) else np.dtype(np.float64)


def _astype(ops: Any, x: Any, dtype: str) -> Any:
    if ops.dtype_name(x) == dtype:
        return x
    if ops.kind == "torch":
        import torch

        return x.to(getattr(torch, dtype))
    return x.astype(dtype)


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Union[int, Sequence[int], None] = None) -> Any:
    """Convolves ``in1`` with ``in2`` as scipy.signal.fftconvolve does (see the module doc).

    Args:
        in1: the image(s): NumPy (or CuPy / PyTorch) array, real.
        in2: the kernel, with ``in1``'s number of dimensions; on the host or the device.
        mode: "full", "same" (the size of ``in1``, centred as SciPy does) or "valid".
        axes: the convolved axes (one or two); None: all axes (inputs of 1 or 2 dimensions).
    """
    where = "gpuconv.fftconvolve"
    ops, x = classify(in1, where)
    k = host_kernel(in2, where)
    try:
        x_dtype = np.dtype(ops.dtype_name(x))
    except TypeError:
        raise TypeError(f"{where}: dtype {ops.dtype_name(x)} is not supported") from None
    out_dtype = np.result_type(_fft_dtype(x_dtype), _fft_dtype(k.dtype))
    if x.ndim != k.ndim:
        raise ValueError(f"{where}: in1 and in2 should have the same dimensionality ({x.ndim} and {k.ndim})")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{where}: mode {mode!r} must be 'full', 'same', or 'valid'")
    if x.ndim == 0:
        raise ValueError(f"{where}: 0-dimensional inputs are not supported")
    if x.size == 0 or k.size == 0:
        return ops.from_host_numpy(np.array([], dtype=out_dtype), x) if not ops.device else x[:0].astype(out_dtype)
    ndim = x.ndim
    if axes is None:
        conv_axes = tuple(range(ndim))
    else:
        conv_axes = tuple(sorted({int(a) % ndim for a in ([axes] if np.isscalar(axes) else axes)}))
        for a in ([axes] if np.isscalar(axes) else axes):
            if not -ndim <= int(a) < ndim:
                raise ValueError(f"{where}: axes {axes!r} out of range for {ndim} dimensions")
    if len(conv_axes) > 2:
        raise ValueError(f"{where}: {len(conv_axes)} convolved axes (shape {tuple(x.shape)}, axes {axes!r}): "
                         "gpuconv convolves one or two axes (pass axes=)")
    batch_axes = [a for a in range(ndim) if a not in conv_axes]
    for a in batch_axes:
        if k.shape[a] != 1:
            raise ValueError(f"{where}: in2 has length {k.shape[a]} on the non-convolved axis {a}: "
                             "gpuconv takes one kernel for the whole batch (length 1 there)")
    # the kernel as 2D: the convolved axes, a single convolved axis as a row
    kernel2 = k.reshape([k.shape[a] for a in conv_axes])
    if kernel2.ndim == 1:
        kernel2 = kernel2.reshape(1, -1)
    x_shape = [x.shape[a] for a in conv_axes]
    k_shape = [k.shape[a] for a in conv_axes]
    if mode == "valid" and not all(k_ <= n for n, k_ in zip(x_shape, k_shape)):
        if not all(n <= k_ for n, k_ in zip(x_shape, k_shape)):
            raise ValueError(f"{where}: for 'valid' mode, one must be at least as large as the other in every "
                             f"dimension (in1 {tuple(x.shape)}, in2 {tuple(k.shape)})")
        if ops.device:
            raise ValueError(f"{where}: 'valid' with in2 larger than in1 needs in1 on the host (in2 is the kernel)")
        # SciPy swaps the inputs (convolution commutes): in1 becomes the kernel
        result = fftconvolve(k, ops.to_host_numpy(x), mode=mode, axes=axes)
        return ops.from_host_numpy(np.ascontiguousarray(result), x)

    xf = _astype(ops, x, "float32")
    if len(conv_axes) == 2:
        out = convolve(xf, kernel2, mode=mode, boundary="zero", axes=conv_axes, device="auto")
    else:
        # one axis: a 1 x n image row per position of the other axes
        a = conv_axes[0]
        moved = ops.moveaxis(xf, (a,), (-1,))
        rows = moved.reshape(tuple(moved.shape[:-1]) + (1, moved.shape[-1]))
        out = convolve(rows, kernel2, mode=mode, boundary="zero", device="auto")
        out = out.reshape(tuple(out.shape[:-2]) + (out.shape[-1],))
        out = ops.moveaxis(out, (-1,), (a,))
    return _astype(ops, out, out_dtype.name)
