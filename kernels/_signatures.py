"""The kernel signatures compiled ahead of use: one list, for the build step, ``fairmedfm-fast warmup``
and the test that a public call compiles nothing else (``tests/test_signatures.py``).

Each entry is a kernel (``module.name``) and the argument types it is called with, as numba types
exactly as numba types a call (``typeof`` of the arguments, ``Omitted`` for defaults left out,
read-only arrays as such), so that what is compiled here is what a call looks up. The list is
recorded, not written by hand: ``python -m fairmedfm_fast.warmup --record`` drives the public API
over every path that reaches a kernel, with every dtype the API hands to the kernels, and rewrites
the block between the markers below.

This file is left out of the caches' stamp (``_config.source_stamp``): a new entry does not make
the compiled ones stale.

``python -m fairmedfm_fast.kernels._signatures --build`` compiles the list into the cache (the build
step, ``fairmedfm_fast/_build.py``).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from numba.core import types as T


def A(dtype, ndim=1, layout="C", readonly=False):  # noqa: N802 - short, as the list is long
    """An array type (C-contiguous and writable unless said)."""
    return T.Array(dtype, ndim, layout, readonly=readonly)


# fmt: off
# --- signatures (generated) ---
SIGNATURES: dict[str, list[tuple]] = {
    '_slots.slot_offsets': [
        (A(T.int64),),
    ],
    '_statistics.enter_block': [
        (A(T.int64), A(T.int64), T.int64, T.int64),
    ],
    'bootstrap.stratified_resample': [
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.uint8), A(T.uint8), T.int64, T.int64, A(T.float32), A(T.uint8), A(T.int8), A(T.float64), A(T.int64), A(T.int64), A(T.float32), A(T.uint8), A(T.int64), A(T.int64), A(T.int64), A(T.int64, 2), T.int64, T.boolean),
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.uint8), A(T.uint8), T.int64, T.int64, A(T.float64), A(T.uint8), A(T.int8), A(T.float64), A(T.int64), A(T.int64), A(T.float64), A(T.uint8), A(T.int64), A(T.int64), A(T.int64), A(T.int64, 2), T.int64, T.boolean),
    ],
    'calibration.binned_calibration': [
        (A(T.float32), A(T.float64), A(T.int64, 2), A(T.int64), A(T.float64, 2), T.boolean, T.Omitted(None)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), T.boolean, A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), T.boolean, T.none),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.boolean, A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.boolean, T.none),
        (A(T.float32, readonly=True), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.boolean, T.none),
        (A(T.float64), A(T.float64), A(T.int64, 2), A(T.int64), A(T.float64, 2), T.boolean, T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), T.boolean, A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), T.boolean, T.none),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.boolean, A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.boolean, T.none),
        (A(T.float64, readonly=True), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.boolean, T.none),
    ],
    'calibration.calibration_error': [
        (A(T.float64, 2), A(T.float64, 2), A(T.float64, 2), T.int64),
        (A(T.float64, 2), A(T.float64, 2), A(T.float64, 2), T.literal(0)),
        (A(T.int64, 2), A(T.float64, 2), A(T.float64, 2), T.int64),
    ],
    'calibration.equal_width_edges': [
        (A(T.float64), A(T.float64), T.int64),
    ],
    'calibration.log_loss_into': [
        (A(T.float32), A(T.float64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.float64)),
        (A(T.float32, readonly=True), A(T.uint8), A(T.float64)),
        (A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.float64)),
        (A(T.float64, readonly=True), A(T.uint8), A(T.float64)),
    ],
    'calibration.log_loss_terms': [
        (A(T.float32), A(T.float64)),
        (A(T.float64), A(T.float64)),
    ],
    'calibration.score_ranges': [
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), T.Omitted(None)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), T.none),
        (A(T.float32), A(T.uint8), A(T.int64, 2), A(T.int64), T.Omitted(None)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), T.Omitted(None)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), T.none),
        (A(T.float32, readonly=True), A(T.uint8), A(T.int8, 2), A(T.int64), T.none),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), T.none),
        (A(T.float64), A(T.uint8), A(T.int64, 2), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), T.none),
        (A(T.float64, readonly=True), A(T.uint8), A(T.int8, 2), A(T.int64), T.none),
    ],
    'calibration.slot_sums': [
        (A(T.float64), A(T.int16, 2), A(T.int64), A(T.float64)),
        (A(T.float64), A(T.int16, 2), A(T.int64), T.none),
        (A(T.float64), A(T.int8, 2), A(T.int64), A(T.float64)),
        (A(T.float64), A(T.int8, 2), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.int8, 2), A(T.int64), T.none),
    ],
    'coding.add_text': [
        (A(T.uint8), T.int64, T.int64, T.int64, A(T.int32), A(T.uint64), A(T.int64), A(T.int64)),
    ],
    'coding.cell_keys': [
        (A(T.int32), A(T.int32), A(T.uint8), T.int64, A(T.uint32)),
    ],
    'coding.code_counts': [
        (A(T.int8, readonly=True), T.int64),
    ],
    'coding.known_text': [
        (A(T.int32), A(T.uint8), T.int64, T.int64, A(T.int32), A(T.uint64), A(T.int64), A(T.int64), A(T.uint8), A(T.int32)),
        (A(T.int64), A(T.uint8), T.int64, T.int64, A(T.int32), A(T.uint64), A(T.int64), A(T.int64), A(T.uint8), A(T.int32)),
    ],
    'coding.latin_row_codes': [
        (A(T.uint32, 2, readonly=True), T.int64, A(T.int32)),
        (A(T.uint32, 2, readonly=True), T.int64, A(T.int8)),
    ],
    'coding.more_distinct_than': [
        (A(T.uint32), T.int64),
        (A(T.uint64), T.int64),
    ],
    'coding.remap_codes': [
        (A(T.int16), A(T.int32), A(T.int32)),
        (A(T.int32), A(T.int16, readonly=True), A(T.int16)),
        (A(T.int32), A(T.int32), A(T.int32)),
        (A(T.int8), A(T.int16, readonly=True), A(T.int16)),
        (A(T.int8), A(T.int8, readonly=True), A(T.int8)),
    ],
    'coding.row_codes': [
        (A(T.uint32, 2, readonly=True), T.int64, A(T.int32)),
        (A(T.uint32, 2, readonly=True), T.int64, A(T.int8)),
        (A(T.uint64, 2, readonly=True), T.int64, A(T.int32)),
        (A(T.uint64, 2, readonly=True), T.int64, A(T.int8)),
        (A(T.uint8, 2, readonly=True), T.int64, A(T.int32)),
        (A(T.uint8, 2, readonly=True), T.int64, A(T.int8)),
    ],
    'coding.split_keys': [
        (A(T.uint32), A(T.int8, 2), A(T.uint8), A(T.int8, 2), T.int64, T.int64),
    ],
    'coding.text_codes': [
        (A(T.int32), A(T.uint8), T.int64, A(T.int32)),
        (A(T.int32), A(T.uint8), T.int64, A(T.int8)),
        (A(T.int64), A(T.uint8), T.int64, A(T.int32)),
        (A(T.int64), A(T.uint8), T.int64, A(T.int8)),
    ],
    'delong.placement_sums': [
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), T.int64, T.int64, T.boolean),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), T.int64, T.int64, T.boolean),
    ],
    'precision.precision_sums': [
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
    ],
    'rank_sums.bucket_sums': [
        (A(T.uint64), A(T.int64), T.int64, T.int64, T.int64, T.uint64, T.int64),
    ],
    'rank_sums.scatter_words': [
        (A(T.uint32), A(T.uint8), A(T.int16), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint32), A(T.uint8), A(T.int8), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint32, readonly=True), A(T.uint8), A(T.int8), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint64), A(T.uint8), A(T.int16), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint64), A(T.uint8), A(T.int8), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint64, readonly=True), A(T.uint8), A(T.int8), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
    ],
    'ranking.best_f1_thresholds': [
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), A(T.int64), A(T.int64), T.Omitted(None)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), T.Omitted(None), T.Omitted(None), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), A(T.int64), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), T.Omitted(None), T.Omitted(None), T.Omitted(None)),
    ],
    'ranking.confusion_above': [
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), T.none),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.none),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64, 2), T.none),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64, 2), T.none),
    ],
    'ranking.rank_statistics': [
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), T.Omitted(None)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), T.Omitted(None)),
    ],
    'records.route_records': [
        (A(T.uint32), A(T.uint8), A(T.int8, 2), A(T.uint64), A(T.uint32), T.int64, A(T.int32), A(T.int64), A(T.uint64), A(T.uint64), A(T.int64), A(T.int64, 3), A(T.uint64, 2)),
        (A(T.uint64), A(T.uint8), A(T.int8, 2), A(T.uint64), A(T.uint64), T.int64, A(T.int32), A(T.int64), A(T.uint64), A(T.uint32), A(T.int64), A(T.int64, 3), A(T.uint64, 2)),
    ],
    'records.unpack_records': [
        (A(T.uint64), A(T.uint32), T.int64, A(T.uint64), A(T.uint64), A(T.uint8), A(T.int8, 2)),
        (A(T.uint64), A(T.uint64), T.int64, A(T.uint64), A(T.uint32), A(T.uint8), A(T.int8, 2)),
    ],
    'resampling.drawn_samples': [
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.float32), A(T.uint8), A(T.int8, 2), A(T.float64), A(T.float64), A(T.float32), A(T.uint8), A(T.int8), A(T.float64), A(T.float64), A(T.uint8), A(T.uint8), T.int64),
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.float32), A(T.uint8), A(T.int8, 2), A(T.float64), T.none, A(T.float32), A(T.uint8), A(T.int8), A(T.float64), A(T.float64), A(T.uint8), A(T.uint8), T.int64),
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.float64), A(T.uint8), A(T.int8, 2), A(T.float64), A(T.float64), A(T.float64), A(T.uint8), A(T.int8), A(T.float64), A(T.float64), A(T.uint8), A(T.uint8), T.int64),
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.float64), A(T.uint8), A(T.int8, 2), A(T.float64), T.none, A(T.float64), A(T.uint8), A(T.int8), A(T.float64), A(T.float64), A(T.uint8), A(T.uint8), T.int64),
    ],
    'resampling.permuted_codes': [
        (A(T.int8), T.uint64, T.int64, A(T.int8), A(T.uint8)),
        (A(T.int8), T.uint64, T.int64, A(T.int8), T.Omitted(None)),
    ],
    'resampling.stratified_bootstrap_counts': [
        (A(T.int32), A(T.int64), T.uint64, T.int64, A(T.float64)),
    ],
    'segmentation.label_counts': [
        (A(T.int16), A(T.int16), T.int64, T.int64),
        (A(T.int32), A(T.int32), T.int64, T.int64),
        (A(T.int64), A(T.int64), T.int64, T.int64),
        (A(T.uint16), A(T.uint16), T.int64, T.int64),
        (A(T.uint8), A(T.int16), T.int64, T.int64),
        (A(T.uint8), A(T.int32), T.int64, T.int64),
        (A(T.uint8), A(T.int64), T.int64, T.int64),
        (A(T.uint8), A(T.uint16), T.int64, T.int64),
        (A(T.uint8), A(T.uint8), T.int64, T.int64),
    ],
    'segmentation.overlap_counts': [
        (A(T.float32), A(T.float32), A(T.int64), T.float32, T.float32, T.float32, T.float32, A(T.int64, 2)),
        (A(T.float32), A(T.float64), A(T.int64), T.float32, T.float32, T.float64, T.float64, A(T.int64, 2)),
        (A(T.float32), A(T.int16), A(T.int64), T.float32, T.float32, T.int16, T.int16, A(T.int64, 2)),
        (A(T.float32), A(T.int32), A(T.int64), T.float32, T.float32, T.int32, T.int32, A(T.int64, 2)),
        (A(T.float32), A(T.int64), A(T.int64), T.float32, T.float32, T.int64, T.int64, A(T.int64, 2)),
        (A(T.float32), A(T.uint16), A(T.int64), T.float32, T.float32, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.float32), A(T.uint8), A(T.int64), T.float32, T.float32, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.float32, readonly=True), A(T.float32, readonly=True), A(T.int64), T.float32, T.float32, T.float32, T.float32, A(T.int64, 2)),
        (A(T.float32, readonly=True), A(T.uint8, readonly=True), A(T.int64), T.float32, T.float32, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.float64), A(T.float32), A(T.int64), T.float64, T.float64, T.float32, T.float32, A(T.int64, 2)),
        (A(T.float64), A(T.float64), A(T.int64), T.float64, T.float64, T.float64, T.float64, A(T.int64, 2)),
        (A(T.float64), A(T.int16), A(T.int64), T.float64, T.float64, T.int16, T.int16, A(T.int64, 2)),
        (A(T.float64), A(T.int32), A(T.int64), T.float64, T.float64, T.int32, T.int32, A(T.int64, 2)),
        (A(T.float64), A(T.int64), A(T.int64), T.float64, T.float64, T.int64, T.int64, A(T.int64, 2)),
        (A(T.float64), A(T.uint16), A(T.int64), T.float64, T.float64, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.float64), A(T.uint8), A(T.int64), T.float64, T.float64, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.float64, readonly=True), A(T.float64, readonly=True), A(T.int64), T.float64, T.float64, T.float64, T.float64, A(T.int64, 2)),
        (A(T.float64, readonly=True), A(T.uint8, readonly=True), A(T.int64), T.float64, T.float64, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.int16), A(T.int16), A(T.int64), T.int16, T.int16, T.int16, T.int16, A(T.int64, 2)),
        (A(T.int16, readonly=True), A(T.int16, readonly=True), A(T.int64), T.int16, T.int16, T.int16, T.int16, A(T.int64, 2)),
        (A(T.int32), A(T.int32), A(T.int64), T.int32, T.int32, T.int32, T.int32, A(T.int64, 2)),
        (A(T.int32, readonly=True), A(T.int32, readonly=True), A(T.int64), T.int32, T.int32, T.int32, T.int32, A(T.int64, 2)),
        (A(T.int64), A(T.int64), A(T.int64), T.int64, T.int64, T.int64, T.int64, A(T.int64, 2)),
        (A(T.int64, readonly=True), A(T.int64, readonly=True), A(T.int64), T.int64, T.int64, T.int64, T.int64, A(T.int64, 2)),
        (A(T.uint16), A(T.uint16), A(T.int64), T.uint16, T.uint16, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.uint16, readonly=True), A(T.uint16, readonly=True), A(T.int64), T.uint16, T.uint16, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.uint8), A(T.float32), A(T.int64), T.uint8, T.uint8, T.float32, T.float32, A(T.int64, 2)),
        (A(T.uint8), A(T.float64), A(T.int64), T.uint8, T.uint8, T.float64, T.float64, A(T.int64, 2)),
        (A(T.uint8), A(T.int16), A(T.int64), T.uint8, T.uint8, T.int16, T.int16, A(T.int64, 2)),
        (A(T.uint8), A(T.int32), A(T.int64), T.uint8, T.uint8, T.int32, T.int32, A(T.int64, 2)),
        (A(T.uint8), A(T.int64), A(T.int64), T.uint8, T.uint8, T.int64, T.int64, A(T.int64, 2)),
        (A(T.uint8), A(T.uint16), A(T.int64), T.uint8, T.uint8, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.uint8), A(T.uint8), A(T.int64), T.uint8, T.uint8, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.uint8, readonly=True), A(T.uint8, readonly=True), A(T.int64), T.uint8, T.uint8, T.uint8, T.uint8, A(T.int64, 2)),
    ],
    'segmentation.probability_overlap_counts': [
        (A(T.float32), A(T.float32), A(T.int64), T.float32, T.float32, T.float32, T.float32, A(T.int64, 2)),
        (A(T.float32), A(T.float64), A(T.int64), T.float32, T.float32, T.float64, T.float64, A(T.int64, 2)),
        (A(T.float32), A(T.int16), A(T.int64), T.float32, T.float32, T.int16, T.int16, A(T.int64, 2)),
        (A(T.float32), A(T.int32), A(T.int64), T.float32, T.float32, T.int32, T.int32, A(T.int64, 2)),
        (A(T.float32), A(T.int64), A(T.int64), T.float32, T.float32, T.int64, T.int64, A(T.int64, 2)),
        (A(T.float32), A(T.uint16), A(T.int64), T.float32, T.float32, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.float32), A(T.uint8), A(T.int64), T.float32, T.float32, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.float32, readonly=True), A(T.float32, readonly=True), A(T.int64), T.float32, T.float32, T.float32, T.float32, A(T.int64, 2)),
        (A(T.float32, readonly=True), A(T.uint8, readonly=True), A(T.int64), T.float32, T.float32, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.float64), A(T.float32), A(T.int64), T.float64, T.float64, T.float32, T.float32, A(T.int64, 2)),
        (A(T.float64), A(T.float64), A(T.int64), T.float64, T.float64, T.float64, T.float64, A(T.int64, 2)),
        (A(T.float64), A(T.int16), A(T.int64), T.float64, T.float64, T.int16, T.int16, A(T.int64, 2)),
        (A(T.float64), A(T.int32), A(T.int64), T.float64, T.float64, T.int32, T.int32, A(T.int64, 2)),
        (A(T.float64), A(T.int64), A(T.int64), T.float64, T.float64, T.int64, T.int64, A(T.int64, 2)),
        (A(T.float64), A(T.uint16), A(T.int64), T.float64, T.float64, T.uint16, T.uint16, A(T.int64, 2)),
        (A(T.float64), A(T.uint8), A(T.int64), T.float64, T.float64, T.uint8, T.uint8, A(T.int64, 2)),
        (A(T.float64, readonly=True), A(T.float64, readonly=True), A(T.int64), T.float64, T.float64, T.float64, T.float64, A(T.int64, 2)),
        (A(T.float64, readonly=True), A(T.uint8, readonly=True), A(T.int64), T.float64, T.float64, T.uint8, T.uint8, A(T.int64, 2)),
    ],
    'segmentation.value_range': [
        (A(T.int16),),
        (A(T.int32),),
        (A(T.int64),),
        (A(T.uint16),),
        (A(T.uint8),),
    ],
    'sorting._float_bits': [
        (T.uint64, T.boolean),
    ],
    'sorting._histogram': [
        (A(T.uint64), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
    ],
    'sorting._lsd': [
        (A(T.uint64), A(T.uint32), A(T.uint64), A(T.uint32), T.int64, T.int64, T.uint64, T.int64, A(T.int64, 2), A(T.int64)),
        (A(T.uint64), A(T.uint64), A(T.uint64), A(T.uint64), T.int64, T.int64, T.uint64, T.int64, A(T.int64, 2), A(T.int64)),
    ],
    'sorting._prepare': [
        (A(T.uint32), A(T.uint8), A(T.int8, 2), A(T.uint64), A(T.uint32), T.int64, T.int64),
        (A(T.uint64), A(T.uint8), A(T.int8, 2), A(T.uint64), A(T.uint32), T.int64, T.int64),
        (A(T.uint64), A(T.uint8), A(T.int8, 2), A(T.uint64), A(T.uint64), T.int64, T.int64),
    ],
    'sorting._scatter': [
        (A(T.uint64), A(T.uint32), A(T.uint64), A(T.uint32), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
        (A(T.uint64), A(T.uint64), A(T.uint64), A(T.uint64), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
    ],
    'sorting._scatter_from': [
        (A(T.uint64), A(T.uint32), A(T.uint64), A(T.uint32), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
        (A(T.uint64), A(T.uint64), A(T.uint64), A(T.uint64), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
    ],
    'sorting._scatter_payload': [
        (A(T.uint32), A(T.uint16), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint32), A(T.uint32), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint32, readonly=True), A(T.uint16), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint64), A(T.uint16), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint64), A(T.uint32), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
        (A(T.uint64, readonly=True), A(T.uint16), T.int64, T.int64, T.uint64, T.uint64, T.int64, T.uint64, A(T.int64), A(T.uint64)),
    ],
    'sorting._sort_buckets': [
        (A(T.uint64), A(T.uint32), A(T.uint64), A(T.uint32), A(T.int64), T.int64, T.int64, T.uint64, T.int64),
        (A(T.uint64), A(T.uint64), A(T.uint64), A(T.uint64), A(T.int64), T.int64, T.int64, T.uint64, T.int64),
    ],
    'sorting._unpack_buckets': [
        (A(T.uint64), A(T.int64), T.int64, T.int64, T.uint64, T.int64, T.uint64, A(T.uint64), A(T.uint32), A(T.uint8), A(T.int8, 2)),
        (A(T.uint64), A(T.int64), T.int64, T.int64, T.uint64, T.int64, T.uint64, A(T.uint64), A(T.uint64), A(T.uint8), A(T.int8, 2)),
    ],
    'sorting._unpack_carrying': [
        (A(T.uint64), A(T.uint64), A(T.uint64), A(T.uint8), A(T.int8, 2), T.int64, T.int64),
    ],
    'sorting._unpack_order': [
        (A(T.uint64), A(T.uint32), A(T.uint32), A(T.int64), T.int64, T.int64),
        (A(T.uint64), A(T.uint32), A(T.uint64), A(T.int64), T.int64, T.int64),
    ],
    'sorting.digit_counts': [
        (A(T.uint32), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
        (A(T.uint32, readonly=True), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
        (A(T.uint64), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
        (A(T.uint64, readonly=True), T.int64, T.int64, T.uint64, T.uint64, T.int64, A(T.int64)),
    ],
    'sorting.key_range': [
        (A(T.uint32), T.int64, T.int64),
        (A(T.uint32, readonly=True), T.int64, T.int64),
        (A(T.uint64), T.int64, T.int64),
        (A(T.uint64, readonly=True), T.int64, T.int64),
    ],
    'sorting.pack_keyed': [
        (A(T.uint32), A(T.uint16), T.int64, T.int64, A(T.uint16)),
        (A(T.uint32), A(T.uint32), T.int64, T.int64, A(T.uint32)),
    ],
    'sorting.pack_payload': [
        (A(T.uint8), A(T.int8, 2), A(T.uint64), T.int64, T.int64, A(T.uint16)),
        (A(T.uint8), A(T.int8, 2), A(T.uint64), T.int64, T.int64, A(T.uint32)),
    ],
    'sorting.word_lsd': [
        (A(T.uint64), A(T.uint64), T.literal(0), T.int64, T.uint64, T.int64, A(T.int64, 2), A(T.int64)),
    ],
    'surface.both_count': [
        (A(T.uint8, 3), A(T.uint8, 3)),
    ],
    'surface.crop_foreground': [
        (A(T.float32, 3), T.float32, T.float32, A(T.int64), A(T.uint8, 3)),
        (A(T.uint8, 3), T.uint8, T.uint8, A(T.int64), A(T.uint8, 3)),
        (A(T.uint8, 3, readonly=True), T.uint8, T.uint8, A(T.int64), A(T.uint8, 3)),
    ],
    'surface.crop_pair': [
        (A(T.float32, 3), T.float32, T.float32, A(T.uint8, 3), T.uint8, T.uint8, A(T.int64)),
        (A(T.uint8, 3), T.uint8, T.uint8, A(T.uint8, 3), T.uint8, T.uint8, A(T.int64)),
        (A(T.uint8, 3, readonly=True), T.uint8, T.uint8, A(T.uint8, 3, readonly=True), T.uint8, T.uint8, A(T.int64)),
    ],
    'surface.foreground_box': [
        (A(T.float32, 3), T.float32, T.float32, A(T.int64)),
        (A(T.uint8, 3), T.uint8, T.uint8, A(T.int64)),
        (A(T.uint8, 3, readonly=True), T.uint8, T.uint8, A(T.int64)),
    ],
    'surface.surface_distances': [
        (A(T.uint8, 3), A(T.uint8, 3), A(T.float64), T.int64, T.Omitted(8)),
    ],
    'surface.surface_measures': [
        (A(T.uint8, 3), A(T.uint8, 3), A(T.float64), T.int64, T.float64, T.float64, T.boolean, A(T.float64)),
    ],
    'surface.surface_summary': [
        (A(T.float64), A(T.float64), T.float64, T.float64, T.boolean, A(T.float64)),
    ],
    'surface.unit_interval': [
        (A(T.float32, 2),),
        (A(T.float32, 3),),
    ],
    'sweeps.best_f1_sweep': [
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float32), A(T.uint8), T.none, A(T.int64), A(T.int64), A(T.int64), T.Omitted(None)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.float64), A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.int64), A(T.int64), T.none),
        (A(T.float64), A(T.uint8), T.none, A(T.int64), A(T.int64), A(T.int64), T.Omitted(None)),
    ],
    'sweeps.ranked_sums': [
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, T.none),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int16, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, T.none),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, T.none),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float32), A(T.uint8), A(T.int8, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, T.none),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, T.none),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int16, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, T.none),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), A(T.float64), A(T.int64), T.UniTuple(A(T.int64), 3), T.int64, T.int64, T.int64, T.none),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, A(T.float64)),
        (A(T.float64), A(T.uint8), A(T.int8, 2), A(T.int64), T.none, A(T.int64), T.none, T.int64, T.int64, T.int64, T.none),
    ],
    'sweeps.score_ends': [
        (A(T.float32), A(T.int16, 2), A(T.int64), A(T.float64)),
        (A(T.float32), A(T.int16, 2), A(T.int64), T.none),
        (A(T.float32), A(T.int8, 2), A(T.int64), A(T.float64)),
        (A(T.float32), A(T.int8, 2), A(T.int64), T.none),
        (A(T.float64), A(T.int16, 2), A(T.int64), A(T.float64)),
        (A(T.float64), A(T.int16, 2), A(T.int64), T.none),
        (A(T.float64), A(T.int8, 2), A(T.int64), A(T.float64)),
        (A(T.float64), A(T.int8, 2), A(T.int64), T.none),
    ],
    'voxels.cell_counts': [
        (A(T.uint32), A(T.int64, 2), T.int64, T.int64, T.int64, T.int64),
    ],
    'voxels.count_buckets': [
        (A(T.uint32), A(T.uint8), T.int64, T.int64, A(T.int64)),
        (A(T.uint32, readonly=True), A(T.uint8), T.int64, T.int64, A(T.int64)),
        (A(T.uint64), A(T.uint8), T.int64, T.int64, A(T.int64)),
        (A(T.uint8), A(T.uint8), T.int64, T.int64, A(T.int64)),
    ],
    'voxels.count_map': [
        (A(T.uint32), A(T.uint8), A(T.uint8), T.int64, T.int64, A(T.int64), A(T.int64)),
        (A(T.uint64), A(T.uint8), A(T.uint8), T.int64, T.int64, A(T.int64), A(T.int64)),
        (A(T.uint8), A(T.uint8), A(T.uint8), T.int64, T.int64, A(T.int64), A(T.int64)),
    ],
    'voxels.encode_map': [
        (A(T.uint32), A(T.uint8), A(T.uint8), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.uint16), A(T.uint32), A(T.int64), A(T.int64)),
        (A(T.uint32, readonly=True), A(T.uint8, readonly=True), A(T.uint8), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.uint16), A(T.uint32), A(T.int64), A(T.int64)),
        (A(T.uint64), A(T.uint8), A(T.uint8), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.uint16), A(T.uint64), A(T.int64), A(T.int64)),
    ],
    'voxels.scatter_map': [
        (A(T.uint32), A(T.uint8), A(T.uint8), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.uint32), A(T.int64)),
        (A(T.uint64), A(T.uint8), A(T.uint8), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.uint64), A(T.int64)),
        (A(T.uint8), A(T.uint8), A(T.uint8), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.uint32), A(T.int64)),
    ],
    'voxels.stage_by_bucket': [
        (A(T.uint16), A(T.uint32), T.int64, T.int64, A(T.uint32), T.int64),
        (A(T.uint16), A(T.uint64), T.int64, T.int64, A(T.uint64), T.int64),
    ],
    'voxels.sweep_buckets': [
        (A(T.uint32), A(T.int64, 2), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.int64, 2), T.int64, A(T.int64), T.UniTuple(A(T.int64), 2), T.UniTuple(A(T.int64), 3), A(T.float64), A(T.int64), A(T.float64), A(T.int64, 2), A(T.int64, 3), A(T.float64, 2), A(T.int64, 2), A(T.float64, 2), A(T.int64), A(T.float64, 2)),
        (A(T.uint64), A(T.int64, 2), T.int64, T.int64, T.int64, T.int64, T.int64, T.int64, A(T.int64, 2), T.int64, A(T.int64), T.UniTuple(A(T.int64), 2), T.UniTuple(A(T.int64), 3), A(T.float64), A(T.int64), A(T.float64), A(T.int64, 2), A(T.int64, 3), A(T.float64, 2), A(T.int64, 2), A(T.float64, 2), A(T.int64), A(T.float64, 2)),
    ],
}
# --- end of signatures ---
# fmt: on


def spell(numba_type) -> str:
    """``numba_type`` as it is written in the list above (evaluates back to an equal type)."""
    if isinstance(numba_type, T.Array):
        words = [spell(numba_type.dtype)]
        if numba_type.ndim != 1 or numba_type.layout != "C":
            words.append(str(numba_type.ndim))
        if numba_type.layout != "C":
            words.append(repr(numba_type.layout))
        if not numba_type.mutable:
            words.append("readonly=True")
        if not numba_type.aligned:
            raise TypeError(f"unaligned array type {numba_type!r}")
        return f"A({', '.join(words)})"
    if isinstance(numba_type, T.Literal):  # a constant argument of a kernel called from another kernel
        return f"T.literal({numba_type.literal_value!r})"
    if isinstance(numba_type, T.Omitted):
        return f"T.Omitted({numba_type.value!r})"
    if isinstance(numba_type, T.UniTuple):
        return f"T.UniTuple({spell(numba_type.dtype)}, {numba_type.count})"
    if isinstance(numba_type, T.Tuple):
        items = [spell(item) for item in numba_type.types]
        return f"T.Tuple(({', '.join(items)}{',' if len(items) == 1 else ''}))"
    if numba_type == T.none:
        return "T.none"
    if isinstance(numba_type, (T.Integer, T.Float, T.Boolean)):
        return f"T.{'boolean' if isinstance(numba_type, T.Boolean) else numba_type.name}"
    raise TypeError(f"no spelling for the numba type {numba_type!r}")


def render(signatures: dict[str, set[tuple[str, ...]]]) -> str:
    """The generated block of this file for ``signatures`` (each spelled by :func:`spell`)."""
    lines = ["SIGNATURES: dict[str, list[tuple]] = {"]
    for name in sorted(signatures):
        lines.append(f"    {name!r}: [")
        for signature in sorted(set(signatures[name])):
            lines.append(f"        ({', '.join(signature)}{',' if len(signature) == 1 else ''}),")
        lines.append("    ],")
    lines.append("}")
    return "\n".join(lines)


def dispatcher(name: str):
    """The kernel ``module.name`` of ``fairmedfm_fast.kernels``."""
    module, function = name.split(".")
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


def _compile(task: tuple[str, int]) -> tuple[str, float, int, int]:
    """Compile (or load) one signature; (kernel, seconds, loaded, compiled)."""
    name, index = task
    kernel = dispatcher(name)
    begin = time.perf_counter()
    hits, misses = sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values())
    kernel.compile(SIGNATURES[name][index])
    return (name, time.perf_counter() - begin, sum(kernel.stats.cache_hits.values()) - hits,
            sum(kernel.stats.cache_misses.values()) - misses)


#: The kernels that take longest to compile per signature (seconds on 2 cores: ``--build`` prints the
#: split), compiled first.
SLOW_FIRST = ("bootstrap.stratified_resample", "sweeps.ranked_sums", "voxels.sweep_buckets",
              "surface.surface_measures", "delong.placement_sums", "resampling.drawn_samples")


def compile_all(names=None, jobs: int | None = None) -> list[tuple[str, float, int, int]]:
    """Compile every listed signature (of the kernels ``names``, default all) in ``jobs`` processes
    (default one per core); per signature: (kernel, seconds, loaded from the cache, compiled)."""
    # The slowest kernels first (longest-first scheduling: no 20-second compile starts last).
    order = sorted(names or SIGNATURES, key=lambda name: (name not in SLOW_FIRST, SLOW_FIRST.index(name)
                                                          if name in SLOW_FIRST else 0, name))
    tasks = [(name, i) for name in order for i in range(len(SIGNATURES[name]))]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    if jobs == 1:
        return [_compile(task) for task in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # Spawned workers (not forked from a process that may hold numba's locks), one task at a time.
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_compile, tasks, chunksize=1))


def _main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fairmedfm_fast.kernels._signatures")
    parser.add_argument("--build", action="store_true", help="compile every listed signature")
    parser.add_argument("--jobs", type=int, default=None)
    options = parser.parse_args(argv)
    if not options.build:
        parser.print_help()
        return 0
    begin = time.perf_counter()
    done = compile_all(jobs=options.jobs)
    print(f"{len(done)} signatures of {len(SIGNATURES)} kernels in {time.perf_counter() - begin:.1f} s "
          f"({sum(d[3] for d in done)} compiled, {sum(d[2] for d in done)} loaded)", file=sys.stderr)
    print(split_by_kernel(done), file=sys.stderr)
    return 0


def split_by_kernel(done: list[tuple[str, float, int, int]], top: int = 12) -> str:
    """How the seconds of :func:`compile_all` split by kernel: the ``top`` kernels, the rest summed."""
    seconds: dict[str, float] = {}
    for name, spent, _, _ in done:
        seconds[name] = seconds.get(name, 0.0) + spent
    ranked = sorted(seconds.items(), key=lambda item: -item[1])
    total = sum(seconds.values()) or 1.0
    parts = [f"{name} {spent:.1f} s" for name, spent in ranked[:top]]
    rest = sum(spent for _, spent in ranked[top:])
    return (f"compile seconds by kernel (all processes, {total:.0f} s): " + ", ".join(parts)
            + (f", {len(ranked) - top} others {rest:.1f} s" if len(ranked) > top else ""))


if __name__ == "__main__":
    sys.exit(_main())
