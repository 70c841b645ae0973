"""
ROC curves per group
====================

``fm.evaluate`` scores a model for each sensitive attribute; ``report.plot("roc")`` draws each
group's ROC curve with its operating point at the attribute's best-F1 threshold (dashed: all
samples). Here the model is worse for patients of 60 and older.
"""

import numpy as np

import fairmedfm_fast as fm

rng = np.random.default_rng(0)
n = 4000
sex, age = rng.choice(["F", "M"], n), rng.integers(20, 90, n)
y_true = (rng.random(n) < 0.3).astype(int)
noise = np.where(age >= 60, 0.28, 0.2)  # a model that is worse for older patients
y_score = np.clip(rng.normal(0.3 + 0.3 * y_true, noise), 0, 1)

report = fm.evaluate(y_true, y_score, {"sex": sex, "age": age}, bins={"age": [40, 60]})
print(report.summary[["overall-auc", "worst-auc", "auc-gap", "eod"]])

# %%
# The curves are each group's exact ROC curve (below 1,000 samples per group; above, up to 1,000
# of its points), the AUC in the legend is the report's.

figure = report.plot("roc")
