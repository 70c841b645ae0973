"""The entries of the metric registry (in the spirit of flox's ``Aggregation``): what each metric,
per-slot sum and summary column is, and the package's own ones.

A :class:`PerGroup` entry says which per-slot sums a metric needs from the kernels, how the value
is finished from them, whether it gets bootstrap intervals and how the plots show it. A :class:`Sum`
says which kernel pass makes a per-slot sum and how partitions combine. A :class:`Summary` entry is a
column of the summary table: which per-group metrics it reads and its kind (see :data:`KINDS`). A
:class:`PerSample` entry is a segmentation metric. Entries are values: they compare by what they
compute (:func:`same_entry`) and pickle with their functions (:mod:`._shipping`), so that a Dask
worker gets the entry itself, not a name to look up. The tables live in one registry object
(``registry.REGISTRY``), which starts from the ``BUILTIN_*`` tables here.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ._shipping import portable, same_function

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
    #: its interval under ``interval="analytic"``: "delong" (AUC), "wilson" (a proportion of samples),
    #: or None (none)
    analytic: str | None = None

    @property
    def shown_key(self) -> str:
        """The per-group key the plots show."""
        return self.name + BEST if self.at_threshold else self.name

    def __reduce__(self):
        return _rebuilt, (type(self), _field_values(self))


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

    def __reduce__(self):
        return _rebuilt, (type(self), _field_values(self))



def _squared_error(labels, scores):
    import numpy as np

    return np.square(labels - scores.astype(np.float64))


BUILTIN_SUMS: tuple[Sum, ...] = (
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


BUILTIN_PER_GROUP: tuple[PerGroup, ...] = (
    PerGroup("auc", "AUC", ("u2", "positives", "negatives"), _auc, shown="dots", given_label=True, analytic="delong"),
    PerGroup("acc", "accuracy", ("tp", "fp", "positives", "negatives"),
             lambda s: (s["tp"] + (s["negatives"] - s["fp"])) / (s["positives"] + s["negatives"]), True,
             analytic="wilson"),
    PerGroup("bce", "BCE", ("loss", "totals"), lambda s: s["loss"] / s["totals"]),
    PerGroup("ece", "ECE", ("ece",), lambda s: s["ece"]),
    PerGroup("tpr", "TPR", ("tp", "positives"), lambda s: s["tp"] / s["positives"], True,
             given_label=True, analytic="wilson"),
    PerGroup("tnr", "TNR", ("fp", "negatives"), lambda s: (s["negatives"] - s["fp"]) / s["negatives"], True,
             given_label=True, analytic="wilson"),
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
#: fairmedfm's per-group metrics, in report order; each also exists with the suffix BEST.
NAMES = tuple(metric.name for metric in BUILTIN_PER_GROUP if not metric.optional)
#: The package's own opt-in metrics (with the registered ones: ``REGISTRY.optional_names``).
OPTIONAL_NAMES = tuple(metric.name for metric in BUILTIN_PER_GROUP if metric.optional)


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


BUILTIN_SUMMARIES: tuple[Summary, ...] = (
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

    def __reduce__(self):
        return _rebuilt, (type(self), _field_values(self))


def _dice(counts):
    from .._inputs import masks as _masks

    return _masks.dice_from_counts(counts, math.nan)


BUILTIN_SEGMENTATION: tuple[PerSample, ...] = (
    PerSample("dice", "Dice", True, from_counts=_dice),
    PerSample("hd95", "HD95", False, "distance", None),
    PerSample("hd", "HD", False, "distance", None),
    PerSample("assd", "ASSD", False, "distance", None),
    PerSample("nsd", "NSD", True),
)



def _field_values(entry) -> tuple:
    """The entry's fields, each function made portable (pickled by value where a worker may lack its module)."""
    return tuple(portable(value) if callable(value) else value for value in (getattr(entry, f.name)
                                                                              for f in fields(entry)))


def _rebuilt(cls, values: tuple):
    return cls(*values)


def same_entry(a, b) -> bool:
    """Whether two entries compute the same thing: the same fields, functions of the same code
    (a plugin imported twice makes new function objects of the same code; an edited notebook
    cell makes other code)."""
    if type(a) is not type(b):
        return False
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if callable(x) or callable(y):
            if not same_function(x, y):
                return False
        elif x != y:
            return False
    return True
