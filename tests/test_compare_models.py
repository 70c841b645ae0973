"""compare_models: paired DeLong against the 1988 covariance computed pair by pair, each model's report
equal to evaluate, identical models, swapped models, the family's adjustment and the leaderboard."""
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairmedfm_fast as fm
from fairmedfm_fast._statistics import paired


def delong_reference(a, b, y):
    """DeLong, DeLong and Clarke-Pearson (1988) over every positive-negative pair: O(m n)."""
    pos, neg = y == 1, y == 0
    out = []
    for s in (a, b):
        x, z = s[pos][:, None], s[neg][None, :]
        psi = (x > z) + 0.5 * (x == z)
        out.append((psi.mean(), psi.mean(axis=1), psi.mean(axis=0)))
    auc = np.array([out[0][0], out[1][0]])
    v10 = np.vstack([out[0][1], out[1][1]])
    v01 = np.vstack([out[0][2], out[1][2]])
    m, n = pos.sum(), neg.sum()
    s10 = (v10 - auc[:, None]) @ (v10 - auc[:, None]).T / (m - 1)
    s01 = (v01 - auc[:, None]) @ (v01 - auc[:, None]).T / (n - 1)
    return auc, s10 / m + s01 / n


@settings(max_examples=60, deadline=None)
@given(n=st.integers(6, 80), levels=st.sampled_from([3, 8, 1000]), seed=st.integers(0, 2**32 - 1))
def test_paired_delong_equals_the_pairwise_covariance(n, levels, seed):
    # levels: few distinct scores (many ties) to continuous
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = 0
    y[2:4] = 1
    a = rng.integers(0, levels, n) / levels + 0.2 * y
    b = rng.integers(0, levels, n) / levels + 0.1 * y
    codes = rng.integers(-1, 2, n)
    got = paired.paired_auc(a, b, y, codes, 2)
    auc, covariance = delong_reference(a, b, y)
    np.testing.assert_allclose(got.auc[-1], auc, rtol=1e-12)
    np.testing.assert_allclose(got.covariance[-1], covariance, rtol=1e-12, atol=1e-15)
    for g in range(2):
        chosen = codes == g
        m = int(y[chosen].sum())
        if 2 <= m <= chosen.sum() - 2:
            auc_g, cov_g = delong_reference(a[chosen], b[chosen], y[chosen])
            np.testing.assert_allclose(got.auc[g], auc_g, rtol=1e-12)
            np.testing.assert_allclose(got.covariance[g], cov_g, rtol=1e-12, atol=1e-15)


def models(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    shared = rng.normal(size=n)  # the hard cases both models miss
    a = 1 / (1 + np.exp(-(1.6 * y - 0.8 + shared)))
    b = 1 / (1 + np.exp(-(1.2 * y - 0.6 + shared + 0.6 * rng.normal(size=n))))
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "site": rng.choice(["a", "b", "c"], n)})
    return y, a, b, groups


def test_each_model_s_report_is_evaluate_s():
    y, a, b, groups = models()
    comparison = fm.compare_models(y, {"A": a, "B": b}, groups, interval="analytic")
    for name, scores in (("A", a), ("B", b)):
        expected = fm.evaluate(y, scores, groups)
        pd.testing.assert_frame_equal(comparison.reports[name].summary, expected.summary, rtol=1e-12)
        pd.testing.assert_frame_equal(comparison.reports[name].by_group, expected.by_group, rtol=1e-12)
    rows = comparison.differences.loc[("A", "B", "sex")]
    left, right = fm.evaluate(y, a, groups).summary, fm.evaluate(y, b, groups).summary
    assert rows.loc["auc-gap", "difference"] == pytest.approx(left.loc["sex", "auc-gap"] - right.loc["sex", "auc-gap"],
                                                              rel=1e-12, abs=1e-15)
    # the analytic difference is the same linear combination of group AUCs as the point values
    assert rows.loc["overall-auc", "se_analytic"] > 0
    assert rows.loc["overall-auc", "ci_low_analytic"] < rows.loc["overall-auc", "difference"] < rows.loc[
        "overall-auc", "ci_high_analytic"]


def test_identical_models_differ_by_nothing():
    y, a, _, groups = models(800, 1)
    comparison = fm.compare_models(y, {"A": a, "copy": a.copy()}, groups, n_boot=60, interval="analytic",
                                   n_permutations=10, random_state=3, p_adjust=None, progress=False)
    frame = comparison.differences
    assert (frame["difference"] == 0).all()
    assert (frame["ci_low"] == 0).all() and (frame["ci_high"] == 0).all()
    assert (frame["p_bootstrap"] == 1).all() and (frame["p_swap"] == 1).all()
    analytic = frame["p_analytic"].dropna()
    assert len(analytic) and (analytic == 1).all()
    assert not frame["significant"].any()


def test_swapping_the_models_flips_every_difference():
    y, a, b, groups = models(900, 2)
    one = fm.compare_models(y, {"A": a, "B": b}, groups, n_boot=30, interval="analytic", random_state=5,
                            progress=False)
    two = fm.compare_models(y, {"B": b, "A": a}, groups, n_boot=30, interval="analytic", random_state=5,
                            progress=False)
    left = one.differences.droplevel(["model", "other"])
    right = two.differences.droplevel(["model", "other"])
    np.testing.assert_allclose(left["difference"], -right["difference"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(left["ci_low"], -right["ci_high"], rtol=1e-12, atol=1e-15)  # the same replicates
    np.testing.assert_allclose(left["se_analytic"], right["se_analytic"], rtol=1e-12)
    np.testing.assert_allclose(left["p_bootstrap"], right["p_bootstrap"])


def test_a_real_difference_is_found_and_the_leaderboard_ranks_it():
    y, a, b, groups = models(4000, 4)
    comparison = fm.compare_models(y, {"weak": b, "strong": a}, groups, interval="analytic")
    row = comparison.differences.loc[("weak", "strong", "sex", "overall-auc")]
    assert row["difference"] < 0 and row["significant"] is True
    board = comparison.leaderboard("overall-auc")
    assert list(board.index) == ["strong", "weak"]
    assert board["indistinguishable_from_best"].tolist() == [True, False]
    assert list(comparison.leaderboard("auc-gap", "site")["value"]) == sorted(
        comparison.leaderboard("auc-gap", "site")["value"])  # gaps: lower first
    data = json.loads(comparison.to_json())
    assert data["metadata"]["models"] == ["weak", "strong"] and len(data["differences"]) == len(comparison.differences)


def test_too_few_replicates_for_the_family_say_so():
    y, a, b, groups = models(600, 6)
    with pytest.warns(UserWarning, match="cannot reach the adjusted level"):
        comparison = fm.compare_models(y, {"A": a, "B": b}, groups, n_boot=20, random_state=0, progress=False)
    assert comparison.differences["significant"].isna().all()
    assert comparison.leaderboard()["indistinguishable_from_best"].tolist()[1] is None


def test_bad_inputs_name_the_argument():
    y, a, b, groups = models(200, 7)
    with pytest.raises(ValueError, match="at least two score columns"):
        fm.compare_models(y, {"A": a}, groups)
    with pytest.raises(ValueError, match="differ in length"):
        fm.compare_models(y, {"A": a, "B": b[:-1]}, groups)
    with pytest.raises(ValueError, match="reference='C' is not one of the models"):
        fm.compare_models(y, {"A": a, "B": b}, groups, reference="C")
    with pytest.raises(ValueError, match="n_boot must be a non-negative integer"):
        fm.compare_models(y, {"A": a, "B": b}, groups, n_boot=-1)
    comparison = fm.compare_models(y, np.column_stack([a, b, a]), groups, reference="model_0")
    assert {key[:2] for key in comparison.differences.index} == {("model_1", "model_0"), ("model_2", "model_0")}


def test_a_difference_a_small_group_defines_is_never_significant():
    # the findings' rule: a group of 3 samples (1 positive) defines B's worst AUC and both models' gaps
    y, a, b, groups = models(1200, 8)
    site = groups["site"].to_numpy().astype(object)
    site[:3], y[:3], a[:3], b[:3] = "tiny", [0, 1, 0], [0.1, 0.9, 0.1], [0.9, 0.1, 0.9]
    groups = groups.assign(site=site)
    comparison = fm.compare_models(y, {"A": a, "B": b}, groups, n_boot=100, random_state=1, p_adjust=None,
                                   progress=False)
    rows = comparison.differences.loc[("A", "B", "site")]
    worst = rows.loc["worst-auc"]
    assert worst["small_group"] and "tiny has 1 positive and 2 negatives" in worst["not_estimable"]
    assert worst["p_bootstrap"] < 0.05 and worst["significant"] is None  # the test alone would reject
    assert not rows.loc["overall-auc", "small_group"] and rows.loc["overall-auc", "significant"] is True
    sex = comparison.differences.loc[("A", "B", "sex")]
    assert not sex["small_group"].any() and sex["not_estimable"].isna().all()
    board = comparison.leaderboard("worst-auc", "site")
    assert list(board.index) == ["A", "B"] and board["small_group"].tolist() == [False, True]  # B ranks on 3 samples
    assert board.loc["B", "indistinguishable_from_best"] is None
    assert comparison.leaderboard("worst-auc", "sex")["small_group"].tolist() == [False, False]


@pytest.mark.parametrize("options", [
    {},
    {"threshold": 0.45, "metrics": ["ap", "brier", "fpr"]},
    {"min_group_size": 150, "intersectional": True},
    {"logits": True, "missing": True},
])
def test_a_replicate_measured_from_draw_counts_is_evaluate_of_the_drawn_rows(options):
    # the paired bootstrap measures each model's sorted samples once, weighted by the draw counts; the slow,
    # obviously right way evaluates the drawn rows as samples (and sorts them again)
    from fairmedfm_fast._backends import comparison as backend
    from fairmedfm_fast._inputs import groups as coder

    options = dict(options)
    y, a, b, groups = models(1200, 9)
    if options.pop("logits", False):
        a, b = np.log(a / (1 - a)), np.log(b / (1 - b))
    if options.pop("missing", False):
        groups.loc[::17, "site"] = None
    intersectional = options.pop("intersectional", False)
    scores = {"A": a, "B": b}
    attributes = coder.encode_attributes(groups, len(y))
    draws = backend._Draws(backend._strata(attributes, len(y)))
    rng = np.random.default_rng(4)
    sorted_once = backend.SortedModels(y, scores, ["A", "B"], attributes, intersectional, options)
    for _ in range(3):
        drawn = draws(rng)
        want = backend._drawn_values(np.asarray(y), scores, ["A", "B"], attributes, intersectional, options, drawn)
        got = sorted_once.replicate(np.bincount(drawn, minlength=len(y)).astype(np.float64))
        assert set(got) == set(want)
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12, nan_ok=True), key
