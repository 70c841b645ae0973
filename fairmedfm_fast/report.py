"""The result object of :func:`fairmedfm_fast.evaluate` and :func:`fairmedfm_fast.evaluate_segmentation`.

A public path kept as a thin module; the class is in ``_report/frame.py`` (its ``__module__`` says
``fairmedfm_fast.report``, so pickles made before and after the move name the same place).
"""
from ._report.frame import FairnessReport, columns_frame, group_frame, summary_frame

__all__ = ["FairnessReport", "summary_frame", "group_frame", "columns_frame"]
