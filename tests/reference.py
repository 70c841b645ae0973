"""Slow, obviously-correct reference implementations of the classification metrics.

Each function here follows the definition literally, with Python loops over samples, so that it can be
checked by reading it. The kernels and the public API are tested against these functions and against
the oracle (fairmedfm 0.4.2); the functions themselves are tested against the oracle and scikit-learn
in ``test_kernels.py``. Keep the inputs small (a few hundred samples): most of these are O(n^2).

Definitions (see ``/work/shared/SEMANTICS.md``):

- AUC: the Mann-Whitney U statistic over all (positive, negative) pairs, a tie counting 1/2.
- Best-F1 threshold: over the distinct scores ``t`` in increasing order, predicted positive means
  ``score >= t``, ``F1 = 2 * precision * recall / (precision + recall + 1e-8)``; the first (lowest)
  threshold with the maximum F1 wins.
- Predictions at a threshold are ``score > threshold`` (strict).
- ECE: ``pandas.cut(scores, n_bins)`` bins, i.e. edges ``numpy.linspace(min, max, n_bins + 1)`` with
  the first edge lowered by 0.1% of the range (or, when ``min == max``, both ends moved by 0.1% of
  their magnitude, 0.001 at zero), right-closed bins ``(a, b]``; the sample-weighted mean over
  non-empty bins of ``|mean score - fraction positive|`` (or its square, or the root of the squared
  mean).
- BCE: ``-mean(y * max(log p, -100) + (1 - y) * max(log(1 - p), -100))``.
"""
from __future__ import annotations

import math

import numpy as np

METRICS = ("auc", "acc", "bce", "ece", "tpr", "tnr", "tn", "fp", "fn", "tp")


def _as_lists(scores, labels):
    scores = [float(s) for s in np.asarray(scores).ravel()]
    labels = [int(v) for v in np.asarray(labels).ravel()]
    assert len(scores) == len(labels)
    return scores, labels


def pairwise_u2(scores, labels) -> int:
    """Twice the Mann-Whitney U: over all (positive, negative) pairs, 2 if the positive scores higher, 1 if tied."""
    scores, labels = _as_lists(scores, labels)
    u2 = 0
    for sp, yp in zip(scores, labels, strict=True):
        if yp != 1:
            continue
        for sn, yn in zip(scores, labels, strict=True):
            if yn != 0:
                continue
            if sp > sn:
                u2 += 2
            elif sp == sn:
                u2 += 1
    return u2


def pairwise_auc(scores, labels) -> float:
    """ROC AUC as the fraction of correctly ordered (positive, negative) pairs, ties 1/2; NaN with one label."""
    _, labels_list = _as_lists(scores, labels)
    n_pos = sum(labels_list)
    n_neg = len(labels_list) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    return pairwise_u2(scores, labels) / (2 * n_pos * n_neg)


def f1_score(tp: int, fp: int, n_pos: int) -> float:
    """F1 from counts in the oracle's order of operations (scikit-learn's precision/recall conventions)."""
    precision = tp / (tp + fp) if tp + fp != 0 else 0.0
    recall = tp / n_pos if n_pos != 0 else 1.0
    return 2 * precision * recall / (precision + recall + 1e-8)


def best_f1_threshold(scores, labels) -> tuple[float, float]:
    """Brute-force sweep over every distinct score: (lowest threshold with the highest F1, that F1)."""
    scores, labels = _as_lists(scores, labels)
    n_pos = sum(labels)
    best_threshold, best_f1 = math.nan, -math.inf
    for t in sorted(set(scores)):
        tp = sum(1 for s, y in zip(scores, labels, strict=True) if s >= t and y == 1)
        fp = sum(1 for s, y in zip(scores, labels, strict=True) if s >= t and y == 0)
        f1 = f1_score(tp, fp, n_pos)
        if f1 > best_f1:  # strict: the first (lowest) threshold among equal F1 wins
            best_threshold, best_f1 = t, f1
    return best_threshold, best_f1


def confusion_counts(scores, labels, threshold: float) -> tuple[int, int, int, int]:
    """(tn, fp, fn, tp) with the prediction ``score > threshold``."""
    scores, labels = _as_lists(scores, labels)
    tn = fp = fn = tp = 0
    for s, y in zip(scores, labels, strict=True):
        predicted = s > threshold
        if y == 1 and predicted:
            tp += 1
        elif y == 1:
            fn += 1
        elif predicted:
            fp += 1
        else:
            tn += 1
    return tn, fp, fn, tp


def equal_width_edges(scores, n_bins: int = 10) -> np.ndarray:
    """The bin edges of ``pandas.cut(scores, n_bins)``: numpy.linspace plus pandas' adjustment."""
    values = np.asarray(scores, dtype=np.float64).ravel()
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        lo -= 0.001 * abs(lo) if lo != 0 else 0.001
        hi += 0.001 * abs(hi) if hi != 0 else 0.001
        return np.linspace(lo, hi, n_bins + 1)
    edges = np.linspace(lo, hi, n_bins + 1)
    edges[0] -= (hi - lo) * 0.001
    return edges


def quantile_edges(scores, n_bins: int = 10) -> np.ndarray:
    """The bin edges of ``pandas.qcut(scores, n_bins)`` (raises ValueError on duplicate edges, as pandas does)."""
    import pandas as pd

    _, edges = pd.qcut(np.asarray(scores, dtype=np.float64).ravel(), n_bins, retbins=True, labels=False)
    return np.asarray(edges, dtype=np.float64)


def bin_index(score: float, edges, include_lowest: bool = False) -> int:
    """Index ``b`` of the right-closed bin ``(edges[b], edges[b + 1]]`` holding ``score``; -1 if none."""
    if include_lowest and score == edges[0]:
        return 0
    for b in range(len(edges) - 1):
        if edges[b] < score <= edges[b + 1]:
            return b
    return -1


def calibration_error(scores, labels, n_bins: int = 10, variant: str = "abs", quantile: bool = False,
                      edges=None) -> float:
    """Loop-binned ECE (``variant`` "abs", "squared" or "rmse"); ``edges`` overrides the binning."""
    scores, labels = _as_lists(scores, labels)
    if not scores:
        return math.nan
    if edges is None:
        edges = quantile_edges(scores, n_bins) if quantile else equal_width_edges(scores, n_bins)
    members: dict[int, list[int]] = {}
    for i, s in enumerate(scores):
        b = bin_index(s, edges, include_lowest=quantile)
        if b >= 0:
            members.setdefault(b, []).append(i)
    weighted, total = 0.0, 0
    for b in sorted(members):
        rows = members[b]
        mean_score = sum(scores[i] for i in rows) / len(rows)
        positive_rate = sum(labels[i] for i in rows) / len(rows)
        difference = mean_score - positive_rate
        error = abs(difference) if variant == "abs" else difference * difference
        weighted += len(rows) * error
        total += len(rows)
    value = weighted / total
    return math.sqrt(value) if variant == "rmse" else value


def binary_cross_entropy(scores, labels) -> float:
    """Mean negative log-likelihood with each log clamped below at -100 (``torch.nn.BCELoss``)."""
    scores, labels = _as_lists(scores, labels)
    total = 0.0
    for p, y in zip(scores, labels, strict=True):
        log_p = math.log(p) if p > 0 else -math.inf
        log_not_p = math.log(1 - p) if p < 1 else -math.inf
        total += y * max(log_p, -100.0) + (1 - y) * max(log_not_p, -100.0)
    return -total / len(scores)


def group_report(scores, labels, threshold: float = 0.5) -> dict:
    """The ten per-group metrics of the oracle's ``binary_classification_report`` at ``threshold``."""
    tn, fp, fn, tp = confusion_counts(scores, labels, threshold)
    n = tn + fp + fn + tp
    return {
        "auc": pairwise_auc(scores, labels),
        "acc": (tp + tn) / n,
        "bce": binary_cross_entropy(scores, labels),
        "ece": calibration_error(scores, labels),
        "tpr": tp / (tp + fn) if tp + fn else math.nan,
        "tnr": tn / (tn + fp) if tn + fp else math.nan,
        "tn": tn, "fp": fp, "fn": fn, "tp": tp,
    }


# ---------------------------------------------------------------------------------------------
# Surface distances (docs/segmentation-distances.md), by brute force over all pairs of surface voxels
# ---------------------------------------------------------------------------------------------

def surface_voxels(mask) -> np.ndarray:
    """Foreground voxels with a face neighbour that is background or outside the array."""
    mask = np.asarray(mask, bool)
    padded = np.pad(mask, 1, constant_values=False)
    inner = np.ones_like(mask)
    for axis in range(mask.ndim):
        for step in (-1, 1):
            inner &= np.roll(padded, step, axis=axis)[tuple(slice(1, -1) for _ in range(mask.ndim))]
    return mask & ~inner


def directed_surface_distances(a, b, spacing) -> np.ndarray:
    """For every surface voxel of ``a`` (C order), the distance to the nearest surface voxel of ``b``."""
    pa = np.argwhere(surface_voxels(a)) * np.asarray(spacing, float)
    pb = np.argwhere(surface_voxels(b)) * np.asarray(spacing, float)
    return np.sqrt(((pa[:, None, :] - pb[None, :, :]) ** 2).sum(axis=2)).min(axis=1)


def monai_hausdorff(a, b, spacing, percentile=95.0) -> float:
    """MONAI ``compute_hausdorff_distance(percentile=p)``: the larger of the two directed percentiles."""
    return max(float(np.percentile(directed_surface_distances(a, b, spacing), percentile)),
               float(np.percentile(directed_surface_distances(b, a, spacing), percentile)))


def pooled_hausdorff(a, b, spacing, percentile=95.0) -> float:
    """medpy ``hd95`` (any percentile): the percentile of both directions' distances together."""
    both = np.concatenate([directed_surface_distances(a, b, spacing), directed_surface_distances(b, a, spacing)])
    return float(np.percentile(both, percentile))


def average_symmetric_surface_distance(a, b, spacing) -> float:
    """medpy ``assd`` and MONAI ``compute_average_surface_distance(symmetric=True)``."""
    return float(np.concatenate([directed_surface_distances(a, b, spacing),
                                 directed_surface_distances(b, a, spacing)]).mean())


def surface_dice(a, b, spacing, tolerance) -> float:
    """MONAI ``compute_surface_dice`` (Nikolov et al.'s NSD on surface voxels): the fraction of both
    surfaces' voxels within ``tolerance`` of the other surface; 0 when one mask is empty, NaN when both are."""
    sa, sb = surface_voxels(a), surface_voxels(b)
    if not sa.any() and not sb.any():
        return math.nan
    if not sa.any() or not sb.any():
        return 0.0
    d_ab, d_ba = directed_surface_distances(a, b, spacing), directed_surface_distances(b, a, spacing)
    return float(((d_ab <= tolerance).sum() + (d_ba <= tolerance).sum()) / (len(d_ab) + len(d_ba)))


def average_precision(scores, labels, weights=None) -> float:
    """Average precision by its definition: over the distinct scores t, from the highest down, the
    recall gained at t times the precision of predicting ``score >= t`` (NaN without positives)."""
    scores = [float(s) for s in scores]
    labels = [int(v) for v in labels]
    weights = [1.0] * len(scores) if weights is None else [float(w) for w in weights]
    total = sum(w for w, y in zip(weights, labels) if y == 1)
    if total == 0:
        return math.nan
    ap = 0.0
    for t in sorted(set(s for s, w in zip(scores, weights) if w != 0), reverse=True):
        tp = sum(w for s, y, w in zip(scores, labels, weights) if s >= t and y == 1)
        fp = sum(w for s, y, w in zip(scores, labels, weights) if s >= t and y == 0)
        gained = sum(w for s, y, w in zip(scores, labels, weights) if s == t and y == 1)
        ap += gained / total * (tp / (tp + fp))
    return ap


def delong_variance(scores, labels) -> float:
    """DeLong, DeLong and Clarke-Pearson (1988): the variance of the AUC from the placement values,
    with the kernel ``psi(x, y) = 1 if x > y, 1/2 if x == y, 0 otherwise`` over every (positive,
    negative) pair, in exact fractions. For positive ``i``, ``V10_i`` = mean over negatives ``j`` of
    ``psi(x_i, y_j)``; for negative ``j``, ``V01_j`` = mean over positives of the same; ``S10`` and
    ``S01`` are their sample variances (divisor ``m - 1``, ``n - 1``) and the variance is
    ``S10 / m + S01 / n``. NaN with fewer than two positives or two negatives."""
    from fractions import Fraction

    scores, labels = _as_lists(scores, labels)
    positives = [s for s, y in zip(scores, labels) if y == 1]
    negatives = [s for s, y in zip(scores, labels) if y == 0]
    m, n = len(positives), len(negatives)
    if m < 2 or n < 2:
        return math.nan

    def psi(x, y):
        return Fraction(1) if x > y else Fraction(1, 2) if x == y else Fraction(0)

    v10 = [sum(psi(x, y) for y in negatives) / n for x in positives]
    v01 = [sum(psi(x, y) for x in positives) / m for y in negatives]
    auc = sum(v10) / m
    s10 = sum((v - auc) ** 2 for v in v10) / (m - 1)
    s01 = sum((v - auc) ** 2 for v in v01) / (n - 1)
    return float(s10 / m + s01 / n)


def wilson_interval(successes: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's (1927) score interval in its textbook closed form:
    ``(2 n p + z^2 -+ z sqrt(z^2 + 4 n p (1 - p))) / (2 (n + z^2))``."""
    p = successes / n
    root = z * math.sqrt(z * z + 4 * n * p * (1 - p))
    return (2 * n * p + z * z - root) / (2 * (n + z * z)), (2 * n * p + z * z + root) / (2 * (n + z * z))


def newcombe_interval(x1: int, n1: int, x2: int, n2: int, z: float) -> tuple[float, float]:
    """Newcombe (1998), method 10: the hybrid score interval of ``p1 - p2`` from the two Wilson
    intervals ``(l1, u1)``, ``(l2, u2)``: ``d - sqrt((p1 - l1)^2 + (u2 - p2)^2)`` to
    ``d + sqrt((u1 - p1)^2 + (p2 - l2)^2)``."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(x1, n1, z)
    l2, u2 = wilson_interval(x2, n2, z)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
