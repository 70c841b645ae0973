"""Which model is fairer? :func:`compare_models` compares models scored on the same samples.

A public path kept as a thin module; the work is in ``_backends/comparison.py``.
"""
from ._backends.comparison import compare_models
from ._report.comparison import ModelComparison

__all__ = ["compare_models", "ModelComparison"]
