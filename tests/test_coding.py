"""kernels/coding.py against np.bincount, and the categorical and Arrow-dictionary coding of large
columns that uses it."""
import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fairmedfm_fast import _groups
from fairmedfm_fast.kernels import coding


@settings(max_examples=60, deadline=None)
@given(n_codes=st.integers(1, 40), data=st.data())
def test_code_counts(n_codes, data):
    dtype = data.draw(st.sampled_from([np.int8, np.int16, np.intp]))
    codes = data.draw(hnp.arrays(dtype, st.integers(0, 300), elements=st.integers(-1, n_codes - 1)))
    np.testing.assert_array_equal(coding.code_counts(codes, n_codes),
                                  np.bincount(codes[codes >= 0].astype(np.intp), minlength=n_codes))


def test_large_categorical_and_dictionary_columns():
    # from 65,536 values the presence of each category is counted by the kernel: unused categories
    # are dropped and missing values stay -1
    rng = np.random.default_rng(0)
    n = 70_000
    codes = rng.integers(-1, 4, n)  # category "d" (code 4) is never used
    categorical = pd.Series(pd.Categorical.from_codes(codes, categories=["a", "b", "c", "x", "d"]))
    got, names = _groups.encode_values(categorical)
    assert names == ["a", "b", "c", "x"]
    np.testing.assert_array_equal(got, codes)
    dictionary = pa.DictionaryArray.from_arrays(pa.array(np.where(codes < 0, None, codes).tolist(), pa.int32()),
                                                pa.array(["x", "b", "a", "c", "d"]))
    got, names = _groups.encode_values(pd.Series(pd.arrays.ArrowExtensionArray(dictionary)))
    assert names == ["a", "b", "c", "x"]
    expected = np.array([3, 1, 0, 2, -1])[codes]  # x b a c -> report order a b c x; -1 stays -1
    np.testing.assert_array_equal(got, expected)
