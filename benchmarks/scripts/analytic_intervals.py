"""Issue 30 benchmark: ``evaluate(..., interval="analytic")`` beside plain ``evaluate`` (the extra cost of
DeLong, Wilson and the gap intervals) and beside ``evaluate(..., n_boot=N_BOOT)`` (the bootstrap
intervals it can replace), side by side in one process on the same data: 3 attributes (2, 5 and 10
groups). Interleaved, best of the repeats; the bootstrap runs once and is scaled to 1,000 resamples
when N_BOOT is smaller (its cost is linear in the resamples past the first sort: the printout says
so).

Usage: python benchmarks/scripts/analytic_intervals.py [N] [REPEATS] [N_BOOT]
(default 1M samples, 5 repeats, 50 resamples; 0 resamples leaves the bootstrap out).
"""
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fairmedfm_fast as fm

warnings.simplefilter("ignore")


def main():
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    n_boot = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1)
    sf = pd.DataFrame({"sex": pd.Categorical(rng.choice(["F", "M"], n)), "age": rng.integers(0, 5, n),
                       "site": rng.integers(0, 10, n)})
    small = slice(0, min(n, 50_000))
    for interval in (None, "analytic"):  # warm the JIT
        fm.evaluate(y[small], s[small], sf[small], interval=interval, n_boot=2, random_state=0)
    calls = {"evaluate": lambda: fm.evaluate(y, s, sf),
             'evaluate(interval="analytic")': lambda: fm.evaluate(y, s, sf, interval="analytic")}
    best = {name: np.inf for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            report = call()
            report.summary, report.by_group  # noqa: B018 - the frames are made on first read
            best[name] = min(best[name], time.perf_counter() - start)
    plain, analytic = best.values()
    print(f"{n:,} samples x 3 attributes (2, 5, 10 groups), best of {repeats}")
    print(f"  evaluate                        {plain * 1e3:9.1f} ms")
    print(f'  evaluate(interval="analytic")   {analytic * 1e3:9.1f} ms   {analytic / plain:.2f}x evaluate')
    if n_boot:  # N_BOOT=0 leaves the bootstrap out
        start = time.perf_counter()
        fm.evaluate(y, s, sf, n_boot=n_boot, random_state=0, progress=False)
        boot = time.perf_counter() - start
        boot_1000 = plain + 1000 * max(boot - plain, 0.0) / n_boot
        scaled = f" (scaled from n_boot={n_boot})" if n_boot != 1000 else ""
        print(f"  evaluate(n_boot={n_boot})             {boot * 1e3:9.1f} ms   (one run)")
        print(f"  evaluate(n_boot=1000){scaled}: {boot_1000:.2f} s = {boot_1000 / analytic:.0f}x the analytic "
              "intervals")


if __name__ == "__main__":
    main()
