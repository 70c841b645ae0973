"""Fairness of segmentation models: :func:`evaluate_segmentation`, the one-number Dice metrics,
per-sample and per-label Dice from masks, and the legacy ``fairmedfm.metrics`` functions.

Dice comes either as one score per sample or from masks (:mod:`fairmedfm_fast._masks` reads them
and the kernels count voxels). The summary per attribute follows FairMedFM: ``mean_dice`` over the
samples, ``min_dice`` and ``max_dice`` over the group means, ``delta_dice = max - min``,
``skewness_dice = (1 - min) / (1 - max)``, ``std_dice`` (population standard deviation of the group
means) and ``es_dice = mean_dice / (1 + std_dice)``. Group means come from one ``bincount`` over
integer group codes.
"""
from __future__ import annotations

import math
import sys
import warnings as _warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _inputs
from .report import FairnessReport, group_frame, summary_frame

__all__ = [
    "evaluate_segmentation", "dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice",
    "dice_per_label", "dice_scores", "segmentation_fairness", "evaluate_seg",
]

_SUMMARY = ("mean_dice", "min_dice", "max_dice", "delta_dice", "skewness_dice", "std_dice", "es_dice")


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    package = __name__.rpartition(".")[0]
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_globals.get("__name__", "") + ".").startswith(package + "."):
        frame, level = frame.f_back, level + 1
    return level


def _preview(values: np.ndarray, limit: int = 6) -> str:
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _warn(message: str, category: type[Warning] = UserWarning) -> None:
    _warnings.warn(message, category, stacklevel=_caller_stacklevel())


# ---------------------------------------------------------------------------------------------
# Per-sample and per-label Dice
# ---------------------------------------------------------------------------------------------

def dice_scores(pred_masks: Any, true_masks: Any, *, label: Any = None, mask_threshold: float = 0.5,
                empty_score: float = 1.0, n_jobs: int | None = None) -> np.ndarray:
    """Dice of every (predicted, ground-truth) pair of masks: the scores that
    :func:`evaluate_segmentation` computes from masks (an extension; fairmedfm has no such function).

    Parameters
    ----------
    pred_masks, true_masks : one mask per sample
        A list of arrays or tensors (shapes may differ between samples), an array of shape
        (n_samples, ...), or file paths (list, array or pandas Series): ``.npy`` (memory-mapped),
        ``.npz``, ``.png``, ``.jpg``, ``.jpeg``, ``.bmp``, ``.gif``, ``.tif``, ``.tiff`` (first
        channel of colour images), ``.nii``, ``.nii.gz``; images and NIfTI need
        ``pip install "fairmedfm_fast[io]"``. Axes of length 1 are dropped before shapes are compared.
    label : scalar, optional
        Foreground is ``mask == label`` (one class of multi-class masks). By default booleans are
        taken as they are, a float prediction with all values in [0, 1] is thresholded at
        ``mask_threshold`` (``>=``) and anything else is foreground where ``> 0``. Ground-truth
        masks are never thresholded as probabilities.
    mask_threshold : float, default 0.5
    empty_score : float, default 1.0
        Dice when both masks of a sample are empty.
    n_jobs : int, optional
        Threads for reading files and counting voxels; default ``$FAIRMEDFM_FAST_N_JOBS``, else all
        cores. ``-1`` is all cores.

    Returns
    -------
    ndarray of shape (n_samples,), float64
    """
    from . import _masks

    return _masks.dice_scores(pred_masks, true_masks, label=label, mask_threshold=mask_threshold,
                              empty_score=empty_score, n_jobs=n_jobs)


def dice_per_label(pred: Any, true: Any, labels: Any = None) -> dict[Any, float]:
    """Dice of every label of one pair of label maps, from a single pass (an extension).

    fairmedfm evaluates one ``label`` per call; this counts, in one pass over the two maps, the
    voxels of each label in the prediction, in the truth and in both (the diagonal of the
    label-pair histogram), for integer and boolean maps. Float maps take one pass per label.

    Parameters
    ----------
    pred, true : array-like or file path
        Two label maps of the same shape (after dropping axes of length 1), as arrays, tensors or
        mask files (see :func:`dice_scores`).
    labels : sequence, optional
        The labels to report. By default every value that occurs in either map except 0
        (background) and NaN, in increasing order.

    Returns
    -------
    dict
        Label -> Dice, with ``dice_per_label(p, t)[k]`` equal to the Dice that
        :func:`evaluate_segmentation` computes with ``label=k``. A requested label that occurs in
        neither map gets 1.0 (as ``empty_score=1.0`` there).
    """
    from . import _masks

    return _masks.dice_per_label(pred, true, labels)


# ---------------------------------------------------------------------------------------------
# Assessment
# ---------------------------------------------------------------------------------------------

def _group_summary(d: np.ndarray, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample count and mean Dice of every group (NaN for an empty one), from one bincount."""
    counts = np.bincount(codes, minlength=n_groups)
    sums = np.bincount(codes, weights=d, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return counts, means


def _summary(mean_dice: float, means: np.ndarray) -> dict[str, float]:
    """The FairMedFM summary columns from the overall mean and the group means."""
    low, high = float(np.min(means)), float(np.max(means))
    std = float(np.std(means))
    with np.errstate(divide="ignore", invalid="ignore"):
        skewness = float(np.divide(1 - low, 1 - high))
    return {"mean_dice": mean_dice, "min_dice": low, "max_dice": high, "delta_dice": high - low,
            "skewness_dice": skewness, "std_dice": std, "es_dice": mean_dice / (1 + std)}


@dataclass
class _Assessment:
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skewness_notes: set[int] = field(default_factory=set)  # indices into warnings


def _scores(dice: Any, pred_masks: Any, true_masks: Any, label: Any, mask_threshold: Any,
            empty_score: Any, notes: list[str] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    if dice is not None:
        values = _inputs.to_numpy(dice, "dice")
        try:
            return values.astype(np.float64).ravel(), {}
        except (TypeError, ValueError):
            raise ValueError(f"dice must hold numbers in [0, 1], got dtype {values.dtype} with values "
                             f"{_preview(values.ravel())}") from None
    if pred_masks is not None and true_masks is not None:
        from . import _masks

        _masks.check_empty_score(empty_score)
        counts = _masks.overlap_counts(pred_masks, true_masks, label=label, mask_threshold=mask_threshold)
        if notes is not None:
            notes.extend(_masks.mask_notes(counts, pred_masks, true_masks, label, empty_score))
        scores = _masks.dice_from_counts(counts, empty_score)
        return scores, {"dice_from_masks": True, "empty_score": empty_score, "label": label}
    missing = "true_masks" if pred_masks is not None else "pred_masks" if true_masks is not None else None
    hint = f" ({missing} is missing)" if missing else ""
    raise ValueError(f"pass dice (one score per sample), or both pred_masks and true_masks{hint}")


def _finite(scores: np.ndarray, warnings: list[str]) -> np.ndarray:
    finite = ~np.isnan(scores)
    n_nan = len(scores) - int(np.count_nonzero(finite))
    if n_nan:
        warnings.append(f"{n_nan} samples have a NaN Dice score and were left out")
    outside = finite & ((scores < 0) | (scores > 1))
    if outside.any():
        where = np.flatnonzero(outside)
        raise ValueError(f"dice must hold values in [0, 1]; samples {_preview(where)} have "
                         f"{_preview(scores[where])}")
    return finite


def _assess(scores: np.ndarray, finite: np.ndarray, attributes: list[_inputs.Attribute],
            warnings: list[str]) -> _Assessment:
    result = _Assessment(warnings=warnings)
    for attribute in attributes:
        name, codes = attribute.name, attribute.codes
        keep = finite & (codes >= 0)
        missing = int(np.count_nonzero(finite)) - int(np.count_nonzero(keep))
        if missing:
            warnings.append(f"{name}: {missing} samples have no value for this attribute and were left out of it")
        d = scores[keep]
        counts, means = _group_summary(d, codes[keep], attribute.n_groups)
        present = np.flatnonzero(counts)
        summary: dict[str, Any] = {"n": len(d), "n_groups": len(present)}
        if len(present) < 2:
            warnings.append(f"{name}: fewer than two groups have Dice scores, so the attribute has no summary "
                            "metrics")
        else:
            summary.update(_summary(float(d.mean()), means[present]))
            if not math.isfinite(summary["skewness_dice"]):
                summary["skewness_dice"] = math.nan
                result.skewness_notes.add(len(warnings))
                warnings.append(f"{name}: skewness_dice is undefined (NaN) because the best group's mean Dice "
                                "is 1")
        result.summaries[name] = summary
        result.rows.extend({"attribute": name, "group": attribute.groups[i], "n": int(counts[i]),
                            "mean_dice": float(means[i]), "skipped": None} for i in present)
    return result


def _by_group_frame(rows: list[dict[str, Any]]):
    if rows:
        return group_frame(rows)
    import pandas as pd

    index = pd.MultiIndex.from_arrays([[], []], names=["attribute", "group"])
    return pd.DataFrame({"n": pd.Series([], dtype=np.int64), "mean_dice": pd.Series([], dtype=np.float64),
                         "skipped": pd.Series([], dtype=object)}, index=index)


def evaluate_segmentation(sensitive_features: Any, *, dice: Any = None, pred_masks: Any = None,
                          true_masks: Any = None, label: Any = None, mask_threshold: float = 0.5,
                          empty_score: float = 1.0, bins: _inputs.Bins | None = None,
                          intersectional: bool = False, n_boot: int = 0, ci: float = 0.95,
                          n_permutations: int = 0, random_state: Any = None) -> FairnessReport:
    """Fairness of a segmentation model across the groups of one or more sensitive attributes.

    Give per-sample Dice scores (``dice``), or predicted and ground-truth masks from which Dice is
    computed per sample.

    Parameters
    ----------
    sensitive_features : DataFrame, dict, Series, array-like, pyarrow Table or polars DataFrame
        One or more attributes, as in :func:`fairmedfm_fast.evaluate`; a missing value leaves the
        sample out of that attribute only.
    dice : array-like of shape (n_samples,), optional
        Dice score in [0, 1] per sample. NaN scores are left out (with a warning).
    pred_masks, true_masks : one mask per sample, optional
        Arrays, tensors, a stacked (n_samples, ...) array, or file paths; see :func:`dice_scores`.
        Reading and counting use ``$FAIRMEDFM_FAST_N_JOBS`` threads (default: all cores).
    label : scalar, optional
        Evaluate this class of multi-class masks (``mask == label``); by default any non-zero
        value is foreground and float predictions in [0, 1] are probabilities.
    mask_threshold : float, default 0.5
        Probability masks are foreground where ``>= mask_threshold``.
    empty_score : float, default 1.0
        Dice when both masks of a sample are empty (a correct empty prediction). The FairMedFM
        trainers' torchmetrics Dice gives 0 there; pass ``empty_score=0`` to match it.
    bins : dict, optional
        Groups for numeric attributes, e.g. ``{"age": [40, 60]}`` or ``{"age": 4}``.
    intersectional : bool, default False
        Also evaluate the combination of all attributes (groups such as ``"F & >=60"``).
    n_boot, ci, n_permutations, random_state
        Extensions, as in :func:`fairmedfm_fast.evaluate`: bootstrap intervals (stratified by
        every attribute's groups) of every summary column and group mean in ``report.ci``, and
        permutation p-values of ``delta_dice`` and ``std_dice`` in ``report.p_values``.

    Returns
    -------
    FairnessReport
        ``summary`` per attribute: ``n``, ``n_groups``, ``mean_dice``, ``min_dice``, ``max_dice``,
        ``delta_dice``, ``skewness_dice`` (NaN with a warning when the best group's mean is 1),
        ``std_dice`` and ``es_dice``; ``by_group`` with ``n`` and ``mean_dice``; ``overall`` with
        ``mean_dice`` and ``n``. See the README's "Segmentation" section.
    """
    if dice is not None and (pred_masks is not None or true_masks is not None):
        raise ValueError("pass either dice or pred_masks and true_masks, not both")
    warnings: list[str] = []
    dice, pred_masks, true_masks, sensitive_features = _inputs.align_by_index(
        {"dice": dice, "pred_masks": pred_masks, "true_masks": true_masks,
         "sensitive_features": sensitive_features}, warnings)
    scores, metadata = _scores(dice, pred_masks, true_masks, label, mask_threshold, empty_score, warnings)
    finite = _finite(scores, warnings)
    attributes = _inputs.encode_attributes(sensitive_features, len(scores), bins, intersectional)
    kept = scores[finite]
    overall = {"mean_dice": float(kept.mean()) if len(kept) else math.nan, "n": len(kept)}
    result = _assess(scores, finite, attributes, warnings)
    report = FairnessReport("seg", summary_frame(result.summaries), _by_group_frame(result.rows), overall, {},
                            warnings, metadata)
    report._dice_data = (scores, attributes)  # per-sample Dice for report.plot("dice")
    if n_boot or n_permutations:
        _resampled(report, scores[finite], [a.codes[finite] for a in attributes], attributes, result,
                   n_boot, ci, n_permutations, random_state)
    return report


def _resampled(report: FairnessReport, dice: np.ndarray, code_rows: list[np.ndarray],
               attributes: list[_inputs.Attribute], result: _Assessment, n_boot: Any, ci: Any,
               n_permutations: Any, random_state: Any) -> None:
    """Bootstrap intervals and permutation p-values on the report (see :func:`evaluate_segmentation`)."""
    import pandas as pd

    from . import _resample
    from .evaluation import _count, check_resampling

    n_boot, n_permutations = _count(n_boot, "n_boot"), _count(n_permutations, "n_permutations")
    check_resampling(attributes, n_boot, n_permutations, 8)
    if not (isinstance(ci, (float, int)) and 0 < ci < 1):
        raise ValueError(f"ci must be a coverage strictly between 0 and 1, such as 0.95; got {_inputs.shown(ci)}")
    seed = _resample.seed_from(random_state)
    sizes = [a.n_groups for a in attributes]
    valid = {a.name: len(result.summaries[a.name]) > 2 for a in attributes}
    if n_boot:
        groups, summaries, columns = _resample.dice_intervals(dice, code_rows, sizes, _summary, n_boot, float(ci),
                                                              seed)
        group_rows, summary_rows = [], {}
        for attribute, bounds, summary_bounds in zip(attributes, groups, summaries):
            counts = np.bincount(attribute.codes[attribute.codes >= 0], minlength=attribute.n_groups)
            for i in np.flatnonzero(counts):
                group_rows.append({"attribute": attribute.name, "group": attribute.groups[i],
                                   "mean_dice_lo": float(bounds[i, 0]), "mean_dice_hi": float(bounds[i, 1])})
            summary_rows[attribute.name] = ({f"{c}_{side}": float(summary_bounds[j, k]) for j, c in enumerate(columns)
                                             for k, side in enumerate(("lo", "hi"))} if valid[attribute.name] else {})
        summary = pd.DataFrame.from_dict(summary_rows, orient="index",
                                         columns=[f"{c}_{side}" for c in columns for side in ("lo", "hi")])
        summary.index.name = "attribute"
        by_group = (pd.DataFrame(group_rows).set_index(["attribute", "group"]) if group_rows
                    else pd.DataFrame(columns=["mean_dice_lo", "mean_dice_hi"]))
        report.ci = {"level": float(ci), "n_boot": n_boot, "summary": summary, "by_group": by_group}
    if n_permutations:
        rows = {}
        for k, (attribute, codes) in enumerate(zip(attributes, code_rows)):
            rows[attribute.name] = (_resample.dice_permutation_pvalues(
                dice, codes, attribute.n_groups, result.summaries[attribute.name], _summary, n_permutations, seed, k)
                if valid[attribute.name] else {})
        frame = pd.DataFrame.from_dict(rows, orient="index", columns=["delta_dice", "std_dice"])
        frame.index.name = "attribute"
        report.p_values = frame


# ---------------------------------------------------------------------------------------------
# One number per call
# ---------------------------------------------------------------------------------------------

def _one_number(column: str, dice: Any, sensitive_features: Any, bins: Any, masks: dict[str, Any]) -> float:
    options = dict(masks)
    unknown = sorted(set(options) - {"pred_masks", "true_masks", "label", "mask_threshold", "empty_score"})
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {unknown}; the mask options are pred_masks, "
                        "true_masks, label, mask_threshold and empty_score")
    notes: list[str] = []
    dice, pred_masks, true_masks, sensitive_features = _inputs.align_by_index(
        {"dice": dice, "pred_masks": options.get("pred_masks"), "true_masks": options.get("true_masks"),
         "sensitive_features": sensitive_features}, notes)
    if dice is not None and (pred_masks is not None or true_masks is not None):
        raise ValueError("pass either dice or pred_masks and true_masks, not both")
    if dice is not None:
        n = len(_inputs.to_numpy(dice, "dice"))
    elif pred_masks is None:
        raise ValueError("pass dice (one score per sample), or both pred_masks and true_masks")
    else:
        from ._masks import _Masks

        n = len(pred_masks) if isinstance(pred_masks, (list, tuple)) else len(_Masks(pred_masks, "pred_masks"))
    attribute = _inputs.one_attribute(sensitive_features, n, bins)
    scores, _ = _scores(dice, pred_masks, true_masks, options.get("label"), options.get("mask_threshold", 0.5),
                        options.get("empty_score", 1.0), notes)
    warnings: list[str] = []
    finite = _finite(scores, warnings)
    if len(scores) != n:
        raise ValueError(f"sensitive_features has {n} values but there are {len(scores)} Dice scores; pass one "
                         "value per sample")
    result = _assess(scores, finite, [attribute], warnings)
    for i, message in enumerate(notes + warnings):
        if i - len(notes) in result.skewness_notes and column != "skewness_dice":
            continue  # only dice_skewness is undefined in that case
        _warn(message)
    return float(result.summaries[attribute.name].get(column, math.nan))


def dice_gap(dice: Any = None, *, sensitive_features: Any, bins: _inputs.Bins | None = None, **masks: Any) -> float:
    """Largest minus smallest group mean Dice (``delta_dice``; 0 is fair).

    Parameters
    ----------
    dice : array-like of shape (n_samples,), optional
        Dice per sample; or pass ``pred_masks`` and ``true_masks`` and Dice is computed per sample.
    sensitive_features : array-like, Series, DataFrame or dict
        Group of each sample; several columns are combined into intersectional groups.
    bins : dict, optional
        Groups for numeric attributes, e.g. ``{"age": [40, 60]}``.
    **masks
        ``pred_masks``, ``true_masks`` and optionally ``label``, ``mask_threshold`` and
        ``empty_score``, as in :func:`evaluate_segmentation`.

    Returns
    -------
    float
        NaN (with a ``UserWarning``) when fewer than two groups have Dice scores.
    """
    return _one_number("delta_dice", dice, sensitive_features, bins, masks)


def worst_group_dice(dice: Any = None, *, sensitive_features: Any, bins: _inputs.Bins | None = None,
                     **masks: Any) -> float:
    """Lowest group mean Dice (``min_dice``; higher is better). Parameters as in :func:`dice_gap`."""
    return _one_number("min_dice", dice, sensitive_features, bins, masks)


def dice_std(dice: Any = None, *, sensitive_features: Any, bins: _inputs.Bins | None = None, **masks: Any) -> float:
    """Population standard deviation of the group mean Dice scores (``std_dice``; 0 is fair).
    Parameters as in :func:`dice_gap`."""
    return _one_number("std_dice", dice, sensitive_features, bins, masks)


def dice_skewness(dice: Any = None, *, sensitive_features: Any, bins: _inputs.Bins | None = None,
                  **masks: Any) -> float:
    """``(1 - worst group Dice) / (1 - best group Dice)`` (``skewness_dice``; 1 is fair).

    NaN with a ``UserWarning`` when the best group's mean Dice is 1. Parameters as in
    :func:`dice_gap`.
    """
    return _one_number("skewness_dice", dice, sensitive_features, bins, masks)


def equity_scaled_dice(dice: Any = None, *, sensitive_features: Any, bins: _inputs.Bins | None = None,
                       **masks: Any) -> float:
    """Mean Dice divided by 1 + the standard deviation of the group means (``es_dice``; higher is
    better). Parameters as in :func:`dice_gap`."""
    return _one_number("es_dice", dice, sensitive_features, bins, masks)


# ---------------------------------------------------------------------------------------------
# fairmedfm.metrics interfaces
# ---------------------------------------------------------------------------------------------

def _legacy(dice: np.ndarray, group: Sequence[Any]) -> dict[str, Any]:
    """Summary and groups keyed by ``str(value)``, groups in sorted order of their raw values."""
    group_array = np.asarray(group).ravel()
    if len(dice) != len(group_array):
        raise ValueError(f"dice has {len(dice)} values but group has {len(group_array)}; pass one group per "
                         "sample")
    values, codes = np.unique(group_array, return_inverse=True)
    if len(values) < 2:
        raise ValueError(f"group has the single value {_preview(values)}; fairness compares at least "
                         "two groups")
    counts, means = _group_summary(dice, codes.ravel(), len(values))
    return {"summary": _summary(float(dice.mean()), means),
            "groups": {str(value): {"n": int(counts[i]), "mean_dice": float(means[i])}
                       for i, value in enumerate(values)}}


def segmentation_fairness(dice: Any, group: Sequence[Any]) -> dict[str, Any]:
    """Fairness of a segmentation model from per-sample Dice across the groups of one attribute
    (deprecated since fairmedfm 0.4.1; use :func:`evaluate_segmentation` or :func:`dice_gap`).

    Parameters
    ----------
    dice : array-like of shape (n_samples,), values in [0, 1] (NaN raises)
    group : array-like of shape (n_samples,), at least two distinct values

    Returns
    -------
    dict
        ``summary`` (the columns of :func:`evaluate_segmentation`; ``skewness_dice`` is None when
        the best group's mean is 1) and ``groups`` (``n`` and ``mean_dice`` per group value, as a
        string, in sorted order of the values).
    """
    _warn("fairmedfm_fast.segmentation_fairness is deprecated (as in fairmedfm 0.4.1) and will be removed in "
          "1.0; use fairmedfm_fast.evaluate_segmentation(group, dice=dice)", FutureWarning)
    scores = np.asarray(dice, dtype=np.float64).ravel()
    if np.isnan(scores).any() or (scores < 0).any() or (scores > 1).any():
        bad = np.flatnonzero(np.isnan(scores) | (scores < 0) | (scores > 1))
        raise ValueError(f"dice must hold values in [0, 1] (no NaN); samples {_preview(bad)} have "
                         f"{_preview(scores[bad])}")
    result = _legacy(scores, group)
    if not math.isfinite(result["summary"]["skewness_dice"]):
        result["summary"]["skewness_dice"] = None
    return result


def evaluate_seg(dsc_list: Any, sensitive_list: Sequence[Any]) -> dict[str, Any]:
    """The segmentation summary as the FairMedFM trainers log it.

    Unlike :func:`segmentation_fairness`, NaN scores propagate into the means and
    ``skewness_dice`` is ``inf`` (or NaN) when the best group's mean Dice is 1; nothing warns.
    """
    return _legacy(np.asarray(dsc_list, dtype=np.float64).ravel(), sensitive_list)["summary"]
