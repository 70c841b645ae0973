"""Which model is fairer? :func:`compare_models`: models scored on the same samples, compared pairwise.

Two models scored on the same patients are correlated (the same hard cases trip both), so their
separate intervals say little about their difference. Here every model is evaluated as ``evaluate``
would (one coding of the groups for all, through ``evaluate_tasks``), and each difference of a summary
column between two models is tested on the *same* resampled patients:

- the paired bootstrap draws the samples once per replicate (within each cell of the attributes'
  groups, so every group keeps its size) and evaluates every model on them: the percentile interval
  of the difference and a two-sided bootstrap p-value of "no difference". Each model's samples are
  sorted once (:class:`SortedModels`); a replicate is every sample's draw count, taken into each
  model's sorted order and used as weights, which gives the numbers of evaluating the drawn rows
  without sorting them again (with ``sample_weight`` the drawn rows are evaluated as samples);
- ``interval="analytic"``: DeLong's covariance of correlated AUCs (``_statistics/paired.py``) gives
  the standard error of the difference of the overall AUCs, of the worst-group AUCs and of the AUC
  gaps (each model's worst and best groups as observed);
- the swap permutation test exchanges the two models' scores sample by sample: a test that the two
  models are exchangeable (two models with equal gaps but unequal AUCs are not), reported as such.

The p-values of every comparison form one family, adjusted by ``p_adjust`` (Holm by default). The
findings' small-group rule holds here too: a difference whose value, for either model, is defined by a
group with fewer than ``SMALL_CLASS`` positives or negatives (``report.gaps["small_group"]``) is marked
``small_group`` and never called significant: a tiny group moves by chance alone.
"""
from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from .._engine import classification as _classification
from .._engine import resample as _resample
from .._engine import sorting as _sorting
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._registry import metrics as _metric_registry
from .._report.comparison import ModelComparison
from .._statistics import paired as _paired
from .._util import progress as _progress
from .._util.lazy_pandas import pd
from .._util.threads import on_threads, resolve_n_jobs
from .assess import attribute_result, prepare, with_default
from .tasks import each_task

__all__ = ["compare_models"]

#: Summary columns an analytic (DeLong) difference exists for.
ANALYTIC = ("overall-auc", "worst-auc", "auc-gap")
#: Summary columns that are not compared (counts).
NOT_COMPARED = ("n", "n_groups")


def compare_models(y_true: Any, scores: Any, sensitive_features: Any, *, reference: str | None = None,
                   n_boot: int = 0, ci: float = 0.95, interval: str | None = None, n_permutations: int = 0,
                   p_adjust: str | None = "holm", random_state: Any = None, bins: _groups.Bins | None = None,
                   intersectional: bool = False, progress: bool | None = None, **options: Any) -> ModelComparison:
    """Compare models scored on the same samples: each model's report and, for every pair of models
    (or each against ``reference``), the difference of every summary column with paired tests.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        The labels, shared by every model.
    scores : dict, DataFrame, pyarrow Table or 2-D array
        One score column per model: a dict name -> scores, a table of score columns (their names),
        or an (n_samples, n_models) array (models ``model_0``, ``model_1``, ...). At least two.
    sensitive_features, bins, intersectional
        As in :func:`~fairmedfm_fast.evaluate`; coded once for every model.
    reference : str, optional
        Compare each model with this one only (default: every pair).
    n_boot : int
        Paired bootstrap replicates (0: none): one draw of the samples per replicate, shared by every
        model, within each cell of the attributes' groups.
    ci : float
        Coverage of the intervals.
    interval : {None, "analytic"}
        ``"analytic"`` adds DeLong's paired standard errors for ``overall-auc``, ``worst-auc`` and
        ``auc-gap``, with normal intervals and p-values.
    n_permutations : int
        Swap permutations per pair (0: none): the test that two models are exchangeable.
    p_adjust : {"holm", "bonferroni", None}
        Adjustment over the family of every comparison's p-values (each kind of test apart).
    random_state : int or numpy Generator, optional
        Seed of the resamples.
    progress : bool, optional
        A progress bar for the resamples (default: on a terminal or in a notebook).
    **options
        Every other keyword of ``evaluate`` (``threshold``, ``min_group_size``, ``score_type``,
        ``pos_label``, ``metrics``, ...), applied to each model.

    Returns
    -------
    ModelComparison
        ``reports`` (each equal to ``evaluate`` on that model), ``differences`` and ``leaderboard()``.
    """
    models = _models(scores)
    names = list(models)
    if reference is not None and reference not in models:
        raise ValueError(f"reference={reference!r} is not one of the models {names}")
    n_boot = _count(n_boot, "n_boot")
    n_permutations = _count(n_permutations, "n_permutations")
    if interval not in (None, "analytic"):
        raise ValueError(f"interval must be None or 'analytic', got {interval!r}")
    if not (isinstance(ci, (float, int)) and 0 < ci < 1):
        raise ValueError(f"ci must be a coverage strictly between 0 and 1, such as 0.95; got {_inputs.shown(ci)}")
    _resample.check_options("attribute", p_adjust)
    for reserved in ("n_boot", "n_permutations", "interval"):
        options.pop(reserved, None)
    n = len(next(iter(models.values())))
    table = scores if _inputs.is_pandas(scores, "DataFrame") and list(map(str, scores.columns)) == names else models
    if n_boot or n_permutations or interval:  # the groups coded once, for every resample
        attributes = _groups.encode_attributes(sensitive_features, n, bins)
        coded = pd.DataFrame(_coded(attributes, np.arange(n)))
        evaluated = _evaluate(y_true, table, names, coded, intersectional, options)
    else:
        attributes, coded = [], None
        evaluated = _evaluate(y_true, table, names, sensitive_features, intersectional, {**options, "bins": bins})
    pairs = [(a, reference) for a in names if a != reference] if reference else list(itertools.combinations(names, 2))
    rows = _observed(evaluated, pairs)
    _small_groups(rows, evaluated)
    replicates: dict[tuple, Any] = {}
    progress = _progress.check(progress)
    seed = _resample.seed_from(random_state) if n_boot or n_permutations else None
    if n_boot:
        _bootstrap(rows, replicates, y_true, models, names, attributes, intersectional, options, n_boot, ci, seed,
                   pairs, progress)
    if interval == "analytic":
        _analytic(rows, y_true, models, names, attributes, evaluated, pairs, options, ci, intersectional)
    if n_permutations:
        _swaps(rows, y_true, models, names, coded, intersectional, options, n_permutations, seed, pairs, progress)
    notes: list[str] = []
    differences = _frame(rows, p_adjust, ci, n_boot, notes)
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    metadata = {"models": names, "reference": reference, "n_samples": n, "n_boot": n_boot, "ci": ci,
                "interval": interval, "n_permutations": n_permutations, "p_adjust": p_adjust,
                "stratify": "cells of the attributes' groups" if n_boot else None,
                "family": f"{len(pairs)} model pairs x attributes x columns, each test adjusted together"
                          + (f" ({p_adjust})" if p_adjust else " (unadjusted)"),
                "notes": notes, **({"seed": int(seed)} if seed is not None else {})}
    return ModelComparison(evaluated, differences, metadata, replicates)


def _models(scores: Any) -> dict[str, np.ndarray]:
    """Model name -> 1-D scores."""
    if isinstance(scores, Mapping):
        out = {str(name): _inputs.to_numpy(value, f"scores[{name!r}]") for name, value in scores.items()}
    elif _inputs.is_pandas(scores, "DataFrame") or hasattr(scores, "column_names") or hasattr(scores, "get_columns"):
        frame = scores if _inputs.is_pandas(scores, "DataFrame") else pd.DataFrame(
            scores.to_pandas() if hasattr(scores, "to_pandas") else scores)
        out = {str(name): frame[name].to_numpy() for name in frame.columns}
    else:
        array = _inputs.to_numpy(scores, "scores")
        if array.ndim != 2:
            raise ValueError(f"scores must be a dict of score arrays, a table of score columns or an (n_samples, "
                             f"n_models) array, got shape {array.shape}")
        out = {f"model_{j}": array[:, j] for j in range(array.shape[1])}
    if len(out) < 2:
        raise ValueError(f"scores holds {len(out)} model; comparing needs at least two score columns")
    for name, values in out.items():
        if values.ndim != 1:
            raise ValueError(f"scores[{name!r}] must hold one score per sample, got shape {values.shape}")
    lengths = {name: len(values) for name, values in out.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"the models' scores differ in length ({lengths}); score every model on the same samples")
    return out


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {_inputs.shown(value)}")
    return int(value)


def _coded(attributes: list[_groups.Attribute], rows: np.ndarray) -> dict[str, Any]:
    """The attributes at ``rows`` as categoricals of their groups (in report order: coded once)."""
    return {a.name: pd.Categorical.from_codes(a.codes[rows].astype(np.int64), categories=a.groups)
            for a in attributes}


def _evaluate(y_true, scores, names, coded, intersectional, options) -> dict:
    """Each model's report (``scores``: a DataFrame of the models' columns, or a dict of arrays)."""
    table = scores if _inputs.is_pandas(scores, "DataFrame") else pd.DataFrame(scores)
    if isinstance(coded, dict):
        coded = pd.DataFrame(coded)
    reports, skipped, _, _ = each_task(y_true, table, coded, intersectional=intersectional, **options)
    missing = [name for name in names if name not in reports]
    if missing:
        raise ValueError(f"models {missing} could not be evaluated: {skipped}")
    return reports


def _compared_columns(summary: pd.DataFrame) -> list[str]:
    return [column for column in summary.columns if column not in NOT_COMPARED
            and pd.api.types.is_numeric_dtype(summary[column])]


def _observed(reports: dict, pairs: list[tuple[str, str]]) -> dict[tuple, dict[str, Any]]:
    rows = {}
    first = next(iter(reports.values())).summary
    columns = _compared_columns(first)
    cells = [(attribute, column) for attribute in first.index for column in columns]
    values = {name: report.summary[columns].to_numpy(np.float64).ravel().tolist() for name, report in reports.items()}
    for a, b in pairs:
        rows.update({(a, b, attribute, column): {"value": va, "other_value": vb, "difference": va - vb}
                     for (attribute, column), va, vb in zip(cells, values[a], values[b])})
    return rows


def _small_groups(rows: dict[tuple, dict[str, Any]], reports: dict) -> None:
    """The findings' rule: ``small_group`` where either model's value of the column is defined by a small
    group (its ``report.gaps`` row says so), with ``not_estimable`` saying which group and model."""
    # Which groups are small depends on the labels and groups alone, the same for every model: where no
    # attribute has one, no model's report.gaps (a frame per model, the slow part at many models) is read.
    by_group = next(iter(reports.values())).by_group
    any_small = "small_group" in by_group.columns and bool(by_group["small_group"].to_numpy(bool).any())
    flagged: dict[str, dict[tuple, str]] = {}
    for name, report in reports.items():
        gaps = report.gaps if any_small else None
        flagged[name] = {} if gaps is None else {
            key: str(reason) for key, reason, small in zip(gaps.index, gaps["not_estimable"], gaps["small_group"])
            if small}
    for (a, b, attribute, column), row in rows.items():
        reasons = [f"{name}: {flagged[name][(attribute, column)]}" for name in (a, b)
                   if (attribute, column) in flagged[name]]
        row["small_group"] = bool(reasons)
        row["not_estimable"] = "; ".join(reasons) if reasons else None


def _strata(attributes: list[_groups.Attribute], n: int) -> np.ndarray:
    """Each sample's cell of the attributes' groups (missing values a group of their own)."""
    if not attributes:
        return np.zeros(n, np.int64)
    keys = _groups.combination_keys([a.codes for a in attributes], [a.n_groups for a in attributes])
    return np.unique(keys, return_inverse=True)[1].ravel()


class _Draws:
    """Bootstrap samples: as many draws with replacement within each stratum as it holds (the strata's
    members and sizes found once)."""

    def __init__(self, strata: np.ndarray):
        self.members = np.argsort(strata, kind="stable")
        sizes = np.bincount(strata)
        self.first = np.repeat(np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)  # each slot's stratum start
        self.size = np.repeat(sizes, sizes).astype(np.float64)  # ... and size

    def __call__(self, rng: np.random.Generator) -> np.ndarray:
        """The drawn samples of one replicate."""
        offsets = np.floor(rng.random(len(self.members)) * self.size).astype(np.int64)
        return self.members.take(self.first + offsets)


def _bootstrap(rows, replicates, y_true, models, names, attributes, intersectional, options, n_boot, ci, seed,
               pairs, progress) -> None:
    labels = _inputs.to_numpy(y_true, "y_true")
    draws = _Draws(_strata(attributes, len(labels)))
    rng = np.random.default_rng(seed)
    compared = list(dict.fromkeys((attribute, column) for _, _, attribute, column in rows))
    collected: dict[tuple, list[float]] = {}
    if options.get("sample_weight") is None:  # each model sorted once; a replicate is draw counts
        sorted_once = SortedModels(y_true, models, names, attributes, intersectional, options)

        def replicate(drawn: np.ndarray) -> dict[tuple, float]:
            return sorted_once.replicate(np.bincount(drawn, minlength=len(labels)).astype(np.float64))
    else:  # weights: the drawn rows evaluated as samples (every model sorted again)
        def replicate(drawn: np.ndarray) -> dict[tuple, float]:
            return _drawn_values(labels, models, names, attributes, intersectional, options, drawn)
    with _progress.Progress(n_boot, "paired bootstrap", progress, unit="replicate") as bar:
        for _ in range(n_boot):
            values = replicate(draws(rng))
            for name in names:  # NaN where a replicate's summary has no value (fewer than two groups)
                for attribute, column in compared:
                    key = ("model", name, attribute, column)
                    collected.setdefault(key, []).append(values.get(key, math.nan))
            bar.update(1)
    for key, values in collected.items():
        replicates[key] = np.array(values)
    tail = (1 - ci) / 2 * 100
    for (a, b, attribute, column), row in rows.items():
        draws = replicates[("model", a, attribute, column)] - replicates[("model", b, attribute, column)]
        replicates[("difference", a, b, attribute, column)] = draws
        finite = draws[np.isfinite(draws)]
        row["n_boot_valid"] = len(finite)
        if not len(finite):
            continue
        row["ci_low"], row["ci_high"] = (float(x) for x in np.percentile(finite, [tail, 100 - tail]))
        below = (1 + np.count_nonzero(finite <= 0)) / (len(finite) + 1)
        above = (1 + np.count_nonzero(finite >= 0)) / (len(finite) + 1)
        row["p_bootstrap"] = min(1.0, 2 * min(below, above))


def _drawn_values(labels, models, names, attributes, intersectional, options, drawn) -> dict[tuple, float]:
    """One replicate's summary values of every model: ``evaluate`` of the drawn rows."""
    with warnings.catch_warnings():  # each replicate's notes are the observed report's
        warnings.simplefilter("ignore")
        reports = _evaluate(labels[drawn], {name: models[name][drawn] for name in names}, names,
                            _coded(attributes, drawn), intersectional, options)
    return {("model", name, attribute, column): float(value) for name, report in reports.items()
            for (attribute, column), value in report.summary.stack().items()}


class SortedModels:
    """Each model's samples sorted once (scores, labels and group codes side by side), so that a paired
    bootstrap replicate, given as every sample's draw count, is measured on each model's sorted samples
    with the counts as weights: the numbers of ``evaluate`` on the drawn rows, with no sort."""

    def __init__(self, y_true, models: dict, names: list[str], attributes: list[_groups.Attribute],
                 intersectional: bool, options: dict):
        self.groupings = list(attributes)
        if intersectional and len(attributes) > 1:
            self.groupings.append(_groups.combine(attributes))
        self.names, self.min_group_size = names, options.get("min_group_size")
        self.wanted = with_default(_metric_registry.optional_keys(_metric_registry.check_metrics(options.get("metrics"))))
        sizes = np.array([g.n_groups for g in self.groupings], np.int64)
        code_type = _sorting.code_dtype(int(sizes.max(initial=1)))
        self.n = len(next(iter(models.values())))
        self.sorted: dict[str, tuple] = {}
        for name in names:
            prepared, _ = prepare(y_true, models[name], np.zeros(self.n), options.get("pos_label"),
                                  options.get("score_type", "auto"), options.get("score_column"), [], None,
                                  options.get("threshold"))
            order, scores = _sorting.sort_scores(prepared.scores)
            codes = np.empty((len(self.groupings), self.n), code_type)
            for k, grouping in enumerate(self.groupings):
                grouping.codes.astype(code_type, copy=False).take(order, out=codes[k])
            arranged = _classification.Arranged(scores, prepared.labels.take(order), codes, sizes, None, True)
            self.sorted[name] = (order, arranged, arranged.log_loss_terms(), prepared.threshold)

    def replicate(self, counts: np.ndarray) -> dict[tuple, float]:
        """Every model's summary values of one replicate (``counts``: each sample's draws as float64, in
        sample order)."""
        values: dict[tuple, float] = {}
        for found in on_threads([partial(self._one, name, counts) for name in self.names], resolve_n_jobs()):
            values.update(found)
        return values

    def _one(self, name: str, counts: np.ndarray) -> dict[tuple, float]:
        order, arranged, log_loss, threshold = self.sorted[name]
        weights = counts.take(order)  # in the model's score order
        drawn = np.flatnonzero(weights)
        codes = np.empty((len(arranged.codes), len(drawn)), arranged.codes.dtype)  # rows contiguous
        for row, out in zip(arranged.codes, codes):
            row.take(drawn, out=out)
        part = _classification.Arranged(arranged.scores.take(drawn), arranged.labels.take(drawn), codes,
                                        arranged.sizes, None, True, log_loss.take(drawn))
        measured = _classification.measure(part, self.wanted, fixed_best=threshold, weights=weights.take(drawn),
                                           sample_counts=False, parallel=False)
        out = {}
        for attribute, grouping in zip(self.groupings, measured):
            result = attribute_result(attribute, grouping, self.n, [], self.min_group_size)
            out.update({("model", name, attribute.name, column): float(value)
                        for column, value in result.summary.items()})
        return out


def _analytic(rows, y_true, models, names, attributes, reports, pairs, options, ci, intersectional) -> None:
    """DeLong's paired standard errors of the AUC differences, from each model's evaluable groups."""
    from statistics import NormalDist

    labels, _ = _inputs.binary_labels(y_true, options.get("pos_label"))
    z = NormalDist().inv_cdf(0.5 + ci / 2)
    groupings = list(attributes)
    if intersectional and len(attributes) > 1:
        groupings.append(_groups.combine(attributes))
    for a, b in pairs:
        for attribute in groupings:
            paired = _paired.paired_auc(models[a].astype(np.float64), models[b].astype(np.float64), labels,
                                        attribute.codes.astype(np.int64), attribute.n_groups)
            for column in ANALYTIC:
                key = (a, b, attribute.name, column)
                if key not in rows:
                    continue
                weights = _weights(column, reports[a], reports[b], attribute)
                if weights is None:
                    continue
                value, se = paired.difference(weights)
                row = rows[key]
                row["se_analytic"] = se
                if math.isfinite(se) and se > 0:
                    row["ci_low_analytic"], row["ci_high_analytic"] = value - z * se, value + z * se
                    row["p_analytic"] = 2 * (1 - NormalDist().cdf(abs(value) / se))
                elif se == 0:
                    row["ci_low_analytic"] = row["ci_high_analytic"] = value
                    row["p_analytic"] = 1.0 if value == 0 else 0.0


def _weights(column: str, left, right, attribute: _groups.Attribute) -> np.ndarray | None:
    """The linear combination of the two models' group AUCs (rows: groups, then every sample) that a
    column's difference is: overall AUC, the worst group's, the best minus the worst."""
    weights = np.zeros((attribute.n_groups + 1, 2))
    if column == "overall-auc":
        weights[attribute.n_groups] = 1, -1
        return weights
    for k, report in enumerate((left, right)):
        aucs = report.by_group.loc[attribute.name, "auc"].reindex(attribute.groups).to_numpy(np.float64)
        if np.all(np.isnan(aucs)):
            return None
        sign = 1 if k == 0 else -1
        worst, best = int(np.nanargmin(aucs)), int(np.nanargmax(aucs))
        if column == "worst-auc":
            weights[worst, k] += sign
        else:  # auc-gap
            weights[best, k] += sign
            weights[worst, k] -= sign
    return weights


def _swaps(rows, y_true, models, names, coded, intersectional, options, n_permutations, seed, pairs,
           progress) -> None:
    """Swap permutations: each sample's two scores exchanged with probability 1/2, both models
    evaluated again; the two-sided p-value of each difference."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)).spawn(2)[1])
    counts: dict[tuple, list[int]] = {}
    with _progress.Progress(n_permutations * len(pairs), "swap permutations", progress, unit="permutation") as bar:
        for a, b in pairs:
            sa, sb = models[a], models[b]
            for _ in range(n_permutations):
                swap = rng.random(len(sa)) < 0.5
                swapped = {a: np.where(swap, sb, sa), b: np.where(swap, sa, sb)}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    reports = _evaluate(y_true, swapped, [a, b], coded, intersectional, options)
                left, right = reports[a].summary, reports[b].summary
                for key, row in rows.items():
                    if key[:2] != (a, b):
                        continue
                    d = float(left.loc[key[2], key[3]]) - float(right.loc[key[2], key[3]])
                    tally = counts.setdefault(key, [0, 0])
                    if math.isfinite(d):
                        tally[0] += abs(d) >= abs(row["difference"]) - 1e-12 * max(1.0, abs(row["difference"]))
                        tally[1] += 1
                bar.update(1)
    for key, (extreme, valid) in counts.items():
        rows[key]["p_swap"] = (1 + extreme) / (1 + valid) if valid else math.nan


def _frame(rows: dict, p_adjust: str | None, ci: float, n_boot: int, notes: list[str]) -> pd.DataFrame:
    values = list(rows.values())
    # column by column (DataFrame.from_dict(rows, orient="index") took 10 ms for 190 pairs' rows), in
    # the order the rows first name them; a row without a column gives None there (NaN when numeric)
    columns = dict.fromkeys(itertools.chain.from_iterable(values))
    frame = pd.DataFrame({column: [row.get(column) for row in values] for column in columns},
                         index=pd.MultiIndex.from_tuples(list(rows), names=["model", "other", "attribute", "column"]))
    tests = [column for column in ("p_bootstrap", "p_analytic", "p_swap") if column in frame.columns]
    for column in tests:
        if p_adjust is not None:
            frame[f"{column}_{p_adjust}"] = _resample.adjusted(frame[column].to_numpy(np.float64), p_adjust)
    alpha = 1 - ci
    reachable = True
    if "p_bootstrap" in frame.columns:  # the smallest p-value n_boot replicates give, adjusted
        tested = int(frame["p_bootstrap"].notna().sum())
        smallest = 2 / (n_boot + 1) * (tested if p_adjust else 1)
        reachable = smallest < alpha
        if not reachable:
            needed = math.ceil(2 * (tested if p_adjust else 1) / alpha)
            notes.append(f"n_boot={n_boot} cannot reach the adjusted level {alpha:g} over {tested} bootstrap tests "
                         f"(the smallest adjusted p-value is {min(smallest, 1):.3g}): 'significant' is None; about "
                         f"{needed} replicates would be needed")
    frame["significant"] = _significant(frame, p_adjust, alpha, reachable)
    return frame


def _significant(frame: pd.DataFrame, p_adjust: str | None, alpha: float, reachable: bool) -> list[bool | None]:
    """Per row: the adjusted test rejects and the interval excludes 0 (the bootstrap's where it ran,
    else the analytic one); None where neither ran, where the bootstrap's replicates cannot reach
    the adjusted level, or where a small group defines either value (the findings' rule)."""
    out = np.full(len(frame), None, object)
    decided = np.zeros(len(frame), bool)
    for test, low, high in (("p_bootstrap", "ci_low", "ci_high"), ("p_analytic", "ci_low_analytic",
                                                                     "ci_high_analytic")):
        name = f"{test}_{p_adjust}" if p_adjust else test
        if name not in frame.columns:
            continue
        p = frame[name].to_numpy(np.float64)
        here = ~decided & ~np.isnan(p)
        if test == "p_bootstrap" and not reachable:
            decided |= here  # None
            continue
        excludes = ~((frame[low].to_numpy(np.float64) <= 0) & (0 <= frame[high].to_numpy(np.float64)))
        out[here] = list((p < alpha)[here] & excludes[here])
        decided |= here
    if "small_group" in frame.columns:
        out[frame["small_group"].to_numpy(bool)] = None
    return [None if value is None else bool(value) for value in out]
