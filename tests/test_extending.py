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
from fairmedfm_fast._engine import resample as _resample
from fairmedfm_fast._registry import metrics as _metric_registry

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


def absolute_error(labels, scores):
    """A new per-sample term: every backend adds it up per group (no package file names it)."""
    return np.abs(labels - scores.astype(np.float64))


def mae(sums):
    return sums["abs_error"] / sums["totals"]


fairmedfm_fast.register_metric("mae", mae, ["abs_error", "totals"], display="mean absolute error",
                               terms={"abs_error": absolute_error})


def mean_precision(sums):
    """Average precision under another name: it reads the table's optional "precision" sum."""
    return sums["precision"] / sums["positives"]


fairmedfm_fast.register_metric("mean_precision", mean_precision, ["precision", "positives"],
                               summaries={"mean_precision-ratio": "ratio"})


def miss_rate(sums):
    """FNR under another name, declared to depend on the scores given the label only."""
    return (sums["positives"] - sums["tp"]) / sums["positives"]


fairmedfm_fast.register_metric("miss_rate", miss_rate, ["tp", "positives"], at_threshold=True, given_label=True)


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
    saved = _metric_registry.REGISTRY.snapshot()
    sys.path.insert(0, str(where))
    import npv_plugin  # noqa: F401 - registers the metric

    yield where
    sys.path.remove(str(where))
    del sys.modules["npv_plugin"]
    # the other test modules see the package's own metrics only
    _metric_registry.REGISTRY.restore(saved)


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


def test_dask_on_worker_processes(plugin, monkeypatch):
    """Dask on a LocalCluster with a worker process (about 10 s: the cluster starts). The worker
    makes the new sum's per-partition sums: it loads the plugin through its entry point."""
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    import fairmedfm_fast.dask as fmd

    y, score, groups = _data(n=2000, seed=7)
    frame = pd.concat([groups, pd.DataFrame({"y": y, "p": score})], axis=1)
    metrics = ["npv", "mae", "mean_precision"]
    memory = fm.evaluate(y, score, groups, metrics=metrics)
    # the worker process finds the plugin's module and entry point as an installed plugin would be found
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugin), str(ROOT)]))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster):
        distributed_report = fmd.evaluate(dd.from_pandas(frame, npartitions=3), label="y", score="p",
                                          sensitive=["site", "sex"], metrics=metrics)
    keys = ["npv", "npv@best_f1", "mae", "mean_precision"]
    np.testing.assert_allclose(distributed_report.by_group[keys].to_numpy(np.float64),
                               memory.by_group[keys].to_numpy(np.float64), rtol=0, atol=1e-12)
    columns = ["npv-gap", "worst-npv", "mae-gap", "mean_precision-ratio"]
    np.testing.assert_allclose(distributed_report.summary[columns].to_numpy(np.float64),
                               memory.summary[columns].to_numpy(np.float64), rtol=0, atol=1e-12)


def _mae_and_ap(y, score, weights=None):
    weights = np.ones(len(y)) if weights is None else weights
    mae = float(np.sum(weights * np.abs(y - score)) / np.sum(weights))
    from sklearn.metrics import average_precision_score

    return mae, float(average_precision_score(y, score, sample_weight=weights))


def test_a_metric_of_a_new_sum_in_every_backend(plugin):
    """A registered per-sample term ("abs_error") and a metric reading the table's optional
    "precision" sum under a new name: each backend makes the sums the table names, whatever the
    metric is called (the engine, with and without weights, the accumulator, voxels)."""
    y, score, groups = _data(n=900, seed=12)
    weights = np.random.default_rng(12).uniform(0.5, 2, len(y))
    for weight in (None, weights):
        report = fm.evaluate(y, score, groups, metrics=["mae", "mean_precision"], sample_weight=weight)
        for (attribute, group), row in report.by_group.iterrows():
            members = (groups[attribute] == group).to_numpy()
            mae, ap = _mae_and_ap(y[members], score[members], None if weight is None else weight[members])
            assert abs(row["mae"] - mae) <= 1e-12 and abs(row["mean_precision"] - ap) <= 1e-12
        assert "mae-gap" in report.summary.columns and "mean_precision-ratio" in report.summary.columns
    report = fm.evaluate(y, score, groups, metrics=["mae", "mean_precision"])
    accumulator = fm.FairnessAccumulator(metrics=["mae", "mean_precision"])
    for part in np.array_split(np.arange(len(y)), 3):
        accumulator.update(y[part], score[part], groups.iloc[part])
    np.testing.assert_allclose(accumulator.result().by_group[["mae", "mean_precision"]].to_numpy(np.float64),
                               report.by_group[["mae", "mean_precision"]].to_numpy(np.float64), rtol=0, atol=1e-12)
    from fairmedfm_fast import group_metrics

    assert abs(group_metrics.function_of("mae-gap")(y, score, sensitive_features=groups["site"])
               - report.summary.loc["site", "mae-gap"]) <= 1e-12


def test_voxels_take_metrics_like_evaluate(plugin):
    """evaluate_voxels(metrics=...) equals evaluate on the same voxels, the term sums included
    (in memory, streamed, and in several windows); a metric whose pass the sweep lacks is refused."""
    rng = np.random.default_rng(13)
    maps = rng.random((12, 5, 6)).astype(np.float32)
    truth = rng.random((12, 5, 6)) < 0.2 + 0.5 * maps
    roi = rng.random((12, 5, 6)) < 0.9
    sex = rng.choice(["F", "M"], 12)
    metrics = ["mae", "brier", "fpr", "npv"]
    inside = roi.reshape(12, -1)
    flat = fm.evaluate(truth.reshape(12, -1)[inside].astype(np.uint8), maps.reshape(12, -1)[inside],
                       {"sex": np.repeat(sex, inside.sum(axis=1))}, metrics=metrics)
    keys = ["mae", "brier", "fpr", "fpr@best_f1", "npv", "npv@best_f1"]
    for how in ({}, {"max_memory": 64}):
        voxels = _quiet(fm.evaluate_voxels, maps, truth, {"sex": sex}, roi_masks=roi, metrics=metrics, **how)
        np.testing.assert_allclose(voxels.by_group[keys].to_numpy(np.float64), flat.by_group[keys].to_numpy(np.float64),
                                   rtol=1e-12, atol=1e-12)
        columns = ["mae-gap", "brier-gap", "fpr-gap", "npv-gap"]
        np.testing.assert_allclose(voxels.summary[columns].to_numpy(np.float64),
                                   flat.summary[columns].to_numpy(np.float64), rtol=1e-12, atol=1e-12)
        assert voxels.metadata["metrics"] == ["brier", "fpr", "npv", "mae"]
    streamed = fm.evaluate_voxels(lambda: iter(zip(maps, truth)), None, {"sex": sex}, metrics=["mae"])
    everything = fm.evaluate(truth.reshape(12, -1).ravel().astype(np.uint8), maps.ravel(),
                             {"sex": np.repeat(sex, 30)}, metrics=["mae"])
    np.testing.assert_allclose(streamed.by_group["mae"].to_numpy(np.float64),
                               everything.by_group["mae"].to_numpy(np.float64), rtol=1e-12)
    with pytest.raises(ValueError, match="metrics='mean_precision' is not available in evaluate_voxels"):
        fm.evaluate_voxels(maps, truth, {"sex": sex}, metrics=["mean_precision"])
    with pytest.raises(ValueError, match="metrics='ap' is not available"):
        fm.VoxelAccumulator({"sex": sex}, metrics=["ap"])


BACKENDS = ("_engine/classification.py", "_engine/resample.py", "_engine/records.py", "_engine/voxels.py",
            "_backends/voxels.py", "_backends/accumulator.py", "_backends/dask.py")


def test_backends_do_not_branch_on_metric_names():
    """The backends run the passes that the registry's sum entries name: no metric's name appears in
    them (the names that are also sums, "ece", "tp", "fp", only as sums, never compared)."""
    import ast

    names = {m.name for m in _metric_registry.REGISTRY.per_group} | {m.name + "@best_f1" for m in _metric_registry.REGISTRY.per_group}
    sums = set(_metric_registry.REGISTRY.sum)
    found = []
    for module in BACKENDS:
        tree = ast.parse((ROOT / "fairmedfm_fast" / module).read_text())
        compared = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.Compare)
                    for sub in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names and (
                    node.value not in sums or id(node) in compared):
                found.append(f"{module}:{node.lineno} {node.value!r}")
    assert not found, found


def test_bad_registrations_say_the_fix(plugin):
    with pytest.raises(ValueError, match="already a metric"):
        fm.register_metric("auc", lambda s: s["count"], ["count"])
    with pytest.raises(ValueError, match="at_threshold"):
        fm.register_metric("other", lambda s: s["tp"], ["tp"])
    with pytest.raises(ValueError, match="kind"):
        fm.register_metric("other", lambda s: s["count"], ["count"], summaries={"other-x": "median"})
    with pytest.raises(ValueError, match="name must"):
        fm.register_metric("bad name", lambda s: s["count"], ["count"])
    with pytest.raises(ValueError, match="name the sums finish reads"):
        fm.register_metric("other", lambda s: s["nothing"], ["nothing"])
    with pytest.raises(ValueError, match="already a sum"):
        fm.register_metric("other", lambda s: s["loss"], ["loss"], terms={"loss": lambda labels, scores: scores})
    assert "other" not in _metric_registry.REGISTRY.by_name


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
    monkeypatch.setattr(_metric_registry.REGISTRY, "plugins_loaded", False)
    with pytest.raises(ValueError, match="plugin 'broken' .*failed to load: ImportError: no such thing"):
        fm.evaluate([0, 1, 0, 1], [0.1, 0.8, 0.3, 0.6], {"sex": ["F", "F", "M", "M"]}, metrics=["unknown"])


def test_a_metric_given_the_label_is_tested_within_classes(plugin):
    # miss_rate is FNR under another name: the same within-class permutations and simultaneous
    # interval as the built-in fnr-gap; npv moves with the prevalence, so its groups are shuffled
    # among all samples.
    from fairmedfm_fast._statistics import findings as _findings

    assert {"miss_rate-gap", "fnr-gap", "auc-gap", "eo", "eod"} <= set(_findings.within_label())
    assert "npv-gap" not in _findings.within_label() and "acc-gap" not in _findings.within_label()
    y, scores, groups = _data(4000, seed=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fm.evaluate(y, scores, groups, metrics=["miss_rate", "fnr", "npv"], n_boot=40,
                             n_permutations=40, random_state=1)
    p = report.p_values.loc["site"]
    assert p["miss_rate-gap"] == p["fnr-gap"]
    ci = report.ci["summary"].loc["site"]
    assert (ci["miss_rate-gap_lo"], ci["miss_rate-gap_hi"]) == (ci["fnr-gap_lo"], ci["fnr-gap_hi"])
    gaps = report.gaps.loc["site"]
    assert gaps.loc["miss_rate-gap", "lo"] == gaps.loc["fnr-gap", "lo"]
    assert gaps.loc["npv-gap", "hi"] - gaps.loc["npv-gap", "value"] > 0  # simultaneous, not a percentile


def test_cli_help_lists_the_metrics_of_installed_plugins(plugin, capsys):
    """``fairmedfm-fast score --help`` loads the entry points before it lists the opt-in metrics."""
    from fairmedfm_fast import cli
    from fairmedfm_fast._registry.registry import MetricRegistry

    saved, module = _metric_registry.REGISTRY.snapshot(), sys.modules.pop("npv_plugin")
    _metric_registry.REGISTRY.restore(MetricRegistry().snapshot())  # as in a new process: no plugin loaded yet
    try:
        with pytest.raises(SystemExit):
            cli.main(["score", "--help"])
        assert "npv (" in " ".join(capsys.readouterr().out.split())
    finally:
        _metric_registry.REGISTRY.restore(saved)
        sys.modules["npv_plugin"] = module
