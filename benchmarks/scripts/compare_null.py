"""How often compare_models' paired tests of "equal AUC gaps" reject, under nulls and under a true
difference, beside the (wrong) comparison of two models' separate bootstrap intervals.

    python benchmarks/scripts/compare_null.py                      # 400 datasets per scenario (long)
    python benchmarks/scripts/compare_null.py --datasets 100       # the closing note's run
    python benchmarks/scripts/compare_null.py --datasets 4 --n-boot 20   # seconds (the tests)

Scenarios, on 2 x ``--n`` samples in two groups (one attribute), two models scored on the same samples
with shared noise (the hard cases trip both):

- ``equal``: both models from the same recipe (independent noise of the same size): equal gaps;
- ``equal gaps, unequal AUC``: model B's signal weaker by the same factor in both groups: the gaps
  are equal, the overall AUCs are not;
- ``gap 0.05``: model B's signal weaker in one group only, by what makes its AUC gap about 0.05 larger.

Each test at the 5% level, one test per dataset (the auc-gap difference; no family to adjust):
the paired bootstrap (``n_boot``), the analytic DeLong test, and "separate intervals": each model's own
bootstrap interval of its gap (``evaluate(n_boot=...)``), called different when they do not overlap.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def dataset(kind: str, n: int, rng: np.random.Generator):
    y = rng.integers(0, 2, 2 * n)
    group = np.repeat(["A", "B"], n)
    shared = rng.normal(size=2 * n)
    signal_a = np.where(group == "A", 1.6, 1.2)  # model A has a gap of its own
    if kind == "equal":
        signal_b = signal_a
    elif kind == "equal gaps, unequal AUC":
        signal_b = signal_a * 0.75
    else:  # model B's gap larger: weaker in group B only
        signal_b = np.where(group == "A", 1.6, 0.95)
    a = signal_a * y + shared + 0.7 * rng.normal(size=2 * n)
    b = signal_b * y + shared + 0.7 * rng.normal(size=2 * n)
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
    print(f"{'scenario':26} {'paired bootstrap':>17} {'analytic (DeLong)':>18} {'separate intervals':>19} "
          f"{'true gap difference':>20}")
    for kind in ("equal", "equal gaps, unequal AUC", "gap 0.05"):
        rng = np.random.default_rng(args.seed)
        rejected = {"bootstrap": 0, "analytic": 0, "separate": 0}
        truth = []
        start = time.perf_counter()
        for k in range(args.datasets):
            y, a, b, groups = dataset(kind, args.n, rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                comparison = fm.compare_models(y, {"B": b, "A": a}, groups, n_boot=args.n_boot, interval="analytic",
                                               p_adjust=None, random_state=k, progress=False)
                row = comparison.differences.loc[("B", "A", "site", "auc-gap")]
                rejected["bootstrap"] += row["p_bootstrap"] < 0.05
                rejected["analytic"] += row["p_analytic"] < 0.05
                separate = [fm.evaluate(y, s, groups, n_boot=args.n_boot, random_state=k).ci["summary"]
                            for s in (a, b)]
            (low_a, high_a), (low_b, high_b) = ((frame.loc["site", "auc-gap_lo"],
                                                 frame.loc["site", "auc-gap_hi"]) for frame in separate)
            rejected["separate"] += high_a < low_b or high_b < low_a
            truth.append(row["difference"])
        rates = {key: value / args.datasets for key, value in rejected.items()}
        print(f"{kind:26} {rates['bootstrap']:17.3f} {rates['analytic']:18.3f} {rates['separate']:19.3f} "
              f"{np.mean(truth):20.4f}   ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
