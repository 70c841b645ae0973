"""Random small inputs in every form of the user guide's "Inputs" page, against fairmedfm 0.4.2.

Containers (lists, NumPy, pandas Series and DataFrames, dicts, 2-D arrays), labels (0/1, booleans,
one-hot rows, text or three classes with ``pos_label``), scores (probabilities, logits, two or
three columns chosen by ``pos_label`` or ``score_column``, softmaxed logits), attributes (text,
integers, whole and fractional floats, booleans, categoricals, dates and durations, missing
values), ``bins`` and ``intersectional``. Each case is one ``evaluate`` call on both packages:
the same frames within 1e-9, the same metadata and as many warnings (tests/compare.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

pytest.importorskip("fairmedfm")

from compare import assert_same, both  # noqa: E402
from strategies import examples  # noqa: E402

LABELS = ("list", "numpy", "series", "bool", "one_hot", "text", "three_classes")
SCORES = ("list", "numpy", "series", "logits", "two_columns", "three_columns", "three_logits")
CONTAINERS = ("dataframe", "dict_numpy", "dict_list", "series", "array_2d", "list")
KINDS = ("text", "integers", "floats", "booleans", "categorical", "dates", "durations")


def _attribute(rng, kind, n, missing):
    n_groups = int(rng.integers(2, 5))
    codes = rng.integers(0, n_groups, n)
    if kind == "text":
        values = np.array(["F", "M", "X", "other"], dtype=object)[codes]
    elif kind == "integers":
        values = np.array([3, -1, 10, 7])[codes]
    elif kind == "floats":
        values = np.array([1.0, 2.5, 10.0, -0.5])[codes]
    elif kind == "booleans":
        values = codes % 2 == 0
    elif kind == "categorical":
        values = pd.Categorical(np.array(["lo", "mid", "hi", "top"])[codes], categories=["top", "hi", "mid", "lo"])
    elif kind == "dates":
        values = np.array(["2020-01-01", "2019-06-30", "2021-12-31", "2020-02-29"], "datetime64[D]")[codes]
    else:
        values = np.array([1, 517, 30, 2], "timedelta64[D]")[codes]
    if missing and kind in ("text", "floats"):
        values = values.astype(object if kind == "text" else float)
        values[rng.random(n) < 0.15] = None if kind == "text" else np.nan
    return values


@st.composite
def evaluate_inputs(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(8, 48))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    levels = draw(st.sampled_from([3, 11, 1000]))
    p = np.clip(0.3 * y + rng.integers(0, levels, n) / levels * 0.7, 0, 1)  # ties when levels is small
    label_form, score_form = draw(st.sampled_from(LABELS)), draw(st.sampled_from(SCORES))
    kwargs = {}
    if score_form in ("three_columns", "three_logits") and label_form not in ("three_classes", "numpy"):
        label_form = "three_classes"
    if label_form == "list":
        labels = y.tolist()
    elif label_form == "series":
        labels = pd.Series(y.astype(float))
    elif label_form == "bool":
        labels = y.astype(bool)
    elif label_form == "one_hot":
        labels = np.eye(2, dtype=np.int64)[y]
    elif label_form == "text":
        labels, kwargs["pos_label"] = np.where(y == 1, "sick", "well"), "sick"
    elif label_form == "three_classes":
        labels, kwargs["pos_label"] = np.where(y == 1, "c", rng.choice(["a", "b"], n)), "c"
        labels[:3] = ["a", "c", "b"]  # all three classes occur: the column of "c" is 2
    else:
        labels = y
    if score_form == "list":
        scores = p.tolist()
    elif score_form == "series":
        scores = pd.Series(p)
    elif score_form == "logits":
        scores = (p - 0.5) * 8
    elif score_form == "two_columns" and label_form != "three_classes":
        scores = np.column_stack([1 - p, p])
    elif score_form in ("three_columns", "three_logits"):
        rest = rng.random(n)
        scores = np.column_stack([(1 - p) * rest, (1 - p) * (1 - rest), p])
        if label_form == "numpy":  # 0/1 labels: the column is named
            kwargs["score_column"] = 2
        if score_form == "three_logits":
            scores = np.log(scores + 0.01) * 3
    else:
        scores = p
    n_attributes = draw(st.integers(1, 3))
    kinds = [draw(st.sampled_from(KINDS)) for _ in range(n_attributes)]
    missing = draw(st.booleans())
    columns = {f"a{k}": _attribute(rng, kind, n, missing) for k, kind in enumerate(kinds)}
    if draw(st.booleans()):
        age = rng.integers(18, 95, n).astype(float)
        columns["age"] = age
        kwargs["bins"] = {"age": draw(st.sampled_from([[40, 60], [50], 2, 3]))}
    container = draw(st.sampled_from(CONTAINERS))
    plain = all(not isinstance(v, pd.Categorical) for v in columns.values())
    if container == "series" or (container in ("array_2d", "list") and not plain) or len(columns) == 1:
        container = "dataframe" if container != "series" or len(columns) > 1 else "series"
    if container == "dataframe":
        features = pd.DataFrame(columns)
    elif container == "dict_numpy":
        features = {k: np.asarray(v) for k, v in columns.items()}
    elif container == "dict_list":
        features = {k: list(np.asarray(v, dtype=object)) for k, v in columns.items()}
    elif container == "series":
        features = pd.Series(next(iter(columns.values())), name="a0")
        kwargs.pop("bins", None)
    elif container == "array_2d":
        features = np.column_stack([np.asarray(v, dtype=object) for v in columns.values()])
        kwargs.pop("bins", None)
    else:
        features = list(np.asarray(next(iter(columns.values())), dtype=object))
        kwargs.pop("bins", None)
    if draw(st.booleans()):
        kwargs["intersectional"] = True
    note(f"labels={label_form} scores={score_form} container={container} kinds={kinds} missing={missing} "
         f"kwargs={kwargs}")
    return (labels, scores, features), kwargs


@examples(0.5)
@given(case=evaluate_inputs())
def test_every_input_form_matches_fairmedfm(case):
    args, kwargs = case
    fast, oracle = both("evaluate", *args, **kwargs)
    assert_same(fast, oracle)
