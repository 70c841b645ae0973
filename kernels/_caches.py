"""Where the kernels' machine code is cached on disk, and what is said when it must compile.

Compiled kernels are cached in two places:

- **The shipped cache**, ``_compiled/`` beside this file in an installed package: the signatures of
  ``_signatures.py``, compiled when the wheel was built (``fairmedfm_fast/_build.py``). It is only
  ever read. An entry is used when numba's version (the index header), the stamp, the signature and
  the CPU (target triple, CPU name and features) match. The stamp (:func:`source_stamp`) is a hash of
  every ``.py`` file of this folder (``kernels/``, which has no subfolders of code; all but the
  signature list ``_signatures.py``) and NumPy's major.minor: inlined helpers change their callers'
  code, and these modules decide how the kernels compile.
- **The writable cache**, where a signature the shipped cache lacks is saved after it compiled;
  the first of these that works, chosen at the first miss:

  1. ``NUMBA_CACHE_DIR`` when it is set (numba's rule; it does not hide the shipped cache);
  2. in a source checkout only, the ``__pycache__`` folder beside the kernel's source when it is
     writable (numba's rule), or read-only when it already holds the kernel's index; an installed
     package never writes into its own folder (files missing from the wheel's RECORD);
  3. the user's cache folder (numba's rule: ``~/.cache/numba`` on Linux);
  4. a private folder in the temporary directory (``fairmedfm_fast-numba-<uid>``, mode 0700);
  5. none: the kernel compiles in memory in each process, with one warning.

Where an installed package compiles, one line on stderr says so, once per process: why the shipped
cache does not apply (another CPU, numba or NumPy than the build's, or a wheel built without it), or,
where it applies but lacks the call's argument types, which kernel compiles first and that later calls
are fast. A lookup of the plain-Python first calls (:mod:`._plain`) that misses says nothing: nothing
compiles then. Under a numba other than :data:`NUMBA_VERSIONS` (whose private internals this module
uses) the kernels are plain ``@njit(cache=True)``, with a notice (:data:`NUMBA_PROBLEM`).
"""
import contextlib
import functools
import hashlib
import os
import sys
import tempfile
import threading
import warnings

from ._plain import PLAIN, probing

#: The shipped cache's folder, beside this file (``fairmedfm_fast/kernels/_compiled`` installed).
SHIPPED_FOLDER = "_compiled"
#: Set (to a folder) by the build step only: every kernel saves its compiled signatures there.
BUILD_ENV = "FAIRMEDFM_FAST_BUILDING_CACHE"
#: numba's CPU name for code that runs on every CPU of an architecture (``NUMBA_CPU_NAME=generic``):
#: the shipped cache's second entry of each signature, loaded where this CPU's own is missing.
PORTABLE_CPU = "generic"

_HERE = os.path.dirname(os.path.abspath(__file__))
# Installed, kernels/ is fairmedfm_fast/kernels; in a source checkout it sits beside fairmedfm_fast/.
INSTALLED = os.path.basename(os.path.dirname(_HERE)) == "fairmedfm_fast"

#: The numba minor versions (first, last) whose private dispatcher and cache internals this module
#: and :mod:`._plain` use (``Dispatcher._compile_for_args``, ``_cache.load_overload``, ``add_overload``,
#: the cache and locator classes): the versions the tests run, and pyproject.toml's pin. Under any
#: other numba the kernels are plain ``@njit(cache=True)`` (no shipped cache, no plain-Python first
#: calls), with a notice.
NUMBA_VERSIONS = ((0, 68), (0, 68))
#: What this module needs of ``numba.core.caching``.
_CACHE_NAMES = ("Cache", "CompileResultCacheImpl", "IndexDataCacheFile", "UserProvidedCacheLocator",
                "InTreeCacheLocator", "UserWideCacheLocator", "_CacheLocator", "_SourceFileBackedLocatorMixin",
                "compiler")


def _numba_problem() -> str | None:
    """Why this numba cannot be served by this module's cache and dispatch hooks (None: it can)."""
    import numba
    from numba.core.dispatcher import Dispatcher

    try:
        version = tuple(int(part) for part in numba.__version__.split(".")[:2])
    except ValueError:
        version = None
    (first, last) = NUMBA_VERSIONS
    if version is None or not first <= version <= last:
        supported = ".".join(map(str, first)) + ("" if first == last else "-" + ".".join(map(str, last)))
        return f"numba {numba.__version__} is not the version it was tested with ({supported})"
    try:
        from numba.core import caching
    except ImportError:
        return "numba.core.caching is missing"
    missing = [name for name in _CACHE_NAMES if not hasattr(caching, name)]
    missing += [name for name in ("_compile_for_args", "add_overload", "typeof_pyval") if not hasattr(Dispatcher, name)]
    return f"numba {numba.__version__} lacks {', '.join(missing)}" if missing else None


#: Why this numba gets numba's own cache instead of this module's (None: it gets this module's).
NUMBA_PROBLEM = None if PLAIN else _numba_problem()
if PLAIN or NUMBA_PROBLEM:
    _caching = None
else:
    from numba.core import caching as _caching

#: What this process has said once (the notice on stderr, the warning of no writable folder), guarded
#: by the lock: threads compiling at once would otherwise each find it unsaid and say it again.
_said: set[str] = set()
_said_lock = threading.Lock()


def cache_location(dispatcher) -> str | None:
    """The folder where ``dispatcher`` saves what it compiles, or None when it compiles in memory."""
    cache = getattr(dispatcher, "_cache", None)
    if isinstance(cache, _KernelCache if _caching is not None else ()):
        return cache.writable_path()
    return getattr(cache, "cache_path", None)


@functools.cache
def source_stamp() -> str:
    """A hash of every ``.py`` file of this folder (``kernels/``: the decorators, the caches and the plain
    copies as well as the kernels; not ``_signatures.py``, nor subfolders: there are none) and NumPy's
    major.minor: the stamp of every cache index."""
    import numpy

    digest = hashlib.sha256(".".join(numpy.__version__.split(".")[:2]).encode())
    for name in sorted(os.listdir(_HERE)):
        if name.endswith(".py") and name != "_signatures.py":  # the list is not code
            with open(os.path.join(_HERE, name), "rb") as handle:
                digest.update(name.encode() + b"\0" + handle.read() + b"\0")
    return digest.hexdigest()


def attach_caches(dispatcher):
    """``dispatcher`` (a numba dispatcher), reading the shipped cache and saving into the writable one."""
    if not hasattr(dispatcher, "enable_caching"):  # NUMBA_DISABLE_JIT=1: plain Python
        return dispatcher
    dispatcher._cache = _KernelCache(dispatcher.py_func)
    return dispatcher


def _first(what: str) -> bool:
    """Whether ``what`` is unsaid in this process, marking it said (one step under the lock)."""
    with _said_lock:
        if what in _said:
            return False
        _said.add(what)
        return True


def notice_unsupported() -> None:
    """One line on stderr, once per process: this numba gets numba's own cache, not this module's."""
    if not _first("notice"):
        return
    sys.stderr.write(f"fairmedfm_fast: {NUMBA_PROBLEM}; the kernels compile with numba's own cache instead of "
                     "the compiled ones shipped with this package (the first calls take seconds more, the "
                     "numbers are the same); install the numba that pyproject.toml names to use them\n")


def _warn_no_folder():
    if _first("no folder"):
        warnings.warn("fairmedfm_fast: no writable folder for the compiled kernels (set NUMBA_CACHE_DIR "
                      "to one): they compile in memory in each process, which takes a few seconds",
                      RuntimeWarning, stacklevel=4)


def _notice(reason: str | None, folder: str | None, kernel: str) -> None:
    """One line on stderr, once per process, when an installed package compiles: why (``reason``: the
    shipped cache does not apply; None: it applies but lacks this signature) and where it is kept."""
    if not _first("notice"):
        return
    kept = f"kept in {folder}" if folder else "not kept (no writable folder: set NUMBA_CACHE_DIR)"
    if reason is None:
        sys.stderr.write(f"fairmedfm_fast: compiling kernels for argument types this installation does not ship "
                         f"(first: {kernel}); this takes seconds, once: later calls are fast ({kept}); "
                         "`fairmedfm-fast warmup --workloads` compiles the rarer types ahead\n")
        return
    sys.stderr.write(f"fairmedfm_fast: the kernels compiled with this package do not apply here ({reason}); "
                     f"small calls run uncompiled, and each kernel compiles once when a call is larger ({kept}); "
                     "`fairmedfm-fast warmup` compiles them all ahead, NUMBA_CACHE_DIR chooses where they are "
                     "kept\n")


if _caching is not None:

    class _StampedLocatorMixin:
        """Stamps the cache index with :func:`source_stamp` instead of the kernel's own file."""

        def get_source_stamp(self):
            return source_stamp()

    class _UserProvided(_StampedLocatorMixin, _caching.UserProvidedCacheLocator):
        pass

    class _InTree(_StampedLocatorMixin, _caching.InTreeCacheLocator):
        @classmethod
        def from_function(cls, py_func, py_file):
            return None if INSTALLED else super().from_function(py_func, py_file)

    class _PrebuiltInTree(_StampedLocatorMixin, _caching.InTreeCacheLocator):
        """A read-only ``__pycache__`` beside the source (a checkout) that already holds this kernel's index."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._index = os.path.join(self._cache_path, _filename_base(py_func) + ".nbi")

        @classmethod
        def from_function(cls, py_func, py_file):
            return None if INSTALLED else super().from_function(py_func, py_file)

        def ensure_cache_path(self):
            if not os.access(self._index, os.R_OK):
                raise OSError(f"no prebuilt cache index {self._index}")

    class _UserWide(_StampedLocatorMixin, _caching.UserWideCacheLocator):
        pass

    class _TempDir(_StampedLocatorMixin, _caching._SourceFileBackedLocatorMixin, _caching._CacheLocator):
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

    class _Building(_StampedLocatorMixin, _caching._SourceFileBackedLocatorMixin, _caching._CacheLocator):
        """The build step's folder (``BUILD_ENV``): the shipped cache being written."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.environ[BUILD_ENV]

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            return super().from_function(py_func, py_file) if os.environ.get(BUILD_ENV) else None

    class _KernelCacheImpl(_caching.CompileResultCacheImpl):
        _locator_classes = [_Building, _UserProvided, _InTree, _PrebuiltInTree, _UserWide, _TempDir]

    def _portable(key: tuple) -> tuple:
        """The index key of ``key``'s signature compiled for any CPU of its architecture (numba's
        ``generic`` CPU name, no features): the entries the build adds beside the host's."""
        return (key[0], (key[1][0], PORTABLE_CPU, ""), *key[2:])

    def _filename_base(py_func) -> str:
        """numba's file name for a function's index and data files (without the extension)."""
        module = os.path.splitext(os.path.basename(py_func.__code__.co_filename))[0]
        qualname = getattr(py_func, "__qualname__", py_func.__name__).replace("<", "").replace(">", "")
        flags = getattr(sys, "abiflags", "")
        return f"{module}.{qualname}-{py_func.__code__.co_firstlineno}.py{sys.version_info[0]}{sys.version_info[1]}{flags}"

    class _KernelCache(_caching.Cache):
        """numba's function cache, reading the shipped cache first and the writable one next, and
        saving only into the writable one (found at the first miss, so that a process served by
        the shipped cache writes nothing). Saves hold a lock on the folder, so that processes
        compiling the same kernel at once do not overwrite each other's index entries; a save that
        fails (read-only folder, full disk) leaves the compiled kernel in memory instead of raising."""

        _impl_class = _KernelCacheImpl

        def __init__(self, py_func):  # noqa: D107 - numba's Cache.__init__ finds its locator at once
            self._name = repr(py_func)
            self._py_func = py_func
            self._base = _filename_base(py_func)
            shipped = os.path.join(_HERE, SHIPPED_FOLDER)
            building = bool(os.environ.get(BUILD_ENV))
            self._shipped = None if building or not os.path.isdir(shipped) else \
                _caching.IndexDataCacheFile(shipped, self._base, source_stamp())
            self._impl = self._cache_file = None
            self._resolved = False
            self.enable()

        def _writable(self):
            """The writable cache's index file, or None (found once, at the first need)."""
            if not self._resolved:
                self._resolved = True
                try:
                    self._impl = self._impl_class(self._py_func)
                except RuntimeError:  # no locator: what compiles stays in memory
                    pass
                else:
                    self._cache_file = _caching.IndexDataCacheFile(
                        self._impl.locator.get_cache_path(), self._base, source_stamp())
            return self._cache_file

        def writable_path(self):
            return self._impl.locator.get_cache_path() if self._writable() is not None else None

        @property
        def cache_path(self):
            return self.writable_path()

        def _load_overload(self, sig, target_context):
            if not self._enabled:
                return None
            key = self._index_key(sig, target_context.codegen())
            if self._shipped is not None:
                data = self._shipped.load(key)
                if data is None and key[1][1] != PORTABLE_CPU:  # this CPU's entry first, else the portable one
                    data = self._shipped.load(_portable(key))
                if data is not None:
                    return _caching.compiler.CompileResult._rebuild(target_context, *data)
            writable = self._writable()
            data = writable.load(key) if writable is not None else None
            if data is not None:
                return _caching.compiler.CompileResult._rebuild(target_context, *data)
            if INSTALLED and not os.environ.get(BUILD_ENV) and not getattr(probing, "active", False):
                kernel = f"{self._py_func.__module__.rsplit('.', 1)[-1]}.{self._py_func.__name__}"
                _notice(self._why_not_shipped(key), self.writable_path(), f"{kernel}({', '.join(map(str, sig))})")
            return None

        def _why_not_shipped(self, key) -> str | None:
            """Why the shipped cache could not serve ``key`` (None: it applies, only lacks the signature)."""
            if self._shipped is None:
                return "this installation was built without them"
            import pickle

            try:
                with open(self._shipped._index_path, "rb") as handle:
                    version = pickle.load(handle)
                    stamp, overloads = pickle.loads(handle.read())
            except FileNotFoundError:
                return None  # a kernel the build's signature list does not name
            except Exception:  # noqa: BLE001 - an unreadable index is as good as none
                return "its index cannot be read"
            if version != self._shipped._version:
                return f"they were compiled with numba {version}, this is numba {self._shipped._version}"
            if stamp != self._shipped._source_stamp:
                return "they were compiled with another NumPy or other kernel sources"
            if not any(entry[1] in (key[1], _portable(key)[1]) for entry in overloads):
                return f"they were compiled for another CPU than this {key[1][1]}"
            return None

        def _save_overload(self, sig, data):
            if not self._enabled:
                return
            writable = self._writable()
            if writable is None:
                _warn_no_folder()
                return
            if not self._impl.check_cachable(data):
                return
            try:
                self._impl.locator.ensure_cache_path()
                with _locked(self._impl.locator.get_cache_path()):
                    writable.save(self._index_key(sig, data.codegen), self._impl.reduce(data))
            except OSError:
                pass

        def flush(self):
            if self._writable() is not None:
                self._cache_file.flush()

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
