"""
A segmentation audit: Dice per group
====================================

``fm.evaluate_segmentation`` takes masks (arrays, tensors, a stacked array or file paths) or
per-sample Dice scores, and reports each group's mean Dice, the gap, the skewness and the
equity-scaled Dice. ``report.plot("dice")`` draws each group's distribution of per-sample Dice.
"""

import numpy as np

import fairmedfm_fast as fm

rng = np.random.default_rng(0)
n = 60
sex = rng.choice(["F", "M"], n)
age = rng.integers(20, 90, n)
true_masks = rng.random((n, 24, 24, 8)) < 0.2
# a model that gets more voxels wrong for older patients
error = np.where(age >= 60, 0.08, 0.04)[:, None, None, None]
pred_masks = true_masks ^ (rng.random(true_masks.shape) < error)

report = fm.evaluate_segmentation({"sex": sex, "age": age}, pred_masks=pred_masks, true_masks=true_masks,
                                  bins={"age": [40, 60]})
print(report.summary[["mean_dice", "delta_dice", "skewness_dice", "es_dice"]].round(4))

# %%

figure = report.plot("dice")
