"""Power of the auc-gap test and of its simultaneous interval (issue 32's closing note).

Two groups of N_PER_GROUP samples each (prevalence 0.3), binormal scores (unit variances, the
positives shifted) with true AUCs 0.80 and 0.75: a true gap of 0.05. Over N_DATASETS seeded
datasets it counts how often ``report.gaps`` calls the auc-gap significant (within-class permutation
p < 0.05, ``n_permutations=N_RESAMPLES``) and how often its simultaneous interval excludes 0
(``n_boot=N_RESAMPLES``); then the same with ``interval="analytic"`` (DeLong), whose test is the
pairwise ``p_value_analytic`` of the two groups.

    python benchmarks/scripts/gap_power.py [N_DATASETS] [N_PER_GROUP] [N_RESAMPLES]
"""
from __future__ import annotations

import math
import sys
import time
import warnings
from statistics import NormalDist

import numpy as np

import fairmedfm_fast as fm

AUCS = (0.80, 0.75)
PREVALENCE = 0.3


def dataset(rng: np.random.Generator, n_per_group: int):
    """Binormal scores: with unit variances, AUC = Phi(shift / sqrt(2))."""
    shifts = [math.sqrt(2) * NormalDist().inv_cdf(auc) for auc in AUCS]
    y = (rng.random(2 * n_per_group) < PREVALENCE).astype(np.int8)
    shift = np.repeat(shifts, n_per_group)
    scores = 1 / (1 + np.exp(-(rng.normal(size=y.size) + shift * y)))
    groups = np.repeat(np.array(["a", "b"]), n_per_group)
    return y, scores, groups


def main(n_datasets: int = 100, n_per_group: int = 2000, n_resamples: int = 200) -> None:
    counts = {"permutation p < 0.05": 0, "bootstrap interval excludes 0": 0,
              "analytic p < 0.05": 0, "analytic interval excludes 0": 0}
    gaps = []
    start = time.perf_counter()
    for k in range(n_datasets):
        y, scores, groups = dataset(np.random.default_rng(k), n_per_group)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            resampled = fm.evaluate(y, scores, {"g": groups}, n_boot=n_resamples, n_permutations=n_resamples,
                                    random_state=k)
            analytic = fm.evaluate(y, scores, {"g": groups}, interval="analytic")
        row = resampled.gaps.loc[("g", "auc-gap")]
        gaps.append(row["value"])
        counts["permutation p < 0.05"] += bool(row["p_value"] < 0.05)
        counts["bootstrap interval excludes 0"] += bool(row["lo"] > 0)
        counts["analytic interval excludes 0"] += bool(analytic.gaps.loc[("g", "auc-gap"), "lo"] > 0)
        counts["analytic p < 0.05"] += bool(analytic.pairwise("auc").loc[("g", "a", "b"), "p_value_analytic"] < 0.05)
    print(f"true auc-gap {AUCS[0] - AUCS[1]:.2f}, 2 groups x {n_per_group} samples, prevalence {PREVALENCE}, "
          f"{n_datasets} datasets, n_boot = n_permutations = {n_resamples} "
          f"({time.perf_counter() - start:.0f} s)")
    print(f"observed auc-gap: mean {np.mean(gaps):.4f}, sd {np.std(gaps, ddof=1) if len(gaps) > 1 else 0:.4f}")
    for name, count in counts.items():
        print(f"{name:32s} {count:4d} / {n_datasets} = {count / n_datasets:.2f}")


if __name__ == "__main__":
    main(*(int(float(a)) for a in sys.argv[1:4]))
