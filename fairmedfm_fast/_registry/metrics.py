"""The metric registry's questions and registrations, answered from :data:`REGISTRY`.

The entries (what a metric, a sum, a summary column is) are :mod:`.entries`; the tables live in one
object, :data:`~.registry.REGISTRY`. The engine, the summary, the resampling, the plots, the page,
the CLI help and the one-number functions ask the functions here, which read the registry at each
call (their caches are cleared when it changes). :func:`register_metric` and
:func:`register_segmentation_metric` check and build entries and hand them to the registry.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from .entries import BEST as BEST
from .entries import KINDS as KINDS
from .entries import NAMES as NAMES
from .entries import OPTIONAL_NAMES as OPTIONAL_NAMES
from .entries import PASSES as PASSES
from .entries import SORTED_PASSES as SORTED_PASSES
from .entries import TESTED_ORDER as TESTED_ORDER
from .entries import PerGroup as PerGroup
from .entries import PerSample as PerSample
from .entries import Sum as Sum
from .entries import Summary as Summary
from .registry import ENTRY_POINTS as ENTRY_POINTS
from .registry import REGISTRY

if TYPE_CHECKING:
    import numpy as np

#: The per-slot sums that every backend computes for any metric (the confusion counts "tp" and
#: "fp" at each threshold of a metric ``at_threshold``).
BASIC_SUMS = ("count", "positives", "negatives", "totals", "tp", "fp")


@REGISTRY.derived
@lru_cache(maxsize=256)
def optional_sums(names: frozenset[str]) -> tuple[str, ...]:
    """The optional sums (in table order) that the metrics ``names`` (base names, no BEST) read."""
    read = {need for name in names if name in REGISTRY.by_name for need in REGISTRY.by_name[name].sums}
    return tuple(entry.name for entry in REGISTRY.sums if entry.optional and entry.name in read)


@REGISTRY.derived
@lru_cache(maxsize=256)
def passes(names: frozenset[str]) -> frozenset[str]:
    """The kernel passes (keys of :data:`PASSES`) that make the sums the metrics ``names`` (base
    names, no BEST) read: what a backend runs for them."""
    return frozenset(REGISTRY.sum[need].made_by for name in names if name in REGISTRY.by_name for need in REGISTRY.by_name[name].sums)


def sums_made_by(made_by: str, names: frozenset[str]) -> tuple[Sum, ...]:
    """The sum entries, in table order, made by the pass ``made_by`` that the metrics ``names`` read."""
    return tuple(REGISTRY.sum[name] for name in optional_sums(names) if REGISTRY.sum[name].made_by == made_by)



def all_keys() -> list[str]:
    """Every default per-group key: the names, then the names with BEST."""
    return [*NAMES, *(name + BEST for name in NAMES)]


def optional_keys(metrics: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """The per-group keys of opt-in ``metrics`` (default: all), in report order: each name, then
    those at a threshold with BEST."""
    names = [name for name in REGISTRY.optional_names if metrics is None or name in metrics]
    return [*names, *(name + BEST for name in names if name in REGISTRY.threshold_names)]




def check_metrics(metrics) -> tuple[str, ...]:
    """The validated opt-in metric names of ``metrics=`` (None: none), as registered, in report order.
    Names are matched without regard to case."""
    if metrics is None:
        return ()
    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        names = [str(name) for name in metrics]
    except TypeError:
        raise ValueError(f"metrics must be a list of metric names such as ['ap', 'brier'], got "
                         f"{type(metrics).__name__}") from None
    found = [_opt_in(name) for name in names]
    if None in found and REGISTRY.load_plugins():  # a metric of an installed plugin, registered on first use
        found = [_opt_in(name) for name in names]
    if None in found:
        raise ValueError(f"metrics={names[found.index(None)]!r} is not an opt-in metric; choose from "
                         f"{list(REGISTRY.optional_names)} (fairmedfm's metrics are always computed)")
    return tuple(name for name in REGISTRY.optional_names if name in found)


def _opt_in(name: str) -> str | None:
    """The registered spelling of opt-in metric ``name`` (any case), or None."""
    found = REGISTRY.canonical(name)
    return found if found is not None and REGISTRY.by_name[found].optional else None


def load_plugins() -> bool:
    """Import the plugin modules of the entry-point group, once per process; whether any was new."""
    return REGISTRY.load_plugins()


def finished_from(keys, sums) -> bool:
    """Whether every metric of per-group ``keys`` is finished from ``sums`` alone."""
    return all(set(REGISTRY.by_name[key.removesuffix(BEST)].sums) <= sums for key in keys)


def needs_sort(keys: set[str], fixed_best: float | None = None) -> bool:
    """Whether these keys need the samples sorted by score: a ranked metric (AUC, AP), or the
    best-F1 sweep for a threshold metric at BEST without a fixed threshold."""
    base = frozenset(key.removesuffix(BEST) for key in keys)
    at_best = any(key.endswith(BEST) and key.removesuffix(BEST) in REGISTRY.threshold_names for key in keys)
    return bool(passes(base) & SORTED_PASSES) or (at_best and fixed_best is None)


def finish(sums: Mapping[str, np.ndarray], keys: set[str], suffixes: Mapping[str, Mapping[str, np.ndarray]]
           ) -> dict[str, np.ndarray]:
    """Per-slot values of ``keys`` from the per-slot ``sums``; ``suffixes`` maps "" and BEST to
    the confusion sums ("tp", "fp") at that threshold. A metric that needs no threshold has the
    same value under both keys."""
    import numpy as np

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


@REGISTRY.derived
@lru_cache(maxsize=256)
def _finish_plan(keys: frozenset[str], names: tuple[str, ...]) -> tuple:
    """(metric, at a threshold, the keys it gives) for each metric that ``keys`` ask for; at a
    threshold, each key with the position of its suffix in ``names``."""
    plan = []
    for metric in REGISTRY.per_group:
        if metric.at_threshold:
            wanted = tuple((j, metric.name + suffix) for j, suffix in enumerate(names) if metric.name + suffix in keys)
        else:
            wanted = tuple(key for key in (metric.name, metric.name + BEST) if key in keys)
        if wanted:
            plan.append((metric, metric.at_threshold, wanted))
    return tuple(plan)


@REGISTRY.derived
@lru_cache(maxsize=64)
def needs(column: str) -> frozenset[str]:
    """The per-group keys summary ``column`` reads (one frozen set per column: its hash, which the
    engine's plans are cached by, is computed once)."""
    return frozenset(REGISTRY.summary[column].reads)


def summarize(overall: Mapping[str, float], groups: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Every summary column that the given values determine, in report order.

    ``overall`` maps per-group keys to the overall slot's value; ``groups`` maps them to the values
    of the groups that enter the summary. A column is present when every key it reads is there.
    """
    group_keys = tuple(groups)
    plan = _PLANS.get(group_keys)
    if plan is None:
        plan = _plan(group_keys)
    out = {}
    defined: dict[str, bool] = {}  # per key read: whether no group's value is NaN
    for column, of, key, more in plan:
        if of is None:  # the overall value
            if key in overall:
                out[column] = float(overall[key])
            continue
        values = groups[key]
        ok = defined.get(key)
        if ok is None:
            total = sum(values)  # inline _defined (this runs once per resample)
            ok = defined[key] = total == total or _defined(values)
        if more is None:  # one key read (most columns)
            out[column] = float(of(values)) if ok else math.nan
            continue
        for other in more:
            if other not in defined:
                defined[other] = _defined(groups[other])
            ok = ok and defined[other]
        out[column] = float(of(values, *(groups[other] for other in more))) if ok else math.nan
    return out


def _defined(values: Sequence[float]) -> bool:
    """Whether no group's value is NaN: the one place the summary handles undefined values (its
    fast path, a sum that is not NaN, is inlined in :func:`summarize`)."""
    total = sum(values)  # NaN when a value is (or when +inf and -inf meet: then look closer)
    return total == total or not any(map(math.isnan, values))


#: summarize's plans, by the keys of its groups' values (in their order: tuple() of a dict is cheap).
_PLANS: dict[tuple, tuple] = {}
REGISTRY.on_change(_PLANS.clear)


def _plan(group_keys: tuple[str, ...]) -> tuple:
    """(column, its kind's function or None for an overall value, the first key it reads, the other
    keys or None) of every column that could be present, in report order."""
    if len(_PLANS) > 256:
        _PLANS.clear()
    groups = set(group_keys)
    plan = tuple((s.column, None, s.reads[0], None) if s.kind == "overall"
                 else (s.column, KINDS[s.kind].of, s.reads[0], s.reads[1:] or None)
                 for s in REGISTRY.summaries if s.kind == "overall" or all(key in groups for key in s.reads))
    _PLANS[group_keys] = plan
    return plan


def tested_columns(keys=()) -> list[str]:
    """The columns that get permutation p-values: fairmedfm's, then those of the opt-in metrics
    whose per-group ``keys`` are given; each part as gaps, ratios, then scores (summary order
    within a kind)."""
    out = []
    for optional in (False, True):
        part = [s for s in REGISTRY.summaries if s.tested and s.optional == optional
                and (not optional or all(key in keys for key in s.reads))]
        out += [s.column for s in sorted(part, key=lambda s: TESTED_ORDER.index(s.kind))]
    return out


def fair_value(column: str) -> float:
    """The value of summary ``column`` when every group has the same value (its kind's ``fair``)."""
    return KINDS[REGISTRY.summary[column].kind].fair


def interval_names() -> tuple[str, ...]:
    """fairmedfm's per-group metrics that get bootstrap intervals (plain and with BEST)."""
    return tuple(metric.name for metric in REGISTRY.per_group if metric.interval and not metric.optional)


def shown(keys) -> list[tuple[str, str]]:
    """(per-group key, "bars" or "dots") of the metrics the plots' bar chart shows, among ``keys``,
    in report order."""
    return [(metric.shown_key, metric.shown) for metric in REGISTRY.per_group
            if metric.shown is not None and metric.shown_key in keys]


def register_metric(name: str, finish: Callable[[Mapping[str, np.ndarray]], np.ndarray], sums: Sequence[str], *,
                    display: str | None = None, at_threshold: bool = False,
                    summaries: Mapping[str, str] | None = None, shown: str | None = "bars",
                    terms: Mapping[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] | None = None,
                    given_label: bool = False) -> None:
    """Add an opt-in classification metric, computed with ``metrics=[name]`` everywhere.

    Parameters
    ----------
    name : str
        The metric's name in ``metrics=[...]``, ``--metrics`` and the ``by_group`` columns (with
        ``@best_f1`` too when ``at_threshold``).
    finish : callable
        Per-slot values from a mapping of per-slot sums (NumPy arrays, one value per group and one
        for all the attribute's samples); arithmetic only (it may see arrays of shape (2, slots),
        one row per threshold). It travels to Dask workers with the work, by value where a worker
        could not import it (defined in a notebook or in a module on the client's path only).
    sums : list of str
        The sums ``finish`` reads, from :data:`BASIC_SUMS`: "count" (samples), "positives",
        "negatives", "totals" (weighted count), and with ``at_threshold`` "tp" and "fp" (positives
        and negatives predicted positive, ``score > threshold``); or a sum of the table
        (:data:`REGISTRY.sums`: "u2", twice the Mann-Whitney U; "loss", summed BCE terms; "squared_error";
        "precision", average precision times the positives); or a name of ``terms``. With sample
        weights every sum is weighted.
    display : str, optional
        Its name in prose (the CLI help); default ``name``.
    at_threshold : bool
        Computed at 0.5 and at the best-F1 (or the caller's) threshold, like ``tpr``.
    summaries : dict, optional
        Summary columns over the groups, name -> kind: "gap" (largest minus smallest), "worst"
        (smallest), "best" (largest), "ratio" (smallest over largest) or "score" (1 - gap).
        They read the ``@best_f1`` value when ``at_threshold``. Default ``{name + "-gap": "gap"}``.
    shown : {"bars", "dots", None}
        How ``report.plot("bars")`` shows it.
    terms : dict, optional
        New sums, name -> ``term(labels, scores)``: the per-sample values (from 0/1 labels and
        float scores, arithmetic only, a float64 array) that every backend adds up per group, as
        it does the squared errors of the Brier score.
    given_label : bool
        Whether the metric depends on the scores given the label only (as TPR or AUC do; NPV does
        not: it moves with the prevalence). Its gaps are then tested by shuffling the groups within
        each class, and a small group (few positives or negatives) is left out of the lower bound
        of their intervals.

    Notes
    -----
    A module can reach the command line and Dask workers by declaring itself in the
    ``fairmedfm_fast.metrics`` entry-point group of its distribution (``[project.entry-points."
    fairmedfm_fast.metrics"] npv = "my_metrics"``): the module is imported the first time a name
    is not known. The name is matched without regard to case. Registering a name again with the
    same function and options (a plugin imported twice) is a no-op; with another function or other
    options (a notebook cell run again after an edit) the new entry replaces the old.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a metric name made of letters, digits and underscores, got {name!r}")
    if not callable(finish):
        raise ValueError(f"finish must be a function of the per-slot sums, got {type(finish).__name__}")
    sums = tuple(sums)
    terms = dict(terms or {})
    for term_name, term in terms.items():
        if not isinstance(term_name, str) or not term_name.isidentifier() or not callable(term):
            raise ValueError(f"terms={terms!r}: map each new sum's name to a function term(labels, scores)")
    confusion = {entry.name for entry in REGISTRY.sums if entry.made_by == "confusion"}
    allowed = [entry.name for entry in REGISTRY.sums if at_threshold or entry.name not in confusion]
    allowed += [term_name for term_name in terms if term_name not in allowed]
    if not sums or any(sum_ not in allowed for sum_ in sums):
        raise ValueError(f"sums={list(sums)!r}: name the sums finish reads, from {allowed}"
                         + ("" if at_threshold else " ('tp' and 'fp' need at_threshold=True)"))
    if shown not in ("bars", "dots", None):
        raise ValueError(f"shown must be 'bars', 'dots' or None, got {shown!r}")
    summaries = {f"{name}-gap": "gap"} if summaries is None else dict(summaries)
    for column, kind in summaries.items():
        if kind not in KINDS or kind == "overall":
            raise ValueError(f"summaries={summaries!r}: the kind of {column!r} must be one of "
                             f"{[k for k in KINDS if k != 'overall']}")
    metric = PerGroup(name, display or name, sums, finish, at_threshold=at_threshold, optional=True, shown=shown,
                      given_label=bool(given_label))
    key = name + BEST if at_threshold else name
    REGISTRY.add_metric(metric, tuple(Summary(column, kind, (key,), optional=True) for column, kind in summaries.items()),
                        tuple(Sum(term_name, "slot_sums", optional=True, term=term) for term_name, term in terms.items()
                              if term_name in sums))


def given_label(key: str) -> bool:
    """Whether the per-group ``key`` (a metric's name, with or without BEST) depends on the scores
    given the label only (:attr:`PerGroup.given_label`)."""
    metric = REGISTRY.by_name.get(key[:-len(BEST)] if key.endswith(BEST) else key)
    return metric is not None and metric.given_label


def segmentation_metric(name: str) -> PerSample | None:
    """The entry of a per-sample metric (any case) or of its report column (``hd90`` is HD95 at
    another percentile)."""
    return REGISTRY.segmentation_metric(name)


def register_segmentation_metric(name: str, from_counts: Callable, *, display: str | None = None,
                                 higher_is_better: bool = True, limits: tuple[float, float] | None = (0.0, 1.0)
                                 ) -> None:
    """Add a per-sample segmentation metric from voxel counts, computed with
    ``evaluate_segmentation(pred_masks=..., true_masks=..., metrics=[name])``.

    ``from_counts`` takes an (n, 3) integer array of ``|P|``, ``|T|`` and ``|P and T|`` per sample and
    returns n floats, NaN where both masks are empty (those samples take ``empty_score``: the number, or
    ``empty_score[name]`` of a dict, default 1). The report gets ``mean_<name>`` per group and
    ``mean_``/``worst_``/``delta_``/``std_<name>`` per attribute, with intervals and p-values as
    for the surface metrics, and ``report.plot(name)`` draws its distribution per group.
    The name is matched without regard to case and shown as registered; registering it again is a
    no-op with the same function and options and replaces the entry otherwise. The entry travels to
    Dask workers with the work (nothing to install there); a plugin module also reaches other
    processes through the ``fairmedfm_fast.metrics`` entry-point group (see :func:`register_metric`).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a metric name made of letters, digits and underscores, got {name!r}")
    if not callable(from_counts):
        raise ValueError(f"from_counts must be a function of the (n, 3) voxel counts, got {type(from_counts).__name__}")
    REGISTRY.add_segmentation(PerSample(name, display or name, bool(higher_is_better), "fraction", limits, from_counts))


def derived(cached):
    """Register the ``functools.lru_cache`` function ``cached`` (of a backend) as derived from the
    registry's tables: a registration clears it. Returns it (a decorator)."""
    return REGISTRY.derived(cached)
