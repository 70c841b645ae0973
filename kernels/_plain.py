"""The kernels' plain-Python copies: small calls before anything is compiled run as plain Python.

Compiling the kernels of a first ``evaluate`` takes numba 8-10 s of CPU (``sweeps.ranked_sums`` alone
about 4 s), while their plain Python bodies take about 20 ms on 1,000 samples. So when a call finds no
compiled code (in memory, shipped or cached: :mod:`._caches`) for its argument types, and its arrays
hold at most :data:`INTERPRET_BELOW` samples, it runs the kernel's plain-Python copy
(:func:`interpreted`: the same source, imported a second time with the decorators returning the
functions, as under ``NUMBA_DISABLE_JIT=1``) instead of compiling. Once the process has spent
:data:`INTERPRET_SECONDS` in such calls, or a call is larger, the kernel compiles (and is cached) as
before. ``FAIRMEDFM_FAST_INTERPRET=never`` turns this off. Kernels whose work is not linear in their
arrays (the resampling loops) always compile. The plain copy gives the same numbers
(tests/test_interpreted.py checks it against the compiled kernels).

The copy is the package ``<kernels>._interpreted`` (:data:`INTERPRETED_PACKAGE`), whose folder is this
one: every module of ``kernels/`` imports there as it does here, this one included, and reads
:data:`PLAIN` as true by its name.
"""
import functools
import os
import sys
import threading
import time

import numpy as np
from numba.core import config as _numba_config

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

_HERE = os.path.dirname(os.path.abspath(__file__))

#: This process's uncompiled calls: whether they are allowed (``FAIRMEDFM_FAST_INTERPRET=never`` at
#: import turns them off; the test suite turns them off here, so that its calls exercise the compiled
#: kernels) and the seconds spent in them.
interpreting = {"enabled": os.environ.get(INTERPRET_ENV, "").strip().lower() != "never", "seconds": 0.0}
_interpreted_lock = threading.Lock()
#: ``active`` while :func:`_from_cache` looks a signature up (on this thread): a miss there compiles
#: nothing, so the caches say nothing of compiling.
probing = threading.local()


def interpret_first_calls(dispatcher):
    """Let ``dispatcher``'s small calls that find nothing compiled run its plain-Python copy (unless
    its module is one of :data:`ALWAYS_COMPILED`); ``dispatcher`` itself."""
    if dispatcher.py_func.__module__.rsplit(".", 1)[-1] not in ALWAYS_COMPILED:
        # numba's dispatcher calls this (from C) only when no compiled version matches the arguments;
        # a plain function it returns is called with them, as numba's object-mode fallback is.
        dispatcher._compile_for_args = functools.partial(_compile_or_interpret, dispatcher,
                                                         dispatcher._compile_for_args)
    return dispatcher


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
        probing.active = True  # a miss here runs the plain copy: no notice of compiling
        try:
            result = dispatcher._cache.load_overload(signature, dispatcher.targetctx)
        finally:
            probing.active = False
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
                shell = types.ModuleType(package, "The kernels' plain-Python copy (see _plain.interpreted).")
                shell.__path__ = [_HERE]
                shell.__package__ = package
                sys.modules[package] = shell
            try:
                module = importlib.import_module(module_name)
            except ImportError:  # a kernel defined outside this package
                return None
    return getattr(module, function.__name__, None)
