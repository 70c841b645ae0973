"""Bootstrap intervals and permutation tests over the one sorted arrangement.

A bootstrap resample is a vector of draw counts over the sorted samples. The samples it draws are
taken out in their sorted order (a filter, never a re-sort) with their counts as weights, and go
through the same kernels. With ``stratify="attribute"`` (the default) each attribute has its own
resamples, stratified by its groups alone (a missing value is a stratum of its own), from a random
stream derived from the seed and the attribute's name: an attribute's intervals are the same
whichever other attributes are evaluated beside it. With ``stratify=None`` one resample of all
samples (as fairlearn draws them) serves every attribute, and a group may lose every sample.
Resamples run on a thread pool (the kernels release the GIL) and each depends only on its stream
and its number, so the intervals do not depend on the thread count.
"""
from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from typing import Any

import numpy as np

from .._registry import metrics as _metric_registry
from .._util.progress import Progress
from .._util.threads import executor, resolve_n_jobs
from . import classification as _engine

#: Per-group metrics that get intervals (confusion counts do not), from the registry.
INTERVAL_METRICS = _metric_registry.interval_names()
#: Values kept per group and bootstrap resample, at most (each interval metric plain and at @best_f1,
#: and 13 more): the bound of the memory check of n_boot.
RESAMPLED_PER_GROUP = 2 * len(INTERVAL_METRICS) + 13
#: Summary columns tested for a difference between groups (eod is higher-is-fairer), from the registry.
GAP_COLUMNS = tuple(_metric_registry.tested_columns())
#: Accepted ``stratify`` and ``p_adjust`` values.
STRATIFY = ("attribute", None)
P_ADJUST = (None, "holm", "bonferroni")


def seed_from(random_state: Any) -> np.uint64:
    """A 64-bit seed from None (fresh entropy), an int, or a NumPy Generator/RandomState."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        if random_state is not None and int(random_state) < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return np.random.SeedSequence(random_state).generate_state(1, np.uint64)[0]
    if isinstance(random_state, np.random.Generator):
        return np.uint64(random_state.integers(0, 2**63))
    if isinstance(random_state, np.random.RandomState):
        return np.uint64(random_state.randint(0, 2**63, dtype=np.int64))
    raise ValueError(f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}")


def stream(seed: np.uint64, purpose: str, name: Any = "") -> np.uint64:
    """The seed of one random stream: a function of ``seed``, ``purpose`` and ``name`` only.

    Names are hashed with BLAKE2b (not Python's per-process salted ``hash``), so an attribute's
    stream is the same in every process and whatever the other attributes are.
    """
    key = hashlib.blake2b(f"{purpose}\x00{name}".encode(), digest_size=8).digest()
    entropy = [int(seed), int.from_bytes(key, "little")]
    return np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]


def check_options(stratify: Any, p_adjust: Any) -> None:
    """Validate ``stratify`` and ``p_adjust``."""
    if not (stratify is None or (isinstance(stratify, str) and stratify == "attribute")):
        raise ValueError(f"stratify must be 'attribute' (resample within each attribute's groups) or None "
                         f"(resample all samples); got {stratify!r}")
    if not (p_adjust is None or (isinstance(p_adjust, str) and p_adjust in P_ADJUST)):
        raise ValueError(f"p_adjust must be None, 'holm' or 'bonferroni'; got {p_adjust!r}")


def _run(n_tasks: int, task: Callable[[int], None], progress: Progress | None = None) -> None:
    workers = min(resolve_n_jobs(), max(n_tasks, 1))
    if workers == 1:
        for index in range(n_tasks):
            task(index)
            if progress is not None:
                progress.update()
        return
    pool = executor(workers)
    futures = [pool.submit(_chunk, task, range(w, n_tasks, workers), progress) for w in range(workers)]
    wait(futures)  # all of them, even when one fails
    for future in futures:
        future.result()


def _chunk(task: Callable[[int], None], indices: range, progress: Progress | None) -> None:
    for index in indices:
        task(index)
        if progress is not None:
            progress.update()


def _strata(codes: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Samples grouped by their group code, for resamples within groups (one stratum of all samples
    when ``codes`` is None).

    Returns the members of each stratum in ascending order (int32 below 2**31 samples: they are
    read once per resample) and where each stratum starts among them. Missing values (negative
    codes) are in no stratum: those samples take no part in the attribute's metrics, so they need
    not be drawn.
    """
    index = np.int32 if n < 2**31 else np.intp
    if codes is None:
        return np.arange(n, dtype=index), np.array([0, n], np.intp)
    members = np.argsort(codes, kind="stable").astype(index)
    counts = np.bincount(codes[codes >= 0].astype(np.intp))
    members = members[n - int(counts.sum()):]  # missing values (negative codes) sort first
    return members, np.concatenate(([0], np.cumsum(counts))).astype(np.intp)


#: The tally of a resample's draws: narrow, so that the random increments stay in cache; a count
#: past its largest value (a sample drawn 256 times: practically never) counts again in a wide one.
NARROW_TALLY, NARROW_LIMIT = np.dtype(np.uint8), 255


class _Plan:
    """Which samples each resample stratifies, and the groupings it measures.

    One job per attribute (``stratify="attribute"``), or one job for all of them (``None``).
    """

    def __init__(self, code_rows: Sequence[np.ndarray], names: Sequence[Any], seed: np.uint64,
                 stratify: str | None, purpose: str):
        n = len(code_rows[0]) if len(code_rows) else 0
        if stratify is None:
            self.jobs = [(list(range(len(code_rows))), _strata(None, n), stream(seed, purpose))]
            self.strata = [None]
        else:
            self.jobs = [([a], _strata(row, n), stream(seed, purpose, name))
                         for a, (row, name) in enumerate(zip(code_rows, names))]
            self.strata = list(code_rows)  # an attribute's strata are its groups
        self.n = n
        self._local = threading.local()

    def counts(self, job: int, resample: int) -> np.ndarray:
        """Draw count of every sample in one resample of one job."""
        from ..kernels import resampling

        _, (members, starts), seed = self.jobs[job]
        out = np.empty(self.n)
        resampling.stratified_bootstrap_counts(members, starts, seed, resample, out)
        return out

    def drawn(self, job: int, resample: int, arranged: _engine.Arranged, log_loss: np.ndarray
              ) -> tuple[_engine.Arranged, np.ndarray]:
        """The samples one resample of one job draws, in their sorted order, and their counts."""
        from ..kernels import resampling

        rows, (members, starts), seed = self.jobs[job]
        k, first = len(rows), rows[0]
        codes = arranged.codes[first:first + k]
        # Buffers of the calling thread, reused: fresh large arrays would fault in every page again.
        n, buffers = self.n, getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = (
                np.empty(n, arranged.scores.dtype), np.empty(n, arranged.labels.dtype),
                np.empty(len(self.jobs[0][0]) * n, codes.dtype), np.empty(n), np.empty(n),
                np.empty(n, NARROW_TALLY), np.empty(n, NARROW_TALLY))
        scores, labels, out_codes, terms, weights, tally, counts = buffers
        inputs = (members, starts, seed, resample, arranged.scores, arranged.labels, codes, log_loss,
                  arranged.weights, scores, labels, out_codes, terms, weights)
        m = resampling.drawn_samples(*inputs, tally, counts, NARROW_LIMIT)
        if m < 0:  # a count past the narrow tally: the same draws, counted wide
            m = resampling.drawn_samples(*inputs, np.empty(n, np.int64), np.empty(n, np.int64), n)
        part = _engine.Arranged(scores[:m], labels[:m], out_codes[:k * m].reshape(k, m),
                                arranged.sizes[first:first + k], None, arranged.is_sorted, terms[:m])
        return part, weights[:m]


#: The passes (``_metric_registry.PASSES``) whose sums :class:`_Tallied` counts in each resample.
TALLIED_PASSES = frozenset({"counts", "ranks", "log_loss", "ece_bins", "confusion"})
#: The per-slot sums that :class:`_Tallied` counts: those the registry says these passes make.
TALLIED_SUMS = frozenset(entry.name for entry in _metric_registry.REGISTRY.sums if entry.made_by in TALLIED_PASSES)


class _Tallied:
    """One attribute's resamples within its groups, measured by ``kernels.bootstrap`` from their
    draw counts: nothing is copied out, and the numbers are those of measuring the drawn samples
    (:meth:`_Plan.drawn`), bit for bit. For ``stratify="attribute"`` without sample weights, and
    opt-in metrics finished from the sums it counts (:data:`TALLIED_SUMS`)."""

    def __init__(self, plan: _Plan, job: int, arranged: _engine.Arranged, log_loss: np.ndarray,
                 fixed_best: float | None, blocks: tuple[np.ndarray, np.ndarray], extra: Sequence[str] = ()):
        from ..kernels import bootstrap as kernels

        (row,), (self.members, self.starts), self.seed = plan.jobs[job]
        self.arranged, self.log_loss, self.fixed_best, self.blocks = arranged, log_loss, fixed_best, blocks
        self.size, self.codes = arranged.sizes[row:row + 1], arranged.codes[row]
        # The group runs: scores, labels and BCE terms in stratum order (ascending within each group).
        scores = arranged.scores[self.members]
        self.in_strata = (scores, arranged.labels[self.members], *kernels.tie_blocks(scores, self.starts))
        # Confusion counts at a fixed threshold t: the counts below searchsorted(scores, t, "right").
        thresholds = {"": _engine.THRESHOLD, **({} if fixed_best is None else {_engine.BEST: fixed_best})}
        self.fixed = {suffix: int(np.searchsorted(arranged.scores, t, "right")) for suffix, t in thresholds.items()}
        self.positions = sorted(set(self.fixed.values()))
        self.cuts = np.array(self.positions, np.int64)
        # ... and in each group's run (thresholds at one sorted position share their group positions)
        values = [{self.fixed[suffix]: t for suffix, t in thresholds.items()}[p] for p in self.positions]
        self.stratum_cuts = np.array([[np.searchsorted(scores[a:b], t, "right") for t in values]
                                      for a, b in zip(self.starts[:-1], self.starts[1:])], np.int64
                                     ).reshape(len(self.starts) - 1, len(values))
        self.keys = {*_engine.all_keys(), *extra}
        self._local = threading.local()

    @staticmethod
    def applies(plan: _Plan, job: int, arranged: _engine.Arranged, extra: Sequence[str]) -> bool:
        return (arranged.weights is None and plan.strata[job] is not None
                and _metric_registry.finished_from(extra, TALLIED_SUMS))

    def measure(self, resample: int) -> list[_engine.Grouping]:
        """The grouping of one resample, as ``_engine.measure`` gives it for the drawn samples."""
        from ..kernels import bootstrap

        arranged = self.arranged
        n = len(arranged.scores)
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:  # reused: fresh large arrays would fault in every page again
            buffers = self._local.buffers = (np.empty(len(self.members), NARROW_TALLY), np.empty(n, NARROW_TALLY))
        for limit in (NARROW_LIMIT, n):  # a count past the narrow tally: the same draws, counted wide
            sums = bootstrap.stratified_resample(
                self.members, self.starts, self.seed, resample, *buffers, limit, int(self.size[0]), arranged.scores,
                arranged.labels, self.codes, self.log_loss, *self.blocks, *self.in_strata, self.cuts, self.stratum_cuts,
                _engine.ECE_BINS, self.fixed_best is None)
            if sums[0]:
                break
            buffers = (np.empty(len(self.members), np.int64), np.empty(n, np.int64))
        return self._grouping(sums[1:])

    def _grouping(self, sums: tuple) -> list[_engine.Grouping]:
        # float64, as the weighted kernels give them (the same integers)
        count, positives, u2, pos_cut, neg_cut, pos_at, neg_at = (
            np.asarray(sums[j], np.float64) for j in (0, 1, 2, 4, 5, 8, 9))
        loss, ece, found = sums[3], sums[6], sums[7]
        negatives = count - positives
        confusion = {}
        for suffix, position in self.fixed.items():
            j = self.positions.index(position)
            confusion[suffix] = (positives - pos_cut[:, j], negatives - neg_cut[:, j])
        if self.fixed_best is None:
            thresholds = np.full(1, found)
            confusion[_engine.BEST] = (positives - pos_at, negatives - neg_at)
        else:
            thresholds = np.full(1, float(self.fixed_best))
        return _engine.from_counts(self.size, count, positives, negatives, thresholds, self.keys, u2=u2,
                                   loss_sums=loss, ece=ece, confusion=confusion, totals=count)


def _percentiles(draws: np.ndarray, level: float) -> np.ndarray:
    tail = (1 - level) / 2 * 100
    with np.errstate(invalid="ignore"), _quiet():
        return np.moveaxis(np.nanpercentile(draws, [tail, 100 - tail], axis=0), 0, -1)


def bootstrap(arranged: _engine.Arranged, names: Sequence[Any], valid_groups: list[list[int]],
              summarize: Callable, n_boot: int, level: float, seed: np.uint64, fixed_best: float | None,
              stratify: str | None = "attribute", progress: bool | None = None, keep: dict | None = None,
              extra: Sequence[str] = ()) -> tuple[list[np.ndarray], list[np.ndarray], list[str], list[np.ndarray]]:
    """Percentile intervals of every per-group metric and every summary column.

    ``names`` are the attributes of the first ``len(names)`` code rows of ``arranged``.
    Returns, per attribute, an array (n_groups, len(INTERVAL_METRICS) * 2, 2) of [lo, hi] for each
    key (plain and "@best_f1"), an array (len(summary columns), 2), the summary column names, and
    per attribute the number of resamples in which each group had no sample. With ``keep``, the
    resampled group values themselves go there: ``keep[name] = (keys, array (n_boot, n_groups,
    len(keys)))`` (for the differences between pairs of groups). ``extra``: opt-in per-group keys
    (``"ap"``, ``"fpr@best_f1"``, ...) resampled too, after the default ones.
    """
    n_attributes = len(names)
    plan = _Plan(arranged.codes[:n_attributes], names, seed, stratify, "bootstrap")
    keys = [*INTERVAL_METRICS, *(name + _engine.BEST for name in INTERVAL_METRICS), *extra]
    wanted = {*_engine.all_keys(), *extra} if extra else None
    sizes = arranged.sizes[:n_attributes]
    group_draws = [np.full((n_boot, int(g), len(keys)), np.nan) for g in sizes]
    empty_draws = [np.zeros((n_boot, int(g)), bool) for g in sizes]
    every = [*_engine.all_keys(), *extra]
    columns = list(summarize({k: 0.0 for k in every}, {k: [0.0] for k in every}))
    summary_draws = [np.full((n_boot, len(columns)), np.nan) for _ in sizes]
    log_loss = arranged.log_loss_terms()  # once, before the threads share it

    from ..kernels import bootstrap as kernels

    blocks = kernels.tie_blocks(arranged.scores)  # once: the runs of equal scores of every resample
    tallied = [_Tallied(plan, job, arranged, log_loss, fixed_best, blocks, extra)
               if _Tallied.applies(plan, job, arranged, extra) else None for job in range(len(plan.jobs))]

    def one(task: int) -> None:
        r, job = divmod(task, len(plan.jobs))
        rows = plan.jobs[job][0]
        if tallied[job] is not None:  # from the draw counts over the whole arrangement
            groupings = tallied[job].measure(r)
        else:  # the drawn samples, still in score order: the kernels see only them, with their counts
            part, weights = plan.drawn(job, r, arranged, log_loss)
            groupings = _engine.measure(part, wanted, fixed_best=fixed_best, weights=weights, sample_counts=False,
                                        parallel=False)
        for a, grouping in zip(rows, groupings):
            g = int(sizes[a])
            for j, key in enumerate(keys):
                group_draws[a][r, :, j] = grouping.values[key][:g]
            empty_draws[a][r] = grouping.count[:g] == 0
            valid = [i for i in valid_groups[a] if grouping.positives[i] > 0 and grouping.negatives[i] > 0]
            if len(valid) < 2:
                continue
            overall = {key: float(values[g]) for key, values in grouping.values.items()}
            per_metric = {key: [float(values[i]) for i in valid] for key, values in grouping.values.items()}
            summary = summarize(overall, per_metric)
            summary_draws[a][r] = [summary[c] for c in columns]

    with Progress(n_boot * len(plan.jobs), "bootstrap", progress, unit="resample") as bar:
        _run(n_boot * len(plan.jobs), one, bar)
    if keep is not None:
        keep.update({name: (keys, draws) for name, draws in zip(names, group_draws)})
    by_group = [_percentiles(d, level) for d in group_draws]
    summaries = [_percentiles(d, level) for d in summary_draws]
    return by_group, summaries, columns, [d.sum(axis=0) for d in empty_draws]


def permutation_pvalues(arranged: _engine.Arranged, attribute: int, valid_groups: list[int],
                        observed: dict[str, float], summarize: Callable, n_permutations: int,
                        seed: np.uint64, threshold: float, progress: Progress | None = None,
                        keep: list | None = None, extra: Sequence[str] = (),
                        within_labels: bool = False) -> dict[str, float]:
    """p-value of each gap of one attribute under shuffled group labels.

    ``within_labels`` shuffles the group labels within each class (every group keeps its numbers of
    positives and negatives): the null "the group does not change the scores given the label", the
    one of the AUC, TPR and TNR gaps when prevalence differs between groups.

    Group labels are permuted among the attribute's present samples; the best-F1 threshold, which
    depends on those samples only, stays the observed one. p = (1 + #{permuted >= observed}) /
    (1 + n_permutations), with ``eod`` compared as ``1 - eod``. ``seed`` is the attribute's stream
    (see :func:`stream`). With ``keep``, ``(keys, array (n_permutations, n_groups, len(keys)))`` of
    the permuted group values is appended to it (for the differences between pairs of groups).
    ``extra``: opt-in per-group keys, whose gaps (``ap-gap``, ``dp``, ...) are tested too.
    """
    from ..kernels import resampling

    row = arranged.codes[attribute]
    sizes = arranged.sizes[attribute:attribute + 1]
    columns = _metric_registry.tested_columns(extra)
    wanted = {*(key for column in columns for key in _metric_registry.REGISTRY.summary[column].reads), *extra}
    draws = np.full((n_permutations, len(columns)), np.nan)
    keys = sorted(wanted)
    g = int(sizes[0])
    group_values = np.full((n_permutations, g, len(keys)), np.nan) if keep is not None else None

    def one(p: int) -> None:
        codes = np.empty((1, len(row)), row.dtype)
        if within_labels:
            resampling.permuted_codes_within(row, arranged.labels, seed, p, codes[0])
        else:
            resampling.permuted_codes(row, seed, p, codes[0])
        grouping = _engine.measure(arranged.with_codes(codes, sizes), wanted, fixed_best=threshold,
                                   parallel=False)[0]
        if group_values is not None:
            for j, key in enumerate(keys):
                group_values[p, :, j] = grouping.values[key][:g]
        valid = [i for i in valid_groups if grouping.positives[i] > 0 and grouping.negatives[i] > 0]
        if len(valid) < 2:
            return
        per_metric = {key: [float(values[i]) for i in valid] for key, values in grouping.values.items()}
        summary = summarize({}, per_metric)
        draws[p] = [summary[c] for c in columns]

    _run(n_permutations, one, progress)
    if keep is not None:
        keep.append((keys, group_values))
    return _p_values(draws, columns, observed)


def _p_values(draws: np.ndarray, columns: Sequence[str], observed: dict[str, float]) -> dict[str, float]:
    out = {}
    for j, column in enumerate(columns):
        value = observed.get(column, np.nan)
        column_draws = draws[:, j][~np.isnan(draws[:, j])]
        if np.isnan(value) or column_draws.size == 0:
            out[column] = np.nan
            continue
        fair = _metric_registry.fair_value(column)  # 0 for a gap; 1 for eod and ratios, which lie below it
        if fair:
            extreme = (fair - column_draws) >= (fair - value) - 1e-12
        else:
            extreme = column_draws >= value - 1e-12
        out[column] = float((1 + extreme.sum()) / (1 + column_draws.size))
    return out


def adjusted(p_values: np.ndarray, method: str) -> np.ndarray:
    """Holm or Bonferroni adjustment over every finite entry of ``p_values`` together (NaN stays NaN)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    finite = ~np.isnan(p)
    values = p[finite]
    m = values.size
    if method == "bonferroni":
        out[finite] = np.minimum(1.0, values * m)
    elif method == "holm":
        order = np.argsort(values, kind="stable")
        steps = np.maximum.accumulate((m - np.arange(m)) * values[order])
        flat = np.empty(m)
        flat[order] = np.minimum(1.0, steps)
        out[finite] = flat
    else:
        raise ValueError(f"p_adjust must be None, 'holm' or 'bonferroni'; got {method!r}")
    return out


def with_adjusted(frame, method: str | None):
    """``frame`` of p-values with each column's adjusted values beside it (``<column>_<method>``),
    adjusted over all the frame's attributes and columns together."""
    if method is None:
        return frame
    import pandas as pd

    adjusted_values = adjusted(frame.to_numpy(dtype=np.float64), method)
    parts = {}
    for j, column in enumerate(frame.columns):
        parts[column] = frame[column]
        parts[f"{column}_{method}"] = pd.Series(adjusted_values[:, j], index=frame.index)
    out = pd.DataFrame(parts, index=frame.index)
    return out


class _quiet:
    """Silence NumPy's 'All-NaN slice' warnings: an undefined interval is NaN, as documented."""

    def __enter__(self):
        import warnings

        self._catcher = warnings.catch_warnings()
        self._catcher.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._catcher.__exit__(*exc)


# ---------------------------------------------------------------------------------------------
# Segmentation: group means of per-sample Dice
# ---------------------------------------------------------------------------------------------

def dice_intervals(dice: np.ndarray, code_rows: list[np.ndarray], names: Sequence[Any], sizes: list[int],
                   summarize: Callable, n_boot: int, level: float, seed: np.uint64,
                   valid_groups: list[np.ndarray] | None = None, stratify: str | None = "attribute",
                   progress: bool | None = None, keep: dict | None = None):
    """Percentile intervals of each group's mean Dice and of each summary column.

    ``dice`` holds the finite scores; ``code_rows`` the attributes' codes of those samples;
    ``valid_groups`` (boolean per group, default: every group) the groups that enter the summary.
    Returns, per attribute, (n_groups, 2) bounds, (n_columns, 2) bounds, the column names, and
    per attribute the number of resamples in which each group had no sample. With ``keep``, each
    attribute's resampled group means go there (``keep[name]``: array (n_boot, n_groups)).
    """
    plan = _Plan(code_rows, names, seed, stratify, "bootstrap")
    columns = list(summarize(0.5, np.array([0.25, 0.75])))
    group_draws = [np.full((n_boot, g), np.nan) for g in sizes]
    empty_draws = [np.zeros((n_boot, g), bool) for g in sizes]
    summary_draws = [np.full((n_boot, len(columns)), np.nan) for _ in sizes]

    def one(task: int) -> None:
        r, job = divmod(task, len(plan.jobs))
        weights = plan.counts(job, r)
        for a in plan.jobs[job][0]:
            codes, g = code_rows[a], sizes[a]
            keep = codes >= 0
            total = np.bincount(codes[keep], weights=weights[keep], minlength=g)
            sums = np.bincount(codes[keep], weights=(weights * dice)[keep], minlength=g)
            with np.errstate(invalid="ignore", divide="ignore"):
                means = sums / total
            group_draws[a][r] = means
            empty_draws[a][r] = total == 0
            present = total > 0
            if valid_groups is not None:
                present &= valid_groups[a]
            if present.sum() >= 2:
                summary = summarize(float(sums.sum() / total.sum()), means[present])
                summary_draws[a][r] = [summary[c] for c in columns]

    with Progress(n_boot * len(plan.jobs), "bootstrap", progress, unit="resample") as bar:
        _run(n_boot * len(plan.jobs), one, bar)
    if keep is not None:
        keep.update(zip(names, group_draws))
    groups = [_percentiles(d, level) for d in group_draws]
    summaries = [_percentiles(d, level) for d in summary_draws]
    return groups, summaries, columns, [d.sum(axis=0) for d in empty_draws]


def dice_permutation_pvalues(dice: np.ndarray, codes: np.ndarray, n_groups: int, observed: dict[str, float],
                             summarize: Callable, n_permutations: int, seed: np.uint64,
                             valid: np.ndarray | None = None, progress: Progress | None = None,
                             keep: list | None = None) -> dict[str, float]:
    """p-values of ``delta_dice`` and ``std_dice`` under group labels shuffled among the samples.

    ``seed`` is the attribute's stream (see :func:`stream`); ``valid`` (boolean per group) the groups
    that enter the summary (default: every group with samples). With ``keep``, the permuted group
    means (array (n_permutations, n_groups)) are appended to it.
    """
    from ..kernels import resampling

    columns = ("delta_dice", "std_dice")
    draws = np.full((n_permutations, len(columns)), np.nan)
    means = np.full((n_permutations, n_groups), np.nan) if keep is not None else None

    def one(p: int) -> None:
        shuffled = np.empty_like(codes)
        resampling.permuted_codes(codes, seed, p, shuffled)
        present_sample = shuffled >= 0
        counts = np.bincount(shuffled[present_sample], minlength=n_groups)
        sums = np.bincount(shuffled[present_sample], weights=dice[present_sample], minlength=n_groups)
        if means is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                means[p] = sums / counts
        present = counts > 0
        if valid is not None:
            present &= valid
        summary = summarize(float(dice[present_sample].mean()), sums[present] / counts[present])
        draws[p] = [summary[c] for c in columns]

    _run(n_permutations, one, progress)
    if keep is not None:
        keep.append(means)
    out = {}
    for j, column in enumerate(columns):
        value = observed.get(column, np.nan)
        out[column] = np.nan if np.isnan(value) else float((1 + (draws[:, j] >= value - 1e-12).sum())
                                                           / (1 + n_permutations))
    return out
