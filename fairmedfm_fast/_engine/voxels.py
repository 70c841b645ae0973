"""The voxel passes of :func:`fairmedfm_fast.evaluate_voxels`: the engine's calls of ``kernels.voxels``.

A score map is read as the bits of its scores (``mode``: float32, uint8 read as value / 255, or
float64); the high bits are the score's bucket, the low bits (:data:`LOW_BITS`) stay in the record
beside the label and group cell (the payload). The backend (``_backends/voxels.py``) stages the
records and plans the windows; every kernel call is here. The kernels are imported on first use.
"""
from __future__ import annotations

import numpy as np

FLOAT32, UINT8, FLOAT64 = 0, 1, 2
#: Low key bits kept in a record (the rest is the bucket), per mode.
LOW_BITS = {FLOAT32: 16, UINT8: 0, FLOAT64: 48}
#: The modes as the report's metadata names them.
MODE_NAMES = {FLOAT32: "float32", UINT8: "uint8 (value / 255)", FLOAT64: "float64"}
#: Buckets of scores in [0, 1], per mode.
N_BUCKETS = {FLOAT32: (0x3F800000 >> 16) + 1, UINT8: 256, FLOAT64: (0x3FF0000000000000 >> 48) + 1}


def _kernels():
    from ..kernels import voxels

    return voxels


def count_map(bits: np.ndarray, truth: np.ndarray, roi: np.ndarray, mode: int, histogram: np.ndarray,
              totals: np.ndarray) -> None:
    """Add one map's voxels per bucket to ``histogram`` and its totals to ``totals``."""
    _kernels().count_map(bits, truth, roi, mode, LOW_BITS[mode], histogram, totals)


def scatter_map(bits: np.ndarray, truth: np.ndarray, roi: np.ndarray, mode: int, payload: int, payload_bits: int,
                lo: int, hi: int, arena: np.ndarray, position: np.ndarray) -> None:
    """Write one map's records of buckets ``lo..hi`` straight into their buckets of ``arena``."""
    _kernels().scatter_map(bits, truth, roi, mode, LOW_BITS[mode], payload, payload_bits, lo, hi, arena, position)


def encode_map(bits: np.ndarray, truth: np.ndarray, roi: np.ndarray, mode: int, payload: int, payload_bits: int,
               lo: int, hi: int, bucket: np.ndarray, record: np.ndarray, position: np.ndarray,
               totals: np.ndarray) -> None:
    """Stage a part of one map as records (bucket ids in ``bucket``, records in ``record``)."""
    _kernels().encode_map(bits, truth, roi, mode, LOW_BITS[mode], payload, payload_bits, lo, hi, bucket, record,
                          position, totals)


def stage_by_bucket(bucket: np.ndarray, record: np.ndarray, fill: int, n_buckets: int, arena: np.ndarray,
                    offset: int) -> np.ndarray:
    """The staged records sorted into their buckets in ``arena`` from ``offset``; the buckets' starts."""
    return _kernels().stage_by_bucket(bucket, record, fill, n_buckets, arena, offset)


def count_buckets(bits: np.ndarray, roi: np.ndarray, mode: int, histogram: np.ndarray) -> None:
    """Add one map's voxels per bucket to ``histogram`` (the first read of maps read twice)."""
    _kernels().count_buckets(bits, roi, mode, LOW_BITS[mode], histogram)


def cell_counts(records: np.ndarray, starts: np.ndarray, first: int, last: int, payload_bits: int,
                n_cells: int) -> np.ndarray:
    """Negatives and positives per group cell in buckets ``first..last`` (the counts below a range)."""
    return _kernels().cell_counts(records, starts, first, last, payload_bits, n_cells)


def sweep_buckets(records: np.ndarray, starts: np.ndarray, first: int, last: int, bucket_lo: int,
                  *state) -> None:
    """Sort and sweep buckets ``first..last`` in ascending order, into the sweep's ``state`` arrays."""
    _kernels().sweep_buckets(records, starts, first, last, bucket_lo, *state)
