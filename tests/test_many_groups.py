"""Reports of thousands of groups are built in time linear in the number of groups (issue 28).

Speed is not timed here: the work is counted as the Python lines executed (``sys.settrace``) while a
report's per-group tables are made, for G and 4G groups. Linear work gives about 4x the lines;
``by_group`` rebuilt once per group (the bug) gave about 16x. The benchmark
``EvaluateManyGroups`` (benchmarks/) times it against ``evaluate`` itself.
"""
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import fairmedfm_fast as fm
from fairmedfm_fast._backends import assess as _assess
from fairmedfm_fast._report import assembly as _classification_report


def _report(n_groups: int, seed: int = 0, **options):
    rng = np.random.default_rng(seed)
    n = 12 * n_groups
    codes = np.repeat(np.arange(n_groups), 12)
    y = np.tile([0, 1], n // 2)
    y[codes == 1] = 0  # one group with one label: skipped, NaN metrics
    p = rng.random(n)
    sensitive = {"site": np.char.add("s", codes.astype(str)), "sex": np.array(["F", "M"])[rng.integers(0, 2, n)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fm.evaluate(y, p, sensitive, **options)


def _lines(function) -> int:
    """Python lines executed by ``function()``."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        function()
    finally:
        sys.settrace(None)
    return count


def _growth(read, small: int = 100, large: int = 400) -> float:
    """Lines of ``read(report)`` with ``large`` groups over lines with ``small`` groups."""
    read(_report(7))  # pandas imported, lazy paths taken once
    counts = []
    for n_groups in (small, large):
        report = _report(n_groups)
        counts.append(_lines(lambda: read(report)))  # noqa: B023 - called at once
    return counts[1] / counts[0]


@pytest.mark.parametrize("read", [lambda report: report.by_group, lambda report: report.to_dict(),
                                  lambda report: report.to_json()],
                         ids=["by_group", "to_dict", "to_json"])
def test_per_group_tables_are_linear_in_the_groups(read):
    assert _growth(read) < 6  # 4x the groups: about 4x the lines (quadratic: about 16x)


def test_curves_of_the_pictures_are_linear_in_the_groups():
    from fairmedfm_fast._report import pictures as _pictures

    for n_groups in (100, 400):  # compiled untraced (thinned curves above MAX_POINTS samples take another path)
        _pictures.classification_curves(_report(n_groups))
    assert _growth(_pictures.classification_curves) < 6


def test_bootstrap_tables_are_linear_in_the_groups():
    def lines(n_groups):
        return _lines(lambda: _report(n_groups, n_boot=2, random_state=0).ci)

    _report(7, n_boot=2, random_state=0)  # compiled untraced
    assert lines(400) / lines(100) < 6


def test_attribute_by_group_is_made_once():
    report = _report(50)
    frame = report.by_group
    assert frame.loc[("site", "s1")].isna()["auc"] and frame.loc[("site", "s1"), "skipped"] == "only label 0"
    result = _assess.AttributeResult("a", 4, ["x", "y"], [2, 2], [0, 1], {}, {}, {}, 0.5, ("auc",),
                                     [(0.5,), (0.7,), (0.6,)])
    assert result.by_group is result.by_group and result.by_group == {0: {"auc": 0.5}, 1: {"auc": 0.7}}


def test_column_built_frame_equals_the_row_built_one():
    """The by_group frame built column by column is the frame of one dict per (attribute, group) row."""
    from fairmedfm_fast.report import group_frame

    for options in ({}, {"min_group_size": 13}, {"metrics": ["ap", "brier"]}, {"intersectional": True}):
        captured = []
        made = _classification_report._by_group_frame

        def spy(results, made=made, captured=captured):
            captured.append(results)
            return made(results)

        _classification_report._by_group_frame = spy
        try:
            report = _report(9, seed=3, **options)
            frame = report.by_group
        finally:
            _classification_report._by_group_frame = made
        rows = [{"attribute": r.name, "group": g, "n": r.counts[i], **r.by_group.get(i, {}), "skipped": r.skipped.get(i)}
                for r in captured[0] for i, g in enumerate(r.groups)]
        # small_group is added after the frame is built (_classification_report._with_small_groups)
        pd.testing.assert_frame_equal(frame.drop(columns="small_group"), group_frame(rows))
