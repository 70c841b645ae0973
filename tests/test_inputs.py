"""Input forms, index alignment, untouched inputs and error messages.

Forms the oracle does not take (pyarrow, polars) are compared with the oracle given the NumPy/pandas
equivalent; forms it does take are compared as they are.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from compare import assert_same, both, check
from hypothesis import given
from hypothesis import strategies as st

import fairmedfm_fast as fm

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(np.int64)
    y[:4] = [0, 1, 0, 1]
    p = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9, 0.35], n)
    sex = np.array(["F", "M"])[np.arange(n) % 2]
    site = np.array(["s1", "s2", "s10"])[rng.integers(0, 3, n)]
    age = rng.integers(20, 90, n).astype(np.float64)
    return y, p, sex, site, age


Y, P, SEX, SITE, AGE = _data()
FRAME = pd.DataFrame({"sex": SEX, "site": SITE, "age": AGE})


def _compare_form(function, fast_args, oracle_args, **kwargs):
    if function == "evaluate":
        fast, oracle = both("evaluate", *fast_args, oracle_args=(oracle_args, dict(kwargs)), **kwargs)
    else:
        fast, oracle = both(function, fast_args[0], fast_args[1], sensitive_features=fast_args[2],
                            oracle_args=(oracle_args[:2], {"sensitive_features": oracle_args[2], **kwargs}),
                            **kwargs)
    assert oracle.error is None, f"the equivalent input fails in the oracle: {oracle.error!r}"
    assert_same(fast, oracle)
    return fast


ARROW_FORMS = {
    "Array": (pa.array(Y), pa.array(P), pa.array(SEX)),
    "ChunkedArray": (pa.chunked_array([Y[:25], Y[25:]]), pa.chunked_array([P[:10], P[10:]]),
                     pa.chunked_array([SEX[:30], SEX[30:]])),
    "dictionary Array": (pa.array(Y), pa.array(P), pa.array(SEX).dictionary_encode()),
    "boolean Array": (pa.array(Y.astype(bool)), pa.array(P.astype(np.float32)), pa.array(SITE)),
    "Array with nulls": (pa.array(Y), pa.array(P), pa.array([None if i % 7 == 0 else s for i, s in enumerate(SITE)])),
}
ARROW_EQUIVALENT = {
    "Array": (Y, P, SEX),
    "ChunkedArray": (Y, P, SEX),
    "dictionary Array": (Y, P, SEX),
    "boolean Array": (Y.astype(bool), P.astype(np.float32), SITE),
    "Array with nulls": (Y, P, np.array([None if i % 7 == 0 else s for i, s in enumerate(SITE)], dtype=object)),
}


@pytest.mark.parametrize("form", list(ARROW_FORMS))
@pytest.mark.parametrize("function", ["evaluate", "auc_gap", "equalized_odds_score"])
def test_pyarrow_arrays(form, function):
    _compare_form(function, ARROW_FORMS[form], ARROW_EQUIVALENT[form])


@pytest.mark.parametrize("function", ["evaluate", "ece_gap"])
def test_pyarrow_table_of_attributes(function):
    table = pa.table({"sex": SEX, "site": SITE, "age": AGE})
    _compare_form(function, (Y, P, table), (Y, P, FRAME), bins={"age": [40, 60]})
    table = pa.Table.from_batches(pa.table({"sex": SEX, "site": SITE}).to_batches(max_chunksize=17))
    assert table.column("sex").num_chunks > 1
    _compare_form(function, (Y, P, table), (Y, P, FRAME[["sex", "site"]]))


@pytest.mark.parametrize("function", ["evaluate", "accuracy_gap"])
def test_polars_series_and_dataframe(function):
    frame = pl.DataFrame({"sex": SEX, "site": SITE, "age": AGE})
    _compare_form(function, (pl.Series("y", Y), pl.Series("p", P), frame), (Y, P, FRAME), bins={"age": 3})
    with_null = pl.Series("site", [None if i % 5 == 0 else s for i, s in enumerate(SITE)])
    _compare_form(function, (pl.Series(Y.astype(bool)), pl.Series(P), with_null),
                  (Y.astype(bool), P, pd.Series([None if i % 5 == 0 else s for i, s in enumerate(SITE)],
                                                name="site")))
    categorical = pl.Series("site", SITE, dtype=pl.Categorical)
    _compare_form(function, (Y, P, categorical), (Y, P, pd.Series(SITE, name="site")))


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "large_string[pyarrow]", "category", "string"])
def test_pandas_extension_dtypes_for_groups(dtype):
    if dtype == "large_string[pyarrow]":
        series = pd.Series(SITE, name="site", dtype=pd.ArrowDtype(pa.large_string()))
    else:
        series = pd.Series(SITE, name="site", dtype=dtype)
    _compare_form("evaluate", (Y, P, series), (Y, P, pd.Series(SITE, name="site")))


def test_pandas_arrow_backed_numbers():
    y = pd.Series(Y, dtype="int64[pyarrow]")
    p = pd.Series(P, dtype="double[pyarrow]")
    age = pd.Series(AGE, name="age", dtype="double[pyarrow]")
    _compare_form("evaluate", (y, p, age.to_frame()), (pd.Series(Y), pd.Series(P), pd.DataFrame({"age": AGE})),
                  bins={"age": [50]})


def test_categorical_with_missing_values():
    # A missing value excludes the sample. NB the oracle (fairmedfm 0.4.2) reports a categorical attribute
    # in category order only when it has no missing value: with one, its ``Series.map`` of the values
    # returns plain strings, and the groups come in the numeric-then-alphabetical order. Drop-in means
    # the same order here (s1, s10, s2), not the category order (s2, s10, s1).
    values = pd.Categorical([None if i % 6 == 0 else s for i, s in enumerate(SITE)], categories=["s2", "s10", "s1"])
    check("evaluate", Y, P, pd.DataFrame({"site": values}))


def test_numeric_group_names_have_no_trailing_zero():
    groups = np.where(np.arange(60) % 2 == 0, 1.0, 2.0)
    report = fm.evaluate(Y, P, groups)
    assert list(report.by_group.index.get_level_values("group")) == ["1", "2"]
    check("evaluate", Y, P, groups)


class FakeTensor:
    """Duck-typed like a PyTorch tensor on an accelerator: ``numpy()`` works only after ``cpu()``."""

    def __init__(self, array, device="cuda"):
        self._array = np.asarray(array)
        self.device = device
        self.shape = self._array.shape

    def detach(self):
        return self

    def cpu(self):
        return FakeTensor(self._array, "cpu")

    def numpy(self):
        if self.device != "cpu":
            raise TypeError("can't convert cuda tensor to numpy; use .cpu() first")
        return self._array

    def __len__(self):
        return len(self._array)

    def equals(self, other):  # for the unchanged-input check
        return isinstance(other, FakeTensor) and np.array_equal(self._array, other._array)


@pytest.mark.parametrize("function", ["evaluate", "auc_gap"])
def test_tensor_like_inputs_without_torch(function):
    _compare_form(function, (FakeTensor(Y), FakeTensor(P), FakeTensor(np.arange(60) % 3)), (Y, P, np.arange(60) % 3))
    # Reading a tensor-like object never imports torch: checked in a fresh process, since another test
    # module (the real-torch tests) may have imported torch into this one.
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import numpy as np
        import fairmedfm_fast as fm
        from test_inputs import FakeTensor
        rng = np.random.default_rng(0)
        y, p = np.tile([0, 1], 30), rng.random(60)
        fm.{function}(FakeTensor(y), FakeTensor(p), sensitive_features=FakeTensor(np.arange(60) % 3))
        print("torch" in sys.modules)
        """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(__file__).parent.parent, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# --- index alignment --------------------------------------------------------------------------------

def _indexed(seed=1):
    index = pd.Index([f"img{i:03d}" for i in range(60)], name="image")
    y = pd.Series(Y, index=index, name="y")
    p = pd.Series(P, index=index, name="p")
    meta = FRAME.set_index(index)
    rng = np.random.default_rng(seed)
    return y, p, meta, rng.permutation(60)


@pytest.mark.parametrize("function", ["evaluate", "auc_gap", "ece_gap"])
@pytest.mark.parametrize("shuffled", ["sensitive_features", "y_score"])
def test_reordered_unique_index_is_realigned_with_a_warning(function, shuffled):
    y, p, meta, order = _indexed()
    meta = meta[["sex", "site"]]
    args = {"y_true": y, "y_score": p, "sensitive_features": meta}
    args[shuffled] = args[shuffled].iloc[order]
    if function == "evaluate":
        fast, oracle = both("evaluate", args["y_true"], args["y_score"], args["sensitive_features"])
        aligned = fm.evaluate(y, p, meta)
        assert any("reorder" in w.lower() or "index" in w.lower() for w in fast.value.warnings)
        assert len(fast.value.warnings) == len(aligned.warnings) + 1
        pd.testing.assert_frame_equal(fast.value.summary, aligned.summary)
    else:
        fast, oracle = both(function, args["y_true"], args["y_score"], sensitive_features=args["sensitive_features"])
        assert fast.categories(UserWarning) >= 1
    assert_same(fast, oracle)


@pytest.mark.parametrize("function", ["evaluate", "auc_gap"])
def test_default_index_ambiguity_raises(function):
    _, _, _, order = _indexed()
    y = pd.Series(Y)  # default RangeIndex
    meta = FRAME[["sex"]].iloc[order]  # the same labels 0..n-1, shuffled
    if function == "evaluate":
        fast, oracle = both("evaluate", y, P, meta)
    else:
        fast, oracle = both(function, y, P, sensitive_features=meta)
    assert oracle.error is not None
    assert_same(fast, oracle)
    message = str(fast.error)
    assert "sensitive_features" in message and ".loc" in message and "to_numpy" in message, message


def test_different_index_labels_pair_by_position():
    y, p, meta, _ = _indexed()
    other = FRAME[["sex"]].set_index(pd.Index(range(100, 160)))
    check("evaluate", y, p, other)


# --- inputs are never modified ----------------------------------------------------------------------

@pytest.mark.parametrize("form", ["numpy", "pandas", "readonly", "list", "categorical", "dict"])
def test_inputs_are_not_modified(form):
    y, p = Y.copy(), P.copy()
    features = FRAME.copy()
    if form == "pandas":
        y, p = pd.Series(y, index=FRAME.index[::-1].copy()), pd.Series(p, index=FRAME.index[::-1].copy())
        features = features.set_index(FRAME.index[::-1])
    elif form == "readonly":
        y.setflags(write=False)
        p.setflags(write=False)
    elif form == "list":
        y, p, features = y.tolist(), p.tolist(), {"sex": SEX.tolist(), "age": AGE.tolist()}
    elif form == "categorical":
        features["site"] = features["site"].astype(pd.CategoricalDtype(["s10", "s2", "s1"]))
        features.loc[3, "site"] = None
    elif form == "dict":
        features = {"sex": SEX.copy(), "site": SITE.copy(), "age": AGE.copy()}
    # compare.both asserts that fairmedfm_fast left every argument equal to a deep copy taken before.
    fast, oracle = both("evaluate", y, p, features, bins={"age": [40, 60]}, intersectional=True)
    assert fast.error is None, fast.error
    for function in ("auc_gap", "ece_gap", "equalized_odds_score"):
        both(function, y, p, sensitive_features=features, bins={"age": [40, 60]})


# --- error messages ---------------------------------------------------------------------------------

_rng = np.random.default_rng(9)
ERRORS = {
    # name: (args, kwargs, words one of which the message must contain)
    "NaN in y_score": ((Y, np.where(np.arange(60) == 2, np.nan, P), SEX), {}, ["y_score"]),
    "length mismatch": ((Y, P[:-3], SEX), {}, ["y_score", "y_true"]),
    "sensitive length": ((Y, P, SEX[:-1]), {}, ["sensitive_features"]),
    "3-D y_score": ((Y, np.zeros((60, 2, 2)), SEX), {}, ["y_score"]),
    "unknown bins column": ((Y, P, FRAME[["sex"]]), {"bins": {"height": [1]}}, ["bins"]),
    "continuous attribute": ((Y, P, FRAME[["age"]]), {}, ["bins"]),
    "empty": ((np.array([], np.int64), np.array([]), np.array([], dtype=object)), {}, ["y_true", "y_score", "empty",
                                                                                        "sample"]),
    "labels need pos_label": ((np.where(Y == 1, "yes", "no"), P, SEX), {}, ["pos_label"]),
    "labels 0/2": ((Y * 2, P, SEX), {}, ["pos_label", "y_true"]),
    "pos_label absent": ((Y, P, SEX), {"pos_label": "sick"}, ["pos_label"]),
    "single class": ((np.ones(60, np.int64), P, SEX), {}, ["y_true"]),
    "score_type": ((Y, P, SEX), {"score_type": "logits"}, ["score_type"]),
    "score_column range": ((Y, np.column_stack([1 - P, P]), SEX), {"score_column": 2}, ["score_column"]),
    "need score_column": ((Y, _rng.random((60, 4)), SEX), {}, ["score_column"]),
    "bins < 2": ((Y, P, FRAME[["age"]]), {"bins": {"age": 1}}, ["bins", "age"]),
    "bins on strings": ((Y, P, FRAME[["sex"]]), {"bins": {"sex": [1, 2]}}, ["sex", "bins"]),
    "no attributes": ((Y, P, pd.DataFrame(index=range(60))), {}, ["sensitive_features"]),
    "probability out of range": ((Y, P * 3, SEX), {"score_type": "probability"}, ["y_score", "score_type"]),
    "inf score": ((Y, np.where(np.arange(60) == 0, np.inf, P), SEX), {}, ["y_score"]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_messages_name_the_argument(name):
    args, kwargs, words = ERRORS[name]
    fast, oracle = both("evaluate", *args, **kwargs)
    if oracle.error is None:
        # Not an error for the oracle (e.g. inf logits): then it must not be one for us either.
        assert_same(fast, oracle)
        return
    assert isinstance(fast.error, ValueError), f"{fast.error!r} (value: {fast.value!r})"
    message = str(fast.error)
    assert any(word in message for word in words), f"{message!r} names none of {words}"
    assert "numba" not in message.lower()
    assert len(message) < 600


# Short text and integers over a short range take faster routes through the coding of attributes
# (code points or exact integer keys instead of np.unique; offsets and a bincount instead of
# hashing). An object array of the same values takes the general route (pandas.factorize): both
# must give the same codes and names.
@given(st.lists(st.one_of(st.text(alphabet="ab<>=-0123456789.\xe9\xff ", max_size=8),
                          st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)),
                min_size=1, max_size=6),
       st.integers(1, 60), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_text_attributes_code_as_object_arrays_do(values, n, seed, strided):
    from fairmedfm_fast._inputs.value_codes import encode_values

    array = np.array(values)[np.random.default_rng(seed).integers(0, len(values), 2 * n)]
    array = array[::2] if strided else array[:n]
    codes, names = encode_values(array)
    expected_codes, expected_names = encode_values(array.astype(object))
    assert names == expected_names
    np.testing.assert_array_equal(codes, expected_codes)


@given(st.sampled_from(["int8", "int16", "int64", "uint8", "uint64"]), st.integers(-(2 ** 52), 2 ** 52),
       st.integers(1, 40), st.integers(1, 60), st.integers(0, 2 ** 32 - 1))
def test_integer_attributes_code_as_object_arrays_do(dtype, low, span, n, seed):
    from fairmedfm_fast._inputs.value_codes import encode_values

    info = np.iinfo(dtype)
    low = int(np.clip(low, info.min, info.max - span))
    array = (low + np.random.default_rng(seed).integers(0, span, n)).astype(dtype)
    codes, names = encode_values(array)
    expected_codes, expected_names = encode_values(array.astype(object))
    assert names == expected_names
    np.testing.assert_array_equal(codes, expected_codes)
