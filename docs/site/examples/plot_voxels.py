"""
A voxel audit of score maps
===========================

``fm.evaluate_voxels`` gives the report of ``fm.evaluate`` over every voxel of a set of score maps
(anomaly maps, probabilistic segmentations), with the groups given per image, exactly and in
bounded memory. Its report keeps no per-voxel scores, so it draws the pictures made from its
tables: here each group's voxel-level metrics as bars.
"""

import numpy as np

import fairmedfm_fast as fm

rng = np.random.default_rng(0)
n_images = 8
sex = ["F", "M"] * (n_images // 2)
masks = rng.random((n_images, 40, 40)) < 0.15  # ground truth per image
contrast = np.where(np.array(sex) == "M", 0.45, 0.3)[:, None, None]  # maps of one group are weaker
maps = ((1 - contrast) * rng.random(masks.shape) + contrast * masks).astype(np.float32)

report = fm.evaluate_voxels(maps, masks, {"sex": sex}, max_memory="256MB")
print(report.by_group[["n", "auc", "ece"]])

# %%

figure = report.plot("bars")
