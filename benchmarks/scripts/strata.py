"""Issue 13 benchmark: bootstrap resamples stratified per attribute (each attribute its own resamples,
the default) against the joint strata of every attribute's groups (the earlier design, re-created
here from the same kernels), and against plain resampling (stratify=None), side by side in one
process on the same data.

Usage: python benchmarks/scripts/strata.py [N] [N_BOOT] [REPEATS] [all]
(default 1M samples, 1000 resamples, one run each; "all" adds stratify=None). Wall time and CPU
time (all threads) are printed: on a shared machine the CPU time is the steadier comparison.
"""
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fairmedfm_fast as fm
from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._engine import resample as _resample

warnings.simplefilter("ignore")


def joint_bootstrap(arranged, names, valid_groups, summarize, n_boot, level, seed, fixed_best,
                    stratify="attribute", progress=None, keep=None, extra=()):
    """The bootstrap of commit ede1f04: one resample for all attributes, stratified by the combination
    of their groups, weights over the whole sorted order. It keeps no replicates for ``pairwise()``
    (``keep``) and knows fairmedfm's metrics only (``extra`` must be empty)."""
    assert not extra, "the joint-strata baseline covers fairmedfm's metrics only"
    from fairmedfm_fast.kernels import resampling

    n_attributes = len(names)
    codes = arranged.codes[:n_attributes]
    key = np.zeros(codes.shape[1], np.int64)
    for row in codes:
        shifted = row.astype(np.int64) + 1
        key = key * (int(shifted.max(initial=0)) + 1) + shifted
        _, key = np.unique(key, return_inverse=True)
    members = np.argsort(key, kind="stable").astype(np.intp)
    starts = np.concatenate(([0], np.cumsum(np.bincount(key)))).astype(np.intp)
    keys = [*_resample.INTERVAL_METRICS, *(name + _engine.BEST for name in _resample.INTERVAL_METRICS)]
    sizes = arranged.sizes[:n_attributes]
    group_draws = [np.full((n_boot, int(g), len(keys)), np.nan) for g in sizes]
    columns = list(summarize({k: 0.0 for k in _engine.all_keys()}, {k: [0.0] for k in _engine.all_keys()}))
    summary_draws = [np.full((n_boot, len(columns)), np.nan) for _ in sizes]

    def one(r):
        weights = np.empty(len(arranged.scores))
        resampling.stratified_bootstrap_counts(members, starts, seed, r, weights)
        groupings = _engine.measure(arranged, None, fixed_best=fixed_best, weights=weights, sample_counts=False,
                                    parallel=False)
        for a in range(n_attributes):
            grouping, g = groupings[a], int(sizes[a])
            for j, k in enumerate(keys):
                group_draws[a][r, :, j] = grouping.values[k][:g]
            valid = [i for i in valid_groups[a] if grouping.positives[i] > 0 and grouping.negatives[i] > 0]
            if len(valid) < 2:
                continue
            overall = {k: float(v[g]) for k, v in grouping.values.items()}
            per_metric = {k: [float(v[i]) for i in valid] for k, v in grouping.values.items()}
            summary = summarize(overall, per_metric)
            summary_draws[a][r] = [summary[c] for c in columns]

    _resample._run(n_boot, one)
    by_group = [_resample._percentiles(d, level) for d in group_draws]
    summaries = [_resample._percentiles(d, level) for d in summary_draws]
    return by_group, summaries, columns, [np.zeros(int(g), int) for g in sizes]


def main():
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    n_boot = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1)
    sf = pd.DataFrame({"race": rng.choice(list("ABCDE"), n, p=[0.4, 0.3, 0.2, 0.09, 0.01]),
                       "sex": rng.choice(["F", "M"], n), "age": rng.choice(["<40", "40-60", ">=60", "?"], n)})
    per_attribute = _resample.bootstrap
    variants = {"joint strata (before)": joint_bootstrap, "per-attribute strata": per_attribute}
    if len(sys.argv) > 4 and sys.argv[4] == "all":
        variants["stratify=None"] = per_attribute
    small = slice(0, 50_000)
    for name, function in variants.items():  # warm the JIT of every path
        _resample.bootstrap = function
        fm.evaluate(y[small], s[small], sf[small], n_boot=2, random_state=0,
                    stratify=None if name == "stratify=None" else "attribute")
    best = {name: np.inf for name in variants}
    cpu = {name: np.inf for name in variants}
    for _ in range(repeats):
        for name, function in variants.items():  # interleaved, so load changes hit every variant alike
            _resample.bootstrap = function
            start, start_cpu = time.perf_counter(), time.process_time()
            fm.evaluate(y, s, sf, n_boot=n_boot, random_state=0, progress=False,
                        stratify=None if name == "stratify=None" else "attribute")
            best[name] = min(best[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    _resample.bootstrap = per_attribute
    print(f"evaluate, {n:,} samples, 3 attributes (5, 2, 4 groups), n_boot={n_boot}, best of {repeats}:")
    base, base_cpu = best["joint strata (before)"], cpu["joint strata (before)"]
    for name, seconds in best.items():
        print(f"  {name:24s} wall {seconds:8.2f} s ({seconds / n_boot * 1e3:6.1f} ms per resample, "
              f"{seconds / base:.2f}x joint)   CPU {cpu[name]:8.2f} s ({cpu[name] / base_cpu:.2f}x joint)")
    from fairmedfm_fast._util.threads import resolve_n_jobs

    print(f"  threads: {resolve_n_jobs()}")


if __name__ == "__main__":
    main()
