"""How often compare_models' paired tests of "equal AUC gaps" reject, under nulls and under a true
difference, beside the (wrong) comparison of two models' separate bootstrap intervals.

    python benchmarks/scripts/compare_null.py                      # 400 datasets per scenario (long)
    python benchmarks/scripts/compare_null.py --datasets 100       # the closing note's run
    python benchmarks/scripts/compare_null.py --datasets 4 --n-boot 20   # seconds (the tests)

Scenarios, on 2 x ``--n`` samples in two groups (one attribute), two models scored on the same samples
with shared noise (the hard cases trip both). A score is ``s * y + shared + 0.7 * noise``, so a group's
AUC is ``Phi(s / sqrt(2 * 1.49))``; model A has ``s`` 1.6 in group A and 1.2 in group B (AUCs 0.823 and
0.757, a gap of 0.067), and model B's ``s`` are set from that formula:

- ``equal``: model B from the same recipe as A (independent noise of the same size): equal gaps, equal
  worst-group AUCs;
- ``equal gaps, unequal AUC``: model B's AUC 0.05 lower in both groups: the gaps are equal (the null
  of the gap test holds), the worst-group AUCs are not (a true difference of 0.05);
- ``worst AUC 0.05 lower``: model B's AUC 0.05 lower in group B only: worst-group AUC and AUC gap both
  differ by 0.05.

Each test at the 5% level, one test per dataset and column (``auc-gap`` and ``worst-auc``; no family to
adjust): the paired bootstrap (``n_boot``), the analytic DeLong test, and "separate intervals": each
model's own bootstrap interval (``evaluate(n_boot=...)``), called different when they do not overlap.
A rate is a false rejection where the column's null holds (``equal`` both columns, the gap of the
second), power elsewhere.
"""
from __future__ import annotations

import argparse
import math
import time
import warnings
from statistics import NormalDist

import numpy as np

SPREAD = math.sqrt(2 * 1.49)  # the sd of a positive's score minus a negative's, within a group
SIGNAL_A = {"A": 1.6, "B": 1.2}


def signal_for(auc: float) -> float:
    """The ``s`` that gives a group this AUC."""
    return SPREAD * NormalDist().inv_cdf(auc)


def auc_of(signal: float) -> float:
    return NormalDist().cdf(signal / SPREAD)


def dataset(kind: str, n: int, rng: np.random.Generator):
    y = rng.integers(0, 2, 2 * n)
    group = np.repeat(["A", "B"], n)
    shared = rng.normal(size=2 * n)
    lower = {"equal": {"A": 0.0, "B": 0.0}, "equal gaps, unequal AUC": {"A": 0.05, "B": 0.05},
             "worst AUC 0.05 lower": {"A": 0.0, "B": 0.05}}[kind]
    signal_b = {g: signal_for(auc_of(SIGNAL_A[g]) - lower[g]) for g in SIGNAL_A}
    a = np.where(group == "A", SIGNAL_A["A"], SIGNAL_A["B"]) * y + shared + 0.7 * rng.normal(size=2 * n)
    b = np.where(group == "A", signal_b["A"], signal_b["B"]) * y + shared + 0.7 * rng.normal(size=2 * n)
    return y, a, b, {"site": group}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=400)
    parser.add_argument("--n", type=int, default=2000, help="samples per group")
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import fairmedfm_fast as fm

    print(f"{args.datasets} datasets per scenario, 2 x {args.n} samples, n_boot={args.n_boot}, level 5%")
    print(f"{'scenario':24} {'column':10} {'paired bootstrap':>17} {'analytic (DeLong)':>18} "
          f"{'separate intervals':>19} {'mean difference':>16}")
    for kind in ("equal", "equal gaps, unequal AUC", "worst AUC 0.05 lower"):
        rng = np.random.default_rng(args.seed)
        columns = ("auc-gap", "worst-auc")
        rejected = {(c, t): 0 for c in columns for t in ("bootstrap", "analytic", "separate")}
        truth: dict[str, list[float]] = {c: [] for c in columns}
        start = time.perf_counter()
        for k in range(args.datasets):
            y, a, b, groups = dataset(kind, args.n, rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                comparison = fm.compare_models(y, {"B": b, "A": a}, groups, n_boot=args.n_boot, interval="analytic",
                                               p_adjust=None, random_state=k, progress=False)
                separate = [fm.evaluate(y, s, groups, n_boot=args.n_boot, random_state=k).ci["summary"]
                            for s in (a, b)]
            for column in columns:
                row = comparison.differences.loc[("B", "A", "site", column)]
                rejected[column, "bootstrap"] += row["p_bootstrap"] < 0.05
                rejected[column, "analytic"] += row["p_analytic"] < 0.05
                (low_a, high_a), (low_b, high_b) = ((frame.loc["site", f"{column}_lo"], frame.loc["site", f"{column}_hi"])
                                                    for frame in separate)
                rejected[column, "separate"] += high_a < low_b or high_b < low_a
                truth[column].append(row["difference"])
        for column in columns:
            rates = {t: rejected[column, t] / args.datasets for t in ("bootstrap", "analytic", "separate")}
            print(f"{kind:24} {column:10} {rates['bootstrap']:17.3f} {rates['analytic']:18.3f} "
                  f"{rates['separate']:19.3f} {np.mean(truth[column]):16.4f}", end="")
            print(f"   ({time.perf_counter() - start:.0f} s)" if column == columns[-1] else "")

if __name__ == "__main__":
    main()
