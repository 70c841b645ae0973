"""Bootstrap intervals and permutation tests over the one sorted arrangement.

A bootstrap resample is a vector of draw counts over the samples, used as weights in the same
kernels: no resample is ever re-sorted or copied. Resampling is stratified by the combination of
every attribute's group (missing values included), so each resample keeps every group of every
attribute at its size. Resamples run on a thread pool (the kernels release the GIL) and each
depends only on the seed and its number, so the intervals do not depend on the thread count.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import wait
from typing import Any

import numpy as np

from . import _engine
from ._threads import executor, resolve_n_jobs

#: Per-group metrics that get intervals (confusion counts do not).
INTERVAL_METRICS = ("auc", "acc", "bce", "ece", "tpr", "tnr")
#: Summary columns tested for a difference between groups; eod is higher-is-fairer.
GAP_COLUMNS = ("auc-gap", "acc-gap", "bce-gap", "ece-gap", "eo", "eod")


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


def _run(n_tasks: int, task: Callable[[int], None]) -> None:
    workers = min(resolve_n_jobs(), max(n_tasks, 1))
    if workers == 1:
        for index in range(n_tasks):
            task(index)
        return
    pool = executor(workers)
    futures = [pool.submit(_chunk, task, range(w, n_tasks, workers)) for w in range(workers)]
    wait(futures)  # all of them, even when one fails
    for future in futures:
        future.result()


def _chunk(task: Callable[[int], None], indices: range) -> None:
    for index in indices:
        task(index)


def _strata(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Samples grouped by their combination of group codes (missing counts as a group)."""
    key = np.zeros(codes.shape[1], np.int64)
    for row in codes:
        shifted = row.astype(np.int64) + 1
        key = key * (int(shifted.max(initial=0)) + 1) + shifted
        _, key = np.unique(key, return_inverse=True)  # keep the key small whatever the number of rows
    members = np.argsort(key, kind="stable")
    starts = np.concatenate(([0], np.cumsum(np.bincount(key)))).astype(np.intp)
    return members.astype(np.intp), starts


def bootstrap(arranged: _engine.Arranged, n_attributes: int, valid_groups: list[list[int]],
              summarize: Callable, n_boot: int, level: float, seed: np.uint64,
              fixed_best: float | None) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """Percentile intervals of every per-group metric and every summary column.

    Returns, per attribute, an array (n_groups, len(INTERVAL_METRICS) * 2, 2) of [lo, hi] for each
    key (plain and "@best_f1"), an array (len(summary columns), 2), and the summary column names.
    """
    from .kernels import resampling

    members, starts = _strata(arranged.codes[:n_attributes])
    keys = [*INTERVAL_METRICS, *(name + _engine.BEST for name in INTERVAL_METRICS)]
    sizes = arranged.sizes[:n_attributes]
    group_draws = [np.full((n_boot, int(g), len(keys)), np.nan) for g in sizes]
    columns = list(summarize({k: 0.0 for k in _engine.all_keys()}, {k: [0.0] for k in _engine.all_keys()}))
    summary_draws = [np.full((n_boot, len(columns)), np.nan) for _ in sizes]

    def one(r: int) -> None:
        weights = np.empty(len(arranged.scores))
        resampling.stratified_bootstrap_counts(members, starts, seed, r, weights)
        if arranged.weights is not None:
            weights *= arranged.weights
        groupings = _engine.measure(arranged, None, fixed_best=fixed_best, weights=weights, sample_counts=False,
                                    parallel=False)
        for a in range(n_attributes):
            grouping, g = groupings[a], int(sizes[a])
            for j, key in enumerate(keys):
                group_draws[a][r, :, j] = grouping.values[key][:g]
            valid = [i for i in valid_groups[a] if grouping.positives[i] > 0 and grouping.negatives[i] > 0]
            if len(valid) < 2:
                continue
            overall = {key: float(values[g]) for key, values in grouping.values.items()}
            per_metric = {key: [float(values[i]) for i in valid] for key, values in grouping.values.items()}
            summary = summarize(overall, per_metric)
            summary_draws[a][r] = [summary[c] for c in columns]

    _run(n_boot, one)
    tail = (1 - level) / 2 * 100
    with np.errstate(invalid="ignore"), _quiet():
        by_group = [np.moveaxis(np.nanpercentile(d, [tail, 100 - tail], axis=0), 0, -1) for d in group_draws]
        summaries = [np.nanpercentile(d, [tail, 100 - tail], axis=0).T for d in summary_draws]
    return by_group, summaries, columns


def permutation_pvalues(arranged: _engine.Arranged, attribute: int, valid_groups: list[int],
                        observed: dict[str, float], summarize: Callable, n_permutations: int,
                        seed: np.uint64, threshold: float) -> dict[str, float]:
    """p-value of each gap of one attribute under shuffled group labels.

    Group labels are permuted among the attribute's present samples; the best-F1 threshold, which
    depends on those samples only, stays the observed one. p = (1 + #{permuted >= observed}) /
    (1 + n_permutations), with ``eod`` compared as ``1 - eod``.
    """
    from .kernels import resampling

    row = arranged.codes[attribute]
    sizes = arranged.sizes[attribute:attribute + 1]
    wanted = {"auc", "bce", "ece", "acc@best_f1", "tpr@best_f1", "tnr@best_f1"}
    draws = np.full((n_permutations, len(GAP_COLUMNS)), np.nan)
    stream_seed = np.uint64((int(seed) + 0x9E3779B97F4A7C15 * (attribute + 1)) % 2**64)

    def one(p: int) -> None:
        codes = np.empty((1, len(row)), row.dtype)
        resampling.permuted_codes(row, stream_seed, p, codes[0])
        grouping = _engine.measure(arranged.with_codes(codes, sizes), wanted, fixed_best=threshold,
                                   parallel=False)[0]
        valid = [i for i in valid_groups if grouping.positives[i] > 0 and grouping.negatives[i] > 0]
        if len(valid) < 2:
            return
        per_metric = {key: [float(values[i]) for i in valid] for key, values in grouping.values.items()}
        summary = summarize({}, per_metric)
        draws[p] = [summary[c] for c in GAP_COLUMNS]

    _run(n_permutations, one)
    out = {}
    for j, column in enumerate(GAP_COLUMNS):
        value = observed.get(column, np.nan)
        column_draws = draws[:, j][~np.isnan(draws[:, j])]
        if np.isnan(value) or column_draws.size == 0:
            out[column] = np.nan
            continue
        if column == "eod":
            extreme = (1 - column_draws) >= (1 - value) - 1e-12
        else:
            extreme = column_draws >= value - 1e-12
        out[column] = float((1 + extreme.sum()) / (1 + column_draws.size))
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

def dice_intervals(dice: np.ndarray, code_rows: list[np.ndarray], sizes: list[int], summarize: Callable,
                   n_boot: int, level: float, seed: np.uint64):
    """Percentile intervals of each group's mean Dice and of each summary column.

    ``dice`` holds the finite scores; ``code_rows`` the attributes' codes of those samples.
    Returns, per attribute, (n_groups, 2) bounds and (n_columns, 2) bounds, and the column names.
    """
    from .kernels import resampling

    members, starts = _strata(np.stack(code_rows) if code_rows else np.zeros((1, len(dice)), np.intp))
    columns = list(summarize(0.5, np.array([0.25, 0.75])))
    group_draws = [np.full((n_boot, g), np.nan) for g in sizes]
    summary_draws = [np.full((n_boot, len(columns)), np.nan) for _ in sizes]

    def one(r: int) -> None:
        weights = np.empty(len(dice))
        resampling.stratified_bootstrap_counts(members, starts, seed, r, weights)
        for a, (codes, g) in enumerate(zip(code_rows, sizes)):
            keep = codes >= 0
            total = np.bincount(codes[keep], weights=weights[keep], minlength=g)
            sums = np.bincount(codes[keep], weights=(weights * dice)[keep], minlength=g)
            with np.errstate(invalid="ignore", divide="ignore"):
                means = sums / total
            group_draws[a][r] = means
            present = total > 0
            if present.sum() >= 2:
                summary = summarize(float(sums.sum() / total.sum()), means[present])
                summary_draws[a][r] = [summary[c] for c in columns]

    _run(n_boot, one)
    tail = (1 - level) / 2 * 100
    with np.errstate(invalid="ignore"), _quiet():
        groups = [np.nanpercentile(d, [tail, 100 - tail], axis=0).T for d in group_draws]
        summaries = [np.nanpercentile(d, [tail, 100 - tail], axis=0).T for d in summary_draws]
    return groups, summaries, columns


def dice_permutation_pvalues(dice: np.ndarray, codes: np.ndarray, n_groups: int, observed: dict[str, float],
                             summarize: Callable, n_permutations: int, seed: np.uint64, attribute: int
                             ) -> dict[str, float]:
    """p-values of ``delta_dice`` and ``std_dice`` under group labels shuffled among the samples."""
    from .kernels import resampling

    columns = ("delta_dice", "std_dice")
    draws = np.full((n_permutations, len(columns)), np.nan)
    stream_seed = np.uint64((int(seed) + 0x9E3779B97F4A7C15 * (attribute + 1)) % 2**64)

    def one(p: int) -> None:
        shuffled = np.empty_like(codes)
        resampling.permuted_codes(codes, stream_seed, p, shuffled)
        keep = shuffled >= 0
        counts = np.bincount(shuffled[keep], minlength=n_groups)
        sums = np.bincount(shuffled[keep], weights=dice[keep], minlength=n_groups)
        present = counts > 0
        summary = summarize(float(dice[keep].mean()), sums[present] / counts[present])
        draws[p] = [summary[c] for c in columns]

    _run(n_permutations, one)
    out = {}
    for j, column in enumerate(columns):
        value = observed.get(column, np.nan)
        out[column] = np.nan if np.isnan(value) else float((1 + (draws[:, j] >= value - 1e-12).sum())
                                                           / (1 + n_permutations))
    return out
