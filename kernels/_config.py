"""Compilation flags shared by every kernel, and where their machine code is cached.

``fastmath`` stays off: kernels compare floats exactly (ties, bin edges, F1 tie-breaks) and must
reproduce NumPy's arithmetic bit for bit. ``error_model="numpy"`` makes a division by zero give
inf/NaN instead of raising, with no check in the inner loops.

Compiled kernels are cached on disk so that a second process skips compilation. Numba's own
``cache=True`` gives up ("no locator available") when neither ``NUMBA_CACHE_DIR``, nor the
package's ``__pycache__``, nor the user's cache folder is writable, as in a container with a
read-only root file system. The kernels here use numba's cache machinery with a longer list of
places, the first that works wins:

1. ``NUMBA_CACHE_DIR`` when it is set (numba's rule);
2. the ``__pycache__`` folder beside the kernel's source, when it is writable (numba's rule);
3. that ``__pycache__`` folder read-only, when it already holds this kernel's index: a cache
   filled at build time (``fairmedfm-fast warmup``) is used; a signature it lacks is compiled in
   memory and not saved;
4. the user's cache folder (numba's rule: ``~/.cache/numba`` on Linux);
5. a private folder in the temporary directory (``fairmedfm_fast-numba-<uid>``, mode 0700);
6. none: the kernel compiles in memory in each process, with one warning.
"""
import contextlib
import os
import sys
import tempfile
import warnings

from numba import njit

JIT_OPTIONS = {"nogil": True, "fastmath": False, "error_model": "numpy"}

try:  # numba's cache machinery; its layout has been stable since numba 0.49
    from numba.core import caching as _caching
except ImportError:  # pragma: no cover - a future numba: fall back to its own cache=True
    _caching = None

_warned = False


def kernel(function):
    """Compile ``function`` lazily (at first call) with the shared flags, cached on disk."""
    return _cached(njit(**JIT_OPTIONS)(function))


def inline_kernel(function):
    """A helper called from inner loops: inlined into its callers at Numba IR level, so that no call
    (and no reference counting of the arrays it is handed) happens per sample. Not cached on its own:
    its code lives in its callers' cache."""
    return njit(inline="always", **JIT_OPTIONS)(function)


def cache_location(dispatcher) -> str | None:
    """The folder that holds ``dispatcher``'s cache, or None when it compiles in memory."""
    cache = getattr(dispatcher, "_cache", None)
    return getattr(cache, "cache_path", None)


def _cached(dispatcher):
    global _warned
    if not hasattr(dispatcher, "enable_caching"):  # NUMBA_DISABLE_JIT=1: plain Python
        return dispatcher
    if _caching is None:  # pragma: no cover
        dispatcher.enable_caching()
        return dispatcher
    try:
        dispatcher._cache = _KernelCache(dispatcher.py_func)
    except RuntimeError:  # no locator: compile in memory
        if not _warned:
            _warned = True
            warnings.warn("fairmedfm_fast: no writable folder for the compiled kernels (set NUMBA_CACHE_DIR "
                          "to one): they compile in memory in each process, which takes a few seconds",
                          RuntimeWarning, stacklevel=3)
    return dispatcher


if _caching is not None:

    class _PrebuiltInTreeLocator(_caching.InTreeCacheLocator):
        """The read-only ``__pycache__`` beside the source, when it already holds this kernel's index."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            modname = os.path.splitext(os.path.basename(py_file))[0]
            qualname = getattr(py_func, "__qualname__", py_func.__name__).replace("<", "").replace(">", "")
            version = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
            self._index = os.path.join(self._cache_path, f"{modname}.{qualname}-{self._lineno}.{version}.nbi")

        def ensure_cache_path(self):
            if not os.access(self._index, os.R_OK):
                raise OSError(f"no prebuilt cache index {self._index}")

    class _TempDirLocator(_caching._SourceFileBackedLocatorMixin, _caching._CacheLocator):
        """A folder of this user's own in the temporary directory."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            uid = os.getuid() if hasattr(os, "getuid") else "user"
            try:
                self._root = os.path.join(tempfile.gettempdir(), f"fairmedfm_fast-numba-{uid}")
            except OSError:  # no usable temporary folder at all
                self._root = None
            else:
                self._cache_path = os.path.join(self._root, self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

        def ensure_cache_path(self):
            if self._root is None:
                raise OSError("no temporary folder")
            os.makedirs(self._root, mode=0o700, exist_ok=True)
            if hasattr(os, "getuid"):  # never load machine code from a folder someone else controls
                status = os.stat(self._root)
                if status.st_uid != os.getuid() or status.st_mode & 0o022:
                    raise OSError(f"{self._root} is not this user's private folder")
            super().ensure_cache_path()

    class _KernelCacheImpl(_caching.CompileResultCacheImpl):
        _locator_classes = [
            _caching.UserProvidedCacheLocator,
            _caching.InTreeCacheLocator,
            _PrebuiltInTreeLocator,
            _caching.UserWideCacheLocator,
            _TempDirLocator,
        ]

    class _KernelCache(_caching.FunctionCache):
        """numba's function cache over the locators above. Saves hold a lock on the folder, so that
        processes compiling the same kernel at once (``fairmedfm-fast warmup``) do not overwrite each
        other's index entries; a save that fails (read-only prebuilt folder, full disk) leaves the
        compiled kernel in memory instead of raising."""

        _impl_class = _KernelCacheImpl

        def save_overload(self, sig, data):
            try:
                with _locked(self.cache_path):
                    super().save_overload(sig, data)
            except OSError:
                pass

    @contextlib.contextmanager
    def _locked(folder):
        try:
            import fcntl
        except ImportError:  # not POSIX: numba's own atomic file replacement only
            yield
            return
        with open(os.path.join(folder, "fairmedfm_fast.lock"), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


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
