"""A report keeps bounded summaries, not its inputs (#28 item 10: at 1e8 samples a report held 1.6 GiB of
sorted scores, labels, codes and log-losses for its pictures), and its pictures equal what they drew
from the samples: ROC points on the exact curve (the corners included), reliability bins equal to the
calibration kernel's, the AUC and operating point of the report."""
import functools
import io
import pickle

import numpy as np
import pytest
from sklearn.metrics import roc_curve

import fairmedfm_fast as fm
from fairmedfm_fast._engine import classification as _engine
from fairmedfm_fast._report import curves as _curves
from fairmedfm_fast._report import pictures as _pictures
from fairmedfm_fast.kernels import calibration


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    scores = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)  # nearly all distinct
    features = {"sex": rng.choice(["F", "M"], n), "site": rng.choice(["a", "b", "c"], n)}
    return y, scores, features


def _largest_array(root) -> int:
    """Elements of the largest NumPy array reachable from ``root`` (attributes, containers, closures,
    ``functools.partial`` arguments, and the arrays that views keep alive)."""
    seen, stack, largest = set(), [root], 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, (str, bytes, int, float, type)) or item is None:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            largest = max(largest, item.size)
            if item.base is not None:
                stack.append(item.base)
            if item.dtype == object:
                stack.extend(item.ravel().tolist())
            continue
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, functools.partial):
            stack.extend([item.func, *item.args, *item.keywords.values()])
        elif callable(item) and hasattr(item, "__closure__"):
            stack.extend(cell.cell_contents for cell in item.__closure__ or ())
        if hasattr(item, "__dict__") and not isinstance(item, type(np)):
            stack.extend(vars(item).values())
        if hasattr(item, "__slots__"):
            stack.extend(getattr(item, slot) for slot in item.__slots__ if hasattr(item, slot))
    return largest


#: The largest table a report of _inputs keeps: its 7 slots (2 + 1 of sex, 3 + 1 of site) times at most
#: CURVE_POINTS + 2 cuts (each attribute's curves are a window of it).
BOUND = 7 * (_engine.CURVE_POINTS + 2)


@pytest.mark.parametrize("weighted", [False, True])
def test_report_holds_no_per_sample_array(weighted):
    sizes = {}
    for n in (20_000, 200_000):
        y, scores, features = _inputs(n)
        weights = np.random.default_rng(1).integers(1, 3, n) if weighted else None
        report = fm.evaluate(y, scores, features, sample_weight=weights)
        largest = _largest_array(report)
        assert 1000 < largest <= BOUND < n  # the walk does reach the curves' tables
        sizes[n] = len(pickle.dumps(report))
    # ten times the samples, the same size: nothing kept grows with n
    assert sizes[200_000] <= 1.05 * sizes[20_000]


def test_accumulator_report_holds_no_per_sample_array():
    y, scores, features = _inputs(30_000, seed=2)
    accumulator = fm.FairnessAccumulator()
    for a in range(0, len(y), 10_000):
        accumulator.update(y[a:a + 10_000], scores[a:a + 10_000], {k: v[a:a + 10_000] for k, v in features.items()})
    assert _largest_array(accumulator.result()) <= BOUND


def _exact(y, scores, members, weights=None):
    fpr, tpr, _ = roc_curve(y[members], scores[members], drop_intermediate=False,
                            sample_weight=None if weights is None else weights[members])
    return fpr, tpr


@pytest.mark.parametrize("weighted", [False, True])
def test_large_groups_keep_points_of_the_exact_curve(weighted):
    y, scores, features = _inputs(30_000, seed=5)  # groups of ~10,000 samples: thinned to the bound
    weights = np.random.default_rng(3).integers(0, 4, len(y)).astype(float) if weighted else None
    report = fm.evaluate(y, scores, features, sample_weight=weights)
    for entry in _pictures.classification_curves(report):
        present = np.ones(len(y), bool)
        for curve in [*entry.groups, entry.overall]:
            members = present if curve.name == "all" else features[entry.attribute] == curve.name
            fpr, tpr = _exact(y, scores, members, weights)
            assert 100 < len(curve.fpr) <= _curves.MAX_POINTS + 2
            # every kept point lies on the full curve, the corners included, in the curve's order
            exact = {(a, b): i for i, (a, b) in enumerate(zip(fpr.tolist(), tpr.tolist()))}
            where = [exact.get((a, b)) for a, b in zip(curve.fpr.tolist(), curve.tpr.tolist())]
            assert None not in where and where == sorted(where)
            assert (curve.fpr[0], curve.tpr[0]) == (0, 0) and (curve.fpr[-1], curve.tpr[-1]) == (1, 1)
            # the AUC is the report's, not the thinned curve's; the thinned area differs by a hair
            row = (report._attribute_overall[entry.attribute] if curve.name == "all"
                   else report.by_group.loc[(entry.attribute, curve.name)])
            assert curve.auc == pytest.approx(row["auc"], abs=1e-12)
            assert abs(curve.trapezoid_area() - curve.auc) < 2e-3
            assert curve.operating_point == pytest.approx((1 - row["tnr@best_f1"], row["tpr@best_f1"]), abs=1e-12)


def test_small_groups_among_large_ones_keep_their_exact_curve():
    y, scores, features = _inputs(50_000, seed=6)
    features["site"] = features["site"].astype(object)
    features["site"][:40] = "tiny"  # 40 samples spread over the scores: each between two cuts, nearly
    y[:40] = np.arange(40) % 2
    report = fm.evaluate(y, scores, features)
    curve = next(c for c in _pictures.classification_curves(report, "site")[0].groups if c.name == "tiny")
    fpr, tpr = _exact(y, scores, features["site"] == "tiny")
    exact = set(zip(fpr.tolist(), tpr.tolist()))
    assert set(zip(curve.fpr.tolist(), curve.tpr.tolist())) <= exact
    assert len(curve.fpr) >= 0.8 * len(fpr)  # about 1,000 cuts among 50,000 samples: most points kept


def test_reliability_bins_equal_the_calibration_kernels():
    y, scores, features = _inputs(40_000, seed=7)
    weights = np.random.default_rng(4).integers(1, 4, len(y)).astype(float)
    for w in (None, weights):
        report = fm.evaluate(y, scores, features, sample_weight=w)
        order = np.argsort(scores, kind="stable")
        for entry in _pictures.classification_curves(report):
            groups = [c.name for c in entry.groups]
            codes = np.array([groups.index(v) for v in features[entry.attribute]], np.int8)[order][None, :]
            sizes = np.array([len(groups)], np.int64)
            sorted_scores, labels = scores[order], y[order].astype(np.uint8)
            sorted_w = None if w is None else w[order]
            _, _, low, high = calibration.score_ranges(sorted_scores, labels, codes, sizes, sorted_w)
            edges = calibration.equal_width_edges(low, high, _engine.ECE_BINS)
            count, label_sum, score_sum = calibration.binned_calibration(sorted_scores, labels, codes, sizes, edges,
                                                                         False, sorted_w)
            for slot, curve in enumerate([*entry.groups, entry.overall]):
                filled = count[slot] > 0
                np.testing.assert_array_equal(curve.bin_weight, count[slot][filled])
                np.testing.assert_allclose(curve.bin_positive, label_sum[slot][filled] / count[slot][filled],
                                           rtol=1e-12, atol=0)
                np.testing.assert_allclose(curve.bin_score, score_sum[slot][filled] / count[slot][filled],
                                           rtol=1e-12, atol=0)


def _draws(report, kinds):
    pytest.importorskip("matplotlib")
    for kind in kinds:
        report.plot(kind).savefig(io.BytesIO(), format="png", dpi=30)


def test_reports_of_every_path_plot():
    y, scores, features = _inputs(3_000, seed=8)
    _draws(fm.evaluate(y, scores, features), ("roc", "reliability", "forest", "pairwise", "bars"))
    accumulator = fm.FairnessAccumulator()
    weights = np.random.default_rng(5).integers(1, 3, len(y)).astype(float)
    accumulator.update(y, scores, features, sample_weight=weights)  # weighted: no curves before
    _draws(accumulator.result(), ("roc", "reliability"))
    import pandas as pd

    tasks = fm.evaluate_tasks(pd.DataFrame({"a": y, "b": 1 - y}), pd.DataFrame({"a": scores, "b": 1 - scores}),
                              features)
    assert tasks.to_html().count("<figure>") == 2 * 4
    for name in ("a", "b"):
        tasks.plot("roc", task=name).savefig(io.BytesIO(), format="png", dpi=30)
