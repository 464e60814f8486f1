"""How world generation uses the process's memory.

A million-entry world allocates and frees about 2 GB of temporaries (the year's lines, the listing's
columns before they become Arrow arrays). By default numpy takes big arrays from glibc, which maps
them fresh and unmaps them on free, and Arrow takes its buffers from mimalloc, which hands freed
pages back to the kernel after 10 ms. Each new world then faults all of that memory in again, and on
a VM whose host reclaims freed memory that costs 0.7-4.9 s of kernel time per world: more than the
world's own computation (``bench/RESULTS.md``).

So, while a world is made (``world_memory()``):

* numpy does not advise transparent huge pages (faulting a 2 MB page in is dearer than 512 small
  ones on such a VM, and a world does not live long enough to gain from them);
* Arrow allocates from the system pool (glibc's malloc) instead of mimalloc;
* glibc serves big blocks from its heap instead of fresh mappings;

and, from the first world of a process on, glibc keeps up to 2 GiB of freed heap instead of handing
it back at once. A process that makes worlds one after another (a sweep worker meeting each new
seed) reuses the memory of the last one and faults almost nothing in: the kernel time of a cold
1e6-entry world falls from about 1 s to under 0.15 s. The cost is that the process's resident size
stays near its peak; ``release_memory()`` hands the free part back. Everything outside
``world_memory()`` is restored as it was, nothing a world contains depends on any of this, and on a
platform without glibc only the numpy and Arrow parts apply.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import sys
import threading

import numpy as np
import pyarrow as pa

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_MAX = -4
_GLIBC_MMAP_MAX = 65_536  # glibc's default M_MMAP_MAX, put back after each world
KEPT_FREE_BYTES = 2**31 - 1  # the most freed heap glibc keeps (mallopt takes an int)

_lock = threading.Lock()
_depth = 0  # worlds being made at once, by any thread; the settings change on the first, back on the last
_saved: dict = {}


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The process's C library if it is glibc (the only one whose ``mallopt`` is used here)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    return libc


def _numpy_hugepage_setter():
    return getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)


def _enter() -> None:
    global _depth
    with _lock:
        _depth += 1
        if _depth > 1:
            return
        setter = _numpy_hugepage_setter()
        _saved["hugepage"] = setter(False) if setter is not None else None
        _saved["pool"] = pa.default_memory_pool()
        pa.set_memory_pool(pa.system_memory_pool())
        libc = _glibc()
        if libc is not None:
            libc.mallopt(_M_TRIM_THRESHOLD, KEPT_FREE_BYTES)
            libc.mallopt(_M_MMAP_MAX, 0)


def _exit() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth > 0:
            return
        libc = _glibc()
        if libc is not None:
            libc.mallopt(_M_MMAP_MAX, _GLIBC_MMAP_MAX)
        pa.set_memory_pool(_saved.pop("pool"))
        setter, before = _numpy_hugepage_setter(), _saved.pop("hugepage")
        if setter is not None and before is not None:
            setter(before)


@contextlib.contextmanager
def world_memory():
    """The memory settings of world generation (see the module's text), put back afterwards, also
    when generation fails; safe to nest and to use from several threads at once."""
    _enter()
    try:
        yield
    finally:
        _exit()


def release_memory() -> None:
    """Hand the memory that world generation keeps for reuse back to the operating system: glibc's
    free heap and the free memory of Arrow's pools. The next world faults its memory in afresh."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
    for pool in {pa.default_memory_pool().backend_name: pa.default_memory_pool(),
                 "system": pa.system_memory_pool()}.values():
        pool.release_unused()
