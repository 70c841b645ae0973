"""Exact fairness metrics on Dask: datasets larger than one machine, Parquet read out of core.

A public path kept as a thin module; the backends (and how they work) are ``_backends/dask.py`` and
``_backends/dask_segmentation.py``.
"""
from ._backends.dask import evaluate, read_parquet
from ._backends.dask_segmentation import evaluate_segmentation

__all__ = ["evaluate", "evaluate_segmentation", "read_parquet"]
