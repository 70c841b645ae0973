"""The old import path of the kernels' configuration, kept for code written against it.

What this module held now lives in three modules, one per job:

- :mod:`._jit`: the compile flags and the ``kernel`` / ``inline_kernel`` decorators (what the kernel
  modules import), and ``PLAIN``;
- :mod:`._caches`: the shipped and the writable cache of compiled kernels, their stamp
  (``source_stamp``), the notices, and the numba versions they need (``NUMBA_VERSIONS``);
- :mod:`._plain`: the kernels' plain-Python copies, which run small first calls (``interpreting``,
  ``INTERPRET_*``).

The names below are those modules' objects (``interpreting`` is the one dict: setting its items here
works). Rebinding a name here changes nothing there: monkeypatch a module attribute where it lives.
"""
from ._caches import (
    BUILD_ENV,
    INSTALLED,
    NUMBA_VERSIONS,
    PORTABLE_CPU,
    SHIPPED_FOLDER,
    cache_location,
    source_stamp,
)
from ._jit import JIT_OPTIONS, PLAIN, inline_kernel, kernel
from ._plain import (
    ALWAYS_COMPILED,
    INTERPRET_BELOW,
    INTERPRET_ENV,
    INTERPRET_SECONDS,
    INTERPRETED_PACKAGE,
    interpreted,
    interpreting,
)

__all__ = ["ALWAYS_COMPILED", "BUILD_ENV", "INSTALLED", "INTERPRETED_PACKAGE", "INTERPRET_BELOW", "INTERPRET_ENV",
           "INTERPRET_SECONDS", "JIT_OPTIONS", "NUMBA_VERSIONS", "PLAIN", "PORTABLE_CPU", "SHIPPED_FOLDER",
           "cache_location", "inline_kernel", "interpreted", "interpreting", "kernel", "source_stamp"]
