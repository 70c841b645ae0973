"""The metric registry: every summary column, interval and p-value column and plotted metric comes
from its entries, and undefined (NaN) group values are handled in one place."""
from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest
from fairmedfm.metrics import _summary as oracle_summary

import fairmedfm_fast as fm
from fairmedfm_fast._engine import resample as _resample
from fairmedfm_fast._registry import metrics as registry


def _values(rng, keys, g):
    return {key: rng.random() for key in keys}, {key: rng.random(g).tolist() for key in keys}


@pytest.mark.parametrize("g", [2, 3, 7])
def test_default_columns_equal_the_oracle(g):
    """Without NaN, every column is the oracle's, bit for bit, in the oracle's order; subsets too."""
    rng = np.random.default_rng(g)
    keys = registry.all_keys()
    for seed in range(20):
        overall, groups = _values(np.random.default_rng(seed), keys, g)
        assert list(registry.summarize(overall, groups).items()) == list(oracle_summary(overall, groups).items())
        for key in ("auc", "tpr@best_f1", "tnr@best_f1", "bce"):  # what a one-number function computes
            part = {key: groups[key]}
            assert registry.summarize({}, part) == oracle_summary({}, part)
    overall, groups = _values(rng, keys, g)
    assert registry.summarize(overall, {}) == oracle_summary(overall, {})


def test_a_nan_group_makes_its_columns_nan_in_any_group_order():
    """A group without a value (NaN) makes each column over the groups that reads it NaN, whatever
    the groups' order; Python's max/min (the oracle's rule, which never meets NaN in its own columns)
    would give a number or NaN depending on where the NaN sits."""
    keys = registry.all_keys()
    rng = np.random.default_rng(1)
    overall, groups = _values(rng, keys, 3)
    groups["bce"] = [0.2, math.nan, 0.5]
    groups["tnr@best_f1"] = [math.nan, 0.4, 0.9]
    order_dependent = set()
    for order in itertools.permutations(range(3)):
        shuffled = {key: [values[i] for i in order] for key, values in groups.items()}
        out = registry.summarize(overall, shuffled)
        assert math.isnan(out["bce-gap"]) and math.isnan(out["eod"])
        assert out["auc-gap"] == max(groups["auc"]) - min(groups["auc"])
        assert out["eo"] == max(groups["tpr@best_f1"]) - min(groups["tpr@best_f1"])
        assert out["overall-bce"] == overall["bce"]
        order_dependent.add(math.isnan(oracle_summary(overall, shuffled)["bce-gap"]))
    assert order_dependent == {True, False}  # the rule this replaces


def test_infinities_that_sum_to_nan_are_values():
    """The NaN check's fast path (a sum) is exact: +inf and -inf are values, not NaN."""
    out = registry.summarize({}, {"bce": [math.inf, -math.inf, 1.0]})
    assert out["bce-gap"] == math.inf


@pytest.mark.parametrize(("kind", "expected"), [
    ("gap", 0.75), ("worst", 0.25), ("best", 1.0), ("ratio", 0.25), ("score", 1 - 0.75)])
def test_each_kind_is_its_own_column(kind, expected):
    """A column's kind decides its value (an opt-in "worst" column is a worst, not a gap), and only
    the differences between groups (gap, ratio, score) get p-values."""
    column = registry.Summary("npv-" + kind, kind, ("brier",), optional=True)
    saved = registry.REGISTRY.snapshot()
    per_group, sums, summaries, *rest = saved
    registry.REGISTRY.restore((per_group, sums, (*summaries, column), *rest))
    try:
        out = registry.summarize({}, {"brier": [0.5, 0.25, 1.0]})
        assert out == {"brier-gap": 0.75, column.column: expected}
        assert (column.column in registry.tested_columns(["brier"])) == (kind in ("gap", "ratio", "score"))
    finally:
        registry.REGISTRY.restore(saved)


def test_tested_columns_keep_their_order():
    assert _resample.GAP_COLUMNS == ("auc-gap", "acc-gap", "bce-gap", "ece-gap", "eo", "eod")
    assert registry.tested_columns(registry.optional_keys()) == [
        *_resample.GAP_COLUMNS, "ap-gap", "brier-gap", "dp", "fpr-gap", "fnr-gap"]
    assert registry.fair_value("eod") == 1.0 and registry.fair_value("auc-gap") == 0.0


def test_intervals_and_plots_read_the_entries():
    assert _resample.INTERVAL_METRICS == ("auc", "acc", "bce", "ece", "tpr", "tnr")
    keys = [*registry.all_keys(), *registry.optional_keys()]
    assert registry.shown(keys) == [
        ("auc", "dots"), ("acc@best_f1", "bars"), ("bce", "bars"), ("ece", "bars"), ("tpr@best_f1", "bars"),
        ("tnr@best_f1", "bars"), ("ap", "bars"), ("brier", "bars"), ("selection_rate@best_f1", "bars"),
        ("fpr@best_f1", "bars"), ("fnr@best_f1", "bars")]


def test_opt_in_metrics_are_plotted_when_asked_for():
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    report = fm.evaluate(y, rng.random(400), {"sex": rng.choice(["F", "M"], 400)}, metrics=["brier"])
    axes = report.plot("bars").get_axes()
    assert [ax.get_title() for ax in axes] == ["auc", "acc@best_f1", "bce", "ece", "tpr@best_f1", "tnr@best_f1",
                                               "brier"]
    heights = [patch.get_height() for patch in axes[-1].patches]
    np.testing.assert_array_equal(heights, report.by_group["brier"].to_numpy())


def test_cli_help_lists_the_opt_in_metrics(capsys):
    from fairmedfm_fast import cli

    with pytest.raises(SystemExit):
        cli.main(["score", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for metric in registry.REGISTRY.per_group:
        if metric.optional:
            assert f"{metric.name} ({metric.display})" in text


def test_one_number_functions_come_from_the_entries():
    """group_metrics makes one function per summary entry with a ``function``; the package exports
    exactly those, from one list."""
    from fairmedfm_fast import group_metrics

    made = {summary.function for summary in registry.REGISTRY.summaries if summary.function}
    assert set(group_metrics.__all__) - {"function_of"} == made == set(fm._CLASSIFICATION)
    assert made <= set(fm.__all__) and len(fm.__all__) == len(set(fm.__all__))
    for summary in registry.REGISTRY.summaries:
        if summary.function:
            function = getattr(fm, summary.function)
            assert function.__module__ == "fairmedfm_fast.group_metrics" and function.__name__ == summary.function
            assert inspect.getdoc(function).startswith(summary.doc.split("\n")[0])
            assert ("threshold" in inspect.signature(function).parameters) == summary.at_threshold


def test_one_number_functions_return_their_column():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    score = rng.random(300)
    sex = rng.choice(["F", "M"], 300)
    summary = fm.evaluate(y, score, {"sex": sex}).summary.loc["sex"]
    for entry in registry.REGISTRY.summaries:
        if entry.function:
            assert abs(getattr(fm, entry.function)(y, score, sensitive_features=sex) - summary[entry.column]) <= 1e-12


def test_every_metric_reads_sums_of_the_table():
    """Each sum a metric reads has an entry (its kernel pass, how partitions combine); the optional
    ones are made exactly when a requested metric reads them, whatever the metric's name."""
    for metric in registry.REGISTRY.per_group:
        assert set(metric.sums) <= set(registry.REGISTRY.sum), metric.name
    assert {entry.combine for entry in registry.REGISTRY.sums} == {"add", "add_above"}
    for entry in registry.REGISTRY.sums:  # each names the pass that makes it; a term-summing pass has its term
        assert entry.made_by in registry.PASSES, entry.name
        assert (entry.term is not None) == (entry.made_by == "slot_sums"), entry.name
    # the sort follows from the passes: AUC's and AP's sums are made in score order
    assert {m.name for m in registry.REGISTRY.per_group if registry.REGISTRY.ranked(m)} == {"auc", "ap"}
    assert registry.passes(frozenset({"auc"})) == {"counts", "ranks"}
    assert registry.passes(frozenset({"brier"})) == {"counts", "slot_sums"}
    assert registry.optional_sums(frozenset(registry.NAMES)) == ()
    assert registry.optional_sums(frozenset({"ap", "brier", "auc"})) == ("squared_error", "precision")
    assert registry.optional_sums(frozenset({"fpr", "selection_rate"})) == ()


def test_function_of_an_opt_in_column():
    from fairmedfm_fast import group_metrics

    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 400)
    score = np.round(rng.random(400), 2)
    site = rng.choice(["a", "b", "c"], 400)
    summary = fm.evaluate(y, score, {"site": site}, metrics=["ap", "fpr"], threshold=0.3).summary.loc["site"]
    ap_gap = group_metrics.function_of("ap-gap")
    assert ap_gap is group_metrics.function_of("ap-gap") and "threshold" not in inspect.signature(ap_gap).parameters
    assert abs(ap_gap(y, score, sensitive_features=site) - summary["ap-gap"]) <= 1e-12
    fpr_gap = group_metrics.function_of("fpr-gap")
    assert abs(fpr_gap(y, score, sensitive_features=site, threshold=0.3) - summary["fpr-gap"]) <= 1e-12
    assert group_metrics.function_of("auc-gap") is fm.auc_gap
    with pytest.raises(ValueError, match="summary column over the groups"):
        group_metrics.function_of("overall-auc")
