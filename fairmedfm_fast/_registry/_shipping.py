"""Functions of registry entries as values: compared by their code, pickled with their code.

A metric registered in a notebook or from a module on the client's path is a function that a Dask
worker process cannot import. :func:`portable` wraps such a function so that pickling it carries
its code (cloudpickle, by value) and unpickling gives the function back: the entry that holds it
travels whole, with nothing installed on the worker. The package's own functions, and those of
installed libraries, travel by reference as usual.
"""
from __future__ import annotations

import pickle
import sys
from collections.abc import Callable
from typing import Any

#: Modules whose functions every process can import: pickled by reference.
_IMPORTABLE = ("fairmedfm_fast", "numpy", "math", "builtins", "operator", "functools", "scipy")


def same_function(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same function or functions of the same code, defaults and
    closure (what a module imported twice makes); a function edited and run again differs."""
    if a is b:
        return True
    if not (callable(a) and callable(b)):
        return False
    code_a, code_b = getattr(a, "__code__", None), getattr(b, "__code__", None)
    if code_a is None or code_b is None:
        return False
    try:
        return (getattr(a, "__module__", None), getattr(a, "__qualname__", None), code_a, a.__defaults__,
                a.__kwdefaults__, _cells(a)) == (getattr(b, "__module__", None), getattr(b, "__qualname__", None),
                                                 code_b, b.__defaults__, b.__kwdefaults__, _cells(b))
    except Exception:  # a closure value that cannot be compared
        return False


def _cells(function: Any) -> tuple:
    return tuple(cell.cell_contents for cell in function.__closure__ or ())


class _ByValue:
    """A function pickled with its code: unpickled, it is the function itself."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def __reduce__(self):
        return pickle.loads, (self.data,)


def portable(function: Callable) -> Any:
    """``function`` itself where every process can import it, else an object that pickles it by value
    (and unpickles to it). Without cloudpickle (no Dask installed), the function itself."""
    module = getattr(function, "__module__", None) or ""
    if module.partition(".")[0] in _IMPORTABLE:
        return function
    try:
        import cloudpickle
    except ImportError:
        return function
    loaded = sys.modules.get(module)
    # cloudpickle ships __main__'s functions by value anyway; a module the user registered stays so
    by_value = loaded is not None and module != "__main__" and module not in cloudpickle.list_registry_pickle_by_value()
    if by_value:
        cloudpickle.register_pickle_by_value(loaded)
    try:
        return _ByValue(cloudpickle.dumps(function))
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(loaded)
