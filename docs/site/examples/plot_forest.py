"""
Forest plot: each group's metrics with intervals
================================================

With intervals in the report (``interval="analytic"`` here: DeLong and Wilson, no resampling;
``n_boot=`` gives bootstrap ones), ``report.plot("forest")`` draws each group's value and interval,
one panel per metric. Hollow points mark small groups (fewer than 10 positives or negatives).
"""

import numpy as np

import fairmedfm_fast as fm

rng = np.random.default_rng(7)
n = 3000
site = rng.choice(["A", "B", "C", "D"], n, p=[0.4, 0.3, 0.25, 0.05])
y_true = (rng.random(n) < 0.3).astype(int)
signal = np.where(site == "C", 0.9, 1.5)  # site C separates the classes less well
y_score = 1 / (1 + np.exp(-(rng.standard_normal(n) + signal * y_true - 1)))

report = fm.evaluate(y_true, y_score, {"site": site}, interval="analytic")
print(report.ci["analytic"]["by_group"][["auc_lo", "auc_hi"]].round(3))

# %%

figure = report.plot("forest")
