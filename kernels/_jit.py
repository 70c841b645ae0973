"""The compile flags every kernel shares, and the decorators the kernel modules import.

``fastmath`` stays off: kernels compare floats exactly (ties, bin edges, F1 tie-breaks) and must
reproduce NumPy's arithmetic bit for bit. ``error_model="numpy"`` makes a division by zero give
inf/NaN instead of raising, with no check in the inner loops.

:func:`kernel` compiles lazily, at first call, with its machine code cached on disk (:mod:`._caches`:
the cache shipped with the wheel, then a writable one); a small first call with nothing compiled runs
the kernel's plain-Python copy instead (:mod:`._plain`). :func:`inline_kernel` is for the helpers of
inner loops. In the plain-Python copy, and under ``NUMBA_DISABLE_JIT=1`` (:data:`PLAIN`), both return
the function itself. Importing this module also loads numba's CPU implementations without importing
``scipy.linalg`` (:func:`_load_numba_registries`).
"""
import sys

from numba import njit

from ._caches import NUMBA_PROBLEM, attach_caches, notice_unsupported
from ._plain import PLAIN, interpret_first_calls

__all__ = ["JIT_OPTIONS", "PLAIN", "inline_kernel", "kernel"]

JIT_OPTIONS = {"nogil": True, "fastmath": False, "error_model": "numpy"}


def kernel(function):
    """Compile ``function`` lazily (at first call) with the shared flags, cached on disk; a small first
    call runs it as plain Python instead (see :mod:`._plain`)."""
    if PLAIN:
        return function
    if NUMBA_PROBLEM:
        notice_unsupported()
        return njit(cache=True, **JIT_OPTIONS)(function)
    return interpret_first_calls(attach_caches(njit(**JIT_OPTIONS)(function)))


def inline_kernel(function):
    """A helper called from inner loops: inlined into its callers at Numba IR level, so that no call
    (and no reference counting of the arrays it is handed) happens per sample. Not cached on its own:
    its code lives in its callers' cache (whose stamp covers every kernels/*.py file)."""
    if PLAIN:
        return function
    return njit(inline="always", **JIT_OPTIONS)(function)


class _DeferScipyLinalg:
    """An import hook that reports ``scipy.linalg`` as missing, on the thread that installed it only."""

    def __init__(self):
        import threading

        self._thread = threading.get_ident()
        self._get_ident = threading.get_ident

    def find_spec(self, name, path=None, target=None):
        if (name == "scipy.linalg" or name.startswith("scipy.linalg.")) and self._get_ident() == self._thread:
            raise ModuleNotFoundError(f"No module named {name!r} (deferred while numba loads)", name=name)
        return None


def _load_numba_registries() -> None:
    """Load numba's CPU implementations now, without importing ``scipy.linalg``.

    numba loads its implementation modules before the first compilation or cache load of a process.
    One of them (``numba.np.arraymath``) imports ``scipy.linalg`` only to learn whether BLAS is there,
    for ``np.dot`` and the like, which no kernel here uses; that import costs about 0.2 s of every
    fresh process. It fails fast here (on this thread only), and the flag is then set to what numba
    would have found; a later BLAS use (``np.dot`` in other code) imports scipy as usual. Any surprise
    leaves numba to do the loading itself.
    """
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    try:
        import importlib.util

        from numba.core import config
        from numba.core.registry import cpu_target

        if config.DISABLE_JIT:
            return
        hook = _DeferScipyLinalg()
        sys.meta_path.insert(0, hook)
        try:
            cpu_target.target_context.refresh()
        finally:
            sys.meta_path.remove(hook)
        from numba.np import arraymath

        if getattr(arraymath, "_HAVE_BLAS", True) is False:
            arraymath._HAVE_BLAS = importlib.util.find_spec("scipy.linalg") is not None
    except Exception:  # noqa: BLE001 - numba's own first load does the same work
        pass


_load_numba_registries()
