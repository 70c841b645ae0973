"""pandas, imported on first use: calls on NumPy and list inputs never import it (about 0.5 s).

``pd.X`` imports pandas when it is first read. :func:`is_pandas` and :func:`is_na` answer without
importing it: while pandas is not imported, no value can be a pandas object. While another thread
is importing it, they wait for that import to finish (a half-imported pandas has no ``Series`` yet).
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["pd", "is_pandas", "is_na"]


class _Pandas:
    """The pandas module, imported when one of its names is first read."""

    def __getattr__(self, name: str) -> Any:
        # Kept on the instance once read, so that the next read skips this call (microseconds each).
        value = getattr(importlib.import_module("pandas"), name)
        setattr(self, name, value)
        return value


pd: Any = _Pandas()


def _imported() -> Any:
    """The pandas module once imported completely, or None while no thread has started importing it."""
    module = sys.modules.get("pandas")
    if module is not None and getattr(getattr(module, "__spec__", None), "_initializing", False):
        # Another thread is running pandas' __init__: the import system's lock on pandas makes this
        # wait until it is done (in the importing thread itself, it returns the module as it is).
        module = importlib.import_module("pandas")
    return module


def is_pandas(value: Any, *classes: str) -> bool:
    """``isinstance(value, (pandas.<class>, ...))``, False while pandas is not imported."""
    module = _imported()
    if module is None:
        return False
    types = _classes.get(classes)
    if types is None or types[0] is not module:  # the classes, looked up once per module
        types = _classes[classes] = (module, tuple(getattr(module, name) for name in classes))
    return isinstance(value, types[1])


_classes: dict[tuple[str, ...], tuple[Any, tuple[type, ...]]] = {}


def is_na(value: Any) -> bool:
    """Whether ``value`` is ``pandas.NA`` (False while pandas is not imported)."""
    module = _imported()
    return module is not None and value is getattr(module, "NA", None)
