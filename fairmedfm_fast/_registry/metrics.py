"""The classification metrics, each described once (in the spirit of flox's ``Aggregation``).

A :class:`PerGroup` entry says which per-slot sums a metric needs from the kernels, whether they
need the samples sorted, how the value is finished from them, whether it gets bootstrap intervals
and how the plots show it. A :class:`Summary` entry is a column of the summary table: which
per-group metrics it reads and its kind (see :data:`KINDS`: the overall value, or the largest
minus the smallest group value, ...). The engine, the summary, the resampling, the plots, the CLI
help and the one-number functions read these tables; adding a metric means an entry here (and a
kernel sum when it needs a new one).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    ``display``: its name in prose (the CLI help).
    ``at_threshold``: computed at a decision threshold; exists with and without BEST.
    ``optional``: computed only when asked for (``metrics=[...]``): not one of fairmedfm's columns.
    ``interval``: gets bootstrap intervals (confusion counts do not).
    ``integer``: a count of samples (an integer without sample weights).
    ``shown``: how the plots' bar chart shows it: "bars" (from 0), "dots" (around the value of all
    samples, on a zoomed axis: for values near 1 whose gaps would vanish on bars) or None (not shown).
    It is shown at BEST when ``at_threshold``.
    ``given_label``: depends on the scores given the label only, not on how many samples of each
    class a group has (AUC, TPR, TNR, FPR, FNR; not accuracy or BCE). A gap of such metrics is
    tested by shuffling the groups within each class, and a group with few samples of a class
    (``small_group``) gets no bootstrap bound in the gap's interval (its resamples cannot show how
    uncertain its value is).
    """

    name: str
    display: str
    sums: tuple[str, ...]
    finish: Callable[[Mapping[str, np.ndarray]], np.ndarray]
    at_threshold: bool = False
    optional: bool = False
    interval: bool = True
    shown: str | None = "bars"
    integer: bool = False
    given_label: bool = False

    @property
    def ranked(self) -> bool:
        """Whether its sums need the samples sorted by score (a pass of :data:`SORTED_PASSES`)."""
        return any(SUM[need].made_by in SORTED_PASSES for need in self.sums)

    @property
    def shown_key(self) -> str:
        """The per-group key the plots show."""
        return self.name + BEST if self.at_threshold else self.name


#: The kernel passes that make the per-slot sums, by the key a :class:`Sum` names in ``made_by``.
#: A backend runs the passes whose sums the requested metrics read; none asks which metric.
PASSES = {
    "counts": "calibration.score_ranges or ranking.rank_statistics (every backend runs it)",
    "ranks": "the Mann-Whitney sums of score-ordered samples: ranking.rank_statistics, sweeps.ranked_sums, "
             "rank_sums.rank_sums, bootstrap, voxels.sweep_buckets",
    "log_loss": "calibration.slot_sums of calibration.log_loss_terms",
    "ece_bins": "calibration.binned_calibration on the equal-width edges of all partitions, then calibration_error",
    "confusion": "ranking.confusion_above or the best-F1 sweep (at each threshold)",
    "slot_sums": "calibration.slot_sums of the entry's per-sample ``term`` (order-free: every backend makes it)",
    "precision_sums": "precision.precision_sums, from the top of the score order",
}


#: The passes that read the samples in score order.
SORTED_PASSES = frozenset({"ranks", "precision_sums"})


@dataclass(frozen=True)
class Sum:
    """A per-slot sum that metrics are finished from (in the spirit of flox's ``Aggregation``).

    ``made_by``: the kernel pass that makes it (a key of :data:`PASSES`). ``combine``: how the sums
    of score-ordered partitions give the whole's: "add" (each partition on its own, then added) or
    "add_above" (each partition starts from the counts of the partitions scoring above it, then
    added: the Mann-Whitney and precision sums). ``empty``: its value for a group without samples.
    ``optional``: made only when a requested metric reads it (the other sums are made for
    fairmedfm's metrics anyway). ``term``: for the "slot_sums" pass, the per-sample values it adds
    up, ``term(labels, scores)`` (0/1 labels, float scores) -> float64 array; with sample weights,
    each weighted.
    """

    name: str
    made_by: str
    combine: str = "add"
    empty: float = 0.0
    optional: bool = False
    term: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None


def _squared_error(labels, scores):
    import numpy as np

    return np.square(labels - scores.astype(np.float64))


SUMS: tuple[Sum, ...] = (
    Sum("count", "counts"),
    Sum("positives", "counts"),
    Sum("negatives", "counts"),
    Sum("totals", "counts"),  # the weighted count
    Sum("u2", "ranks", "add_above"),  # twice the Mann-Whitney U
    Sum("loss", "log_loss"),
    Sum("ece", "ece_bins", empty=math.nan),
    Sum("tp", "confusion"),
    Sum("fp", "confusion"),
    Sum("squared_error", "slot_sums", optional=True, term=_squared_error),
    Sum("precision", "precision_sums", "add_above", optional=True),
)
SUM = {entry.name: entry for entry in SUMS}


@lru_cache(maxsize=256)
def optional_sums(names: frozenset[str]) -> tuple[str, ...]:
    """The optional sums (in table order) that the metrics ``names`` (base names, no BEST) read."""
    read = {need for name in names if name in BY_NAME for need in BY_NAME[name].sums}
    return tuple(entry.name for entry in SUMS if entry.optional and entry.name in read)


@lru_cache(maxsize=256)
def passes(names: frozenset[str]) -> frozenset[str]:
    """The kernel passes (keys of :data:`PASSES`) that make the sums the metrics ``names`` (base
    names, no BEST) read: what a backend runs for them."""
    return frozenset(SUM[need].made_by for name in names if name in BY_NAME for need in BY_NAME[name].sums)


def sums_made_by(made_by: str, names: frozenset[str]) -> tuple[Sum, ...]:
    """The sum entries, in table order, made by the pass ``made_by`` that the metrics ``names`` read."""
    return tuple(SUM[name] for name in optional_sums(names) if SUM[name].made_by == made_by)


def _auc(s):
    import numpy as np

    pairs = 2.0 * s["positives"] * s["negatives"]
    auc = s["u2"] / pairs
    if np.count_nonzero(pairs) < len(pairs):  # a slot lacks a label (or a product underflows to 0)
        auc[(s["positives"] == 0) | (s["negatives"] == 0)] = np.nan
    return auc


def _average_precision(s):
    import numpy as np

    ap = s["precision"] / s["positives"]
    ap[s["positives"] == 0] = np.nan  # recall is undefined without positives
    return np.asarray(ap, dtype=np.float64)


PER_GROUP: tuple[PerGroup, ...] = (
    PerGroup("auc", "AUC", ("u2", "positives", "negatives"), _auc, shown="dots", given_label=True),
    PerGroup("acc", "accuracy", ("tp", "fp", "positives", "negatives"),
             lambda s: (s["tp"] + (s["negatives"] - s["fp"])) / (s["positives"] + s["negatives"]), True),
    PerGroup("bce", "BCE", ("loss", "totals"), lambda s: s["loss"] / s["totals"]),
    PerGroup("ece", "ECE", ("ece",), lambda s: s["ece"]),
    PerGroup("tpr", "TPR", ("tp", "positives"), lambda s: s["tp"] / s["positives"], True,
             given_label=True),
    PerGroup("tnr", "TNR", ("fp", "negatives"), lambda s: (s["negatives"] - s["fp"]) / s["negatives"], True,
             given_label=True),
    PerGroup("tn", "TN", ("fp", "negatives"), lambda s: s["negatives"] - s["fp"], True, interval=False, shown=None, integer=True),
    PerGroup("fp", "FP", ("fp",), lambda s: s["fp"], True, interval=False, shown=None, integer=True),
    PerGroup("fn", "FN", ("tp", "positives"), lambda s: s["positives"] - s["tp"], True, interval=False, shown=None, integer=True),
    PerGroup("tp", "TP", ("tp",), lambda s: s["tp"], True, interval=False, shown=None, integer=True),
    # Opt-in metrics (metrics=[...]), after fairmedfm's columns.
    PerGroup("ap", "average precision", ("precision", "positives"), _average_precision, optional=True),
    PerGroup("brier", "Brier score", ("squared_error", "totals"), lambda s: s["squared_error"] / s["totals"],
             optional=True),
    PerGroup("selection_rate", "selection rate", ("tp", "fp", "positives", "negatives"),
             lambda s: (s["tp"] + s["fp"]) / (s["positives"] + s["negatives"]), True, optional=True),
    PerGroup("fpr", "FPR", ("fp", "negatives"), lambda s: s["fp"] / s["negatives"], True, optional=True,
             given_label=True),
    PerGroup("fnr", "FNR", ("tp", "positives"), lambda s: (s["positives"] - s["tp"]) / s["positives"], True,
             optional=True, given_label=True),
)
BY_NAME = {metric.name: metric for metric in PER_GROUP}
#: fairmedfm's per-group metrics, in report order; each also exists with the suffix BEST.
NAMES = tuple(metric.name for metric in PER_GROUP if not metric.optional)
THRESHOLD_NAMES = frozenset(metric.name for metric in PER_GROUP if metric.at_threshold)
#: The opt-in metrics; those at a threshold also exist with the suffix BEST, the others do not.
OPTIONAL_NAMES = tuple(metric.name for metric in PER_GROUP if metric.optional)
#: The metrics that count samples (integers without sample weights).
INTEGER_NAMES = frozenset(metric.name for metric in PER_GROUP if metric.integer)


def all_keys() -> list[str]:
    """Every default per-group key: the names, then the names with BEST."""
    return [*NAMES, *(name + BEST for name in NAMES)]


def optional_keys(metrics: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """The per-group keys of opt-in ``metrics`` (default: all), in report order: each name, then
    those at a threshold with BEST."""
    names = [name for name in OPTIONAL_NAMES if metrics is None or name in metrics]
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
    if unknown and load_plugins():  # a metric of an installed plugin, registered on first use
        unknown = [name for name in names if name not in OPTIONAL_NAMES]
    if unknown:
        raise ValueError(f"metrics={unknown[0]!r} is not an opt-in metric; choose from {list(OPTIONAL_NAMES)} "
                         "(fairmedfm's metrics are always computed)")
    return tuple(name for name in OPTIONAL_NAMES if name in names)


def finished_from(keys, sums) -> bool:
    """Whether every metric of per-group ``keys`` is finished from ``sums`` alone."""
    return all(set(BY_NAME[key.removesuffix(BEST)].sums) <= sums for key in keys)


def needs_sort(keys: set[str], fixed_best: float | None = None) -> bool:
    """Whether these keys need the samples sorted by score: a ranked metric (AUC, AP), or the
    best-F1 sweep for a threshold metric at BEST without a fixed threshold."""
    base = frozenset(key.removesuffix(BEST) for key in keys)
    at_best = any(key.endswith(BEST) and key.removesuffix(BEST) in THRESHOLD_NAMES for key in keys)
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


def _gap(values: list[float]) -> float:
    return max(values) - min(values)


def _ratio(values: list[float]) -> float:
    high = max(values)
    return min(values) / high if high else math.nan


@dataclass(frozen=True)
class Kind:
    """How a summary column is made from the values it reads.

    ``of`` makes it from the lists of the groups' values of each key it reads (or, for "overall",
    from the overall value of its one key). ``fair``: its value when every group has the same value
    (the columns with one are differences between groups, and get permutation p-values: a permuted
    value at least as far from ``fair`` as the observed one counts as extreme); None for columns
    that are not differences.
    """

    of: Callable[..., float]
    fair: float | None = None


#: The kinds of summary column. Over the groups, a column is NaN when a group it reads has no value
#: (NaN): leaving that group out would report a smaller gap, or a better worst group, than the
#: groups have; and Python's max/min would give a number or NaN depending on the groups' order.
KINDS: dict[str, Kind] = {
    "overall": Kind(lambda value: value),  # the value of all the attribute's samples
    "gap": Kind(_gap, fair=0.0),  # largest minus smallest group value
    "worst": Kind(min),  # smallest group value (for metrics where higher is better)
    "best": Kind(max),  # largest group value
    "ratio": Kind(_ratio, fair=1.0),  # smallest over largest group value
    "score": Kind(lambda *values: 1 - sum(map(_gap, values)) / len(values), fair=1.0),  # 1 - mean of gaps
}
#: The order of the tested columns (p-values) within the default and within the opt-in columns.
TESTED_ORDER = ("gap", "ratio", "score")


@dataclass(frozen=True)
class Summary:
    """A summary column: ``reads`` per-group keys and makes a value of the :data:`KINDS` ``kind``
    from them ("overall": the overall slot's value of its one key; others: the groups' values)."""

    column: str
    kind: str
    reads: tuple[str, ...]
    optional: bool = False  # reads an opt-in metric: present only when that metric is asked for
    #: The one-number function that returns this column (``group_metrics`` makes it from this
    #: entry), and the first part of its docstring.
    function: str | None = None
    doc: str = ""

    @property
    def at_threshold(self) -> bool:
        """Whether it reads metrics at the best-F1 (or a fixed) threshold."""
        return any(key.endswith(BEST) for key in self.reads)

    @property
    def tested(self) -> bool:
        """Whether the column gets a permutation p-value (a difference between groups)."""
        return KINDS[self.kind].fair is not None


SUMMARIES: tuple[Summary, ...] = (
    Summary("overall-auc", "overall", ("auc",)),
    Summary("overall-acc", "overall", ("acc" + BEST,)),
    Summary("overall-bce", "overall", ("bce",)),
    Summary("overall-ece", "overall", ("ece",)),
    Summary("worst-auc", "worst", ("auc",), function="worst_group_auc",
            doc="Lowest group ROC AUC (higher is better)."),
    Summary("auc-gap", "gap", ("auc",), function="auc_gap", doc="Largest minus smallest group ROC AUC (0 is fair)."),
    Summary("acc-gap", "gap", ("acc" + BEST,), function="accuracy_gap",
            doc="Largest minus smallest group accuracy at the best overall F1 threshold (0 is fair)."),
    Summary("bce-gap", "gap", ("bce",), function="bce_gap",
            doc="Largest minus smallest group binary cross-entropy (0 is fair)."),
    Summary("ece-gap", "gap", ("ece",), function="ece_gap",
            doc="Largest minus smallest group expected calibration error (0 is fair).\n\n"
                "Each group's 10 equal-width bins span its own score range."),
    Summary("eod", "score", ("tpr" + BEST, "tnr" + BEST), function="equalized_odds_score",
            doc="``1 - (TPR gap + TNR gap) / 2`` at the best-F1 threshold (``eod``; 1 is fair).\n\n"
                "A score, not a difference: fairlearn's ``equalized_odds_difference`` is 0 when fair."),
    Summary("eo", "gap", ("tpr" + BEST,), function="equal_opportunity_difference",
            doc="Largest minus smallest group true positive rate at the best-F1 threshold (``eo``; 0 is fair)."),
    Summary("ap-gap", "gap", ("ap",), optional=True),
    Summary("brier-gap", "gap", ("brier",), optional=True),
    Summary("dp", "gap", ("selection_rate" + BEST,), optional=True),  # demographic parity difference
    Summary("fpr-gap", "gap", ("fpr" + BEST,), optional=True),
    Summary("fnr-gap", "gap", ("fnr" + BEST,), optional=True),
)
SUMMARY = {summary.column: summary for summary in SUMMARIES}
#: Every per-group key that a summary column reads.
SUMMARY_READS = frozenset(key for summary in SUMMARIES for key in summary.reads)


@lru_cache(maxsize=64)
def needs(column: str) -> frozenset[str]:
    """The per-group keys summary ``column`` reads (one frozen set per column: its hash, which the
    engine's plans are cached by, is computed once)."""
    return frozenset(SUMMARY[column].reads)


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


def _plan(group_keys: tuple[str, ...]) -> tuple:
    """(column, its kind's function or None for an overall value, the first key it reads, the other
    keys or None) of every column that could be present, in report order."""
    if len(_PLANS) > 256:
        _PLANS.clear()
    groups = set(group_keys)
    plan = tuple((s.column, None, s.reads[0], None) if s.kind == "overall"
                 else (s.column, KINDS[s.kind].of, s.reads[0], s.reads[1:] or None)
                 for s in SUMMARIES if s.kind == "overall" or all(key in groups for key in s.reads))
    _PLANS[group_keys] = plan
    return plan


def tested_columns(keys=()) -> list[str]:
    """The columns that get permutation p-values: fairmedfm's, then those of the opt-in metrics
    whose per-group ``keys`` are given; each part as gaps, ratios, then scores (summary order
    within a kind)."""
    out = []
    for optional in (False, True):
        part = [s for s in SUMMARIES if s.tested and s.optional == optional
                and (not optional or all(key in keys for key in s.reads))]
        out += [s.column for s in sorted(part, key=lambda s: TESTED_ORDER.index(s.kind))]
    return out


def fair_value(column: str) -> float:
    """The value of summary ``column`` when every group has the same value (its kind's ``fair``)."""
    return KINDS[SUMMARY[column].kind].fair


def interval_names() -> tuple[str, ...]:
    """fairmedfm's per-group metrics that get bootstrap intervals (plain and with BEST)."""
    return tuple(metric.name for metric in PER_GROUP if metric.interval and not metric.optional)


def shown(keys) -> list[tuple[str, str]]:
    """(per-group key, "bars" or "dots") of the metrics the plots' bar chart shows, among ``keys``,
    in report order."""
    return [(metric.shown_key, metric.shown) for metric in PER_GROUP
            if metric.shown is not None and metric.shown_key in keys]


# ---------------------------------------------------------------------------------------------
# Metrics from outside the package
# ---------------------------------------------------------------------------------------------

#: The Python entry-point group of plugin modules: each entry is loaded (its module imported, which
#: calls :func:`register_metric`) the first time a metric name is not known, in every process
#: (the CLI, Dask workers) where the plugin is installed.
ENTRY_POINTS = "fairmedfm_fast.metrics"
#: The per-slot sums that every backend computes for any metric (the confusion counts "tp" and
#: "fp" at each threshold of a metric ``at_threshold``).
BASIC_SUMS = ("count", "positives", "negatives", "totals", "tp", "fp")
_plugins_loaded = False


def load_plugins() -> bool:
    """Import the modules of the :data:`ENTRY_POINTS` group, once per process; whether any was new."""
    global _plugins_loaded
    if _plugins_loaded:
        return False
    _plugins_loaded = True
    from importlib.metadata import entry_points

    found = entry_points(group=ENTRY_POINTS)
    for entry in found:
        try:
            entry.load()
        except Exception as error:  # a broken plugin: say which, not a traceback from inside it
            raise ValueError(f"the {ENTRY_POINTS} plugin {entry.name!r} ({entry.value}) failed to load: "
                             f"{type(error).__name__}: {error}; fix or uninstall it") from error
    return bool(found)


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
        one row per threshold). Define it at the top level of a module, so that Dask can pickle it.
    sums : list of str
        The sums ``finish`` reads, from :data:`BASIC_SUMS`: "count" (samples), "positives",
        "negatives", "totals" (weighted count), and with ``at_threshold`` "tp" and "fp" (positives
        and negatives predicted positive, ``score > threshold``); or a sum of the table
        (:data:`SUMS`: "u2", twice the Mann-Whitney U; "loss", summed BCE terms; "squared_error";
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
        it does the squared errors of the Brier score. Define them at the top level of a module.
    given_label : bool
        Whether the metric depends on the scores given the label only (as TPR or AUC do; NPV does
        not: it moves with the prevalence). Its gaps are then tested by shuffling the groups within
        each class, and a small group (few positives or negatives) is left out of the lower bound
        of their intervals.

    A module can reach the command line and Dask workers by declaring itself in the
    ``fairmedfm_fast.metrics`` entry-point group of its distribution (``[project.entry-points."
    fairmedfm_fast.metrics"] npv = "my_metrics"``): the module is imported the first time a name
    is not known. Registering the same name again from the same function is a no-op.
    """
    global PER_GROUP, SUMMARIES, SUMS
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a metric name made of letters, digits and underscores, got {name!r}")
    if not callable(finish):
        raise ValueError(f"finish must be a function of the per-slot sums, got {type(finish).__name__}")
    sums = tuple(sums)
    terms = dict(terms or {})
    for term_name, term in terms.items():
        if not isinstance(term_name, str) or not term_name.isidentifier() or not callable(term):
            raise ValueError(f"terms={terms!r}: map each new sum's name to a function term(labels, scores)")
        existing_sum = SUM.get(term_name)
        if existing_sum is not None and (getattr(existing_sum.term, "__module__", None),
                                         getattr(existing_sum.term, "__qualname__", None)) != (
                getattr(term, "__module__", None), getattr(term, "__qualname__", None)):
            raise ValueError(f"terms: {term_name!r} is already a sum; choose another name")
    confusion = {entry.name for entry in SUMS if entry.made_by == "confusion"}
    allowed = [entry.name for entry in SUMS if at_threshold or entry.name not in confusion]
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
    existing = BY_NAME.get(name)
    if existing is not None:
        same = (getattr(existing.finish, "__module__", None), getattr(existing.finish, "__qualname__", None)) == (
            getattr(finish, "__module__", None), getattr(finish, "__qualname__", None))
        if existing.optional and same:
            return
        raise ValueError(f"name={name!r} is already a metric; choose another name")
    taken = [column for column in summaries if column in SUMMARY]
    if taken:
        raise ValueError(f"summaries: {taken[0]!r} is already a summary column; choose another name")
    key = name + BEST if at_threshold else name
    PER_GROUP = (*PER_GROUP, metric)
    SUMMARIES = (*SUMMARIES, *(Summary(column, kind, (key,), optional=True) for column, kind in summaries.items()))
    SUMS = (*SUMS, *(Sum(term_name, "slot_sums", optional=True, term=term) for term_name, term in terms.items()
                     if term_name not in SUM and term_name in sums))
    _rebuild()


def given_label(key: str) -> bool:
    """Whether the per-group ``key`` (a metric's name, with or without BEST) depends on the scores
    given the label only (:attr:`PerGroup.given_label`)."""
    metric = BY_NAME.get(key[:-len(BEST)] if key.endswith(BEST) else key)
    return metric is not None and metric.given_label


#: The cache_clear functions of the backends' caches derived from these tables (see :func:`derived`).
_DERIVED: list[Callable[[], None]] = []


def derived(cached):
    """Register the ``functools.lru_cache`` function ``cached`` (of a backend) as derived from these
    tables: :func:`register_metric` clears it. Returns it (a decorator)."""
    _DERIVED.append(cached.cache_clear)
    return cached


def _rebuild() -> None:
    """The tables derived from PER_GROUP and SUMMARIES, and the caches that read them."""
    global BY_NAME, THRESHOLD_NAMES, OPTIONAL_NAMES, INTEGER_NAMES, KEY_ORDER, SUMMARY, SUMMARY_READS, SUM
    BY_NAME = {metric.name: metric for metric in PER_GROUP}
    THRESHOLD_NAMES = frozenset(metric.name for metric in PER_GROUP if metric.at_threshold)
    OPTIONAL_NAMES = tuple(metric.name for metric in PER_GROUP if metric.optional)
    INTEGER_NAMES = frozenset(metric.name for metric in PER_GROUP if metric.integer)
    SUM = {entry.name: entry for entry in SUMS}
    KEY_ORDER = (*all_keys(), *optional_keys())
    SUMMARY = {summary.column: summary for summary in SUMMARIES}
    SUMMARY_READS = frozenset(key for summary in SUMMARIES for key in summary.reads)
    _PLANS.clear()
    for clear in _DERIVED:
        clear()
    _finish_plan.cache_clear()
    needs.cache_clear()
    optional_sums.cache_clear()
    passes.cache_clear()


# ---------------------------------------------------------------------------------------------
# Segmentation metrics (evaluate_segmentation(metrics=...), from the mask pairs)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PerSample:
    """A per-sample segmentation metric, summarized per group by its mean.

    ``higher_is_better`` decides ``worst_<m>`` (the smallest group mean, else the largest);
    ``unit`` is "fraction" or "distance" (in the unit of the spacing: mm for NIfTI; a distance
    takes ``empty_distance`` when exactly one mask is empty); ``limits`` are the plots' axis range
    (None: from the data). ``from_counts`` makes the per-sample values from the voxel counts
    (an (n, 3) array of |P|, |T|, |P and T|), NaN where both masks are empty; None for the surface
    distances that ``kernels.surface`` measures.
    """

    name: str
    display: str
    higher_is_better: bool
    unit: str = "fraction"
    limits: tuple[float, float] | None = (0.0, 1.0)
    from_counts: Callable | None = None


def _dice(counts):
    from .._inputs import masks as _masks

    return _masks.dice_from_counts(counts, math.nan)


SEGMENTATION: tuple[PerSample, ...] = (
    PerSample("dice", "Dice", True, from_counts=_dice),
    PerSample("hd95", "HD95", False, "distance", None),
    PerSample("hd", "HD", False, "distance", None),
    PerSample("assd", "ASSD", False, "distance", None),
    PerSample("nsd", "NSD", True),
)


def segmentation_metric(name: str) -> PerSample | None:
    """The entry of a per-sample metric or of its report column (``hd90`` is HD95 at another
    percentile)."""
    for metric in SEGMENTATION:
        if metric.name == name:
            return metric
    if name.startswith("hd") and name[2:].replace(".", "", 1).isdigit():
        return SEGMENTATION[1]
    return None


def register_segmentation_metric(name: str, from_counts: Callable, *, display: str | None = None,
                                 higher_is_better: bool = True, limits: tuple[float, float] | None = (0.0, 1.0)
                                 ) -> None:
    """Add a per-sample segmentation metric from voxel counts, computed with
    ``evaluate_segmentation(pred_masks=..., true_masks=..., metrics=[name])``.

    ``from_counts`` takes an (n, 3) integer array of |P|, |T| and |P and T| per sample and returns
    n floats, NaN where both masks are empty (those samples take ``empty_score``: the number, or
    ``empty_score[name]`` of a dict, default 1). The report gets ``mean_<name>`` per group and
    ``mean_``/``worst_``/``delta_``/``std_<name>`` per attribute, with intervals and p-values as
    for the surface metrics, and ``report.plot(name)`` draws its distribution per group.
    Registering the same name again from the same function is a no-op. A plugin module reaches
    other processes through the ``fairmedfm_fast.metrics`` entry-point group (see
    :func:`register_metric`).
    """
    global SEGMENTATION
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a metric name made of letters, digits and underscores, got {name!r}")
    if not callable(from_counts):
        raise ValueError(f"from_counts must be a function of the (n, 3) voxel counts, got {type(from_counts).__name__}")
    existing = segmentation_metric(name)
    if existing is not None:
        if existing.from_counts is not None and (existing.from_counts.__module__, existing.from_counts.__qualname__) \
                == (getattr(from_counts, "__module__", None), getattr(from_counts, "__qualname__", None)):
            return
        raise ValueError(f"name={name!r} is already a segmentation metric; choose another name")
    SEGMENTATION = (*SEGMENTATION, PerSample(name, display or name, bool(higher_is_better), "fraction", limits,
                                             from_counts))
