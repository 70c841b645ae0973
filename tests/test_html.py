"""The self-contained HTML report: tables, inlined figures, escaped warnings, nothing fetched, and
(where Chromium is installed) a page that a browser opens without console errors."""
import base64
import html
import re
import shutil
import subprocess

import numpy as np
import pytest

import fairmedfm_fast

pytest.importorskip("matplotlib")

IMG = '<img src="data:image/png;base64,'


def _report():
    rng = np.random.default_rng(7)
    n = 400
    y = (rng.random(n) < 0.4).astype(int)
    scores = np.clip(rng.normal(0.4 + 0.25 * y, 0.2), 0, 1)
    age = rng.choice(["<40", "40-60", ">=60"], n).astype(object)
    age[:5] = None
    sex = rng.choice(["F", "M", "X & <script>"], n)
    sex[:10] = "X & <script>"
    y[:10] = 1  # ... and only positives there: a warning naming the group, with markup in it
    sex[10:] = np.where(sex[10:] == "X & <script>", "F", sex[10:])
    return fairmedfm_fast.evaluate(y, scores, {"age": age, "sex": sex})


@pytest.fixture(scope="module")
def report():
    return _report()


@pytest.fixture(scope="module")
def page(report, tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "sub" / "report.html"
    text = report.to_html(path)
    assert path.read_text(encoding="utf-8") == text
    return path, text


def test_page_holds_the_tables(report, page):
    _, text = page
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    # summary, one per attribute per group, all samples, glossary, settings
    assert text.count("<table") == 4 + len(report.summary)
    for attribute, row in report.summary.iterrows():
        assert f"<th>{attribute}</th>" in text
        assert f"{row['auc-gap']:.4f}" in text and f"{row['eod']:.4f}" in text
    for (_, group), row in report.by_group.iterrows():
        assert f"<th>{html.escape(group)}</th>" in text
        assert f"{row['n']}" in text
        if isinstance(row["skipped"], str):
            assert html.escape(row["skipped"]) in text
        else:
            assert f"{row['auc']:.4f}" in text and f"{row['tpr@best_f1']:.4f}" in text
    assert f"{report.overall['auc']:.4f}" in text


def test_page_holds_every_warning_escaped(report, page):
    _, text = page
    assert len(report.warnings) >= 2
    assert any("<script>" in warning for warning in report.warnings)
    for warning in report.warnings:
        assert f"<li>{html.escape(warning)}</li>" in text
    assert "<script" not in text  # the group name never becomes markup


def test_page_inlines_the_figures_and_fetches_nothing(page):
    _, text = page
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) == 4 == text.count(IMG)  # forest, pairwise, roc, reliability
    for encoded in images:
        assert base64.b64decode(encoded).startswith(b"\x89PNG\r\n\x1a\n")
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", text)
    assert "<link" not in text and "@import" not in text and "url(" not in text
    assert "default-src 'none'" in text  # the browser may not load anything either


def test_figure_choice(report):
    assert IMG not in report.to_html(figures=False)
    only = report.to_html(figures=["bars"])
    assert only.count(IMG) == 1 and "Per-group metrics" in only
    with pytest.raises(ValueError, match="'roc', 'reliability', 'bars', 'dice'"):
        report.to_html(figures=["pie"])


def test_a_figure_that_cannot_be_drawn_becomes_a_note(report):
    bare = fairmedfm_fast.FairnessReport("cls", report.summary, report.by_group, report.overall,
                                         report._attribute_overall, report.warnings, report.metadata)
    text = bare.to_html()
    assert text.count(IMG) == 2  # only the bars and the pairwise heat map need no per-sample scores
    assert text.count("keeps none") == 2


def test_page_holds_intervals_and_p_values():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    made = fairmedfm_fast.evaluate(y, rng.random(200), {"sex": rng.choice(["F", "M"], 200)}, n_boot=30,
                                   n_permutations=30, random_state=0)
    text = made.to_html(figures=["bars"])
    assert "Intervals: 95% from 30 bootstrap resamples" in text
    assert text.count("<table") == 5  # each value beside its interval and p-value: no tables of their own
    assert f"[{made.ci['by_group'].loc[('sex', 'F'), 'auc_lo']:.3f}, " in text
    assert f"{made.ci['summary'].loc['sex', 'auc-gap_hi']:.3f}]" in text
    first = made.p_values.iloc[0]
    assert f"<td>{first['auc-gap']:.4f} ({first['auc-gap_holm']:.4f})</td>" in text  # raw (holm-adjusted)


def test_page_holds_analytic_intervals_without_a_bootstrap():
    """interval="analytic" alone: the page shows the DeLong and Wilson intervals and the analytic gap
    interval where the bootstrap's would be (it raised a KeyError on report.ci["summary"] before)."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    made = fairmedfm_fast.evaluate(y, rng.random(300), {"sex": rng.choice(["F", "M"], 300)}, interval="analytic")
    text = made.to_html(figures=["bars"])
    analytic = made.ci["analytic"]
    assert "Intervals: 95% analytic" in text
    assert f"[{analytic['by_group'].loc[('sex', 'F'), 'auc_lo']:.3f}, " in text
    assert f"{analytic['summary'].loc['sex', 'auc-gap_hi']:.3f}]" in text


def test_segmentation_page():
    from test_plots import _seg_report

    seg = _seg_report()[0]
    text = seg.to_html()
    assert text.count(IMG) == 3  # dice, bars, pairwise
    assert "mean_dice" in text and "Distribution of per-sample Dice" in text
    assert "between every pair of groups" in text
    assert "<li>3 samples have a NaN Dice score and were left out</li>" in text


# ---------------------------------------------------------------------------------------------
# A real browser
# ---------------------------------------------------------------------------------------------

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _console_messages(browser, path, profile):
    """Console messages (and uncaught errors) Chromium logs while loading ``path``, and the DOM."""
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--log-level=0", "--v=0",
               "--dump-dom", path.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    messages = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return messages, done.stdout


def test_chromium_opens_the_page_without_console_errors(page, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium binary found (install Debian's chromium to run this test)")
    # The check itself: a broken page must show up.
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><body><p>x</p><script>console.error("checker-sees-this");'
                      "notDefined();</script></body></html>")
    messages, _ = _console_messages(browser, broken, tmp_path / "profile-broken")
    if not messages:
        pytest.skip("this Chromium does not log console messages to stderr; cannot check the page")
    assert any("checker-sees-this" in m for m in messages) and any("notDefined" in m for m in messages)

    path, _ = page
    messages, dom = _console_messages(browser, path, tmp_path / "profile")
    assert messages == []
    assert dom.count("data:image/png;base64,") == 4 and dom.count("<table") == 6


# The page of a report as a reviewer opens it: findings first, nothing wider than its box at 1280 px.
_LAYOUT_CHECK = """<script>
window.addEventListener("load", function () {
  var wide = [], broken = [];
  document.querySelectorAll("*").forEach(function (e) {
    if (e.scrollWidth > e.clientWidth && e.clientWidth > 0)
      wide.push(e.tagName + " " + e.scrollWidth + ">" + e.clientWidth + " " + (e.textContent || "").slice(0, 60));
  });
  document.querySelectorAll("img").forEach(function (i) { if (!(i.complete && i.naturalWidth > 0)) broken.push(i.alt); });
  var findings = document.getElementById("findings");
  var out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify({wide: wide, broken: broken, images: document.images.length,
                                    findings: findings ? findings.innerText : null});
  document.body.appendChild(out);
});
</script>"""


def layout_check(browser, page_text, folder):
    """What Chromium measures of ``page_text`` at 1280 px: elements wider than their box, images that
    did not load, the number of images and the findings' text (a script added to a copy of the page)."""
    import json

    checked = page_text.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';")
    checked = checked.replace("</body>", _LAYOUT_CHECK + "</body>")
    assert "script-src 'unsafe-inline'" in checked and "layout-check" in checked, "the page's head changed"
    path = folder / "checked.html"
    path.write_text(checked, encoding="utf-8")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={folder / 'p'}",
               "--window-size=1280,900", "--virtual-time-budget=10000", "--dump-dom", path.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', done.stdout, re.S)
    assert found, f"Chromium ran no check: {done.stderr[-500:]}"
    return json.loads(html.unescape(found.group(1)))


def _reviewed_report():
    rng = np.random.default_rng(21)
    n = 6000
    y = (rng.random(n) < 0.3).astype(int)
    site = rng.choice(["Hospital with a rather long name in the north", "south", "east", "west"], n).astype(object)
    site[:20] = "tiny"
    age = rng.uniform(18, 95, n)
    shift = np.where(age > 70, 0.9, 1.6)  # a real AUC gap between the age groups
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + y * shift)))
    return fairmedfm_fast.evaluate(y, scores, {"site": site, "age": age, "sex": rng.choice(["F", "M"], n)},
                                   bins={"age": [40, 70]}, n_boot=60, n_permutations=60, random_state=0,
                                   p_adjust="holm")


def test_findings_page_fits_1280_px_in_chromium(tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium binary found (install Debian's chromium to run this test)")
    # The check itself sees a table too wide for the page, even inside a scrolling wrapper, and a broken image.
    bad = ('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src \'none\';">'
           '</head><body><div style="overflow-x:auto;width:300px"><table><tr><td style="white-space:nowrap">'
           + "x" * 400 + '</td></tr></table></div><img src="data:image/png;base64,AAAA" alt="bad"></body></html>')
    measured = layout_check(browser, bad, tmp_path)
    assert measured["wide"] and measured["broken"] == ["bad"]

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too few permutations for Holm: the point is the page
        report = _reviewed_report()
    measured = layout_check(browser, report.to_html(), tmp_path)
    assert measured["wide"] == [] and measured["broken"] == [] and measured["images"] == 4
    attribute, row = max(((a, r) for (a, c), r in report.gaps.iterrows() if c == "auc-gap"),
                         key=lambda item: item[1]["value"])
    assert attribute == "age"
    headline = next(line for line in measured["findings"].splitlines() if line.startswith("Largest AUC gap"))
    assert headline.startswith(f"Largest AUC gap: {attribute}, {row['value']:.3f} between {row['high_group']}")
    assert f"and {row['low_group']}" in headline
    assert "tiny" in measured["findings"] and "Small groups" in measured["findings"]


# ---------------------------------------------------------------------------------------------
# The page of a model comparison
# ---------------------------------------------------------------------------------------------

def _comparison():
    rng = np.random.default_rng(31)
    n = 3000
    y = rng.integers(0, 2, n)
    hard = rng.normal(size=n)
    strong = 1.8 * y + hard + 0.4 * rng.normal(size=n)
    scores = {"strong": strong, "close <b>&": strong + 0.05 * rng.normal(size=n),
              "weak": 0.8 * y + hard + 0.4 * rng.normal(size=n)}
    site = rng.choice(["north", "south & <east>"], n)
    return fairmedfm_fast.compare_models(y, scores, {"site": site}, interval="analytic", score_type="logit")


@pytest.fixture(scope="module")
def comparison_page(tmp_path_factory):
    comparison = _comparison()
    path = tmp_path_factory.mktemp("comparison") / "sub" / "comparison.html"
    text = comparison.to_html(path, "overall-auc")
    assert path.read_text(encoding="utf-8") == text
    return comparison, path, text


def test_comparison_page_leads_with_the_findings(comparison_page):
    comparison, _, text = comparison_page
    board = comparison.leaderboard("overall-auc")
    assert list(board.index) == ["strong", "close <b>&", "weak"]
    assert board["indistinguishable_from_best"].tolist() == [True, True, False]
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    order = [text.index(mark) for mark in ('id="findings"', "<h2>Leaderboard", "<h2>Figure", "<h2>Differences",
                                           "<h2>Settings")]
    assert order == sorted(order)
    findings = text[text.index('id="findings"'):text.index("</section>")]
    assert (f"<b>overall-auc</b> of <b>site</b>, <b>strong</b> leads: {board['value'].iloc[0]:.4f}" in findings)
    assert "Indistinguishable from it: <b>close &lt;b&gt;&amp;</b>." in findings
    assert "Shown to differ from it: <b>weak</b>." in findings
    assert "analytic (DeLong) paired p-value, holm-adjusted" in findings
    assert text.count("<table") == 3  # leaderboard, differences, settings
    for name, row in board.iterrows():
        assert f"<th>{html.escape(name)}</th><td>{row['value']:.4f}</td>" in text
    weak = comparison.differences.loc[("strong", "weak", "site", "overall-auc")]
    assert f"<td>{weak['difference']:+.4f}</td>" in text and f"<td>{weak['p_analytic_holm']:.4f}</td>" in text
    assert "<script" not in text and "<b>&" not in text  # the names never become markup
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert len(images) == 1 and base64.b64decode(images[0]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "default-src 'none'" in text and not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", text)
    assert IMG not in comparison.to_html(figures=False)


def test_chromium_opens_the_comparison_page_and_it_fits_1280_px(comparison_page, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium binary found (install Debian's chromium to run this test)")
    _, path, text = comparison_page
    messages, dom = _console_messages(browser, path, tmp_path / "profile")
    assert messages == [] and dom.count("data:image/png;base64,") == 1
    measured = layout_check(browser, text, tmp_path)
    assert measured["wide"] == [] and measured["broken"] == [] and measured["images"] == 1
    headline = next(line for line in measured["findings"].splitlines() if line.startswith("On "))
    assert headline.startswith("On overall-auc of site, strong leads")
