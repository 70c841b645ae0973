"""Issue 6 benchmark: 1,000 bootstrap resamples of evaluate (1M samples, 3 attributes) and fairlearn's
MetricFrame bootstrap on the same data (AUC per group, fewer resamples), side by side."""
import sys
import time
import warnings

import numpy as np
import pandas as pd
from fairlearn.metrics import MetricFrame
from sklearn.metrics import roc_auc_score

import fairmedfm_fast as fm

warnings.simplefilter("ignore")
n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
B = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
fl_boot = int(sys.argv[3]) if len(sys.argv) > 3 else 10
rng = np.random.default_rng(0)
y = (rng.random(n) < 0.3).astype(int)
s = np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1)
sf = pd.DataFrame({"sex": pd.Categorical(rng.choice(["F", "M"], n)), "age": rng.integers(0, 5, n), "race": rng.integers(0, 10, n)})
fm.evaluate(y[:100_000], s[:100_000], sf[:100_000], n_boot=3, random_state=0)  # warm the JIT
t = time.perf_counter()
fm.evaluate(y, s, sf, n_boot=B, random_state=0)
fast = time.perf_counter() - t
print(f"fairmedfm_fast evaluate, n={n:,}, 3 attributes, n_boot={B}: {fast:.1f} s ({fast / B * 1e3:.1f} ms per resample)")
t = time.perf_counter()
MetricFrame(metrics=roc_auc_score, y_true=y, y_pred=s, sensitive_features=sf, n_boot=fl_boot, ci_quantiles=[0.025, 0.975], random_state=0)
slow = time.perf_counter() - t
print(f"fairlearn MetricFrame(roc_auc_score, 3 attributes as one intersection), n_boot={fl_boot}: {slow:.1f} s ({slow / fl_boot * 1e3:.0f} ms per resample)")
print(f"per-resample ratio: {slow / fl_boot / (fast / B):.0f}x (fairlearn computes AUC only; fairmedfm_fast every metric)")
