"""Lower-level metric functions with the signatures of ``fairmedfm.metrics`` 0.4.2.

These take plain arrays (probabilities in [0, 1], 0/1 labels, group values) as the FairMedFM
training code passes them. :func:`fairmedfm_fast.evaluate` is the friendlier entry point.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._backends.assess import summarize
from ._engine import classification as _engine
from ._engine import one_grouping as _one_grouping
from ._inputs import arrays as _inputs

__all__ = [
    "classification_fairness",
    "segmentation_fairness",
    "binary_classification_report",
    "expected_calibration_error",
    "binary_cross_entropy",
    "find_threshold",
    "evaluate_binary",
    "organize_results",
    "evaluate_seg",
]

_VARIANTS = {"abs": 0, "squared": 1, "rmse": 2}


def _floats(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric, got dtype {array.dtype}") from None
    if array.dtype != np.float32:
        array = array.astype(np.float64, copy=False)
    return np.ascontiguousarray(array.ravel())


def _binary(values: Any, name: str) -> np.ndarray:
    array = np.asarray(values).ravel()
    if array.dtype.kind == "b":
        return array.astype(np.uint8)
    if array.dtype.kind in "iuf" and bool(np.all((array == 0) | (array == 1))):
        return array.astype(np.uint8)
    shown = np.unique(array[:1000])[:6].tolist() if array.dtype.kind != "O" else list(array[:6])
    raise ValueError(f"{name} must contain only 0 and 1 (or booleans), got values such as {shown}")


def _same_length(prob: np.ndarray, label: np.ndarray) -> None:
    if len(prob) != len(label):
        raise ValueError(f"prob has {len(prob)} values but label has {len(label)}; pass one per sample")
    if len(prob) == 0:
        raise ValueError("prob and label are empty: pass at least one sample")


def _single_grouping(n: int) -> tuple[list[np.ndarray], list[int]]:
    return [np.zeros(n, np.intp)], [1]


def find_threshold(prob: Any, label: Any) -> float:
    """Decision threshold with the highest F1 on these samples; the lowest one among ties.

    Candidate thresholds are the distinct scores, a sample counting as positive at ``score >=
    threshold`` (scikit-learn's ``precision_recall_curve``); F1 is ``2PR / (P + R + 1e-8)``.
    """
    scores = _floats(prob, "prob")
    labels = _binary(label, "label")
    _same_length(scores, labels)
    if np.isnan(scores).any():
        raise ValueError("prob has missing values (NaN or null); drop or fix those samples")
    return _one_grouping.best_f1_threshold(scores, labels)


def binary_cross_entropy(prob: Any, label: Any) -> float:
    """Mean binary cross-entropy, each log clamped below at -100 (as ``torch.nn.BCELoss``).

    ``label`` may hold soft labels in [0, 1].
    """
    scores = _floats(prob, "prob")
    labels = np.ascontiguousarray(np.asarray(label, dtype=np.float64).ravel())
    _same_length(scores, labels)
    return _one_grouping.log_loss_sum(scores, labels) / len(scores)


def _quantile_edges(scores: np.ndarray, num_bins: int) -> np.ndarray:
    import pandas as pd

    edges = pd.Series(scores.astype(np.float64, copy=False)).quantile(np.linspace(0, 1, num_bins + 1)).to_numpy()
    if len(np.unique(edges)) < len(edges) and len(edges) > 2:  # pandas.qcut allows a single degenerate bin
        raise ValueError(f"quantile_bins=True: the scores have too many ties for {num_bins} distinct quantile "
                         f"bins (edges {np.unique(edges).tolist()[:6]}...); use fewer bins or equal-width bins")
    return edges


def expected_calibration_error(prob: Any, label: Any, num_bins: int = 10, metric_variant: str = "abs",
                               quantile_bins: bool = False) -> float:
    """Expected calibration error: over bins of ``prob``, the sample-weighted mean of
    ``|mean prob - fraction positive|``.

    Parameters
    ----------
    prob : array-like of shape (n_samples,)
    label : array-like of shape (n_samples,), 0/1 (soft labels are averaged as given)
    num_bins : int, default 10
        Equal-width bins over the range of ``prob`` (``pandas.cut``), or equal-count bins with
        ``quantile_bins=True`` (``pandas.qcut``, which fails on tied bin edges).
    metric_variant : {"abs", "squared", "rmse"}
        Absolute differences, squared differences, or the square root of the latter.
    quantile_bins : bool, default False
    """
    if metric_variant not in _VARIANTS:
        raise ValueError(f"metric_variant={metric_variant!r} is not one of 'abs', 'squared', 'rmse'")
    if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) or num_bins < 1:
        raise ValueError(f"num_bins must be a positive integer, got {_inputs.shown(num_bins)}")
    scores = _floats(prob, "prob")
    labels = np.ascontiguousarray(np.asarray(label, dtype=np.float64).ravel())
    _same_length(scores, labels)
    if np.isnan(scores).any():
        raise ValueError("prob has missing values (NaN or null); drop or fix those samples")
    if np.isinf(scores).any():
        raise ValueError("prob contains infinite values; equal-width bins need a finite range")
    edges = _quantile_edges(scores, int(num_bins)) if quantile_bins else None
    return _one_grouping.calibration_error_of(scores, labels, int(num_bins), _VARIANTS[metric_variant], edges)


def _report_values(grouping: _engine.Grouping, index: int, suffix: str, keys: Sequence[str]) -> dict[str, Any]:
    out = {}
    for key in keys:
        value = grouping.values[key][index]
        out[key.removesuffix(_engine.BEST) + suffix if suffix else key] = (
            int(value) if isinstance(value, np.integer) else float(value))
    return out


def binary_classification_report(prob: Any, label: Any, threshold: float = 0.5, suffix: str = "") -> dict[str, float]:
    """AUC, accuracy, BCE, ECE, TPR, TNR and confusion counts at one decision threshold.

    Predictions are ``prob > threshold``. Keys are the metric names followed by ``suffix``.
    """
    scores = _floats(prob, "prob")
    labels = _binary(label, "label")
    _same_length(scores, labels)
    if np.isnan(scores).any():
        raise ValueError("prob has missing values (NaN or null); drop or fix those samples")
    positives = int(np.count_nonzero(labels))
    if positives in (0, len(labels)):
        raise ValueError("label holds only one class; AUC needs positive and negative samples")
    codes, sizes = _single_grouping(len(scores))
    grouping = _engine.compute(scores, labels, codes, sizes, set(_engine.METRICS), float(threshold))[0]
    return {f"{name}{suffix}": value for name, value in _report_values(grouping, 1, "", _engine.METRICS).items()}


def _legacy_inputs(prob: Any, label: Any, group: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]]:
    """Validation of the strict legacy interface: 0/1 labels, probabilities, every group with both
    labels, at least two groups. Groups are coded in sorted order of their values."""
    import pandas as pd

    # tensors of any float dtype too (bfloat16, which NumPy lacks, through _inputs.to_numpy)
    scores = np.asarray(prob if isinstance(prob, (list, tuple)) else _inputs.to_numpy(prob, "prob"), dtype=np.float64)
    labels_raw = np.asarray(label)
    groups_raw = np.asarray(group)
    if not (len(scores) == len(labels_raw) == len(groups_raw)):
        raise ValueError(f"prob, label and group need one value per sample; got lengths {len(scores)}, "
                         f"{len(labels_raw)} and {len(groups_raw)}")
    if scores.ndim != 1:
        raise ValueError(f"prob must be one positive-class probability per sample, got shape {scores.shape}")
    labels = _binary(labels_raw, "label")
    if np.isnan(scores).any() or (scores < 0).any() or (scores > 1).any():
        raise ValueError("prob must hold probabilities within [0, 1] (no NaN); apply a sigmoid to logits first")
    raw_codes, uniques = pd.factorize(groups_raw.ravel(), use_na_sentinel=True)
    if (raw_codes < 0).any():
        raise ValueError("group contains missing values; drop those samples or use fairmedfm_fast.evaluate, "
                         "which leaves them out")
    order = np.argsort(np.asarray(uniques), kind="stable")
    rank = np.empty(len(order), np.intp)
    rank[order] = np.arange(len(order))
    codes = rank[raw_codes]
    values = [np.asarray(uniques)[i] for i in order]
    positives = np.bincount(codes, weights=labels, minlength=len(values))
    counts = np.bincount(codes, minlength=len(values))
    for i, value in enumerate(values):
        if positives[i] == 0 or positives[i] == counts[i]:
            raise ValueError(f"group {_inputs.shown(value)} has only label {1 if positives[i] else 0}; every group needs "
                             "positive and negative samples (fairmedfm_fast.evaluate skips such groups instead)")
    if len(values) < 2:
        raise ValueError("group has a single value; fairness compares at least two groups")
    return scores, labels, codes, values


def _legacy_reports(prob: Any, label: Any, group: Any):
    scores, labels, codes, values = _legacy_inputs(prob, label, group)
    n = len(scores)
    groupings = _engine.compute(scores, labels, [codes, np.zeros(n, np.intp)], [len(values), 1])
    by_group, everything = groupings
    keys = _engine.all_keys()
    overall = _report_values(everything, 1, "", keys)
    reports = [_report_values(by_group, i, "", keys) for i in range(len(values))]
    return overall, reports, values, by_group.count


def evaluate_binary(pred: Any, Y: Any, A: Any) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Overall metrics and per-group metric lists (groups in sorted order of their values), at 0.5
    and at the best overall F1 threshold (``@best_f1`` keys)."""
    overall, reports, _, _ = _legacy_reports(pred, Y, A)
    return overall, {key: [report[key] for report in reports] for key in reports[0]}


def organize_results(overall_metrics: Mapping[str, float], subgroup_metrics: Mapping[str, Sequence[float]]
                     ) -> dict[str, float]:
    """The FairMedFM summary (gaps, ``eod``, ``eo``, overall values) from :func:`evaluate_binary`'s output."""
    return summarize(overall_metrics, subgroup_metrics)


def _deprecated(name: str, replacement: str) -> None:
    # The advice names fairmedfm's function as fairmedfm's own warning does (code that checks or
    # filters that warning by its text keeps working), then this package's name for it.
    warnings.warn(f"fairmedfm_fast.{name} is deprecated (as in fairmedfm 0.4.1) and will be removed in 1.0; "
                  f"use fairmedfm.{replacement} (fairmedfm_fast.{replacement} here)", FutureWarning, stacklevel=3)


def classification_fairness(prob: Any, label: Any, group: Sequence[Any]) -> dict[str, Any]:
    """Fairness of a binary classifier across the groups of one attribute (deprecated).

    Use :func:`fairmedfm_fast.evaluate`, which takes more input forms and skips groups it cannot
    evaluate instead of failing, or a one-number function such as :func:`fairmedfm_fast.auc_gap`.

    Returns
    -------
    dict
        ``summary`` (FairMedFM metrics), ``overall`` (all samples, at 0.5 and ``@best_f1``) and
        ``groups`` (per group value as a string: ``n`` and the metrics).
    """
    _deprecated("classification_fairness", "evaluate(label, prob, group)")
    overall, reports, values, counts = _legacy_reports(prob, label, group)
    subgroup = {key: [report[key] for report in reports] for key in reports[0]}
    return {"summary": summarize(overall, subgroup), "overall": overall,
            "groups": {str(value): {"n": int(counts[i]), **reports[i]} for i, value in enumerate(values)}}


def segmentation_fairness(dice: Any, group: Sequence[Any]) -> dict[str, Any]:
    """Fairness of a segmentation model from per-sample Dice (deprecated); see
    :func:`fairmedfm_fast.evaluate_segmentation`."""
    from .segmentation import segmentation_fairness as implementation

    return implementation(dice, group)


def evaluate_seg(dsc_list: Any, sensitive_list: Sequence[Any]) -> dict[str, Any]:
    """Segmentation fairness summary as the FairMedFM trainers log it."""
    from .segmentation import evaluate_seg as implementation

    return implementation(dsc_list, sensitive_list)
