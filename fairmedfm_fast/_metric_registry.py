"""The old place of the metric registry, kept for ``warmup.py`` (which imports ``OPTIONAL_NAMES`` from here).

The registry is ``_registry/``; new code imports it from there.
"""
from ._registry.metrics import OPTIONAL_NAMES

__all__ = ["OPTIONAL_NAMES"]
