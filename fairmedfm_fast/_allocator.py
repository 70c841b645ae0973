"""The C allocator's policy on Dask workers while a call of ours runs there.

``distributed`` starts each worker process of a nanny (``LocalCluster`` with processes, ``dask
worker``) with ``MALLOC_TRIM_THRESHOLD_=65536`` in its environment (the config key
``distributed.nanny.pre-spawn-environ``), so that glibc hands freed memory back to the system at once
and the worker's memory reads true. Setting that variable also switches off glibc's sliding mmap
threshold: every array above 128 KiB is then a fresh ``mmap``, and each of its pages faults and is
zeroed on first touch, for every temporary array of every task. On the passes of
:func:`fairmedfm_fast.dask.evaluate` (reading Parquet into pandas, packing, sorting and summing
ranges of millions of rows) that made the workers' tasks 1.5 to 3 times slower than the same code
in a plain process (docs/dask.md has the figures).

:func:`roomy` lifts that policy on every worker for the length of one call: arrays up to 32 MiB
come from the heap, and freed memory stays there for the next array; when the call ends the worker's
own thresholds are set back (those of its environment) and ``malloc_trim(0)`` returns the freed
memory, so between calls the workers hold what they held before. Only workers whose environment sets
``MALLOC_TRIM_THRESHOLD_`` and whose C library is glibc are touched (others have the sliding
threshold already, or another allocator). Calls that overlap on one worker (two clients) count
themselves in and out: the last one out restores. ``FAIRMEDFM_FAST_WORKER_MALLOC=keep`` in the
client's environment leaves the workers' allocators alone.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc's largest mmap threshold on 64-bit machines (DEFAULT_MMAP_THRESHOLD_MAX), and its default.
_MMAP_MAX = 32 * 1024 * 1024
_MMAP_DEFAULT = 128 * 1024
#: Trim threshold during a call (mallopt takes a C int): freed memory at the top of the heap, up to
#: this much, stays for the next array.
_TRIM_DURING = 1 << 30

_lock = threading.Lock()
_active = 0


@functools.cache
def _glibc() -> Any | None:
    """glibc's ``mallopt`` and ``malloc_trim``, or None (another platform or C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
            return None
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]  # a value beyond an int raises, not wraps
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except OSError:  # pragma: no cover - no C library to load
        return None


def _environment_threshold(name: str, default: int) -> int:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


def hold_freed(entering: bool) -> bool:
    """On this process: ``entering``, lift a ``MALLOC_TRIM_THRESHOLD_`` policy (see the module); not
    ``entering``, restore it and return the freed memory once no call holds it. True when something
    was changed (glibc, and the variable set)."""
    global _active
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    libc = _glibc()
    if libc is None:
        return False
    with _lock:
        if entering:
            _active += 1
            if _active == 1:
                libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX)
                libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_DURING)
            return True
        if _active == 0:  # not ours to restore
            return False
        _active -= 1
        if _active == 0:
            libc.mallopt(_M_TRIM_THRESHOLD, _environment_threshold("MALLOC_TRIM_THRESHOLD_", 128 * 1024))
            libc.mallopt(_M_MMAP_THRESHOLD, _environment_threshold("MALLOC_MMAP_THRESHOLD_", _MMAP_DEFAULT))
            libc.malloc_trim(0)
        return True


def _on_every_worker(client: Any, entering: bool) -> dict[str, bool]:
    """:func:`hold_freed` on each worker of ``client``, as a task pinned to it (``client.run`` would log
    a line at INFO on every worker for each call)."""
    addresses = list(client.scheduler_info()["workers"])
    futures = [client.submit(hold_freed, entering, workers=[address], allow_other_workers=False, pure=False)
               for address in addresses]
    return dict(zip(addresses, client.gather(futures)))


@contextlib.contextmanager
def roomy(client: Any | None) -> Iterator[None]:
    """Within the block, every worker of ``client`` (a ``distributed.Client``; None: nothing to do)
    keeps freed memory for its next arrays, as :func:`hold_freed` says."""
    if client is None or os.environ.get("FAIRMEDFM_FAST_WORKER_MALLOC", "").lower() == "keep":
        yield
        return
    _on_every_worker(client, True)
    try:
        yield
    finally:
        # best effort: a cluster lost during the call must not hide the call's own error
        with contextlib.suppress(Exception):
            _on_every_worker(client, False)
