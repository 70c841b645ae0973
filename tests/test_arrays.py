"""The kernels' array and bit helpers (``kernels/_arrays.py``, ``kernels/_weights.py``, ``kernels/_bits.py``)
against NumPy.

They are intrinsics under JIT (no compilation of their own, callable from kernels only); their plain
NumPy bodies (``NUMBA_DISABLE_JIT=1``) run in ``test_kernels.py::test_kernels_without_jit``.
"""
import numpy as np
import pytest
from numba import njit

from fairmedfm_fast.kernels._arrays import filled
from fairmedfm_fast.kernels._bits import bits_of, float_of
from fairmedfm_fast.kernels._weights import counters


@njit
def _filled_1d(n, value):
    return filled(n, value)


@njit
def _filled_2d(n, m, value):
    return filled((n, m), value)


@njit
def _filled_3d(n, value):
    return filled((n, 2, n + 1), value)


@njit
def _counters(weights, n, m):
    one = counters(weights, n)
    one[0] += 1  # a fresh, writable array
    return one, counters(weights, (n, m))


@pytest.mark.parametrize("value", [0, -1, 7, 0.0, -0.0, 0.25, np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_filled_is_np_full(n, value):
    dtype = np.int64 if isinstance(value, int) else np.float64
    for got, shape in ((_filled_1d(n, value), (n,)), (_filled_2d(n, 3, value), (n, 3)),
                       (_filled_3d(n, value), (n, 2, n + 1))):
        expected = np.full(shape, value, dtype)
        assert got.dtype == dtype and got.shape == expected.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, expected)
        assert np.array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("weights", [None, np.ones(3)])
def test_counters_are_zeros_of_the_weights_type(weights):
    one, two = _counters(weights, 4, 3)
    dtype = np.int64 if weights is None else np.float64
    assert one.dtype == two.dtype == dtype and one.shape == (4,) and two.shape == (4, 3)
    np.testing.assert_array_equal(one, [1, 0, 0, 0])
    np.testing.assert_array_equal(two, np.zeros((4, 3)))


@njit
def _bits_and_back(values, bits, back):
    for i in range(values.shape[0]):
        bits[i] = bits_of(values[i])
        back[i] = float_of(bits[i])


def test_bits_of_and_float_of_are_numpy_views():
    values = np.array([0.0, -0.0, 1.0, -2.5, 5e-324, np.inf, -np.inf, np.nan, 0.1, 1e308])
    bits, back = np.empty(len(values), np.uint64), np.empty(len(values))
    _bits_and_back(values, bits, back)
    np.testing.assert_array_equal(bits, values.view(np.uint64))
    np.testing.assert_array_equal(back.view(np.uint64), values.view(np.uint64))
