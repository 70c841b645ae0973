"""The report's frames are built column by column for speed; they must equal pandas' own constructors."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairmedfm_fast.report import group_frame, summary_frame

# Group labels as they reach the report: strings, integers, floats, booleans, and mixtures of them
# (an intersectional level holds the groups of several attributes).
LABELS = st.one_of(st.text(max_size=3), st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.booleans(),
                   st.sampled_from([np.int64(3), np.float64(0.5), "F", "M", ">=60"]))
METRICS = st.one_of(st.floats(allow_nan=True), st.integers(0, 9), st.none())


def _reference_group_frame(rows):
    frame = pd.DataFrame(rows).set_index(["attribute", "group"])
    middle = [column for column in frame.columns if column not in ("n", "skipped")]
    return frame[["n", *middle, "skipped"]]


def _reference_summary_frame(summaries):
    frame = pd.DataFrame.from_dict(summaries, orient="index")
    frame.index.name = "attribute"
    return frame[["n", "n_groups"] + [column for column in frame.columns if column not in ("n", "n_groups")]]


@st.composite
def group_rows(draw):
    attributes = draw(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=3, unique=True))
    metrics = draw(st.lists(st.sampled_from(["auc", "acc", "bce", "mean_dice"]), unique=True))
    rows = []
    for attribute in attributes:
        groups = draw(st.lists(LABELS, min_size=1, max_size=5, unique_by=lambda v: (type(v).__name__, v)))
        for group in groups:
            row = {"attribute": attribute, "group": group, "n": draw(st.integers(0, 100))}
            row.update({metric: draw(METRICS) for metric in metrics if draw(st.booleans())})
            row["skipped"] = draw(st.sampled_from([None, "only one label"]))
            rows.append(row)
    return rows


@given(group_rows())
def test_group_frame_equals_pandas_set_index(rows):
    try:
        expected = _reference_group_frame(rows)
    except (TypeError, ValueError):
        return  # pandas itself cannot build this index (e.g. duplicate labels 1 and True)
    made = group_frame(rows)
    pd.testing.assert_frame_equal(made, expected)
    for mine, theirs in zip(made.index.levels, expected.index.levels, strict=True):
        pd.testing.assert_index_equal(mine, theirs)


@given(st.dictionaries(st.text(min_size=1, max_size=4),
                       st.dictionaries(st.sampled_from(["auc-gap", "eod", "delta_dice"]), METRICS), min_size=1,
                       max_size=4),
       st.integers(0, 50))
def test_summary_frame_equals_pandas_from_dict(extra, n):
    summaries = {name: {"n": n + i, "n_groups": i % 3, **values} for i, (name, values) in enumerate(extra.items())}
    pd.testing.assert_frame_equal(summary_frame(summaries), _reference_summary_frame(summaries))


def test_group_frame_mixed_labels_keep_order_of_appearance():
    rows = [{"attribute": "sex", "group": "M", "n": 3, "skipped": None},
            {"attribute": "sex", "group": "F", "n": 2, "skipped": None},
            {"attribute": "age", "group": 60, "n": 4, "auc": math.nan, "skipped": "only one label"}]
    made = group_frame(rows)
    assert list(made.index) == [("sex", "M"), ("sex", "F"), ("age", 60)]
    assert list(made.columns) == ["n", "auc", "skipped"]
    assert made.loc[("age", 60), "skipped"] == "only one label"
    assert math.isnan(made.loc[("sex", "M"), "auc"])
    pd.testing.assert_frame_equal(made, _reference_group_frame(rows))


@pytest.mark.parametrize("groups", [["b", "a", "c"], [3, 1, 2], [2.5, 1.0, 0.5]])
def test_group_frame_levels_sorted_like_pandas(groups):
    rows = [{"attribute": "x", "group": g, "n": 1, "skipped": None} for g in groups]
    assert list(group_frame(rows).index.levels[1]) == sorted(groups)
