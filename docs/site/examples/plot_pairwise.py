"""
Every pair of groups: the pairwise heat map
===========================================

``report.pairwise("auc")`` gives the difference of the AUC between every pair of groups, with
intervals and p-values when the report has them (bootstrap and permutation with ``n_boot=`` and
``n_permutations=``; DeLong's here, with ``interval="analytic"``); ``report.plot("pairwise")`` draws
it as a heat map. A star marks p < 0.05, bold type an interval that excludes 0.
"""

import numpy as np

import fairmedfm_fast as fm

rng = np.random.default_rng(3)
n = 2000
race = rng.choice(["A", "B", "C", "D"], n)
y_true = rng.integers(0, 2, n)
strength = np.select([race == "A", race == "D"], [0.39, 0.31], 0.35)
y_score = np.clip(strength * y_true + (1 - strength) * rng.random(n), 0, 1)

report = fm.evaluate(y_true, y_score, {"race": race}, interval="analytic")
pairs = report.pairwise("auc").loc["race"]
columns = ["difference", "difference_se", "p_value_analytic"]
print(pairs.loc[[("A", "B"), ("A", "D"), ("B", "D")], columns].round(4))

# %%

figure = report.plot("pairwise", metric="auc")
