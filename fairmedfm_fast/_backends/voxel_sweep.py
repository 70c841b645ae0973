"""The bucket sweep of :func:`fairmedfm_fast.evaluate_voxels`: the group layout of the images (which
cell of the attributes' groups each image is), the sweep of the staged records in ascending score order
over windows of buckets (on threads, each range from the counts below it), and the report from its sums.
``voxels.py`` stages the records and plans the windows; the kernel calls are ``_engine/voxels.py``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import one_grouping as _one_grouping
from .._engine import voxels as voxel_passes
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report.assembly import asked, assemble
from .._report.frame import FairnessReport
from .._util.threads import executor
from .assess import attribute_result

#: No score key seen yet (the smallest key of an empty cell).
NO_KEY = np.iinfo(np.int64).max
#: Windows from this many records are swept on several threads.
PARALLEL_SWEEP = 1 << 20


class Layout:
    """Groupings, their slots, and the cells (distinct code combinations) of the images."""

    def __init__(self, sensitive_features: Any, bins: Any, intersectional: bool):
        self.n_images = _rows(sensitive_features)
        attributes = _groups.encode_attributes(sensitive_features, self.n_images, bins, intersectional)
        self.attributes = attributes
        rows = [attribute.codes for attribute in attributes]
        sizes = [attribute.n_groups for attribute in attributes]
        complete = next((k for k, a in enumerate(attributes) if a.codes.min(initial=0) >= 0), None)
        if complete is None:  # "all voxels" needs a grouping of its own, as in evaluate
            rows.append(np.zeros(self.n_images, np.intp))
            sizes.append(1)
            complete = len(rows) - 1
        self.complete = complete
        self.sizes = np.asarray(sizes, np.int64)
        codes = np.stack(rows) if self.n_images else np.zeros((len(rows), 0), np.intp)
        cell_codes, self.image_cells = np.unique(codes, axis=1, return_inverse=True)
        self.image_cells = self.image_cells.ravel().astype(np.int64)
        self.n_cells = max(cell_codes.shape[1], 1)
        self.payload_bits = max(1, int(2 * self.n_cells - 1).bit_length())
        starts = np.concatenate(([0], np.cumsum(self.sizes + 1)))
        self.n_slots = int(starts[-1])
        k_count = len(sizes)
        self.grouping_slots = np.stack([starts[:-1], starts[1:], starts[1:] - 1], axis=1).astype(np.int64)
        self.cell_slots = np.full((self.n_cells, 2 * k_count), -1, np.int64)
        for k in range(k_count):
            present = cell_codes[k] >= 0
            self.cell_slots[: cell_codes.shape[1], 2 * k] = np.where(present, starts[k] + cell_codes[k], -1)
            self.cell_slots[: cell_codes.shape[1], 2 * k + 1] = np.where(present, starts[k + 1] - 1, -1)

    def slot_matrix(self) -> np.ndarray:
        """(n_cells, n_slots) booleans: which slots each cell belongs to."""
        member = np.zeros((self.n_cells, self.n_slots), bool)
        for j in range(self.cell_slots.shape[1]):
            rows = np.flatnonzero(self.cell_slots[:, j] >= 0)
            member[rows, self.cell_slots[rows, j]] = True
        return member


def _rows(sensitive_features: Any) -> int:
    """Number of rows (images) of the attributes."""
    for attribute in ("shape", "num_rows", "height"):
        value = getattr(sensitive_features, attribute, None)
        if isinstance(value, tuple) and value:
            return int(value[0])
        if isinstance(value, (int, np.integer)):
            return int(value)
    if isinstance(sensitive_features, Mapping):
        if not sensitive_features:
            raise ValueError("sensitive_features has no attributes: pass at least one column of group values")
        return len(next(iter(sensitive_features.values())))
    try:
        return len(sensitive_features)
    except TypeError:
        raise ValueError("sensitive_features must hold one row of attributes per image (a DataFrame, a dict of "
                         f"columns or a list), got {type(sensitive_features).__name__}") from None


class Sweep:
    """The state carried from bucket to bucket, and the report at the end.

    The kernel works on *canonical* slots: slots with the same cells whose groupings have the same
    samples (for example the "all" slot of every grouping without missing values) share one state,
    copied to the others at the end."""

    def __init__(self, layout: Layout, mode: int, totals: np.ndarray, threshold: float | None,
                 optional: tuple = ((), ())):
        self.layout, self.mode, self.threshold = layout, mode, threshold
        self.metrics, self.term_sums = optional
        self.totals = totals
        member = layout.slot_matrix()
        cell_totals = np.zeros((layout.n_cells, 2), np.int64)
        np.add.at(cell_totals, layout.image_cells, totals[:, :2])
        self.count = cell_totals[:, 0] @ member.astype(np.int64)
        self.positives = cell_totals[:, 1] @ member.astype(np.int64)
        smallest = np.full(layout.n_cells, NO_KEY)
        largest = np.full(layout.n_cells, -1)
        np.minimum.at(smallest, layout.image_cells, totals[:, 2])
        np.maximum.at(largest, layout.image_cells, totals[:, 3])
        low = np.full(layout.n_slots, np.nan)
        high = np.full(layout.n_slots, np.nan)
        for s in range(layout.n_slots):
            cells = member[:, s] & (largest >= 0)
            if cells.any():
                low[s] = self.value_of(smallest[cells].min())
                high[s] = self.value_of(largest[cells].max())
        self.edges = _one_grouping.ece_edges(low, high)
        self._canonical(member)
        k_count = len(layout.sizes)
        self.fixed = np.array([0.5] if threshold is None else sorted({0.5, threshold}))
        n_slots = layout.n_slots
        self.state = np.zeros((n_slots, 5), np.int64)
        self.at_or_below = np.zeros((len(self.fixed), n_slots, 2), np.int64)
        self.slot_sums = np.zeros((4, n_slots))
        self.snap_counts = np.zeros((len(self.event_value), 2), np.int64)
        self.snap_sums = np.zeros((len(self.event_value), 2))
        self.cursor = np.zeros(2, np.int64)
        overall = layout.grouping_slots[:, 2]
        self.best = np.zeros((k_count, 4))
        self.best[:, 0] = -np.inf
        self.best[:, 1] = np.nan
        self.best[:, 2] = self.positives[overall]
        self.best[:, 3] = self.count[overall] - self.positives[overall]

    def _canonical(self, member: np.ndarray) -> None:
        """The kernel's layout: canonical slots of each cell and grouping, cells of each slot, events."""
        layout = self.layout
        first_of: dict[bytes, int] = {}
        canon = np.empty(layout.n_slots, np.int64)
        for first, last, overall in layout.grouping_slots.tolist():
            for s in range(first, last):
                key = member[:, s].tobytes() + member[:, overall].tobytes()
                canon[s] = first_of.setdefault(key, s)
        self.canon = canon
        self.all_slot = int(canon[layout.grouping_slots[layout.complete, 2]])  # counted per run, not per cell
        rows = [list(dict.fromkeys(canon[s] for s in row if s >= 0 and canon[s] != self.all_slot))
                for row in layout.cell_slots.tolist()]
        self.cell_slots = np.full((layout.n_cells, max(map(len, rows), default=0)), -1, np.int64)
        for cell, row in enumerate(rows):
            self.cell_slots[cell, :len(row)] = row
        self.group_overall = canon[layout.grouping_slots[:, 2]]
        groups = [sorted(set(canon[first:last].tolist())) for first, last, _ in layout.grouping_slots.tolist()]
        self.group_slots = (np.concatenate(([0], np.cumsum([len(g) for g in groups]))).astype(np.int64),
                            np.array([s for g in groups for s in g], np.int64))
        spread = np.unique(self.cell_slots[self.cell_slots >= 0])
        cells = [np.flatnonzero(member[:, s]) for s in spread]
        self.slot_cells = (spread.astype(np.int64),
                           np.concatenate(([0], np.cumsum([len(c) for c in cells]))).astype(np.int64),
                           np.concatenate(cells + [np.zeros(0, np.intp)]).astype(np.int64))
        unique = np.unique(canon)
        unique = unique[np.isfinite(self.edges[unique, 0])]
        n_edges = self.edges.shape[1]
        value = self.edges[unique].ravel()
        order = np.argsort(value, kind="stable")
        self.event_value = value[order]
        self.event_slot = np.repeat(unique, n_edges)[order]
        self.event_edge = np.tile(np.arange(n_edges), len(unique))[order]

    def value_of(self, key: int) -> float:
        if self.mode == voxel_passes.UINT8:
            return key / 255.0
        if self.mode == voxel_passes.FLOAT32:
            return float(np.array([key], np.uint32).view(np.float32)[0])
        return float(np.array([key], np.uint64).view(np.float64)[0])

    def _arguments(self, target: Sweep | _Part) -> tuple:
        return (self.mode, voxel_passes.LOW_BITS[self.mode], self.layout.payload_bits, self.cell_slots, self.all_slot,
                self.group_overall, self.group_slots, self.slot_cells, self.event_value, self.event_slot, self.fixed,
                target.state, target.at_or_below, target.slot_sums, target.snap_counts, target.snap_sums,
                target.cursor, target.best)

    def window(self, records: np.ndarray | None, starts: list[np.ndarray], bucket_lo: int, n_jobs: int = 1) -> None:
        """Sweep one window's buckets, after every earlier window: chunk ``c`` of ``records`` holds
        bucket ``bucket_lo + b`` at ``records[starts[c][b]:starts[c][b + 1]]``.

        With ``n_jobs > 1`` the buckets are cut into ranges of about equal size, swept on as many
        threads, each from the counts below its range (a counting pass on that thread), and their
        states combined."""
        if not starts:
            return
        starts = np.stack(starts)
        layout = self.layout
        ranges = _split(starts, n_jobs if len(records) >= PARALLEL_SWEEP else 1)
        if len(ranges) == 1:
            voxel_passes.sweep_buckets(records, starts, 0, starts.shape[1] - 1, bucket_lo, *self._arguments(self))
            return
        member = layout.slot_matrix().astype(np.int64)
        parts = [_Part(self, self.state[:, :2]) for _ in ranges]

        def sweep(first: int, last: int, part: _Part) -> None:
            if first:  # the counts below the range: the window's earlier buckets, counted on this thread
                cells = voxel_passes.cell_counts(records, starts, 0, first, layout.payload_bits, layout.n_cells)
                part.state[:, :2] += np.stack([cells[:, 1] @ member, cells[:, 0] @ member], axis=1)
            voxel_passes.sweep_buckets(records, starts, first, last, bucket_lo, *self._arguments(part))

        pool = executor(len(ranges))
        for job in [pool.submit(sweep, first, last, part) for (first, last), part in zip(ranges, parts)]:
            job.result()
        self._combine(parts)

    def _combine(self, parts: list[_Part]) -> None:
        """Fold the states of consecutive bucket ranges into the carried state."""
        passed, events = int(self.cursor[1]), int(self.cursor[0])
        for part in parts:
            self.state[:, 2] += part.state[:, 2]
            for k, (first, last, _) in enumerate(self.layout.grouping_slots.tolist()):
                if part.best[k, 0] > self.best[k, 0]:  # strictly better: the earliest range wins ties
                    self.best[k, :2] = part.best[k, :2]
                    self.state[first:last, 3:] = part.state[first:last, 3:]
            reached = int(part.cursor[1])
            if reached > passed:  # the first range past a fixed threshold holds its counts
                self.at_or_below[passed:reached] = part.at_or_below[passed:reached]
                passed = reached
            reached = int(part.cursor[0])
            if reached > events:  # ECE edges passed in this range: its score sums start at the earlier ranges'
                slots = self.event_slot[events:reached]
                self.snap_counts[events:reached] = part.snap_counts[events:reached]
                self.snap_sums[events:reached] = part.snap_sums[events:reached] + self.slot_sums[:2, slots].T
                events = reached
            self.slot_sums = _add_compensated(self.slot_sums, part.slot_sums)
        self.cursor[:] = (events, passed)
        self.state[:, :2] = parts[-1].state[:, :2]

    def _bins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per slot and ECE bin: samples, positives and the score sum, from the snapshots at its edges."""
        n_slots, n_edges = self.edges.shape
        below = np.zeros((n_slots, n_edges, 2), np.int64)  # at or below each edge; never passed: all
        below[:] = self.state[:, None, :2]
        score = np.zeros((n_slots, n_edges, 2))
        score[:] = self.slot_sums[:2].T[:, None, :]
        passed = int(self.cursor[0])
        where = self.event_slot[:passed], self.event_edge[:passed]
        below[where] = self.snap_counts[:passed]
        score[where] = self.snap_sums[:passed]
        canon = self.canon
        below, score = below[canon], score[canon]
        count = np.diff(below.sum(axis=2), axis=1)
        positives = np.diff(below[:, :, 0], axis=1)
        sums = np.diff(score[:, :, 0], axis=1) + np.diff(score[:, :, 1], axis=1)
        empty = ~np.isfinite(self.edges[:, 0])
        count[empty], positives[empty], sums[empty] = 0, 0, 0.0
        return count, positives, sums

    def report(self, metadata: dict[str, Any], notes: tuple[str, ...] = ()) -> FairnessReport:
        layout = self.layout
        n_voxels = int(self.totals[:, 0].sum())
        n_positive = int(self.totals[:, 1].sum())
        if n_voxels == 0:
            raise ValueError("no voxels to evaluate: every map (within its ROI) is empty; pass non-empty maps "
                             "or ROI masks")
        if n_positive in (0, n_voxels):
            raise ValueError(f"the true masks have only label {1 if n_positive else 0} ({n_voxels} voxels); "
                             "fairness metrics need both positive and negative voxels")
        positives, count = self.positives, self.count
        negatives = count - positives
        canon = self.canon
        state, at_or_below = self.state[canon], self.at_or_below[:, canon]
        bin_count, bin_positives, bin_sums = self._bins()
        ece = _one_grouping.calibration_error(bin_count, bin_positives.astype(np.float64), bin_sums)
        loss = self.slot_sums[2:].sum(axis=0)[canon]
        above = {}
        for f, value in enumerate(self.fixed.tolist()):  # thresholds the sweep never passed: every score below
            below = at_or_below[f] if f < self.cursor[1] else np.stack([positives, negatives], axis=1)
            above[value] = (positives - below[:, 0], negatives - below[:, 1])
        if self.threshold is None:
            thresholds = self.best[:, 1].copy()
            best = (positives - state[:, 3], negatives - state[:, 4])
        else:
            thresholds = np.full(len(layout.sizes), self.threshold)
            best = above[self.threshold]
        confusion = {"": above[0.5], _engine.BEST: best}
        member = layout.slot_matrix().astype(np.float64) if self.term_sums else None
        extra = {}
        for entry, per_image in self.term_sums:  # the images' sums added up per slot
            cells = np.bincount(layout.image_cells, weights=per_image, minlength=layout.n_cells)
            extra[entry.name] = np.where(count > 0, cells @ member, entry.empty)
        keys = {*_engine.all_keys(), *_metric_registry.optional_keys(self.metrics)}
        groupings = _engine.from_counts(layout.sizes, count, positives, negatives, thresholds, keys,
                                        u2=state[:, 2], loss_sums=loss, ece=ece, confusion=confusion, extra=extra)
        warnings: list[str] = list(notes)
        results = [attribute_result(attribute, grouping, n_voxels, warnings)
                   for attribute, grouping in zip(layout.attributes, groupings)]
        overall = {key: _python(values[-1]) for key, values in groupings[layout.complete].values.items()}
        metadata = {"n_samples": n_voxels, "n_images": layout.n_images, "score_dtype": voxel_passes.MODE_NAMES[self.mode],
                    **metadata}
        metadata.update(asked(self.threshold, metrics=self.metrics))
        return assemble(results, overall, warnings, metadata)[0]


class _Part:
    """The state of one range of buckets swept on its own thread, from the counts below it (its
    score and loss sums, and the score sums of its ECE snapshots, start at zero)."""

    def __init__(self, sweep: Sweep, below: np.ndarray):
        self.state = sweep.state.copy()
        self.state[:, :2] = below
        self.state[:, 2] = 0
        self.at_or_below = sweep.at_or_below.copy()
        self.slot_sums = np.zeros_like(sweep.slot_sums)
        self.snap_counts = sweep.snap_counts.copy()
        self.snap_sums = sweep.snap_sums.copy()
        self.cursor = sweep.cursor.copy()
        self.best = sweep.best.copy()


def _add_compensated(sums: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Rows (sum, compensation, sum, compensation, ...) of ``sums`` plus those of ``other``, compensated."""
    total = sums[0::2] + other[0::2]
    error = np.where(np.abs(sums[0::2]) >= np.abs(other[0::2]), (sums[0::2] - total) + other[0::2],
                     (other[0::2] - total) + sums[0::2])
    out = np.empty_like(sums)
    out[0::2] = total
    out[1::2] = sums[1::2] + other[1::2] + error
    return out


def _split(starts: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """Consecutive bucket ranges holding about equal numbers of records."""
    sizes = (starts[:, 1:] - starts[:, :-1]).sum(axis=0)
    cumulative = np.cumsum(sizes)
    total = int(cumulative[-1]) if len(cumulative) else 0
    cuts = [0]
    for j in range(1, n_parts):
        cut = int(np.searchsorted(cumulative, total * j / n_parts)) + 1
        if cuts[-1] < cut < len(sizes):
            cuts.append(cut)
    cuts.append(len(sizes))
    return list(zip(cuts[:-1], cuts[1:]))


def _python(value: Any) -> Any:
    return int(value) if isinstance(value, np.integer) else float(value)
