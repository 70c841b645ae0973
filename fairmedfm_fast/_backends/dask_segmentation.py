"""Segmentation fairness on Dask: Dice (or every mask metric) computed on the workers, next to the mask
files, and the in-memory report of the per-sample values (:func:`evaluate_segmentation`). The
classification backend is ``dask.py``.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._inputs import groups as _groups
from .._report.frame import FairnessReport
from .._util.progress import Progress, check
from .dask import import_dask

__all__ = ["evaluate_segmentation"]


DiceFunction = Callable[..., np.ndarray]


def _default_dice() -> DiceFunction:
    try:
        from .segmentation import dice_scores
    except ImportError:
        raise ImportError("this build of fairmedfm_fast has no mask reader (fairmedfm_fast.segmentation); "
                          "pass dice_function=, a function (pred_paths, true_paths, label=, "
                          "mask_threshold=, empty_score=) -> Dice per pair") from None
    return dice_scores


def _mask_paths(part: pd.DataFrame, pred_mask: str, true_mask: str, base: str | None) -> list[list[str]]:
    """The predicted and ground-truth mask paths of one partition's rows."""
    paths = []
    for column in (pred_mask, true_mask):
        values = part[column].tolist()
        for value in values:
            if not isinstance(value, str) or not value:
                raise ValueError(f"column {column!r} has {value!r} where a mask file path should be; every "
                                 "sample needs both mask files")
        paths.append([value if base is None else os.path.join(base, value) for value in values])
    return paths


def _partition_measures(part: pd.DataFrame, names: list[str], pred_mask: str, true_mask: str, base: str | None,
                        label: Any, mask_threshold: float, options: Any) -> pd.DataFrame:
    """The attributes ``names`` of one partition's rows beside the per-sample table of
    :func:`fairmedfm_fast._surface.measure` (voxel counts, surface distances, NSD, diagonal) of its
    mask pairs, computed where the partition lives."""
    from .._engine import surface as _surface

    columns = [f"__{column}__" for column in _surface.COLUMNS]
    if len(part) == 0:
        table = np.empty((0, len(columns)))
    else:
        paths = _mask_paths(part, pred_mask, true_mask, base)
        table = _surface.measure(paths[0], paths[1], label=label, mask_threshold=mask_threshold, options=options,
                                 n_jobs=1)
    return part[names].assign(**dict(zip(columns, table.T)))


def _partition_dice(part: pd.DataFrame, pred_mask: str, true_mask: str, base: str | None,
                    dice_function: DiceFunction | None, options: dict[str, Any]) -> pd.Series:
    """Dice of one partition's mask pairs, computed where the partition lives."""
    if len(part) == 0:
        return pd.Series(np.empty(0), index=part.index, dtype=np.float64)
    paths = _mask_paths(part, pred_mask, true_mask, base)
    function = dice_function or _default_dice()
    if dice_function is None:
        options = {**options, "n_jobs": 1}  # one task per worker thread already
    return pd.Series(np.asarray(function(paths[0], paths[1], **options), np.float64), index=part.index)


def evaluate_segmentation(ddf: Any, *, sensitive: str | Sequence[str], dice: str | None = None,
                          pred_mask: str | None = None, true_mask: str | None = None, label: Any = None,
                          mask_threshold: float = 0.5, empty_score: float = 1.0, base: str | None = None,
                          bins: _groups.Bins | None = None, intersectional: bool = False,
                          dice_function: DiceFunction | None = None, **options: Any) -> FairnessReport:
    """Fairness of a segmentation model from a Dask DataFrame of mask paths (or Dice scores).

    The masks are read and compared on the workers, partition by partition (each worker must be able
    to open the paths: a shared file system, or the files placed next to the worker that holds the
    partition). What comes back to the client is one Dice score and the attribute values per sample;
    the report is then :func:`fairmedfm_fast.evaluate_segmentation` of those, so it is the same.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per sample.
    sensitive : str or list of str
        The attribute columns.
    dice : str, optional
        A column of Dice scores already computed (then no mask is read).
    pred_mask, true_mask : str, optional
        Columns of predicted and ground-truth mask file paths (``.npy``, ``.npz``, images, NIfTI).
    label, mask_threshold, empty_score
        As in :func:`fairmedfm_fast.evaluate_segmentation`.
    base : str, optional
        Folder that relative paths are relative to (as the workers see it).
    bins, intersectional
        As in :func:`fairmedfm_fast.evaluate_segmentation`.
    dice_function : callable, optional
        ``f(pred_paths, true_paths, label=, mask_threshold=, empty_score=)`` returning the Dice of each
        pair; defaults to :func:`fairmedfm_fast.segmentation.dice_scores` (one thread per task).
    **options
        Passed on to :func:`fairmedfm_fast.evaluate_segmentation` (e.g. ``n_boot``, ``ci``,
        ``n_permutations``, ``random_state``, ``progress``: also a line with the time spent reading
        the masks on the workers). ``metrics=`` beyond Dice (``"hd95"``, ``"hd"``, ``"assd"``,
        ``"nsd"``) are measured on the workers too (8 numbers a sample come back); ``spacing=`` is
        then one size per axis, or None for each ground-truth NIfTI header's zooms.

    Returns
    -------
    FairnessReport
    """
    _, dd = import_dask()
    if not isinstance(ddf, dd.DataFrame):
        raise ValueError(f"ddf must be a dask.dataframe.DataFrame, got {type(ddf).__name__}")
    names = [sensitive] if isinstance(sensitive, str) else [str(name) for name in sensitive or []]
    if not names:
        raise ValueError("sensitive names no column: pass the attribute columns, e.g. sensitive=['sex']")
    if (dice is not None) == (pred_mask is not None or true_mask is not None) or \
            (dice is None and (pred_mask is None or true_mask is None)):
        raise ValueError("give either dice= (a column of Dice scores) or both pred_mask= and true_mask= "
                         "(columns of mask file paths)")
    wanted = [dice] if dice is not None else [pred_mask, true_mask]
    columns = [str(c) for c in ddf.columns]
    for option, name in zip(("dice",) if dice is not None else ("pred_mask", "true_mask"), wanted):
        if name not in columns:
            raise ValueError(f"{option}={name!r} is not a column of ddf; its columns are {columns[:30]}")
    unknown = [name for name in names if name not in columns]
    if unknown:
        raise ValueError(f"sensitive={unknown[0]!r} is not a column of ddf; its columns are {columns[:30]}")
    if dice is None and _beyond_dice(options, empty_score):
        return _surface_report(ddf, names, pred_mask, true_mask, base, label, mask_threshold, empty_score, bins,
                               intersectional, dice_function, options)
    if dice is None:
        reading = {"label": label, "mask_threshold": mask_threshold, "empty_score": empty_score}
        scores = ddf.map_partitions(_partition_dice, pred_mask, true_mask, base, dice_function, reading,
                                    meta=pd.Series(dtype=np.float64))
        with Progress(None, "dask: reading masks", check(options.get("progress"))):
            table = ddf[names].assign(**{"__dice__": scores}).compute()
        values = table.pop("__dice__")
    else:
        table = ddf[list(dict.fromkeys([*names, dice]))].compute()
        values = table[dice]
    from .segmentation import evaluate_segmentation as in_memory  # not the package root: no circle

    report = in_memory(table[names].reset_index(drop=True), dice=values.to_numpy(), bins=bins,
                       intersectional=intersectional, **options)
    if dice is None:  # what the in-memory function records when it reads the masks itself
        report.metadata.update({"dice_from_masks": True, "empty_score": empty_score, "label": label})
    return report


def _beyond_dice(options: dict[str, Any], empty_score: Any) -> bool:
    """Whether ``metrics=`` asks for more than the Dice scores (as the in-memory function decides)."""
    if options.get("metrics") is None:
        return False
    from .._engine import surface as _surface

    wanted = _surface.check_options(options["metrics"], options.get("percentile", 95.0), options.get("nsd_tolerance"),
                                    options.get("hd_definition", "medpy"), options.get("empty_distance", "nan"))
    return wanted != ["dice"] or isinstance(empty_score, dict)


def _surface_report(ddf: Any, names: list[str], pred_mask: str, true_mask: str, base: str | None, label: Any,
                    mask_threshold: float, empty_score: Any, bins: Any, intersectional: bool,
                    dice_function: DiceFunction | None, options: dict[str, Any]) -> FairnessReport:
    """``metrics=`` beyond Dice: each worker measures its partition's pairs (voxel counts, surface
    distances, NSD: one row of 8 numbers per sample), and the client makes the in-memory report of
    those rows, so every metric, warning and empty-mask rule is the in-memory one."""
    from .._engine import surface as _surface
    from .segmentation import evaluate_segmentation as in_memory  # not the package root: no circle

    if dice_function is not None:
        raise ValueError("dice_function= gives Dice only; drop it to get metrics= beyond Dice from the masks")
    spacing = options.get("spacing")
    if spacing is not None and np.ndim(spacing) != 1:
        raise ValueError(f"spacing has shape {np.shape(spacing)}; on Dask pass one size per axis (or none: each "
                         "ground-truth NIfTI header's zooms are read on the workers)")
    nsd_tolerance = options.get("nsd_tolerance")
    measuring = _surface.Options(float(options.get("percentile", 95.0)),
                                 math.nan if nsd_tolerance is None else float(nsd_tolerance),
                                 options.get("hd_definition", "medpy"), spacing)
    columns = [f"__{column}__" for column in _surface.COLUMNS]
    meta = ddf._meta[names].assign(**{name: np.empty(0) for name in columns})
    ddf = ddf[list(dict.fromkeys([*names, pred_mask, true_mask]))]
    measures = ddf.map_partitions(_partition_measures, names, pred_mask, true_mask, base, label, mask_threshold,
                                  measuring, meta=meta)
    with Progress(None, "dask: reading masks", check(options.get("progress"))):
        table = measures.compute()
    measured = _surface.Measured(table[columns].to_numpy(np.float64))
    return in_memory(table[names].reset_index(drop=True), pred_masks=measured, true_masks=measured, label=label,
                     mask_threshold=mask_threshold, empty_score=empty_score, bins=bins, intersectional=intersectional,
                     **options)
