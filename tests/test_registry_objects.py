"""The metric registry is one object whose entries are values: registering again replaces a changed
entry and keeps an unchanged one, names are matched without regard to case and shown as registered,
the package's own names are protected, and entries travel to Dask worker processes whole (a metric
defined in the client's session only, with nothing installed or imported on the workers)."""
import importlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast._registry import metrics as _metric_registry
from fairmedfm_fast._registry.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def registry():
    """The registry, put back as it was after the test."""
    saved = REGISTRY.snapshot()
    yield REGISTRY
    REGISTRY.restore(saved)


def _data(n=400, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    return y, p, {"sex": rng.choice(["F", "M"], n)}


def _detected(s):
    return s["tp"] / s["count"]


def _import_fresh(folder: Path, name: str):
    """Import module ``name`` from ``folder`` anew (as a plugin imported twice, or a cell run again)."""
    sys.modules.pop(name, None)
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)


def test_registering_again_replaces_a_changed_metric_and_keeps_an_unchanged_one(registry, tmp_path):
    y, p, groups = _data()
    source = "def detected(s):\n    return s[{!r}] / s['count']\n"
    (tmp_path / "cell.py").write_text(source.format("tp"))
    fm.register_metric("share", _import_fresh(tmp_path, "cell").detected, ["tp", "count"], at_threshold=True)
    first = fm.evaluate(y, p, groups, metrics=["share"]).by_group["share"]
    before = registry.by_name["share"]
    # the same module imported again: new function objects of the same code, a no-op
    fm.register_metric("share", _import_fresh(tmp_path, "cell").detected, ["tp", "count"], at_threshold=True)
    assert registry.by_name["share"] is before
    (tmp_path / "cell.py").write_text(source.format("fp"))  # the cell edited and run again
    fm.register_metric("share", _import_fresh(tmp_path, "cell").detected, ["fp", "count"], at_threshold=True)
    second = fm.evaluate(y, p, groups, metrics=["share"]).by_group["share"]
    assert not np.allclose(first.to_numpy(float), second.to_numpy(float))
    predicted = p > 0.5
    for name, value in second.items():
        mask = np.asarray(groups["sex"]) == name[1]
        assert value == pytest.approx(np.mean(predicted[mask] & (y[mask] == 0)))
    assert [m.name for m in registry.per_group].count("share") == 1
    assert [s.column for s in registry.summaries].count("share-gap") == 1


def test_options_changed_replace_the_summary_columns(registry):
    fm.register_metric("share", _detected, ["tp", "count"], at_threshold=True)
    fm.register_metric("share", _detected, ["tp", "count"], at_threshold=True, summaries={"share-worst": "worst"})
    assert "share-gap" not in registry.summary and "share-worst" in registry.summary


def test_names_ignore_case_and_show_as_registered(registry):
    y, p, groups = _data()
    fm.register_metric("Share", _detected, ["tp", "count"], at_threshold=True)
    report = fm.evaluate(y, p, groups, metrics=["share", "AP"])
    assert {"Share", "Share@best_f1", "ap"} <= set(report.by_group.columns)
    assert "Share-gap" in report.summary.columns
    assert _metric_registry.check_metrics(["SHARE"]) == ("Share",)


def test_the_page_shows_registered_metrics(registry):
    y, p, groups = _data()
    fm.register_metric("share", _detected, ["tp", "count"], at_threshold=True, display="share detected")
    page = fm.evaluate(y, p, groups, metrics=["share"]).to_html(figures=False)
    glossary = page[page.index('id="glossary"'):]
    assert "share@best_f1" in glossary and "share detected" in glossary and "share-gap" in glossary
    per_group = page[page.index("<h2>Per group</h2>"):page.index('id="glossary"')]
    assert "<th>share@best_f1</th>" in per_group


def test_the_package_s_names_are_protected(registry):
    with pytest.raises(ValueError, match="already a metric"):
        fm.register_metric("AUC", _detected, ["tp", "count"], at_threshold=True)
    with pytest.raises(ValueError, match="already a metric"):
        fm.register_metric("Brier", _detected, ["tp", "count"], at_threshold=True)
    with pytest.raises(ValueError, match="already a segmentation metric"):
        fm.register_segmentation_metric("Dice", lambda counts: counts[:, 0])


def _volumetric_similarity(counts):
    pred, true = counts[:, 0].astype(float), counts[:, 1].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1 - np.abs(pred - true) / (pred + true)


def test_a_segmentation_metric_registered_in_capitals(registry):
    fm.register_segmentation_metric("VS", _volumetric_similarity, display="volumetric similarity")
    rng = np.random.default_rng(0)
    pred = rng.random((6, 8, 8)) < 0.4
    true = rng.random((6, 8, 8)) < 0.4
    sex = ["F", "M"] * 3
    report = fm.evaluate_segmentation({"sex": sex}, pred_masks=pred, true_masks=true, metrics=["dice", "VS"])
    expected = _volumetric_similarity(np.stack([pred.reshape(6, -1).sum(1), true.reshape(6, -1).sum(1),
                                                (pred & true).reshape(6, -1).sum(1)], axis=1))
    assert report.by_group.loc[("sex", "F"), "mean_VS"] == pytest.approx(expected[0::2].mean())
    again = fm.evaluate_segmentation({"sex": sex}, pred_masks=pred, true_masks=true, metrics=["vs"])
    assert again.by_group.loc[("sex", "M"), "mean_VS"] == pytest.approx(expected[1::2].mean())


def test_an_entry_pickles_with_its_function_where_the_module_is_gone(registry, tmp_path):
    """A metric from a module on the client's path only: its entry pickles by value."""
    (tmp_path / "client_only_metrics.py").write_text("def finish(s):\n    return s['tp'] / s['count']\n\n"
                                                     "def term(labels, scores):\n    return scores * 2.0\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import client_only_metrics

        fm.register_metric("doubled", client_only_metrics.finish, ["tp", "count", "twice"], at_threshold=True,
                           terms={"twice": client_only_metrics.term})
        data = pickle.dumps((registry.by_name["doubled"], registry.sum["twice"]))
    finally:
        sys.path.remove(str(tmp_path))
        del sys.modules["client_only_metrics"]
    metric, entry = pickle.loads(data)  # the module cannot be imported now
    assert metric.name == "doubled" and entry.term(np.array([0.0]), np.array([0.25]))[0] == 0.5


_SESSION = """
import numpy as np, pandas as pd, dask.dataframe as dd, distributed
import fairmedfm_fast as fm
from fairmedfm_fast import dask as fmd

def share(s):
    return s["tp"] / s["count"]

def squared(labels, scores):
    return (scores - 0.5) ** 2

if __name__ == "__main__":
    rng = np.random.default_rng(1)
    n = 3000
    frame = pd.DataFrame({"y": rng.integers(0, 2, n), "p": rng.random(n), "sex": rng.choice(["F", "M"], n)})
    frame["p"] = np.clip(0.3 * frame["y"] + 0.7 * frame["p"], 0, 1)
    fm.register_metric("share", share, ["tp", "count"], at_threshold=True)
    fm.register_metric("spread", lambda s: s["sq"] / s["count"], ["sq", "count"], terms={"sq": squared})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \\
            distributed.Client(c):
        ddf = dd.from_pandas(frame, npartitions=4)
        got = fmd.evaluate(ddf, label="y", score="p", sensitive=["sex"], metrics=["share", "spread"])
        want = fm.evaluate(frame["y"], frame["p"], {"sex": frame["sex"]}, metrics=["share", "spread"])
        cols = ["share", "spread"]
        assert np.allclose(got.by_group[cols].to_numpy(float), want.by_group[cols].to_numpy(float)), (got.by_group,
                                                                                                     want.by_group)
        def share(s):  # the cell edited and run again
            return s["fp"] / s["count"]
        fm.register_metric("share", share, ["fp", "count"], at_threshold=True)
        again = fmd.evaluate(ddf, label="y", score="p", sensitive=["sex"], metrics=["share"])
        want = fm.evaluate(frame["y"], frame["p"], {"sex": frame["sex"]}, metrics=["share"])
        assert np.allclose(again.by_group["share"].to_numpy(float), want.by_group["share"].to_numpy(float))
        assert not np.allclose(again.by_group["share"].to_numpy(float), got.by_group["share"].to_numpy(float))
    print("ok")
"""


def test_a_session_metric_reaches_dask_worker_processes(tmp_path):
    """Registered in the client's script only (no entry point, no import on the workers), on a
    LocalCluster of worker processes; registered again with another function, the result changes."""
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("distributed")
    script = tmp_path / "session.py"
    script.write_text(_SESSION)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().endswith("ok")
