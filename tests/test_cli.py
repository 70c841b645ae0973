"""``fairmedfm-fast score`` against ``fairmedfm score`` 0.4.2 on the same files.

Most cases call both ``main`` functions in-process (capsys); a few run the real console scripts.
Each comparison checks the exit code, the printed JSON (within 1e-9), the number of note and
warning lines on stderr, and that an error is exactly one ``fairmedfm-fast: error:`` line.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

fairmedfm_cli = pytest.importorskip("fairmedfm.cli")

from compare import EXTRA_GROUP_COLUMNS, oracle_metadata  # noqa: E402

from fairmedfm_fast import cli  # noqa: E402
from fairmedfm_fast import evaluate as fm_evaluate  # noqa: E402
from fairmedfm_fast._cli import score as _score  # noqa: E402

# Subprocesses start outside the checkout, so that they import the installed package (kernels/ is
# installed as fairmedfm_fast.kernels) rather than the source folder from the working directory.
OUTSIDE_REPO = tempfile.gettempdir()


def _has_segmentation() -> bool:
    try:
        from fairmedfm_fast import evaluate_segmentation  # noqa: F401
    except (ImportError, AttributeError):
        return False
    return True


needs_segmentation = pytest.mark.skipif(not _has_segmentation(),
                                        reason="fairmedfm_fast.evaluate_segmentation has not landed yet")


# ------------------------------------------------------------------------------------------------
# Running both


def run_fast(argv, capsys):
    capsys.readouterr()
    try:
        assert cli.main([str(a) for a in argv]) is None  # as fairmedfm's main: None on success
        code = 0
    except SystemExit as exc:  # ... and SystemExit(status) otherwise
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def run_oracle(argv, capsys):
    capsys.readouterr()
    try:
        fairmedfm_cli.main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def assert_close(fast, oracle, where="result"):
    if isinstance(oracle, dict):
        assert isinstance(fast, dict), where
        if where.startswith("metadata"):  # the settings fairmedfm_fast records beside the oracle's keys
            fast = oracle_metadata(fast, oracle)
        else:  # and a group's small_group flag, the report's gaps
            fast = {key: value for key, value in fast.items()
                    if key in oracle or key not in (*EXTRA_GROUP_COLUMNS, "gaps")}
        assert list(fast) == list(oracle), f"{where}: keys {list(fast)} != {list(oracle)}"
        for key in oracle:
            assert_close(fast[key], oracle[key], f"{where}[{key!r}]")
    elif isinstance(oracle, list):
        assert isinstance(fast, list) and len(fast) == len(oracle), where
        for i, (a, b) in enumerate(zip(fast, oracle)):
            assert_close(a, b, f"{where}[{i}]")
    elif isinstance(oracle, float) and not isinstance(fast, str):
        assert fast is not None, f"{where}: None != {oracle}"
        assert math.isclose(fast, oracle, rel_tol=1e-9, abs_tol=1e-9), f"{where}: {fast} != {oracle}"
    else:
        assert fast == oracle, f"{where}: {fast!r} != {oracle!r}"


# Warnings about masks that fairmedfm 0.4.2 does not give (issue 15): not counted against it.
MASK_NOTES = ("an empty predicted and an empty ground-truth mask", "occurs in no mask", "merged into one")


def note_lines(err, prog):
    lines = err.splitlines()
    assert all(line.startswith(f"{prog}: ") for line in lines), err
    return [line for line in lines if not any(note in line for note in MASK_NOTES)]


def compare(argv, capsys):
    """Run both on ``argv``; assert they agree; return (fast stdout, fast stderr lines)."""
    oracle_code, oracle_out, oracle_err = run_oracle(argv, capsys)
    code, out, err = run_fast(argv, capsys)
    assert code == oracle_code, f"exit {code} != oracle {oracle_code}\nfast: {err}\noracle: {oracle_err}"
    if code != 0:
        assert out == ""
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("fairmedfm-fast: error: "), err
        return out, lines
    assert_close(json.loads(out), json.loads(oracle_out))
    fast_lines, oracle_lines = note_lines(err, "fairmedfm-fast"), note_lines(oracle_err, "fairmedfm")
    fast_lines = [line for line in fast_lines if "small_group" not in line]  # flags of our own
    assert len(fast_lines) == len(oracle_lines), f"{fast_lines}\n!=\n{oracle_lines}"
    for fast_line, oracle_line in zip(fast_lines, oracle_lines):  # notes and warnings in the same places
        assert fast_line.startswith("fairmedfm-fast: warning: ") == oracle_line.startswith("fairmedfm: warning: ")
    return out, fast_lines


def assert_one_error(argv, capsys, *, contains=()):
    code, out, err = run_fast(argv, capsys)
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fairmedfm-fast: error: "), err
    assert "Traceback" not in err
    for text in contains:
        assert text in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------------------------------------
# Data


def _predictions(n=300, seed=0):
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    frame = pd.DataFrame({
        "image_id": [f"img{i:04d}" for i in range(n)],
        "label": label,
        "prob": np.round(np.clip(0.3 * label + 0.7 * rng.random(n), 0, 1), 3),  # ties on purpose
        "sex": rng.choice(["F", "M"], n),
        "age": rng.integers(18, 95, n),
        "race": rng.choice(["white", "black", "asian", None], n, p=[0.5, 0.2, 0.2, 0.1]),
        "site": rng.integers(1, 4, n),
    })
    return frame


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    frame = _predictions()
    frame.to_csv(root / "p.csv", index=False)
    frame.to_csv(root / "p.tsv", sep="\t", index=False)
    frame.to_csv(root / "p.csv.gz", index=False)
    frame.to_parquet(root / "p.parquet", index=False)
    frame.to_feather(root / "p.feather")
    frame.to_json(root / "p.json", orient="records")
    frame.to_json(root / "p.jsonl", orient="records", lines=True)
    frame.to_excel(root / "p.xlsx", index=False)
    return root


FORMATS = ["p.csv", "p.tsv", "p.csv.gz", "p.parquet", "p.feather", "p.json", "p.jsonl", "p.xlsx"]


@pytest.mark.parametrize("name", FORMATS)
def test_formats_match_fairmedfm(data, name, capsys):
    out, lines = compare(["score", data / name, "--bins", "age=40,60"], capsys)
    assert set(json.loads(out)) == {"sex", "age", "race", "site"}
    assert lines[-1].startswith("fairmedfm-fast: warning: race: ")  # the missing values


def test_quantile_bins_intersectional_and_explicit_columns(data, capsys):
    compare(["score", data / "p.parquet", "--label", "label", "--score", "prob", "--sensitive", "sex", "age",
             "--bins", "age=q4", "--intersectional"], capsys)


def test_table_format(data, capsys):
    argv = ["score", data / "p.csv", "--sensitive", "sex", "race", "--format", "table"]
    _, oracle_out, _ = run_oracle(argv, capsys)
    code, out, _ = run_fast(argv, capsys)
    assert code == 0 and out == oracle_out


def test_output_files(data, tmp_path, capsys):
    argv = ["score", data / "p.csv", "--bins", "age=40,60"]
    run_oracle([*argv, "--output", tmp_path / "oracle.json"], capsys)
    code, _, _ = run_fast([*argv, "--output", tmp_path / "deep" / "fast.json"], capsys)
    assert code == 0
    fast = json.loads((tmp_path / "deep" / "fast.json").read_text())
    oracle = json.loads((tmp_path / "oracle.json").read_text())
    assert fast["metadata"]["input"] == oracle["metadata"]["input"] == str(data / "p.csv")
    for key in ("task", "metadata", "overall", "attributes"):
        assert_close(fast[key], oracle[key], key)
    assert len(fast["warnings"]) == len(oracle["warnings"])  # our own wording
    run_oracle([*argv, "--output", tmp_path / "oracle.csv"], capsys)
    assert run_fast([*argv, "--output", tmp_path / "fast.csv"], capsys)[0] == 0
    fast_csv, oracle_csv = pd.read_csv(tmp_path / "fast.csv"), pd.read_csv(tmp_path / "oracle.csv")
    assert list(fast_csv.columns) == [*oracle_csv.columns, *EXTRA_GROUP_COLUMNS]  # the flag comes last
    fast_csv = fast_csv.drop(columns=list(EXTRA_GROUP_COLUMNS))
    pd.testing.assert_frame_equal(fast_csv, oracle_csv, rtol=1e-9, atol=1e-9)


def test_logits_missing_rows_and_skipped_groups(tmp_path, capsys):
    frame = _predictions(200, seed=1)
    frame = frame.drop(columns="prob").assign(logit=np.random.default_rng(2).normal(size=200))
    frame.loc[[10, 17], "label"] = np.nan
    frame.loc[40, "logit"] = np.nan
    frame["scanner"] = np.where(np.arange(200) < 5, "tiny", "big")
    frame.loc[:4, "label"] = 1.0  # "tiny" has one label only: skipped
    path = tmp_path / "logits.csv"
    frame.to_csv(path, index=False)
    _, lines = compare(["score", path, "--sensitive", "sex", "scanner", "race"], capsys)
    text = "\n".join(lines)
    assert "3 rows" in text and "sigmoid" in text and "scanner=tiny" in text


def test_multiclass_named_scores(tmp_path, capsys):
    rng = np.random.default_rng(3)
    n = 240
    probs = rng.dirichlet([1, 1, 1], n)
    frame = pd.DataFrame({"diagnosis": rng.choice(["benign", "malignant", "normal"], n),
                          "prob_benign": probs[:, 0], "prob_malignant": probs[:, 1], "prob_normal": probs[:, 2],
                          "sex": rng.choice(["F", "M"], n)})
    path = tmp_path / "multi.parquet"
    frame.to_parquet(path, index=False)
    scores = ["--score", "prob_benign", "prob_malignant", "prob_normal"]
    _, lines = compare(["score", path, "--label", "diagnosis", *scores, "--pos-label", "malignant"], capsys)
    assert any("prob_malignant" in line and "positive class" in line for line in lines)
    # the column by position, and one-vs-rest metadata in the full report
    compare(["score", path, "--label", "diagnosis", *scores, "--pos-label", "normal", "--score-column", "2"],
            capsys)
    run_oracle(["score", path, "--label", "diagnosis", *scores, "--pos-label", "normal",
                "--output", tmp_path / "o.json"], capsys)
    run_fast(["score", path, "--label", "diagnosis", *scores, "--pos-label", "normal",
              "--output", tmp_path / "f.json"], capsys)
    fast, oracle = (json.loads((tmp_path / f"{w}.json").read_text()) for w in "fo")
    assert_close(fast["metadata"], oracle["metadata"], "metadata")
    assert_close(fast["attributes"], oracle["attributes"], "attributes")
    # without --pos-label: both refuse, with one line
    compare(["score", path, "--label", "diagnosis", *scores], capsys)


def test_numbered_scores_integer_classes(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n = 240
    logits = rng.normal(size=(n, 3))
    frame = pd.DataFrame({"y": rng.integers(0, 3, n), "logit_0": logits[:, 0], "logit_1": logits[:, 1],
                          "logit_2": logits[:, 2], "gender": rng.choice(["a", "b"], n)})
    path = tmp_path / "numbered.csv"
    frame.to_csv(path, index=False)
    compare(["score", path, "--pos-label", "2"], capsys)


def test_string_labels_and_booleans(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n = 200
    frame = pd.DataFrame({"target": rng.choice(["sick", "healthy"], n), "score": rng.random(n),
                          "sex": rng.choice(["F", "M"], n), "flag": rng.choice([True, False], n)})
    path = tmp_path / "text.csv"
    frame.to_csv(path, index=False)
    compare(["score", path, "--pos-label", "sick"], capsys)
    compare(["score", path], capsys)  # an error: labels need --pos-label
    compare(["score", path, "--pos-label", "ill"], capsys)  # an error: no such class
    compare(["score", path, "--label", "flag", "--sensitive", "sex"], capsys)
    compare(["score", path, "--label", "flag", "--sensitive", "sex", "--pos-label", "false"], capsys)


def test_labels_coded_1_2_and_scores_named_after_classes(tmp_path, capsys):
    rng = np.random.default_rng(12)
    n = 200
    y = rng.integers(0, 2, n)
    prob = np.round(np.clip(0.3 + 0.4 * y + 0.3 * rng.random(n), 0, 1), 4)
    sex = rng.choice(["F", "M"], n)
    for coded, positive in ((y + 1, "2"), (np.where(y == 1, 1, -1), "1")):
        pd.DataFrame({"label": coded, "prob": prob, "sex": sex}).to_csv(tmp_path / "coded.csv", index=False)
        # the error names the values and gives an example of the option, with its value
        assert_one_error(["score", tmp_path / "coded.csv"], capsys,
                         contains=[f"--pos-label, e.g. --pos-label {positive} "])
        compare(["score", tmp_path / "coded.csv", "--pos-label", positive], capsys)
    # one score column per class, named after the classes: found once --pos-label names one of them
    named = pd.DataFrame({"label": np.where(y == 1, "sick", "well"), "prob_sick": prob, "prob_well": 1 - prob,
                          "sex": sex})
    named.to_csv(tmp_path / "named.csv", index=False)
    explicit = ["--label", "label", "--score", "prob_sick", "prob_well"]
    for positive in ("sick", "well"):
        oracle_code, oracle_out, _ = run_oracle(["score", tmp_path / "named.csv", *explicit, "--pos-label", positive],
                                                capsys)
        code, out, err = run_fast(["score", tmp_path / "named.csv", "--pos-label", positive], capsys)
        assert code == oracle_code == 0, err
        assert f"score column 'prob_{positive}'" in err
        assert_close(json.loads(out), json.loads(oracle_out))
    # without --pos-label: the label column was found, so the error does not ask for --label
    line = assert_one_error(["score", tmp_path / "named.csv", "--label", "label"], capsys,
                            contains=["label column 'label'", "--score", "--pos-label"])
    assert "--label" not in line
    assert_one_error(["score", tmp_path / "named.csv", "--pos-label", "ill"], capsys, contains=["prob_ill"])


def test_categorical_parquet_keeps_category_order(tmp_path, capsys):
    rng = np.random.default_rng(6)
    n = 300
    frame = pd.DataFrame({"label": rng.integers(0, 2, n), "prob": rng.random(n)})
    frame["age_group"] = pd.Categorical(rng.choice(["<40", "40-60", ">=60"], n),
                                        categories=[">=60", "<40", "40-60", "unused"])
    path = tmp_path / "cat.parquet"
    frame.to_parquet(path)
    compare(["score", path, "--intersectional", "--sensitive", "age_group", "label"], capsys)
    run_oracle(["score", path, "--output", tmp_path / "o.json"], capsys)
    run_fast(["score", path, "--output", tmp_path / "f.json"], capsys)
    fast, oracle = (json.loads((tmp_path / f"{w}.json").read_text()) for w in "fo")
    assert list(fast["attributes"]["age_group"]["groups"]) == [">=60", "<40", "40-60"]
    assert_close(fast["attributes"], oracle["attributes"])


def test_metadata_join(data, tmp_path, capsys):
    frame = _predictions()
    predictions = frame[["image_id", "label", "prob"]]
    predictions.to_csv(tmp_path / "preds.csv", index=False)
    metadata = frame[["image_id", "sex", "age", "race"]].sample(frac=1, random_state=0).iloc[:-20]
    metadata.to_parquet(tmp_path / "meta.parquet", index=False)
    _, lines = compare(["score", tmp_path / "preds.csv", "--metadata", tmp_path / "meta.parquet",
                        "--bins", "age=40,60"], capsys)
    assert "joined" in lines[0] and "20 prediction rows" in lines[1]
    # differently named key, and a clashing column name that gets the _metadata suffix
    renamed = metadata.rename(columns={"image_id": "file"}).assign(label=1)
    renamed.to_csv(tmp_path / "meta2.csv", index=False)
    compare(["score", tmp_path / "preds.csv", "--metadata", tmp_path / "meta2.csv", "--on", "image_id=file",
             "--sensitive", "sex", "race", "label_metadata"], capsys)


def test_join_with_integer_keys(tmp_path, capsys):
    frame = _predictions()
    frame["case_id"] = np.arange(len(frame)) * 7
    frame[["case_id", "label", "prob"]].to_parquet(tmp_path / "preds.parquet", index=False)
    frame[["case_id", "sex"]].iloc[::-1].to_json(tmp_path / "meta.jsonl", orient="records", lines=True)
    compare(["score", tmp_path / "preds.parquet", "--metadata", tmp_path / "meta.jsonl"], capsys)


# ------------------------------------------------------------------------------------------------
# Segmentation


@needs_segmentation
def test_dice_column(tmp_path, capsys):
    rng = np.random.default_rng(7)
    n = 120
    frame = pd.DataFrame({"dice": rng.random(n), "sex": rng.choice(["F", "M"], n),
                          "age": rng.integers(20, 90, n)})
    frame.loc[5, "dice"] = np.nan
    path = tmp_path / "dice.csv"
    frame.to_csv(path, index=False)
    compare(["score", path, "--bins", "age=50"], capsys)


@needs_segmentation
def test_mask_paths(tmp_path, capsys):
    rng = np.random.default_rng(8)
    (tmp_path / "masks").mkdir()
    rows = []
    for i in range(24):
        truth = rng.random((8, 8)) > 0.6
        pred = np.clip(truth + rng.normal(0, 0.4, (8, 8)), 0, 1)  # a probability mask
        if i == 3:
            truth[:] = False
            pred[:] = 0.0
        np.save(tmp_path / "masks" / f"gt{i}.npy", truth.astype(np.uint8))
        np.save(tmp_path / "masks" / f"pred{i}.npy", pred)
        rows.append({"pred_mask": f"masks/pred{i}.npy", "gt_mask": f"masks/gt{i}.npy", "sex": "FM"[i % 2]})
    path = tmp_path / "masks.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    elsewhere = tmp_path.parent
    cwd = os.getcwd()
    os.chdir(elsewhere)  # paths are relative to the table, not to the working directory
    try:
        compare(["score", path], capsys)
        compare(["score", path, "--mask-threshold", "0.7", "--empty-score", "0"], capsys)
    finally:
        os.chdir(cwd)


# ------------------------------------------------------------------------------------------------
# Errors: exit code 2 and exactly one line, like the oracle's exit code


def test_error_unknown_column(data, capsys):
    compare(["score", data / "p.csv", "--sensitive", "sex", "nope"], capsys)
    assert_one_error(["score", data / "p.csv", "--label", "nope"], capsys, contains=["nope", "label"])
    assert_one_error(["score", data / "p.parquet", "--score", "prob", "missing_col"], capsys,
                     contains=["missing_col"])


def test_error_files(data, tmp_path, capsys):
    compare(["score", tmp_path / "absent.csv"], capsys)
    compare(["score", tmp_path / "table.xyz"], capsys)
    (tmp_path / "broken.parquet").write_bytes(b"not a parquet file at all")
    compare(["score", tmp_path / "broken.parquet"], capsys)
    (tmp_path / "empty.csv").write_text("")
    compare(["score", tmp_path / "empty.csv"], capsys)
    (tmp_path / "bad.xlsx").write_text("not a zip")
    compare(["score", tmp_path / "bad.xlsx"], capsys)
    (tmp_path / "folder.csv").mkdir()
    assert_one_error(["score", tmp_path / "folder.csv"], capsys, contains=["directory"])
    assert_one_error(["score"], capsys, contains=["predictions table"])
    compare(["score", data / "p.csv", "--metadata", tmp_path / "absent.parquet"], capsys)


def test_error_bins(data, capsys):
    compare(["score", data / "p.csv", "--bins", "age=forty"], capsys)
    assert_one_error(["score", data / "p.csv", "--bins", "age"], capsys, contains=["--bins age=40,60"])
    assert_one_error(["score", data / "p.csv", "--bins", "agee=40"], capsys, contains=["agee"])
    compare(["score", data / "p.csv", "--bins", "age=q1"], capsys)
    # a continuous attribute without --bins: the fix names the command-line option
    line = assert_one_error(["score", data / "p.csv"], capsys, contains=["--bins age=40,60"])
    assert "bins={" not in line


def test_bins_that_leave_one_group_name_the_bins_made(data, capsys):
    # `--bins age=4` is one cut point at 4 (as in fairmedfm): every adult lands in '>=4'. The summary
    # stays as fairmedfm's (empty); the warning names the bins and the quantile spelling.
    for task in ("cls", "seg"):
        argv = ["score", data / "p.csv", "--sensitive", "age", "--bins", "age=4"]
        if task == "seg":
            frame = pd.read_csv(data / "p.csv").assign(dice=lambda f: f.prob)[["dice", "age"]]
            frame.to_csv(data / "dice.csv", index=False)
            argv[1] = data / "dice.csv"
        _, lines = compare(argv, capsys)
        warning = [line for line in lines if "age:" in line and "warning" in line]
        assert len(warning) == 1, lines
        assert "one group ('>=4')" in warning[0] and "'<4' (0 samples), '>=4' (300 samples)" in warning[0]
        assert "--bins age=q4" in warning[0] and "Dice" not in warning[0] and "labels" not in warning[0]
    # the same in Python, in Python words; quantile groups that collapse suggest cut points
    report = fm_evaluate([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], {"age": [50, 50, 50, 50]}, bins={"age": 3})
    assert list(report.summary.columns) == ["n", "n_groups"] and report.summary.loc["age", "n_groups"] == 1
    assert any("bins={'age': [40, 60]}" in w and "'<50' (0 samples)" in w for w in report.warnings), report.warnings
    report = fm_evaluate([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], {"age": [50, 51, 52, 53]}, bins={"age": [10]})
    assert any("bins['age']=[10] is one cut point" in w and "bins={'age': 4}" in w for w in report.warnings)


def test_error_join(data, tmp_path, capsys):
    frame = _predictions()
    frame[["image_id", "label", "prob"]].to_csv(tmp_path / "preds.csv", index=False)
    other = frame[["image_id", "sex"]].assign(image_id=lambda f: f.image_id.str.upper())
    other.to_csv(tmp_path / "meta.csv", index=False)
    compare(["score", tmp_path / "preds.csv", "--metadata", tmp_path / "meta.csv"], capsys)
    pd.concat([frame[["image_id", "sex"]]] * 2).to_csv(tmp_path / "dup.csv", index=False)
    compare(["score", tmp_path / "preds.csv", "--metadata", tmp_path / "dup.csv"], capsys)
    compare(["score", tmp_path / "preds.csv", "--metadata", tmp_path / "meta.csv", "--on", "image"], capsys)
    frame[["sex"]].to_csv(tmp_path / "nokey.csv", index=False)
    compare(["score", tmp_path / "preds.csv", "--metadata", tmp_path / "nokey.csv"], capsys)


def test_error_values(data, tmp_path, capsys):
    compare(["score", data / "p.csv", "--sensitive", "sex", "--pos-label", "yes"], capsys)
    compare(["score", data / "p.csv", "--sensitive", "sex", "--label", "sex", "--score", "prob"], capsys)
    compare(["score", data / "p.csv", "--sensitive", "sex", "--score", "race"], capsys)
    compare(["score", data / "p.csv", "--sensitive", "sex", "--score", "age", "--score-type", "probability"],
            capsys)
    pd.DataFrame({"a": [1, 2], "b": [0.1, 0.2]}).to_csv(tmp_path / "nothing.csv", index=False)
    compare(["score", tmp_path / "nothing.csv", "--sensitive", "a"], capsys)


def test_example_values_in_errors_are_distinct(data, capsys):
    line = assert_one_error(["score", data / "p.csv", "--sensitive", "race", "--score", "sex"], capsys)
    shown = re.search(r"values such as (\[[^\]]*\]),", line)
    assert shown and sorted(eval(shown[1])) == ["F", "M"], line  # noqa: S307 (a list literal we printed)
    with pytest.raises(ValueError, match=r"non-numeric values such as \['F', 'M'\], so"):
        fm_evaluate([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], {"sex": ["F", "F", "M", "M"]}, bins={"sex": [1]})


def test_usage_errors_are_one_line(capsys):
    for argv in (["score", "x.csv", "--task", "nope"], [], ["frobnicate"], ["score", "--score-column", "x"]):
        code, out, err = run_fast(argv, capsys)
        assert code == 2 and out == ""
        assert len(err.splitlines()) == 1 and err.startswith("fairmedfm-fast: error: "), err


def test_help_and_version(capsys):
    code, out, _ = run_fast(["--version"], capsys)
    assert code == 0 and out.startswith("fairmedfm-fast ")
    code, out, _ = run_fast(["score", "--help"], capsys)
    assert code == 0
    # the table is required (argparse makes it optional only for the hidden --input spelling)
    assert "[predictions]" not in out and re.search(r"\[--format \{json,table\}\]\s+predictions\n", out), out
    code, warmup_help, _ = run_fast(["warmup", "--help"], capsys)
    assert code == 0 and "compile the kernel" in warmup_help and "`" not in warmup_help
    for option in ("--metadata", "--on", "--sensitive", "--bins", "--intersectional", "--task", "--label",
                   "--score", "--pos-label", "--score-type", "--score-column", "--dice", "--pred-mask",
                   "--true-mask", "--mask-label", "--mask-threshold", "--empty-score", "--output", "--format"):
        assert option in out


EXTENSIONS = {"--threshold", "--bootstrap", "--permutations", "--seed", "--plot", "--plot-kind", "--html",
              "--engine", "--scheduler", "--min-group-size", "--p-adjust", "--metrics", "--nsd-tolerance", "--percentile",
              "--spacing", "--score-map", "--roi-mask", "--max-memory", "--tasks", "--pairwise", "--interval",
              "--compare", "--rank-by"}
#: Options that take more values than fairmedfm's (a superset: one value still means the same).
WIDENED = {("--label", "--label-col"): "+"}


def test_same_options_and_defaults_as_fairmedfm():
    ours = cli.build_parser()._subparsers._group_actions[0].choices["score"]
    theirs = fairmedfm_cli._parser()._subparsers._group_actions[0].choices["score"]

    def options(parser, widened=None):
        return {tuple(a.option_strings): (a.dest, a.default, (widened or {}).get(tuple(a.option_strings), a.nargs),
                                          a.choices) for a in parser._actions
                if a.option_strings and a.dest != "help" and not EXTENSIONS & set(a.option_strings)}

    assert options(ours) == options(theirs, WIDENED)


# ------------------------------------------------------------------------------------------------
# The real console scripts


def _script(name):
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else shutil.which(name)


@pytest.mark.skipif(_script("fairmedfm") is None or _script("fairmedfm-fast") is None,
                    reason="console scripts not installed")
def test_console_scripts(data, tmp_path):
    argv = ["score", str(data / "p.parquet"), "--bins", "age=40,60", "--intersectional"]
    fast = subprocess.run([_script("fairmedfm-fast"), *argv], capture_output=True, text=True, timeout=120)
    oracle = subprocess.run([_script("fairmedfm"), *argv], capture_output=True, text=True, timeout=120)
    assert fast.returncode == oracle.returncode == 0, fast.stderr
    assert_close(json.loads(fast.stdout), json.loads(oracle.stdout))
    # the same lines but for the small-group flags (one line per attribute), an addition beside the oracle's
    assert len([line for line in fast.stderr.splitlines() if "small_group" not in line]) == len(
        oracle.stderr.splitlines())
    # python -m, and an error: one line, exit 2, no traceback
    bad = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-m", "fairmedfm_fast", "score", str(data / "p.csv"), "--sensitive",
                          "nope"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.splitlines()) == 1 and bad.stderr.startswith("fairmedfm-fast: error: ")


def test_quick_exit_keeps_output_files_exit_handlers_and_status(data, tmp_path):
    # run() ends the process with os._exit after flushing and running the atexit handlers.
    marker, report = tmp_path / "atexit-ran", tmp_path / "report.json"
    code = ("import atexit, pathlib, sys; from fairmedfm_fast import cli; "
            f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes'); "
            "sys.argv = ['fairmedfm-fast', *sys.argv[1:]]; cli.run()")
    argv = ["score", str(data / "p.parquet"), "--bins", "age=40,60", "--intersectional", "--output", str(report)]
    done = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) and json.loads(report.read_text())["attributes"]
    assert marker.read_text() == "yes"
    failed = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-c", code, "score", str(tmp_path / "none.csv")],
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2 and failed.stderr.startswith("fairmedfm-fast: error: ")
    assert marker.read_text() == "yes"


def test_import_stays_light():
    code = ("import sys, fairmedfm_fast.cli; "
            "print(sorted(m for m in ('pandas', 'numba', 'numpy', 'pyarrow') if m in sys.modules))")
    result = subprocess.run(cwd=OUTSIDE_REPO, args=[sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_text_quirks_read_as_pandas_reads_them(tmp_path, capsys):
    """Missing-value spellings, dates, True/False, whole floats and a repeated header, as in pandas."""
    rng = np.random.default_rng(9)
    n = 240
    race = rng.choice(["white", "black", "None", "<NA>", "NA", "", "null"], n)
    visit = rng.choice(["2020-01-03", "2021-02-03", "2022-12-31"], n)
    smoker = rng.choice(["True", "False", "TRUE", "false"], n)
    age = rng.choice(["40", "55.0", "NA", "61", "70.5"], n)
    label = rng.integers(0, 2, n)
    lines = ["label,prob,race,visit,smoker,age,sex,sex"] + [
        f"{label[i]},{rng.random():.4f},{race[i]},{visit[i]},{smoker[i]},{age[i]},{'FM'[i % 2]},{'AB'[i % 3 % 2]}"
        for i in range(n)]
    path = tmp_path / "quirks.csv"
    path.write_text("\n".join(lines) + "\n")
    argv = ["score", path, "--sensitive", "race", "visit", "smoker", "age", "sex.1", "--output"]
    run_oracle([*argv, tmp_path / "o.json"], capsys)
    _, _ = compare([*argv[:-1]], capsys)
    run_fast([*argv, tmp_path / "f.json"], capsys)
    fast, oracle = (json.loads((tmp_path / f"{w}.json").read_text()) for w in "fo")
    assert_close(fast["attributes"], oracle["attributes"])
    assert list(fast["attributes"]["visit"]["groups"]) == ["2020-01-03", "2021-02-03", "2022-12-31"]


def test_parquet_row_groups_read_as_dictionaries(tmp_path, capsys):
    """Text attributes come back dictionary-encoded per row group; categorical labels use their codes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(10)
    n = 400
    race = np.where(np.arange(n) < 150, rng.choice(["white", "black"], n), rng.choice(["asian", "black", "10"], n))
    frame = pd.DataFrame({
        "diagnosis": pd.Categorical(rng.choice(["normal", "tumour", "cyst"], n),
                                    categories=["tumour", "normal", "cyst", "unused"]),
        "score": rng.random(n), "race": race, "sex": rng.choice(["F", "M", None], n)})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, tmp_path / "groups.parquet", row_group_size=100)
    argv = ["score", tmp_path / "groups.parquet", "--label", "diagnosis", "--pos-label", "cyst",
            "--sensitive", "race", "sex", "--intersectional"]
    compare(argv, capsys)
    run_oracle([*argv, "--output", tmp_path / "o.json"], capsys)
    run_fast([*argv, "--output", tmp_path / "f.json"], capsys)
    fast, oracle = (json.loads((tmp_path / f"{w}.json").read_text()) for w in "fo")
    assert_close(fast["metadata"], oracle["metadata"], "metadata")
    assert_close(fast["attributes"], oracle["attributes"])


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_only_on_a_terminal(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr("fairmedfm_fast._util.progress.DELAY", 0.0)
    with _score.step("reading big.parquet"):
        time.sleep(0.3)  # the step "takes longer" than the delay
    assert "fairmedfm-fast: reading big.parquet ..." in terminal.getvalue()
    monkeypatch.setattr("fairmedfm_fast._util.progress.DELAY", 60.0)
    quick = _Terminal()
    monkeypatch.setattr(sys, "stderr", quick)
    with _score.step("reading"):
        pass
    assert quick.getvalue() == ""
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    monkeypatch.setattr("fairmedfm_fast._util.progress.DELAY", 0.0)
    with _score.step("reading") as progress:
        assert not progress.shown
    assert pipe.getvalue() == ""


def test_errors_where_fairmedfm_crashes_or_guesses(tmp_path, capsys):
    # an attribute with no value at all (fairmedfm 0.4.2 ends in a KeyError traceback)
    (tmp_path / "empty_attribute.csv").write_text("label,prob,sex\n1,0.1,\n0,0.2,\n1,0.3,\n0,0.5,\n")
    assert_one_error(["score", tmp_path / "empty_attribute.csv"], capsys, contains=["'sex'", "no values"])
    # nested values cannot be groups
    (tmp_path / "nested.jsonl").write_text('{"label":1,"prob":0.2,"sex":[1,2]}\n{"label":0,"prob":0.3,"sex":[3]}\n')
    assert_one_error(["score", tmp_path / "nested.jsonl"], capsys, contains=["'sex'", "one plain value"])
    # every row without a label
    (tmp_path / "no_labels.csv").write_text("label,prob,sex\n,0.1,F\n,0.2,M\n")
    assert_one_error(["score", tmp_path / "no_labels.csv"], capsys, contains=["label"])
    # an --output that cannot be written: nothing but the error line
    (tmp_path / "file").write_text("")
    (tmp_path / "ok.csv").write_text("label,prob,sex\n1,0.1,F\n0,0.2,M\n1,0.3,F\n0,0.5,M\n")
    assert_one_error(["score", tmp_path / "ok.csv", "--output", tmp_path / "file" / "report.json"], capsys,
                     contains=["--output"])


def test_columns_reach_evaluate_without_python_objects(tmp_path, capsys, monkeypatch):
    import pyarrow as pa

    import fairmedfm_fast
    import fairmedfm_fast.evaluation as evaluation

    seen = {}
    original = evaluation.evaluate

    def spy(y_true, y_score, sensitive_features, **kwargs):
        seen.update(y_true=y_true, y_score=y_score, sensitive=sensitive_features)
        return original(y_true, y_score, sensitive_features, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate", spy)
    monkeypatch.setattr(fairmedfm_fast, "evaluate", spy)  # the package keeps a name once looked up
    rng = np.random.default_rng(11)
    n = 200
    frame = pd.DataFrame({"target": rng.choice(["sick", "healthy"], n), "score": rng.random(n),
                          "sex": rng.choice(["F", "M"], n), "site": rng.integers(1, 4, n)})
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    assert run_fast(["score", tmp_path / "t.parquet", "--pos-label", "sick"], capsys)[0] == 0

    def plain(values):
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            return not pa.types.is_string(values.type)
        if isinstance(values, pd.Series):
            return values.dtype != object and not pd.api.types.is_string_dtype(values.dtype)
        return np.asarray(values).dtype != object

    assert plain(seen["y_true"]) and plain(seen["y_score"])
    columns = seen["sensitive"]
    assert all(plain(columns[name]) for name in ("sex", "site"))
    assert isinstance(columns["sex"].dtype, pd.CategoricalDtype)  # text: codes, not strings


# ------------------------------------------------------------------------------------------------
# Options beyond fairmedfm score: passed through to evaluate


def test_threshold_bootstrap_and_permutations_pass_through(data, capsys):
    import fairmedfm_fast as fm

    argv = ["score", data / "p.parquet", "--sensitive", "sex", "race", "--threshold", "0.4",
            "--bootstrap", "60", "--permutations", "40", "--seed", "3"]
    code, out, _ = run_fast(argv, capsys)
    assert code == 0
    printed = json.loads(out)
    assert run_fast(argv, capsys)[1] == out  # the seed fixes the resamples
    frame = pd.read_parquet(data / "p.parquet")
    report = fm.evaluate(frame["label"], frame["prob"], frame[["sex", "race"]], threshold=0.4, n_boot=60,
                         n_permutations=40, random_state=3)
    result = report.to_dict()
    for name in ("sex", "race"):
        expected = dict(result["attributes"][name]["summary"])
        bounds = result["ci"]["summary"][name]
        expected["ci"] = {key[:-3]: [bounds[key], bounds[key[:-3] + "_hi"]] for key in bounds if key.endswith("_lo")}
        expected["p_values"] = result["p_values"][name]
        assert_close(printed[name], expected, name)
    assert printed["sex"]["ci"]["auc-gap"][0] <= printed["sex"]["auc-gap"] <= printed["sex"]["ci"]["auc-gap"][1]
    code, table, _ = run_fast([*argv, "--format", "table"], capsys)
    assert code == 0 and "bootstrap intervals (60 resamples)" in table and "permutation p-values" in table
    # the intervals as a metric x attribute table of [low, high] cells, as narrow as the summary
    assert max(map(len, table.splitlines())) <= 140, max(table.splitlines(), key=len)
    low, high = printed["race"]["ci"]["auc-gap"]
    assert re.search(rf"^auc-gap +\[[-.\d]+, [-.\d]+\] +\[{low:.4f}, {high:.4f}\]$", table, re.M), table


def test_plot_and_html_files(data, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    argv = ["score", data / "p.csv", "--sensitive", "sex", "--plot", tmp_path / "figs" / "roc.png",
            "--html", tmp_path / "audit.html"]
    code, out, _ = run_fast(argv, capsys)
    assert code == 0 and json.loads(out)
    assert (tmp_path / "figs" / "roc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "audit.html").read_text()
    assert "<table" in page and "data:image/png;base64" in page
    code, _, _ = run_fast([*argv[:4], "--plot-kind", "reliability", "--plot", tmp_path / "rel.png"], capsys)
    assert code == 0 and (tmp_path / "rel.png").exists()


def test_extension_errors(data, tmp_path, capsys):
    assert_one_error(["score", data / "p.csv", "--sensitive", "sex", "--bootstrap", "-5"], capsys,
                     contains=["--bootstrap"])
    assert_one_error(["score", data / "p.csv", "--sensitive", "sex", "--threshold", "x"], capsys,
                     contains=["--threshold"])
    assert_one_error(["score", data / "p.csv", "--sensitive", "sex", "--plot-kind", "pie"], capsys,
                     contains=["--plot-kind"])


def test_interrupt_and_unexpected_errors(data, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "score", interrupted)
    code, out, err = run_fast(["score", data / "p.csv"], capsys)
    assert code == 130 and out == "" and len(err.splitlines()) == 1

    def broken(args):
        raise RuntimeError("something\nunforeseen")

    monkeypatch.setattr(cli, "score", broken)
    code, out, err = run_fast(["score", data / "p.csv"], capsys)
    assert code == 1 and out == ""
    assert err.splitlines() == [err.strip()] and "RuntimeError: something unforeseen" in err and "bug" in err


@needs_segmentation
def test_segmentation_extensions(tmp_path, capsys):
    rng = np.random.default_rng(12)
    n = 150
    pd.DataFrame({"dice": rng.random(n), "sex": rng.choice(["F", "M"], n)}).to_csv(tmp_path / "d.csv", index=False)
    assert_one_error(["score", tmp_path / "d.csv", "--threshold", "0.5"], capsys, contains=["--threshold"])
    code, out, _ = run_fast(["score", tmp_path / "d.csv", "--bootstrap", "30", "--permutations", "30",
                             "--seed", "1"], capsys)
    assert code == 0
    printed = json.loads(out)["sex"]
    assert printed["ci"]["delta_dice"][0] <= printed["delta_dice"] <= printed["ci"]["delta_dice"][1]
    assert set(printed["p_values"]) >= {"delta_dice"}


def test_settings_name_the_inputs_the_join_and_the_rows_left_out(tmp_path, capsys):
    rng = np.random.default_rng(8)
    n = 400
    predictions = pd.DataFrame({"image_id": [f"im{i}" for i in range(n)], "label": rng.integers(0, 2, n),
                                "score": rng.random(n)})
    predictions.loc[:9, "score"] = np.nan  # 10 rows without a score
    metadata = pd.DataFrame({"image_id": [f"im{i}" for i in range(5, n)],  # 5 predictions without metadata
                             "sex": rng.choice(["F", "M"], n - 5), "age": rng.uniform(20, 90, n - 5)})
    predictions.to_csv(tmp_path / "p.csv", index=False)
    metadata.to_csv(tmp_path / "m.csv", index=False)
    argv = ["score", tmp_path / "p.csv", "--metadata", tmp_path / "m.csv", "--on", "image_id", "--label", "label",
            "--score", "score", "--sensitive", "sex", "age", "--bins", "age=40,60", "--output", tmp_path / "r.json"]
    code, _, err = run_fast(argv, capsys)
    assert code == 0, err
    meta = json.loads((tmp_path / "r.json").read_text())["metadata"]
    assert meta["inputs"] == {"predictions": str(tmp_path / "p.csv"), "metadata": str(tmp_path / "m.csv"),
                              "join": {"on": "image_id", "prediction_rows": n, "metadata_rows": n - 5,
                                       "joined_rows": n - 5}}
    # rows 0-4 have no metadata row; rows 5-9 of the joined table have no score
    assert meta["samples_dropped"][:2] == [{"n": 5, "reason": "no metadata row"},
                                           {"n": 5, "reason": "missing label or score"}]
    assert meta["bins"] == {"age": [40.0, 60.0]} and meta["n_samples"] == n - 10
    assert set(meta["best_f1_threshold"]) == {"sex", "age"}
