"""Pictures: the ROC-points kernel against scikit-learn and a brute-force count, the curves against
the report's own numbers, and the structure of every figure kind rendered with real matplotlib."""
import math
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from roc_reference import roc_points
from sklearn.metrics import roc_curve

import fairmedfm_fast
from fairmedfm_fast._inputs import groups as _groups
from fairmedfm_fast._report import pictures as _pictures
from fairmedfm_fast.report import FairnessReport, group_frame, summary_frame

pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

METRICS = ("auc", "acc@best_f1", "bce", "ece", "tpr@best_f1", "tnr@best_f1")


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------

def _classification_inputs(n=600, seed=3):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(int)
    # Rounded scores: many ties, within and across groups.
    scores = np.round(np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1), 2)
    sex = rng.choice(["F", "M"], n).astype(object)
    sex[rng.random(n) < 0.05] = None  # missing values: left out of "sex" only
    site = rng.choice(["a", "b", "<c>"], n).astype(object)
    site[:12] = "tiny"  # one group with a single label: skipped
    y[:12] = 0
    return y, scores, {"sex": sex, "site": site}


@pytest.fixture(scope="module")
def report():
    y, scores, features = _classification_inputs()
    return fairmedfm_fast.evaluate(y, scores, features)


def _valid_groups(report, attribute):
    table = report.by_group.loc[attribute]
    return [str(g) for g in table.index[table["skipped"].isna().to_numpy()]]


def _seg_report(n=300, seed=5):
    rng = np.random.default_rng(seed)
    scanner = rng.choice(["GE", "Siemens", "Philips"], n)
    age = rng.choice(["young", "old"], n).astype(object)
    age[:7] = None
    dice = np.clip(rng.beta(8, 2, n) - 0.1 * (scanner == "GE"), 0, 1)
    dice[7:10] = np.nan
    attributes = _groups.encode_attributes({"scanner": scanner, "age": age}, n)
    summaries, rows = {}, []
    for attribute in attributes:
        keep = (attribute.codes >= 0) & ~np.isnan(dice)
        means = [float(dice[keep & (attribute.codes == g)].mean()) for g in range(attribute.n_groups)]
        summaries[attribute.name] = {"n": int(keep.sum()), "n_groups": attribute.n_groups,
                                     "mean_dice": float(dice[keep].mean())}
        rows += [{"attribute": attribute.name, "group": name, "n": int((keep & (attribute.codes == g)).sum()),
                  "mean_dice": means[g], "skipped": None} for g, name in enumerate(attribute.groups)]
    made = FairnessReport("seg", summary_frame(summaries), group_frame(rows),
                          {"mean_dice": float(np.nanmean(dice)), "n": n - 3}, {},
                          ["3 samples have a NaN Dice score and were left out"], {}, dice_data=(dice, attributes))
    return made, dice, attributes


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------

def _brute_points(scores, labels):
    """(thresholds, fps, tps) by counting, for every distinct score, the samples at or above it."""
    distinct = np.unique(scores)[::-1]
    fps = [0] + [int(np.sum((scores >= t) & (labels == 0))) for t in distinct]
    tps = [0] + [int(np.sum((scores >= t) & (labels == 1))) for t in distinct]
    return np.concatenate(([np.inf], distinct.astype(np.float64))), np.array(fps), np.array(tps)


def _run_kernel(scores, labels, codes, n_groups, weights=None, max_points=0):
    order = np.argsort(scores, kind="stable")
    sorted_codes = np.ascontiguousarray(codes[:, order])
    return roc_points(scores[order], labels[order].astype(np.uint8), sorted_codes, np.asarray(n_groups, np.int64),
                      None if weights is None else weights[order], max_points)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), levels=st.integers(1, 12), groups=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       float32=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_roc_points_count_every_distinct_score(n, levels, groups, float32, seed):
    rng = np.random.default_rng(seed)
    scores = (rng.integers(0, levels, n) / levels).astype(np.float32 if float32 else np.float64)
    labels = rng.integers(0, 2, n)
    codes = np.stack([rng.integers(-1, g, n) for g in groups])
    starts, thresholds, fps, tps = _run_kernel(scores, labels, codes, groups)
    slot = 0
    for k, g in enumerate(groups):
        for code in [*range(g), None]:
            members = codes[k] >= 0 if code is None else codes[k] == code
            window = slice(starts[slot], starts[slot + 1])
            expected = _brute_points(scores[members], labels[members])
            np.testing.assert_array_equal(thresholds[window], expected[0])
            np.testing.assert_array_equal(fps[window], expected[1])
            np.testing.assert_array_equal(tps[window], expected[2])
            slot += 1
    assert slot + 1 == len(starts)


def test_roc_points_equal_sklearn_roc_curve():
    rng = np.random.default_rng(11)
    n = 2000
    scores = np.round(rng.random(n), 3)
    labels = (rng.random(n) < scores).astype(np.uint8)
    codes = rng.integers(-1, 5, (2, n))
    starts, thresholds, fps, tps = _run_kernel(scores, labels, codes, [5, 5])
    for k in range(2):
        for code in [*range(5), None]:
            slot = k * 6 + (5 if code is None else code)
            members = codes[k] >= 0 if code is None else codes[k] == code
            fpr, tpr, expected_thresholds = roc_curve(labels[members], scores[members], drop_intermediate=False)
            window = slice(starts[slot], starts[slot + 1])
            np.testing.assert_array_equal(fps[window] / fps[window][-1], fpr)
            np.testing.assert_array_equal(tps[window] / tps[window][-1], tpr)
            np.testing.assert_array_equal(thresholds[window], expected_thresholds)


def test_weighted_roc_points_equal_sklearn():
    rng = np.random.default_rng(12)
    n = 500
    scores = np.round(rng.random(n), 2)
    labels = (rng.random(n) < scores).astype(np.uint8)
    codes = rng.integers(-1, 3, (1, n))
    weights = rng.integers(0, 4, n).astype(np.float64)  # weight 0 leaves a sample out, as in sklearn
    starts, thresholds, fps, tps = _run_kernel(scores, labels, codes, [3], weights)
    for code in [0, 1, 2, None]:
        slot = 3 if code is None else code
        members = codes[0] >= 0 if code is None else codes[0] == code
        fpr, tpr, expected = roc_curve(labels[members], scores[members], sample_weight=weights[members],
                                       drop_intermediate=False)
        window = slice(starts[slot], starts[slot + 1])
        np.testing.assert_array_equal(thresholds[window], expected)
        np.testing.assert_allclose(fps[window] / fps[window][-1], fpr, rtol=0, atol=1e-15)
        np.testing.assert_allclose(tps[window] / tps[window][-1], tpr, rtol=0, atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), max_points=st.integers(1, 20), seed=st.integers(0, 2**31 - 1))
def test_thinned_roc_points_are_a_bounded_subset(n, max_points, seed):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(n), 3)
    labels = rng.integers(0, 2, n)
    codes = rng.integers(-1, 2, (1, n))
    full = _run_kernel(scores, labels, codes, [2])
    thin = _run_kernel(scores, labels, codes, [2], max_points=max_points)
    for slot in range(3):
        every = {t: (f, p) for t, f, p in zip(*(a[full[0][slot]:full[0][slot + 1]] for a in full[1:]))}
        window = slice(thin[0][slot], thin[0][slot + 1])
        kept = list(zip(thin[1][window], thin[2][window], thin[3][window]))
        assert all(every[t] == (f, p) for t, f, p in kept)  # each kept point is an exact point
        assert [t for t, _, _ in kept] == sorted((t for t, _, _ in kept), reverse=True)
        assert kept[0][0] == np.inf and kept[-1] == (min(every),) + every[min(every)]
        assert len(kept) <= max_points + 2


def test_roc_points_accept_read_only_narrow_codes():
    scores = np.array([0.1, 0.4, 0.4, 0.9])
    labels = np.array([0, 1, 0, 1], np.uint8)
    codes = np.array([[0, 0, 1, -1]], np.int8)
    for array in (scores, labels, codes):
        array.flags.writeable = False
    starts, thresholds, fps, tps = roc_points(scores, labels, codes, np.array([2], np.int64))
    assert starts.tolist() == [0, 3, 5, 8]  # group 0, group 1, the three present samples
    assert thresholds.tolist() == [np.inf, 0.4, 0.1, np.inf, 0.4, np.inf, 0.4, 0.1]
    assert tps.tolist() == [0, 1, 1, 0, 0, 0, 1, 1]
    assert fps.tolist() == [0, 0, 1, 0, 1, 0, 1, 2]


# ---------------------------------------------------------------------------------------------
# Curves against the report
# ---------------------------------------------------------------------------------------------

def test_curves_agree_with_the_report(report):
    y, scores, features = _classification_inputs()
    curves = _pictures.classification_curves(report)
    assert [entry.attribute for entry in curves] == ["sex", "site"]
    for entry in curves:
        assert [curve.name for curve in entry.groups] == _valid_groups(report, entry.attribute)
        present = pd.notna(pd.Series(features[entry.attribute])).to_numpy()
        for curve in [*entry.groups, entry.overall]:
            if curve.name == "all":
                members, expected = present, report._attribute_overall[entry.attribute]
            else:
                members = present & (features[entry.attribute] == curve.name)
                expected = report.by_group.loc[(entry.attribute, curve.name)]
            fpr, tpr, _ = roc_curve(y[members], scores[members], drop_intermediate=False)
            np.testing.assert_array_equal(curve.fpr, fpr)
            np.testing.assert_array_equal(curve.tpr, tpr)
            assert abs(curve.trapezoid_area() - expected["auc"]) <= 1e-12
            assert abs(curve.auc - expected["auc"]) <= 1e-12
            # The dot: predicted positive above the attribute's best-F1 threshold, as the report counts.
            assert curve.operating_point[0] == pytest.approx(1 - expected["tnr@best_f1"], abs=1e-12)
            assert curve.operating_point[1] == pytest.approx(expected["tpr@best_f1"], abs=1e-12)
            # The reliability points are the ECE bins: their weighted gap is the report's ECE.
            weights = curve.bin_weight / curve.bin_weight.sum()
            assert abs(np.sum(weights * np.abs(curve.bin_score - curve.bin_positive)) - expected["ece"]) <= 1e-12
            assert curve.bin_weight.sum() == members.sum() and len(curve.bin_weight) <= 10


def test_curves_of_a_weighted_report_with_a_fixed_threshold():
    y, scores, features = _classification_inputs(n=300, seed=8)
    weights = np.random.default_rng(1).integers(0, 3, len(y))
    made = fairmedfm_fast.evaluate(y, scores, features, sample_weight=weights, threshold=0.42)
    for entry in _pictures.classification_curves(made):
        assert entry.threshold == 0.42
        for curve in entry.groups:
            expected = made.by_group.loc[(entry.attribute, curve.name)]
            members = features[entry.attribute] == curve.name
            fpr, tpr, _ = roc_curve(y[members], scores[members], sample_weight=weights[members],
                                    drop_intermediate=False)
            np.testing.assert_allclose(curve.fpr, fpr, rtol=0, atol=1e-15)
            assert abs(curve.trapezoid_area() - expected["auc"]) <= 1e-12
            assert curve.auc == expected["auc"]
            assert curve.operating_point == pytest.approx((1 - expected["tnr@best_f1"], expected["tpr@best_f1"]),
                                                          abs=1e-12)
            weight = curve.bin_weight / curve.bin_weight.sum()
            assert abs(np.sum(weight * np.abs(curve.bin_score - curve.bin_positive)) - expected["ece"]) <= 1e-12
    assert "fixed threshold 0.42" in made.plot("roc").get_axes()[0].get_title()


def test_large_groups_draw_thinned_curves_with_exact_numbers(report):
    entry = _pictures.classification_curves(report, "site", max_points=20)[0]
    for curve in entry.groups:
        assert len(curve.fpr) <= 22 and curve.fpr[-1] == curve.tpr[-1] == 1.0
        assert curve.auc == report.by_group.loc[("site", curve.name), "auc"]


def test_reliability_bins_are_each_groups_own_equal_width_bins(report):
    _, scores, features = _classification_inputs()
    y = _classification_inputs()[0]
    entry = _pictures.classification_curves(report, "sex")[0]
    for curve in entry.groups:
        s = scores[features["sex"] == curve.name]
        labels = y[features["sex"] == curve.name]
        bins = pd.cut(s, 10)  # the ECE definition: pandas.cut on the group's own range
        frame = pd.DataFrame({"s": s, "y": labels, "b": bins}).groupby("b", observed=True)
        np.testing.assert_allclose(curve.bin_score, frame["s"].mean().to_numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(curve.bin_positive, frame["y"].mean().to_numpy(), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(curve.bin_weight, frame.size().to_numpy())


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

def _lines(ax, prefix):
    return [line for line in ax.get_lines() if (line.get_gid() or "").startswith(prefix)]


def _legend_texts(ax):
    legend = ax.get_legend()
    return [text.get_text() for text in legend.get_texts()] if legend else []


def test_roc_figure(report):
    figure = report.plot("roc")
    assert isinstance(figure, Figure)
    axes = figure.get_axes()
    assert len(axes) == 2
    for ax, attribute in zip(axes, ["sex", "site"]):
        valid = _valid_groups(report, attribute)
        assert [line.get_gid() for line in _lines(ax, "roc:")] == [f"roc:{g}" for g in valid]
        assert len(_lines(ax, "roc-all:")) == 1
        assert len(_lines(ax, "operating:")) == len(valid) + 1
        assert ax.get_xlabel() == "False positive rate" and ax.get_ylabel() == "True positive rate"
        assert ax.get_title().startswith(attribute)
        texts = _legend_texts(ax)
        assert len(texts) == len(valid) + 1
        for group, text in zip(valid, texts):
            auc = report.by_group.loc[(attribute, group), "auc"]
            assert text.startswith(f"{group} (n=") and f"AUC {auc:.3f}" in text
        for group in valid:  # the dot sits on the group's curve, at the report's TPR and FPR
            dot = _lines(ax, f"operating:{group}")[0]
            row = report.by_group.loc[(attribute, group)]
            assert dot.get_xdata()[0] == pytest.approx(1 - row["tnr@best_f1"], abs=1e-12)
            assert dot.get_ydata()[0] == pytest.approx(row["tpr@best_f1"], abs=1e-12)
    assert "tiny" not in " ".join(_legend_texts(axes[1]))  # the skipped group has no curve
    figure.savefig(__import__("io").BytesIO(), format="png")  # renders with Agg


def test_reliability_figure(report):
    figure = report.plot(kind="reliability", attributes=["site"])
    (ax,) = figure.get_axes()
    valid = _valid_groups(report, "site")
    lines = _lines(ax, "reliability:")
    assert [line.get_gid() for line in lines] == [f"reliability:{g}" for g in valid]
    curves = {c.name: c for c in _pictures.classification_curves(report, "site")[0].groups}
    for line in lines:
        curve = curves[line.get_gid().split(":", 1)[1]]
        np.testing.assert_array_equal(line.get_xdata(), curve.bin_score)
        np.testing.assert_array_equal(line.get_ydata(), curve.bin_positive)
    assert ax.get_xlabel() == "Mean score in bin" and ax.get_ylabel() == "Fraction positive in bin"
    texts = _legend_texts(ax)
    assert len(texts) == len(valid) + 1 and all("ECE" in text for text in texts)
    assert f"{report.by_group.loc[('site', valid[0]), 'ece']:.3f}" in texts[0]


def _bar_heights(ax):
    containers = [c for c in ax.containers if hasattr(c, "patches")]
    return [patch.get_height() for c in containers for patch in c.patches]


def test_bars_figure(report):
    figure = report.plot("bars")
    axes = figure.get_axes()
    assert len(axes) == 2 * len(METRICS)
    for r, attribute in enumerate(["sex", "site"]):
        valid = _valid_groups(report, attribute)
        for c, metric in enumerate(METRICS):
            ax = axes[r * len(METRICS) + c]
            expected = report.by_group.loc[[(attribute, g) for g in valid], metric].to_numpy()
            if metric == "auc":  # dots around the attribute's AUC, not bars from 0
                assert _bar_heights(ax) == []
                np.testing.assert_array_equal([_lines(ax, f"dot:auc:{g}")[0].get_ydata()[0] for g in valid], expected)
            else:
                np.testing.assert_array_equal(_bar_heights(ax), expected)
            assert [t.get_text() for t in ax.get_xticklabels()] == valid
            if r == 0:
                assert ax.get_title() == metric
            if c == 0:
                assert ax.get_ylabel() == attribute
            overall = [line for line in ax.get_lines() if line.get_gid() == "overall"]
            assert overall[0].get_ydata()[0] == report._attribute_overall[attribute][metric]
            assert _interval_ends(ax, metric) is None


def _interval_ends(ax, metric):
    found = [c for c in ax.collections if c.get_gid() == f"interval:{metric}"]
    if not found:
        return None
    segments = found[0].get_segments()
    return [seg[0][1] for seg in segments], [seg[1][1] for seg in segments]


def test_bars_draw_the_bootstrap_intervals():
    y, scores, features = _classification_inputs(n=300, seed=4)
    made = fairmedfm_fast.evaluate(y, scores, features, n_boot=40, random_state=0)
    figure = made.plot("bars", attributes="sex")
    bounds = made.ci["by_group"].loc["sex"]
    for metric, ax in zip(METRICS, figure.get_axes()):
        low, high = _interval_ends(ax, metric)
        np.testing.assert_allclose(low, bounds[f"{metric}_lo"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(high, bounds[f"{metric}_hi"], rtol=0, atol=1e-12)
    assert "95% bootstrap intervals" in figure.get_suptitle()


def test_bars_read_intervals_from_a_table(report, monkeypatch):
    ci = report.by_group[["auc"]].copy()
    ci["auc_lo"], ci["auc_hi"] = ci["auc"] - 0.05, ci["auc"] + 0.02
    monkeypatch.setattr(report, "ci", ci[["auc_lo", "auc_hi"]])
    axes = report.plot("bars", attributes="sex").get_axes()
    low, high = _interval_ends(axes[METRICS.index("auc")], "auc")
    expected = report.by_group.loc["sex", "auc"].to_numpy()
    np.testing.assert_allclose(low, expected - 0.05, rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, expected + 0.02, rtol=0, atol=1e-12)
    assert _interval_ends(axes[METRICS.index("ece")], "ece") is None  # no interval columns for ece


def test_dice_figure():
    seg, dice, attributes = _seg_report()
    figure = seg.plot("dice")
    axes = figure.get_axes()
    assert len(axes) == 2
    for ax, attribute in zip(axes, attributes):
        boxes = [patch for patch in ax.patches if (patch.get_gid() or "").startswith("dice:")]
        assert [box.get_gid() for box in boxes] == [f"dice:{g}" for g in attribute.groups]
        means = _lines(ax, "dice-mean")[0].get_ydata()
        expected = seg.by_group.loc[attribute.name, "mean_dice"].to_numpy()
        np.testing.assert_allclose(means, expected, rtol=0, atol=1e-12)
        labels = [t.get_text() for t in ax.get_xticklabels()]
        counts = seg.by_group.loc[attribute.name, "n"].tolist()
        assert labels == [f"{g}\n(n={n})" for g, n in zip(attribute.groups, counts)]
        assert ax.get_ylabel() == "Dice" and ax.get_title() == attribute.name
        assert _legend_texts(ax) == ["group mean"]
    bars = seg.plot("bars").get_axes()
    assert len(bars) == 2 and bars[0].get_title() == "mean_dice"


def test_dice_from_evaluate_segmentation():
    try:
        evaluate_segmentation = fairmedfm_fast.evaluate_segmentation
    except (AttributeError, ImportError):
        pytest.skip("fairmedfm_fast.evaluate_segmentation is not on this branch yet")
    rng = np.random.default_rng(2)
    seg = evaluate_segmentation({"scanner": rng.choice(["A", "B"], 50)}, dice=rng.random(50))
    if getattr(seg, "_dice_data", None) is None:
        with pytest.raises(ValueError, match="keeps none"):
            seg.plot("dice")
    else:
        assert len(_lines(seg.plot("dice").get_axes()[0], "dice-mean")[0].get_ydata()) == 2


def test_odd_names_and_attributes_without_evaluable_groups_render():
    rng = np.random.default_rng(6)
    n = 120
    y = rng.integers(0, 2, n)
    scores = rng.random(n)
    odd = rng.choice([r"$\notacommand{x}$", "_hidden", "50$"], n)
    flat = np.where(y == 1, "all positive", "all negative")  # no group has both labels
    made = fairmedfm_fast.evaluate(y, scores, {"odd": odd, "flat": flat})
    figures = {kind: made.plot(kind) for kind in ("roc", "reliability", "bars")}
    for figure in figures.values():
        figure.savefig(__import__("io").BytesIO(), format="png")  # mathtext would fail here
    odd_ax, flat_ax = figures["roc"].get_axes()
    texts = _legend_texts(odd_ax)
    assert len(texts) == 4 and any(text.startswith(" _hidden") for text in texts)
    assert any(text.startswith(r"\$\notacommand{x}\$") for text in texts)
    assert _lines(flat_ax, "roc:") == [] and len(_lines(flat_ax, "roc-all:")) == 1
    assert any("no group has both labels" in text.get_text() for text in flat_ax.texts)
    bars_flat = figures["bars"].get_axes()[len(METRICS):]
    assert all(any("no evaluable group" in t.get_text() for t in ax.texts) for ax in bars_flat)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

def test_bad_kind_lists_the_kinds(report):
    for bad in ("pie", None, 3):
        with pytest.raises(ValueError, match=r"'roc', 'reliability', 'bars', 'dice'"):
            report.plot(bad)


def test_kind_must_suit_the_task(report):
    seg = _seg_report()[0]
    with pytest.raises(ValueError, match="segmentation report"):
        report.plot("dice")
    with pytest.raises(ValueError, match="classification report"):
        seg.plot("roc")


def test_unknown_attribute(report):
    with pytest.raises(ValueError, match=r"\['age'\].*\['sex', 'site'\]"):
        report.plot("roc", attributes="age")
    with pytest.raises(ValueError, match=r"\['age'\]"):
        report.plot("bars", attributes=["sex", "age"])


def test_report_without_samples(report):
    bare = FairnessReport("cls", report.summary, report.by_group, report.overall, report._attribute_overall,
                          report.warnings, report.metadata)
    with pytest.raises(ValueError, match="kind='bars'"):
        bare.plot("roc")
    assert len(bare.plot("bars").get_axes()) == 2 * len(METRICS)


def test_missing_matplotlib_names_the_install(report, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    # The package is installed from a clone, not the index: the hint names what pip can install.
    with pytest.raises(ImportError, match=r'pip install matplotlib \(or pip install "\.\[plot\]" in a clone'):
        report.plot("roc")
    with pytest.raises(ImportError, match=r"pip install matplotlib"):
        report.to_html()
    assert "<table" in report.to_html(figures=False)


def test_plot_leaves_the_inputs_alone():
    y, scores, features = _classification_inputs(n=200, seed=9)
    copies = (y.copy(), scores.copy(), {k: v.copy() for k, v in features.items()})
    made = fairmedfm_fast.evaluate(y, scores, features)
    made.plot("roc")
    made.plot("reliability")
    np.testing.assert_array_equal(y, copies[0])
    np.testing.assert_array_equal(scores, copies[1])
    for key, values in features.items():
        assert list(values) == list(copies[2][key])
    assert math.isfinite(made.summary.loc["sex", "auc-gap"])


def test_forest_plot_one_panel_per_metric_with_every_group_and_its_interval():
    rng = np.random.default_rng(12)
    n = 1500
    y = (rng.random(n) < 0.3).astype(int)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.5 * y)))
    site = rng.choice(["a", "b", "c"], n).astype(object)
    site[:15] = "tiny"
    report = fairmedfm_fast.evaluate(y, scores, {"sex": rng.choice(["F", "M"], n), "site": site}, n_boot=20,
                                     random_state=0)
    figure = report.plot("forest")
    metrics = ["auc", "acc@best_f1", "bce", "ece", "tpr@best_f1", "tnr@best_f1"]
    assert [ax.get_title() for ax in figure.axes] == metrics
    labels = [label.get_text().strip() for label in figure.axes[0].get_yticklabels()]
    assert labels == ["sex", "F", "M", "site", "a", "b", "c", "tiny"]
    for ax, metric in zip(figure.axes, metrics):
        for attribute in ("sex", "site"):
            (points,) = [c for c in ax.collections if c.get_gid() == f"forest:{metric}:{attribute}"]
            expected = report.by_group.loc[attribute, metric].to_numpy()
            np.testing.assert_allclose(points.get_offsets()[:, 0], expected)
            hollow = points.get_facecolors()[:, :3].min(axis=1) == 1  # white: a small group
            assert list(hollow) == list(report.by_group.loc[attribute, "small_group"])
    assert report.by_group.loc[("site", "tiny"), "small_group"]


def _pairwise_report(**options):
    rng = np.random.default_rng(11)
    n = 2400
    y = (rng.random(n) < 0.3).astype(np.int8)
    hospital = rng.choice(["hospA", "hospB", "hospC", "hospD"], n)
    age = rng.choice(["0-40", "40-60", "60-80", "80+"], n)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + (1.2 + 0.6 * (hospital == "hospA")) * y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fairmedfm_fast.evaluate(y, scores, {"hospital": hospital, "age": age}, **options)


def _drawn_texts(figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    FigureCanvasAgg(figure)
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    return renderer, [t for t in figure.findobj(Text) if t.get_visible() and t.get_text()]


@pytest.mark.parametrize("options, lo, hi, p", [
    ({"n_boot": 40, "n_permutations": 40, "random_state": 0}, "difference_lo", "difference_hi", "p_value_holm"),
    ({"interval": "analytic"}, "difference_lo_analytic", "difference_hi_analytic", "p_value_analytic_holm"),
])
def test_pairwise_heat_map_cells_hold_intervals_and_p_values_inside_the_figure(options, lo, hi, p):
    report = _pairwise_report(**options)
    table = report.pairwise("auc")
    figure = _pictures.plot_pairwise(report)
    renderer, texts = _drawn_texts(figure)
    cells = [t for t in texts if t.get_text().startswith(("+", "-"))]  # one per cell off the diagonal
    assert len(cells) == 2 * 4 * 3
    for (attribute, group, other), row in table.iterrows():
        if group == other:
            continue
        star = "*" if row[p] <= 0.05 else ""  # the p-value adjusted over every pair (holm, the default)
        expected = f"{row['difference']:+.3f}{star}\n[{row[lo]:+.3f}, {row[hi]:+.3f}]\np={row[p]:.2g}"
        assert expected in [t.get_text() for t in cells], (attribute, group, other, expected)
    bold = [t for t in cells if t.get_fontweight() == "bold"]
    excluded = table[(table[lo] > 0) | (table[hi] < 0)]
    assert len(bold) == len(excluded) > 0  # the bold cells are those whose interval excludes 0
    # Every label within the figure (the bottom labels were clipped: "ospA"), and the figure title
    # clear of the panel titles.
    width, height = figure.bbox.width, figure.bbox.height
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, (text.get_text(), box)
    labels = {t.get_text() for ax in figure.axes for t in ax.get_xticklabels()}
    assert {"hospA", "hospD", "80+"} <= labels
    title = figure._suptitle
    assert ("analytic" in title.get_text()) == ("interval" in options)
    panel_titles = [ax.title for ax in figure.axes if ax.title.get_text()]
    assert [t.get_text() for t in panel_titles] == ["hospital", "age"]
    for panel in panel_titles:
        assert not panel.get_window_extent(renderer).overlaps(title.get_window_extent(renderer))


def test_pairwise_heat_map_without_intervals_holds_the_differences_alone():
    report = _pairwise_report()
    _, texts = _drawn_texts(_pictures.plot_pairwise(report, attributes="hospital"))
    table = report.pairwise("auc").loc["hospital"]
    values = {t.get_text() for t in texts if t.get_text().startswith(("+", "-"))}
    assert values == {f"{d:+.3f}" for (g, o), d in table["difference"].items() if g != o}


def test_pairwise_heat_map_of_many_groups_stays_bounded_with_its_labels_inside():
    rng = np.random.default_rng(2)
    n = 4000
    y = (rng.random(n) < 0.4).astype(np.int8)
    site = np.array([f"site{i:02d}" for i in range(60)])[rng.integers(0, 60, n)]
    report = fairmedfm_fast.evaluate(y, rng.random(n), {"site": site})
    figure = _pictures.plot_pairwise(report)
    assert figure.get_size_inches()[0] <= _pictures.PAIRWISE_SIDE_MAX + 2  # the colour bar beside it
    renderer, texts = _drawn_texts(figure)
    assert not [t for t in texts if t.get_text().startswith(("+", "-"))]  # no numbers in 60 x 60 cells
    for text in texts:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= figure.bbox.width and box.y1 <= figure.bbox.height


def test_comparison_forest_ranks_the_models_with_their_paired_intervals():
    rng = np.random.default_rng(13)
    n = 2000
    y = rng.integers(0, 2, n)
    hard = rng.normal(size=n)
    site = rng.choice(["a", "b"], n).astype(object)
    site[:3] = "tiny"  # a small group: it defines the worst AUC of "noisy" below
    scores = {name: 1 / (1 + np.exp(-(strength * y + hard + rng.normal(size=n))))
              for name, strength in (("weak", 0.6), ("strong", 2.0), ("noisy", 1.9))}
    y[:3], scores["noisy"][:3] = [0, 1, 0], [0.99, 0.01, 0.99]
    comparison = fairmedfm_fast.compare_models(y, scores, {"site": site}, n_boot=60, random_state=0,
                                               p_adjust=None, progress=False)
    board = comparison.leaderboard("worst-auc")
    figure = comparison.plot_forest("worst-auc")
    assert isinstance(figure, Figure) and len(figure.axes) == 1
    ax = figure.axes[0]
    assert [label.get_text() for label in ax.get_yticklabels()] == list(board.index)  # best on top
    (points,) = [c for c in ax.collections if c.get_gid() == "comparison:worst-auc:site"]
    offsets = points.get_offsets()
    np.testing.assert_allclose(offsets[:, 0], board["value"])
    assert list(offsets[:, 1]) == [2, 1, 0]
    (lines,) = [c for c in ax.collections if c.get_gid() == "comparison-interval:worst-auc:site"]
    ends = np.array([segment[:, 0] for segment in lines.get_segments()])
    np.testing.assert_allclose(ends, board[["ci_low", "ci_high"]].to_numpy())
    best = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(best) == 1 and best[0].get_xdata()[0] == board["value"].iloc[0]
    hollow = points.get_facecolors()[:, :3].min(axis=1) == 1
    assert list(hollow) == list(board["small_group"]) and board.loc["noisy", "small_group"]
    assert "hollow: small group" in figure._suptitle.get_text()
    assert comparison.plot_forest("auc-gap").axes[0].get_title() == "auc-gap of site"
    with pytest.raises(ValueError, match="not a summary column"):
        comparison.plot_forest("auc")
