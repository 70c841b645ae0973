"""Fairness of segmentation models: :func:`evaluate_segmentation`, the one-number Dice metrics,
per-sample and per-label Dice from masks, and the legacy ``fairmedfm.metrics`` functions.

A public path kept as a thin module; the backend is ``_backends/segmentation.py``, the one-number and
legacy functions ``_backends/dice_numbers.py``.
"""
from ._backends.dice_numbers import (
    dice_gap,
    dice_skewness,
    dice_std,
    equity_scaled_dice,
    evaluate_seg,
    segmentation_fairness,
    worst_group_dice,
)
from ._backends.segmentation import dice_per_label, dice_scores, evaluate_segmentation, surface_scores
from .report import FairnessReport as FairnessReport
from .report import group_frame as group_frame
from .report import summary_frame as summary_frame

__all__ = [
    "evaluate_segmentation", "dice_gap", "worst_group_dice", "dice_std", "dice_skewness", "equity_scaled_dice",
    "dice_per_label", "dice_scores", "surface_scores", "segmentation_fairness", "evaluate_seg",
]
