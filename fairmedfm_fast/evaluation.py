"""Fairness evaluation of binary classifiers in memory: :func:`evaluate`.

A public path kept as a thin module; the work is in ``_backends/in_memory.py``.
"""
from ._backends.in_memory import FairnessReport, evaluate

__all__ = ["FairnessReport", "evaluate"]
