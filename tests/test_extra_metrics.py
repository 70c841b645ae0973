"""Opt-in metrics (``metrics=[...]``): average precision, Brier score, selection rate (demographic
parity), FPR and FNR, each against scikit-learn, fairlearn or confusion-matrix arithmetic."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from compare import assert_same, both
from hypothesis import given
from hypothesis import strategies as st
from reference import average_precision
from sklearn.metrics import average_precision_score, brier_score_loss, confusion_matrix
from strategies import cases

import fairmedfm_fast as fm
from fairmedfm_fast.kernels import precision

ALL = ["ap", "brier", "selection_rate", "fpr", "fnr"]
EXTRA_COLUMNS = ["ap", "brier", "selection_rate", "fpr", "fnr", "selection_rate@best_f1", "fpr@best_f1",
                 "fnr@best_f1"]


def _data(n=2000, seed=0, ties=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    if ties:
        p = np.round(p, 2)  # many tie blocks, some holding both labels
    groups = pd.DataFrame({"site": rng.choice(["a", "b", "c", "d"], n), "sex": rng.choice(["F", "M"], n)})
    return y, p, groups, rng.random(n) * 3


def assert_close(fast, expected):
    """Equal within 1e-12 (NaN where the other is NaN): frames with the same labels, or arrays."""
    if isinstance(fast, (pd.DataFrame, pd.Series)):
        assert fast.index.equals(expected.index)
        fast, expected = fast.to_numpy(np.float64), expected.to_numpy(np.float64)
    np.testing.assert_allclose(fast, expected, rtol=0, atol=1e-12)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _members(groups, attribute, group):
    return (groups[attribute] == group).to_numpy()


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_ap_and_brier_match_sklearn(weighted, ties):
    y, p, groups, w = _data(ties=ties)
    w = w if weighted else None
    report = fm.evaluate(y, p, groups, metrics=["ap", "brier"], sample_weight=w)
    for (attribute, group), row in report.by_group.iterrows():
        m = _members(groups, attribute, group)
        sw = None if w is None else w[m]
        assert abs(row["ap"] - average_precision_score(y[m], p[m], sample_weight=sw)) <= 1e-12
        assert abs(row["brier"] - brier_score_loss(y[m], p[m], sample_weight=sw)) <= 1e-12
    assert abs(report.overall["ap"] - average_precision_score(y, p, sample_weight=w)) <= 1e-12
    gaps = report.by_group.groupby(level=0)[["ap", "brier"]].agg(lambda v: v.max() - v.min())
    assert_close(report.summary[["ap-gap", "brier-gap"]].to_numpy(), gaps.loc[report.summary.index].to_numpy())


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("threshold", [None, 0.62])
def test_selection_rate_fpr_fnr(weighted, threshold):
    from fairlearn.metrics import demographic_parity_difference

    y, p, groups, w = _data(seed=1)
    w = w if weighted else None
    report = fm.evaluate(y, p, groups, metrics=["selection_rate", "fpr", "fnr"], sample_weight=w,
                         threshold=threshold)
    for attribute in groups:
        best = report._curves[list(groups).index(attribute)].threshold if threshold is None else threshold
        a = groups[attribute].to_numpy()
        for suffix, t in (("", 0.5), ("@best_f1", best)):
            predicted = (p > t).astype(int)  # strict, as fairmedfm predicts
            dp = demographic_parity_difference(y, predicted, sensitive_features=a, sample_weight=w)
            rates = report.by_group.loc[attribute, "selection_rate" + suffix]
            assert abs((rates.max() - rates.min()) - dp) <= 1e-12
            if suffix:
                assert abs(report.summary.loc[attribute, "dp"] - dp) <= 1e-12
            for group in rates.index:
                m = a == group
                tn, fp, fn, tp = confusion_matrix(y[m], predicted[m], labels=[0, 1],
                                                  sample_weight=None if w is None else w[m]).ravel()
                row = report.by_group.loc[(attribute, group)]
                assert abs(row["selection_rate" + suffix] - (tp + fp) / (tn + fp + fn + tp)) <= 1e-12
                assert abs(row["fpr" + suffix] - fp / (fp + tn)) <= 1e-12
                assert abs(row["fnr" + suffix] - fn / (fn + tp)) <= 1e-12
        frame = report.by_group.loc[attribute]
        for column, metric in (("fpr-gap", "fpr@best_f1"), ("fnr-gap", "fnr@best_f1")):
            assert abs(report.summary.loc[attribute, column] - (frame[metric].max() - frame[metric].min())) <= 1e-12


def test_fpr_fnr_complement_tnr_tpr():
    y, p, groups, _ = _data(seed=2)
    report = fm.evaluate(y, p, groups, metrics=["fpr", "fnr"])
    for suffix in ("", "@best_f1"):
        assert_close((report.by_group["fpr" + suffix] + report.by_group["tnr" + suffix]).to_numpy(), 1.0)
        assert_close((report.by_group["fnr" + suffix] + report.by_group["tpr" + suffix]).to_numpy(), 1.0)


@given(case=cases(max_n=120, max_groupings=2, max_groups=6), weighted=st.booleans())
def test_precision_kernel_matches_reference(case, weighted):
    order = np.argsort(case.scores, kind="stable")
    scores, labels, codes = case.scores[order], case.labels[order], np.ascontiguousarray(case.codes[:, order])
    weights = None
    if weighted:
        weights = np.random.default_rng(case.n).integers(0, 4, case.n).astype(np.float64)
    none = np.empty(0, np.int64 if weights is None else np.float64)
    sums = precision.precision_sums(scores, labels, codes, case.n_groups, none, none, weights)
    w = np.ones(case.n) if weights is None else weights
    for _, slot, mask in case.slots():
        m = mask[order]
        positives = float((w[m] * labels[m]).sum())
        expected = average_precision(scores[m], labels[m], w[m])
        if positives == 0:
            assert sums[slot] == 0
        else:
            assert abs(sums[slot] / positives - expected) <= 1e-12


def test_precision_kernel_partitions_add_up():
    y, p, groups, _ = _data(n=500, seed=3)
    order = np.argsort(p, kind="stable")
    scores, labels = p[order], y[order].astype(np.uint8)
    codes = pd.factorize(groups["site"])[0][order][None, :].astype(np.int64)
    sizes = np.array([4], np.int64)
    none = np.empty(0, np.int64)
    whole = precision.precision_sums(scores, labels, codes, sizes, none, none)
    cut = int(np.searchsorted(scores, 0.5, "right"))  # at a tie-block boundary
    slot = np.concatenate([codes[0, cut:], np.full(len(scores) - cut, 4)])
    above_pos = np.bincount(slot, weights=np.tile(labels[cut:], 2), minlength=5).astype(np.int64)
    above_neg = np.bincount(slot, weights=np.tile(1 - labels[cut:], 2), minlength=5).astype(np.int64)
    low = precision.precision_sums(scores[:cut], labels[:cut], np.ascontiguousarray(codes[:, :cut]), sizes,
                                   above_pos, above_neg)
    high = precision.precision_sums(scores[cut:], labels[cut:], np.ascontiguousarray(codes[:, cut:]), sizes,
                                    none, none)
    assert_close(low + high, whole)


def test_default_columns_unchanged_and_oracle_equal():
    y, p, groups, _ = _data(n=800, seed=4)
    fast, oracle = both("evaluate", y, p, groups)
    assert_same(fast, oracle)
    extended = _quiet(fm.evaluate, y, p, groups, metrics=ALL)
    default = fast.value
    assert list(extended.by_group.columns) == [*default.by_group.columns[:-2], *EXTRA_COLUMNS, "skipped",
                                               "small_group"]
    assert list(extended.summary.columns) == [*default.summary.columns, "ap-gap", "brier-gap", "dp", "fpr-gap",
                                              "fnr-gap"]
    assert_close(extended.by_group[default.by_group.columns[:-2]], default.by_group.iloc[:, :-2])
    assert_close(extended.summary[default.summary.columns], default.summary)
    assert default.metadata["metrics"] == [] and extended.metadata["metrics"] == ALL


def test_bad_metrics_raise():
    y, p, groups, _ = _data(n=200)
    with pytest.raises(ValueError, match="metrics='auprc'.*'ap'"):
        fm.evaluate(y, p, groups, metrics=["auprc"])
    with pytest.raises(ValueError, match="metrics must be a list"):
        fm.evaluate(y, p, groups, metrics=3)


def test_bootstrap_permutations_and_pairwise():
    y, p, groups, _ = _data(n=1500, seed=5)
    report = _quiet(fm.evaluate, y, p, groups, metrics=ALL, n_boot=30, n_permutations=30, random_state=0)
    for column in ("ap-gap", "brier-gap", "dp", "fpr-gap", "fnr-gap"):
        lo, hi = report.ci["summary"][f"{column}_lo"], report.ci["summary"][f"{column}_hi"]
        assert (lo <= hi).all() and report.p_values[column].between(0, 1).all()
    for key in EXTRA_COLUMNS:
        lo, hi = report.ci["by_group"][f"{key}_lo"], report.ci["by_group"][f"{key}_hi"]
        assert ((lo <= report.by_group[key] + 0.05) & (report.by_group[key] - 0.05 <= hi)).all(), key
    pairs = report.pairwise("ap")
    assert {"difference_lo", "difference_hi", "p_value"} <= set(pairs.columns)
    site = report.by_group.loc["site", "ap"]
    assert abs(pairs.loc[("site", "a", "b"), "difference"] - (site["a"] - site["b"])) <= 1e-12
    # The default columns' intervals do not move when opt-in metrics are added.
    plain = _quiet(fm.evaluate, y, p, groups, n_boot=30, random_state=0)
    assert_close(report.ci["by_group"][plain.ci["by_group"].columns], plain.ci["by_group"])


def test_bootstrap_resample_equals_weighted_evaluate():
    # With unit weights the weighted kernels give the unweighted numbers, so a resample (draw counts as
    # weights) computes the same AP and Brier as sklearn on the drawn samples repeated.
    y, p, groups, _ = _data(n=600, seed=6)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(len(y), np.full(len(y), 1 / len(y))).astype(np.float64)
    report = fm.evaluate(y, p, groups, metrics=["ap", "brier"], sample_weight=counts)
    repeated = np.repeat(np.arange(len(y)), counts.astype(int))
    again = fm.evaluate(y[repeated], p[repeated], groups.iloc[repeated].reset_index(drop=True),
                        metrics=["ap", "brier"])
    assert_close(report.by_group[["ap", "brier"]], again.by_group[["ap", "brier"]])


def test_evaluate_tasks_with_metrics_equals_evaluate():
    rng = np.random.default_rng(7)
    n = 900
    labels = pd.DataFrame({t: rng.integers(0, 2, n) for t in ("x", "z")})
    scores = pd.DataFrame({t: np.round(rng.random(n), 2) for t in ("x", "z")})
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n)})
    report = fm.evaluate_tasks(labels, scores, groups, metrics=["ap", "selection_rate"], n_jobs=2)
    for task in ("x", "z"):
        single = fm.evaluate(labels[task], scores[task], groups, metrics=["ap", "selection_rate"])
        assert_close(report.by_group.loc[task], single.by_group)
        assert_close(report.summary.loc[task], single.summary)


def test_dask_backend_matches_evaluate():
    dd = pytest.importorskip("dask.dataframe")
    import fairmedfm_fast.dask as fmd

    y, p, groups, _ = _data(n=3000, seed=8)
    frame = pd.concat([groups, pd.DataFrame({"y": y, "p": p})], axis=1)
    for threshold in (None, 0.4):
        memory = _quiet(fm.evaluate, y, p, groups, metrics=ALL, threshold=threshold)
        distributed = _quiet(fmd.evaluate, dd.from_pandas(frame, npartitions=3), label="y", score="p",
                             sensitive=["site", "sex"], metrics=ALL, threshold=threshold, npartitions=4)
        assert_close(distributed.by_group, memory.by_group)
        assert_close(distributed.summary, memory.summary)
    with pytest.raises(ValueError, match="metrics="):
        fmd.evaluate(dd.from_pandas(frame, npartitions=2), label="y", score="p", sensitive="sex", metrics=["x"])


# --- report.pairwise() intervals and p-values for segmentation --------------------------------------

def test_segmentation_pairwise_intervals_follow_the_bootstrap():
    rng = np.random.default_rng(0)
    n = 400
    site = rng.choice(["a", "b", "c", "d"], n)
    site[:3] = "e"  # skipped by min_group_size: left out of the pairs and of the replicates
    report = _quiet(fm.evaluate_segmentation, {"site": site, "sex": rng.choice(["F", "M"], n)},
                    dice=rng.random(n), n_boot=60, n_permutations=40, random_state=1, min_group_size=5)
    pairs = report.pairwise()
    assert {"difference_lo", "difference_hi", "p_value"} <= set(pairs.columns)
    assert "e" not in pairs.loc["site"].index.get_level_values("group")
    means = report.by_group.loc["site", "mean_dice"]
    assert abs(pairs.loc[("site", "a", "c"), "difference"] - (means["a"] - means["c"])) <= 1e-12
    # Each kept column is its group's resampled mean: its percentiles are the group's interval.
    draws = report.replicates[("boot", "site", "mean_dice")]
    bounds = np.percentile(draws, [2.5, 97.5], axis=0).T
    expected = report.ci["by_group"].loc["site"].loc[["a", "b", "c", "d"], ["mean_dice_lo", "mean_dice_hi"]]
    assert_close(bounds, expected.to_numpy())
    p = pairs["p_value"].dropna()
    assert ((p > 0) & (p <= 1)).all()


def test_segmentation_pairwise_intervals_of_surface_metrics():
    rng = np.random.default_rng(1)
    n = 40
    true = [np.zeros((12, 12), bool) for _ in range(n)]
    pred = [np.zeros((12, 12), bool) for _ in range(n)]
    for i in range(n):
        a, b = rng.integers(2, 6, 2)
        true[i][a:a + 5, b:b + 5] = True
        c, d = np.clip([a, b] + rng.integers(-2, 3, 2), 0, 7)
        pred[i][c:c + 5, d:d + 5] = True
    report = _quiet(fm.evaluate_segmentation, {"sex": rng.choice(["F", "M"], n)}, pred_masks=pred,
                    true_masks=true, metrics=["dice", "hd95"], n_boot=30, n_permutations=30, random_state=0)
    metric = next(c for c in report.by_group.columns if "hd95" in c)
    pairs = report.pairwise(metric)
    assert {"difference_lo", "difference_hi", "p_value"} <= set(pairs.columns)
    off = pairs.loc[("sex", "F", "M")]
    assert off["difference_lo"] <= off["difference_hi"]
