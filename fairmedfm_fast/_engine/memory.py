"""Large working arrays kept for the next call on the same thread, within :func:`reusing`.

A call on 1M samples fills about 20 MB of fresh arrays (the sort's words and outputs, the BCE terms).
The C allocator maps such arrays anew and returns them to the system when freed, so every call
page-faults them again: on 2 cores that was a fifth of ``evaluate_tasks``' time for 20 models. Within
:func:`reusing`, :func:`lend` hands out an array the thread used before, once nothing refers to it
any more (no view of it is alive), so a report never shares memory with the next one.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

_local = threading.local()

#: Arrays kept per name and thread, at most (a call may hold several of one kind at once).
KEPT = 4


def _references_of_a_free_array() -> int:
    """What ``sys.getrefcount`` says of an array that only the kept list holds, read as :func:`lend`
    reads it (an element of a list, bound to a local name): measured, not assumed, since interpreters
    differ in the references they count (3 on CPython 3.11: the list, the name, the argument)."""
    kept = [np.empty(1, np.uint8)]
    array = kept[0]
    return sys.getrefcount(array)


_FREE = _references_of_a_free_array()


@contextmanager
def reusing(held: dict[str, list[np.ndarray]]) -> Iterator[None]:
    """Within the block, :func:`lend` on this thread reuses the arrays of ``held`` (name -> arrays),
    which outlives the block: a pool's worker passes the same dict for each task it runs."""
    before = getattr(_local, "held", None)
    _local.held = held
    try:
        yield
    finally:
        _local.held = before


def lend(name: str, n_bytes: int) -> np.ndarray | None:
    """A uint8 array of ``n_bytes`` (uninitialized) that no live array shares memory with, from the
    ones this thread keeps under ``name``; None outside :func:`reusing` (allocate as usual)."""
    held = getattr(_local, "held", None)
    if held is None:
        return None
    kept = held.setdefault(name, [])
    free = None
    for j in range(len(kept)):  # not enumerate: its tuple would hold one more reference
        array = kept[j]
        if sys.getrefcount(array) <= _FREE:  # a live view (or any other holder) adds one
            if array.nbytes >= n_bytes:
                return array[:n_bytes]
            free = j
    array = np.empty(n_bytes, np.uint8)
    if len(kept) < KEPT:
        kept.append(array)
    elif free is not None:  # too small for this call: the larger one takes its place
        kept[free] = array
    return array
