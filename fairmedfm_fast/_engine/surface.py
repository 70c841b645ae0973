"""Surface distances of mask pairs: per sample, HD at a percentile (HD95), HD, ASSD and NSD.

Each pair is read once (in the thread pool of :func:`fairmedfm_fast._masks.map_pairs`), its
foreground decided by the rules of Dice, both masks cropped to the bounding box of their union,
and the kernels of :mod:`fairmedfm_fast.kernels.surface` measure it. The same pass gives the three
voxel counts of Dice. Definitions and empty-mask conventions: docs/segmentation-distances.md.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._inputs import mask_files as _mask_files
from .._inputs import masks as _masks
from .._registry import metrics as _metric_registry

#: Columns of the per-sample table: voxel counts, then the metrics of non-empty pairs, then the
#: image diagonal (for ``empty_distance="diagonal"``).
COLUMNS = ("n_pred", "n_true", "n_both", "hd95", "hd", "assd", "nsd", "diagonal")
_DEFINITIONS = ("medpy", "monai")


@dataclass(frozen=True)
class Options:
    """How to measure: percentile in [0, 100], NSD tolerance (same unit as the spacing),
    ``hd_definition`` ("medpy": percentile of both directions pooled; "monai": larger of the two
    directed percentiles) and the spacing (None, one per axis, or one row per sample)."""

    percentile: float = 95.0
    nsd_tolerance: float = math.nan
    hd_definition: str = "medpy"
    spacing: Any = None


def check_options(metrics: Any, percentile: Any, nsd_tolerance: Any, hd_definition: Any,
                  empty_distance: Any) -> list[str]:
    """The requested metrics as a list, after checking every option (ValueError naming it)."""
    if isinstance(metrics, str):
        metrics = [metrics]
    registry = _metric_registry.REGISTRY
    try:
        requested = [str(m) for m in metrics]
    except TypeError:
        names = [metric.name for metric in registry.segmentation]
        raise ValueError(f"metrics={metrics!r} must be a list of metric names from {names}") from None
    wanted = [registry.segmentation_name(m) for m in requested]  # without regard to case, as registered
    if None in wanted and registry.load_plugins():  # a metric of an installed plugin
        wanted = [registry.segmentation_name(m) for m in requested]
    names = [metric.name for metric in registry.segmentation]  # the registry's, in report order
    if None in wanted or not wanted or len(set(wanted)) != len(wanted):
        raise ValueError(f"metrics={metrics!r}: give distinct names from {names}, e.g. "
                         "metrics=['dice', 'hd95', 'assd', 'nsd']")
    if not (isinstance(percentile, (int, float, np.integer, np.floating)) and not isinstance(percentile, bool)
            and 0 <= percentile <= 100):
        raise ValueError(f"percentile={percentile!r} must be a number in [0, 100], such as 95 (HD95)")
    if "nsd" in wanted and not (isinstance(nsd_tolerance, (int, float, np.integer, np.floating))
                                and not isinstance(nsd_tolerance, bool) and nsd_tolerance >= 0
                                and math.isfinite(nsd_tolerance)):
        raise ValueError(f"nsd_tolerance={nsd_tolerance!r}: NSD needs a tolerance >= 0 in the unit of the "
                         "spacing (mm for NIfTI), e.g. nsd_tolerance=2.0")
    if hd_definition not in _DEFINITIONS:
        raise ValueError(f"hd_definition={hd_definition!r} must be 'medpy' (percentile of both directions "
                         "pooled) or 'monai' (larger of the two directed percentiles)")
    if not (empty_distance in ("nan", "inf", "diagonal") or (
            isinstance(empty_distance, (int, float, np.integer, np.floating)) and not isinstance(empty_distance, bool)
            and empty_distance >= 0)):
        raise ValueError(f"empty_distance={empty_distance!r} must be 'nan', 'inf', 'diagonal' or a distance >= 0: "
                         "the HD, HD95 and ASSD of a sample with exactly one empty mask")
    return [m for m in names if m in wanted]


def _file_spacing(true: np.ndarray, item: Any) -> tuple[float, ...] | None:
    """``nifti_spacing(item)``, read from the header in memory when ``true`` was read from the
    ``.nii.gz`` file ``item`` as a view of its decompressed bytes (header first; see
    ``read_mask_file``): the file is not opened and inflated again while holding the GIL."""
    if isinstance(item, (str, os.PathLike)) and str(item).lower().endswith(".nii.gz"):
        base = true
        while isinstance(base, np.ndarray):
            base = base.base
        plain = _mask_files.plain_nifti1(base) if isinstance(base, bytes) else None
        if plain is not None and math.prod(plain[0]) == true.size:
            return tuple(z for size, z in zip(plain[0], plain[4]) if size != 1)
    return _mask_files.nifti_spacing(item)


def _spacing_of(i: int, spacing: Any, item: Any, ndim: int, true: Any = None) -> np.ndarray:
    """The voxel size of sample ``i``: from ``spacing``, else the ground truth's NIfTI header, else 1."""
    if spacing is None:
        header = _file_spacing(true, item)
        values = np.ones(ndim) if header is None else np.asarray(header, np.float64)
        where = f"the NIfTI header of true_masks[{i}]"
    else:
        try:
            values = np.asarray(spacing, np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"spacing={spacing!r} must hold numbers: one voxel size per axis, or one row per "
                             "sample") from None
        if values.ndim == 2:
            if i >= len(values):
                raise ValueError(f"spacing has {len(values)} rows but there are more samples; pass one row per "
                                 "sample or one size per axis")
            values = values[i]
        if values.ndim == 0:
            values = np.full(ndim, float(values))
        where = "spacing"
    if values.shape != (ndim,) or not (np.all(np.isfinite(values)) and np.all(values > 0)):
        raise ValueError(f"sample {i}: {where} gives the voxel size {values.tolist()} but the masks have {ndim} "
                         "axes (after dropping axes of length 1); pass spacing= with one positive size per axis, "
                         "or one row per sample")
    return values


def _foreground(mask: np.ndarray, label: Any, threshold: Any, prediction: bool):
    """``mask`` in a kernel dtype and its foreground interval (low, high)."""
    array = _mask_files.kernel_array(mask)
    rule = None
    if array is not None:
        rule = _mask_files.foreground_rule(mask.dtype, array.dtype, label, threshold, prediction)
    if rule is None:
        array = np.ascontiguousarray(_mask_files.numpy_foreground(mask, label, threshold, prediction)).view(np.uint8)
        return array, np.uint8(1), np.uint8(1)
    if rule.kind == "probability":
        from ..kernels import surface

        flat = array if array.flags.c_contiguous else array.T if array.flags.f_contiguous else np.ascontiguousarray(array)
        low = rule.low if surface.unit_interval(flat) else rule.high
        return array, low, array.dtype.type(np.inf)
    return array, rule.low, rule.high


def _as_volumes(i: int, pred: np.ndarray, true: np.ndarray, spacing: np.ndarray):
    """Both masks as 3-D C-contiguous arrays in the same axis order, with the spacing reordered."""
    if pred.shape != true.shape:
        raise ValueError(f"sample {i}: the predicted mask has shape {pred.shape} but the ground-truth mask has "
                         f"shape {true.shape}; each pair of masks must have the same shape (after dropping "
                         "axes of length 1)")
    reference = pred if pred.flags.c_contiguous or pred.flags.f_contiguous or not true.flags.f_contiguous else true
    axes = sorted(range(pred.ndim), key=lambda axis: -abs(reference.strides[axis]))
    pred, true = np.ascontiguousarray(pred.transpose(axes)), np.ascontiguousarray(true.transpose(axes))
    shape = (1,) * (3 - pred.ndim) + pred.shape
    full = np.ones(3)
    full[3 - pred.ndim:] = spacing[axes]
    return pred.reshape(shape), true.reshape(shape), full


def measure_pair(i: int, pred: np.ndarray, true: np.ndarray, item: Any, label: Any, threshold: Any,
                 options: Options) -> np.ndarray:
    """The row of ``COLUMNS`` for one sample (metrics NaN when a mask is empty)."""
    from ..kernels import surface

    row = np.full(len(COLUMNS), np.nan)
    given = true
    pred, p_low, p_high = _foreground(pred, label, threshold, prediction=True)
    true, t_low, t_high = _foreground(true, label, threshold, prediction=False)
    ndim = max(pred.ndim, 1)
    if ndim > 3:
        raise ValueError(f"sample {i}: the masks have shape {pred.shape}; surface distances take 2-D or 3-D masks "
                         "(axes of length 1 are dropped)")
    spacing = _spacing_of(i, options.spacing, item, pred.ndim, given) if pred.ndim else np.ones(0)
    pred, true, spacing3 = _as_volumes(i, pred, true, spacing)
    row[7] = math.sqrt(sum((n * s) ** 2 for n, s in zip(pred.shape, spacing3)))
    counts = np.empty(3, np.int64)
    a, b = surface.crop_pair(pred, p_low, p_high, true, t_low, t_high, counts)
    row[:3] = counts
    if counts[0] and counts[1]:
        surface.surface_measures(a, b, spacing3, ndim, options.percentile / 100, options.nsd_tolerance,
                                 options.hd_definition == "monai", row[3:7])
    return row


class Measured:
    """The rows of :func:`measure` computed elsewhere (by ``fairmedfm_fast.dask`` on its workers), given
    as ``pred_masks``: :func:`measure` returns them as they are."""

    def __init__(self, table: np.ndarray):
        self.table = table


def measure(pred_masks: Any, true_masks: Any, *, label: Any, mask_threshold: Any, options: Options,
            n_jobs: Any = None, progress: bool | None = None) -> np.ndarray:
    """One row of ``COLUMNS`` per sample, float64 array of shape (n_samples, 8)."""
    if isinstance(pred_masks, Measured):
        return pred_masks.table
    spacing = options.spacing
    if spacing is not None and np.ndim(spacing) > 2:
        raise ValueError(f"spacing has shape {np.shape(spacing)}; pass one size per axis, or one row per sample")

    def one(i, pred, true, item):
        return measure_pair(i, pred, true, item, label, mask_threshold, options)

    rows = _masks.map_pairs(one, pred_masks, true_masks, n_jobs, progress)
    if spacing is not None and np.ndim(spacing) == 2 and len(spacing) != len(rows):
        raise ValueError(f"spacing has {len(spacing)} rows but there are {len(rows)} samples; pass one row per "
                         "sample or one size per axis")
    return np.array(rows, np.float64).reshape(len(rows), len(COLUMNS))


@dataclass
class Values:
    """Per-sample values of each metric, and how many pairs had an empty mask."""

    metrics: dict[str, np.ndarray]
    counts: np.ndarray  # (n, 3) voxel counts for Dice
    both_empty: int
    one_empty: int
    warnings: list[str]


def finish(table: np.ndarray, metrics: list[str], empty_score: Any, empty_distance: Any) -> Values:
    """Apply the empty-mask conventions (docs/segmentation-distances.md) to the per-sample table."""
    counts = table[:, :3].astype(np.int64)
    pred_empty, true_empty = counts[:, 0] == 0, counts[:, 1] == 0
    both = pred_empty & true_empty
    one = pred_empty ^ true_empty
    surface_scores = isinstance(empty_score, dict)
    if surface_scores:
        names = [metric.name for metric in _metric_registry.REGISTRY.segmentation]
        unknown = sorted(set(empty_score) - set(names))
        if unknown:
            raise ValueError(f"empty_score has unknown metrics {unknown}; use names from {names}")
    dice_empty = empty_score.get("dice", 1.0) if surface_scores else empty_score
    _masks.check_empty_score(dice_empty)
    values: dict[str, np.ndarray] = {}
    warnings: list[str] = []
    for metric in metrics:
        entry = _metric_registry.segmentation_metric(metric)
        if metric == "dice":
            values[metric] = _masks.dice_from_counts(counts, dice_empty)
            continue
        if entry.from_counts is not None:  # a registered metric of the voxel counts
            column = np.asarray(entry.from_counts(counts), np.float64).copy()
            column[both] = float(empty_score.get(metric, 1.0)) if surface_scores else float(empty_score)
            values[metric] = column
            continue
        column = table[:, COLUMNS.index(metric)].copy()
        if metric == "nsd":
            column[one] = 0.0  # no boundary point of either mask lies within the tolerance
        elif empty_distance == "inf":
            column[one] = np.inf
        elif empty_distance == "diagonal":
            column[one] = table[one, COLUMNS.index("diagonal")]
        elif empty_distance != "nan":
            column[one] = float(empty_distance)
        if surface_scores and metric in empty_score:
            column[both] = float(empty_score[metric])
        values[metric] = column
    n_both, n_one = int(both.sum()), int(one.sum())
    distances = [m for m in metrics if _metric_registry.segmentation_metric(m).unit == "distance"]
    if n_both and [m for m in metrics if _metric_registry.segmentation_metric(m).from_counts is None
                   and not (surface_scores and m in empty_score)]:
        warnings.append(f"{n_both} samples have both masks empty: their surface distances are undefined (NaN) and "
                        "left out (set a value with empty_score={'hd95': 0.0, 'nsd': 1.0, ...})")
    if n_one and distances and empty_distance == "nan":
        warnings.append(f"{n_one} samples have exactly one empty mask: their {', '.join(distances)} are undefined "
                        "(NaN) and left out (empty_distance='inf', 'diagonal' or a number sets a value)")
    return Values(values, counts, n_both, n_one, warnings)
