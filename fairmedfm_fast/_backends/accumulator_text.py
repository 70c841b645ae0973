"""The accumulator's keys (``cell * 2 + label``): made from batches of Arrow text by the tables of
the groups known (:class:`~fairmedfm_fast._inputs.known_text.KnownText`: no coding of a batch anew,
no combination arrays), and read back as labels and group codes for the report (:func:`split_rows`).

The tables are derived from the accumulator's groups and cells: they follow them as those grow
(batches of other forms, merges, segments) and are made again when those are replaced (a rejected
batch, a reset, an unpickled state); they are not pickled.
"""
from __future__ import annotations

import numpy as np

from .._engine import classification as _engine
from .._inputs import groups as _groups
from .._inputs import value_codes as _codes
from .._inputs.known_text import KnownText

#: Waiting batches are keyed by the tables when they hold this many samples on average; smaller ones
#: are joined and coded at once (a batch of 2,000 samples costs the tables as much in fixed costs as
#: in its values: 100 such batches took 10.4-11.0 ms keyed, 10.1-10.5 ms joined).
KEYED_FROM = 1 << 13


def _tables(owner) -> KnownText:
    """The :class:`KnownText` of :class:`~fairmedfm_fast.FairnessAccumulator` ``owner`` (made when
    missing or stale)."""
    tables = owner.__dict__.get("_text")
    if tables is None or not tables.follows(owner._groups, owner._cells):
        tables = owner._text = KnownText(owner._groups, owner._cells)
    return tables


def _arrow(columns: list) -> bool:
    return not any(isinstance(column, np.ndarray) for column in columns)


def batch_keys(owner, columns: list, labels: np.ndarray) -> np.ndarray | None:
    """The keys of one batch of ``owner`` whose attributes are all text, from its
    :func:`~fairmedfm_fast._backends.accumulator_batches.text_columns` and labels; None where a column
    is not Arrow text or the tables cannot serve."""
    return _tables(owner).keys(columns, labels) if _arrow(columns) else None


def settled_keys(owner, batches: list[tuple]) -> list[np.ndarray] | None:
    """The keys of ``owner``'s batches of text waiting uncoded (scores, labels, weights, columns),
    side by side on threads; None where the batches are small (:data:`KEYED_FROM`), a batch's columns
    are not Arrow text or the tables cannot serve."""
    if sum(len(batch[0]) for batch in batches) < KEYED_FROM * len(batches) or not all(_arrow(batch[3])
                                                                                      for batch in batches):
        return None
    return _tables(owner).keys_of([(batch[3], batch[1]) for batch in batches])


def split_rows(keys: np.ndarray, per_cell: list[_groups.Attribute]) -> tuple[np.ndarray, list[_groups.Attribute]]:
    """The table's labels, and the attributes over its rows, from the keys (``cell * 2 + label``) and
    the attributes over the cells: in one pass (``kernels.coding.split_keys``) where every attribute's
    codes are int8."""
    if len(keys) and per_cell and all(a.codes.dtype == np.int8 for a in per_cell):
        labels = np.empty(len(keys), np.uint8)
        codes = np.empty((len(per_cell), len(keys)), np.int8)
        _codes.split_keys(keys, np.stack([a.codes for a in per_cell]), labels, codes)
        return labels, [_groups.Attribute(a.name, row, a.groups) for a, row in zip(per_cell, codes)]
    labels = (keys & np.uint32(1)).astype(np.uint8)
    cells = (keys >> np.uint32(1)).astype(np.intp)
    return labels, [_groups.Attribute(a.name, a.codes[cells], a.groups) for a in per_cell]


def table_rows(owner, per_cell: list[_groups.Attribute], wanted, threshold, problem: str | None
               ) -> tuple[np.ndarray, np.ndarray, list[_groups.Attribute], tuple | None]:
    """The scores, labels and attributes over the rows of the table of
    :class:`~fairmedfm_fast.FairnessAccumulator` ``owner`` (flushed), and the engine's (arranged,
    groupings) of them or None. With a row per sample and no weights (and no ``problem`` that stops
    the report), one sort reads each row's codes by its cell and the engine measures the sorted rows
    (:func:`~fairmedfm_fast._engine.classification.keyed_and_measured`: no label and code rows are
    written first); otherwise, or where that sort does not apply, the keys are split
    (:func:`split_rows`) and the rows are left to be measured."""
    scores, keys = owner._scores, owner._keys
    measured = None
    if problem is None and per_cell and owner._counts is None and not owner._weighted:
        measured = _engine.keyed_and_measured(scores, keys, np.stack([a.codes for a in per_cell]),
                                              [a.n_groups for a in per_cell], wanted, threshold, curves=True)
    if measured is None:
        return scores, *split_rows(keys, per_cell), None
    arranged = measured[0]
    return (arranged.scores, arranged.labels,
            [_groups.Attribute(a.name, row, a.groups) for a, row in zip(per_cell, arranged.codes)], measured)
