"""The one sort of the scores: a radix sort on the scores' full bits (``kernels.sorting``) that carries each
sample's label and group codes with its score where they fit beside its key, and the narrow type of
the group codes. ``classification.arrange`` runs it once for every attribute.
"""
from __future__ import annotations

import numpy as np

from .memory import lend

_CODE_TYPES = ((127, np.dtype(np.int8)), (32767, np.dtype(np.int16)), (2147483647, np.dtype(np.int32)))


def code_dtype(largest: int) -> np.dtype:
    for top, dtype in _CODE_TYPES:  # np.iinfo(dtype).max, which costs a microsecond a call
        if largest < top:
            return dtype
    return np.dtype(np.intp)


#: Inputs below this many samples sort with NumPy (and gather): cheaper to start. At most 1 << 16, the
#: positions :func:`_sort_packed` packs.
RADIX_FROM = 1 << 14


#: Inputs from this many samples run the sort, and the calibration pass, beside other work.
THREADED_FROM = 1 << 18


def is_threaded(n: int) -> bool:
    return n_threads(n) > 1


def n_threads(n: int) -> int:
    """Threads for work on ``n`` samples: 1 below :data:`THREADED_FROM`, else ``resolve_n_jobs()``."""
    if n < THREADED_FROM:
        return 1
    from .._util.threads import resolve_n_jobs

    return resolve_n_jobs()


def key_bits(scores: np.ndarray) -> np.ndarray:
    return scores.view(np.uint64 if scores.dtype.itemsize == 8 else np.uint32)


def _sort_packed(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`sort_scores` of up to 65,536 non-negative float scores by one ``np.sort`` of 64-bit words
    (SIMD, where ``argsort`` compares through the indices): each word holds a score's bits above the
    lowest 16 (all 32 bits of a float32) and, in its lowest 16 bits, the score's position. Scores
    that agree in the bits kept come out in position order, which is their stable order exactly
    when the sorted scores do not decrease there. None where they do, and for negative scores and
    -0.0 (the sign bit): ``argsort`` sorts those."""
    if scores.dtype == np.float64:
        keys = scores.view(np.int64) & _HIGH_BITS
    elif scores.dtype == np.float32:
        keys = scores.view(np.int32).astype(np.int64) << 16
    else:
        return None
    n = len(keys)
    keys |= _POSITIONS[:n]
    keys.sort()
    if n == 0 or keys[0] < 0:
        return None
    order = keys & 0xFFFF
    ordered = scores.take(order)
    if np.count_nonzero(ordered[1:] < ordered[:-1]):  # count_nonzero: a third of .any()'s cost here
        return None
    return order, ordered


_HIGH_BITS = np.int64(-1 << 16)
#: 0, 1, ..., RADIX_FROM - 1: the positions :func:`_sort_packed` packs (read-only, shared).
_POSITIONS = np.arange(RADIX_FROM, dtype=np.int64)
_POSITIONS.flags.writeable = False


def sort_scores(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ascending order of the scores (that of ``np.argsort(kind="stable")``), and the sorted scores.

    Large inputs take a radix sort on the scores' full bits (``kernels.sorting.sort_order``, linear
    time, negative scores included); -0.0 comes out as 0.0. Small ones take :func:`_sort_packed`
    where it applies (a 1,000-sample ``argsort`` and gather cost 1.7 times as much), else ``argsort``.
    """
    if len(scores) < RADIX_FROM or len(scores) >= 1 << 32:
        packed = _sort_packed(scores) if len(scores) < RADIX_FROM else None
        if packed is not None:
            return packed
        order = np.argsort(scores, kind="stable")
        return order, scores[order]
    from ..kernels import sorting

    scores = np.ascontiguousarray(scores)
    order, sorted_bits = sorting.sort_order(key_bits(scores), n_threads(len(scores)))
    return order, sorted_bits.view(scores.dtype)


def sort_carrying(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, labels and int8 codes in ascending score order, by one radix sort that moves each
    sample's label and codes with its score (``kernels.sorting.sort_carrying``)."""
    from ..kernels import sorting

    n = len(scores)
    shape = (len(code_rows), n)
    codes = _stacked(code_rows, shape)
    if codes is None:
        held = lend("codes", shape[0] * n)  # within memory.reusing: kept from an earlier call
        codes = np.empty(shape, np.int8) if held is None else held.view(np.int8).reshape(shape)
        for k, row in enumerate(code_rows):
            codes[k] = row
    scores = np.ascontiguousarray(scores)
    sorted_bits, sorted_labels, sorted_codes = sorting.sort_carrying(
        key_bits(scores), labels, codes, n_threads(n), lend("sort", sorting.MEMORY_BYTES * n))
    return sorted_bits.view(scores.dtype), sorted_labels, sorted_codes


def sort_keyed(scores: np.ndarray, keys: np.ndarray, cell_codes: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`sort_carrying` of samples given as keys ``cell * 2 + label`` (uint32, every cell a column
    of ``cell_codes``) and the int8 codes of each cell (shape (K, cells)), as the accumulator keeps
    them: the sort looks each sample's codes up by its cell, so no label and code rows are written
    first (``kernels.sorting.sort_keyed``). None where :func:`carries` would not carry them (size,
    types, more than 7 groupings) or a 64-bit word cannot hold a sample's label and codes."""
    n = len(scores)
    if not (_fits_words(n, cell_codes.dtype, len(cell_codes)) and keys.dtype == np.uint32 and len(keys) == n):
        return None
    from ..kernels import sorting

    scores = np.ascontiguousarray(scores)
    done = sorting.sort_keyed(key_bits(scores), np.ascontiguousarray(keys), np.ascontiguousarray(cell_codes),
                              n_threads(n), lend("sort", sorting.MEMORY_BYTES * n))
    if done is None:
        return None
    sorted_bits, sorted_labels, sorted_codes = done
    return sorted_bits.view(scores.dtype), sorted_labels, sorted_codes


def _stacked(code_rows: list[np.ndarray], shape: tuple[int, int]) -> np.ndarray | None:
    """The (K, n) int8 array whose rows, in order, are ``code_rows`` (as the accumulator's report hands
    them over: no copy to make), or None."""
    base = code_rows[0].base if code_rows else None
    if not (isinstance(base, np.ndarray) and base.dtype == np.int8 and base.shape == shape
            and base.flags.c_contiguous):
        return None
    start = base.__array_interface__["data"][0]
    for k, row in enumerate(code_rows):
        if row.base is not base or row.__array_interface__["data"][0] != start + k * shape[1]:
            return None
    return base


def carries(n: int, labels: np.ndarray, code_type: np.dtype, n_rows: int, weights) -> bool:
    """Whether the labels and codes fit the carrying sort's 64-bit payload."""
    return weights is None and labels.dtype == np.uint8 and _fits_words(n, code_type, n_rows)


def _fits_words(n: int, code_type: np.dtype, n_rows: int) -> bool:
    """Whether ``n`` samples with ``n_rows`` groupings of ``code_type`` codes are for the carrying sort
    (:func:`carries`, :func:`sort_keyed`): a radix sort's size, and a label and codes that fit a payload."""
    return RADIX_FROM <= n < 1 << 32 and code_type == np.int8 and n_rows <= 7
