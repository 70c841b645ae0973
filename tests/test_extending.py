"""Metrics added from outside the package: a module of its own (written here, named by no package
file) registers the negative predictive value with ``fairmedfm_fast.register_metric`` and the IoU
of masks with ``register_segmentation_metric``, and declares itself in the
``fairmedfm_fast.metrics`` entry-point group; every way of computing a report gets them, checked
against NumPy."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast import _metric_registry, _resample

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
"""Negative predictive value, TN / (TN + FN), and IoU of masks, as fairmedfm_fast metrics."""
import numpy as np

import fairmedfm_fast


def npv(sums):
    negatives_predicted = (sums["negatives"] - sums["fp"]) + (sums["positives"] - sums["tp"])
    return (sums["negatives"] - sums["fp"]) / negatives_predicted


fairmedfm_fast.register_metric("npv", npv, ["tp", "fp", "positives", "negatives"],
                               display="negative predictive value", at_threshold=True,
                               summaries={"npv-gap": "gap", "worst-npv": "worst"})


def iou(counts):
    """|P and T| / |P or T| per sample (NaN when both masks are empty)."""
    union = counts[:, 0] + counts[:, 1] - counts[:, 2]
    return counts[:, 2] / np.where(union == 0, np.nan, union)


fairmedfm_fast.register_segmentation_metric("iou", iou, display="IoU", higher_is_better=True)
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """The plugin module and its distribution's metadata (an entry point), on the path."""
    where = tmp_path_factory.mktemp("plugin")
    (where / "npv_plugin.py").write_text(PLUGIN)
    info = where / "npv_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: npv-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[fairmedfm_fast.metrics]\nnpv = npv_plugin\n")
    saved = (_metric_registry.PER_GROUP, _metric_registry.SUMMARIES, _metric_registry._plugins_loaded,
             _metric_registry.SEGMENTATION)
    sys.path.insert(0, str(where))
    import npv_plugin  # noqa: F401 - registers the metric

    yield where
    sys.path.remove(str(where))
    del sys.modules["npv_plugin"]
    # the other test modules see the package's own metrics only
    (_metric_registry.PER_GROUP, _metric_registry.SUMMARIES, _metric_registry._plugins_loaded,
     _metric_registry.SEGMENTATION) = saved
    _metric_registry._rebuild()


def _npv(y, score, threshold):
    predicted_negative = ~(score > threshold)
    tn = np.sum(predicted_negative & (y == 0))
    fn = np.sum(predicted_negative & (y == 1))
    return tn / (tn + fn) if tn + fn else math.nan


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 2)
    groups = pd.DataFrame({"site": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n)})
    return y, score, groups


def _expected(y, score, groups, threshold):
    rows = {}
    for attribute in groups.columns:
        for group in sorted(groups[attribute].unique()):
            members = (groups[attribute] == group).to_numpy()
            rows[(attribute, group)] = (_npv(y[members], score[members], 0.5),
                                        _npv(y[members], score[members], threshold))
    return rows


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def test_evaluate_matches_numpy(plugin):
    y, score, groups = _data()
    report = fm.evaluate(y, score, groups, metrics=["npv"], threshold=0.4)
    expected = _expected(y, score, groups, 0.4)
    for (attribute, group), (plain, at_threshold) in expected.items():
        assert abs(report.by_group.loc[(attribute, group), "npv"] - plain) <= 1e-12
        assert abs(report.by_group.loc[(attribute, group), "npv@best_f1"] - at_threshold) <= 1e-12
    for attribute in groups.columns:
        values = [at for (a, _), (_, at) in expected.items() if a == attribute]
        assert abs(report.summary.loc[attribute, "npv-gap"] - (max(values) - min(values))) <= 1e-12
        assert report.summary.loc[attribute, "worst-npv"] == pytest.approx(min(values), abs=1e-12)
    # fairmedfm's columns are untouched
    plain = fm.evaluate(y, score, groups, threshold=0.4)
    pd.testing.assert_frame_equal(report.summary[plain.summary.columns], plain.summary)


def test_an_undefined_group_value_gives_nan_whatever_the_group_names(plugin):
    """A group predicted all positive has no NPV: its gap is NaN, not 0 or a number that depends on
    the groups' order (renaming the group moved it between the two before)."""
    y, score, groups = _data(seed=1)
    members = (groups["site"] == "b").to_numpy()
    score = score.copy()
    score[members] = np.maximum(score[members], 0.6)  # every prediction positive at 0.5 and at 0.4
    for name in ("b", "0", "z"):
        renamed = groups.assign(site=groups["site"].replace("b", name))
        report = _quiet(fm.evaluate, y, score, renamed, metrics=["npv"], threshold=0.4)
        assert math.isnan(report.by_group.loc[("site", name), "npv@best_f1"])
        assert math.isnan(report.summary.loc["site", "npv-gap"])
        assert math.isnan(report.summary.loc["site", "worst-npv"])
        assert not math.isnan(report.summary.loc["sex", "npv-gap"])


def test_bootstrap_by_the_fast_path_permutations_and_pairwise(plugin, monkeypatch):
    y, score, groups = _data(n=800, seed=2)
    assert _metric_registry.finished_from(["npv", "npv@best_f1"], _resample.TALLIED_SUMS)
    measured = []
    original = _resample._Tallied.measure
    monkeypatch.setattr(_resample._Tallied, "measure", lambda self, r: measured.append(r) or original(self, r))
    report = _quiet(fm.evaluate, y, score, groups, metrics=["npv"], n_boot=40, n_permutations=40, random_state=3)
    assert len(measured) == 2 * 40  # both attributes' resamples from the draw counts
    # The same intervals from the drawn samples with unit weights (the general path).
    weighted = _quiet(fm.evaluate, y, score, groups, metrics=["npv"], n_boot=40, random_state=3,
                      sample_weight=np.ones(len(y)))
    assert len(measured) == 2 * 40
    for key in ("npv", "npv@best_f1"):
        for end in ("_lo", "_hi"):
            np.testing.assert_allclose(report.ci["by_group"][key + end], weighted.ci["by_group"][key + end],
                                       rtol=0, atol=1e-12)
    assert {"npv-gap_lo", "npv-gap_hi", "worst-npv_lo", "worst-npv_hi"} <= set(report.ci["summary"].columns)
    assert report.p_values["npv-gap"].between(0, 1).all()
    assert "worst-npv" not in report.p_values.columns  # not a difference between groups
    pairs = report.pairwise("npv@best_f1")
    site = report.by_group.loc["site", "npv@best_f1"]
    assert abs(pairs.loc[("site", "a", "c"), "difference"] - (site["a"] - site["c"])) <= 1e-12
    assert "p_value" in pairs.columns


def test_one_number_function(plugin):
    from fairmedfm_fast import group_metrics

    y, score, groups = _data(n=700, seed=10)
    npv_gap = group_metrics.function_of("npv-gap")
    worst_npv = group_metrics.function_of("worst-npv")
    expected = _expected(y, score, groups[["site"]], 0.35)
    values = [at for _, at in expected.values()]
    assert abs(npv_gap(y, score, sensitive_features=groups["site"], threshold=0.35)
               - (max(values) - min(values))) <= 1e-12
    assert abs(worst_npv(y, score, sensitive_features=groups["site"], threshold=0.35) - min(values)) <= 1e-12
    assert npv_gap.__name__ == "npv_gap" and "npv@best_f1" in npv_gap.__doc__


def test_evaluate_tasks(plugin):
    y, score, groups = _data(n=600, seed=4)
    labels = pd.DataFrame({"x": y, "z": y[::-1].copy()})
    scores = pd.DataFrame({"x": score, "z": score[::-1].copy()})
    report = fm.evaluate_tasks(labels, scores, groups, metrics=["npv"])
    for task in ("x", "z"):
        single = fm.evaluate(labels[task], scores[task], groups, metrics=["npv"])
        pd.testing.assert_frame_equal(report.by_group.loc[task], single.by_group)


def test_plots_and_html(plugin):
    pytest.importorskip("matplotlib")
    y, score, groups = _data(n=500, seed=5)
    report = fm.evaluate(y, score, groups[["sex"]], metrics=["npv"])
    axes = report.plot("bars").get_axes()
    assert axes[-1].get_title() == "npv@best_f1"
    heights = [patch.get_height() for patch in axes[-1].patches]
    np.testing.assert_array_equal(heights, report.by_group["npv@best_f1"].to_numpy())
    page = report.to_html()
    assert "npv-gap" in page and "worst-npv" in page


def test_command_line_loads_the_entry_point(plugin, tmp_path):
    """A new process knows nothing of the module: the entry point brings it in for --metrics."""
    y, score, groups = _data(n=400, seed=6)
    table = groups.assign(label=y, prob=score)
    table.to_csv(tmp_path / "predictions.csv", index=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "fairmedfm_fast", "score", str(tmp_path / "predictions.csv"),
                           "--sensitive", "sex", "site", "--metrics", "npv"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    report = fm.evaluate(y, score, groups, metrics=["npv"])
    text = json.dumps(printed)
    assert "npv-gap" in text and "worst-npv" in text
    expected = report.summary.loc["sex", "npv-gap"]
    assert any(abs(value - expected) <= 1e-12 for value in _numbers(printed, "npv-gap"))


def _numbers(tree, key):
    if isinstance(tree, dict):
        for name, value in tree.items():
            if name == key and isinstance(value, (int, float)):
                yield value
            else:
                yield from _numbers(value, key)
    elif isinstance(tree, list):
        for value in tree:
            yield from _numbers(value, key)


def test_dask_on_worker_processes(plugin):
    """Dask on a LocalCluster with a worker process (about 10 s: the cluster starts)."""
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    import fairmedfm_fast.dask as fmd

    y, score, groups = _data(n=2000, seed=7)
    frame = pd.concat([groups, pd.DataFrame({"y": y, "p": score})], axis=1)
    memory = fm.evaluate(y, score, groups, metrics=["npv"])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster):
        distributed_report = fmd.evaluate(dd.from_pandas(frame, npartitions=3), label="y", score="p",
                                          sensitive=["site", "sex"], metrics=["npv"])
    np.testing.assert_allclose(distributed_report.by_group[["npv", "npv@best_f1"]].to_numpy(np.float64),
                               memory.by_group[["npv", "npv@best_f1"]].to_numpy(np.float64), rtol=0, atol=1e-12)
    np.testing.assert_allclose(distributed_report.summary[["npv-gap", "worst-npv"]].to_numpy(np.float64),
                               memory.summary[["npv-gap", "worst-npv"]].to_numpy(np.float64), rtol=0, atol=1e-12)


def test_bad_registrations_say_the_fix(plugin):
    with pytest.raises(ValueError, match="already a metric"):
        fm.register_metric("auc", lambda s: s["count"], ["count"])
    with pytest.raises(ValueError, match="at_threshold"):
        fm.register_metric("other", lambda s: s["tp"], ["tp"])
    with pytest.raises(ValueError, match="kind"):
        fm.register_metric("other", lambda s: s["count"], ["count"], summaries={"other-x": "median"})
    with pytest.raises(ValueError, match="name must"):
        fm.register_metric("bad name", lambda s: s["count"], ["count"])
    assert "other" not in _metric_registry.BY_NAME


def _masks(n=60, seed=8):
    rng = np.random.default_rng(seed)
    pred = rng.random((n, 6, 7)) < rng.uniform(0.05, 0.6, (n, 1, 1))
    true = rng.random((n, 6, 7)) < rng.uniform(0.05, 0.6, (n, 1, 1))
    pred[:3] = False  # both masks empty: the empty score
    true[:3] = False
    return pred, true, rng.choice(["F", "M", "X"], n)


def test_segmentation_metric_from_counts(plugin):
    pred, true, sex = _masks()
    report = _quiet(fm.evaluate_segmentation, {"sex": sex}, pred_masks=list(pred), true_masks=list(true),
                    metrics=["dice", "iou"], empty_score={"dice": 1.0, "iou": 0.5}, n_boot=20, n_permutations=20,
                    random_state=0)
    both = (pred & true).sum(axis=(1, 2))
    union = (pred | true).sum(axis=(1, 2))
    iou = np.where(union == 0, 0.5, both / np.maximum(union, 1))
    means = {group: iou[sex == group].mean() for group in ("F", "M", "X")}
    for group, mean in means.items():
        assert abs(report.by_group.loc[("sex", group), "mean_iou"] - mean) <= 1e-12
    summary = report.summary.loc["sex"]
    assert abs(summary["worst_iou"] - min(means.values())) <= 1e-12  # higher is better: the smallest mean
    assert abs(summary["delta_iou"] - (max(means.values()) - min(means.values()))) <= 1e-12
    assert abs(summary["mean_iou"] - iou.mean()) <= 1e-12
    assert {"mean_iou_lo", "mean_iou_hi"} <= set(report.ci["by_group"].columns)
    assert "delta_iou" in report.p_values.columns


def test_segmentation_metric_plots_and_errors(plugin):
    pytest.importorskip("matplotlib")
    pred, true, sex = _masks(seed=9)
    report = _quiet(fm.evaluate_segmentation, {"sex": sex}, pred_masks=list(pred), true_masks=list(true),
                    metrics=["iou"])
    figure = report.plot("iou")
    assert all(ax.get_ylabel() == "IoU" and ax.get_ylim()[1] > 1 for ax in figure.get_axes() if ax.get_title())
    assert "mean_iou" in report.to_html()
    with pytest.raises(ValueError, match="already a segmentation metric"):
        fm.register_segmentation_metric("nsd", lambda counts: counts[:, 0])


def test_a_broken_plugin_is_named(tmp_path, monkeypatch):
    """An entry point whose module fails to import gives a ValueError naming it."""
    (tmp_path / "broken_plugin.py").write_text("raise ImportError('no such thing')\n")
    info = tmp_path / "broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[fairmedfm_fast.metrics]\nbroken = broken_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_metric_registry, "_plugins_loaded", False)
    with pytest.raises(ValueError, match="plugin 'broken' .*failed to load: ImportError: no such thing"):
        fm.evaluate([0, 1, 0, 1], [0.1, 0.8, 0.3, 0.6], {"sex": ["F", "F", "M", "M"]}, metrics=["unknown"])
