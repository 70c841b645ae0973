"""Compilation flags shared by every kernel, in one place.

``cache=True`` writes compiled machine code next to the module (or to ``NUMBA_CACHE_DIR``), so a
second process skips compilation. ``fastmath`` stays off: kernels compare floats exactly (ties,
bin edges, F1 tie-breaks) and must reproduce NumPy's arithmetic bit for bit. ``error_model="numpy"``
makes a division by zero give inf/NaN instead of raising, with no check in the inner loops.
"""
from numba import njit

JIT_OPTIONS = {"cache": True, "nogil": True, "fastmath": False, "error_model": "numpy"}


def kernel(function):
    """Compile ``function`` lazily (at first call) with the shared flags."""
    return njit(**JIT_OPTIONS)(function)


def inline_kernel(function):
    """A helper called from inner loops: inlined into its callers at Numba IR level, so that no call
    (and no reference counting of the arrays it is handed) happens per sample."""
    return njit(inline="always", **JIT_OPTIONS)(function)
