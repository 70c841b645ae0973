"""The accumulator's state as plain arrays and a header of JSON values, without pickle: what
:class:`~fairmedfm_fast.torch.FairnessMetric` keeps in torchmetrics states, so that its checkpoints,
``merge_state`` and torchmetrics' own synchronisation carry every batch.

A *stream* of :class:`Segment` rebuilds an accumulator. Its first segment (``start``) holds how the
batches are read (the score type, the attributes, the kinds of their values, ...), the groups and
cells known and the rows of the table; each later segment the rows of one batch, the groups and cells
that batch found (group ids and cells are numbered as they are found, so a segment only appends) and
how batches are read when that changed. Streams of several ranks or metrics rebuild one accumulator
each, which :meth:`~fairmedfm_fast.FairnessAccumulator.merge` joins.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

#: The fields of how batches are read, by their name in a header.
READING = ("mode", "matrix", "column", "score_info", "logit_range", "weighted", "names", "numeric", "categories",
           "kinds", "labels_seen", "notes")


@dataclass
class Segment:
    """Rows, new groups and new cells of a stream of an accumulator's state (see the module notes)."""

    start: bool  # the first of a stream: its groups and cells are numbered from 0
    scores: np.ndarray  # float32 or float64
    keys: np.ndarray  # uint32: cell * 2 + label, in the stream's numbering of cells
    counts: np.ndarray | None  # int64 samples per row (None: one each)
    weights: np.ndarray | None  # float64 summed sample weights (None: unweighted)
    groups: list[list[str]]  # per attribute, the group names new in this segment, in the order of their ids
    cells: np.ndarray  # int64 (new cells, attributes): each new cell's group ids (-1: missing)
    reading: dict[str, Any] | None  # how batches are read (JSON values); None: as before

    def header(self) -> dict[str, Any]:
        """Everything but the arrays' contents, as JSON values."""
        return {"start": self.start, "rows": len(self.scores), "dtype": self.scores.dtype.str,
                "counts": self.counts is not None, "weights": self.weights is not None,
                "groups": self.groups, "cells": len(self.cells), "reading": self.reading}

    @classmethod
    def from_parts(cls, header: dict[str, Any], scores: np.ndarray, keys: np.ndarray, counts: np.ndarray,
                   weights: np.ndarray, cells: np.ndarray) -> Segment:
        """The segment of :meth:`header` and its arrays (``counts`` and ``weights`` read only where the
        header says the segment has them; ``cells`` flat)."""
        width = len(header["groups"])
        return cls(header["start"], scores.astype(np.dtype(header["dtype"]), copy=False),
                   keys.astype(np.uint32, copy=False), counts if header["counts"] else None,
                   weights if header["weights"] else None, header["groups"],
                   cells.reshape(header["cells"], width) if width else np.zeros((0, 0), np.int64),
                   header["reading"])


class SegmentState:
    """The methods of :class:`~fairmedfm_fast.FairnessAccumulator` that give its state as segments and
    take it back, and read another accumulator's groups and cells in its own numbering (for
    :meth:`~fairmedfm_fast.FairnessAccumulator.merge`)."""

    def mark(self) -> tuple:
        """How many groups (per attribute) and cells are known, and a key of how batches are read:
        where the next :meth:`segment` starts."""
        self._settle()
        return tuple(len(known) for known in self._groups), len(self._cells), self._reading_key()

    def _reading_key(self) -> tuple:
        """Changes whenever :meth:`reading` does (its lists are replaced, not changed in place, but for
        the labels and notes, which only grow)."""
        return (self._mode, self._matrix, self._column, id(self._score_info), self._logit_range, self._weighted,
                id(self._names), tuple(self._numeric), tuple(map(id, self._categories)), tuple(self._kinds),
                len(self._labels_seen), len(self._notes), self._dtype)

    def keep_journal(self) -> None:
        """Keep the rows of every batch added from now on, for the next :meth:`segment` since a mark."""
        self._settle()  # (a batch is then coded as it comes: its rows join the journal)
        self._journal = []

    def _journaled(self) -> tuple:
        """The rows of the journal (scores, keys, counts, weights), which it then forgets."""
        parts, self._journal = self._journal or [], [] if self._journal is not None else None
        if not parts:
            return np.zeros(0, self._dtype), np.zeros(0, np.uint32), None, None
        weights = None if parts[0][2] is None else np.concatenate([part[2] for part in parts])
        return (np.concatenate([part[0].astype(self._dtype, copy=False) for part in parts]),
                np.concatenate([part[1] for part in parts]), None, weights)

    def segment(self, since: tuple | None = None) -> Segment:
        """The whole state (``since=None``: the rows of the table, every group and cell, how batches are
        read), or the rows of the batches added since :meth:`keep_journal` or the last segment, the
        groups and cells found since ``since`` (a :meth:`mark`) and how batches are read where that
        changed (else None)."""
        if since is None:
            if self._journal:
                self._journal = []
            self._flush()
            rows = (self._scores, self._keys, self._counts, self._weights if self._weighted else None)
            groups, cells, key = (), 0, None
        else:
            rows = self._journaled()
            groups, cells, key = since
        width = len(self._names or ())
        if since is not None and cells == len(self._cells) and groups == tuple(map(len, self._groups)):
            new_groups, new_cells = [[] for _ in self._groups], np.zeros((0, width), np.int64)
        else:
            starts = [*groups, *[0] * (len(self._groups) - len(groups))]  # attributes known since: from 0
            new_groups = [list(islice(known, start, None)) for known, start in zip(self._groups, starts)]
            new_cells = np.array(list(islice(self._cells, cells, None)), np.int64).reshape(len(self._cells) - cells,
                                                                                         width)
        reading = self.reading() if key is None or key != self._reading_key() else None
        return Segment(since is None, *rows, new_groups, new_cells, reading)

    def reading(self) -> dict[str, Any]:
        """How batches are read, as JSON values."""
        out = {name: getattr(self, f"_{name}") for name in READING}
        out["logit_range"] = None if out["logit_range"] is None else list(out["logit_range"])
        out["labels_seen"] = [value.item() if isinstance(value, np.generic) else value for value in out["labels_seen"]]
        out["dtype"] = self._dtype.str
        return out

    def apply(self, segment: Segment) -> None:
        """Add a segment of a stream whose earlier segments were applied (a ``start`` one to an empty
        accumulator)."""
        if segment.reading is not None:
            self._read_as(segment.reading)
        for known, names in zip(self._groups, segment.groups):
            for name in names:
                known.setdefault(name, len(known))
        for cell in map(tuple, segment.cells.tolist()):
            self._cells.setdefault(cell, len(self._cells))
        self._lookups = {}
        if len(segment.scores):
            self._add_rows(segment.scores.astype(self._dtype, copy=False), segment.keys, segment.weights,
                           segment.counts)

    def _read_as(self, reading: dict[str, Any]) -> None:
        for name in READING:
            setattr(self, f"_{name}", reading[name])
        if self._logit_range is not None:
            self._logit_range = tuple(self._logit_range)
        if self._names is not None and len(self._groups) != len(self._names):
            self._groups = [{} for _ in self._names]
        dtype = np.dtype(reading["dtype"])
        if dtype != self._dtype:
            if self._n:
                self._promote(dtype)
            else:
                self._dtype = dtype

    # -- another state's groups and cells in this one's numbering (merge) ---------------------------

    def _merge_kinds(self, theirs: list[str | None]) -> None:
        mine = getattr(self, "_kinds", None) or [None] * len(self._names)
        for k, kind in enumerate(theirs):
            if kind is not None and mine[k] is not None and kind != mine[k]:
                raise ValueError(f"attribute {self._names[k]!r} holds {kind} values in the other accumulator but "
                                 f"{mine[k]} values in this one; pass its values as one kind to both")
            mine[k] = mine[k] or kind
        self._kinds = mine

    def _cells_of(self, other: SegmentState) -> np.ndarray:
        """``other``'s group ids and cells in this accumulator's numbering (its new groups and cells added
        here): other's cell i is this one's ``cell_map[i]``."""
        group_maps = []
        for k, known in enumerate(other._groups):
            mapping = np.empty(len(known) + 1, np.int64)
            mapping[-1] = -1
            for group, i in known.items():
                mapping[i] = self._groups[k].setdefault(group, len(self._groups[k]))
            group_maps.append(mapping)
            self._numeric[k] = self._numeric[k] or other._numeric[k]
            seen, theirs_k = self._categories[k], other._categories[k]
            self._categories[k] = (theirs_k if seen is True else seen if theirs_k is True or seen == theirs_k
                                   else None)
        cell_map = np.empty(len(other._cells), np.int64)
        for cell, i in other._cells.items():
            mapped = tuple(int(group_maps[k][g]) for k, g in enumerate(cell))
            cell_map[i] = self._cells.setdefault(mapped, len(self._cells))
        return cell_map
