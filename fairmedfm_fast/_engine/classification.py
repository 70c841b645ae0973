"""Classification metrics of every group of every grouping, from clean arrays, with one sort.

The only module that calls the classification kernels. Input: scores (float32/float64), labels
(uint8), one code row per grouping. Output: per-slot metric arrays (see ``kernels/__init__.py``
for the slot layout). Nothing here knows group names or pandas.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._registry import metrics as _metric_registry
from .._util.threads import on_threads
from .groupings import Curves, Grouping, from_counts, optional_sums
from .groupings import term_values as term_values
from .loaded import kernel_modules, sweep_kernels
from .memory import lend
from .one_grouping import ECE_BINS as ECE_BINS
from .sorting import (
    RADIX_FROM,
    THREADED_FROM,
    carries,
    code_dtype,
    is_threaded,
    key_bits,
    n_threads,
    sort_carrying,
    sort_keyed,
    sort_scores,
)

#: fairmedfm's per-group metrics, in report order (the registry's own, which registrations do not
#: change; the registered ones are read from ``REGISTRY`` at each call). Each also exists with "@best_f1".
METRICS = _metric_registry.NAMES
BEST = _metric_registry.BEST
#: The decision threshold of the metrics without suffix (prediction ``score > THRESHOLD``).
THRESHOLD = 0.5
all_keys = _metric_registry.all_keys
#: ROC points the pictures keep per slot, at most (besides the corners): :func:`measure` with
#: ``curves=True`` records each slot's counts at this many cuts of the sorted order, at most.
CURVE_POINTS = 1000
#: Fewer cuts with many slots: slots times cuts stays under this (the counts are two such tables).
CURVE_CELLS = 1 << 19
#: The fewest cuts, however many slots.
CURVE_LEAST = 64


@dataclass
class Arranged:
    """The kernels' input: every grouping's codes beside the labels and scores, in one order
    (ascending score when ``is_sorted``)."""

    scores: np.ndarray
    labels: np.ndarray
    codes: np.ndarray  # (K, n), the narrowest integer type that holds the codes
    sizes: np.ndarray  # int64 (K,), groups per grouping
    weights: np.ndarray | None
    is_sorted: bool
    log_loss: np.ndarray | None = None  # per-sample BCE terms, made on first use

    def log_loss_terms(self) -> np.ndarray:
        if self.log_loss is None:
            calibration = kernel_modules()[1]
            n = len(self.scores)
            held = lend("log_loss", 8 * n)  # within memory.reusing: kept from an earlier call
            self.log_loss = np.empty(n) if held is None else held.view(np.float64)
            if n_threads(n) == 1:
                calibration.log_loss_into(self.scores, self.labels, self.log_loss)
                return self.log_loss
            bounds = np.linspace(0, n, n_threads(n) + 1).astype(np.intp)
            on_threads([lambda a=a, b=b: calibration.log_loss_into(self.scores[a:b], self.labels[a:b],
                                                                   self.log_loss[a:b])
                         for a, b in zip(bounds[:-1], bounds[1:])], len(bounds) - 1)
        return self.log_loss

    @property
    def slot_starts(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.sizes + 1)))

    def with_codes(self, codes: np.ndarray, sizes: np.ndarray) -> Arranged:
        return Arranged(self.scores, self.labels, codes, sizes, self.weights, self.is_sorted, self.log_loss)


_ALL_KEYS = frozenset(all_keys())


@_metric_registry.derived
@lru_cache(maxsize=256)
def _plan(keys: frozenset[str]) -> tuple[frozenset[str], bool, bool, bool, bool, tuple]:
    """What the metric ``keys`` need: the kernel passes that make their sums (keys of
    ``_metric_registry.PASSES``: what this module runs, whatever the metrics are called), whether
    any is at the plain threshold or at BEST, whether they need the sort without and with a fixed
    BEST threshold, and the entries of the optional sums they read."""
    base = frozenset(key.removesuffix(BEST) for key in keys)
    at_threshold = _metric_registry.REGISTRY.threshold_names  # read here: register_metric adds to it
    at_half = any(key in at_threshold for key in keys)
    at_best = any(key.endswith(BEST) and key.removesuffix(BEST) in at_threshold for key in keys)
    optional = tuple(_metric_registry.REGISTRY.sum[name] for name in _metric_registry.optional_sums(base))
    return (_metric_registry.passes(base), at_half, at_best, _metric_registry.needs_sort(set(keys), None),
            _metric_registry.needs_sort(set(keys), 0.5), optional)


def _key_set(wanted: set[str] | None) -> frozenset[str]:
    return _ALL_KEYS if wanted is None else frozenset(wanted)


def needs_sort(wanted: set[str] | None, fixed_best: float | None = None) -> bool:
    """Whether these metrics need the scores sorted (AUC, or the best-F1 threshold sweep)."""
    return _plan(_key_set(wanted))[3 if fixed_best is None else 4]


class _Background:
    """``function()`` run on another thread when ``threaded`` (the kernels release the GIL), else on
    the first call of :meth:`result`, which returns its value or raises its error."""

    def __init__(self, function, threaded: bool):
        self._function = function
        self._done = False
        self._value = self._error = None
        self._thread = None
        if threaded:
            import threading

            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._function()
        except BaseException as error:  # re-raised by result()
            self._error = error
        self._done = True

    def result(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if not self._done:
            self._run()
        if self._error is not None:
            raise self._error
        return self._value




class Presort:
    """The sort of the scores, started early on another thread for large inputs whose labels and codes
    cannot travel with the scores (weights given, or labels not uint8).

    Sorting needs only the scores, so it can run (in the kernels, without the GIL) while the caller
    codes the sensitive attributes; :meth:`result` waits for it. Otherwise :func:`arrange` sorts the
    scores carrying labels and codes (on every thread), and this sort runs only if asked for.
    """

    def __init__(self, scores: np.ndarray, labels: np.ndarray | None = None, weights: np.ndarray | None = None):
        self.scores = scores
        may_carry = labels is not None and carries(len(scores), labels, np.dtype(np.int8), 1, weights)
        self.threaded = is_threaded(len(scores)) and not may_carry
        if self.threaded:
            from ..kernels import sorting  # noqa: F401 - imported before the thread starts
        # The kernels themselves load (from numba's disk cache) on the sort thread's first call.
        # Loading them here instead spared a first call in a new process ~0.2 s of GIL contention,
        # but left the C allocator in a state where every later sort page-faulted its large arrays
        # afresh (auc_gap on 1M samples: 33 -> 46 ms per call), so they are not.
        self._job = _Background(lambda: sort_scores(scores), self.threaded)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        return self._job.result()


def arrange(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray], n_groups: list[int],
            weights: np.ndarray | None = None, sort: bool = True, presort: Presort | None = None) -> Arranged:
    """Put codes, labels, scores (and weights) side by side, sorted by score when ``sort``.

    Codes travel in the narrowest integer type that holds them: after the sort they are gathered in
    score order, and int8 rows stay in cache where intp rows would not. ``presort`` is the sort of
    these same scores, if the caller started it.
    """
    sizes = np.asarray(n_groups, dtype=np.int64)
    code_type = code_dtype(int(max(n_groups, default=1)))
    codes = np.empty((len(code_rows), len(scores)), code_type)
    if sort and (presort is None or not presort.threaded) and carries(len(scores), labels, code_type,
                                                                       len(code_rows), weights):
        scores, labels, codes = sort_carrying(scores, labels, code_rows)
    elif sort:  # the one sort, shared by every grouping
        threaded = is_threaded(len(scores))
        if presort is None and not threaded:  # what Presort would run, without its wrapping
            order, scores = sort_scores(scores)
        else:
            order, scores = (presort or Presort(scores)).result()
        sorted_labels = np.empty(len(labels), labels.dtype)
        sorted_weights = None if weights is None else np.empty(len(weights), weights.dtype)
        gathers = [(labels, sorted_labels), *zip(code_rows, codes)]
        if weights is not None:
            gathers.append((weights, sorted_weights))

        def gather(part: list) -> None:
            for source, target in part:
                # order holds valid indices: mode="clip" skips the bounds check and the buffer
                source.astype(target.dtype, copy=False).take(order, out=target, mode="clip")

        if threaded:  # np.take releases the GIL: every other gather on a second thread
            other = _Background(lambda: gather(gathers[0::2]), True)
            gather(gathers[1::2])
            other.result()
        else:
            gather(gathers)
        labels, weights = sorted_labels, sorted_weights
    else:
        scores, labels = np.ascontiguousarray(scores), np.ascontiguousarray(labels)
        weights = None if weights is None else np.ascontiguousarray(weights)
        for k, row in enumerate(code_rows):
            codes[k] = row
    return Arranged(scores, labels, codes, sizes, weights, sort)


#: The passes whose sums :mod:`kernels.rank_sums` (and ``ranking.rank_statistics`` alone) give.
RANK_PASSES = frozenset({"counts", "ranks"})


def _ranks_only(wanted: set[str] | None) -> bool:
    """Whether every metric in ``wanted`` is finished from the sums of :data:`RANK_PASSES` (AUC alone)."""
    return bool(wanted) and _keys_ranks_only(frozenset(wanted))


@_metric_registry.derived
@lru_cache(maxsize=256)
def _keys_ranks_only(wanted: frozenset[str]) -> bool:
    metrics = [_metric_registry.REGISTRY.by_name.get(key.removesuffix(BEST)) for key in wanted]
    return all(metric is not None and not metric.at_threshold for metric in metrics) and \
        _metric_registry.passes(frozenset(metric.name for metric in metrics)) <= RANK_PASSES


def _rank_groupings(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray], n_groups: list[int],
                    wanted: set[str], weights: np.ndarray | None) -> list[Grouping] | None:
    """The groupings of :func:`measure` for AUC alone of one grouping, from the unsorted samples by
    ``kernels.rank_sums`` (a radix partition whose buckets are sorted and swept in cache: no sorted
    arrays are written); None where it does not apply (weights, several groupings, small inputs)."""
    n = len(scores)
    if not (RADIX_FROM <= n < 1 << 32 and weights is None and len(code_rows) == 1 and labels.dtype == np.uint8
            and _ranks_only(wanted)):
        return None
    from ..kernels import rank_sums

    scores = np.ascontiguousarray(scores)
    sums = rank_sums.rank_sums(key_bits(scores), labels, np.ascontiguousarray(code_rows[0]), int(n_groups[0]),
                               n_threads(n))
    if sums is None:  # a sample's payload does not fit beside its key's bits
        return None
    count, positives, u2 = sums
    sizes = np.asarray(n_groups, dtype=np.int64)
    return from_counts(sizes, count, positives, count - positives, np.full(1, np.nan), set(wanted), u2=u2)


def arrange_and_measure(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray], n_groups: list[int],
                        weights: np.ndarray | None = None, wanted: set[str] | None = None,
                        fixed_best: float | None = None, presort: Presort | None = None, curves: bool = False
                        ) -> tuple[Arranged, list[Grouping]]:
    """:func:`arrange` (sorting when ``wanted`` needs it) then :func:`measure` at ``fixed_best``
    (with ``curves``, recording what the pictures draw).

    AUC alone of one grouping (``auc_gap``, ``worst_group_auc``) skips the sort: its sums come from
    :func:`_rank_groupings`, and the samples are returned unsorted (``is_sorted`` False).
    """
    groupings = _rank_groupings(scores, labels, code_rows, n_groups, wanted, weights)
    if groupings is not None:
        return arrange(scores, labels, code_rows, n_groups, weights, sort=False), groupings
    arranged = arrange(scores, labels, code_rows, n_groups, weights, needs_sort(wanted, fixed_best), presort)
    return arranged, measure(arranged, wanted, fixed_best=fixed_best, curves=curves)


def keyed_and_measured(scores: np.ndarray, keys: np.ndarray, cell_codes: np.ndarray, n_groups: list[int],
                       wanted: set[str] | None = None, fixed_best: float | None = None, curves: bool = False
                       ) -> tuple[Arranged, list[Grouping]] | None:
    """:func:`arrange_and_measure` of samples given as keys ``cell * 2 + label`` and each cell's int8
    codes ((K, cells), none negative), as the accumulator keeps them: one sort that looks each
    sample's codes up by its cell (:func:`~.sorting.sort_keyed`), so no label and code rows are made
    first. The arranged samples are sorted. None where that sort does not apply (then split the keys
    and call :func:`arrange_and_measure`)."""
    if not needs_sort(wanted, fixed_best) or code_dtype(int(max(n_groups, default=1))) != np.int8 or \
            cell_codes.min(initial=0) < 0:
        return None
    carried = sort_keyed(scores, keys, cell_codes)
    if carried is None:
        return None
    arranged = Arranged(*carried, np.asarray(n_groups, dtype=np.int64), None, True)
    return arranged, measure(arranged, wanted, fixed_best=fixed_best, curves=curves)


def compute(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray], n_groups: list[int],
            wanted: set[str] | None = None, threshold: float = THRESHOLD, fixed_best: float | None = None,
            weights: np.ndarray | None = None) -> list[Grouping]:
    """Metrics of every slot of every grouping (see :func:`measure`), sorting only when needed."""
    arranged = arrange(scores, labels, code_rows, n_groups, weights, needs_sort(wanted, fixed_best))
    return measure(arranged, wanted, threshold, fixed_best)


def measure(arranged: Arranged, wanted: set[str] | None = None, threshold: float = THRESHOLD,
            fixed_best: float | None = None, weights: np.ndarray | None = None,
            sample_counts: bool = True, parallel: bool = True, curves: bool = False) -> list[Grouping]:
    """Metrics of every slot of every grouping.

    Parameters
    ----------
    arranged : Arranged
        Sorted by score when AUC or the best-F1 sweep is wanted.
    wanted : set of metric keys (e.g. ``{"auc", "tpr@best_f1"}``); None computes all
    threshold : float, default 0.5
        Decision threshold of the metrics without suffix (prediction ``score > threshold``).
    fixed_best : float, optional
        Decision threshold of the ``@best_f1`` metrics instead of each grouping's best-F1 one.
    weights : float64 array of shape (n,), optional
        Overrides ``arranged.weights`` (e.g. bootstrap counts over the arranged order).
    sample_counts : bool, default True
        With weights, also count samples (``Grouping.count``); otherwise ``count`` holds the
        weighted totals, which is all a bootstrap resample needs.
    parallel : bool, default True
        Run the calibration pass on another thread beside the ranking pass, for large inputs and
        when more than one thread is allowed (callers already running in a thread pool pass False).
    curves : bool, default False
        Also record, on sorted samples, what the pictures draw (:class:`Curves`, ``Grouping.curves``):
        the fused pass's counts at up to :data:`CURVE_POINTS` more cuts and its ECE bin sums. Unsorted
        samples get none.
    """
    keys = _key_set(wanted)
    passes, at_half, at_best, sorted_free, sorted_fixed, optional = _plan(keys)
    if (sorted_free if fixed_best is None else sorted_fixed) and not arranged.is_sorted:
        raise RuntimeError("internal error: these metrics need the samples sorted by score")
    weights = arranged.weights if weights is None else weights
    if arranged.is_sorted:
        return _sweep(arranged, keys, passes, at_half, at_best, threshold, fixed_best, weights, sample_counts,
                      n_threads(len(arranged.scores)) if parallel else 1, curves, optional)
    ranking, calibration = kernel_modules()
    scores, labels, codes, sizes = arranged.scores, arranged.labels, arranged.codes, arranged.sizes
    slot_starts = arranged.slot_starts

    # Calibration (score ranges, ECE bins) and ranking (AUC, BCE sums, the best-F1 sweep) are
    # independent passes: on large inputs the first runs on another thread beside the second.
    ranks, with_ece = "ranks" in passes, "ece_bins" in passes
    need_ranges = with_ece or not ranks

    def calibrate() -> tuple[tuple[np.ndarray, ...] | None, np.ndarray | None]:
        ranges = calibration.score_ranges(scores, labels, codes, sizes, weights) if need_ranges else None
        if not with_ece:
            return ranges, None
        edges = calibration.equal_width_edges(ranges[2], ranges[3], ECE_BINS)
        sums = calibration.binned_calibration(scores, labels, codes, sizes, edges, False, weights)
        return ranges, calibration.calibration_error(*sums, 0)

    calibrated = _Background(calibrate, parallel and ranks and with_ece and is_threaded(len(scores)))
    u2 = loss_sums = None
    confusion: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if ranks:
        totals = ranking.rank_statistics(scores, labels, codes, sizes, weights)
        u2 = totals[2]
    else:  # the score ranges hold the counts
        totals = calibrated.result()[0]
    positives = totals[1]
    negatives = totals[0] - positives
    count = totals[0]
    if weights is not None and sample_counts:
        count = calibration.score_ranges(scores, labels, codes, sizes)[0]
    if "log_loss" in passes:
        loss_sums = calibration.slot_sums(arranged.log_loss_terms(), codes, sizes, weights)
    overall = slot_starts[1:] - 1
    thresholds = np.full(len(sizes), np.nan if fixed_best is None else float(fixed_best))
    if at_best and fixed_best is None:
        thresholds = ranking.best_f1_thresholds(scores, labels, codes, positives[overall], negatives[overall],
                                                None, None, weights)[0]
    columns = [(suffix, t) for suffix, t, needed in (("", threshold, at_half), (BEST, None, at_best)) if needed]
    if columns:
        table = np.empty((len(sizes), len(columns)))
        for j, (_, t) in enumerate(columns):
            table[:, j] = thresholds if t is None else t
        pos_above, neg_above = ranking.confusion_above(scores, labels, codes, sizes, table, weights)
        confusion = {suffix: (pos_above[:, j], neg_above[:, j]) for j, (suffix, _) in enumerate(columns)}
    ece = calibrated.result()[1]
    return from_counts(sizes, count, positives, negatives, thresholds, keys, u2=u2, loss_sums=loss_sums,
                       ece=ece, confusion=confusion, totals=totals[0], extra=_optional_sums(arranged, optional, weights))


def _sweep(arranged: Arranged, keys: set[str], passes: frozenset[str], at_half: bool, at_best: bool, threshold: float,
           fixed_best: float | None, weights: np.ndarray | None, sample_counts: bool,
           n_threads: int = 1, curves: bool = False, optional: tuple = ()) -> list[Grouping]:
    """:func:`measure` on samples sorted by score: one fused pass (``kernels.sweeps.ranked_sums``) over
    the complete groupings together and one over each grouping with missing values, each followed by
    its best-F1 sweep when no shared one serves it; the passes shared among ``n_threads`` threads.

    Small inputs reach here on every one-number call: the Python between the kernels is kept to what
    the wanted keys need (no ECE, loss, best-F1 or cut arrays when they are not asked for)."""
    scores, codes, sizes = arranged.scores, arranged.codes, arranged.sizes
    if weights is None and _keys_ranks_only(keys) and not curves:  # AUC alone (auc_gap): counts and U, one light pass
        count, positives, u2 = kernel_modules()[0].rank_statistics(scores, arranged.labels, codes, sizes)
        return from_counts(sizes, count, positives, count - positives,
                           [math.nan if fixed_best is None else float(fixed_best)] * len(sizes), keys, u2=u2)
    # Confusion counts at a fixed threshold t (prediction score > t) are the slot's totals less its
    # counts before position searchsorted(scores, t, "right"), which the pass records.
    fixed = {}
    if at_half:
        fixed[""] = int(scores.searchsorted(threshold, "right"))
    if at_best and fixed_best is not None:
        fixed[BEST] = int(scores.searchsorted(fixed_best, "right"))
    positions = sorted(set(fixed.values()))
    with_ece, sweep_f1 = "ece_bins" in passes, at_best and fixed_best is None
    with_loss = "log_loss" in passes
    # which groupings have every sample (one grouping never shares a best-F1 sweep: no need to look)
    complete = [False] if len(codes) == 1 else (codes.min(axis=1, initial=0) >= 0).tolist()
    if sweep_f1 and n_threads > 1:  # the shared best-F1 sweep runs beside the BCE terms
        job = _Background(lambda: _shared_best_f1(arranged, weights, complete), True)
        loss_terms = arranged.log_loss_terms() if with_loss else None
        shared = job.result()
    else:
        shared = _shared_best_f1(arranged, weights, complete) if sweep_f1 else None
        loss_terms = arranged.log_loss_terms() if with_loss else None
    if shared is not None:  # the complete groupings' counts at it: prefix counts of the pass
        positions = sorted({*positions, shared[1]})
    if curves:  # the fixed positions are tie-block starts too: every cut is a point of the curves
        cuts = _curve_cuts(scores, int(np.sum(sizes + 1)), positions)
    else:
        cuts = np.array(positions, np.int64)
    parts = [[0]] if len(complete) == 1 else grouping_parts(complete)
    # one part (the usual case: every grouping complete) shares the threads among its ranges
    inner = n_threads if len(parts) == 1 else 1
    tasks = [lambda rows=rows: fused_passes(arranged, rows, loss_terms, cuts, with_ece,
                                       sweep_f1 and (shared is None or not all(complete[k] for k in rows)), weights,
                                       inner)
             for rows in parts]
    done = on_threads(tasks, n_threads) if n_threads > 1 and len(tasks) > 1 else [task() for task in tasks]
    (count, positives, u2, loss, pos_cut, neg_cut, found, pos_at, neg_at, ece, *bins) = in_slot_order(parts, done,
                                                                                                        sizes)
    if shared is not None:
        threshold_found, at, rows = shared
        slots = np.repeat(rows, sizes + 1)
        j = int(cuts.searchsorted(at))
        found = np.where(rows, threshold_found, np.nan if found is None else found)
        pos_at = np.where(slots, pos_cut[:, j], 0 if pos_at is None else pos_at)
        neg_at = np.where(slots, neg_cut[:, j], 0 if neg_at is None else neg_at)
    negatives = count - positives
    totals = count
    if weights is not None and sample_counts:
        count = kernel_modules()[1].score_ranges(scores, arranged.labels, codes, sizes)[0]
    confusion = {}
    for suffix, position in fixed.items():
        j = int(cuts.searchsorted(position))
        confusion[suffix] = (positives - pos_cut[:, j], negatives - neg_cut[:, j])
    if sweep_f1:
        thresholds = found
        confusion[BEST] = (positives - pos_at, negatives - neg_at)
    else:
        thresholds = [math.nan if fixed_best is None else float(fixed_best)] * len(sizes)
    groupings = from_counts(sizes, count, positives, negatives, thresholds, keys,
                            u2=u2 if "ranks" in passes else None, loss_sums=loss if with_loss else None,
                            ece=ece if with_ece else None, confusion=confusion, totals=totals,
                            extra=_optional_sums(arranged, optional, weights))
    if curves:
        edges = np.empty(len(cuts))
        edges[:-1] = scores[cuts[:-1]]
        edges[-1] = np.inf  # the last cut is n
        above_best = confusion[BEST][::-1] if BEST in confusion else None
        every = Curves(edges, pos_cut, neg_cut, positives, negatives, u2, above_best,
                       tuple(bins) if with_ece else None, ece if with_ece else None)
        start = 0
        for grouping, size in zip(groupings, sizes.tolist()):
            grouping.curves, grouping.first_slot = every, start
            start += size + 1
    return groupings


def _curve_cuts(scores: np.ndarray, n_slots: int, fixed: list[int]) -> np.ndarray:
    """The cuts of :class:`Curves` in the ascending ``scores``: 0, ``n``, the ``fixed`` positions (at
    most three tie-block starts, which the pass records anyway) and, between them, every tie-block
    start or, from about :data:`CURVE_POINTS` samples on (fewer with many slots: slots times cuts at
    most :data:`CURVE_CELLS`), the tie-block starts at or below equal steps: at most
    ``CURVE_POINTS + 2`` in all, ascending."""
    n = len(scores)
    most = max(CURVE_LEAST, min(CURVE_POINTS, CURVE_CELLS // max(n_slots, 1))) - 3  # room for the fixed ones
    cuts = np.zeros(n + 1, bool)  # a mask of the cuts: sorted and without repeats by construction
    if n <= most:
        np.not_equal(scores[1:], scores[:-1], out=cuts[1:n])
    else:
        inner = np.arange(n, most * n, n, dtype=np.int64) // most  # i * n // most for i in 1 .. most - 1
        tied = scores[inner - 1] == scores[inner]  # within a tie block: back to its start (rare)
        if tied.any():
            inner[tied] = scores.searchsorted(scores[inner[tied]], "left")
        cuts[inner] = True
    cuts[0] = cuts[n] = True
    cuts[fixed] = True
    return cuts.nonzero()[0].astype(np.int64, copy=False)


def grouping_parts(complete: list[bool]) -> list[list[int]]:
    """The groupings each pass reads: the complete ones together, each one with missing values
    alone."""
    whole = [k for k, done in enumerate(complete) if done]
    return ([whole] if whole else []) + [[k] for k, done in enumerate(complete) if not done] or [[]]


#: Where :func:`fused_passes` puts ``found`` (the only output per grouping, not per slot).
_FOUND = 6


def _slots_of(sizes: np.ndarray, rows: list[int]) -> np.ndarray:
    """The slots of the groupings ``rows``, in order."""
    starts = np.concatenate(([0], np.cumsum(sizes + 1)))
    return np.concatenate([np.arange(starts[k], starts[k + 1]) for k in rows])


def in_slot_order(parts: list[list[int]], done: list[tuple[np.ndarray | None, ...]], sizes: np.ndarray
                   ) -> list[np.ndarray | None]:
    """The outputs of :func:`fused_passes` put back in slot order (``found`` in grouping order). An output
    that no pass computed stays None; one that some passes computed is NaN (``found``, ``ece``) or
    zero (``pos_at``, ``neg_at``) in the others' slots."""
    if len(parts) == 1 and parts[0] == list(range(len(sizes))):
        return list(done[0])
    starts = np.concatenate(([0], np.cumsum(sizes + 1)))
    slot_rows = [_slots_of(sizes, rows) for rows in parts]
    merged = []
    for j, values in enumerate(zip(*done)):
        present = [value for value in values if value is not None]
        if not present:
            merged.append(None)
            continue
        per_grouping = j == _FOUND
        where = parts if per_grouping else slot_rows
        shape = (len(sizes) if per_grouping else int(starts[-1]), *present[0].shape[1:])
        out = (np.empty(shape, present[0].dtype) if len(present) == len(values)
               else np.full(shape, np.nan if per_grouping else 0, present[0].dtype))
        for rows, value in zip(where, values):
            if value is not None:
                out[np.asarray(rows, np.intp)] = value
        merged.append(out)
    return merged


def _shared_best_f1(arranged: Arranged, weights: np.ndarray | None, complete: list[bool]
                    ) -> tuple[float, int, np.ndarray] | None:
    """The best-F1 threshold of every grouping without missing values (they all sweep the same
    samples; ``complete`` says which are), by one sweep over all samples instead of one per grouping:
    the threshold, where its tie block ends in the sorted order, and ``complete`` as an array. None
    with weights (weighted totals are summed in the sweep's order), on small inputs, and with fewer
    than two complete groupings."""
    if weights is not None or len(arranged.sizes) < 2 or len(arranged.scores) < RADIX_FROM:
        return None
    if sum(complete) < 2:
        return None
    n = len(arranged.scores)
    n_pos = np.array([np.count_nonzero(arranged.labels)], np.int64)
    # one grouping whose one group holds every sample (no codes to read)
    found = sweep_kernels().best_f1_sweep(arranged.scores, arranged.labels, None, np.ones(1, np.int64), n_pos, n - n_pos)[0]
    if np.isnan(found[0]):
        return None
    return float(found[0]), int(np.searchsorted(arranged.scores, found[0], "right")), np.array(complete)


def fused_passes(arranged: Arranged, rows: list[int], loss_terms: np.ndarray | None, cuts: np.ndarray, with_ece: bool,
            sweep_f1: bool, weights: np.ndarray | None, n_threads: int = 1, edges: np.ndarray | None = None
            ) -> tuple[np.ndarray, ...]:
    """The fused pass over the groupings ``rows`` (which have the same samples present): per-slot
    count, positives, u2, loss sums, counts below the cuts, then (when asked for) each grouping's
    best-F1 threshold with the counts at or below it, and ECE with its bin sums. The pass's ranges of samples
    (:func:`split_ranges`) share ``n_threads`` threads. ``edges`` (every slot's, in slot order) are the ECE
    bin edges, by default those of the samples' own score ranges."""
    calibration, sweeps = kernel_modules()[1], sweep_kernels()
    scores, labels = arranged.scores, arranged.labels
    first, stop = (rows[0], rows[-1] + 1) if rows else (0, 0)
    if rows == list(range(first, stop)):  # a view, not a copy
        codes, sizes = arranged.codes[first:stop], arranged.sizes[first:stop]
    else:
        codes, sizes = arranged.codes[rows], arranged.sizes[rows]
    marks, n_bins = None, 1
    if with_ece:
        if edges is None:
            low, high = sweeps.score_ends(scores, codes, sizes, weights)
            edges = calibration.equal_width_edges(low, high, ECE_BINS)
        elif rows != list(range(len(arranged.sizes))):
            edges = edges[_slots_of(arranged.sizes, rows)]
        marks, n_bins = sweeps.bin_marks(scores, edges, sizes), ECE_BINS
    ranges = split_ranges(scores) if weights is None else [(0, len(scores))]
    if len(ranges) == 1:
        done = [sweeps.ranked_sums(scores, labels, codes, sizes, loss_terms, cuts, marks, n_bins, 0, len(scores),
                                   weights)]
    else:
        done = on_threads([lambda a=a, b=b: sweeps.ranked_sums(scores, labels, codes, sizes, loss_terms, cuts, marks,
                                                               n_bins, a, b, weights) for a, b in ranges], n_threads)
    count, positives, u2, loss, pos_cut, neg_cut, bin_count, bin_labels, bin_scores = joined_sums(done)
    found = pos_at = neg_at = ece = None  # not asked for
    if sweep_f1:
        overall = overall_slots(sizes)
        found, pos_at, neg_at = sweeps.best_f1_sweep(scores, labels, codes, sizes, positives[overall],
                                                     count[overall] - positives[overall], weights)
    if with_ece:
        ece = calibration.calibration_error(bin_count, bin_labels, bin_scores, 0)
    else:
        bin_count = bin_labels = bin_scores = None
    return count, positives, u2, loss, pos_cut, neg_cut, found, pos_at, neg_at, ece, bin_count, bin_labels, bin_scores


#: From this many samples the fused pass reads the sorted order as :data:`SPLIT` ranges, which
#: threads share. The split depends on the samples alone, so the sums do not depend on the threads.
SPLIT_FROM = THREADED_FROM
SPLIT = 2


def split_ranges(scores: np.ndarray) -> list[tuple[int, int]]:
    """Ranges of the sorted order for :func:`fused_passes`: :data:`SPLIT` of about equal size, each
    bound at the start of a tie block (fewer when one tie block spans a bound); one below
    :data:`SPLIT_FROM` samples."""
    n = len(scores)
    if n < SPLIT_FROM:
        return [(0, n)]
    bounds = sorted({0, n, *(int(scores.searchsorted(scores[n * j // SPLIT], "left")) for j in range(1, SPLIT))})
    return list(zip(bounds[:-1], bounds[1:]))


def joined_sums(done: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The sums of ``ranked_sums`` over consecutive ranges as one pass over their union would give
    them: added, and each range's U credited with its positives times the negatives before it."""
    if len(done) == 1:
        return done[0]
    joined = [sum(values[1:], values[0]) for values in zip(*done)]
    negatives = 0
    for count, positives, *_ in done:
        joined[2] = joined[2] + 2 * positives * negatives
        negatives = negatives + (count - positives)
    return tuple(joined)


def overall_slots(sizes: np.ndarray) -> np.ndarray:
    """Each grouping's "all present samples" slot: ``np.cumsum(sizes + 1) - 1``, in Python (a few
    groupings: cheaper than three NumPy calls)."""
    slots, end = [], -1
    for size in sizes.tolist():
        end += size + 1
        slots.append(end)
    return np.array(slots, np.intp)


def _optional_sums(arranged: Arranged, entries: tuple, weights: np.ndarray | None) -> dict[str, np.ndarray] | None:
    """The optional per-slot sums of ``entries`` over ``arranged`` (see :func:`optional_sums`); None for none."""
    if not entries:
        return None
    return optional_sums(arranged.scores, arranged.labels, arranged.codes, arranged.sizes, entries, weights)


