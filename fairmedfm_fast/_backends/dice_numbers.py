"""One Dice number per call (:func:`dice_gap`, :func:`worst_group_dice`, ...) and fairmedfm's legacy
segmentation functions (:func:`segmentation_fairness`, :func:`evaluate_seg`), over the group summary of
``segmentation.py``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .segmentation import (
    assess_groups,
    dice_summary,
    dice_values,
    finite_scores,
    group_summary,
    warn,
)

__all__ = ["dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice", "segmentation_fairness",
           "evaluate_seg"]



def _one_number(column: str, dice: Any, sensitive_features: Any, bins: Any, masks: dict[str, Any],
                min_group_size: int | None = None) -> float:
    from .checks import check_min_group_size

    min_group_size = check_min_group_size(min_group_size)
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
        from .._inputs.masks import Masks

        n = len(pred_masks) if isinstance(pred_masks, (list, tuple)) else len(Masks(pred_masks, "pred_masks"))
    attribute = _groups.one_attribute(sensitive_features, n, bins)
    scores, _ = dice_values(dice, pred_masks, true_masks, options.get("label"), options.get("mask_threshold", 0.5),
                        options.get("empty_score", 1.0), notes=notes)
    warnings: list[str] = []
    finite = finite_scores(scores, warnings)
    if len(scores) != n:
        raise ValueError(f"sensitive_features has {n} values but there are {len(scores)} Dice scores; pass one "
                         "value per sample")
    result = assess_groups(scores, finite, [attribute], warnings, min_group_size)
    for i, message in enumerate(notes + warnings):
        if i - len(notes) in result.skewness_notes and column != "skewness_dice":
            continue  # only dice_skewness is undefined in that case
        warn(message)
    return float(result.summaries[attribute.name].get(column, math.nan))


def dice_gap(dice: Any = None, *, sensitive_features: Any, bins: _groups.Bins | None = None,
             min_group_size: int | None = None, **masks: Any) -> float:
    """Largest minus smallest group mean Dice (``delta_dice``; 0 is fair).

    Parameters
    ----------
    dice : array-like of shape (n_samples,), optional
        Dice per sample; or pass ``pred_masks`` and ``true_masks`` and Dice is computed per sample.
    sensitive_features : array-like, Series, DataFrame or dict
        Group of each sample; several columns are combined into intersectional groups.
    bins : dict, optional
        Groups for numeric attributes, e.g. ``{"age": [40, 60]}``.
    min_group_size : int, optional
        Extension: groups with fewer samples are left out (as in :func:`evaluate_segmentation`).
    **masks
        ``pred_masks``, ``true_masks`` and optionally ``label``, ``mask_threshold`` and
        ``empty_score``, as in :func:`evaluate_segmentation`.

    Returns
    -------
    float
        NaN (with a ``UserWarning``) when fewer than two groups have Dice scores.
    """
    return _one_number("delta_dice", dice, sensitive_features, bins, masks, min_group_size)


def worst_group_dice(dice: Any = None, *, sensitive_features: Any, bins: _groups.Bins | None = None,
                     min_group_size: int | None = None, **masks: Any) -> float:
    """Lowest group mean Dice (``min_dice``; higher is better). Parameters as in :func:`dice_gap`."""
    return _one_number("min_dice", dice, sensitive_features, bins, masks, min_group_size)


def dice_std(dice: Any = None, *, sensitive_features: Any, bins: _groups.Bins | None = None,
             min_group_size: int | None = None, **masks: Any) -> float:
    """Population standard deviation of the group mean Dice scores (``std_dice``; 0 is fair).
    Parameters as in :func:`dice_gap`."""
    return _one_number("std_dice", dice, sensitive_features, bins, masks, min_group_size)


def dice_skewness(dice: Any = None, *, sensitive_features: Any, bins: _groups.Bins | None = None,
                  min_group_size: int | None = None, **masks: Any) -> float:
    """``(1 - worst group Dice) / (1 - best group Dice)`` (``skewness_dice``; 1 is fair).

    NaN with a ``UserWarning`` when the best group's mean Dice is 1. Parameters as in
    :func:`dice_gap`.
    """
    return _one_number("skewness_dice", dice, sensitive_features, bins, masks, min_group_size)


def equity_scaled_dice(dice: Any = None, *, sensitive_features: Any, bins: _groups.Bins | None = None,
                       min_group_size: int | None = None, **masks: Any) -> float:
    """Mean Dice divided by 1 + the standard deviation of the group means (``es_dice``; higher is
    better). Parameters as in :func:`dice_gap`."""
    return _one_number("es_dice", dice, sensitive_features, bins, masks, min_group_size)


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
        raise ValueError(f"group has the single value {_inputs.preview(values)}; fairness compares at least "
                         "two groups")
    counts, means = group_summary(dice, codes.ravel(), len(values))
    return {"summary": dice_summary(float(dice.mean()), means),
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
    warn("fairmedfm_fast.segmentation_fairness is deprecated (as in fairmedfm 0.4.1) and will be removed in "
          "1.0; use fairmedfm.evaluate_segmentation(group, dice=dice) (fairmedfm_fast.evaluate_segmentation(group, "
          "dice=dice) here)", FutureWarning)
    scores = _inputs.to_numpy(dice, "dice").astype(np.float64).ravel()  # tensors of any float dtype too
    if np.isnan(scores).any() or (scores < 0).any() or (scores > 1).any():
        bad = np.flatnonzero(np.isnan(scores) | (scores < 0) | (scores > 1))
        raise ValueError(f"dice must hold values in [0, 1] (no NaN); samples {_inputs.preview(bad)} have "
                         f"{_inputs.preview(scores[bad])}")
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
