"""Fairness of segmentation models: :func:`evaluate_segmentation`, the one-number Dice metrics,
per-sample and per-label Dice from masks, and the legacy ``fairmedfm.metrics`` functions.

A public path kept as a thin module; the backend is ``_backends/segmentation.py``.
"""
from ._backends.segmentation import (
    dice_gap,
    dice_per_label,
    dice_scores,
    dice_skewness,
    dice_std,
    equity_scaled_dice,
    evaluate_seg,
    evaluate_segmentation,
    segmentation_fairness,
    surface_scores,
    worst_group_dice,
)
from .report import FairnessReport as FairnessReport
from .report import group_frame as group_frame
from .report import summary_frame as summary_frame

__all__ = [
    "evaluate_segmentation", "dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice",
    "dice_per_label", "dice_scores", "surface_scores", "segmentation_fairness", "evaluate_seg",
]
