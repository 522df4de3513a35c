"""Host output buffers that are reused once every array over them has been dropped.

A new NumPy result of a host call (no ``out=``) is fresh memory: the kernel maps and zeroes
each page on its first write, inside the call. For a 144 MB result that costs more than the
PCIe copies themselves (H200 host: a 3 x 3000 x 4000 float32 call 12.8 ms with a new array,
5.4 ms with ``out=``). A loop ``y = plan(x)`` drops each result a call or two later, so the
results are carved from a few cached blocks instead: a block is handed out again only when
nothing but this cache refers to it - no result, no view of one, no tensor or memoryview over
one (each holds a reference to the block, NumPy's ``base``); a result the caller keeps is never
written again.

Bounds: results of at least ``_MIN_BYTES``; at most ``_MAX_BLOCKS`` blocks and
``GPUCONV_HOST_CACHE_MB`` MiB held (default 1024; 0 turns the cache off). A block the caller
still holds when the bounds are reached is forgotten by the cache (the caller's arrays keep it
alive; it is freed with them). ``clear_host_cache()`` drops every block the cache holds.
Off on free-threaded CPython, where a reference count is not a reliable "nobody else".
"""
from __future__ import annotations

import os
import sys
import threading
from typing import List, Tuple

import numpy as np

_MIN_BYTES = 1 << 20
_MAX_BLOCKS = 4
_ALIGN = 2 << 20  # sizes rounded to 2 MiB: a loop's results of one shape share blocks

_lock = threading.Lock()
_blocks: List[np.ndarray] = []  # least recently handed out first
_free_refs = 0


def _cap_bytes() -> int:
    raw = os.environ.get("GPUCONV_HOST_CACHE_MB", "")
    try:
        mb = int(raw) if raw.strip() else 1024
    except ValueError:
        raise ValueError(f"GPUCONV_HOST_CACHE_MB={raw!r}: expected a whole number of MiB "
                         "(0 turns the cache off)") from None
    return max(mb, 0) << 20


def _refs(blocks: List[np.ndarray], i: int) -> int:
    # every count goes through here, so that the caller's frame adds nothing to it
    return sys.getrefcount(blocks[i])


def _calibrate() -> int:
    # the count of a block that nothing but the list refers to
    return _refs([np.empty(1, dtype=np.uint8)], 0)


def _enabled() -> bool:
    gil = getattr(sys, "_is_gil_enabled", None)
    return gil is None or gil()


def empty(shape: Tuple[int, ...], dtype: str) -> np.ndarray:
    """A C-contiguous array of ``shape`` and ``dtype`` for a call's result (contents undefined)."""
    global _free_refs
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    cap = _cap_bytes()
    if nbytes < _MIN_BYTES or nbytes > cap or not _enabled():
        return np.empty(shape, dtype=dt)
    size = (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
    with _lock:
        if not _free_refs:
            _free_refs = _calibrate()
        for i in range(len(_blocks)):
            if _blocks[i].nbytes == size and _refs(_blocks, i) == _free_refs:
                _blocks.append(_blocks.pop(i))
                return _blocks[-1][:nbytes].view(dt).reshape(shape)
        _blocks.append(np.empty(size, dtype=np.uint8))
        result = _blocks[-1][:nbytes].view(dt).reshape(shape)  # from here on the new block is held
        held = sum(b.nbytes for b in _blocks)
        # over the bounds: forget free blocks first, then the oldest (held ones live on with their arrays)
        while len(_blocks) > 1 and (len(_blocks) > _MAX_BLOCKS or held > cap):
            free = [j for j in range(len(_blocks) - 1) if _refs(_blocks, j) == _free_refs]
            j = free[0] if free else 0
            held -= _blocks[j].nbytes
            del _blocks[j]
        return result


def clear_host_cache() -> None:
    """Forgets every cached host output block (blocks still in use live on with their arrays)."""
    with _lock:
        _blocks.clear()


def host_cache_info() -> dict:
    """The cache's blocks: how many, their bytes, how many are free now, and the cap in bytes."""
    with _lock:
        free = sum(1 for i in range(len(_blocks)) if _free_refs and _refs(_blocks, i) == _free_refs)
        return {"blocks": len(_blocks), "bytes": sum(b.nbytes for b in _blocks), "free": free,
                "cap_bytes": _cap_bytes(), "max_blocks": _MAX_BLOCKS}
