"""
Reliability diagrams per group
==============================

``report.plot("reliability")`` draws each group's reliability diagram over its own 10 ECE bins:
the mean score against the fraction of positives in each non-empty bin. Here the model is
over-confident for one site.
"""

import numpy as np

import fairmedfm_fast as fm

rng = np.random.default_rng(1)
n = 3000
site = rng.choice(["A", "B", "C"], n)
risk = rng.beta(2, 5, n)
y_true = (rng.random(n) < risk).astype(int)
# sites A and B report the risk itself; site C pushes it towards 0 and 1
y_score = np.where(site == "C", 1 / (1 + np.exp(-3 * np.log(risk / (1 - risk)))), risk)

report = fm.evaluate(y_true, y_score, {"site": site})
print(report.by_group[["n", "ece", "bce"]])

# %%

figure = report.plot("reliability")
