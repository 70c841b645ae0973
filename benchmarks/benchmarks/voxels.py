"""Voxel family: ``evaluate_voxels`` on stacks of 128x128 float32 score maps with three attributes per image,
beside ``evaluate`` on the same voxels flattened (one sample per voxel, attributes repeated per voxel).

Tiny sizes: the 10^9-voxel measurement is ``benchmarks/scripts/voxels_billion.py``.
"""
import warnings

import numpy as np

from . import _data

EDGE = 128


def maps(n_maps: int, seed: int = 0):
    import pandas as pd

    edge = EDGE if _data.LIMITS["edge"] is None else min(EDGE, _data.LIMITS["edge"])
    rng = np.random.default_rng(seed)
    truth = rng.random((n_maps, edge, edge)) < 0.25
    scores = (0.7 * rng.random((n_maps, edge, edge)) + 0.3 * truth).astype(np.float32)
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n_maps), "age": rng.choice(["<40", "40-60", ">=60"], n_maps),
                           "site": rng.choice(list("abcde"), n_maps)})
    return scores, truth, groups


class Voxels:
    """``evaluate_voxels`` ("fast", in one window or in many with a small ``max_memory``) and
    ``evaluate`` on the flattened voxels ("flat")."""

    params = ([16, 64], ["fast", "windows", "flat"])
    param_names = ["n_maps", "implementation"]

    def setup(self, n_maps, implementation):
        import fairmedfm_fast as fm

        self.scores, self.truth, self.groups = maps(n_maps)
        if implementation == "flat":
            rows = np.repeat(np.arange(n_maps), self.scores[0].size)
            flat_groups = self.groups.iloc[rows].reset_index(drop=True)
            labels, values = self.truth.reshape(-1), self.scores.reshape(-1)
            self.run = lambda: fm.evaluate(labels, values, flat_groups)
        else:
            budget = "1MB" if implementation == "windows" else None
            self.run = lambda: fm.evaluate_voxels(self.scores, self.truth, self.groups, max_memory=budget)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.run()  # compiles or loads the kernels

    def time_evaluate(self, n_maps, implementation):
        self.run()

    def peakmem_evaluate(self, n_maps, implementation):
        self.run()
