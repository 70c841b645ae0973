"""What fairmedfm_fast is compared with besides fairmedfm 0.4.2: other libraries and lower bounds.

- a scikit-learn loop: ``roc_auc_score`` on each group's boolean mask (what most code does by hand);
- fairlearn's ``MetricFrame`` with ``roc_auc_score``;
- lower bounds no exact implementation can beat by much: ``np.sort`` of the scores (every AUC needs the
  ranks) and a NumPy sum over every mask byte (every Dice needs to read each voxel once).

Group semantics follow the oracle: with several attributes the groups are their combinations, and a group
with only one label is left out of the gap.
"""
from __future__ import annotations

import numpy as np


def _auc_or_nan(y_true, y_score) -> float:
    from sklearn.metrics import roc_auc_score

    if y_true.min() == y_true.max():
        return np.nan
    return float(roc_auc_score(y_true, y_score))


def sklearn_auc_gap(y_true: np.ndarray, y_score: np.ndarray, codes: np.ndarray) -> float:
    """Largest minus smallest group AUC, one ``roc_auc_score`` call per group of ``codes`` (shape (n,))."""
    aucs = [_auc_or_nan(y_true[codes == g], y_score[codes == g]) for g in np.unique(codes)]
    aucs = [a for a in aucs if not np.isnan(a)]
    return max(aucs) - min(aucs) if len(aucs) >= 2 else np.nan


def fairlearn_auc_gap(y_true: np.ndarray, y_score: np.ndarray, sensitive_features) -> float:
    """fairlearn's ``MetricFrame(...).difference()`` of ``roc_auc_score`` (groups with one label skipped)."""
    from fairlearn.metrics import MetricFrame

    frame = MetricFrame(metrics=_auc_or_nan, y_true=y_true, y_pred=y_score,
                        sensitive_features=sensitive_features)
    return float(frame.difference(method="between_groups"))


def sort_scores(y_score: np.ndarray) -> np.ndarray:
    """The lower bound of any exact AUC: sorting the scores once."""
    return np.sort(y_score)


def sum_mask_bytes(masks) -> int:
    """The lower bound of any Dice: reading every mask byte once (a NumPy sum of each mask)."""
    return sum(int(np.add.reduce(m.reshape(-1), dtype=np.uint64)) for m in masks)


_STREAM = None


def _stream_kernel():
    global _STREAM
    if _STREAM is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def stream(scores, labels, codes, n_groups):  # pragma: no cover - compiled
            n_groupings, n = codes.shape
            offsets = np.zeros(n_groupings + 1, np.int64)
            for k in range(n_groupings):
                offsets[k + 1] = offsets[k] + n_groups[k]
            score_sums = np.zeros(offsets[n_groupings])
            label_sums = np.zeros(offsets[n_groupings], np.int64)
            for i in range(n):
                score = scores[i]
                label = labels[i]
                for k in range(n_groupings):
                    slot = offsets[k] + codes[k, i]
                    score_sums[slot] += score
                    label_sums[slot] += label
            return score_sums, label_sums

        _STREAM = stream
    return _STREAM


def streaming_pass(y_score: np.ndarray, y_true: np.ndarray, codes: np.ndarray, n_groups: np.ndarray):
    """The other lower bound: one Numba loop that reads the scores, the labels and the code rows once
    (``codes`` of shape (K, n)) and adds each score and label into its groups' slots. Unlike ``np.sort`` it
    favours no CPU's vector extensions."""
    return _stream_kernel()(y_score, y_true, codes, n_groups)


def simd_level() -> str:
    """NumPy's runtime report of the SIMD extensions this CPU has beyond NumPy's baseline (``np.show_runtime``),
    e.g. "X86_V3 (baseline X86_V2)"; ``np.sort`` of floats is several times faster with AVX2 (X86_V3)."""
    try:
        from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__
    except ImportError:  # NumPy < 2
        return "unknown"
    found = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
    return f"{' '.join(found) or 'none'} found (baseline {' '.join(__cpu_baseline__) or 'none'})"
