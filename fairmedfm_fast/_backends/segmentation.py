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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report import assembly as _assembly
from .._report.frame import FairnessReport

__all__ = ["evaluate_segmentation", "dice_per_label", "dice_scores", "surface_scores"]

_SUMMARY = ("mean_dice", "min_dice", "max_dice", "delta_dice", "skewness_dice", "std_dice", "es_dice")


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    package = __name__.partition(".")[0]
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_globals.get("__name__", "") + ".").startswith(package + "."):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    _warnings.warn(message, category, stacklevel=_caller_stacklevel())


# ---------------------------------------------------------------------------------------------
# Per-sample and per-label Dice
# ---------------------------------------------------------------------------------------------

def dice_scores(pred_masks: Any, true_masks: Any, *, label: Any = None, mask_threshold: float = 0.5,
                empty_score: float = 1.0, n_jobs: int | None = None, progress: bool | None = None) -> np.ndarray:
    """Dice of every (predicted, ground-truth) pair of masks: the scores that
    :func:`evaluate_segmentation` computes from masks (an extension; fairmedfm has no such function).

    Parameters
    ----------
    pred_masks, true_masks : one mask per sample
        A list of arrays or tensors (shapes may differ between samples), an array of shape
        (n_samples, ...), or file paths (list, array or pandas Series): ``.npy`` (memory-mapped),
        ``.npz``, ``.png``, ``.jpg``, ``.jpeg``, ``.bmp``, ``.gif``, ``.tif``, ``.tiff`` (first
        channel of colour images), ``.nii``, ``.nii.gz``; images and NIfTI need
        ``pip install nibabel pillow`` (or ``".[io]"`` in a clone). Axes of length 1 are dropped before shapes are compared.
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
    progress : bool, optional
        A bar of the files read, on stderr; None shows it on a terminal or in a notebook when
        reading takes more than about two seconds.

    Returns
    -------
    ndarray of shape (n_samples,), float64
    """
    from .._inputs import masks as _masks

    return _masks.dice_scores(pred_masks, true_masks, label=label, mask_threshold=mask_threshold,
                              empty_score=empty_score, n_jobs=n_jobs, progress=progress)


def surface_scores(pred_masks: Any, true_masks: Any, *, metrics: Any = ("hd95", "assd", "nsd"), label: Any = None,
                   mask_threshold: float = 0.5, spacing: Any = None, percentile: float = 95.0,
                   nsd_tolerance: float | None = None, hd_definition: str = "medpy", empty_score: Any = 1.0,
                   empty_distance: Any = "nan", n_jobs: int | None = None) -> dict[str, np.ndarray]:
    """Per-sample surface metrics of every (predicted, ground-truth) pair of masks (an extension):
    the values that :func:`evaluate_segmentation` averages with ``metrics=``.

    Parameters are those of :func:`evaluate_segmentation` and :func:`dice_scores`; ``metrics`` from
    ``"dice"``, ``"hd95"``, ``"hd"``, ``"assd"``, ``"nsd"``. Each pair is read once.

    Returns
    -------
    dict
        Metric name (``hd95`` renamed ``hd<percentile>``) -> float64 array of shape (n_samples,),
        NaN where undefined (empty masks, see docs/segmentation-distances.md).
    """
    from .._engine import surface as _surface

    wanted = _surface.check_options(metrics, percentile, nsd_tolerance, hd_definition, empty_distance)
    values, _, _ = _surface_scores(pred_masks, true_masks, label, mask_threshold, empty_score, wanted, spacing,
                                   percentile, nsd_tolerance, hd_definition, empty_distance, n_jobs)
    return values.metrics


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
    from .._inputs import masks as _masks

    return _masks.dice_per_label(pred, true, labels)


# ---------------------------------------------------------------------------------------------
# Assessment
# ---------------------------------------------------------------------------------------------

def group_summary(d: np.ndarray, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample count and mean Dice of every group (NaN for an empty one), from one bincount."""
    counts = np.bincount(codes, minlength=n_groups)
    sums = np.bincount(codes, weights=d, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return counts, means


def dice_summary(mean_dice: float, means: np.ndarray) -> dict[str, float]:
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


def dice_values(dice: Any, pred_masks: Any, true_masks: Any, label: Any, mask_threshold: Any,
            empty_score: Any, progress: bool | None = None,
            notes: list[str] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    if dice is not None:
        values = _inputs.to_numpy(dice, "dice")
        try:
            return values.astype(np.float64).ravel(), {}
        except (TypeError, ValueError):
            raise ValueError(f"dice must hold numbers in [0, 1], got dtype {values.dtype} with values "
                             f"{_inputs.preview(values.ravel())}") from None
    if pred_masks is not None and true_masks is not None:
        from .._inputs import masks as _masks

        _masks.check_empty_score(empty_score)
        counts = _masks.overlap_counts(pred_masks, true_masks, label=label, mask_threshold=mask_threshold,
                                       progress=progress)
        if notes is not None:
            notes.extend(_masks.mask_notes(counts, pred_masks, true_masks, label, empty_score))
        scores = _masks.dice_from_counts(counts, empty_score)
        return scores, {"dice_from_masks": True, "empty_score": empty_score, "label": label}
    missing = "true_masks" if pred_masks is not None else "pred_masks" if true_masks is not None else None
    hint = f" ({missing} is missing)" if missing else ""
    raise ValueError(f"pass dice (one score per sample), or both pred_masks and true_masks{hint}")


def finite_scores(scores: np.ndarray, warnings: list[str]) -> np.ndarray:
    finite = ~np.isnan(scores)
    n_nan = len(scores) - int(np.count_nonzero(finite))
    if n_nan:
        warnings.append(f"{n_nan} samples have a NaN Dice score and were left out")
    outside = finite & ((scores < 0) | (scores > 1))
    if outside.any():
        where = np.flatnonzero(outside)
        raise ValueError(f"dice must hold values in [0, 1]; samples {_inputs.preview(where)} have "
                         f"{_inputs.preview(scores[where])}")
    return finite


def assess_groups(scores: np.ndarray, finite: np.ndarray, attributes: list[_groups.Attribute],
            warnings: list[str], min_group_size: int | None = None) -> _Assessment:
    from .assess import too_small

    result = _Assessment(warnings=warnings)
    for attribute in attributes:
        name, codes = attribute.name, attribute.codes
        keep = finite & (codes >= 0)
        missing = int(np.count_nonzero(finite)) - int(np.count_nonzero(keep))
        if missing:
            warnings.append(f"{name}: {missing} samples have no value for this attribute and were left out of it")
        d = scores[keep]
        counts, means = group_summary(d, codes[keep], attribute.n_groups)
        small = (counts > 0) & (counts < (min_group_size or 0))
        for i in np.flatnonzero(small):
            warnings.append(f"{name}={attribute.groups[i]}: skipped, {too_small(min_group_size)} (it has "
                            f"{int(counts[i])}; min_group_size={min_group_size})")
        present = np.flatnonzero((counts > 0) & ~small)
        summary: dict[str, Any] = {"n": len(d), "n_groups": len(present)}
        if len(present) < 2:
            warnings.append(_groups.one_group_warning(attribute) or f"{name}: fewer than two groups have Dice "
                            "scores, so the attribute has no summary metrics")
        else:
            summary.update(dice_summary(float(d.mean()), means[present]))
            if not math.isfinite(summary["skewness_dice"]):
                summary["skewness_dice"] = math.nan
                result.skewness_notes.add(len(warnings))
                warnings.append(f"{name}: skewness_dice is undefined (NaN) because the best group's mean Dice "
                                "is 1")
        result.summaries[name] = summary
        result.rows.extend({"attribute": name, "group": attribute.groups[i], "n": int(counts[i]),
                            "mean_dice": math.nan if small[i] else float(means[i]),
                            "skipped": too_small(min_group_size) if small[i] else None}
                           for i in np.flatnonzero(counts))
    return result


def evaluate_segmentation(sensitive_features: Any, *, dice: Any = None, pred_masks: Any = None,
                          true_masks: Any = None, label: Any = None, mask_threshold: float = 0.5,
                          empty_score: float = 1.0, bins: _groups.Bins | None = None,
                          intersectional: bool = False, n_boot: int = 0, ci: float = 0.95,
                          n_permutations: int = 0, random_state: Any = None, min_group_size: int | None = None,
                          stratify: str | None = "attribute", p_adjust: str | None = "holm",
                          progress: bool | None = None, metrics: Any = None, spacing: Any = None,
                          percentile: float = 95.0, nsd_tolerance: float | None = None, hd_definition: str = "medpy",
                          empty_distance: Any = "nan") -> FairnessReport:
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
    n_boot, ci, n_permutations, random_state, stratify, p_adjust
        Extensions, as in :func:`fairmedfm_fast.evaluate`: bootstrap intervals (by default each
        attribute's resamples stratified by its own groups) of every summary column and group
        mean in ``report.ci``, and permutation p-values of ``delta_dice`` and ``std_dice`` (and of
        ``delta_<m>``, ``std_<m>`` for each metric of ``metrics``) in ``report.p_values``, with
        their ``p_adjust`` values (default ``"holm"``, over every column and attribute; None: none)
        beside them.
    min_group_size : int, optional
        Extension: groups with fewer samples are skipped (``"fewer than N samples"``), keep their
        ``n`` in ``by_group`` and stay out of the summary. None keeps every group.
    progress : bool, optional
        Extension: progress bars (reading many mask files, resamples) on stderr; None shows them
        on a terminal or in a notebook when the work takes more than about two seconds.
    metrics : list of str, optional
        Extension: any of ``"dice"``, ``"hd95"``, ``"hd"``, ``"assd"``, ``"nsd"`` (needs masks).
        Per group the mean of each; per attribute ``mean_<m>``, ``worst_<m>`` (largest group mean
        of a distance, smallest NSD), ``delta_<m>`` and ``std_<m>``; the Dice columns as above
        when ``"dice"`` is listed. Default: Dice only, exactly fairmedfm's report. See
        docs/segmentation-distances.md for the definitions.
    spacing : sequence of float or array of shape (n_samples, n_axes), optional
        Voxel size per axis (after dropping axes of length 1); default: the ground-truth NIfTI
        header's zooms, else 1.
    percentile : float, default 95
        Percentile of the surface distances reported as ``hd95`` (renamed ``hd<p>`` otherwise).
    nsd_tolerance : float, optional
        NSD tolerance in the unit of the spacing (mm); required for ``"nsd"``.
    hd_definition : {"medpy", "monai"}, default "medpy"
        Percentile of both directions' distances pooled (medpy ``hd95``), or the larger of the two
        directed percentiles (MONAI ``compute_hausdorff_distance``).
    empty_distance : {"nan", "inf", "diagonal"} or float, default "nan"
        HD95, HD and ASSD of a sample with exactly one empty mask (NSD is 0 there): left out with
        a warning, infinite, the image diagonal, or this value. Both masks empty: distances and
        NSD are NaN (left out, with a warning) unless ``empty_score`` is a dict such as
        ``{"dice": 1.0, "hd95": 0.0, "nsd": 1.0}``.

    Returns
    -------
    FairnessReport
        ``summary`` per attribute: ``n``, ``n_groups``, ``mean_dice``, ``min_dice``, ``max_dice``,
        ``delta_dice``, ``skewness_dice`` (NaN with a warning when the best group's mean is 1),
        ``std_dice`` and ``es_dice``; ``by_group`` with ``n`` and ``mean_dice``; ``overall`` with
        ``mean_dice`` and ``n``. See the user guide's "Segmentation" page.
    """
    if dice is not None and (pred_masks is not None or true_masks is not None):
        raise ValueError("pass either dice or pred_masks and true_masks, not both")
    from .._engine import resample as _resample
    from .._util import progress as _progress
    from .checks import check_min_group_size

    min_group_size = check_min_group_size(min_group_size)
    _resample.check_options(stratify, p_adjust)
    progress = _progress.check(progress)
    wanted = None
    if metrics is not None:
        from .._engine import surface as _surface

        wanted = _surface.check_options(metrics, percentile, nsd_tolerance, hd_definition, empty_distance)
        if wanted == ["dice"] and not isinstance(empty_score, dict):
            wanted = None
        elif dice is not None:
            raise ValueError(f"metrics={metrics!r} needs masks: pass pred_masks and true_masks instead of dice")
    warnings: list[str] = []
    dice, pred_masks, true_masks, sensitive_features = _inputs.align_by_index(
        {"dice": dice, "pred_masks": pred_masks, "true_masks": true_masks,
         "sensitive_features": sensitive_features}, warnings)
    values = None
    if wanted is None:
        scores, metadata = dice_values(dice, pred_masks, true_masks, label, mask_threshold, empty_score, progress,
                                   warnings)
    else:
        values, scores, metadata = _surface_scores(pred_masks, true_masks, label, mask_threshold, empty_score, wanted,
                                                   spacing, percentile, nsd_tolerance, hd_definition, empty_distance,
                                                   progress=progress)
        warnings.extend(values.warnings)
    finite = finite_scores(scores, warnings)
    attributes = _groups.encode_attributes(sensitive_features, len(scores), bins, intersectional)
    kept = scores[finite]
    overall = {"mean_dice": float(kept.mean()) if len(kept) else math.nan, "n": len(kept)}
    result = assess_groups(scores, finite, attributes, warnings, min_group_size)
    if min_group_size is not None:
        metadata["min_group_size"] = min_group_size
    if values is not None:
        _add_metrics(result, overall, values.metrics, finite, attributes, wanted, min_group_size)
    # per-sample Dice for report.plot("dice"), and the per-sample values of every requested metric
    report = _assembly.segmentation_report(result.summaries, result.rows, overall, warnings, metadata,
                                           dice_data=(scores, attributes),
                                           metric_data=values.metrics if values is not None else None)
    if n_boot or n_permutations:
        _with_resampling(report, scores, finite, attributes, result, values, wanted, n_boot, ci, n_permutations,
                         random_state, (min_group_size, stratify, progress), p_adjust)
    return report


def _with_resampling(report: FairnessReport, scores: np.ndarray, finite: np.ndarray, attributes: list,
                     result: _Assessment, values: Any, wanted: list[str] | None, n_boot: int, ci: float,
                     n_permutations: int, random_state: Any, options: tuple, p_adjust: str | None) -> None:
    """Bootstrap intervals and permutation p-values of Dice and of every other requested metric, the
    p-values adjusted over every gap of every metric and attribute together."""
    from .._engine import resample as _resample

    if values is None or "dice" in wanted:
        _resampled(report, scores[finite], [a.codes[finite] for a in attributes], attributes, result,
                   n_boot, ci, n_permutations, random_state, *options)
    if values is not None:
        _resampled_metrics(report, values.metrics, finite, attributes, result, n_boot, ci, n_permutations,
                           random_state, *options)
    if report.p_values is not None:
        report.p_values = _resample.with_adjusted(report.p_values, p_adjust)


def _surface_scores(pred_masks, true_masks, label, mask_threshold, empty_score, wanted, spacing, percentile,
                    nsd_tolerance, hd_definition, empty_distance, n_jobs=None, progress=None):
    """Per-sample values of every wanted metric from one pass over the mask pairs, the Dice scores
    that decide ``n`` (computed even when Dice is not reported) and the report's metadata."""
    from .._engine import surface as _surface
    from .._inputs import masks as _masks

    if pred_masks is None or true_masks is None:
        missing = "true_masks" if pred_masks is not None else "pred_masks"
        raise ValueError(f"metrics beyond Dice need both pred_masks and true_masks ({missing} is missing)")
    options = _surface.Options(float(percentile), math.nan if nsd_tolerance is None else float(nsd_tolerance),
                               hd_definition, spacing)
    table = _surface.measure(pred_masks, true_masks, label=label, mask_threshold=mask_threshold, options=options,
                             n_jobs=n_jobs, progress=progress)
    values = _surface.finish(table, wanted, empty_score, empty_distance)
    if "dice" in values.metrics:
        scores = values.metrics["dice"]
    else:
        scores = _masks.dice_from_counts(values.counts, empty_score.get("dice", 1.0) if isinstance(empty_score, dict)
                                         else empty_score)
    renamed = {}
    for metric, column in values.metrics.items():
        renamed[_column_name(metric, percentile)] = column
    values.metrics = renamed
    metadata = {"dice_from_masks": True, "empty_score": empty_score, "label": label,
                "metrics": list(renamed), "percentile": float(percentile), "nsd_tolerance": nsd_tolerance,
                "hd_definition": hd_definition, "empty_distance": empty_distance,
                "spacing": "given" if spacing is not None else "NIfTI header or 1",
                "both_masks_empty": values.both_empty, "one_mask_empty": values.one_empty}
    return values, scores, metadata


def _column_name(metric: str, percentile: float) -> str:
    return f"hd{float(percentile):g}" if metric == "hd95" else metric


def _metric_summary(metric: str, mean: float, means: np.ndarray) -> dict[str, float]:
    """``mean_<m>``, ``worst_<m>`` (the smallest group mean of a metric where higher is better, such
    as NSD, the largest of a distance: from the registry), ``delta_<m>``
    and ``std_<m>`` (population standard deviation of the group means)."""
    low, high = float(np.min(means)), float(np.max(means))
    with np.errstate(invalid="ignore"):
        std = float(np.std(means))
    higher_is_better = _metric_registry.segmentation_metric(metric).higher_is_better
    return {f"mean_{metric}": mean, f"worst_{metric}": low if higher_is_better else high,
            f"delta_{metric}": high - low if math.isfinite(high) else math.nan, f"std_{metric}": std}


def _add_metrics(result: _Assessment, overall: dict[str, Any], metrics: dict[str, np.ndarray], finite: np.ndarray,
                 attributes: list[_groups.Attribute], wanted: list[str], min_group_size: int | None = None) -> None:
    """Add each non-Dice metric's group means and summary columns to the Dice assessment (and drop
    the Dice columns when Dice was not asked for). Groups under ``min_group_size`` samples stay out
    of the summaries and have no means, as for Dice."""
    rows = {(row["attribute"], row["group"]): row for row in result.rows}
    for metric, column in metrics.items():
        if metric == "dice":
            continue
        ok = finite & ~np.isnan(column)
        overall[f"mean_{metric}"] = float(column[ok].mean()) if ok.any() else math.nan
        for attribute in attributes:
            keep = ok & (attribute.codes >= 0)
            counts, means = group_summary(column[keep], attribute.codes[keep], attribute.n_groups)
            group_n = np.bincount(attribute.codes[finite & (attribute.codes >= 0)], minlength=attribute.n_groups)
            small = (group_n > 0) & (group_n < (min_group_size or 0))  # skipped, as in the Dice rows
            for i in np.flatnonzero(group_n):
                rows[(attribute.name, attribute.groups[i])][f"mean_{metric}"] = math.nan if small[i] else float(means[i])
            summary = result.summaries[attribute.name]
            if len(summary) > 2:  # the attribute has two groups or more
                present = np.flatnonzero((counts > 0) & ~small)
                names = _metric_summary(metric, math.nan, np.array([0.0]))
                summary.update(dict.fromkeys(names, math.nan) if len(present) < 2 else
                               _metric_summary(metric, float(column[keep].mean()), means[present]))
    if "dice" not in wanted:
        overall.pop("mean_dice")
        for summary in result.summaries.values():
            for key in _SUMMARY:
                summary.pop(key, None)
        for row in result.rows:
            row.pop("mean_dice")
        result.warnings[:] = [w for i, w in enumerate(result.warnings) if i not in result.skewness_notes]
        result.skewness_notes.clear()


def _resampled_metrics(report: FairnessReport, metrics: dict[str, np.ndarray], finite: np.ndarray,
                       attributes: list[_groups.Attribute], result: _Assessment, n_boot: Any, ci: Any,
                       n_permutations: Any, random_state: Any, min_group_size: int | None, stratify: str | None,
                       progress: bool | None) -> None:
    """Bootstrap intervals and permutation p-values of every non-Dice metric, beside Dice's: the
    same resampling of the same samples, run on each metric's per-sample values."""
    import pandas as pd

    for metric, column in metrics.items():
        if metric == "dice":
            continue
        ok = finite & ~np.isnan(column)
        shadow = _assembly.scratch_report(report)

        def summarize(mean, means, metric=metric):
            values = _metric_summary(metric, mean, means)
            return {"mean_dice": values[f"mean_{metric}"], f"worst_{metric}": values[f"worst_{metric}"],
                    "delta_dice": values[f"delta_{metric}"], "std_dice": values[f"std_{metric}"]}

        observed = _Assessment(
            summaries={name: ({"n": 0, "n_groups": 0, "delta_dice": summary.get(f"delta_{metric}", math.nan),
                               "std_dice": summary.get(f"std_{metric}", math.nan)} if len(summary) > 2 else {})
                       for name, summary in result.summaries.items()})
        _resampled(shadow, column[ok], [a.codes[ok] for a in attributes], attributes, observed, n_boot, ci,
                   n_permutations, random_state, min_group_size, stratify, progress, summarize)
        def renamed(frame, metric=metric):
            return frame.rename(columns=lambda c: c.replace("_dice", f"_{metric}", 1) if c.startswith(
                ("mean_dice", "delta_dice", "std_dice")) else c)
        if n_boot:
            if report.ci is None:
                report.ci = {**shadow.ci, "summary": renamed(shadow.ci["summary"]),
                             "by_group": renamed(shadow.ci["by_group"])}
            else:
                for key in ("summary", "by_group"):
                    report.ci[key] = pd.concat([report.ci[key], renamed(shadow.ci[key])], axis=1)
        if n_permutations:
            frame = renamed(shadow.p_values)
            report.p_values = frame if report.p_values is None else pd.concat([report.p_values, frame], axis=1)
        for (kind, name, _), values in shadow.replicates.items():  # for report.pairwise(f"mean_{metric}")
            report.replicates[(kind, name, f"mean_{metric}")] = values


def _resampled(report: FairnessReport, dice: np.ndarray, code_rows: list[np.ndarray],
               attributes: list[_groups.Attribute], result: _Assessment, n_boot: Any, ci: Any,
               n_permutations: Any, random_state: Any, min_group_size: int | None, stratify: str | None,
               progress: bool | None, summarize: Any = dice_summary) -> None:
    """Bootstrap intervals and permutation p-values on the report (see :func:`evaluate_segmentation`)."""
    import pandas as pd

    from .._engine import resample as _resample
    from .._util import progress as _progress
    from .checks import check_count, check_resampling

    n_boot, n_permutations = check_count(n_boot, "n_boot"), check_count(n_permutations, "n_permutations")
    check_resampling(attributes, n_boot, n_permutations, 8)
    if not (isinstance(ci, (float, int)) and 0 < ci < 1):
        raise ValueError(f"ci must be a coverage strictly between 0 and 1, such as 0.95; got {_inputs.shown(ci)}")
    seed = _resample.seed_from(random_state)
    sizes = [a.n_groups for a in attributes]
    counts = [np.bincount(codes[codes >= 0], minlength=g) for codes, g in zip(code_rows, sizes)]
    groups_valid = [(c > 0) & (c >= (min_group_size or 0)) for c in counts]  # the groups the summary uses
    valid = {a.name: len(result.summaries[a.name]) > 2 for a in attributes}
    if n_boot:
        report.ci = _dice_bootstrap(report, dice, code_rows, attributes, counts, groups_valid, valid, n_boot, ci, seed,
                                    stratify, progress, summarize)
    if n_permutations:
        rows = {}
        tested = [a for a, attribute in enumerate(attributes) if valid[attribute.name]]
        with _progress.Progress(n_permutations * len(tested), "permutations", progress, unit="permutation") as bar:
            for k, (attribute, codes) in enumerate(zip(attributes, code_rows)):
                permuted: list = []
                rows[attribute.name] = (_resample.dice_permutation_pvalues(
                    dice, codes, attribute.n_groups, result.summaries[attribute.name], summarize, n_permutations,
                    _resample.stream(seed, "permutation", attribute.name), groups_valid[k], bar, permuted)
                    if k in tested else {})
                if permuted:
                    _keep(report, "perm", [attribute], {attribute.name: permuted[0]})
        frame = pd.DataFrame.from_dict(rows, orient="index", columns=["delta_dice", "std_dice"])
        frame.index.name = "attribute"
        report.p_values = frame  # evaluate_segmentation adjusts them over every metric (p_adjust)


def _dice_bootstrap(report: FairnessReport, dice: np.ndarray, code_rows: list[np.ndarray], attributes: list,
                    counts: list[np.ndarray], groups_valid: list[np.ndarray], valid: dict[str, bool], n_boot: int,
                    ci: float, seed: Any, stratify: str | None, progress: Any, summarize: Any) -> dict[str, Any]:
    """``report.ci`` of the Dice summary: bootstrap intervals of each group's mean and of each summary
    column (warnings for groups a resample left empty join the report's)."""
    import pandas as pd

    from .._engine import resample as _resample

    sizes = [a.n_groups for a in attributes]
    names = [a.name for a in attributes]
    kept: dict = {}
    groups, summaries, columns, empty = _resample.dice_intervals(
        dice, code_rows, names, sizes, summarize, n_boot, float(ci), seed, groups_valid, stratify, progress,
        kept)
    _keep(report, "boot", attributes, kept)
    group_rows, summary_rows = [], {}
    for a, (attribute, bounds, summary_bounds) in enumerate(zip(attributes, groups, summaries)):
        for i in np.flatnonzero(counts[a]):
            lo, hi = (float(bounds[i, 0]), float(bounds[i, 1])) if groups_valid[a][i] else (math.nan,) * 2
            row = {"attribute": attribute.name, "group": attribute.groups[i], "mean_dice_lo": lo,
                   "mean_dice_hi": hi}
            if stratify is None:
                row["n_empty"] = int(empty[a][i])
                if empty[a][i] and groups_valid[a][i]:
                    report.warnings.append(
                        f"{attribute.name}={attribute.groups[i]}: no sample in {int(empty[a][i])} of {n_boot} "
                        "bootstrap resamples (stratify=None); it is undefined there and left out of their "
                        "summaries")
            group_rows.append(row)
        summary_rows[attribute.name] = ({f"{c}_{side}": float(summary_bounds[j, k]) for j, c in enumerate(columns)
                                         for k, side in enumerate(("lo", "hi"))} if valid[attribute.name] else {})
    summary = pd.DataFrame.from_dict(summary_rows, orient="index",
                                     columns=[f"{c}_{side}" for c in columns for side in ("lo", "hi")])
    summary.index.name = "attribute"
    by_group = (pd.DataFrame(group_rows).set_index(["attribute", "group"]) if group_rows
                else pd.DataFrame(columns=["mean_dice_lo", "mean_dice_hi"]))
    return {"level": float(ci), "n_boot": n_boot, "stratify": stratify, "summary": summary, "by_group": by_group}


def _keep(report: FairnessReport, kind: str, attributes: list[_groups.Attribute], draws: dict) -> None:
    """Resampled group means, kept on the report for :meth:`FairnessReport.pairwise`: per attribute,
    the columns of its groups that ``by_group`` does not skip, in ``by_group`` order."""
    for attribute in attributes:
        if attribute.name not in draws or attribute.name not in report.by_group.index.get_level_values(0):
            continue
        rows = report.by_group.loc[attribute.name]
        index = {group: i for i, group in enumerate(attribute.groups)}
        columns = [index[group] for group in rows.index[rows["skipped"].isna()]]
        report.replicates[(kind, attribute.name, "mean_dice")] = draws[attribute.name][:, columns]
