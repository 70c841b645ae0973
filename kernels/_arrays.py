"""New arrays inside kernels, without a compilation of their own.

``np.zeros``, ``np.full`` and ``np.empty`` are overloads in numba: the first use of each (shape type,
dtype) pair in a process compiles a chain of small functions (``np.zeros`` calls ``np.empty``, which
calls the allocator), each into its own machine-code module, about 0.1 s apiece with an empty cache.
:func:`filled` emits the allocation and the fill straight into the calling kernel instead, and
:func:`emit_array` lets other intrinsics do the same. Without JIT (``NUMBA_DISABLE_JIT=1``) the plain
NumPy body runs instead.
"""
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._jit import PLAIN

try:  # the allocation code numba's own np.empty emits (numba.np.arrayobj, stable since numba 0.20)
    from numba.np.arrayobj import _empty_nd_impl as _allocate
except ImportError:  # pragma: no cover - a future numba: the NumPy overloads
    _allocate = None

JIT_ARRAYS = _allocate is not None and not PLAIN


def filled(shape, value):
    """A new C-contiguous array of ``shape`` (an int or a tuple of ints) holding ``value`` everywhere:
    int64 for an integer ``value``, float64 for a float."""
    return np.full(shape, value, np.int64 if isinstance(value, (int, np.integer)) else np.float64)


def array_type(shape, dtype):
    """The numba type of a new C-contiguous array of ``dtype`` and ``shape`` (an integer or tuple type)."""
    return types.Array(dtype, shape.count if isinstance(shape, types.BaseTuple) else 1, "C")


def emit_array(context, builder, kind, shape, shape_value, fill=None):
    """Emit the allocation of an array of type ``kind`` with the lowered ``shape_value`` (of numba type
    ``shape``), zeroed when ``fill`` is None, else holding the lowered ``fill`` (of ``kind``'s dtype).
    Returns the array's lowered value."""
    shapes = list(shape) if isinstance(shape, types.BaseTuple) else [shape]
    values = cgutils.unpack_tuple(builder, shape_value) if isinstance(shape, types.BaseTuple) else [shape_value]
    sizes = [context.cast(builder, v, t, types.intp) for v, t in zip(values, shapes)]
    made = _allocate(context, builder, kind, sizes)
    if fill is None:
        cgutils.memset(builder, made.data, builder.mul(made.itemsize, made.nitems), 0)
    else:
        with cgutils.for_range(builder, made.nitems) as loop:
            builder.store(fill, builder.gep(made.data, [loop.index]))
    return made._getvalue()


if JIT_ARRAYS:

    @intrinsic
    def filled(typingctx, shape, value):  # noqa: F811 - the compiled version of the Python body above
        value = types.unliteral(value)
        kind = array_type(shape, types.int64 if isinstance(value, types.Integer) else types.float64)

        def codegen(context, builder, signature, args):
            fill = context.cast(builder, args[1], value, kind.dtype)
            return emit_array(context, builder, kind, shape, args[0], fill)

        return kind(shape, value), codegen
