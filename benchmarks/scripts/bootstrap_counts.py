"""Issue 12 benchmark: 1,000 bootstrap resamples of ``evaluate`` on 1M samples with three attributes,
each resample measured from its draw counts over the whole sorted arrangement
(``kernels.bootstrap.stratified_resample``, the default now) beside the drawn samples written out and
measured by the engine (the path before), side by side in one process on the same data. Both give
the same intervals, bit for bit; the script checks it.

Usage: python benchmarks/scripts/bootstrap_counts.py [N] [N_BOOT] [REPEATS]
(default 1M samples, 1000 resamples, one run each). Wall time and CPU time (all threads) are
printed, best of the repeats, interleaved: on a shared machine the CPU time is the steadier one.
"""
import sys
import time
import warnings

import numpy as np
import pandas as pd

import fairmedfm_fast as fm
from fairmedfm_fast._engine import resample as _resample

warnings.simplefilter("ignore")


def main():
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    n_boot = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = np.random.default_rng(0)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1)
    sf = pd.DataFrame({"sex": pd.Categorical(rng.choice(["F", "M"], n)), "age": rng.integers(0, 5, n),
                       "race": rng.integers(0, 10, n)})
    counts_path = _resample._Tallied.applies
    variants = {"drawn samples copied out (before)": staticmethod(lambda *args: False),
                "draw counts, nothing copied": counts_path}
    small = slice(0, min(n, 50_000))
    for path in variants.values():  # warm the JIT of both paths
        _resample._Tallied.applies = path
        fm.evaluate(y[small], s[small], sf[small], n_boot=2, random_state=0)
    best = {name: np.inf for name in variants}
    cpu = {name: np.inf for name in variants}
    intervals = {}
    for _ in range(repeats):
        for name, path in variants.items():  # interleaved, so load changes hit both alike
            _resample._Tallied.applies = path
            start, start_cpu = time.perf_counter(), time.process_time()
            report = fm.evaluate(y, s, sf, n_boot=n_boot, random_state=0, progress=False)
            best[name] = min(best[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
            intervals[name] = report.ci
    _resample._Tallied.applies = counts_path
    from fairmedfm_fast._util.threads import resolve_n_jobs

    before, after = intervals.values()
    same = all(before[key].equals(after[key]) for key in ("summary", "by_group"))
    print(f"evaluate, {n:,} samples, 3 attributes (2, 5, 10 groups), n_boot={n_boot}, best of {repeats}, "
          f"{resolve_n_jobs()} threads, NumPy SIMD: {_simd_level()}:")
    base, base_cpu = best["drawn samples copied out (before)"], cpu["drawn samples copied out (before)"]
    for name, seconds in best.items():
        print(f"  {name:34s} wall {seconds:8.2f} s ({seconds / base:.2f}x)   CPU {cpu[name]:8.2f} s "
              f"({cpu[name] / base_cpu:.2f}x, {cpu[name] / (3 * n_boot) * 1e3:.1f} ms per attribute-resample)")
    print(f"  identical intervals: {same}")


def _simd_level() -> str:
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # NumPy < 2
        return "unknown"
    return " ".join(name for name in __cpu_dispatch__ if __cpu_features__.get(name)) or "none"


if __name__ == "__main__":
    main()
