"""Issue 17 benchmark: T tasks x n samples x 3 text attributes through evaluate_tasks, beside T separate
evaluate calls and (one task, times T) fairmedfm 0.4.2, side by side in one process.

    python benchmarks/scripts/tasks_vs_separate.py [n_samples=1e6] [n_tasks=14] [repeats=3] [--oracle]
"""
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fairmedfm_fast as fm

warnings.simplefilter("ignore")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
n = int(float(args[0])) if args else 1_000_000
T = int(args[1]) if len(args) > 1 else 14
repeats = int(args[2]) if len(args) > 2 else 3
rng = np.random.default_rng(0)
labels = pd.DataFrame({f"y{t}": (rng.random(n) < 0.1 + 0.02 * t).astype(np.int8) for t in range(T)})
scores = pd.DataFrame({f"y{t}": np.clip(0.5 * rng.random(n) + 0.4 * labels[f"y{t}"] * rng.random(n), 0, 1)
                       for t in range(T)})
groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": rng.choice(list("ABCDE"), n),
                       "site": rng.choice([f"site{i:02d}" for i in range(30)], n)})


def separate():
    return [fm.evaluate(labels[c], scores[c], groups) for c in labels]


def together():
    return fm.evaluate_tasks(labels, scores, groups)


fm.evaluate_tasks(labels.iloc[:50_000, :2], scores.iloc[:50_000, :2], groups.iloc[:50_000])  # warm the JIT
best = {"evaluate_tasks": np.inf, "separate evaluate calls": np.inf}
for _ in range(repeats):  # interleaved, best of each
    for name, function in (("evaluate_tasks", together), ("separate evaluate calls", separate)):
        start = time.perf_counter()
        function()
        best[name] = min(best[name], time.perf_counter() - start)
for name, seconds in best.items():
    print(f"{name}: {T} tasks x {n:,} samples x 3 attributes: {seconds:.2f} s (best of {repeats})")
print(f"ratio: {best['separate evaluate calls'] / best['evaluate_tasks']:.2f}x faster in one call")
if "--oracle" in sys.argv:
    import fairmedfm

    start = time.perf_counter()
    fairmedfm.evaluate(labels["y0"], scores["y0"], groups)
    one = time.perf_counter() - start
    print(f"fairmedfm 0.4.2 evaluate, one task: {one:.1f} s; times {T}: {one * T:.0f} s (extrapolated); "
          f"{one * T / best['evaluate_tasks']:.0f}x evaluate_tasks")
