"""Checks of the options that the evaluation functions share (``threshold``, ``sample_weight``,
``min_group_size``, resampling counts, ``interval``): each bad value a ValueError that names the
argument and the fix."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._engine import resample as _resample
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups


def require_both_labels(labels: np.ndarray) -> None:
    positives = int(np.count_nonzero(labels))
    if positives == 0 or positives == len(labels):
        only = 1 if positives else 0
        raise ValueError(f"y_true has only label {only} ({len(labels)} samples); fairness metrics need both "
                         "positive and negative samples")


def check_min_group_size(min_group_size: Any) -> int | None:
    if min_group_size is None:
        return None
    if isinstance(min_group_size, bool) or not isinstance(min_group_size, (int, np.integer)) or min_group_size < 1:
        raise ValueError(f"min_group_size must be a positive integer (groups with fewer samples are skipped) "
                         f"or None; got {min_group_size!r}")
    return int(min_group_size)


def check_interval(interval: Any, sample_weight: Any) -> None:
    if not (interval is None or (isinstance(interval, str) and interval == "analytic")):
        raise ValueError(f"interval must be None or 'analytic' (DeLong, Wilson and Newcombe intervals from the "
                         f"one sort); got {_inputs.shown(interval)}")
    if interval is not None and sample_weight is not None:
        raise ValueError("interval='analytic' does not take sample_weight (DeLong's and Wilson's formulas count "
                         "samples); leave sample_weight out, or use n_boot for bootstrap intervals with weights")


def check_threshold(threshold: Any) -> float | None:
    if threshold is None:
        return None
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number such as 0.5, got {_inputs.shown(threshold)}") from None
    if not 0 <= value <= 1:  # also NaN
        raise ValueError(f"threshold={_inputs.shown(threshold)} is outside [0, 1]; the scores are probabilities "
                         "and a sample is predicted positive when its score > threshold, so give a threshold "
                         "such as 0.5")
    return value


def sample_weights(sample_weight: Any, n: int) -> np.ndarray | None:
    """Validated float64 sample weights, or None."""
    if sample_weight is None:
        return None
    weights = _inputs.to_numpy(sample_weight, "sample_weight")
    if weights.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must be numeric, got dtype {weights.dtype}")
    weights = weights.astype(np.float64).ravel()
    if len(weights) != n:
        raise ValueError(f"sample_weight has {len(weights)} values but there are {n} samples; pass one "
                         "weight per sample")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and non-negative; "
                         f"got values such as {_inputs.preview(weights[~np.isfinite(weights) | (weights < 0)])}")
    if not weights.any():
        raise ValueError("sample_weight is zero for every sample; at least one sample needs weight")
    return weights


def check_resampling(attributes: list[_groups.Attribute], n_boot: int, n_permutations: int, per_group: int) -> None:
    """A ValueError naming ``n_boot`` or ``n_permutations`` when their results would not fit in memory:
    ``per_group`` float64 values per group and resample (and as many summary values per attribute),
    ``len(_resample.GAP_COLUMNS)`` per permutation."""
    values = sum(attribute.n_groups + 1 for attribute in attributes) * per_group
    _inputs.check_memory("n_boot", n_boot, 8 * values, "the bootstrap results", "n_boot=1000")
    _inputs.check_memory("n_permutations", n_permutations, 8 * len(_resample.GAP_COLUMNS), "the permuted gaps",
                         "n_permutations=1000")


def check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer (0 turns it off), got {_inputs.shown(value)}")
    return int(value)


def check_cut_points(bins: Any) -> dict[str, Any]:
    """The cut points of an accumulator's ``bins`` (quantile groups need every value at once)."""
    if bins is None:
        return {}
    if not isinstance(bins, dict):
        raise ValueError(f"bins must be a dict such as {{'age': [40, 60]}}, got {type(bins).__name__}")
    checked = {}
    for name, spec in bins.items():
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            raise ValueError(f"bins[{str(name)!r}]={spec}: quantile groups need every value at once, which an "
                             f"accumulator does not keep; pass cut points, e.g. the quantiles of the training "
                             f"set: bins={{{str(name)!r}: list(np.quantile(train_{name}, [0.25, 0.5, 0.75]))}}")
        cut_point_groups(spec, str(name))  # validates the cut points
        checked[str(name)] = spec
    return checked


def cut_point_groups(spec: Any, name: str) -> list[str]:
    """Every group of cut points ``spec``, in their order (``binned`` of a value in each)."""
    edges = np.asarray(spec, dtype=np.float64) if not isinstance(spec, (str, bytes)) else spec
    probe = np.concatenate(([-np.inf], np.sort(edges))) if isinstance(edges, np.ndarray) else edges
    return _groups.binned(_inputs.pd.Series(probe), spec, name)[1]
