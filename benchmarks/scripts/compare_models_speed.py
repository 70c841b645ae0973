"""compare_models without resampling beside one evaluate and evaluate_tasks on the same models, side by
side in one process (issue 43: at most 15x one evaluate, no slower than evaluate_tasks).

    python benchmarks/scripts/compare_models_speed.py [n_samples=1e6] [n_models=20] [repeats=3]

M models on one label, 3 categorical attributes (2, 5 and 4 groups); best of ``repeats`` wall times.
"""
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fairmedfm_fast as fm

warnings.simplefilter("ignore")
n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
M = int(sys.argv[2]) if len(sys.argv) > 2 else 20
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
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
tasks = best(lambda: fm.evaluate_tasks(y, scores, groups))
compared = best(lambda: fm.compare_models(y, scores, groups))
print(f"{n:,} samples, {M} models, 3 categorical attributes; best of {repeats}")
print(f"one evaluate          {one * 1e3:9.1f} ms")
print(f"evaluate_tasks        {tasks * 1e3:9.1f} ms   {tasks / one:5.1f}x one evaluate")
print(f"compare_models        {compared * 1e3:9.1f} ms   {compared / one:5.1f}x one evaluate, "
      f"{compared / tasks:.2f}x evaluate_tasks")
