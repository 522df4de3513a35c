"""gpuconv.filter2D: cv2.filter2D's semantics on gpuconv's plans (OpenCV is not imported).

cv2.filter2D computes a correlation, dst(y, x) = sum k(i, j) src(y + i - ay, x + j - ax) + delta,
with the anchor (ax, ay) = (kw // 2, kh // 2) by default; gpuconv's 'same' correlation has
exactly that default anchor (conv/semantics.hpp), and another anchor is reached by padding the
kernel with zeros until the anchor is its centre. Border types by value, as OpenCV's:
BORDER_CONSTANT (0, outside value 0), BORDER_REPLICATE (1), BORDER_REFLECT (2),
BORDER_REFLECT_101 = BORDER_DEFAULT (4); BORDER_WRAP (3) is rejected, as OpenCV does;
BORDER_ISOLATED (16) may be or'ed in (a whole image has no outside ROI: no effect).

Images: H x W or H x W x C (channel last, each channel filtered alike), uint8, uint16 or
float32; NumPy or CuPy arrays. ddepth -1 (the source's depth, rounded half to even and
saturated for 8/16-bit), the source's own depth, or CV_32F (float32 output, unrounded).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ._arrays import classify, host_kernel, unsupported_dtype
from ._plan import convolve

CV_8U, CV_16U, CV_32F, CV_64F = 0, 2, 5, 6
BORDER_CONSTANT = 0
BORDER_REPLICATE = 1
BORDER_REFLECT = 2
BORDER_WRAP = 3
BORDER_REFLECT_101 = 4
BORDER_REFLECT101 = 4
BORDER_TRANSPARENT = 5
BORDER_DEFAULT = 4
BORDER_ISOLATED = 16

_BORDERS = {BORDER_CONSTANT: "zero", BORDER_REPLICATE: "replicate", BORDER_REFLECT: "reflect",
            BORDER_REFLECT_101: "reflect101"}
_DEPTHS = {"uint8": CV_8U, "uint16": CV_16U, "float32": CV_32F}


def _anchor_padding(size: int, anchor: int, axis: str) -> Tuple[int, int]:
    """Zeros before and after a kernel axis so that `anchor` becomes its centre (size' // 2)."""
    if anchor == -1 or anchor == size // 2:
        return 0, 0
    if not 0 <= anchor < size:
        raise ValueError(f"gpuconv.filter2D: anchor {axis} = {anchor} is outside the kernel (0..{size - 1})")
    centre = max(anchor, size - 1 - anchor)
    before = centre - anchor
    return before, 2 * centre + 1 - size - before


def filter2D(src: Any, ddepth: int, kernel: Any, dst: Any = None, anchor: Tuple[int, int] = (-1, -1),
             delta: float = 0, borderType: int = BORDER_DEFAULT) -> Any:
    """Correlates ``src`` with ``kernel`` as cv2.filter2D does (see the module doc).

    Args:
        src: H x W or H x W x C image, uint8, uint16 or float32 (NumPy or CuPy).
        ddepth: -1 (the source's depth), the source's depth, or CV_32F (5).
        kernel: 2D, real (converted to float32).
        dst: optional output array of the result's shape and dtype, written and returned.
        anchor: (x, y) in the kernel; (-1, -1) is its centre (kw // 2, kh // 2).
        delta: added to every output value before rounding.
        borderType: BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT, BORDER_REFLECT_101 /
            BORDER_DEFAULT, optionally | BORDER_ISOLATED.
    """
    where = "gpuconv.filter2D"
    ops, x = classify(src, where)
    if ops.kind == "torch":
        raise TypeError(f"{where}: takes NumPy or CuPy images (PyTorch: gpuconv.convolve(..., correlate=True))")
    dtype = ops.dtype_name(x)
    if dtype not in _DEPTHS:
        raise unsupported_dtype(dtype, where)
    if x.ndim not in (2, 3):
        raise ValueError(f"{where}: src shape {tuple(x.shape)}: expected H x W or H x W x C")
    depth = _DEPTHS[dtype]
    if ddepth not in (-1, depth, CV_32F):
        raise ValueError(f"{where}: ddepth {ddepth} is not supported for a {dtype} source "
                         f"(-1, {depth} or CV_32F = {CV_32F})")
    out_dtype = "float32" if ddepth == CV_32F else dtype
    border = int(borderType) & ~BORDER_ISOLATED
    if border == BORDER_WRAP:
        raise ValueError(f"{where}: borderType BORDER_WRAP ({borderType}) is not supported (OpenCV rejects it too; "
                         "gpuconv.convolve(..., boundary='wrap', correlate=True) computes it)")
    if border not in _BORDERS:
        raise ValueError(f"{where}: borderType {borderType} is not one of BORDER_CONSTANT (0), BORDER_REPLICATE (1), "
                         "BORDER_REFLECT (2), BORDER_REFLECT_101 (4), optionally | BORDER_ISOLATED (16)")
    k = host_kernel(kernel, where)
    if k.ndim != 2:
        raise ValueError(f"{where}: kernel shape {k.shape} is not 2D")
    try:
        ax, ay = (int(a) for a in anchor)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: anchor {anchor!r} must be two integers (x, y)") from None
    pad_y = _anchor_padding(k.shape[0], ay, "y")
    pad_x = _anchor_padding(k.shape[1], ax, "x")
    if pad_y != (0, 0) or pad_x != (0, 0):
        k = np.pad(np.asarray(k, dtype=np.float32), (pad_y, pad_x))
    axes = (0, 1)
    narrow = out_dtype != "float32"
    if narrow and delta == 0:
        out = convolve(x, k, mode="same", boundary=_BORDERS[border], correlate=True, axes=axes)
    else:
        # float32 throughout; 8/16-bit outputs rounded half to even and saturated after delta
        out = convolve(x.astype(np.float32), k, mode="same", boundary=_BORDERS[border], correlate=True, axes=axes)
        if delta != 0:
            out = out + np.float32(delta)
        if narrow:
            xp = np if ops.kind == "numpy" else __import__("cupy")
            info = np.iinfo(out_dtype)
            out = xp.clip(xp.rint(out), info.min, info.max).astype(out_dtype)
    if x.ndim == 3:
        out = out.copy() if ops.kind == "numpy" else __import__("cupy").ascontiguousarray(out)
    if dst is not None:
        if tuple(dst.shape) != tuple(out.shape) or dst.dtype != out.dtype:
            raise ValueError(f"{where}: dst has shape {tuple(dst.shape)} and dtype {dst.dtype}; "
                             f"expected {tuple(out.shape)} and {out.dtype}")
        dst[...] = out
        return dst
    return out
