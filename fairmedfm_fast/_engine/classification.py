"""Classification metrics of every group of every grouping, from clean arrays, with one sort.

The only module that calls the classification kernels. Input: scores (float32/float64), labels
(uint8), one code row per grouping. Output: per-slot metric arrays (see ``kernels/__init__.py``
for the slot layout). Nothing here knows group names or pandas.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .._registry import metrics as _metric_registry
from .._util.threads import on_threads

#: fairmedfm's per-group metrics, in report order (the registry's own, which registrations do not
#: change; the registered ones are read from ``REGISTRY`` at each call). Each also exists with "@best_f1".
METRICS = _metric_registry.NAMES
BEST = _metric_registry.BEST
ECE_BINS = 10
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
class Grouping:
    """Metrics of one grouping: index ``g < n_groups`` is group ``g``, index ``n_groups`` is all of
    the grouping's present samples."""

    count: np.ndarray  # samples
    positives: np.ndarray  # positive samples (weighted sums with weights)
    negatives: np.ndarray  # negative samples (weighted sums with weights)
    threshold: float  # decision threshold of the "@best_f1" metrics (NaN when not computed)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    #: what the pictures draw, from measure(..., curves=True): of every grouping (one object)
    curves: Curves | None = None
    first_slot: int = 0  # this grouping's first slot in ``curves``


@dataclass
class Curves:
    """What the pictures draw of every slot of every grouping, recorded by the fused pass: bounded in size
    (slots times at most :data:`CURVE_POINTS` + 2 cuts, and ten bins a slot), never per sample.

    The cuts are positions of the sorted order at tie-block starts (:func:`_curve_cuts`): 0, ``n``,
    and about :data:`CURVE_POINTS` others at equal steps (every tie-block start when there are
    fewer), at most ``CURVE_POINTS + 2`` in all. At a cut, a slot's samples scoring at least
    ``thresholds[t]`` (the score there; +inf at ``n``) are its total less those before the cut, so
    each (FPR, TPR) of a cut is a point of the slot's exact ROC curve (scikit-learn's ``roc_curve``),
    the corners included."""

    thresholds: np.ndarray  # float64 (T,), ascending (+inf last)
    pos_below: np.ndarray  # (n_slots, T): positives before each cut (int64; float64 with weights)
    neg_below: np.ndarray  # (n_slots, T): negatives before each cut
    positives: np.ndarray  # (n_slots,)
    negatives: np.ndarray  # (n_slots,)
    u2: np.ndarray  # (n_slots,): twice the Mann-Whitney U, AUC = u2 / (2 * positives * negatives)
    above_best: tuple[np.ndarray, np.ndarray] | None  # (n_slots,) each: negatives, positives above the
    #: @best_f1 threshold
    bins: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (n_slots, ECE_BINS) count, label and score sums
    ece: np.ndarray | None  # (n_slots,)


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
            calibration = _kernels()[1]
            n = len(self.scores)
            self.log_loss = np.empty(n)
            if _n_threads(n) == 1:
                calibration.log_loss_into(self.scores, self.labels, self.log_loss)
                return self.log_loss
            bounds = np.linspace(0, n, _n_threads(n) + 1).astype(np.intp)
            on_threads([lambda a=a, b=b: calibration.log_loss_into(self.scores[a:b], self.labels[a:b],
                                                                   self.log_loss[a:b])
                         for a, b in zip(bounds[:-1], bounds[1:])], len(bounds) - 1)
        return self.log_loss

    @property
    def slot_starts(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.sizes + 1)))

    def with_codes(self, codes: np.ndarray, sizes: np.ndarray) -> Arranged:
        return Arranged(self.scores, self.labels, codes, sizes, self.weights, self.is_sorted, self.log_loss)


_CODE_TYPES = ((127, np.dtype(np.int8)), (32767, np.dtype(np.int16)), (2147483647, np.dtype(np.int32)))


def code_dtype(largest: int) -> np.dtype:
    for top, dtype in _CODE_TYPES:  # np.iinfo(dtype).max, which costs a microsecond a call
        if largest < top:
            return dtype
    return np.dtype(np.intp)


#: Inputs below this many samples sort with NumPy (and gather): cheaper to start. At most 1 << 16, the
#: positions :func:`_sort_packed` packs.
RADIX_FROM = 1 << 14


def _bits(scores: np.ndarray) -> np.ndarray:
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
    order, sorted_bits = sorting.sort_order(_bits(scores), _n_threads(len(scores)))
    return order, sorted_bits.view(scores.dtype)


def _sort_carrying(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, labels and int8 codes in ascending score order, by one radix sort that moves each
    sample's label and codes with its score (``kernels.sorting.sort_carrying``)."""
    from ..kernels import sorting

    codes = np.empty((len(code_rows), len(scores)), np.int8)
    for k, row in enumerate(code_rows):
        codes[k] = row
    scores = np.ascontiguousarray(scores)
    sorted_bits, sorted_labels, sorted_codes = sorting.sort_carrying(_bits(scores), labels, codes,
                                                                     _n_threads(len(scores)))
    return sorted_bits.view(scores.dtype), sorted_labels, sorted_codes


def _carries(n: int, labels: np.ndarray, code_type: np.dtype, n_rows: int, weights) -> bool:
    """Whether the labels and codes fit the carrying sort's 64-bit payload."""
    return (RADIX_FROM <= n < 1 << 32 and weights is None and labels.dtype == np.uint8
            and code_type == np.int8 and n_rows <= 7)


_loaded: dict[str, object] = {}


def _kernels():
    # Imported on first use, so that `import fairmedfm_fast` does not load numba.
    if not _loaded:
        from ..kernels import calibration, ranking, sweeps

        _loaded.update(ranking=ranking, calibration=calibration, sweeps=sweeps)
    return _loaded["ranking"], _loaded["calibration"]


def _sweeps():
    _kernels()
    return _loaded["sweeps"]


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


#: Inputs from this many samples run the sort, and the calibration pass, beside other work.
THREADED_FROM = 1 << 18


def _threaded(n: int) -> bool:
    return _n_threads(n) > 1


def _n_threads(n: int) -> int:
    """Threads for work on ``n`` samples: 1 below :data:`THREADED_FROM`, else ``resolve_n_jobs()``."""
    if n < THREADED_FROM:
        return 1
    from .._util.threads import resolve_n_jobs

    return resolve_n_jobs()


class Presort:
    """The sort of the scores, started early on another thread for large inputs whose labels and codes
    cannot travel with the scores (weights given, or labels not uint8).

    Sorting needs only the scores, so it can run (in the kernels, without the GIL) while the caller
    codes the sensitive attributes; :meth:`result` waits for it. Otherwise :func:`arrange` sorts the
    scores carrying labels and codes (on every thread), and this sort runs only if asked for.
    """

    def __init__(self, scores: np.ndarray, labels: np.ndarray | None = None, weights: np.ndarray | None = None):
        self.scores = scores
        may_carry = labels is not None and _carries(len(scores), labels, np.dtype(np.int8), 1, weights)
        self.threaded = _threaded(len(scores)) and not may_carry
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
    if sort and (presort is None or not presort.threaded) and _carries(len(scores), labels, code_type,
                                                                       len(code_rows), weights):
        scores, labels, codes = _sort_carrying(scores, labels, code_rows)
    elif sort:  # the one sort, shared by every grouping
        threaded = _threaded(len(scores))
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
    sums = rank_sums.rank_sums(_bits(scores), labels, np.ascontiguousarray(code_rows[0]), int(n_groups[0]),
                               _n_threads(n))
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
                      _n_threads(len(arranged.scores)) if parallel else 1, curves, optional)
    ranking, calibration = _kernels()
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

    calibrated = _Background(calibrate, parallel and ranks and with_ece and _threaded(len(scores)))
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
        count, positives, u2 = _kernels()[0].rank_statistics(scores, arranged.labels, codes, sizes)
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
    parts = [[0]] if len(complete) == 1 else _parts(complete)
    # one part (the usual case: every grouping complete) shares the threads among its ranges
    inner = n_threads if len(parts) == 1 else 1
    tasks = [lambda rows=rows: _passes(arranged, rows, loss_terms, cuts, with_ece,
                                       sweep_f1 and (shared is None or not all(complete[k] for k in rows)), weights,
                                       inner)
             for rows in parts]
    done = on_threads(tasks, n_threads) if n_threads > 1 and len(tasks) > 1 else [task() for task in tasks]
    (count, positives, u2, loss, pos_cut, neg_cut, found, pos_at, neg_at, ece, *bins) = _in_slot_order(parts, done,
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
        count = _kernels()[1].score_ranges(scores, arranged.labels, codes, sizes)[0]
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


def _parts(complete: list[bool]) -> list[list[int]]:
    """The groupings each pass reads: the complete ones together, each one with missing values
    alone."""
    whole = [k for k, done in enumerate(complete) if done]
    return ([whole] if whole else []) + [[k] for k, done in enumerate(complete) if not done] or [[]]


#: Where :func:`_passes` puts ``found`` (the only output per grouping, not per slot).
_FOUND = 6


def _slots_of(sizes: np.ndarray, rows: list[int]) -> np.ndarray:
    """The slots of the groupings ``rows``, in order."""
    starts = np.concatenate(([0], np.cumsum(sizes + 1)))
    return np.concatenate([np.arange(starts[k], starts[k + 1]) for k in rows])


def _in_slot_order(parts: list[list[int]], done: list[tuple[np.ndarray | None, ...]], sizes: np.ndarray
                   ) -> list[np.ndarray | None]:
    """The outputs of :func:`_passes` put back in slot order (``found`` in grouping order). An output
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
    found = _sweeps().best_f1_sweep(arranged.scores, arranged.labels, None, np.ones(1, np.int64), n_pos, n - n_pos)[0]
    if np.isnan(found[0]):
        return None
    return float(found[0]), int(np.searchsorted(arranged.scores, found[0], "right")), np.array(complete)


def _passes(arranged: Arranged, rows: list[int], loss_terms: np.ndarray | None, cuts: np.ndarray, with_ece: bool,
            sweep_f1: bool, weights: np.ndarray | None, n_threads: int = 1, edges: np.ndarray | None = None
            ) -> tuple[np.ndarray, ...]:
    """The fused pass over the groupings ``rows`` (which have the same samples present): per-slot
    count, positives, u2, loss sums, counts below the cuts, then (when asked for) each grouping's
    best-F1 threshold with the counts at or below it, and ECE with its bin sums. The pass's ranges of samples
    (:func:`_ranges`) share ``n_threads`` threads. ``edges`` (every slot's, in slot order) are the ECE
    bin edges, by default those of the samples' own score ranges."""
    calibration, sweeps = _kernels()[1], _sweeps()
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
    ranges = _ranges(scores) if weights is None else [(0, len(scores))]
    if len(ranges) == 1:
        done = [sweeps.ranked_sums(scores, labels, codes, sizes, loss_terms, cuts, marks, n_bins, 0, len(scores),
                                   weights)]
    else:
        done = on_threads([lambda a=a, b=b: sweeps.ranked_sums(scores, labels, codes, sizes, loss_terms, cuts, marks,
                                                               n_bins, a, b, weights) for a, b in ranges], n_threads)
    count, positives, u2, loss, pos_cut, neg_cut, bin_count, bin_labels, bin_scores = _joined(done)
    found = pos_at = neg_at = ece = None  # not asked for
    if sweep_f1:
        overall = _overall_slots(sizes)
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


def _ranges(scores: np.ndarray) -> list[tuple[int, int]]:
    """Ranges of the sorted order for :func:`_passes`: :data:`SPLIT` of about equal size, each
    bound at the start of a tie block (fewer when one tie block spans a bound); one below
    :data:`SPLIT_FROM` samples."""
    n = len(scores)
    if n < SPLIT_FROM:
        return [(0, n)]
    bounds = sorted({0, n, *(int(scores.searchsorted(scores[n * j // SPLIT], "left")) for j in range(1, SPLIT))})
    return list(zip(bounds[:-1], bounds[1:]))


def _joined(done: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
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


def _overall_slots(sizes: np.ndarray) -> np.ndarray:
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


def optional_sums(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, sizes: np.ndarray, entries: tuple,
                  weights: np.ndarray | None = None, above: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> dict[str, np.ndarray]:
    """Per-slot sums of the registry ``entries`` (``_metric_registry.Sum``), each by the pass it
    names: "slot_sums" adds up the entry's per-sample term (in any order); "precision_sums" walks
    the samples, sorted by score, from the top, starting from ``above`` (each slot's positives and
    negatives scoring above all of these: the partitions above, in a distributed sort; default none).
    Shared by :func:`measure` and the distributed backend (which adds up per-partition sums)."""
    sums: dict[str, np.ndarray] = {}
    for entry in entries:
        if entry.made_by == "slot_sums":
            from ..kernels import calibration

            sums[entry.name] = calibration.slot_sums(term_values(entry, labels, scores), codes, sizes, weights)
        elif entry.made_by == "precision_sums":
            from ..kernels import precision

            if above is None:  # no counts above: empty arrays of the counters' type
                above = (np.empty(0, np.int64 if weights is None else np.float64),) * 2
            sums[entry.name] = precision.precision_sums(scores, labels, codes, sizes, *above, weights)
        else:  # pragma: no cover - a table entry without a maker here
            raise RuntimeError(f"internal error: no pass {entry.made_by!r} for the sum {entry.name!r}")
    return sums


def term_values(entry, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The per-sample values of the sum ``entry``'s term, as float64; a ValueError when the term
    does not give one number per sample."""
    values = np.ascontiguousarray(entry.term(labels, scores), dtype=np.float64)
    if values.shape != scores.shape:
        raise ValueError(f"the term of the sum {entry.name!r} gave an array of shape {values.shape} for "
                         f"{len(scores)} samples; it must return one number per sample (NumPy arithmetic on "
                         "labels and scores)")
    return values


def from_counts(sizes: np.ndarray, count: np.ndarray, positives: np.ndarray, negatives: np.ndarray,
                thresholds: np.ndarray, keys: set[str], u2: np.ndarray | None = None,
                loss_sums: np.ndarray | None = None, ece: np.ndarray | None = None,
                confusion: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                totals: np.ndarray | None = None, extra: dict[str, np.ndarray] | None = None) -> list[Grouping]:
    """Per-slot metrics from the kernels' per-slot sums, split into groupings.

    ``u2`` (twice the Mann-Whitney U) gives AUC, ``loss_sums`` (summed BCE terms) gives BCE over
    ``totals`` (default ``count``), ``ece`` is taken as it is, and ``confusion`` maps a key suffix
    ("" or "@best_f1") to the positives and negatives above that threshold; ``extra`` holds other
    per-slot sums by their registry name ("precision", "squared_error"). Shared by
    :func:`measure` and the distributed evaluation, which adds up per-partition sums.
    """
    totals = count if totals is None else totals
    sums = {"count": count, "positives": positives, "negatives": negatives, "totals": totals}
    if u2 is not None:
        sums["u2"] = u2
    if loss_sums is not None:
        sums["loss"] = loss_sums
    if ece is not None:
        sums["ece"] = ece
    if extra:
        sums.update((name, value) for name, value in extra.items() if value is not None)
    suffixes = {suffix: {"tp": tp, "fp": fp} for suffix, (tp, fp) in confusion.items()} if confusion else {}
    order, ordered = _report_keys(frozenset(keys), frozenset(sums))
    per_slot = _metric_registry.finish(sums, ordered, suffixes)
    order = [key for key in order if key in per_slot]
    if len(sizes) == 1:  # one grouping: its slots are every slot
        return [Grouping(count, positives, negatives, float(thresholds[0]), {key: per_slot[key] for key in order})]
    groupings = []
    start = 0
    for k, size in enumerate(sizes.tolist()):
        window = slice(start, start + size + 1)
        start += size + 1
        values = {key: per_slot[key][window] for key in order}
        groupings.append(Grouping(count[window], positives[window], negatives[window], float(thresholds[k]),
                                  values))
    return groupings


@_metric_registry.derived
@lru_cache(maxsize=256)
def _report_keys(keys: frozenset[str], sums: frozenset[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The keys of ``keys`` whose metric the per-slot ``sums`` (or confusion counts) determine, in
    report order, and as a set."""
    available = {metric.name for metric in _metric_registry.REGISTRY.per_group
                 if metric.at_threshold or all(need in sums for need in metric.sums)}
    order = tuple(key for key in _metric_registry.REGISTRY.key_order if key in keys and key.removesuffix(BEST) in available)
    return order, frozenset(order)



def placement_sums(arranged: Arranged, rows: list[int]) -> dict[int, list[np.ndarray]]:
    """``kernels.delong.placement_sums`` of the groupings ``rows`` over the sorted, unweighted
    ``arranged`` samples: grouping -> its (n_slots, 7) sums over each range of :func:`_ranges`, in
    order (the caller combines them). The groupings without missing codes share one pass and its
    overall slot; each other grouping has a pass of its own. Ranges and passes share the threads."""
    from ..kernels import delong

    scores, labels, codes, sizes = arranged.scores, arranged.labels, arranged.codes, arranged.sizes
    complete = [bool(codes[k].min(initial=0) >= 0) for k in rows]
    whole = [k for k, done in zip(rows, complete) if done]
    parts = ([whole] if whole else []) + [[k] for k, done in zip(rows, complete) if not done]
    ranges = _ranges(scores)

    def one(part: list[int], a: int, b: int) -> np.ndarray:
        first, stop = part[0], part[-1] + 1
        picked = slice(first, stop) if part == list(range(first, stop)) else part
        return delong.placement_sums(scores, labels, codes[picked], sizes[picked], a, b, len(part) > 1 or
                                     part[0] in whole)

    jobs = [(part, a, b) for part in parts for a, b in ranges]
    n_threads = min(_n_threads(len(scores)), len(jobs))
    done = (on_threads([lambda job=job: one(*job) for job in jobs], n_threads) if n_threads > 1
            else [one(*job) for job in jobs])
    out: dict[int, list[np.ndarray]] = {k: [] for k in rows}
    for (part, _, _), sums in zip(jobs, done):
        start = 0
        for k in part:
            out[k].append(sums[start:start + int(sizes[k]) + 1])
            start += int(sizes[k]) + 1
    return out


# ---------------------------------------------------------------------------------------------
# Ranges of a distributed sort (``dask.py``): each range of scores is sorted on its own and read by
# the same fused pass as in memory; the ranges' sums then combine as those of :func:`_ranges` do.
# ---------------------------------------------------------------------------------------------

@dataclass
class RangePlan:
    """What the pass over one range of a distributed sort needs of the others (:func:`range_plan`).
    Ranges are numbered in ascending score order; equal scores never straddle two."""

    sizes: np.ndarray  # int64 (K,), groups per grouping
    thresholds: list[float]  # fixed decision thresholds (prediction score > t): 0.5, and a fixed @best_f1 one
    sweep: bool  # each grouping's best-F1 threshold wanted
    count: np.ndarray  # int64 (R, n_slots): each range's samples per slot
    positives: np.ndarray  # int64 (R, n_slots)
    edges: np.ndarray  # (n_slots, ECE_BINS + 1): the ECE bins of every slot's global score range
    complete: list[bool]  # the groupings that have every sample (they share a pass, as in memory)
    extra: tuple[str, ...]  # the opt-in metric keys (their sums made on the workers)
    analytic: bool  # DeLong placement sums too
    #: the registry entries of the optional sums ``extra`` reads (:func:`sum_entries`): the entries
    #: themselves travel to the workers, which need no registration of their own
    entries: tuple = ()


def range_plan(count: np.ndarray, positives: np.ndarray, low: np.ndarray, high: np.ndarray, sizes: np.ndarray,
               n: int, thresholds: list[float], sweep: bool, extra: tuple[str, ...] = (), analytic: bool = False,
               entries: tuple | None = None) -> RangePlan:
    """The plan of :func:`range_sums` from each range's per-slot ``count`` and ``positives`` (R, n_slots),
    each slot's lowest and highest score over all ranges (NaN for an empty slot) and the number of
    samples ``n``; ``entries``: those of :func:`sum_entries` (default: read from the registry here)."""
    count, positives = np.asarray(count, np.int64), np.asarray(positives, np.int64)
    complete = (count[:, _overall_slots(sizes)].sum(axis=0) == n).tolist()
    entries = sum_entries(tuple(extra)) if entries is None else tuple(entries)
    return RangePlan(sizes, list(thresholds), sweep, count, positives, ece_edges(low, high), complete, tuple(extra),
                     analytic, entries)


def range_summary(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, sizes: np.ndarray
                  ) -> tuple[np.ndarray, ...]:
    """Per slot, the samples, positives, lowest and highest score (NaN where empty) of one sorted range,
    for :func:`range_plan` (where no routing counted them)."""
    count, positives, _, _ = _kernels()[1].score_ranges(scores, labels, codes, sizes)
    low, high = _sweeps().score_ends(scores, codes, sizes)
    return count, positives, low, high


def sum_entries(extra: tuple[str, ...]) -> tuple:
    """The registry entries of the optional sums that the opt-in metric keys ``extra`` read, read on the
    client for :func:`range_plan` (a worker process may not know a metric registered in the client's
    session; it gets the entries themselves)."""
    if not extra:
        return ()
    base = frozenset(key.removesuffix(BEST) for key in extra)
    _metric_registry.check_metrics(base)
    return tuple(_metric_registry.REGISTRY.sum[name] for name in _metric_registry.optional_sums(base))


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _position_above(scores: np.ndarray, threshold: float) -> int:
    """``scores.searchsorted(threshold, "right")`` (the first score above ``threshold``, compared as
    float64) without NumPy's float64 copy of float32 ``scores``: the first score at or above the
    least float32 above ``threshold``."""
    if scores.dtype != np.float32 or not abs(threshold) <= _FLOAT32_MAX:  # NaN, infinities and beyond float32
        return int(scores.searchsorted(threshold, "right"))
    least = np.float32(threshold)
    if float(least) <= threshold:
        least = np.nextafter(least, np.float32(np.inf))
    return int(scores.searchsorted(least, "left"))


def range_sums(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, plan: RangePlan, index: int
               ) -> dict[str, np.ndarray]:
    """The sums of range ``index`` of ``plan`` (its samples sorted by score, as one pass of :func:`_sweep`
    over them would make): counts, U, BCE sums, counts at or below the fixed thresholds, the ECE bin
    sums of the global bins; each grouping's best-F1 candidate in the range (F1 counted with the
    ranges below it) with the counts at or below it; the optional sums (those "add_above" starting
    from the ranges above); DeLong's placement sums with ``plan.analytic``. :func:`from_ranges` joins
    the ranges' sums."""
    sizes = plan.sizes
    arranged = Arranged(scores, labels, codes, sizes, None, True)
    positions = [_position_above(scores, t) for t in plan.thresholds]
    out: dict[str, np.ndarray] = {}
    if plan.sweep:  # candidates of this range, from the counts of the ranges below
        # the complete groupings have the same samples, so one sweep serves them all (as in memory)
        whole = [k for k, done in enumerate(plan.complete) if done][:1]
        rows = whole + [k for k, done in enumerate(plan.complete) if not done]
        which = [0 if done and whole else rows.index(k) for k, done in enumerate(plan.complete)]
        overall = _overall_slots(sizes)[rows]
        pos, neg = plan.positives[:, overall], plan.count[:, overall] - plan.positives[:, overall]
        picked = codes[rows[0]:rows[0] + 1] if len(rows) == 1 else codes[rows]
        found, best = _kernels()[0].best_f1_thresholds(scores, labels, picked, pos.sum(axis=0), neg.sum(axis=0),
                                                       pos[:index].sum(axis=0), neg[:index].sum(axis=0))
        found, best = found[which], best[which]
        known: dict[float, int] = {}  # the complete groupings share their threshold: one search
        for t in found.tolist():
            if t == t and t not in known:
                known[t] = _position_above(scores, t)
        at = [known.get(t, 0) for t in found.tolist()]
        out.update(found=found, best=best)
        positions += at
    cuts = np.array(sorted(set(positions)), np.int64)
    loss_terms = arranged.log_loss_terms()
    parts = [[0]] if len(sizes) == 1 else _parts(plan.complete)
    done = [_passes(arranged, rows, loss_terms, cuts, True, False, None, 1, plan.edges) for rows in parts]
    count, positives, u2, loss, pos_cut, neg_cut, *_, bin_count, bin_labels, bin_scores = _in_slot_order(parts, done,
                                                                                                       sizes)
    fixed = cuts.searchsorted(positions[:len(plan.thresholds)])
    out.update(count=count, positives=positives, u2=u2, loss=loss, pos_fixed=pos_cut[:, fixed],
               neg_fixed=neg_cut[:, fixed], bins=(bin_count, bin_labels, bin_scores))
    if plan.sweep:  # each grouping's slots at its candidate
        column = np.repeat(cuts.searchsorted(at), sizes + 1)
        slots = np.arange(len(count))
        out.update(pos_at=pos_cut[slots, column], neg_at=neg_cut[slots, column])
    out.update(optional_sums(scores, labels, codes, sizes, tuple(e for e in plan.entries if e.combine == "add")))
    later_pos = plan.positives[index + 1:].sum(axis=0)
    later_neg = plan.count[index + 1:].sum(axis=0) - later_pos
    out.update(optional_sums(scores, labels, codes, sizes, tuple(e for e in plan.entries if e.combine == "add_above"),
                             above=(later_pos, later_neg)))
    if plan.analytic:
        from ..kernels import delong

        out["placement"] = delong.placement_sums(scores, labels, codes, sizes, 0, len(scores), False)
    return out


def from_ranges(sums: list[dict[str, np.ndarray]], plan: RangePlan, fixed_best: float | None) -> list[Grouping]:
    """Every grouping's metrics from the :func:`range_sums` of all ranges, in ascending score order: the
    sums joined as :func:`_joined` joins those of consecutive ranges; each grouping's best-F1
    threshold is its best candidate, the lowest range's on ties (the lowest threshold wins, as in
    one sweep)."""
    sizes = plan.sizes
    joined = _joined([(s["count"], s["positives"], s["u2"], s["loss"], s["pos_fixed"], s["neg_fixed"], *s["bins"])
                      for s in sums])
    count, positives, u2, loss, pos_fixed, neg_fixed, bin_count, bin_labels, bin_scores = joined
    negatives = count - positives
    confusion = {"": (positives - pos_fixed[:, 0], negatives - neg_fixed[:, 0])}
    if fixed_best is not None:
        thresholds = np.full(len(sizes), float(fixed_best))
        confusion[BEST] = (positives - pos_fixed[:, 1], negatives - neg_fixed[:, 1])
    else:
        thresholds = np.full(len(sizes), np.nan)
        tp, fp = np.zeros(len(count), count.dtype), np.zeros(len(count), count.dtype)
        starts = np.concatenate(([0], np.cumsum(sizes + 1)))
        for k in range(len(sizes)):
            best, chosen = -math.inf, None
            for p, s in enumerate(sums):
                if s["best"][k] > best:
                    best, chosen = s["best"][k], p
            if chosen is None:
                continue
            window = slice(starts[k], starts[k + 1])
            thresholds[k] = sums[chosen]["found"][k]
            pos_below = plan.positives[:chosen, window].sum(axis=0) + sums[chosen]["pos_at"][window]
            neg_below = plan.count[:chosen, window].sum(axis=0) - plan.positives[:chosen, window].sum(axis=0) \
                + sums[chosen]["neg_at"][window]
            tp[window], fp[window] = positives[window] - pos_below, negatives[window] - neg_below
        confusion[BEST] = (tp, fp)
    names = _metric_registry.optional_sums(frozenset(key.removesuffix(BEST) for key in plan.extra))
    extra = {name: sum(s[name] for s in sums) for name in names}
    return from_counts(sizes, count, positives, negatives, thresholds, {*all_keys(), *plan.extra}, u2=u2,
                       loss_sums=loss, ece=calibration_error(bin_count, bin_labels, bin_scores, 0),
                       confusion=confusion, extra=extra)


# ---------------------------------------------------------------------------------------------
# One-grouping statistics for fairmedfm's legacy functions (``metrics.py``) and the bins of
# backends that count their own (``voxels.py``): the same kernels as :func:`measure`, so that
# their numbers stay bit-identical to evaluate's.
# ---------------------------------------------------------------------------------------------

def best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold of the best F1 over all samples (``ranking.best_f1_thresholds``: the lowest
    among ties, a sample positive at ``score >= threshold``)."""
    ranking = _kernels()[0]
    order, sorted_scores = sort_scores(scores)
    codes = np.zeros((1, len(scores)), np.int8)
    positives = np.array([int(np.count_nonzero(labels))], np.int64)
    negatives = np.array([len(labels)], np.int64) - positives
    return float(ranking.best_f1_thresholds(sorted_scores, labels[order], codes, positives, negatives)[0][0])


def log_loss_sum(scores: np.ndarray, labels: np.ndarray) -> float:
    """The summed BCE terms of all samples (``labels`` may be soft, float64)."""
    calibration = _kernels()[1]
    codes = np.zeros((1, len(scores)), np.int8)
    return float(calibration.slot_sums(calibration.log_loss_terms(scores, labels), codes, np.array([1], np.int64))[0])


def calibration_error_of(scores: np.ndarray, labels: np.ndarray, n_bins: int, variant: int,
                         quantile_edges: np.ndarray | None = None) -> float:
    """ECE of all samples over ``n_bins`` equal-width bins of the scores' range, or over the bins
    of ``quantile_edges`` (the lowest edge included, as ``pandas.qcut``); ``variant`` as in
    :func:`calibration_error`."""
    calibration = _kernels()[1]
    codes = np.zeros((1, len(scores)), np.intp)
    sizes = np.array([1], np.int64)
    if quantile_edges is None:
        _, _, low, high = calibration.score_ranges(scores, np.zeros(len(scores), np.uint8), codes, sizes)
        edges = calibration.equal_width_edges(low, high, int(n_bins))
    else:
        edges = np.tile(quantile_edges, (2, 1))
    bins = calibration.binned_calibration(scores, labels, codes, sizes, edges, quantile_edges is not None)
    return float(calibration.calibration_error(*bins, variant)[0])


def ece_edges(low: np.ndarray, high: np.ndarray, n_bins: int = ECE_BINS) -> np.ndarray:
    """Per slot, the edges of ``n_bins`` equal-width ECE bins over [low, high] (NaN where empty)."""
    return _kernels()[1].equal_width_edges(low, high, n_bins)


def calibration_error(count: np.ndarray, label_sum: np.ndarray, score_sum: np.ndarray, variant: int = 0
                      ) -> np.ndarray:
    """Per slot, the ECE from its bin sums (``variant`` 0 absolute, 1 squared, 2 root of squared
    differences); NaN for an empty slot."""
    return _kernels()[1].calibration_error(count, label_sum, score_sum, variant)
