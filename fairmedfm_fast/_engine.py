"""Classification metrics of every group of every grouping, from clean arrays, with one sort.

The only module that calls the classification kernels. Input: scores (float32/float64), labels
(uint8), one code row per grouping. Output: per-slot metric arrays (see ``kernels/__init__.py``
for the slot layout). Nothing here knows group names or pandas.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Per-group metrics, in report order. Each also exists with the suffix "@best_f1".
METRICS = ("auc", "acc", "bce", "ece", "tpr", "tnr", "tn", "fp", "fn", "tp")
THRESHOLD_METRICS = frozenset(("acc", "tpr", "tnr", "tn", "fp", "fn", "tp"))
BEST = "@best_f1"
ECE_BINS = 10


def all_keys() -> list[str]:
    return [*METRICS, *(name + BEST for name in METRICS)]


@dataclass
class Grouping:
    """Metrics of one grouping: index ``g < n_groups`` is group ``g``, index ``n_groups`` is all of
    the grouping's present samples."""

    count: np.ndarray
    positives: np.ndarray
    threshold: float  # best-F1 threshold over the present samples (NaN when not computed)
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def negatives(self) -> np.ndarray:
        return self.count - self.positives


def _code_dtype(largest: int) -> np.dtype:
    for dtype in (np.int8, np.int16, np.int32):
        if largest < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.intp)


def sort_scores(scores: np.ndarray, ranking) -> tuple[np.ndarray, np.ndarray]:
    """Ascending order of non-negative scores, and the sorted scores.

    Large inputs sort 64-bit words (score bits above, sample index below) with NumPy's integer sort,
    about twice as fast as ``argsort``; ``ranking.finish_packed_sort`` unpacks them.
    """
    n = len(scores)
    if n < 1 << 16 or n >= 1 << 32:
        order = np.argsort(scores)
        return order, scores[order]
    if scores.dtype == np.float32:
        high = scores.view(np.uint32).astype(np.uint64) & np.uint64(0x7FFFFFFF)  # -0.0 sorts as 0.0
    else:
        high = (scores.view(np.uint64) >> np.uint64(32)) & np.uint64(0x7FFFFFFF)
    packed = (high << np.uint64(32)) | np.arange(n, dtype=np.uint64)
    packed.sort()
    return ranking.finish_packed_sort(packed, scores, scores.dtype == np.float32)


def _kernels():
    # Imported on first use, so that `import fairmedfm_fast` does not load numba.
    from .kernels import calibration, ranking

    return ranking, calibration


def compute(scores: np.ndarray, labels: np.ndarray, code_rows: list[np.ndarray], n_groups: list[int],
            wanted: set[str] | None = None, threshold: float = 0.5) -> list[Grouping]:
    """Metrics of every slot of every grouping.

    Parameters
    ----------
    scores : float32 or float64 array of shape (n,), probabilities
    labels : uint8 array of shape (n,), 0 or 1
    code_rows : list of K integer arrays of shape (n,); -1 = not in the grouping
    n_groups : list of K ints
    wanted : set of metric keys (e.g. ``{"auc", "tpr@best_f1"}``); None computes all
    threshold : float, default 0.5
        Decision threshold of the metrics without suffix (prediction ``score > threshold``).
    """
    ranking, calibration = _kernels()
    keys = set(all_keys()) if wanted is None else set(wanted)
    base = {key.removesuffix(BEST) for key in keys}
    need_auc = "auc" in base
    need_bce = "bce" in base
    need_ece = "ece" in base
    at_half = any(key in THRESHOLD_METRICS for key in keys)
    at_best = any(key.endswith(BEST) and key.removesuffix(BEST) in THRESHOLD_METRICS for key in keys)

    sizes = np.asarray(n_groups, dtype=np.int64)
    slot_starts = np.concatenate(([0], np.cumsum(sizes + 1)))
    # Codes travel in the narrowest integer type that holds them: after the sort they are gathered in
    # score order, and int8 rows stay in cache where intp rows would not.
    code_type = _code_dtype(int(sizes.max(initial=1)))
    codes = np.empty((len(code_rows), len(scores)), code_type)
    if need_auc or at_best:  # the one sort, shared by every grouping
        order, scores = sort_scores(scores, ranking)
        labels = labels[order]
        for k, row in enumerate(code_rows):
            np.take(row.astype(code_type, copy=False), order, out=codes[k])
    else:
        scores, labels = np.ascontiguousarray(scores), np.ascontiguousarray(labels)
        for k, row in enumerate(code_rows):
            codes[k] = row
    count, positives, low, high = calibration.score_ranges(scores, labels, codes, sizes)
    negatives = count - positives
    per_slot: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        if need_auc:
            u2 = ranking.rank_statistics(scores, labels, codes, sizes)[2]
            auc = u2 / (2.0 * positives * negatives)
            auc[(positives == 0) | (negatives == 0)] = np.nan
            per_slot["auc"] = auc
        if need_bce:
            per_slot["bce"] = -calibration.log_loss_sums(scores, labels, codes, sizes) / count
        if need_ece:
            edges = calibration.equal_width_edges(low, high, ECE_BINS)
            bins = calibration.binned_calibration(scores, labels, codes, sizes, edges, False)
            per_slot["ece"] = calibration.calibration_error(*bins, 0)
        overall = slot_starts[1:] - 1
        thresholds = np.full(len(sizes), np.nan)
        if at_best:
            thresholds = ranking.best_f1_thresholds(scores, labels, codes, positives[overall],
                                                    negatives[overall])[0]
        columns = [(suffix, t) for suffix, t, needed in (("", threshold, at_half), (BEST, None, at_best)) if needed]
        if columns:
            table = np.empty((len(sizes), len(columns)))
            for j, (_, t) in enumerate(columns):
                table[:, j] = thresholds if t is None else t
            pos_above, neg_above = ranking.confusion_above(scores, labels, codes, sizes, table)
            for j, (suffix, _) in enumerate(columns):
                tp, fp = pos_above[:, j], neg_above[:, j]
                fn, tn = positives - tp, negatives - fp
                per_slot.update({"acc" + suffix: (tp + tn) / count, "tpr" + suffix: tp / positives,
                                 "tnr" + suffix: tn / negatives, "tn" + suffix: tn, "fp" + suffix: fp,
                                 "fn" + suffix: fn, "tp" + suffix: tp})
    for name in ("auc", "bce", "ece"):
        if name in per_slot:
            per_slot[name + BEST] = per_slot[name]
    groupings = []
    for k in range(len(sizes)):
        window = slice(slot_starts[k], slot_starts[k + 1])
        values = {key: per_slot[key][window] for key in all_keys() if key in keys}
        groupings.append(Grouping(count[window], positives[window], float(thresholds[k]), values))
    return groupings
