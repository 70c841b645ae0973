"""Fairness of a binary classifier accumulated batch by batch: :class:`FairnessAccumulator`.

A public path kept as a thin module; the backend is ``_backends/accumulator.py``.
"""
# Public names of this path before the move (kept; ``X as X`` marks a re-export).
from ._backends.accumulator import COMPACT_FROM as COMPACT_FROM
from ._backends.accumulator import DISTINCT_SCORES as DISTINCT_SCORES
from ._backends.accumulator import FairnessAccumulator

__all__ = ["FairnessAccumulator"]
