"""Voxel-level fairness of score maps: :func:`evaluate_voxels` and :class:`VoxelAccumulator`.

A public path kept as a thin module; the backend is ``_backends/voxels.py`` (``docs/voxels.md``).
"""
from ._backends.voxels import PASSES as PASSES
from ._backends.voxels import VoxelAccumulator, evaluate_voxels
from ._backends.voxels import check_metrics as check_metrics
from ._backends.voxels import parse_memory as parse_memory

__all__ = ["VoxelAccumulator", "evaluate_voxels"]
