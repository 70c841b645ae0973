"""The classification metrics, each described once (in the spirit of flox's ``Aggregation``).

A :class:`PerGroup` entry says which per-slot sums a metric needs from the kernels, whether they
need the samples sorted, whether they add up over partitions of the samples, and how the value is
finished from them. A :class:`Summary` entry is a column of the summary table: which per-group
metrics it reads and whether it reads the overall value or the groups' values. The engine, the
one-number functions and the resampling read these tables; adding a metric means an entry here
(and a kernel sum when it needs a new one).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: Suffix of the metrics at each grouping's best-F1 threshold (or the caller's fixed threshold).
BEST = "@best_f1"


@dataclass(frozen=True)
class PerGroup:
    """A per-group metric.

    ``sums`` name the per-slot sums it is finished from: "count", "positives", "negatives",
    "totals" (weighted count), "u2" (twice the Mann-Whitney U; needs the sort), "loss" (summed
    BCE terms), "ece" (from the ECE bin sums), "tp"/"fp" (confusion counts above a threshold),
    "precision" (per tie block with positives, its positives times the precision there; needs the
    sort), "squared_error" (summed ``(y - p)^2``).
    ``additive``: whether partition sums combine by addition (false for the sums of ranks and
    for ECE bins, whose edges depend on every partition's scores).
    ``optional``: computed only when asked for (``metrics=[...]``): not one of fairmedfm's columns.
    ``ranked``: its sums need the samples sorted by score.
    """

    name: str
    display: str
    sums: tuple[str, ...]
    finish: Callable[[Mapping[str, np.ndarray]], np.ndarray]
    at_threshold: bool = False  # computed at a decision threshold: exists with and without BEST
    additive: bool = True
    optional: bool = False
    ranked: bool = False


def _auc(s):
    pairs = 2.0 * s["positives"] * s["negatives"]
    auc = s["u2"] / pairs
    if np.count_nonzero(pairs) < len(pairs):  # a slot lacks a label (or a product underflows to 0)
        auc[(s["positives"] == 0) | (s["negatives"] == 0)] = np.nan
    return auc


def _average_precision(s):
    ap = s["precision"] / s["positives"]
    ap[s["positives"] == 0] = np.nan  # recall is undefined without positives
    return np.asarray(ap, dtype=np.float64)


PER_GROUP: tuple[PerGroup, ...] = (
    PerGroup("auc", "AUC", ("u2", "positives", "negatives"), _auc, additive=False, ranked=True),
    PerGroup("acc", "accuracy", ("tp", "fp", "positives", "negatives"),
             lambda s: (s["tp"] + (s["negatives"] - s["fp"])) / (s["positives"] + s["negatives"]), True),
    PerGroup("bce", "BCE", ("loss", "totals"), lambda s: s["loss"] / s["totals"]),
    PerGroup("ece", "ECE", ("ece",), lambda s: s["ece"], additive=False),
    PerGroup("tpr", "TPR", ("tp", "positives"), lambda s: s["tp"] / s["positives"], True),
    PerGroup("tnr", "TNR", ("fp", "negatives"), lambda s: (s["negatives"] - s["fp"]) / s["negatives"], True),
    PerGroup("tn", "TN", ("fp", "negatives"), lambda s: s["negatives"] - s["fp"], True),
    PerGroup("fp", "FP", ("fp",), lambda s: s["fp"], True),
    PerGroup("fn", "FN", ("tp", "positives"), lambda s: s["positives"] - s["tp"], True),
    PerGroup("tp", "TP", ("tp",), lambda s: s["tp"], True),
    # Opt-in metrics (metrics=[...]), after fairmedfm's columns.
    PerGroup("ap", "average precision", ("precision", "positives"), _average_precision, additive=False,
             optional=True, ranked=True),
    PerGroup("brier", "Brier score", ("squared_error", "totals"), lambda s: s["squared_error"] / s["totals"],
             optional=True),
    PerGroup("selection_rate", "selection rate", ("tp", "fp", "positives", "negatives"),
             lambda s: (s["tp"] + s["fp"]) / (s["positives"] + s["negatives"]), True, optional=True),
    PerGroup("fpr", "FPR", ("fp", "negatives"), lambda s: s["fp"] / s["negatives"], True, optional=True),
    PerGroup("fnr", "FNR", ("tp", "positives"), lambda s: (s["positives"] - s["tp"]) / s["positives"], True,
             optional=True),
)
BY_NAME = {metric.name: metric for metric in PER_GROUP}
#: fairmedfm's per-group metrics, in report order; each also exists with the suffix BEST.
NAMES = tuple(metric.name for metric in PER_GROUP if not metric.optional)
THRESHOLD_NAMES = frozenset(metric.name for metric in PER_GROUP if metric.at_threshold)
#: The opt-in metrics; those at a threshold also exist with the suffix BEST, the others do not.
OPTIONAL_NAMES = tuple(metric.name for metric in PER_GROUP if metric.optional)


def all_keys() -> list[str]:
    """Every default per-group key: the names, then the names with BEST."""
    return [*NAMES, *(name + BEST for name in NAMES)]


def optional_keys(metrics: tuple[str, ...] | list[str] = OPTIONAL_NAMES) -> list[str]:
    """The per-group keys of opt-in ``metrics``, in report order: each name, then those at a
    threshold with BEST."""
    names = [name for name in OPTIONAL_NAMES if name in metrics]
    return [*names, *(name + BEST for name in names if name in THRESHOLD_NAMES)]


#: Every per-group key in report order (fairmedfm's, then the opt-in ones).
KEY_ORDER = (*all_keys(), *optional_keys())


def check_metrics(metrics) -> tuple[str, ...]:
    """The validated opt-in metric names of ``metrics=`` (None: none), in report order."""
    if metrics is None:
        return ()
    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        names = [str(name) for name in metrics]
    except TypeError:
        raise ValueError(f"metrics must be a list of metric names such as ['ap', 'brier'], got "
                         f"{type(metrics).__name__}") from None
    unknown = [name for name in names if name not in OPTIONAL_NAMES]
    if unknown:
        raise ValueError(f"metrics={unknown[0]!r} is not an opt-in metric; choose from {list(OPTIONAL_NAMES)} "
                         "(fairmedfm's metrics are always computed)")
    return tuple(name for name in OPTIONAL_NAMES if name in names)


def needs_sort(keys: set[str], fixed_best: float | None = None) -> bool:
    """Whether these keys need the samples sorted by score: a ranked metric (AUC, AP), or the
    best-F1 sweep for a threshold metric at BEST without a fixed threshold."""
    base = {key.removesuffix(BEST) for key in keys}
    at_best = any(key.endswith(BEST) and key.removesuffix(BEST) in THRESHOLD_NAMES for key in keys)
    return any(BY_NAME[name].ranked for name in base if name in BY_NAME) or (at_best and fixed_best is None)


def finish(sums: Mapping[str, np.ndarray], keys: set[str], suffixes: Mapping[str, Mapping[str, np.ndarray]]
           ) -> dict[str, np.ndarray]:
    """Per-slot values of ``keys`` from the per-slot ``sums``; ``suffixes`` maps "" and BEST to
    the confusion sums ("tp", "fp") at that threshold. A metric that needs no threshold has the
    same value under both keys."""
    names = tuple(suffixes)
    plan = _finish_plan(frozenset(keys), names)
    values: dict[str, np.ndarray] = {}
    if not plan:
        return values
    # The confusion sums of every suffix stacked, (n_suffixes, n_slots): each metric at a threshold is
    # then one NumPy expression for all suffixes (the same arithmetic, element by element).
    stacked = None
    if names:
        tp = [suffixes[suffix]["tp"] for suffix in names]
        fp = [suffixes[suffix]["fp"] for suffix in names]
        if len({array.dtype for array in (*tp, *fp)}) == 1:
            # np.concatenate, not np.stack (whose Python checks cost more than the copy)
            stacked = {**sums, "tp": np.concatenate(tp).reshape(len(names), -1),
                       "fp": np.concatenate(fp).reshape(len(names), -1)}
    with np.errstate(divide="ignore", invalid="ignore"):
        for metric, at_threshold, wanted in plan:
            if not at_threshold:
                value = metric.finish(sums)
                for key in wanted:
                    values[key] = value
            elif stacked is not None:
                value = metric.finish(stacked)
                stacked_value = getattr(value, "ndim", 0) == 2
                for j, key in wanted:
                    values[key] = value[j] if stacked_value else value
            else:
                for j, key in wanted:
                    values[key] = metric.finish({**sums, **suffixes[names[j]]})
    return values


@lru_cache(maxsize=256)
def _finish_plan(keys: frozenset[str], names: tuple[str, ...]) -> tuple:
    """(metric, at a threshold, the keys it gives) for each metric that ``keys`` ask for; at a
    threshold, each key with the position of its suffix in ``names``."""
    plan = []
    for metric in PER_GROUP:
        if metric.at_threshold:
            wanted = tuple((j, metric.name + suffix) for j, suffix in enumerate(names) if metric.name + suffix in keys)
        else:
            wanted = tuple(key for key in (metric.name, metric.name + BEST) if key in keys)
        if wanted:
            plan.append((metric, metric.at_threshold, wanted))
    return tuple(plan)


@dataclass(frozen=True)
class Summary:
    """A summary column: ``reads`` per-group keys, of the overall slot (``kind`` "overall"), of the
    groups ("gap": largest minus smallest; "worst": smallest; "eod": 1 - mean of two gaps)."""

    column: str
    kind: str
    reads: tuple[str, ...]
    optional: bool = False  # reads an opt-in metric: present only when that metric is asked for


SUMMARIES: tuple[Summary, ...] = (
    Summary("overall-auc", "overall", ("auc",)),
    Summary("overall-acc", "overall", ("acc" + BEST,)),
    Summary("overall-bce", "overall", ("bce",)),
    Summary("overall-ece", "overall", ("ece",)),
    Summary("worst-auc", "worst", ("auc",)),
    Summary("auc-gap", "gap", ("auc",)),
    Summary("acc-gap", "gap", ("acc" + BEST,)),
    Summary("bce-gap", "gap", ("bce",)),
    Summary("ece-gap", "gap", ("ece",)),
    Summary("eod", "eod", ("tpr" + BEST, "tnr" + BEST)),
    Summary("eo", "gap", ("tpr" + BEST,)),
    Summary("ap-gap", "gap", ("ap",), optional=True),
    Summary("brier-gap", "gap", ("brier",), optional=True),
    Summary("dp", "gap", ("selection_rate" + BEST,), optional=True),  # demographic parity difference
    Summary("fpr-gap", "gap", ("fpr" + BEST,), optional=True),
    Summary("fnr-gap", "gap", ("fnr" + BEST,), optional=True),
)
SUMMARY = {summary.column: summary for summary in SUMMARIES}


@lru_cache(maxsize=64)
def needs(column: str) -> frozenset[str]:
    """The per-group keys summary ``column`` reads (one frozen set per column: its hash, which the
    engine's plans are cached by, is computed once)."""
    return frozenset(SUMMARY[column].reads)


def optional_gaps(keys) -> list[str]:
    """The opt-in summary columns (all gaps) that per-group ``keys`` determine, in report order."""
    return [summary.column for summary in SUMMARIES
            if summary.optional and all(key in keys for key in summary.reads)]
