"""Bad inputs and files, oracle corners, and defaults that hide mistakes (issue 15, one test or more each)."""
from __future__ import annotations

import gzip
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast import cli

fairmedfm = pytest.importorskip("fairmedfm")

Y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1])
P = np.array([.1, .9, .2, .8, .3, .7, .4, .6, .45, .55, .35, .65])
G = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])


def _groups(report, attribute):
    return list(report.by_group.loc[attribute].index)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def run_cli(argv, capsys):
    capsys.readouterr()
    try:
        result = cli.main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        result, code = None, exc.code
    out, err = capsys.readouterr()
    return code, out, err, result


# ------------------------------------------------------------------------------------------------
# 1. datetime64 / timedelta64 attributes are named as pandas names them


@pytest.mark.parametrize("unit", ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns"])
@pytest.mark.parametrize("kind", ["datetime64", "timedelta64"])
def test_dates_and_durations_are_named_as_pandas_names_them(kind, unit):
    values = np.array([0, 517, -3])[G].astype(f"{kind}[{unit}]")
    ours = _quiet(fm.evaluate, Y, P, {"t": values})
    theirs = _quiet(fairmedfm.evaluate, Y, P, {"t": values})
    assert _groups(ours, "t") == _groups(theirs, "t")
    assert not any(name.lstrip("-").isdigit() for name in _groups(ours, "t"))  # not raw integers
    assert ours.summary.loc["t", "auc-gap"] == pytest.approx(theirs.summary.loc["t", "auc-gap"], abs=1e-12)


def test_not_a_time_is_missing():
    values = np.array(["2020-01-01", "2021-01-01", "NaT"])[G].astype("datetime64[D]")
    report = _quiet(fm.evaluate, Y, P, {"t": values})
    assert _groups(report, "t") == ["2020-01-01 00:00:00", "2021-01-01 00:00:00"]  # fairmedfm adds 'NaT'
    assert report.summary.loc["t", "n"] == 8


# ------------------------------------------------------------------------------------------------
# 2. cli.main raises SystemExit with the status, as fairmedfm's main does


def test_main_exits_like_fairmedfm_main(tmp_path, capsys):
    from fairmedfm import cli as oracle_cli

    frame = pd.DataFrame({"prob": P, "label": Y, "sex": np.array(["F", "M", "X"])[G]})
    frame.to_csv(tmp_path / "p.csv", index=False)
    cases = [["score", tmp_path / "p.csv"],  # success: None
             ["score", tmp_path / "p.csv", "--sensitive", "race"],  # input error: 2
             ["score", tmp_path / "nothing.csv"],  # missing file: 2
             ["score", "--task", "nope"],  # usage error: 2
             ["--version"]]  # 0
    for argv in cases:
        argv = [str(a) for a in argv]
        outcomes = []
        for main in (cli.main, oracle_cli.main):
            capsys.readouterr()
            try:
                outcomes.append(("returned", main(argv)))
            except SystemExit as exc:
                outcomes.append(("exit", exc.code))
        assert outcomes[0] == outcomes[1], argv
    capsys.readouterr()


def test_console_entry_point_still_exits_with_the_status(tmp_path, monkeypatch):
    codes = []
    monkeypatch.setattr(cli.os, "_exit", codes.append)
    monkeypatch.setattr(cli.sys, "argv", ["fairmedfm-fast", "score", str(tmp_path / "missing.csv")])
    cli.run()
    monkeypatch.setattr(cli.sys, "argv", ["fairmedfm-fast", "--version"])
    cli.run()
    assert codes == [2, 0]


# ------------------------------------------------------------------------------------------------
# 4. threshold outside [0, 1]


@pytest.mark.parametrize("threshold", [1.5, -0.1, 7, float("nan"), np.float64(2)])
def test_threshold_outside_the_unit_interval_is_an_error(threshold):
    with pytest.raises(ValueError, match=r"threshold=.*outside \[0, 1\]"):
        fm.evaluate(Y, P, G, threshold=threshold)
    with pytest.raises(ValueError, match="threshold"):
        fm.accuracy_gap(Y, P, sensitive_features=G, threshold=threshold)
    assert fm.evaluate(Y, P, G, threshold=1).metadata["threshold"] == 1.0


def test_cli_threshold_outside_the_unit_interval_exits_2(tmp_path, capsys):
    pd.DataFrame({"prob": P, "label": Y, "sex": G}).to_csv(tmp_path / "p.csv", index=False)
    code, out, err, _ = run_cli(["score", tmp_path / "p.csv", "--threshold", "7"], capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "--threshold" in err and "[0, 1]" in err


# ------------------------------------------------------------------------------------------------
# 5. an invalid score_column


@pytest.mark.parametrize("column", ["one", 1.5, None.__class__, True])
def test_invalid_score_column_names_the_argument_and_the_valid_columns(column):
    scores = np.column_stack([1 - P, P * 0.5, P * 0.5])
    with pytest.raises(ValueError, match=r"score_column=.*valid columns .* are \[0, 1, 2\]"):
        fm.evaluate(Y, scores, G, score_column=column)


def test_score_columns_fairmedfm_accepts_still_work():
    scores = np.column_stack([1 - P, P])
    expected = fm.evaluate(Y, scores, G, score_column=1).summary
    for column in (1.0, "1", np.int64(1)):
        pd.testing.assert_frame_equal(fm.evaluate(Y, scores, G, score_column=column).summary, expected)
    with pytest.raises(ValueError, match=r"score_column=5 is out of range; .* are \[0, 1\]"):
        fm.evaluate(Y, scores, G, score_column=5)


# ------------------------------------------------------------------------------------------------
# 9. values in messages as users wrote them


def test_messages_show_values_as_users_wrote_them():
    messages = []
    calls = [
        lambda: fm.metrics.classification_fairness(P[:4], Y[:4] * 0 + np.array([0, 1, 0, 0]), np.int64([0, 0, 1, 1])),
        lambda: fm.evaluate(Y, P, G, pos_label=np.int64(7)),
        lambda: fm.evaluate(Y, P, G, threshold=np.float64(1.5)),
        lambda: fm.evaluate(Y, P, G, n_boot=np.int64(-1)),
        lambda: fm.evaluate(Y, P, G, ci=np.float64(2.0)),
        lambda: fm.evaluate(Y, P, {"age": P * 100}, bins={"age": np.int64(1)}),
        lambda: fm.evaluate(Y, P, {"age": P * 100}, bins={"age": [np.float64(1), np.float64(1)]}),
        lambda: fm.evaluate(Y, np.column_stack([1 - P, P]), G, score_column=np.float64(0.5)),
        lambda: fm.evaluate_segmentation(G, pred_masks=[np.ones(3)] * 12, true_masks=[np.ones(3)] * 12,
                                         mask_threshold=np.str_("x")),
        lambda: fm.evaluate_segmentation(G, pred_masks=[np.ones(3)] * 12, true_masks=[np.ones(3)] * 12,
                                         empty_score=np.str_("x")),
    ]
    for call in calls:
        with pytest.raises(ValueError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
        messages.append(str(info.value))
    assert "group 1 has only label 0" in messages[0]
    for message in messages:
        assert not re.search(r"np\.\w+\(", message), message


# ------------------------------------------------------------------------------------------------
# 13. to_json(path) returns None


def test_to_json_returns_the_text_only_without_a_path(tmp_path):
    report = fm.evaluate(Y, P, G)
    assert report.to_json(tmp_path / "r.json") is None
    text = report.to_json()
    assert isinstance(text, str)
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(text)
    segmentation = fm.evaluate_segmentation(G, dice=P)
    assert segmentation.to_json(tmp_path / "s.json") is None and json.loads(segmentation.to_json())


def _unused():  # keep imports used by later sections
    return gzip
