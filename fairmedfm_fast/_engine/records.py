"""The records of the Dask sort: the engine's calls of ``kernels.records``.

A row travels as its score's order-preserving key, its label and its global group codes, packed in
one 64-bit word (float32 scores, label and codes within 31 bits) or in a key word and a payload
(:class:`Layout`). :func:`route` packs one partition's rows and splits them by score range,
:func:`unpack` turns one range's words back into the sorted kernel inputs, and :func:`key_scores`
reads scores back from keys. The kernels are imported on first use.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    """How a row travels in the sort (``kernels.records``): its score's key, label and codes in one
    64-bit word (float32 scores, codes within 31 bits), else the key in one word and the label and
    codes in a second (uint32 or uint64)."""

    score_dtype: np.dtype
    code_dtype: np.dtype
    code_shifts: tuple[int, ...]  # each grouping's field in the payload (bit 0 is the label)
    pay_bits: int
    pay_dtype: np.dtype | None  # the second word's type; None: one word per row

    @property
    def bytes_per_row(self) -> int:
        return 8 + (0 if self.pay_dtype is None else self.pay_dtype.itemsize)


def bits(values: np.ndarray) -> np.ndarray:
    """The float scores' bits as unsigned integers of their width (a view)."""
    return values.view(np.uint64 if values.dtype.itemsize == 8 else np.uint32)


def route(scores: np.ndarray, labels: np.ndarray, rows: list[np.ndarray], layout: Layout, bounds: np.ndarray,
          sizes: np.ndarray) -> tuple:
    """One partition's rows as records, split by score range: a tuple of one piece per range (the
    words, or the keys and payloads), then the partition's counts: per range and slot its negatives
    and positives (R, n_slots, 2), and per slot the lowest and highest score's key (n_slots, 2)."""
    from ..kernels import records

    n = len(scores)
    codes = np.empty((len(rows), n), layout.code_dtype)
    for k, row in enumerate(rows):
        codes[k] = row
    first = np.empty(len(bounds) + 2, np.int64)
    words = np.empty(n, np.uint64)
    pays = np.empty(n if layout.pay_dtype is not None else 0, layout.pay_dtype or np.uint64)
    n_slots = int(np.sum(sizes + 1))
    tally = np.empty((len(bounds) + 1, n_slots, 2), np.int64)
    ends = np.empty((n_slots, 2), np.uint64)
    # writable arrays (pandas may hand out read-only views): the compiled signatures are those of these
    records.route_records(bits(np.require(scores, requirements=["C", "W"])),
                          np.require(labels, requirements=["C", "W"]), codes,
                          np.array(layout.code_shifts, np.uint64), bounds, layout.pay_bits, np.empty(n, np.int32),
                          first, words, pays, sizes, tally, ends)
    at = first.tolist()
    if layout.pay_dtype is None:
        pieces = tuple(words[a:b] for a, b in zip(at[:-1], at[1:]))
    else:
        pieces = tuple((words[a:b], pays[a:b]) for a, b in zip(at[:-1], at[1:]))
    return (*pieces, (tally, ends))


def key_scores(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The scores (of ``dtype``) whose order-preserving keys are ``keys``."""
    from ..kernels import records

    return records.key_scores(keys, dtype)


def unpack(words: np.ndarray, pays: np.ndarray, layout: Layout, n_groupings: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, labels and codes (K, n) of the records ``words`` (and ``pays``), in their order."""
    from ..kernels import records

    n = len(words)
    scores = np.empty(n, layout.score_dtype)
    labels = np.empty(n, np.uint8)
    codes = np.empty((n_groupings, n), layout.code_dtype)
    records.unpack_records(words, pays, layout.pay_bits, np.array(layout.code_shifts, np.uint64), bits(scores),
                           labels, codes)
    return scores, labels, codes
