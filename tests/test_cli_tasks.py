"""``fairmedfm-fast score --metrics / --tasks / --pairwise``: the command line agrees with the Python API."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from test_cli import run_fast

import fairmedfm_fast as fm
from fairmedfm_fast._cli.columns import UsageError
from fairmedfm_fast._cli.tasks import task_columns

FINDINGS = ("edema", "mass", "nodule")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 500
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "site": rng.choice(["a", "b", "c"], n)})
    for name in FINDINGS:
        y = rng.integers(0, 2, n)
        frame["y_" + name] = y
        frame["p_" + name] = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)
    path = tmp_path_factory.mktemp("tasks") / "findings.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _assert_summary(printed: dict, summary: pd.DataFrame):
    for attribute, values in printed.items():
        for column, value in values.items():
            if column not in ("ci", "p_values", "pairwise"):
                assert abs(value - summary.loc[attribute, column]) <= 1e-12, (attribute, column)


def test_metrics_option(table, capsys):
    path, frame = table
    code, out, _ = run_fast(["score", path, "--label", "y_mass", "--score", "p_mass", "--sensitive", "sex", "site",
                         "--metrics", "ap", "brier", "fpr"], capsys)
    assert code == 0
    report = _quiet(fm.evaluate, frame["y_mass"], frame["p_mass"], frame[["sex", "site"]],
                    metrics=["ap", "brier", "fpr"])
    printed = json.loads(out)
    assert {"ap-gap", "brier-gap", "fpr-gap"} <= set(printed["sex"])
    _assert_summary(printed, report.summary)


@pytest.mark.parametrize("how", ["pairs", "patterns"])
def test_tasks_equal_evaluate_tasks(table, capsys, how):
    path, frame = table
    if how == "pairs":
        columns = ["--label", *(f"y_{t}" for t in FINDINGS), "--score", *(f"p_{t}" for t in FINDINGS)]
        names = [f"y_{t}" for t in FINDINGS]
    else:
        columns, names = ["--label", "y_*", "--score", "p_*"], list(FINDINGS)
    code, out, err = run_fast(["score", path, "--sensitive", "sex", "site", "--tasks", *columns, "--metrics", "ap"],
                          capsys)
    assert code == 0, err
    printed = json.loads(out)
    assert list(printed) == names
    labels = {name: frame[f"y_{t}"] for name, t in zip(names, FINDINGS)}
    scores = {name: frame[f"p_{t}"] for name, t in zip(names, FINDINGS)}
    report = _quiet(fm.evaluate_tasks, labels, scores, frame[["sex", "site"]], metrics=["ap"])
    for name in names:
        _assert_summary(printed[name], report.summary.loc[name])


def test_one_label_many_models_and_pairwise(table, capsys):
    path, frame = table
    code, out, err = run_fast(["score", path, "--sensitive", "site", "--tasks", "--label", "y_edema",
                           "--score", "p_*", "--pairwise", "auc"], capsys)
    assert code == 0, err
    printed = json.loads(out)
    assert list(printed) == list(FINDINGS)
    for model in FINDINGS:
        single = _quiet(fm.evaluate, frame["y_edema"], frame["p_" + model], frame[["site"]])
        matrix = printed[model]["site"]["pairwise"]["difference"]
        auc = single.by_group.loc["site", "auc"]
        for group in "abc":
            for other in "abc":
                assert abs(matrix[group][other] - (auc[group] - auc[other])) <= 1e-12


def test_pairwise_table_with_intervals(table, capsys):
    path, _ = table
    code, out, err = run_fast(["score", path, "--label", "y_mass", "--score", "p_mass", "--sensitive", "sex",
                           "--pairwise", "ap", "--metrics", "ap", "--bootstrap", "20", "--seed", "1"], capsys)
    assert code == 0, err
    printed = json.loads(out)
    assert {"difference", "difference_lo", "difference_hi"} <= set(printed["sex"]["pairwise"])
    code, out, err = run_fast(["score", path, "--label", "y_mass", "--score", "p_mass", "--sensitive", "sex",
                           "--pairwise", "auc", "--format", "table"], capsys)
    assert code == 0 and "sex: auc of the row group minus auc of the column group" in out


@pytest.mark.parametrize("argv, message", [
    (["--label", "y_mass", "--score", "p_mass", "--metrics", "auprc"], "metrics='auprc'"),
    (["--tasks", "--label", "y_edema", "y_mass", "--score", "p_edema"], "as many of each"),
    (["--tasks", "--label", "z_*", "--score", "p_*"], "'z_*' matches no column"),
    (["--tasks", "--label", "y_*", "--score", "p_ed*"], "no partner"),
    (["--label", "y_edema", "y_mass", "--score", "p_edema"], "add --tasks"),
    (["--label", "y_mass", "--score", "p_mass", "--pairwise", "nope"], "--pairwise nope"),
    (["--tasks", "--label", "y_*", "--score", "p_*", "--engine", "dask"], "--engine memory"),
    (["--label", "y_mass", "--score", "p_mass", "--compare"], "--compare needs --tasks"),
    (["--tasks", "--label", "y_*", "--score", "p_*", "--compare"], "models scored on one label"),
    (["--tasks", "--label", "y_mass", "--score", "p_*", "--compare", "zzz"], "--compare zzz: not one of the models"),
    (["--tasks", "--label", "y_mass", "--score", "p_*", "--compare", "--rank-by", "nope"], "--rank-by nope"),
    (["--tasks", "--label", "y_mass", "--score", "p_*", "--compare", "--pairwise", "auc"], "--pairwise does not go"),
    (["--tasks", "--label", "y_mass", "--score", "p_*", "--compare", "--bootstrap", "-1"], "--bootstrap -1"),
])
def test_bad_input_is_one_line_exit_2(table, capsys, argv, message):
    path, _ = table
    code, out, err = run_fast(["score", path, "--sensitive", "sex", *argv], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fairmedfm-fast: error:") and message in lines[0], err


def test_compare_equals_compare_models(table, capsys):
    path, frame = table
    code, out, err = run_fast(["score", path, "--sensitive", "sex", "site", "--tasks", "--label", "y_edema",
                               "--score", "p_*", "--compare", "--interval", "analytic", "--rank-by", "auc-gap"], capsys)
    assert code == 0, err
    printed = json.loads(out)
    expected = _quiet(fm.compare_models, frame["y_edema"], {name: frame["p_" + name] for name in FINDINGS},
                      frame[["sex", "site"]], interval="analytic")
    assert printed["metadata"]["models"] == list(FINDINGS) and printed["metadata"]["input"] == str(path)
    rows = {(r["model"], r["other"], r["attribute"], r["column"]): r for r in printed["differences"]}
    assert len(rows) == len(expected.differences) == 3 * 2 * len(expected.reports["mass"].summary.columns[2:])
    for key, row in expected.differences.iterrows():
        assert rows[key]["difference"] == pytest.approx(row["difference"], rel=1e-12, abs=1e-15)
        assert rows[key]["significant"] == row["significant"]
        if row["p_analytic_holm"] == row["p_analytic_holm"]:
            assert rows[key]["p_analytic_holm"] == pytest.approx(row["p_analytic_holm"], rel=1e-9, abs=1e-15)
    for attribute in ("sex", "site"):
        board = expected.leaderboard("auc-gap", attribute)
        models = printed["leaderboards"][attribute]["models"]
        assert [m["model"] for m in models] == list(board.index)
        assert [m["indistinguishable_from_best"] for m in models] == board["indistinguishable_from_best"].tolist()


def test_compare_against_a_reference_as_tables_and_files(table, capsys, tmp_path):
    path, _ = table
    code, out, err = run_fast(["score", path, "--sensitive", "site", "--tasks", "--label", "y_mass", "--score",
                               "p_*", "--compare", "mass", "--bootstrap", "20", "--seed", "3", "--format", "table",
                               "--output", tmp_path / "differences.csv", "--html", tmp_path / "page.html",
                               "--plot", tmp_path / "forest.png"], capsys)
    assert code == 0, err
    assert out.startswith("leaderboard: worst-auc of site (best first)") and "paired differences" in out
    assert "cannot reach the adjusted level" in err  # 20 resamples: the note, once, as a warning
    differences = pd.read_csv(tmp_path / "differences.csv")
    assert set(zip(differences["model"], differences["other"])) == {("edema", "mass"), ("nodule", "mass")}
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<b>worst-auc</b> of <b>site</b>" in page
    assert (tmp_path / "forest.png").read_bytes().startswith(b"\x89PNG")


def test_task_columns_pairing():
    columns = ["y_a", "y_b", "p_a", "p_b", "label"]
    assert task_columns(["y_*"], ["p_*"], columns) == (["a", "b"], {"a": "y_a", "b": "y_b"},
                                                       {"a": "p_a", "b": "p_b"})
    assert task_columns(["label"], ["p_a", "p_b"], columns)[1] == {"p_a": "label", "p_b": "label"}
    with pytest.raises(UsageError, match="one --label pattern"):
        task_columns(["y_*", "y_b"], ["p_*"], columns)
