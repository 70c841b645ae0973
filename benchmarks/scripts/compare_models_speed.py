"""compare_models without resampling beside one evaluate and evaluate_tasks on the same models, side by
side in one process (issue 43: at most 15x one evaluate, no slower than evaluate_tasks).

    python benchmarks/scripts/compare_models_speed.py [n_samples=1e6] [n_models=20] [repeats=3] [--boot=N_BOOT]

M models on one label, 3 categorical attributes (2, 5 and 4 groups); best of ``repeats`` wall times.
With ``--boot=200``, also (once each) ``compare_models(n_boot=200)``, the paired bootstrap, beside M
separate ``evaluate(n_boot=200)`` calls, one per model (the issue's second figure). Beside them, NumPy's
SIMD level and two floors for the M models: ``np.sort`` of each model's scores, and a streaming pass
(``benchmarks/benchmarks/_baselines.streaming_pass``: one Numba loop over each model's scores, the
labels and the group codes), which favours no CPU's vector extensions.
"""
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fairmedfm_fast as fm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # benchmarks/: the suite's helpers
from benchmarks import _baselines  # noqa: E402

warnings.simplefilter("ignore")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
n_boot = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--boot=")), 0)
n = int(float(args[0])) if args else 1_000_000
M = int(args[1]) if len(args) > 1 else 20
repeats = int(args[2]) if len(args) > 2 else 3
rng = np.random.default_rng(0)
y = (rng.random(n) < 0.3).astype(np.int8)
scores = pd.DataFrame({f"m{k:02d}": np.clip(0.6 * rng.random(n) + (0.2 + 0.01 * k) * y, 0, 1) for k in range(M)})
groups = pd.DataFrame({"sex": pd.Categorical(rng.choice(["F", "M"], n)),
                       "race": pd.Categorical(rng.choice(list("ABCDE"), n)),
                       "site": pd.Categorical(rng.choice(["s1", "s2", "s3", "s4"], n))})


def best(function):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


one = best(lambda: fm.evaluate(y, scores.iloc[:, 0], groups))
cpu_start = time.process_time()
for _ in range(repeats):
    fm.evaluate(y, scores.iloc[:, 0], groups)
one_cpu = (time.process_time() - cpu_start) / repeats  # all threads: a single evaluate uses more than one core
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
tasks = best(lambda: fm.evaluate_tasks(y, scores, groups))
compared = best(lambda: fm.compare_models(y, scores, groups))
codes = np.vstack([groups[name].cat.codes.to_numpy() for name in groups]).astype(np.int8)
n_groups = np.array([len(groups[name].cat.categories) for name in groups], np.int64)
columns = [scores[name].to_numpy() for name in scores]
labels = y.astype(np.int64)
_baselines.streaming_pass(columns[0], labels, codes, n_groups)  # compiled before it is timed
sort_floor = best(lambda: [_baselines.sort_scores(column) for column in columns])
stream_floor = best(lambda: [_baselines.streaming_pass(column, labels, codes, n_groups) for column in columns])
print(f"{n:,} samples, {M} models, 3 categorical attributes; best of {repeats}; NumPy SIMD {_baselines.simd_level()}")
print(f"floors for the {M} models: np.sort of each model's scores {sort_floor * 1e3:.1f} ms, a streaming pass "
      f"{stream_floor * 1e3:.1f} ms")
print(f"one evaluate          {one * 1e3:9.1f} ms   (CPU {one_cpu * 1e3:.1f} ms: {one_cpu / one:.1f} of the {cores} cores "
      f"busy; {M} models' CPU spread over {cores} cores would be {M * one_cpu / cores / one:.1f}x its wall time)")
print(f"evaluate_tasks        {tasks * 1e3:9.1f} ms   {tasks / one:5.1f}x one evaluate")
print(f"compare_models        {compared * 1e3:9.1f} ms   {compared / one:5.1f}x one evaluate, "
      f"{compared / tasks:.2f}x evaluate_tasks")

if n_boot:  # both warmed on a slice first (the resampling kernels' first compile is not timed)
    fm.compare_models(y[:2000], scores.iloc[:2000], groups.iloc[:2000], n_boot=2, progress=False)
    fm.evaluate(y[:2000], scores.iloc[:2000, 0], groups.iloc[:2000], n_boot=2, progress=False)
    start = time.perf_counter()
    fm.compare_models(y, scores, groups, n_boot=n_boot, random_state=0, progress=False)
    paired = time.perf_counter() - start
    start = time.perf_counter()
    for name in scores:
        fm.evaluate(y, scores[name], groups, n_boot=n_boot, random_state=0, progress=False)
    separate = time.perf_counter() - start
    print(f"compare_models(n_boot={n_boot})      {paired:8.1f} s   (paired: one draw of the samples per replicate)")
    print(f"{M} x evaluate(n_boot={n_boot})   {separate:8.1f} s   {paired / separate:.2f}x of this")
