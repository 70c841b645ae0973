"""Optional sample weights in kernels, resolved at compile time.

A kernel takes ``weights=None`` (every sample counts once: integer counters) or a float64 array
(weighted sums: float counters). The two helpers below compile to the right thing for each case,
so the unweighted kernels pay nothing for the option. Without JIT (``NUMBA_DISABLE_JIT=1``) the
plain Python bodies run instead.
"""
import numpy as np
from numba import types
from numba.extending import intrinsic, overload

from ._arrays import JIT_ARRAYS, array_type, emit_array


def weight_of(weights, i):
    """Weight of sample ``i``: 1 without weights."""
    return 1 if weights is None else weights[i]


def counters(weights, shape):
    """Zeroed counters: int64 without weights, float64 with them."""
    return np.zeros(shape, np.int64 if weights is None else np.float64)


def _unweighted(weights) -> bool:
    return weights is None or isinstance(weights, (types.NoneType, types.Omitted))


@overload(weight_of, inline="always")
def _weight_of(weights, i):
    if _unweighted(weights):
        return lambda weights, i: 1
    return lambda weights, i: weights[i]


if JIT_ARRAYS:

    @intrinsic
    def counters(typingctx, weights, shape):  # noqa: F811 - the compiled version of the Python body above
        kind = array_type(shape, types.int64 if _unweighted(weights) else types.float64)

        def codegen(context, builder, signature, args):
            return emit_array(context, builder, kind, shape, args[1])

        return kind(weights, shape), codegen

else:  # without JIT (the Python body runs), or a numba without the allocation code: its np.zeros

    @overload(counters, inline="always")
    def _counters(weights, shape):
        if _unweighted(weights):
            return lambda weights, shape: np.zeros(shape, np.int64)
        return lambda weights, shape: np.zeros(shape, np.float64)
