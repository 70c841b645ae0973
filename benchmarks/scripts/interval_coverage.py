"""What the intervals and the tests do, measured (issue 41): the numbers docs/analytic-intervals.md and
the README quote.

1. DeLong coverage of a group's AUC, by true AUC (0.6-0.95) and group size (50-1,000 samples,
   prevalence 0.3: exactly 30% positives), N_COVERAGE groups each (one ``evaluate`` call per cell, a
   group per dataset: DeLong's interval of a group depends on that group's samples only).
2. Wilson coverage of a group's TPR at threshold 0.5, by true TPR (0.5-0.97) and number of positives
   (10-200), N_COVERAGE groups each.
3. The global null: 3 attributes of 2, 3 and 4 groups independent of everything, 1,000-3,000 samples,
   every option the default but ``n_permutations=N_PERMUTATIONS``; how many of N_NULL datasets have any
   gap called significant (Holm over the report's 18 gap tests), and how many have a raw p-value at
   most 0.05 (what ``p_adjust=None``, the default before issue 41, called significant).
4. Power: two groups of 2,000 samples with true AUCs 0.80 and 0.75 (a gap of 0.05), prevalence 0.3,
   the same options; how often the auc-gap is called significant (Holm) and how often its raw p-value
   is at most 0.05, of N_POWER datasets.
5. Case mix: two groups of 1,000 samples with prevalence 0.1 and 0.5 and the same scores given the
   label; how often each gap's permutation p-value (raw) is at most 0.05, of N_POWER datasets: the
   all-sample permutation tests of acc-gap, bce-gap and ece-gap react to the prevalence alone.

(Not named coverage.py: a file of that name in this folder would be imported as the coverage package
by numba in every script here.)

    python benchmarks/scripts/interval_coverage.py [N_COVERAGE] [N_NULL] [N_POWER] [N_PERMUTATIONS] [PARTS]

Defaults 2000 400 400 1000 12345 (PARTS: which of the five to run, e.g. 12).
"""
from __future__ import annotations

import math
import sys
import time
import warnings
from statistics import NormalDist

import numpy as np

import fairmedfm_fast as fm

PREVALENCE = 0.3
AUC_LEVELS = (0.6, 0.75, 0.85, 0.95)
GROUP_SIZES = (50, 100, 300, 1000)
TPR_LEVELS = (0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99)
POSITIVES = (10, 20, 50, 200)
GAPS = ("auc-gap", "acc-gap", "bce-gap", "ece-gap", "eo", "eod")


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _binormal(rng, positives: int, negatives: int, auc: float, groups: int):
    """``groups`` groups of exactly ``positives`` and ``negatives`` samples, binormal logits with unit
    variances and the positives shifted so that the AUC is ``auc``: scores, labels, group codes."""
    shift = math.sqrt(2) * NormalDist().inv_cdf(auc)
    size = positives + negatives
    y = np.tile(np.r_[np.ones(positives, np.int8), np.zeros(negatives, np.int8)], groups)
    logits = rng.normal(size=y.size) + shift * y
    return 1 / (1 + np.exp(-logits)), y, _names(groups)[np.repeat(np.arange(groups), size)]


def _names(groups: int) -> np.ndarray:
    """Group names (text: an attribute of more than 20 numbers would need bins)."""
    return np.array([f"g{i}" for i in range(groups)])


def delong_coverage(n_groups: int) -> None:
    print(f"\n1. DeLong 95% interval of a group's AUC: coverage by true AUC and group size "
          f"(prevalence {PREVALENCE}, {n_groups} groups a cell; misses above / below the truth)")
    print("| AUC | " + " | ".join(f"n = {n} ({round(PREVALENCE * n)} pos.)" for n in GROUP_SIZES) + " |")
    print("|---|" + "---|" * len(GROUP_SIZES))
    for auc in AUC_LEVELS:
        cells = []
        for size in GROUP_SIZES:
            rng = np.random.default_rng([41, round(1000 * auc), size])
            positives = round(PREVALENCE * size)
            scores, y, codes = _binormal(rng, positives, size - positives, auc, n_groups)
            report = _quiet(fm.evaluate, y, scores, {"g": codes}, interval="analytic", threshold=0.5)
            table = report.ci["analytic"]["by_group"].loc["g"]
            lo, hi = table["auc_lo"].to_numpy(), table["auc_hi"].to_numpy()
            defined = np.isfinite(lo) & np.isfinite(hi)
            below, above = int((hi[defined] < auc).sum()), int((lo[defined] > auc).sum())
            cells.append(f"{1 - (below + above) / defined.sum():.1%} ({above}/{below})")
        print(f"| {auc} | " + " | ".join(cells) + " |")


def wilson_coverage(n_groups: int) -> None:
    print(f"\n2. Wilson 95% interval of a group's TPR at threshold 0.5: coverage by true TPR and positives "
          f"({n_groups} groups a cell)")
    print("| TPR | " + " | ".join(f"{p} positives" for p in POSITIVES) + " |")
    print("|---|" + "---|" * len(POSITIVES))
    for tpr in TPR_LEVELS:
        cells = []
        for positives in POSITIVES:
            rng = np.random.default_rng([42, round(1000 * tpr), positives])
            negatives = max(positives, 10)
            y = np.tile(np.r_[np.ones(positives, np.int8), np.zeros(negatives, np.int8)], n_groups)
            # positives' logits N(mu, 1): P(score > 0.5) = P(logit > 0) = Phi(mu); negatives' N(-1, 1)
            logits = rng.normal(size=y.size) + np.where(y == 1, NormalDist().inv_cdf(tpr), -1.0)
            codes = _names(n_groups)[np.repeat(np.arange(n_groups), positives + negatives)]
            report = _quiet(fm.evaluate, y, 1 / (1 + np.exp(-logits)), {"g": codes}, interval="analytic",
                            threshold=0.5)
            table = report.ci["analytic"]["by_group"].loc["g"]
            covered = (table["tpr_lo"] <= tpr) & (tpr <= table["tpr_hi"])
            cells.append(f"{covered.mean():.1%}")
        print(f"| {tpr} | " + " | ".join(cells) + " |")


def _null_dataset(rng):
    n = int(rng.integers(1000, 3001))
    y = (rng.random(n) < PREVALENCE).astype(np.int8)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.5 * y)))
    attributes = {f"{g} groups": np.array([f"g{i}" for i in range(g)])[rng.integers(0, g, n)] for g in (2, 3, 4)}
    return y, scores, attributes


def global_null(n_datasets: int, n_permutations: int) -> None:
    start = time.perf_counter()
    adjusted = raw = 0
    per_test = []
    for k in range(n_datasets):
        y, scores, attributes = _null_dataset(np.random.default_rng([43, k]))
        report = _quiet(fm.evaluate, y, scores, attributes, n_permutations=n_permutations, random_state=k)
        gaps = report.gaps.drop(index="worst-auc", level="column")
        adjusted += bool(gaps["significant"].map(lambda value: value is True).any())
        raw += bool((gaps["p_value"] <= 0.05).any())
        per_test.append(float((gaps["p_value"] <= 0.05).mean()))
    print(f"\n3. Global null: 3 attributes of 2, 3 and 4 groups, 1,000-3,000 samples, defaults but "
          f"n_permutations={n_permutations}; {n_datasets} datasets ({time.perf_counter() - start:.0f} s)")
    print(f"   any gap called significant (holm, the default): {adjusted} / {n_datasets} = {adjusted / n_datasets:.1%}")
    print(f"   any raw p-value <= 0.05 (p_adjust=None):        {raw} / {n_datasets} = {raw / n_datasets:.1%}")
    print(f"   per gap test, raw p-value <= 0.05:              {np.mean(per_test):.1%}")


def _two_groups(rng, aucs, prevalences, n_per_group):
    shifts = [math.sqrt(2) * NormalDist().inv_cdf(auc) for auc in aucs]
    y = (rng.random(2 * n_per_group) < np.repeat(prevalences, n_per_group)).astype(np.int8)
    scores = 1 / (1 + np.exp(-(rng.normal(size=y.size) + np.repeat(shifts, n_per_group) * y)))
    return y, scores, np.repeat(np.array(["a", "b"]), n_per_group)


def power(n_datasets: int, n_permutations: int) -> None:
    start = time.perf_counter()
    adjusted = raw = 0
    for k in range(n_datasets):
        y, scores, groups = _two_groups(np.random.default_rng([44, k]), (0.80, 0.75), (PREVALENCE,) * 2, 2000)
        report = _quiet(fm.evaluate, y, scores, {"g": groups}, n_permutations=n_permutations, random_state=k)
        row = report.gaps.loc[("g", "auc-gap")]
        adjusted += row["significant"] is True
        raw += bool(row["p_value"] <= 0.05)
    print(f"\n4. Power: true auc-gap 0.05 (AUC 0.80 and 0.75), 2 x 2,000 samples, prevalence {PREVALENCE}, defaults "
          f"but n_permutations={n_permutations}; {n_datasets} datasets ({time.perf_counter() - start:.0f} s)")
    print(f"   auc-gap called significant (holm over 6 tests): {adjusted} / {n_datasets} = {adjusted / n_datasets:.1%}")
    print(f"   auc-gap raw p-value <= 0.05:                    {raw} / {n_datasets} = {raw / n_datasets:.1%}")


def case_mix(n_datasets: int) -> None:
    start = time.perf_counter()
    counts = dict.fromkeys(GAPS, 0)
    for k in range(n_datasets):
        y, scores, groups = _two_groups(np.random.default_rng([45, k]), (0.8, 0.8), (0.1, 0.5), 1000)
        report = _quiet(fm.evaluate, y, scores, {"g": groups}, n_permutations=199, random_state=k, p_adjust=None)
        for column in GAPS:
            counts[column] += bool(report.p_values.loc["g", column] <= 0.05)
    print(f"\n5. Case mix: prevalence 0.1 and 0.5, the same scores given the label (AUC 0.8), 2 x 1,000 samples, "
          f"n_permutations=199, raw p-values; {n_datasets} datasets ({time.perf_counter() - start:.0f} s)")
    print("   " + ", ".join(f"{column} {count} / {n_datasets}" for column, count in counts.items()))


def main(n_coverage: int = 2000, n_null: int = 400, n_power: int = 400, n_permutations: int = 1000,
         parts: str = "12345") -> None:
    print(f"fairmedfm_fast {fm.__version__}")
    if "1" in parts:
        delong_coverage(n_coverage)
    if "2" in parts:
        wilson_coverage(n_coverage)
    if "3" in parts:
        global_null(n_null, n_permutations)
    if "4" in parts:
        power(n_power, n_permutations)
    if "5" in parts:
        case_mix(n_power)


if __name__ == "__main__":
    numbers = [int(float(a)) for a in sys.argv[1:5]]
    main(*numbers, *sys.argv[5:6])
