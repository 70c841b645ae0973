"""Every form of the sensitive attributes gives the same report (issue 40): NumPy ``U``, ``S`` and
object arrays, lists, pandas ``str``, categorical and ``string[pyarrow]`` columns, pyarrow string,
string-view and dictionary arrays, int8 codes and polars columns, on hypothesis-made values (empty
strings, non-ASCII text, values that differ only in trailing spaces, missing values where the form
has them), on both sides of the coders' sizes (the hash table's first slots, the coding threads);
the group names and order are fairmedfm 0.4.2's.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fairmedfm_fast as fm
from fairmedfm_fast._inputs import groups as _groups
from fairmedfm_fast._inputs import value_codes as _codes

#: Text of few characters: "", spaces (trailing ones too), digits that make numbers, non-ASCII.
VALUES = st.text(alphabet="ab 1.é日", max_size=4)


def _orderable(names: list[str]) -> bool:
    """Whether the report order of ``names`` is one order: no two names of the same number ("1" and
    "1 ", which both orders leave as the set of names gives them) and no "nan"."""
    numbers = []
    for name in names:
        try:
            numbers.append(float(name))
        except ValueError:
            continue
    return not any(math.isnan(x) for x in numbers) and len(set(numbers)) == len(numbers)


@st.composite
def attributes(draw, missing: bool):
    """(y, scores, {name: values as a list with None where missing}) with 1 to 3 attributes."""
    n = draw(st.integers(4, 160))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(np.int64)
    y[:2] = 0, 1
    scores = np.round(rng.random(n), 2)  # ties
    columns = {}
    for k in range(draw(st.integers(1, 3))):
        distinct = draw(st.lists(VALUES, min_size=1, max_size=5, unique=True))
        assume(_orderable(distinct))
        values = [distinct[i] for i in rng.integers(0, len(distinct), n)]
        if missing and draw(st.booleans()):
            for i in rng.choice(n, size=max(1, n // 7), replace=False):
                values[i] = None
        columns[f"a{k}"] = values
    return y, scores, columns


def _pandas(columns, dtype):
    return pd.DataFrame({k: pd.Series(v, dtype=dtype) for k, v in columns.items()})


def _polars(columns, categorical=False):
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({k: pl.Series(k, v, dtype=pl.String) for k, v in columns.items()})
    return frame.with_columns(pl.all().cast(pl.Categorical)) if categorical else frame


#: Forms that hold missing values: columns (lists with None) -> sensitive_features.
FORMS_WITH_MISSING = {
    "dict of object arrays": lambda c: {k: np.array(v, dtype=object) for k, v in c.items()},
    "dict of lists": lambda c: {k: list(v) for k, v in c.items()},
    "pandas str": lambda c: _pandas(c, "str"),
    "pandas object": lambda c: _pandas(c, object),
    "pandas categorical": lambda c: _pandas(c, "category"),
    "pandas string[pyarrow]": lambda c: _pandas(c, "string[pyarrow]"),
    "pyarrow Table": lambda c: pa.table({k: pa.array(v) for k, v in c.items()}),
    "pyarrow large_string chunks": lambda c: {k: pa.chunked_array([v[:3], v[3:]], pa.large_string())
                                              for k, v in c.items()},
    "pyarrow string_view": lambda c: {k: pa.array(v, pa.string_view()) for k, v in c.items()},
    "pyarrow dictionary": lambda c: pa.table({k: pa.array(v).dictionary_encode() for k, v in c.items()}),
    "polars Utf8": lambda c: _polars(c),
    "polars Categorical": lambda c: _polars(c, categorical=True),
}
#: Forms without missing values (NumPy text arrays, integer codes).
FORMS = {
    **FORMS_WITH_MISSING,
    "dict of U arrays": lambda c: {k: np.array(v) for k, v in c.items()},
    "dict of U arrays, strided": lambda c: {k: np.repeat(np.array(v), 2)[::2] for k, v in c.items()},
    "dict of U arrays, read-only": lambda c: {k: _read_only(np.array(v)) for k, v in c.items()},
    "2-D U array": lambda c: np.column_stack([np.array(v) for v in c.values()]),
}


def _read_only(array):
    array.flags.writeable = False
    return array


def _report(y, scores, features):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fm.evaluate(y, scores, features)


def _numbers(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in ("skipped",) if c in frame.columns])


def assert_same_report(got, want, rename=None, by_position=False):
    """Equal summaries and per-group rows (looked up by name, or in order with ``by_position``)."""
    np.testing.assert_allclose(_numbers(got.summary).to_numpy(float), _numbers(want.summary).to_numpy(float),
                               rtol=1e-12, atol=1e-12, equal_nan=True)
    got_rows, want_rows = got.by_group, want.by_group
    if by_position:
        assert len(got_rows) == len(want_rows)
    else:
        if rename is not None:
            want_rows = want_rows.rename(index=rename, level=1)
        assert sorted(got_rows.index.tolist()) == sorted(want_rows.index.tolist())
        got_rows = got_rows.loc[want_rows.index]
    np.testing.assert_allclose(_numbers(got_rows).to_numpy(float), _numbers(want_rows).to_numpy(float),
                               rtol=1e-12, atol=1e-12, equal_nan=True)
    assert got_rows["skipped"].fillna("").tolist() == want_rows["skipped"].fillna("").tolist()


def _names(report) -> list[tuple[str, str]]:
    return report.by_group.index.tolist()


@pytest.fixture(params=["as they are", "small tables, threads"])
def coder_sizes(request, monkeypatch):
    """The coders at their sizes, or with a hash table of 2 slots (which fills at once: the table with
    room for every value), the coding threads from 8 samples and text columns in pieces from 8
    (settings that hold for every example: the fixture is set once per test, as hypothesis warns, on
    purpose)."""
    if request.param != "as they are":
        monkeypatch.setattr(_codes, "TEXT_TABLE_SLOTS", 2)
        monkeypatch.setattr(_codes, "PIECES_FROM", 8)
        monkeypatch.setattr(_groups, "PARALLEL_FROM", 8)
    return request.param


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=attributes(missing=False))
def test_every_form_gives_the_report_of_U_arrays(coder_sizes, data):
    y, scores, columns = data
    want = _report(y, scores, FORMS["dict of U arrays"](columns))
    for name, make in FORMS.items():
        features = make(columns)
        got = _report(y, scores, features)
        if name == "2-D U array":  # attributes named sensitive_0, ...
            assert [g for _, g in _names(got)] == [g for _, g in _names(want)]
            assert_same_report(got, want, by_position=True)
            continue
        assert _names(got) == _names(want) or name.endswith("categorical"), name  # categories: their order
        assert_same_report(got, want)
    # S arrays are named as their bytes are printed ("b'F'"), in the order of those names
    encoded = {k: np.char.encode(np.array(v), "utf-8") for k, v in columns.items()}
    got = _report(y, scores, encoded)
    assert_same_report(got, want, rename=lambda name: str(name.encode()))
    # int8 codes in the report order of the text: the same rows in the same order
    ranks = {k: np.array([want.by_group.loc[k].index.get_loc(value) for value in v], np.int8)
             for k, v in columns.items()}
    assert_same_report(_report(y, scores, ranks), want, by_position=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=attributes(missing=True))
def test_forms_with_missing_values_agree(coder_sizes, data):
    y, scores, columns = data
    want = _report(y, scores, FORMS_WITH_MISSING["dict of object arrays"](columns))
    for name, make in FORMS_WITH_MISSING.items():
        got = _report(y, scores, make(columns))
        assert _names(got) == _names(want) or name.endswith("categorical"), name
        assert_same_report(got, want)


@settings(max_examples=20, deadline=None)
@given(data=attributes(missing=True))
def test_group_names_and_order_are_fairmedfm_s(data):
    fairmedfm = pytest.importorskip("fairmedfm")
    y, scores, columns = data
    missing = any(value is None for values in columns.values() for value in values)
    forms = ({"object arrays": {k: np.array(v, dtype=object) for k, v in columns.items()}} if missing else
             {"U arrays": {k: np.array(v) for k, v in columns.items()},
              "S arrays": {k: np.char.encode(np.array(v), "utf-8") for k, v in columns.items()}})
    for features in forms.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            oracle = fairmedfm.evaluate(y, scores, features)
        assert _names(_report(y, scores, features)) == oracle.by_group.index.tolist()


def test_lists_read_as_numpy_reads_them():
    # a list is read as np.asarray reads it: numbers among strings become text ("1.0", "nan"), a
    # trailing NUL is stripped; the strings alone are coded without NumPy's conversion
    y = np.array([0, 1] * 30)
    scores = np.linspace(0, 1, 60)
    for values in (["a", 1.0, "b"] * 20, ["a", float("nan"), "b"] * 20, ["a\x00", "a", "b"] * 20,
                   ["a", None, "b"] * 20, ["a", b"x", "b"] * 20, ["1", "2", "10"] * 20):
        want = _report(y, scores, {"g": np.asarray(values)})
        for features in ({"g": values}, values):
            got = _report(y, scores, features)
            assert [g for _, g in _names(got)] == [g for _, g in _names(want)], values
            assert_same_report(got, want, by_position=True)


def test_text_lists_cut_into_bins():
    # a list of numbers as text, cut into bins, is cut as the NumPy array of it is
    y = np.array([0, 1] * 30)
    scores = np.linspace(0, 1, 60)
    values = [str(v) for v in np.arange(60) % 80 + 20]
    want = fm.evaluate(y, scores, {"age": np.asarray(values)}, bins={"age": [40, 60]})
    got = fm.evaluate(y, scores, {"age": values}, bins={"age": [40, 60]})
    assert _names(got) == _names(want)
    assert_same_report(got, want)


def test_string_views_long_short_and_sliced():
    # views of strings past 12 bytes point into data buffers: those columns are read as large strings;
    # a slice of inline strings of such an array is coded from its views
    values = np.array(["short", "a string of more than twelve bytes", "x", "é日"] * 10)
    array = pa.array(values.tolist(), pa.string_view())
    for got, want in ((array, values), (array.slice(2, 1), values[2:3]), (array.slice(3, 30), values[3:33]),
                      (pa.array(["x", "é日"] * 5, pa.string_view()), np.array(["x", "é日"] * 5))):
        fast = _groups.encode_attributes({"g": got}, len(want))[0]
        plain = _groups.encode_attributes({"g": want}, len(want))[0]
        assert fast.groups == plain.groups
        np.testing.assert_array_equal(fast.codes, plain.codes)


def test_polars_categoricals_and_enums_from_their_physical_codes():
    # coded from polars' physical codes, named as their Arrow dictionary names them (sorted as text is)
    pl = pytest.importorskip("polars")
    values = ["x", "10", "y", "2", "x", "y"] * 5
    for series in (pl.Series("g", values).cast(pl.Categorical),
                   pl.Series("g", values).cast(pl.Enum(["y", "x", "2", "10", "unused"]))):
        fast = _groups.encode_attributes({"g": series}, len(values))[0]
        arrow = _groups.encode_attributes({"g": series.to_arrow()}, len(values))[0]
        assert fast.groups == arrow.groups == ["2", "10", "x", "y"]
        np.testing.assert_array_equal(fast.codes, arrow.codes)


def test_a_pyarrow_scalar_is_not_an_attribute():
    # a pyarrow scalar where a column belongs names the argument, as a length mismatch does (it raised
    # TypeError from len()); a ragged list in a mapping (read on the coding threads) names its key
    y = np.array([0, 1] * 30)
    scores = np.linspace(0, 1, 60)
    with pytest.raises(ValueError, match=r"sensitive_features\['g'\] is a pyarrow StringScalar"):
        _report(y, scores, {"g": pa.scalar("x")})
    with pytest.raises(ValueError, match=r"^sensitive_features is a pyarrow StringScalar"):
        _report(y, scores, pa.scalar("x"))
    with pytest.raises(ValueError, match=r"sensitive_features\['g'\] could not be read as an array"):
        _report(y, scores, {"g": ["a", ["b"]] * 30})
