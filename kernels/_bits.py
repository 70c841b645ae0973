"""A float64's bits as a uint64 and back, inside kernels, without an array view.

``array.view`` and ``np.empty`` are overloads in numba whose first use compiles chains of small
functions (about a second with an empty cache, see :mod:`._arrays`); these intrinsics emit one
``bitcast`` instruction into the calling kernel instead, which vectorizes. Without JIT
(``NUMBA_DISABLE_JIT=1``) the NumPy bodies run instead.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._jit import PLAIN


def bits_of(value):
    """The bits of a float64 as a uint64."""
    return np.float64(value).view(np.uint64)


def float_of(bits):
    """The float64 whose bits these (a uint64) are."""
    return np.uint64(bits).view(np.float64)


if not PLAIN:

    @intrinsic
    def bits_of(typingctx, value):  # noqa: F811 - the compiled version of the Python body above
        if value != types.float64:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))

        return types.uint64(types.float64), codegen

    @intrinsic
    def float_of(typingctx, bits):  # noqa: F811 - the compiled version of the Python body above
        if bits != types.uint64:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.uint64), codegen
