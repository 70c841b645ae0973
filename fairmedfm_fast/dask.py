"""Exact fairness metrics on Dask: datasets larger than one machine, Parquet read out of core.

A public path kept as a thin module; the backend (and how it works) is ``_backends/dask.py``.
"""
from ._backends.dask import evaluate, evaluate_segmentation, read_parquet

__all__ = ["evaluate", "evaluate_segmentation", "read_parquet"]
