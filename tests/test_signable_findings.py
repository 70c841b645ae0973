"""Findings a reviewer can sign (issue 41): significance adjusted by default (Holm over the report's gap
tests; the pairwise differences a family of their own), one rule for small groups (never the headline,
never significant, no zero-width interval), and words that follow the numbers (a finding is significant
only when its adjusted test and its interval agree)."""
import inspect
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast import cli
from fairmedfm_fast._engine import resample as _resample
from fairmedfm_fast._report import page as _page
from fairmedfm_fast._statistics import findings as _findings


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _holm(p):
    """Holm (1979), step by step (as tests/test_trust.py's reference)."""
    order = sorted(range(len(p)), key=lambda i: (p[i], i))
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


# ---------------------------------------------------------------------------------------------
# Holm by default
# ---------------------------------------------------------------------------------------------

def test_holm_is_the_default_of_every_entry_point():
    from fairmedfm_fast import dask as fm_dask

    for function in (fm.evaluate, fm.FairnessAccumulator.result, fm.evaluate_segmentation, fm_dask.evaluate):
        assert inspect.signature(function).parameters["p_adjust"].default == "holm", function
    # evaluate_tasks passes its options to evaluate
    rng = np.random.default_rng(0)
    y = (rng.random((400, 2)) < 0.4).astype(int)
    tasks = _quiet(fm.evaluate_tasks, y, rng.random((400, 2)), {"sex": rng.choice(["F", "M"], 400)},
                   n_permutations=20, random_state=0)
    assert "auc-gap_holm" in tasks.p_values.columns and tasks.metadata["p_adjust"] == "holm"


def test_the_command_line_adjusts_by_default_and_spells_none(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 300
    pd.DataFrame({"label": rng.integers(0, 2, n), "prob": rng.random(n), "sex": rng.choice(["F", "M"], n)}).to_csv(
        tmp_path / "t.csv", index=False)
    argv = ["score", str(tmp_path / "t.csv"), "--sensitive", "sex", "--permutations", "20", "--seed", "0"]
    printed = {}
    for extra in ([], ["--p-adjust", "none"], ["--p-adjust", "bonferroni"]):
        capsys.readouterr()
        assert cli.main([*argv, *extra]) is None
        printed[" ".join(extra)] = json.loads(capsys.readouterr().out)["sex"]["p_values"]
    assert "auc-gap_holm" in printed[""]
    assert not any(key.endswith(("_holm", "_bonferroni")) for key in printed["--p-adjust none"])
    assert "auc-gap_bonferroni" in printed["--p-adjust bonferroni"]
    assert printed[""]["auc-gap"] == printed["--p-adjust none"]["auc-gap"]  # the raw p-values unchanged


def _null_data(seed, n=1500):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.5 * y)))
    attributes = {"a": rng.choice(["x", "y"], n), "b": rng.choice(["p", "q", "r"], n),
                  "c": rng.choice(["s", "t", "u", "v"], n)}
    return y, scores, attributes


def test_one_family_of_every_attributes_gaps_and_significance_from_the_adjusted_values():
    y, scores, attributes = _null_data(2)
    report = fm.evaluate(y, scores, attributes, n_permutations=399, random_state=0)
    raw = _findings.raw_p_values(report.p_values, "holm").to_numpy().ravel()
    expected = _holm(list(raw))
    np.testing.assert_allclose(report.p_values[[f"{c}_holm" for c in _resample.GAP_COLUMNS]].to_numpy().ravel(),
                               expected, atol=1e-15)
    tested = report.gaps.drop(index="worst-auc", level="column")
    assert len(tested) == 18
    for (attribute, column), row in tested.iterrows():
        assert row["p_adjusted"] == report.p_values.loc[attribute, f"{column}_holm"]
        assert row["test_significant"] == (row["p_adjusted"] <= 0.05)
        assert row["significant"] == row["test_significant"]  # no interval: the test alone decides
    plain = fm.evaluate(y, scores, attributes, n_permutations=399, random_state=0, p_adjust=None)
    pd.testing.assert_frame_equal(plain.p_values, report.p_values[list(_resample.GAP_COLUMNS)])
    for frame in (plain.summary, plain.by_group):  # fairmedfm's values never change
        pd.testing.assert_frame_equal(frame, (report.summary if frame is plain.summary else report.by_group))


def test_too_few_permutations_leave_significance_undecided_and_the_page_says_how_many():
    y, scores, attributes = _null_data(3, 800)
    with pytest.warns(UserWarning, match="n_permutations=200 is too few.*18 tests.*n_permutations=359"):
        report = fm.evaluate(y, scores, attributes, n_permutations=200, random_state=0)
    assert report.gaps["significant"].isna().all()
    page = report.to_html(figures=False)
    assert "n_permutations=200 is too few" in page and "n_permutations=359 or more would be needed" in page
    assert "holm-adjusted over the report&#x27;s 18 gap tests" in page or "holm-adjusted over the report's 18" in page


def test_pairwise_p_values_are_a_family_of_their_own():
    y, scores, attributes = _null_data(4, 1200)
    report = fm.evaluate(y, scores, attributes, n_permutations=100, random_state=0, n_boot=30)
    frame = report.pairwise("auc")
    assert "p_value_holm" in frame.columns
    pairs = {}
    for (attribute, group, other), row in frame.iterrows():
        if group != other:
            pairs.setdefault((attribute, *sorted((group, other))), row["p_value"])
        else:
            assert np.isnan(row["p_value_holm"])  # a group against itself is not tested
    assert len(pairs) == 1 + 3 + 6
    expected = dict(zip(pairs, _holm(list(pairs.values()))))
    for (attribute, group, other), row in frame.iterrows():
        if group != other:
            assert row["p_value_holm"] == pytest.approx(expected[(attribute, *sorted((group, other)))], abs=1e-15)


# ---------------------------------------------------------------------------------------------
# Small groups: the scenario
# ---------------------------------------------------------------------------------------------

def _scenario(seed=0, n=5000):
    """Two hospitals whose AUCs differ (about 0.87 and 0.80) and a rural clinic of 3 samples (1 positive)
    whose AUC is 0."""
    rng = np.random.default_rng(seed)
    site = rng.choice(["hospital_A", "hospital_B"], n).astype(object)
    y = (rng.random(n) < 0.3).astype(int)
    shift = np.where(site == "hospital_A", 1.6, 1.1)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + shift * y)))
    site[:3] = "rural_clinic"
    y[:3] = [1, 0, 0]
    scores[:3] = [0.1, 0.9, 0.8]
    return y, scores, site


@pytest.fixture(scope="module")
def scenario():
    y, scores, site = _scenario()
    return _quiet(fm.evaluate, y, scores, {"site": site}, n_boot=500, n_permutations=500, random_state=0)


def test_a_three_sample_group_never_writes_the_headline(scenario):
    report = scenario
    gaps = report.gaps.loc["site"]
    assert report.summary.loc["site", "auc-gap"] == gaps.loc["auc-gap", "value_all_groups"]  # fairmedfm's value
    assert gaps.loc["auc-gap", "low_group_all"] == "rural_clinic" and gaps.loc["auc-gap", "small_group"]
    attribute, row = _page.largest_gap(report)
    assert {row["high_group"], row["low_group"]} == {"hospital_A", "hospital_B"}
    page = report.to_html(figures=False)
    headline = re.sub("<[^>]+>", "", re.search(r'<p class="headline">(.*?)</p>', page).group(1))
    assert "rural_clinic" not in headline and "hospital_A" in headline and "hospital_B" in headline
    # listed apart, not estimable, never significant
    for _, gap in gaps.iterrows():
        assert gap["small_group"] and gap["not_estimable"] == "rural_clinic has 1 positive and 2 negatives"
        assert "rural_clinic" not in (gap["high_group"], gap["low_group"])
    assert "not estimable, rural_clinic has 1 positive and 2 negatives" in page
    assert re.search(r"AUC gap [.\d]+ between hospital_\w and rural_clinic: not estimable", page)


def test_a_three_sample_group_has_no_zero_width_interval_anywhere(scenario):
    report = scenario
    assert report.ci["by_group"].loc[("site", "rural_clinic")].isna().all()
    others = report.ci["by_group"].drop(index=("site", "rural_clinic"))
    assert (others.filter(like="_hi").to_numpy() > others.filter(like="_lo").to_numpy()).all()
    assert any("no bootstrap interval for the small group rural_clinic" in w for w in report.warnings)
    frame = report.pairwise("auc")
    rural = frame[[("rural_clinic" in key[1:]) and key[1] != key[2] for key in frame.index]]
    assert len(rural) == 4 and rural["small_group"].all()
    assert rural[["difference_lo", "difference_hi", "p_value_holm"]].isna().all().all()
    kept = frame[~frame["small_group"] & (frame.index.get_level_values(1) != frame.index.get_level_values(2))]
    assert (kept["difference_hi"] > kept["difference_lo"]).all()
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    figure = report.plot("pairwise")
    cells = [t.get_text() for t in figure.findobj(Text) if t.get_text().startswith(("+", "-"))]
    assert len(cells) == 6
    assert sum("small group" in text for text in cells) == 4
    for text in cells:
        if "small group" in text:
            assert "[" not in text and "*" not in text
    page = report.to_html(figures=False)
    assert "[0.000, 0.000]" not in page


def test_every_gap_called_significant_has_an_interval_that_excludes_no_gap(scenario):
    gaps = scenario.gaps
    called = gaps[gaps["significant"].map(lambda v: v is True)]
    assert len(called) >= 1  # the hospitals' AUCs differ
    assert ("site", "auc-gap") in called.index
    for (_, column), row in called.iterrows():
        assert row["interval_excludes"] is True and row["test_significant"] is True
        assert (row["hi"] < 1) if column == "eod" else (row["lo"] > 0)


def test_test_and_interval_that_disagree_are_not_called_significant_and_the_page_says_so():
    row = pd.Series({"lo": 0.0, "hi": 0.01, "p_value": 0.002, "p_adjusted": 0.01, "test_significant": True,
                     "interval_excludes": False, "significant": False})
    words = _page._verdict(row, 0.95)
    assert "disagree" in words and "<b>significant</b>" not in words
    row = row.copy()
    row[["lo", "p_adjusted", "test_significant", "interval_excludes"]] = [0.004, 0.2, False, True]
    assert "disagree" in _page._verdict(row, 0.95)
    # and in a report: the rule, applied to the frame
    y, scores, site = _scenario(1, 3000)
    report = _quiet(fm.evaluate, y, scores, {"site": site}, n_boot=200, n_permutations=300, random_state=1)
    gaps = report.gaps.dropna(subset=["test_significant"])
    for _, gap in gaps.iterrows():
        expected = gap["test_significant"] and gap["interval_excludes"] is not False
        assert gap["significant"] == expected


def test_eod_names_both_the_tpr_and_the_fpr_ranges(scenario):
    page = scenario.to_html(figures=False)
    line = re.sub("<[^>]+>", "", next(item for item in page.split("<li>") if item.startswith("equalized odds")))
    table = scenario.by_group.loc["site"].drop(index="rural_clinic")
    tpr, fpr = table["tpr@best_f1"], 1 - table["tnr@best_f1"]
    assert f"TPR from {tpr.min():.3f} in {tpr.idxmin()} to {tpr.max():.3f} in {tpr.idxmax()}" in line
    assert f"FPR from {fpr.min():.3f} in {fpr.idxmin()} to {fpr.max():.3f} in {fpr.idxmax()}" in line


# ---------------------------------------------------------------------------------------------
# A page that reads at 1280 px
# ---------------------------------------------------------------------------------------------

def smallest_text_px(figure) -> float:
    """The smallest text of ``figure`` in CSS pixels as the page shows it at 1280 px: its size in points
    / 72 x the dpi the page renders it at x displayed width / the PNG's width (the page's content is
    1168 px wide at 1280: body max-width 1200 px less its padding; a wider PNG is scaled down)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from fairmedfm_fast._report.html import PAGE_WIDTH

    width = figure.get_size_inches()[0]
    dpi = min(100, PAGE_WIDTH / width)  # as _figure_html renders it
    png_width = width * dpi
    displayed = min(png_width, PAGE_WIDTH)
    FigureCanvasAgg(figure)
    figure.canvas.draw()
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(t.get_fontsize() / 72 * dpi * displayed / png_width for t in texts)


def _groups_report(n_groups, n_attributes=1, seed=5, **options):
    rng = np.random.default_rng(seed)
    n = 600 * n_groups
    y = (rng.random(n) < 0.4).astype(int)
    features = {f"attribute_{k}": rng.choice([f"site {i} of the network" for i in range(n_groups)], n)
                for k in range(n_attributes)}
    return _quiet(fm.evaluate, y, rng.random(n), features, **options)


@pytest.mark.parametrize("n_groups, n_attributes, options", [
    (3, 1, {"n_boot": 30, "n_permutations": 30, "random_state": 0}),
    (4, 3, {"n_boot": 30, "n_permutations": 30, "random_state": 0}),
    (8, 2, {"interval": "analytic"}),
    (12, 1, {}),
])
def test_heat_map_text_is_at_least_9_px_at_1280(n_groups, n_attributes, options):
    pytest.importorskip("matplotlib")
    import base64
    import struct

    from fairmedfm_fast._report import pictures

    report = _groups_report(n_groups, n_attributes, **options)
    figure = pictures.plot_pairwise(report)
    assert figure.get_size_inches()[0] <= pictures.FIGURE_WIDTH_MAX + 1e-9
    assert smallest_text_px(figure) >= 9
    # the page's PNG is the width the computation assumed (100 dpi)
    page = report.to_html(figures=["pairwise"])
    encoded = re.search(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
    width = struct.unpack(">I", base64.b64decode(encoded)[16:20])[0]
    assert abs(width - figure.get_size_inches()[0] * 100) <= 1


def test_many_groups_move_the_heat_maps_numbers_to_a_table():
    pytest.importorskip("matplotlib")
    from matplotlib.text import Text

    report = _groups_report(20, 1, n_permutations=40, random_state=0)
    figure = report.plot("pairwise")
    assert not [t for t in figure.findobj(Text) if t.get_text().startswith(("+", "-"))]
    page = report.to_html(figures=["pairwise"])
    assert "too many groups for numbers in its cells: the first 200 of 190" not in page
    assert "all 190 pairs" in page
    frame = report.pairwise("auc")
    row = frame.iloc[1]
    assert f"{row['difference']:+.4f}" in page or f"{-row['difference']:+.4f}" in page


def test_summary_table_holds_n_and_marks_and_the_settings_are_rounded(scenario):
    page = scenario.to_html(figures=False)
    summary = page[page.index("<h2>Summary</h2>"):page.index("<h2>Per group</h2>")]
    assert "<th>n</th>" in summary and f"<td>{int(scenario.summary.loc['site', 'n'])}</td>" in summary
    auc_row = next(row for row in summary.split("<tr>") if "<th>auc-gap</th>" in row)
    assert "small group" in auc_row and "*" in auc_row  # the hospitals' gap is significant
    assert "* significant: the adjusted test and the interval agree" in summary
    samples = page[page.index("<h2>All samples</h2>"):page.index("<section id=\"glossary\">")]
    for key in ("auc@best_f1", "bce@best_f1", "ece@best_f1"):
        assert f"<th>{key}</th>" not in samples
        assert key in scenario.by_group.columns  # fairmedfm's table keeps them
    assert "<th>acc@best_f1</th>" in samples and "<th>auc</th>" in samples
    settings = page[page.index("<h2>Settings</h2>"):]
    assert "{" not in settings and "[]" not in settings and '"' not in settings
    threshold = scenario.metadata["best_f1_threshold"]["site"]
    assert f"site: {threshold:.4g}" in settings and f"{threshold!r}" not in settings
    assert "<th>samples_dropped</th><td class='text'>none</td>" in settings
