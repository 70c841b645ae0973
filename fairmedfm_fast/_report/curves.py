"""What the figures draw, from the summaries a report keeps (no matplotlib here): each group's exact
ROC points and reliability bins (:func:`classification_curves`, from the engine's bounded ``Curves``),
and the Dice values per group (:func:`dice_by_group`)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._engine import classification as _engine

MAX_POINTS = _engine.CURVE_POINTS  # ROC points kept per group, at most (besides the corners)


@dataclass
class GroupCurves:
    """What the pictures show of one group (or of all of an attribute's present samples)."""

    name: str
    n: int
    fpr: np.ndarray  # ROC points, thresholds descending, from (0, 0) to (1, 1): points of the exact curve
    tpr: np.ndarray
    thresholds: np.ndarray  # +inf first, then descending scores: a point counts the samples scoring >= its own
    auc: float  # from the rank statistics (exact even when the points are thinned)
    operating_point: tuple[float, float]  # (FPR, TPR) predicting ``score > threshold`` of the attribute
    bin_score: np.ndarray  # mean score of each non-empty ECE bin
    bin_positive: np.ndarray  # fraction positive of each non-empty ECE bin
    bin_weight: np.ndarray  # samples (weight with sample weights) in each non-empty ECE bin
    ece: float

    def trapezoid_area(self) -> float:
        """Area under the ROC points by the trapezoid rule."""
        return float(np.sum(np.diff(self.fpr) * (self.tpr[1:] + self.tpr[:-1]) / 2.0))


@dataclass
class CurveSource:
    """What a report keeps for the curves of one attribute: its names and counts beside the engine's
    :class:`~fairmedfm_fast._engine.Curves` (bounded: no per-sample array)."""

    attribute: str
    groups: list
    counts: list[int]  # samples per group
    n: int  # the attribute's present samples
    threshold: float  # decision threshold of its @best_f1 metrics (NaN when undefined)
    curves: _engine.Curves  # of every attribute of the report (the same object)
    first_slot: int  # this attribute's first slot there: its groups, then all its present samples


@dataclass
class AttributeCurves:
    """Curves of one attribute: its groups with both labels, then all its present samples."""

    attribute: str
    threshold: float  # decision threshold of the attribute's @best_f1 metrics (NaN when undefined)
    groups: list[GroupCurves]  # groups with both labels, in report order
    overall: GroupCurves | None  # all present samples (None without both labels)


def _samples(report, kind: str, name: str):
    data = getattr(report, name, None)
    if data is None:
        if report.task == "cls":
            raise ValueError(f"kind={kind!r} needs the ROC and reliability summaries that fairmedfm_fast.evaluate "
                             "records, and this report keeps none (reports of evaluate_voxels keep no per-voxel "
                             "scores, those of fairmedfm_fast.dask.evaluate no curves); use kind='bars', 'forest' "
                             "or 'pairwise', which need only the tables")
        raise ValueError(f"kind={kind!r} needs the per-image values, and this report keeps none; plot a report "
                         "made by fairmedfm_fast.evaluate_segmentation, or use kind='bars' or 'pairwise', which "
                         "need only the tables")
    return data


def select_names(available: list[str], wanted: str | Sequence[str]) -> list[str]:
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ValueError(f"attributes={wanted!r} names {unknown}, which the report does not have; its "
                         f"attributes are {available}")
    return names


def _select(attributes: list, wanted: str | Sequence[str] | None) -> list[int]:
    """Indices of the wanted attributes (all by default)."""
    if wanted is None:
        return list(range(len(attributes)))
    names = [attribute.name for attribute in attributes]
    return [names.index(name) for name in select_names(names, wanted)]


def classification_curves(report, attributes: str | Sequence[str] | None = None,
                          max_points: int = MAX_POINTS) -> list[AttributeCurves]:
    """ROC points, operating points and ECE bins of every group, from the report's summaries.

    Parameters
    ----------
    report : FairnessReport
        Made by :func:`fairmedfm_fast.evaluate` (or ``FairnessAccumulator.report``), which recorded
        every group's curves while it had the samples sorted.
    attributes : str or list of str, optional
        Attributes to return, by name; all by default.
    max_points : int
        Curves with more points keep this many and both ends, evenly among theirs (0: all); the report
        keeps at most :data:`MAX_POINTS` + 2 anyway. The AUC shown and the operating points are exact
        either way.
    """
    if report.task != "cls":
        raise ValueError(f"ROC and reliability curves need a classification report (task 'cls'); this report "
                         f"is {report.task!r}: use kind='dice' or kind='bars'")
    sources = _samples(report, "roc", "_curves")
    names = [source.attribute for source in sources]
    chosen = list(range(len(sources))) if attributes is None else [names.index(name) for name in
                                                                     select_names(names, attributes)]
    result = []
    for source in (sources[k] for k in chosen):
        first = source.first_slot
        members = [_group_curves(source, first + g, name, int(source.counts[g]), max_points)
                   for g, name in enumerate(source.groups)]
        overall = _group_curves(source, first + len(source.groups), "all", int(source.n), max_points)
        result.append(AttributeCurves(source.attribute, float(source.threshold),
                                      [m for m in members if m is not None], overall))
    return result


def _group_curves(source: CurveSource, slot: int, name: str, n: int, max_points: int) -> GroupCurves | None:
    """The curves of one slot (a group, or all of the attribute's present samples); None without both labels."""
    curves = source.curves
    positives, negatives = curves.positives[slot], curves.negatives[slot]
    if positives <= 0 or negatives <= 0:
        return None
    # Cuts from the last (n: nothing above, point (0, 0)) down to the first (0: everything above, (1, 1)).
    tp = positives - curves.pos_below[slot, ::-1]
    fp = negatives - curves.neg_below[slot, ::-1]
    thresholds = curves.thresholds[::-1]
    keep = np.empty(len(tp), bool)
    keep[:1] = True
    keep[1:] = (tp[1:] != tp[:-1]) | (fp[1:] != fp[:-1])  # cuts with no sample of the slot between them
    if max_points > 0 and np.count_nonzero(keep) > max_points + 2:  # evenly among them, both ends kept
        kept = np.flatnonzero(keep)
        keep[:] = False
        keep[kept[np.linspace(0, len(kept) - 1, max_points + 2).round().astype(np.intp)]] = True
    tp, fp, thresholds = tp[keep], fp[keep], thresholds[keep]
    auc = float(curves.u2[slot] / (2.0 * positives * negatives))
    point = (math.nan, math.nan)
    if not math.isnan(source.threshold) and curves.above_best is not None:  # predicted positive: score > it
        point = (float(curves.above_best[0][slot] / negatives), float(curves.above_best[1][slot] / positives))
    bin_score = bin_positive = size = np.empty(0)
    ece = math.nan
    if curves.bins is not None:
        count, label_sum, score_sum = (b[slot] for b in curves.bins)
        filled = count > 0
        size = count[filled].astype(np.float64)
        bin_score, bin_positive = score_sum[filled] / size, label_sum[filled] / size
        ece = float(curves.ece[slot])
    return GroupCurves(name, n, fp / negatives, tp / positives, thresholds.copy(), auc, point, bin_score,
                       bin_positive, size, ece)


def dice_by_group(report, attributes: str | Sequence[str] | None = None,
                  metric: str = "dice") -> list[tuple[str, list[tuple[str, np.ndarray]]]]:
    """Per attribute, the Dice scores (or another metric's per-sample values, with
    ``evaluate_segmentation(metrics=...)``) of each group that has any, in report order."""
    if report.task != "seg":
        raise ValueError(f"kind='dice' needs a segmentation report (task 'seg'); this report is {report.task!r}: "
                         "use kind='roc', 'reliability' or 'bars'")
    dice, all_attributes = _samples(report, "dice", "_dice_data")
    if metric != "dice":
        dice = report._metric_data[metric]
    dice = np.asarray(dice, dtype=np.float64)
    result = []
    for attribute in (all_attributes[k] for k in _select(all_attributes, attributes)):
        keep = (attribute.codes >= 0) & ~np.isnan(dice)
        codes = attribute.codes[keep]
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=attribute.n_groups)
        pieces = np.split(dice[keep][order], np.cumsum(counts)[:-1])
        result.append((attribute.name, [(attribute.groups[g], pieces[g]) for g in range(attribute.n_groups)
                                        if counts[g] > 0]))
    return result


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

