"""Keys of batches of Arrow text from hash tables of the group names known (:class:`KnownText`),
for :class:`~fairmedfm_fast.FairnessAccumulator`: each batch is read in one pass per attribute,
without coding it anew.

Each text attribute has a hash table of the group names met so far (``kernels.coding.known_text``):
a batch's Arrow column adds each sample's group id, times the attribute's place value, to the
batch's combination of groups; ``kernels.coding.cell_keys`` turns the combinations into the
accumulator's keys (``cell * 2 + label``) by a table of each combination's cell. A name or a
combination met for the first time stops the pass there; it is registered (in the accumulator's
groups and cells, numbered as its other paths number them) and the pass goes on.
"""
from __future__ import annotations

from itertools import islice

import numpy as np

from .._util.threads import on_threads, resolve_n_jobs
from . import value_codes as _codes

#: The combinations' table has at most this many entries (4 MiB); beyond, batches take the usual path.
MOST_COMBINATIONS = 1 << 20
#: Batches with this many samples in all are keyed side by side on threads (:meth:`KnownText.keys_of`).
THREADS_FROM = 1 << 16


def _empty_table(capacity: int) -> tuple[np.ndarray, ...]:
    """The arrays of a ``kernels.coding.known_text`` table of ``capacity`` empty slots."""
    return (np.full(capacity, -1, np.int32), np.zeros(capacity, np.uint64), np.full(capacity, -1, np.int64),
            np.zeros(capacity, np.int64))


class KnownText:
    """Tables of an accumulator's groups and cells for :meth:`keys` (see the module notes)."""

    def __init__(self, groups: list[dict[str, int]], cells: dict[tuple[int, ...], int]):
        self.groups, self.cells = groups, cells  # the accumulator's, followed as they grow
        width = len(groups)
        self.slots = [_empty_table(16) for _ in range(width)]  # per attribute: group, word, length, at
        self.pools = [np.zeros(64, np.uint8) for _ in range(width)]
        self.used = [0] * width  # bytes of each pool in use
        self.named = [0] * width  # each attribute's groups in its table
        self.bounds = [1] * width  # each attribute's place values: groups below these
        self.cell_of = np.full(1, -1, np.int32)
        self.n_cells = 0  # cells in cell_of
        self.usable = True

    def follows(self, groups: list[dict[str, int]], cells: dict) -> bool:
        """Whether these tables are of these groups and cells (the same objects)."""
        return groups is self.groups and cells is self.cells

    def strides(self) -> list[int]:
        return [int(np.prod(self.bounds[:k], dtype=np.int64)) for k in range(len(self.bounds))]

    def _sync(self) -> bool:
        """Take in the groups and cells added since the last call; False when the tables cannot hold
        them (a group name that is not text, or too many combinations)."""
        grown = False
        for k, known in enumerate(self.groups):
            if len(known) == self.named[k]:
                continue
            while len(known) > self.bounds[k]:
                self.bounds[k] *= 2
                grown = True
            if 2 * len(known) > len(self.slots[k][0]):  # at most half full
                self.slots[k] = _empty_table(1 << (4 * len(known) - 1).bit_length())  # (a power of two)
                self.used[k] = self.named[k] = 0
            for name in islice(known, self.named[k], None):
                if not isinstance(name, str):
                    return False
                self._add_name(k, name, self.named[k])
                self.named[k] += 1
        if grown:
            if np.prod(self.bounds, dtype=np.float64) > MOST_COMBINATIONS:
                return False
            self.cell_of = np.full(int(np.prod(self.bounds, dtype=np.int64)), -1, np.int32)
            self.n_cells = 0
        if len(self.cells) != self.n_cells:
            strides = np.array(self.strides(), np.int64)
            for ids in islice(self.cells, self.n_cells, None):
                if min(ids, default=0) >= 0:  # (cells with a missing value: no text batch has them)
                    self.cell_of[int(np.dot(ids, strides))] = self.cells[ids]
            self.n_cells = len(self.cells)
        return True

    def _add_name(self, k: int, name: str, group: int) -> None:
        value = np.frombuffer(name.encode(), np.uint8)
        used = self.used[k]
        if used + len(value) > len(self.pools[k]):
            pool = np.zeros(2 * (used + len(value)), np.uint8)
            pool[:used] = self.pools[k][:used]
            self.pools[k] = pool
        self.pools[k][used:used + len(value)] = value
        from ..kernels import coding

        coding.add_text(self.pools[k], used, len(value), group, *self.slots[k])
        self.used[k] = used + len(value)

    def keys(self, columns: list, labels: np.ndarray) -> np.ndarray | None:
        """The keys (uint32) of a batch's Arrow string columns (one per attribute, no missing value)
        and its 0/1 labels (uint8), registering the new group names and cells; None where the
        tables cannot serve (they then serve no later batch either)."""
        from ..kernels import coding

        n = len(labels)
        buffers = [_codes.text_buffers(array) for array in columns]
        while self.usable:
            if not self._sync():
                self.usable = False
                break
            combined = np.zeros(n, np.int32)
            for k, ((offsets, data), stride) in enumerate(zip(buffers, self.strides())):
                at = 0
                while (at := coding.known_text(offsets, data, at, stride, *self.slots[k], self.pools[k],
                                               combined)) < n:
                    name = data[offsets[at]:offsets[at + 1]].tobytes().decode()
                    known = self.groups[k]
                    known.setdefault(name, len(known))
                    if len(known) > self.bounds[k] or 2 * len(known) > len(self.slots[k][0]):
                        break  # the tables grow: the batch again, from its first column
                    self._add_name(k, name, known[name])
                    self.named[k] += 1
                if at < n:
                    break
            else:
                return self._cell_keys(combined, labels)
        return None

    def keys_of(self, batches: list[tuple[list, np.ndarray]]) -> list[np.ndarray] | None:
        """:meth:`keys` of several batches (columns, labels), side by side on threads where they are
        large: the tables are only read there; a batch that meets a group name or a combination not
        known yet is done after the others, on this thread. None where the tables cannot serve."""
        from ..kernels import coding

        if not (self.usable and self._sync()):
            self.usable = False
            return None
        slots, pools, cell_of, strides = list(self.slots), list(self.pools), self.cell_of, self.strides()

        def known(columns: list, labels: np.ndarray) -> np.ndarray | None:
            n = len(labels)
            combined = np.zeros(n, np.int32)
            for k, (array, stride) in enumerate(zip(columns, strides)):
                offsets, data = _codes.text_buffers(array)
                if coding.known_text(offsets, data, 0, stride, *slots[k], pools[k], combined) < n:
                    return None
            keys = np.empty(n, np.uint32)
            return keys if coding.cell_keys(combined, cell_of, labels, 0, keys) == n else None

        n_threads = resolve_n_jobs() if sum(len(labels) for _, labels in batches) >= THREADS_FROM else 1
        done = on_threads([lambda batch=batch: known(*batch) for batch in batches], n_threads)
        for j, keys in enumerate(done):
            if keys is None and (keys := self.keys(*batches[j])) is None:
                return None
            done[j] = keys
        return done

    def _cell_keys(self, combined: np.ndarray, labels: np.ndarray) -> np.ndarray:
        from ..kernels import coding

        keys = np.empty(len(combined), np.uint32)
        strides = self.strides()
        at = 0
        while (at := coding.cell_keys(combined, self.cell_of, labels, at, keys)) < len(combined):
            rest = combined[at:]
            for value in np.unique(rest[self.cell_of[rest] < 0]).tolist():
                ids = tuple((value // stride) % bound for stride, bound in zip(strides, self.bounds))
                self.cell_of[value] = self.cells.setdefault(ids, len(self.cells))
            self.n_cells = len(self.cells)
        return keys
