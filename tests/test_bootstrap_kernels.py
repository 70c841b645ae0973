"""kernels/bootstrap.py: one stratified resample measured from its draw counts, against the slow
references on the drawn samples written out (repeated), and bit for bit against the engine on the
drawn samples weighted by their counts (the numbers the intervals had before this kernel)."""
import math
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import reference as ref
from hypothesis import given, note, settings
from hypothesis import strategies as st
from strategies import cases

from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._engine import resample as _resample
from fairmedfm_fast.kernels import bootstrap


def _tallied(case, seed, dtype=np.float64, fixed_best=None):
    """The first grouping of ``case``, arranged, and its resamples within its groups."""
    arranged = _engine.arrange(case.scores.astype(dtype), case.labels, [case.codes[0]], [int(case.n_groups[0])])
    plan = _resample._Plan(arranged.codes, ["a"], np.uint64(seed), "attribute", "bootstrap")
    log_loss = arranged.log_loss_terms()
    tallied = _resample._Tallied(plan, 0, arranged, log_loss, fixed_best, bootstrap.tie_blocks(arranged.scores))
    return arranged, plan, log_loss, tallied


def _close(fast, slow, what):
    if isinstance(slow, float) and math.isnan(slow):
        assert math.isnan(fast), what
    else:
        assert math.isclose(fast, slow, rel_tol=1e-10, abs_tol=1e-12), (what, fast, slow)


@settings(deadline=None, max_examples=60)
@given(case=cases(max_n=70, max_groupings=1, max_groups=6), seed=st.integers(0, 2**32 - 1),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_resample_matches_the_references_on_the_drawn_samples(case, seed, dtype):
    arranged, plan, _, tallied = _tallied(case, seed, dtype)
    scores = arranged.scores.astype(np.float64)
    for resample in range(2):
        grouping = tallied.measure(resample)[0]
        counts = plan.counts(0, resample).astype(np.int64)
        drawn = np.repeat(np.arange(len(scores)), counts)  # the resample written out
        s, y, codes = scores[drawn], arranged.labels[drawn], arranged.codes[0][drawn]
        note(f"resample {resample}: {len(drawn)} draws, codes {np.bincount(codes[codes >= 0]).tolist()}")
        threshold = ref.best_f1_threshold(s, y)[0] if len(s) else math.nan
        _close(grouping.threshold, threshold, "best-F1 threshold")
        g = int(case.n_groups[0])
        for slot in range(g + 1):
            mask = codes == slot if slot < g else codes >= 0
            assert grouping.count[slot] == mask.sum() and grouping.positives[slot] == y[mask].sum()
            if not mask.any():
                continue
            expected = ref.group_report(s[mask], y[mask])
            for key in ("auc", "acc", "bce", "ece", "tpr", "tnr"):
                _close(float(grouping.values[key][slot]), expected[key], f"{key} of slot {slot}")
            tn, fp, fn, tp = ref.confusion_counts(s[mask], y[mask], threshold)
            _close(float(grouping.values["acc@best_f1"][slot]), (tp + tn) / mask.sum(), f"acc@best_f1 of {slot}")
            _close(float(grouping.values["tpr@best_f1"][slot]), tp / (tp + fn) if tp + fn else math.nan,
                   f"tpr@best_f1 of slot {slot}")


@settings(deadline=None, max_examples=80)
@given(case=cases(max_n=400, max_groupings=1), seed=st.integers(0, 2**32 - 1),
       dtype=st.sampled_from([np.float64, np.float32]), fixed=st.sampled_from([None, 0.3, 0.5]))
def test_resample_equals_the_engine_on_the_drawn_samples_bit_for_bit(case, seed, dtype, fixed):
    arranged, plan, log_loss, tallied = _tallied(case, seed, dtype, fixed)
    for resample in range(3):
        part, weights = plan.drawn(0, resample, arranged, log_loss)
        before = _engine.measure(part, None, fixed_best=fixed, weights=weights, sample_counts=False, parallel=False)[0]
        after = tallied.measure(resample)[0]
        assert before.threshold == after.threshold or (math.isnan(before.threshold) and math.isnan(after.threshold))
        assert np.array_equal(before.count, after.count) and np.array_equal(before.positives, after.positives)
        assert before.values.keys() == after.values.keys()
        for key, value in before.values.items():
            assert np.array_equal(value, after.values[key], equal_nan=True), key


def test_many_folds_and_ties_bit_for_bit():
    # Thousands of samples: the compensated sums fold many times, within tie blocks too.
    rng = np.random.default_rng(5)
    n = 20_000
    y = (rng.random(n) < 0.3).astype(np.uint8)
    for scores in (rng.random(n), np.round(rng.random(n), 3)):
        codes = np.where(rng.random(n) < 0.05, -1, rng.integers(0, 7, n))
        arranged = _engine.arrange(scores, y, [codes], [7])
        plan = _resample._Plan(arranged.codes, ["a"], np.uint64(8), "attribute", "bootstrap")
        log_loss = arranged.log_loss_terms()
        tallied = _resample._Tallied(plan, 0, arranged, log_loss, None, bootstrap.tie_blocks(arranged.scores))
        for resample in range(3):
            part, weights = plan.drawn(0, resample, arranged, log_loss)
            before = _engine.measure(part, None, weights=weights, sample_counts=False, parallel=False)[0]
            after = tallied.measure(resample)[0]
            assert before.threshold == after.threshold
            for key, value in before.values.items():
                assert np.array_equal(value, after.values[key], equal_nan=True), key


@settings(deadline=None, max_examples=100)
@given(values=st.lists(st.integers(0, 4), max_size=40), cut=st.integers(0, 40))
def test_tie_blocks_are_the_runs_of_equal_scores(values, cut):
    scores = np.sort(np.array(values, np.float64))
    starts = np.array([0, min(cut, len(scores)), len(scores)], np.intp)
    for runs in (None, starts):
        expected = []
        pieces = [(0, len(scores))] if runs is None else [(0, starts[1]), (starts[1], starts[2])]
        for a, b in pieces:
            i = a
            while i < b:
                j = i + 1
                while j < b and scores[j] == scores[i]:
                    j += 1
                if j - i >= 2:
                    expected.append((i, j))
                i = j
        first, end = bootstrap.tie_blocks(scores, runs)
        assert list(zip(first.tolist(), end.tolist())) == expected


_NO_JIT = textwrap.dedent("""
    import warnings
    import numpy as np
    import numba
    assert numba.config.DISABLE_JIT, "NUMBA_DISABLE_JIT was not honoured"
    from fairmedfm_fast._engine import classification as _engine
    from fairmedfm_fast._engine import resample as _resample
    from fairmedfm_fast.kernels import bootstrap

    warnings.simplefilter("ignore")  # SplitMix64 wraps around on purpose
    rng = np.random.default_rng(3)
    for n, n_groups, missing, ties in [(1, 1, 0, 0), (2, 2, 0, 1), (9, 3, 1, 1), (40, 4, 1, 0), (300, 2, 0, 1)]:
        codes = rng.integers(-missing, n_groups, n)
        scores = np.round(rng.random(n), 1) if ties else rng.random(n)
        arranged = _engine.arrange(scores, rng.integers(0, 2, n).astype(np.uint8), [codes], [n_groups])
        plan = _resample._Plan(arranged.codes, ["a"], np.uint64(2), "attribute", "bootstrap")
        log_loss = arranged.log_loss_terms()
        tallied = _resample._Tallied(plan, 0, arranged, log_loss, None, bootstrap.tie_blocks(arranged.scores))
        for resample in range(2):
            part, weights = plan.drawn(0, resample, arranged, log_loss)
            before = _engine.measure(part, None, weights=weights, sample_counts=False, parallel=False)[0]
            after = tallied.measure(resample)[0]
            for key, value in before.values.items():
                assert np.allclose(value, after.values[key], equal_nan=True, rtol=1e-12, atol=0), key
    print("ok")
""")


def test_resample_without_jit():
    # Python mode raises on out-of-bounds indexing that compiled code would not notice.
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    result = subprocess.run([sys.executable, "-c", _NO_JIT], cwd=tempfile.gettempdir(), env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
