"""Compilation flags shared by every kernel, and where their machine code is cached.

``fastmath`` stays off: kernels compare floats exactly (ties, bin edges, F1 tie-breaks) and must
reproduce NumPy's arithmetic bit for bit. ``error_model="numpy"`` makes a division by zero give
inf/NaN instead of raising, with no check in the inner loops.

Compiled kernels are cached on disk, in two places:

- **The shipped cache**, ``_compiled/`` beside this file in an installed package: the signatures of
  ``_signatures.py``, compiled when the wheel was built (``fairmedfm_fast/_build.py``). It is only
  ever read. An entry is used when numba's version (the index header), the stamp (a hash of every
  ``kernels/*.py`` file and NumPy's major.minor: inlined helpers change their callers' code), the
  signature and the CPU (target triple, CPU name and features) match.
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
are fast. Under a numba other than :data:`NUMBA_VERSIONS` (whose private internals this module uses)
the kernels are plain ``@njit(cache=True)``, with a notice.

**Small calls before anything is compiled run as plain Python.** Compiling the kernels of a first
``evaluate`` takes numba 8-10 s of CPU (``sweeps.ranked_sums`` alone about 4 s), while their plain
Python bodies take about 20 ms on 1,000 samples. So when a call finds no compiled code (in memory,
shipped or cached) for its argument types, and its arrays hold at most :data:`INTERPRET_BELOW`
samples, it runs the kernel's plain-Python copy (:func:`interpreted`: the same source, imported a
second time with the decorators returning the functions, as under ``NUMBA_DISABLE_JIT=1``) instead of
compiling. Once the process has spent :data:`INTERPRET_SECONDS` in such calls, or a call is larger,
the kernel compiles (and is cached) as before. ``FAIRMEDFM_FAST_INTERPRET=never`` turns this off.
Kernels whose work is not linear in their arrays (the resampling loops) always compile. The plain
copy gives the same numbers (tests/test_interpreted.py checks it against the compiled kernels).
"""
import contextlib
import functools
import hashlib
import os
import sys
import tempfile
import threading
import time
import warnings

import numpy as np
from numba import njit
from numba.core import config as _numba_config

JIT_OPTIONS = {"nogil": True, "fastmath": False, "error_model": "numpy"}

#: The package of the kernels' plain-Python copy (see :func:`interpreted`).
INTERPRETED_PACKAGE = "_interpreted"
#: True in the plain-Python copy of the kernels, and under ``NUMBA_DISABLE_JIT=1``: the decorators
#: return the functions themselves, and helpers use their NumPy bodies.
PLAIN = bool(_numba_config.DISABLE_JIT) or f".{INTERPRETED_PACKAGE}." in __name__
#: A call runs uncompiled only when its arrays' last axis (the samples) is at most this long: plain
#: Python takes about 0.2 s for an ``evaluate`` of 10,000 samples, and 3-4 s at 50,000.
INTERPRET_BELOW = 20_000
#: Seconds of uncompiled calls a process may spend before the kernels compile.
INTERPRET_SECONDS = 2.0
#: ``never`` turns the plain-Python first calls off.
INTERPRET_ENV = "FAIRMEDFM_FAST_INTERPRET"
#: Kernel modules that always compile: their loops run over resamples, not over their arrays.
ALWAYS_COMPILED = ("bootstrap", "resampling")

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
#: uses (``Dispatcher._compile_for_args``, ``_cache.load_overload``, ``add_overload``, the cache and
#: locator classes): the versions the tests run, and pyproject.toml's pin. Under any other numba the
#: kernels are plain ``@njit(cache=True)`` (no shipped cache, no plain-Python first calls), with a notice.
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


_NUMBA_PROBLEM = None if PLAIN else _numba_problem()
if PLAIN or _NUMBA_PROBLEM:
    _caching = None
else:
    from numba.core import caching as _caching

_warned = False
_noticed = False


def kernel(function):
    """Compile ``function`` lazily (at first call) with the shared flags, cached on disk; a small first
    call runs it as plain Python instead (see the module's docstring)."""
    if PLAIN:
        return function
    if _NUMBA_PROBLEM:
        _notice_unsupported()
        return njit(cache=True, **JIT_OPTIONS)(function)
    dispatcher = _cached(njit(**JIT_OPTIONS)(function))
    if function.__module__.rsplit(".", 1)[-1] not in ALWAYS_COMPILED:
        # numba's dispatcher calls this (from C) only when no compiled version matches the arguments;
        # a plain function it returns is called with them, as numba's object-mode fallback is.
        dispatcher._compile_for_args = functools.partial(_compile_or_interpret, dispatcher,
                                                         dispatcher._compile_for_args)
    return dispatcher


def inline_kernel(function):
    """A helper called from inner loops: inlined into its callers at Numba IR level, so that no call
    (and no reference counting of the arrays it is handed) happens per sample. Not cached on its own:
    its code lives in its callers' cache (whose stamp covers every kernels/*.py file)."""
    if PLAIN:
        return function
    return njit(inline="always", **JIT_OPTIONS)(function)


#: This process's uncompiled calls: whether they are allowed (``FAIRMEDFM_FAST_INTERPRET=never`` at
#: import turns them off; the test suite turns them off here, so that its calls exercise the compiled
#: kernels) and the seconds spent in them.
interpreting = {"enabled": os.environ.get(INTERPRET_ENV, "").strip().lower() != "never", "seconds": 0.0}
_interpreted_lock = threading.Lock()
#: ``active`` while :func:`_from_cache` looks a signature up (on this thread): a miss there compiles nothing.
_probing = threading.local()


def _compile_or_interpret(dispatcher, compile_for_args, *args, **kws):
    """What numba's dispatcher calls when no compiled version matches ``args``: the compiled code
    from a cache if there is one, else (for a small call, while the process has time left for such
    calls) the kernel's plain-Python copy, else numba's compile."""
    if (kws or not interpreting["enabled"] or interpreting["seconds"] >= INTERPRET_SECONDS
            or _samples(args) > INTERPRET_BELOW):
        return compile_for_args(*args, **kws)
    try:
        found = _from_cache(dispatcher, args)
    except Exception:  # noqa: BLE001 - an argument numba cannot type: let numba say so
        return compile_for_args(*args)
    if found is not None:
        return found
    plain = interpreted(dispatcher.py_func)
    if plain is None:
        return compile_for_args(*args)
    return functools.partial(_run_interpreted, dispatcher, plain)


def _samples(args) -> int:
    """The longest last axis of the array arguments."""
    longest = 0
    for arg in args:
        shape = getattr(arg, "shape", None)
        if shape:
            longest = max(longest, shape[-1])
    return longest


def _from_cache(dispatcher, args):
    """The entry point of a version of ``dispatcher`` for ``args`` found in memory or in a cache (and
    added to the dispatcher, as numba's compile does), or None when it would have to compile."""
    from numba.core import types
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import OmittedArg

    signature = tuple(types.Omitted(arg.value) if isinstance(arg, OmittedArg) else dispatcher.typeof_pyval(arg)
                      for arg in args)
    with global_compiler_lock:
        existing = dispatcher.overloads.get(signature)
        if existing is not None:
            return existing.entry_point
        _probing.active = True  # a miss here runs the plain copy: no notice of compiling
        try:
            result = dispatcher._cache.load_overload(signature, dispatcher.targetctx)
        finally:
            _probing.active = False
        if result is None:
            return None
        dispatcher._cache_hits[signature] += 1
        if not result.objectmode:
            dispatcher.targetctx.insert_user_function(result.entry_point, result.fndesc, [result.library])
        dispatcher.add_overload(result)
        return result.entry_point


def _run_interpreted(dispatcher, plain, *args):
    """``plain(*args)`` (numba's omitted defaults given their values), timed against
    :data:`INTERPRET_SECONDS`. Should the plain copy fail, the arrays it was handed are restored
    and the compiled kernel runs instead."""
    from numba.core.dispatcher import OmittedArg

    values = [arg.value if isinstance(arg, OmittedArg) else arg for arg in args]
    given = list(args)
    while given and isinstance(given[-1], OmittedArg):
        given.pop()
    kept = [(arg, arg.copy()) for arg in values if isinstance(arg, np.ndarray) and arg.flags.writeable]
    start = time.perf_counter()
    try:
        with np.errstate(all="ignore"):  # compiled, integers wrap and x / 0 is inf, silently
            return plain(*values)
    except Exception:  # noqa: BLE001 - the compiled kernel is the reference; it says what is wrong
        for arg, copy in kept:
            arg[...] = copy
        interpreting["seconds"] = INTERPRET_SECONDS  # compile from now on
        return dispatcher(*given)
    finally:
        interpreting["seconds"] += time.perf_counter() - start


def interpreted(function):
    """The plain-Python copy of the kernel ``function``: the same source file imported again as
    ``<this package>._interpreted.<module>``, whose decorators return the functions (:data:`PLAIN`);
    None when it has no such function."""
    package = f"{__name__.rsplit('.', 1)[0]}.{INTERPRETED_PACKAGE}"
    module_name = f"{package}.{function.__module__.rsplit('.', 1)[-1]}"
    with _interpreted_lock:
        module = sys.modules.get(module_name)
        if module is None:
            import importlib
            import types

            if package not in sys.modules:
                shell = types.ModuleType(package, "The kernels' plain-Python copy (see _config.interpreted).")
                shell.__path__ = [_HERE]
                shell.__package__ = package
                sys.modules[package] = shell
            try:
                module = importlib.import_module(module_name)
            except ImportError:  # a kernel defined outside this package
                return None
    return getattr(module, function.__name__, None)


def cache_location(dispatcher) -> str | None:
    """The folder where ``dispatcher`` saves what it compiles, or None when it compiles in memory."""
    cache = getattr(dispatcher, "_cache", None)
    if isinstance(cache, _KernelCache if _caching is not None else ()):
        return cache.writable_path()
    return getattr(cache, "cache_path", None)


@functools.cache
def source_stamp() -> str:
    """A hash of every ``kernels/*.py`` file and NumPy's major.minor: the stamp of every cache index."""
    import numpy

    digest = hashlib.sha256(".".join(numpy.__version__.split(".")[:2]).encode())
    for name in sorted(os.listdir(_HERE)):
        if name.endswith(".py") and name != "_signatures.py":  # the list is not code
            with open(os.path.join(_HERE, name), "rb") as handle:
                digest.update(name.encode() + b"\0" + handle.read() + b"\0")
    return digest.hexdigest()


def _cached(dispatcher):
    if not hasattr(dispatcher, "enable_caching"):  # NUMBA_DISABLE_JIT=1: plain Python
        return dispatcher
    dispatcher._cache = _KernelCache(dispatcher.py_func)
    return dispatcher


def _notice_unsupported() -> None:
    """One line on stderr, once per process: this numba gets numba's own cache, not this module's."""
    global _noticed
    if _noticed:
        return
    _noticed = True
    sys.stderr.write(f"fairmedfm_fast: {_NUMBA_PROBLEM}; the kernels compile with numba's own cache instead of "
                     "the compiled ones shipped with this package (the first calls take seconds more, the "
                     "numbers are the same); install the numba that pyproject.toml names to use them\n")


def _warn_no_folder():
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("fairmedfm_fast: no writable folder for the compiled kernels (set NUMBA_CACHE_DIR "
                      "to one): they compile in memory in each process, which takes a few seconds",
                      RuntimeWarning, stacklevel=4)


def _notice(reason: str | None, folder: str | None, kernel: str) -> None:
    """One line on stderr, once per process, when an installed package compiles: why (``reason``: the
    shipped cache does not apply; None: it applies but lacks this signature) and where it is kept."""
    global _noticed
    if _noticed:
        return
    _noticed = True
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
            if INSTALLED and not os.environ.get(BUILD_ENV) and not getattr(_probing, "active", False):
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
