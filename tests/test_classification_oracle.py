"""Differential tests: fairmedfm_fast against the oracle, fairmedfm 0.4.2, through the public API.

Every call goes to both packages with the same (deep-copied) inputs; ``compare.assert_same`` checks
that the values agree within 1e-9 (``summary``, ``by_group`` and ``overall`` of a report with the same
rows, columns and dtypes), that the same number of warnings is emitted or recorded, and that a
ValueError from the oracle is a ValueError from us. Our inputs are checked to be unchanged.

Random and adversarial cases come from ``strategies.api_cases``; named cases below cover the input
forms (labels, scores, bins, intersectional, missing values, group naming and order).
"""
import tempfile

import numpy as np
import pandas as pd
import pytest
from compare import assert_same, both, check
from hypothesis import given, note
from hypothesis import strategies as st
from strategies import api_cases, examples, with_layout

import fairmedfm_fast as fm

# Subprocesses start outside the checkout, so that they import the installed package (kernels/ is
# installed as fairmedfm_fast.kernels) rather than the source folder from the working directory.
OUTSIDE_REPO = tempfile.gettempdir()

ONE_NUMBER = ("auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap",
              "equal_opportunity_difference", "equalized_odds_score")
# The registry of one-number function -> the summary column it returns (the same in both packages).
COLUMN = {"auc_gap": "auc-gap", "worst_group_auc": "worst-auc", "accuracy_gap": "acc-gap", "bce_gap": "bce-gap",
          "ece_gap": "ece-gap", "equal_opportunity_difference": "eo", "equalized_odds_score": "eod"}


def _note_case(kwargs):
    case = kwargs.get("case")
    if case is not None:
        note(f"kind={case.kind} n={case.n} n_groups={case.n_groups.tolist()} notes={case.notes}")
    note(f"sensitive_features dtypes: {dict(kwargs['sensitive_features'].dtypes.astype(str))}")


# --- random and adversarial cases -------------------------------------------------------------------

@examples(0.7)
@given(data=api_cases(max_n=150, max_attributes=3, max_groups=12), intersectional=st.booleans())
def test_evaluate_matches_oracle(data, intersectional):
    _note_case(data)
    fast, oracle = both("evaluate", data["y_true"], data["y_score"], data["sensitive_features"],
                        intersectional=intersectional)
    assert_same(fast, oracle)


@examples(0.4)
@given(data=api_cases(max_n=300, max_attributes=1, max_groups=50, logits=False))
def test_evaluate_many_groups_matches_oracle(data):
    _note_case(data)
    check("evaluate", data["y_true"], data["y_score"], data["sensitive_features"])


@examples(0.7)
@given(data=api_cases(max_n=150, max_attributes=2, max_groups=8), function=st.sampled_from(ONE_NUMBER),
       columns=st.sampled_from(["first", "all"]))
def test_one_number_functions_match_oracle(data, function, columns):
    _note_case(data)
    features = data["sensitive_features"]
    features = features.iloc[:, 0] if columns == "first" else features
    fast, oracle = both(function, data["y_true"], data["y_score"], sensitive_features=features)
    assert_same(fast, oracle)


@examples(0.4)
@given(data=api_cases(max_n=150, max_attributes=1, max_groups=6), function=st.sampled_from(ONE_NUMBER))
def test_one_number_equals_evaluate_column(data, function):
    # The one-number function is the summary column of evaluate on one attribute.
    _note_case(data)
    features = data["sensitive_features"].iloc[:, 0]
    report = fm.evaluate(data["y_true"], data["y_score"], features)
    # small_group flags are the report's own (the one-number functions warn as fairmedfm does)
    with pytest.warns() if [w for w in report.warnings if "small_group" not in w] else _nothing():
        value = getattr(fm, function)(data["y_true"], data["y_score"], sensitive_features=features)
    expected = report.summary.iloc[0].get(COLUMN[function], np.nan)
    if pd.isna(expected):
        assert np.isnan(value)
    else:
        assert value == pytest.approx(float(expected), rel=1e-12, abs=1e-15)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --- named cases: input forms -----------------------------------------------------------------------

def _base(n=80, seed=0, groups=("F", "M")):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.45).astype(int)
    y[:2] = [0, 1]
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    g = np.array(groups, dtype=object)[rng.integers(0, len(groups), n)]
    g[: len(groups)] = groups
    g[len(groups): 2 * len(groups)] = groups
    y[len(groups): 2 * len(groups)] = 1 - y[: len(groups)]
    return rng, y, p, g


def _named_cases():
    rng, y, p, g = _base()
    site = rng.choice(["A", "B", "C"], len(y))
    age = rng.integers(20, 90, len(y)).astype(float)
    cases = {}
    cases["numpy 0/1"] = ((y, p, g), {})
    cases["lists"] = ((y.tolist(), p.tolist(), g.tolist()), {})
    cases["boolean labels"] = ((y.astype(bool), p, g), {})
    cases["float labels"] = ((y.astype(float), p, g), {})
    cases["string labels + pos_label"] = ((np.where(y == 1, "disease", "healthy"), p, g),
                                          {"pos_label": "disease"})
    cases["string labels, pos_label negative class"] = ((np.where(y == 1, "disease", "healthy"), p, g),
                                                        {"pos_label": "healthy"})
    cases["one-hot labels"] = ((np.eye(2, dtype=int)[y], p, g), {})
    multi = np.where(y == 1, 2, rng.integers(0, 2, len(y)))
    cases["multi-class + pos_label"] = ((multi, p, g), {"pos_label": 2})
    logits = np.log(p + 1e-3) - np.log(1 - p + 1e-3)
    cases["logits 1-D"] = ((y, logits, g), {})
    cases["logits, score_type=logit"] = ((y, logits, g), {"score_type": "logit"})
    cases["probabilities, score_type=logit"] = ((y, p, g), {"score_type": "logit"})
    cases["probabilities, score_type=probability"] = ((y, p, g), {"score_type": "probability"})
    cases["(n, 1) column"] = ((y, p[:, None], g), {})
    proba = np.column_stack([1 - p, p])
    cases["predict_proba (n, 2)"] = ((y, proba, g), {})
    cases["(n, 2) score_column=0"] = ((y, proba, g), {"score_column": 0})
    cases["(n, 2) logits"] = ((y, np.column_stack([-logits / 2, logits / 2]), g), {})
    raw = rng.normal(size=(len(y), 3))
    softmax = np.exp(raw) / np.exp(raw).sum(axis=1, keepdims=True)
    cases["softmax (n, 3) + pos_label column"] = ((multi, softmax, g), {"pos_label": 2})
    cases["logits (n, 3) + pos_label"] = ((multi, raw, g), {"pos_label": 1})
    cases["(n, 3) + score_column"] = ((y, softmax, g), {"score_column": 2})
    string_multi = np.array(["a", "b", "c"])[multi]
    cases["string classes, softmax, pos_label"] = ((string_multi, softmax, g), {"pos_label": "b"})
    cases["two attributes (DataFrame)"] = ((y, p, pd.DataFrame({"sex": g, "site": site})), {})
    cases["dict of attributes"] = ((y, p, {"sex": g, "site": site}), {})
    cases["2-D array of attributes"] = ((y, p, np.column_stack([g, site])), {})
    cases["intersectional 2"] = ((y, p, pd.DataFrame({"sex": g, "site": site})), {"intersectional": True})
    cases["intersectional 3 + bins"] = ((y, p, pd.DataFrame({"sex": g, "site": site, "age": age})),
                                        {"intersectional": True, "bins": {"age": [40, 60]}})
    cases["bins cut points"] = ((y, p, pd.DataFrame({"age": age})), {"bins": {"age": [30, 50.5, 70]}})
    cases["bins quantiles"] = ((y, p, pd.DataFrame({"age": age})), {"bins": {"age": 4}})
    cases["bins one cut point"] = ((y, p, {"age": age}), {"bins": {"age": [55]}})
    with_missing = g.copy()
    with_missing[[5, 9, 20]] = None
    cases["missing None"] = ((y, p, with_missing), {})
    nan_site = np.array(site, dtype=object)
    nan_site[[3, 4]] = np.nan
    cases["missing NaN"] = ((y, p, pd.DataFrame({"sex": g, "site": nan_site})), {})
    cases["missing pd.NA"] = ((y, p, pd.Series(pd.array(np.where(np.arange(len(y)) % 7 == 0, None, site),
                                                          dtype="string"), name="site")), {})
    cases["missing in intersectional"] = ((y, p, pd.DataFrame({"sex": with_missing, "site": nan_site})),
                                          {"intersectional": True})
    cases["categorical order"] = ((y, p, pd.Series(pd.Categorical(site, categories=["C", "A", "B", "Z"]),
                                                   name="site")), {})
    cases["numeric groups (floats, whole)"] = ((y, p, rng.choice([1.0, 2.0, 10.0], len(y))), {})
    cases["numeric groups with NaN"] = ((y, p, np.where(np.arange(len(y)) % 9 == 0, np.nan,
                                                        rng.choice([1.0, 2.5, 10.0], len(y)))), {})
    cases["integer groups"] = ((y, p, rng.choice([3, 20, 100], len(y))), {})
    cases["boolean groups"] = ((y, p, rng.random(len(y)) < 0.5), {})
    cases["float32 scores"] = ((y, p.astype(np.float32), g), {})
    cases["read-only arrays"] = ((with_layout(y, "readonly"), with_layout(p, "readonly"), g), {})
    cases["non-contiguous arrays"] = ((with_layout(y, "strided"), with_layout(p, "strided"), g), {})
    single = np.where(np.arange(len(y)) == 0, "solo", g)
    cases["single-sample group (skipped)"] = ((y, p, single), {})
    cases["single-label group (skipped)"] = ((y, p, np.where((y == 0) & (np.arange(len(y)) < 10), "neg-only", g)),
                                             {})
    cases["fewer than two valid groups"] = ((y, p, np.where(np.arange(len(y)) < 2, "a", "b")), {})
    cases["one group"] = ((y, p, np.full(len(y), "all")), {})
    cases["scores 0 and 1"] = ((y, np.where(y == 1, 1.0, 0.0), g), {})
    cases["all scores equal"] = ((y, np.full(len(y), 0.5), g), {})
    cases["group with constant score"] = ((y, np.where(g == "F", 0.25, p), g), {})
    cases["scores on bin edges"] = ((y, np.linspace(0, 1, 11)[rng.integers(0, 11, len(y))], g), {})
    cases["20 numeric groups"] = ((y, p, np.arange(len(y)) % 20), {})
    cases["pandas Series with the same index"] = ((pd.Series(y, name="y"), pd.Series(p), pd.Series(g, name="sex")), {})
    # Two thresholds with exactly equal F1 (precision and recall swapped: 0.5/1 at 0.3 and 1/0.5 at 0.8):
    # the lower one wins, as in fairmedfm; accuracy, TPR, TNR, eo and eod at best-F1 tell them apart.
    tie_y, tie_p = _f1_tie(copies=10)
    tie_g = np.repeat(np.array(["F", "M"] * 5), 8)
    cases["best-F1 tie between two thresholds"] = ((tie_y, tie_p, tie_g), {})
    tie_site = np.repeat(np.array(["A", "B", None, "A", "B", "A", None, "B", "A", "B"], dtype=object), 8)
    cases["best-F1 tie, attributes with missing values"] = ((tie_y, tie_p, pd.DataFrame({"sex": tie_g,
                                                                                          "site": tie_site})), {})
    cases["best-F1 tie, intersectional"] = ((tie_y, tie_p, pd.DataFrame({"sex": tie_g, "site": tie_site})),
                                            {"intersectional": True})
    order = np.random.default_rng(3).permutation(len(tie_y))
    cases["best-F1 tie, shuffled float32"] = ((tie_y[order], tie_p[order].astype(np.float32), tie_g[order]), {})
    return cases


def _f1_tie(copies):
    """Labels and scores where thresholds 0.3 (TP 4, FP 4 of 4 positives per copy) and 0.8 (TP 2,
    FP 0) have the same F1 bit for bit, the highest of any threshold."""
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.35, 0.3])
    labels = np.array([1, 1, 0, 0, 0, 0, 1, 1])
    return np.tile(labels, copies), np.tile(scores, copies)


NAMED = _named_cases()


@pytest.mark.parametrize("name", list(NAMED))
def test_named_case_evaluate(name):
    args, kwargs = NAMED[name]
    fast, oracle = check("evaluate", *args, **kwargs)
    if oracle.error is None:
        assert len(fast.value.summary) >= 1


@pytest.mark.parametrize("function", ONE_NUMBER)
@pytest.mark.parametrize("name", [n for n in NAMED if n not in ("lists", "float labels")])
def test_named_case_one_number(name, function):
    args, kwargs = NAMED[name]
    kwargs = {k: v for k, v in kwargs.items() if k != "intersectional"}
    y, p, features = args
    check(function, y, p, sensitive_features=features, **kwargs)


# --- fairmedfm_fast.metrics -------------------------------------------------------------------------

METRIC_SAMPLES = {
    "random": (lambda rng: (rng.random(60), (rng.random(60) < 0.4).astype(int))),
    "ties": (lambda rng: (rng.choice([0.1, 0.5, 0.9], 60), (rng.random(60) < 0.5).astype(int))),
    "edges": (lambda rng: (np.linspace(0, 1, 11)[rng.integers(0, 11, 60)], (rng.random(60) < 0.5).astype(int))),
    "zeros and ones": (lambda rng: (rng.choice([0.0, 1.0], 60), (rng.random(60) < 0.5).astype(int))),
    "constant": (lambda rng: (np.full(30, 0.3), (rng.random(30) < 0.5).astype(int))),
    "float32": (lambda rng: (rng.random(60).astype(np.float32), (rng.random(60) < 0.5).astype(int))),
    "boolean labels": (lambda rng: (rng.random(40), rng.random(40) < 0.5)),
    "list": (lambda rng: (rng.random(25).tolist(), (rng.random(25) < 0.5).astype(int).tolist())),
}


@pytest.mark.parametrize("sample", list(METRIC_SAMPLES))
def test_metrics_find_threshold_bce(sample):
    prob, label = METRIC_SAMPLES[sample](np.random.default_rng(3))
    check("metrics.find_threshold", prob, label)
    check("metrics.binary_cross_entropy", prob, label)


@pytest.mark.parametrize("sample", list(METRIC_SAMPLES))
@pytest.mark.parametrize("variant", ["abs", "squared", "rmse"])
@pytest.mark.parametrize("num_bins", [1, 5, 10, 15])
@pytest.mark.parametrize("quantile_bins", [False, True])
def test_metrics_expected_calibration_error(sample, variant, num_bins, quantile_bins):
    prob, label = METRIC_SAMPLES[sample](np.random.default_rng(4))
    check("metrics.expected_calibration_error", prob, label, num_bins=num_bins, metric_variant=variant,
          quantile_bins=quantile_bins)


@pytest.mark.parametrize("sample", list(METRIC_SAMPLES))
@pytest.mark.parametrize("threshold", [0.5, 0.0, 0.3, 1.0])
def test_metrics_binary_classification_report(sample, threshold):
    prob, label = METRIC_SAMPLES[sample](np.random.default_rng(5))
    fast, _ = check("metrics.binary_classification_report", prob, label, threshold=threshold)
    if fast.error is None:
        assert list(fast.value) == ["auc", "acc", "bce", "ece", "tpr", "tnr", "tn", "fp", "fn", "tp"]
    check("metrics.binary_classification_report", prob, label, threshold, "@t")


def _legacy_inputs(seed=6, n=90, groups=("F", "M", "X")):
    _, y, p, g = _base(n, seed, groups)
    return p, y, g


@pytest.mark.parametrize("groups", [("F", "M"), ("F", "M", "X"), (1, 2, 3, 4), (0.5, 2.0)])
def test_metrics_evaluate_binary_and_organize_results(groups):
    p, y, g = _legacy_inputs(groups=groups)
    g = np.array(g.tolist())  # a homogeneous array (numbers stay numbers)
    fast, oracle = check("metrics.evaluate_binary", p, y, g)
    check("metrics.organize_results", *oracle.value)
    check("metrics.organize_results", oracle.value[0], {k: v[:1] for k, v in oracle.value[1].items()})
    check("metrics.organize_results", {"auc": 0.7}, {"auc": [0.6, 0.8]})


@pytest.mark.parametrize("groups", [("F", "M"), ("F", "M", "X"), (1, 2, 3)])
def test_classification_fairness_is_deprecated_and_matches(groups):
    p, y, g = _legacy_inputs(groups=groups)
    fast, oracle = check("classification_fairness", p, y, np.array(g.tolist()))
    assert fast.categories(FutureWarning) == 1
    assert set(fast.value) == {"summary", "overall", "groups"}


@pytest.mark.parametrize("bad", ["one group", "one-label group", "labels 0/2", "prob > 1", "prob NaN",
                                 "length", "2-D prob"])
def test_legacy_functions_reject_bad_inputs(bad):
    p, y, g = _legacy_inputs()
    if bad == "one group":
        g = np.full(len(y), "F")
    elif bad == "one-label group":
        g = np.where(y == 1, "F", g)
    elif bad == "labels 0/2":
        y = y * 2
    elif bad == "prob > 1":
        p = p + 1
    elif bad == "prob NaN":
        p = p.copy()
        p[3] = np.nan
    elif bad == "length":
        g = g[:-1]
    elif bad == "2-D prob":
        p = np.column_stack([1 - p, p])
    for name in ("classification_fairness", "metrics.evaluate_binary"):
        fast, oracle = both(name, p, y, g)
        assert oracle.error is not None, f"the oracle accepted {bad!r}"
        assert_same(fast, oracle)


# --- error conditions -------------------------------------------------------------------------------

def _bad_inputs():
    rng, y, p, g = _base(40)
    age = np.arange(40, dtype=float)
    cases = {
        "NaN in scores": ((y, np.where(np.arange(40) == 3, np.nan, p), g), {}),
        "wrong length": ((y, p[:-1], g), {}),
        "wrong length sensitive": ((y, p, g[:-1]), {}),
        "3-D scores": ((y, p.reshape(40, 1, 1) * np.ones((1, 2, 2)), g), {}),
        "unknown bins column": ((y, p, pd.DataFrame({"sex": g})), {"bins": {"age": [40]}}),
        ">20 numeric groups": ((y, p, pd.DataFrame({"age": age})), {}),
        "empty": ((np.array([], int), np.array([]), np.array([], object)), {}),
        "labels not 0/1": ((y * 2 + 1, p, g), {}),
        "string labels without pos_label": ((np.where(y == 1, "a", "b"), p, g), {}),
        "pos_label absent": ((y, p, g), {"pos_label": 7}),
        "only one class": ((np.zeros(40, int), p, g), {}),
        "score_type unknown": ((y, p, g), {"score_type": "probabilities"}),
        "probability out of range": ((y, p + 1, g), {"score_type": "probability"}),
        "score_column out of range": ((y, np.column_stack([1 - p, p]), g), {"score_column": 5}),
        "3 columns, no score_column": ((y, rng.random((40, 3)), g), {}),
        "labels 3-D": ((np.zeros((40, 2, 2)), p, g), {}),
        "bins quantiles < 2": ((y, p, pd.DataFrame({"age": age})), {"bins": {"age": 1}}),
        "bins non-numeric": ((y, p, pd.DataFrame({"sex": g})), {"bins": {"sex": [1]}}),
        "bins empty": ((y, p, pd.DataFrame({"age": age})), {"bins": {"age": []}}),
        "sensitive 3-D": ((y, p, np.zeros((40, 1, 1))), {}),
        "sensitive no columns": ((y, p, pd.DataFrame(index=range(40))), {}),
        "sensitive None": ((y, p, None), {}),
        "scalar y_true": ((1, p, g), {}),
    }
    return cases


BAD = _bad_inputs()


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("function", ["evaluate", "auc_gap"])
def test_bad_inputs_raise_value_error_in_both(name, function):
    args, kwargs = BAD[name]
    if function == "evaluate":
        fast, oracle = both("evaluate", *args, **kwargs)
    else:
        fast, oracle = both(function, args[0], args[1], sensitive_features=args[2], **kwargs)
    assert oracle.error is not None, f"the oracle accepts {name!r}: fix the case"
    assert_same(fast, oracle)
    assert "numba" not in repr(fast.error).lower() and "Numba" not in type(fast.error).__module__


# --- a tiny case in pure Python mode (NUMBA_DISABLE_JIT=1) ------------------------------------------

def test_evaluate_without_jit_matches_oracle():
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    script = textwrap.dedent("""
        import numba, numpy as np, pandas as pd
        assert numba.config.DISABLE_JIT
        import fairmedfm, fairmedfm_fast
        from compare import assert_reports, assert_close
        rng = np.random.default_rng(1)
        n = 40
        y = (rng.random(n) < 0.5).astype(int); y[:4] = [0, 1, 0, 1]
        p = rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], n)
        g = pd.DataFrame({"sex": np.array(["F", "M"])[np.arange(n) % 2],
                          "site": np.where(np.arange(n) % 11 == 0, None, np.array(list("ABC"))[np.arange(n) % 3])})
        for options in ({}, {"intersectional": True}):
            assert_reports(fairmedfm_fast.evaluate(y, p, g, **options), fairmedfm.evaluate(y, p, g, **options))
        import warnings
        warnings.simplefilter("ignore")
        for name in ("auc_gap", "equalized_odds_score", "ece_gap"):
            assert_close(getattr(fairmedfm_fast, name)(y, p, sensitive_features=g["sex"]),
                         getattr(fairmedfm, name)(y, p, sensitive_features=g["sex"]))
        print("ok")
    """)
    tests_dir = Path(__file__).resolve().parent
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tests_dir), os.environ.get("PYTHONPATH", "")]))}
    result = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


@examples(0.7)
@given(data=api_cases(max_n=120, max_attributes=2, max_groups=6), forms=st.data())
def test_input_forms_match_oracle(data, forms):
    from strategies import input_forms

    _note_case(data)
    args, kwargs, text = forms.draw(input_forms(data))
    note(text)
    fast, oracle = both("evaluate", *args, **kwargs)
    assert_same(fast, oracle)
    function = forms.draw(st.sampled_from(ONE_NUMBER))
    kwargs.pop("intersectional", None)
    fast, oracle = both(function, args[0], args[1], sensitive_features=args[2], **kwargs)
    assert_same(fast, oracle)


def _categoricals():
    rng = np.random.default_rng(11)
    n = 120
    codes = rng.integers(0, 5, n)
    with_nan = np.where(rng.random(n) < 0.1, -1, codes)
    unsorted = ["b", "a", "10", "9", "B"]  # category order differs from the oracle's sorted order
    return {
        "series": pd.Series(pd.Categorical.from_codes(codes, categories=unsorted)),
        "series with NaN": pd.Series(pd.Categorical.from_codes(with_nan, categories=unsorted)),
        "bare": pd.Categorical.from_codes(codes, categories=unsorted),
        "bare with NaN": pd.Categorical.from_codes(with_nan, categories=unsorted),
        "bare, unused category": pd.Categorical.from_codes(codes % 4, categories=unsorted),
        "dict of bare": {"a": pd.Categorical.from_codes(codes, categories=unsorted),
                         "b": pd.Categorical.from_codes(with_nan % 3, categories=["z", "y", "x"])},
        "numbers with NaN": pd.Series(pd.Categorical.from_codes(with_nan, categories=[3.0, 1.0, 2.5, 10.0, 2.0])),
        "bare numbers": pd.Categorical.from_codes(codes, categories=[3, 1, 25, 10, 2]),
        "bare, names shared": pd.Categorical.from_codes(codes, categories=["1", 1.0, "x", "a", 2]),
    }


@pytest.mark.parametrize("name", list(_categoricals()))
def test_categorical_codes_order_like_oracle(name):
    # Category codes serve as group codes; the groups keep category order only where the oracle does
    # (a categorical Series without missing values), else they are sorted like any other values.
    features = _categoricals()[name]
    rng = np.random.default_rng(12)
    y, s = rng.integers(0, 2, 120), rng.random(120)
    fast, oracle = check("evaluate", y, s, features)
    if fast.error is None:
        assert list(fast.value.by_group.index) == list(oracle.value.by_group.index)


TEXT_FORMS = ("U arrays", "S arrays", "pyarrow Table", "pandas string[pyarrow]", "lists", "polars Utf8",
              "polars Categorical")


@examples(0.5)
@given(data=api_cases(max_n=120, max_attributes=2, max_groups=6), form=st.sampled_from(TEXT_FORMS),
       n_jobs=st.integers(1, 3))
def test_text_coded_in_pieces_matches_oracle(data, form, n_jobs):
    # text attributes coded as long columns are (in pieces on threads, from 8 values here, by tables
    # of 2 slots that fill at once), in every text form, beside the oracle reading the same strings as
    # NumPy arrays (bytes for S arrays)
    from fairmedfm_fast._inputs import value_codes

    frame = data["sensitive_features"]
    if frame.isna().to_numpy().any():
        return
    text = {name: np.array([str(value) for value in frame[name]]) for name in frame.columns}
    if form == "S arrays":
        text = {name: np.char.encode(values, "utf-8") for name, values in text.items()}
    if form.startswith("polars"):
        pl = pytest.importorskip("polars")
        features = pl.DataFrame({name: values.tolist() for name, values in text.items()})
        if form == "polars Categorical":
            features = features.with_columns(pl.all().cast(pl.Categorical))
    else:
        import pyarrow as pa

        features = {"U arrays": lambda: text, "S arrays": lambda: text, "pyarrow Table": lambda: pa.table(text),
                    "pandas string[pyarrow]": lambda: pd.DataFrame({k: pd.array(v, dtype="string[pyarrow]")
                                                                    for k, v in text.items()}),
                    "lists": lambda: {k: v.tolist() for k, v in text.items()}}[form]()
    y, scores = data["y_true"], data["y_score"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(value_codes, "PIECES_FROM", 8)
        patch.setattr(value_codes, "TEXT_TABLE_SLOTS", 2)
        patch.setenv("FAIRMEDFM_FAST_N_JOBS", str(n_jobs))
        fast, oracle = both("evaluate", y, scores, features, oracle_args=((y, scores, text), {}))
    assert_same(fast, oracle)


@examples(0.5)
@given(data=api_cases(max_n=150, max_attributes=2, max_groups=8), cuts=st.lists(st.integers(1, 149), max_size=6),
       large=st.booleans(), keyed_sort=st.booleans())
def test_accumulated_arrow_text_matches_oracle(data, cuts, large, keyed_sort):
    # batches of Arrow text keyed by the accumulator's tables of the groups known (whatever the batches'
    # sizes, side by side on threads from 20 samples), beside the oracle's evaluate on the whole data;
    # with ``keyed_sort``, the report's sort reads each row's codes by its key at any size (from 16,384
    # rows otherwise), and does so wherever the scores are probabilities
    import warnings

    import pyarrow as pa
    from compare import Outcome, call

    from fairmedfm_fast._backends import accumulator, accumulator_text
    from fairmedfm_fast._engine import sorting as engine_sorting
    from fairmedfm_fast._inputs import known_text

    frame = data["sensitive_features"]
    if frame.isna().to_numpy().any():
        return
    text = {name: np.array([str(value) for value in frame[name]]) for name in frame.columns}
    y, scores = data["y_true"], data["y_score"]
    bounds = [0, *sorted({c for c in cuts if c < len(y)}), len(y)]
    fast = Outcome()
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        patch.setattr(accumulator_text, "KEYED_FROM", 1)
        patch.setattr(known_text, "THREADS_FROM", 20)
        patch.setattr(accumulator, "SETTLE_FROM", 40)
        real, sorted_by_keys = accumulator_text._engine.keyed_and_measured, []
        patch.setattr(accumulator_text._engine, "keyed_and_measured",
                      lambda *a, **k: sorted_by_keys.append(real(*a, **k)) or sorted_by_keys[-1])
        if keyed_sort:
            patch.setattr(engine_sorting, "RADIX_FROM", 1)
        acc = fm.FairnessAccumulator()
        try:
            for a, b in zip(bounds[:-1], bounds[1:]):
                acc.update(y[a:b], scores[a:b], {name: pa.array(values[a:b], pa.large_string() if large else None)
                                                 for name, values in text.items()})
            fast.value = acc.result()
        except ValueError as error:
            fast.error = error
    fast.warnings = [(w.category, str(w.message)) for w in caught]
    if keyed_sort and fast.error is None and np.all((np.asarray(scores) >= 0) & (np.asarray(scores) <= 1)):
        assert sorted_by_keys and sorted_by_keys[-1] is not None
    assert_same(fast, call("fairmedfm", "evaluate", y, scores, text), warning_categories=())
