"""evaluate_tasks (many labels or models in one call) and FairnessReport.pairwise."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from compare import assert_close

import fairmedfm_fast as fm


def _data(n: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = pd.DataFrame({name: rng.integers(0, 2, n) for name in ("effusion", "edema", "mass")})
    scores = pd.DataFrame({name: np.clip(0.3 * labels[name] + 0.7 * rng.random(n), 0, 1)
                           for name in ("mass", "effusion", "edema")})  # another column order: paired by name
    groups = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "site": rng.choice(["a", "b", "c", "d"], n),
                           "age": rng.choice([30, 50, 70, np.nan], n)})
    return labels, scores, groups


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _assert_task_equals(report, task, single):
    assert_close(report.summary.loc[task], single.summary, f"{task}.summary")
    assert_close(report.by_group.loc[task], single.by_group, f"{task}.by_group")


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_tasks_equal_one_evaluate_per_task(n_jobs):
    labels, scores, groups = _data()
    report = _quiet(fm.evaluate_tasks, labels, scores, groups, intersectional=True, n_jobs=n_jobs)
    assert list(report.tasks) == ["effusion", "edema", "mass"]
    assert report.summary.index.names == ["task", "attribute"]
    assert report.by_group.index.names == ["task", "attribute", "group"]
    for task in labels:
        single = _quiet(fm.evaluate, labels[task], scores[task], groups, intersectional=True)
        _assert_task_equals(report, task, single)
        assert report.overall[task] == single.overall


def test_numpy_tasks_pair_by_position_and_models_share_one_label():
    labels, scores, groups = _data()
    y, p = labels.to_numpy(), scores[list(labels)].to_numpy()
    report = _quiet(fm.evaluate_tasks, y, p, groups.to_dict("list"), bins={"age": [40, 60]})
    assert list(report.tasks) == ["task_0", "task_1", "task_2"]
    for j, task in enumerate(report.tasks):
        single = _quiet(fm.evaluate, y[:, j], p[:, j], groups.to_dict("list"), bins={"age": [40, 60]})
        _assert_task_equals(report, task, single)
    # Several models scored on one label: the label column serves every score column.
    models = pd.DataFrame({"model_a": p[:, 0], "model_b": np.clip(p[:, 0] + 0.05, 0, 1)})
    report = _quiet(fm.evaluate_tasks, y[:, 0], models, groups[["sex", "site"]])
    assert list(report.tasks) == ["model_a", "model_b"]
    _assert_task_equals(report, "model_b", _quiet(fm.evaluate, y[:, 0], models["model_b"], groups[["sex", "site"]]))


def test_one_class_task_is_skipped_not_raised():
    labels, scores, groups = _data()
    labels["mass"] = 0
    report = _quiet(fm.evaluate_tasks, labels, scores, groups[["sex"]])
    assert list(report.tasks) == ["effusion", "edema"]
    assert report.metadata["skipped_tasks"] == {"mass": "only label 0 among its 1500 samples"}
    assert any("'mass'" in message and "skipped" in message for message in report.warnings)
    assert "mass" not in report.summary.index.get_level_values("task")


def test_intervals_and_p_values_stack_per_task():
    labels, scores, groups = _data(600)
    options = {"n_boot": 30, "n_permutations": 20, "random_state": 3}
    report = _quiet(fm.evaluate_tasks, labels, scores, groups[["sex", "site"]], **options)
    single = _quiet(fm.evaluate, labels["edema"], scores["edema"], groups[["sex", "site"]], **options)
    assert_close(report.ci["by_group"].loc["edema"], single.ci["by_group"], "ci.by_group")
    assert_close(report.ci["summary"].loc["edema"], single.ci["summary"], "ci.summary")
    assert_close(report.p_values.loc["edema"], single.p_values, "p_values")


def test_report_outputs_work_on_tasks(tmp_path):
    pytest.importorskip("matplotlib")
    labels, scores, groups = _data(400)
    report = _quiet(fm.evaluate_tasks, labels, scores, groups[["sex", "site"]])
    data = json.loads(report.to_json())
    assert list(data["tasks"]) == list(labels)
    assert data["tasks"]["mass"]["attributes"]["site"]["summary"]["auc-gap"] == pytest.approx(
        report.summary.loc[("mass", "site"), "auc-gap"])
    page = report.to_html()
    assert page.count("<figure>") == 3 * 4 and "Task edema" in page
    with pytest.raises(ValueError, match="pass the task to draw"):
        report.plot("roc")
    assert report.plot("roc", task="mass") is not None


def test_tasks_report_has_each_tasks_gaps():
    labels, scores, groups = _data(600)
    options = dict(n_boot=20, n_permutations=20, random_state=1, p_adjust="holm")
    report = _quiet(fm.evaluate_tasks, labels, scores, groups[["sex", "site"]], **options)
    assert report.gaps.index.names == ["task", "attribute", "column"]
    assert list(report.gaps.index.get_level_values("task").unique()) == list(labels)
    for task in labels:
        single = _quiet(fm.evaluate, labels[task], scores[task], groups[["sex", "site"]], **options)
        pd.testing.assert_frame_equal(report.gaps.loc[task], single.gaps)
    assert report.gaps.loc[("mass", "site", "auc-gap"), "value"] == report.summary.loc[("mass", "site"), "auc-gap"]
    assert json.loads(report.to_json())["tasks"]["mass"]["gaps"]["site"]["auc-gap"]["low_group"] == \
        report.gaps.loc[("mass", "site", "auc-gap"), "low_group"]


@pytest.mark.parametrize("bad, message", [
    (lambda y, p: (y, p.rename(columns={"mass": "nodule"})), "paired by column name"),
    (lambda y, p: (y.to_numpy(), p.to_numpy()[:, :2]), "3 columns but y_score has 2"),
    (lambda y, p: (y, np.zeros((len(y), 2, 2))), "1-D .one column. or 2-D"),
])
def test_bad_task_tables_name_the_problem(bad, message):
    labels, scores, groups = _data(200)
    y, p = bad(labels, scores)
    with pytest.raises(ValueError, match=message):
        fm.evaluate_tasks(y, p, groups[["sex"]])
    with pytest.raises(ValueError, match="score_column"):
        fm.evaluate_tasks(labels, scores, groups[["sex"]], score_column=1)


# ------------------------------------------------------------------------------------------------
# pairwise


def test_pairwise_equals_differences_from_by_group():
    labels, scores, groups = _data()
    report = _quiet(fm.evaluate, labels["edema"], scores["edema"], groups, bins={"age": [40, 60]})
    for metric in ("auc", "acc@best_f1", "ece"):
        table = report.pairwise(metric)
        for attribute in report.summary.index:
            frame = report.by_group.loc[attribute]
            valid = frame[frame["skipped"].isna()][metric]
            rows = table.loc[attribute]
            assert len(rows) == len(valid) ** 2
            for (group, other), value in rows["difference"].items():
                assert value == valid[group] - valid[other]
        matrix = table.loc["site", "difference"].unstack()
        assert list(matrix.index) == list(matrix.columns) == ["a", "b", "c", "d"]
        assert np.allclose(matrix.to_numpy(), -matrix.to_numpy().T)


def test_pairwise_leaves_out_skipped_groups_and_reads_segmentation():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    site = rng.choice(["a", "b", "c"], 300)
    y[site == "c"] = 1  # group c has one label: skipped
    report = _quiet(fm.evaluate, y, rng.random(300), {"site": site})
    assert set(report.pairwise().index.get_level_values("group")) == {"a", "b"}
    seg = _quiet(fm.evaluate_segmentation, {"site": site}, dice=rng.random(300))
    table = seg.pairwise()
    means = seg.by_group.loc["site", "mean_dice"]
    assert table.loc[("site", "a", "c"), "difference"] == means["a"] - means["c"]
    with pytest.raises(ValueError, match="not a per-group metric"):
        seg.pairwise("auc")


def test_pairwise_on_tasks_has_a_task_level():
    labels, scores, groups = _data(500)
    report = _quiet(fm.evaluate_tasks, labels, scores, groups[["sex"]])
    table = report.pairwise("auc")
    assert table.index.names == ["task", "attribute", "group", "other"]
    single = _quiet(fm.evaluate, labels["mass"], scores["mass"], groups[["sex"]]).pairwise("auc")
    assert_close(table.loc["mass"], single, "pairwise")


def test_pairwise_heat_map():
    pytest.importorskip("matplotlib")
    labels, scores, groups = _data(500)
    report = _quiet(fm.evaluate, labels["mass"], scores["mass"], groups[["sex", "site"]])
    figure = report.plot("pairwise")
    images = [ax.images[0] for ax in figure.axes if ax.images]
    assert len(images) == 2
    site = images[1].get_array()
    assert site.shape == (4, 4) and np.allclose(np.diag(site), 0)


def test_pairwise_heat_map_of_a_report_of_several_tasks():
    # It drew every panel empty ("fewer than two evaluable groups"): the attributes were looked up by
    # the (task, attribute) pairs of the summary's index, as text.
    pytest.importorskip("matplotlib")
    from fairmedfm_fast._report import pictures as _pictures

    labels, scores, groups = _data(500)
    report = _quiet(fm.evaluate_tasks, labels, scores, groups[["sex", "site"]])
    figure = _pictures.plot_pairwise(report)
    panels = [ax for ax in figure.axes if ax.images]
    assert [ax.get_title() for ax in panels] == [f"{task}: {name}" for task in labels for name in ("sex", "site")]
    for ax, (task, name) in zip(panels, [(task, name) for task in labels for name in ("sex", "site")]):
        expected = report.tasks[task].pairwise("auc").loc[name, "difference"].unstack().to_numpy()
        assert np.allclose(ax.images[0].get_array(), expected)
    site = [ax for ax in _pictures.plot_pairwise(report, attributes="site").axes if ax.images]
    assert [ax.get_title() for ax in site] == [f"{task}: site" for task in labels]
    single = report.plot("pairwise", task="mass")  # one task: as the task's own report draws it
    assert [ax.get_title() for ax in single.axes if ax.images] == ["sex", "site"]


def test_pairwise_intervals_and_p_values_come_from_the_resamples():
    rng = np.random.default_rng(4)
    n = 3000
    site = rng.choice(["a", "b", "c"], n)
    y = rng.integers(0, 2, n)
    noise = np.where(site == "c", 0.9, 0.4)  # site c is much worse
    p = np.clip(0.5 * y + noise * rng.random(n), 0, 1)
    report = _quiet(fm.evaluate, y, p, {"site": site}, n_boot=200, n_permutations=200, random_state=0)
    table = report.pairwise("auc")
    assert {"difference_lo", "difference_hi", "p_value"} <= set(table.columns)
    boot = report.replicates[("boot", "site", "auc")]
    # The replicates are those behind the per-group intervals of report.ci ...
    lo, hi = np.percentile(boot[:, 2], [2.5, 97.5])
    assert report.ci["by_group"].loc[("site", "c"), ["auc_lo", "auc_hi"]].tolist() == pytest.approx([lo, hi])
    # ... and a pair's interval is the percentile interval of the paired differences.
    expected = np.percentile(boot[:, 0] - boot[:, 2], [2.5, 97.5])
    assert table.loc[("site", "a", "c"), ["difference_lo", "difference_hi"]].tolist() == pytest.approx(expected)
    assert table.loc[("site", "a", "a"), ["difference_lo", "difference_hi"]].tolist() == [0.0, 0.0]
    assert table.loc[("site", "a", "c"), "difference_lo"] > 0  # the planted gap is found
    assert table.loc[("site", "a", "c"), "p_value"] == table.loc[("site", "c", "a"), "p_value"]
    assert table.loc[("site", "a", "c"), "p_value"] == pytest.approx(1 / 201)
    assert table.loc[("site", "a", "b"), "p_value"] > 0.05  # a and b come from the same model
    perm = report.replicates[("perm", "site", "auc")]
    null = perm[:, 0] - perm[:, 1]
    observed = table.loc[("site", "a", "b"), "difference"]
    assert table.loc[("site", "a", "b"), "p_value"] == pytest.approx(
        (1 + np.count_nonzero(np.abs(null) >= abs(observed) - 1e-12)) / (1 + len(null)))


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_tasks_reusing_memory_equal_evaluate_and_share_none(n_jobs):
    # Large enough for the carrying sort: each worker reuses its sort's and its BCE terms' memory for
    # its next task. Every report is read after all ran (with resamples, which read the sorted arrays
    # during their task), and none may share memory with another.
    labels, scores, groups = _data(40_000, seed=3)
    report = _quiet(fm.evaluate_tasks, labels["mass"], scores, groups, n_boot=20, random_state=0, n_jobs=n_jobs)
    for task in scores:
        single = _quiet(fm.evaluate, labels["mass"], scores[task], groups, n_boot=20, random_state=0)
        _assert_task_equals(report, task, single)
        assert_close(report.tasks[task].gaps, single.gaps, f"{task}.gaps")
        assert_close(report.ci["summary"].loc[task], single.ci["summary"], f"{task}.ci")


def test_lend_never_hands_out_memory_a_live_array_shares():
    from fairmedfm_fast._engine import memory

    assert memory.lend("x", 64) is None  # outside reusing: allocate as usual
    held: dict = {}
    with memory.reusing(held):
        first = memory.lend("x", 64)
        view = first[8:].view(np.float64)
        del first
        second = memory.lend("x", 64)  # the view keeps the first alive: new memory
        assert not np.shares_memory(second, view)
        del view
        third = memory.lend("x", 32)  # the first is free again: reused
        assert np.shares_memory(third, held["x"][0])
        del second, third
        assert len(held["x"]) == 2
        larger = memory.lend("x", 1000)
        assert larger.nbytes == 1000 and len(held["x"]) == 3
    assert memory.lend("x", 64) is None
