"""The engine's sums of sorted ranges (``_ranges.range_plan``, ``range_sums``, ``from_ranges``: what the Dask
backend runs on each range of its sort) against :func:`_engine.measure` over all samples at once."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import cases

from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._engine import ranges as _ranges
from fairmedfm_fast._registry import metrics as _metric_registry


def _ranged(scores, labels, codes, sizes, starts, thresholds, extra):
    """``from_ranges`` over the sorted samples cut at ``starts`` (tie-block starts), each range alone."""
    bounds = [0, *starts, len(scores)]
    pieces = [(scores[a:b], labels[a:b], np.ascontiguousarray(codes[:, a:b])) for a, b in zip(bounds[:-1], bounds[1:])]
    summaries = [_ranges.range_summary(*piece, sizes) for piece in pieces]
    count, positives, low, high = (np.stack(values) for values in zip(*summaries))
    fixed = [0.5] if thresholds is None else [0.5, thresholds]
    plan = _ranges.range_plan(count, positives, np.fmin.reduce(low, axis=0), np.fmax.reduce(high, axis=0), sizes,
                              len(scores), fixed, thresholds is None, tuple(extra))
    return _ranges.from_ranges([_ranges.range_sums(*piece, plan, r) for r, piece in enumerate(pieces)], plan,
                               thresholds)


@settings(deadline=None, max_examples=80)
@given(case=cases(max_n=300), data=st.data())
def test_ranges_join_to_the_sums_of_all_samples(case, data):
    """Any cut of the sorted samples at tie-block starts (empty ranges too) gives every metric of every
    slot, opt-in ones included, with and without a fixed @best_f1 threshold, as one pass over all."""
    order = np.argsort(case.scores, kind="stable")
    scores = case.scores[order].astype(data.draw(st.sampled_from([np.float32, np.float64])))
    order = np.argsort(scores, kind="stable")  # float32 may tie what float64 did not
    scores, labels = scores[order], case.labels[order]
    code_type = _engine.code_dtype(int(case.n_groups.max()))
    codes = np.ascontiguousarray(case.codes[:, order].astype(code_type))
    cuts = data.draw(st.lists(st.integers(0, len(scores)), max_size=5))
    starts = sorted(int(scores.searchsorted(scores[min(c, len(scores) - 1)], "left")) if c < len(scores) else c
                    for c in cuts)
    threshold = data.draw(st.sampled_from([None, 0.3]))
    extra = _metric_registry.optional_keys(["ap", "brier", "fpr"])
    got = _ranged(scores, labels, codes, case.n_groups, starts, threshold, extra)
    arranged = _engine.Arranged(scores, labels, codes, case.n_groups, None, True)
    expected = _engine.measure(arranged, {*_engine.all_keys(), *extra}, fixed_best=threshold)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_array_equal(a.positives, b.positives)
        np.testing.assert_equal(a.threshold, b.threshold)
        assert a.values.keys() == b.values.keys()
        for key in b.values:
            np.testing.assert_allclose(a.values[key], b.values[key], rtol=0, atol=1e-12, err_msg=key)


@settings(deadline=None, max_examples=200)
@given(values=st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=50),
       threshold=st.one_of(st.floats(allow_nan=False), st.floats(width=32, allow_nan=False)))
def test_position_above_float32_scores_is_searchsorted_right(values, threshold):
    scores = np.sort(np.array(values, np.float32))
    assert _ranges._position_above(scores, threshold) == int(scores.searchsorted(threshold, "right"))
