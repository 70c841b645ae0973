"""Issue 12 (small calls): microseconds per call of ``auc_gap`` and ``evaluate`` on 1,000 samples
(NumPy inputs), beside the floors under them, interleaved in one process (best of several rounds).

    python benchmarks/scripts/small_calls.py [n_samples=1000] [rounds=7] [--profile]

Floors: a bare call of a compiled Numba function on the same arrays (what calling any kernel
costs), and the kernel work of one call (the stable argsort, the gathers and the kernels that
``auc_gap`` / ``evaluate`` run, called directly). ``--profile`` prints cProfile's top entries for
each call instead.
"""
import sys
import time
import warnings
from pathlib import Path

import numba
import numpy as np

import fairmedfm_fast as fm
from fairmedfm_fast.kernels import calibration, sweeps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/benchmarks: compare.py's inputs
from benchmarks import _data  # noqa: E402

warnings.simplefilter("ignore")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
n = int(float(args[0])) if args else 1000
rounds = int(args[1]) if len(args) > 1 else 7
rng = np.random.default_rng(0)
y = (rng.random(n) < 0.3).astype(np.int64)
s = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
sex = rng.integers(0, 2, n)
site = rng.integers(0, 5, n)
one, three = _data.classification(1000, 1, 5), _data.classification(1000, 3, 5)  # compare.py's rows
one_codes, three_frame = one.codes[0], three.sensitive()  # intp codes; a DataFrame of 3 str columns
text = {"sex": rng.choice(["F", "M"], n), "race": rng.choice(list("ABCDE"), n),
        "age": rng.choice(["<40", "40-60", ">=60"], n)}


@numba.njit(nogil=True, cache=False)
def _touch(scores, labels):
    return scores[0] + labels[0]


def kernel_work(attributes: int, full: bool):
    """The kernels of one call, called directly on clean arrays (sort, gathers, passes)."""
    labels = y.astype(np.uint8)
    codes = np.empty((attributes, n), np.int8)
    codes[0] = site
    if attributes > 1:
        codes[1:] = sex
    order = np.argsort(s, kind="stable")
    sorted_scores, sorted_labels, sorted_codes = s[order], labels[order], codes[:, order]
    sizes = np.array([5] + [2] * (attributes - 1), np.int64)
    cuts = np.full(1 if full else 0, int(np.searchsorted(sorted_scores, 0.5, "right")), np.int64)
    loss = calibration.log_loss_terms(sorted_scores, sorted_labels) if full else None
    marks = None
    if full:
        low, high = sweeps.score_ends(sorted_scores, sorted_codes, sizes)
        marks = sweeps.bin_marks(sorted_scores, calibration.equal_width_edges(low, high, 10), sizes)
    count, positives, u2, _, _, _, *bins = sweeps.ranked_sums(sorted_scores, sorted_labels, sorted_codes, sizes,
                                                              loss, cuts, marks, 10 if full else 1, 0, n)
    if full:
        overall = np.cumsum(sizes + 1) - 1
        sweeps.best_f1_sweep(sorted_scores, sorted_labels, sorted_codes, sizes, positives[overall],
                             count[overall] - positives[overall])
        calibration.calibration_error(*bins, 0)


def _frames(report):
    return report.summary, report.by_group  # made on first read


CALLS = {
    "numba call (floor)": lambda: _touch(s, y),
    "auc_gap kernels (floor)": lambda: kernel_work(1, False),
    "auc_gap, 5 int groups": lambda: fm.auc_gap(y, s, sensitive_features=site),
    "auc_gap, 2 text groups": lambda: fm.auc_gap(y, s, sensitive_features=text["sex"]),
    "evaluate kernels, 3 attributes (floor)": lambda: kernel_work(3, True),
    "evaluate, 1 int attribute": lambda: fm.evaluate(y, s, {"sex": sex}),
    "evaluate, 3 text attributes": lambda: fm.evaluate(y, s, text),
    "evaluate, 3 text attributes, frames read": lambda: _frames(fm.evaluate(y, s, text)),
    "compare.py: auc_gap, 5 groups": lambda: fm.auc_gap(one.y_true, one.y_score, sensitive_features=one_codes),
    "compare.py: evaluate, 3 str columns (DataFrame)": lambda: fm.evaluate(three.y_true, three.y_score,
                                                                            three_frame),
}


def per_call(function, seconds: float = 0.2) -> tuple[float, float]:
    """Wall and CPU seconds per call: as many calls as fit in ``seconds``. On a shared machine the CPU
    time (which leaves out the time other processes held the core) is the steadier figure."""
    calls, start, cpu = 0, time.perf_counter(), time.process_time()
    while True:
        function()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            return elapsed / calls, (time.process_time() - cpu) / calls


for function in CALLS.values():  # compile or load every kernel
    function()
if "--profile" in sys.argv:
    import cProfile
    import pstats

    for name, function in CALLS.items():
        if "floor" in name:
            continue
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(500):
            function()
        profile.disable()
        print(f"== {name} (500 calls)")
        pstats.Stats(profile).sort_stats("tottime").print_stats(14)
    sys.exit()
best = {name: [np.inf, np.inf] for name in CALLS}
for _ in range(rounds):
    for name, function in CALLS.items():
        best[name] = [min(old, new) for old, new in zip(best[name], per_call(function))]
print(f"n_samples={n:,}, best of {rounds} interleaved rounds; NumPy {np.__version__}, numba {numba.__version__}")
print(f"{'':48s} {'wall':>9s} {'cpu':>9s}")
for name, (wall, cpu) in best.items():
    print(f"{name:48s} {wall * 1e6:7.1f}us {cpu * 1e6:7.1f}us")
