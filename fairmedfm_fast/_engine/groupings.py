"""Per-group metrics from per-slot sums: :class:`Grouping` (the metrics of one grouping) and
:func:`from_counts`, which every classification backend's sums go through (in memory, the Dask ranges,
voxels, the accumulator); the optional sums of the registry's entries (:func:`optional_sums`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .._registry import metrics as _metric_registry

BEST = _metric_registry.BEST


@dataclass
class Curves:
    """What the pictures draw of every slot of every grouping, recorded by the fused pass: bounded in size
    (slots times at most :data:`CURVE_POINTS` + 2 cuts, and ten bins a slot), never per sample.

    The cuts are positions of the sorted order at tie-block starts (:func:`_curve_cuts`): 0, ``n``,
    and about :data:`CURVE_POINTS` others at equal steps (every tie-block start when there are
    fewer), at most ``CURVE_POINTS + 2`` in all. At a cut, a slot's samples scoring at least
    ``thresholds[t]`` (the score there; +inf at ``n``) are its total less those before the cut, so
    each (FPR, TPR) of a cut is a point of the slot's exact ROC curve (scikit-learn's ``roc_curve``),
    the corners included."""

    thresholds: np.ndarray  # float64 (T,), ascending (+inf last)
    pos_below: np.ndarray  # (n_slots, T): positives before each cut (int64; float64 with weights)
    neg_below: np.ndarray  # (n_slots, T): negatives before each cut
    positives: np.ndarray  # (n_slots,)
    negatives: np.ndarray  # (n_slots,)
    u2: np.ndarray  # (n_slots,): twice the Mann-Whitney U, AUC = u2 / (2 * positives * negatives)
    above_best: tuple[np.ndarray, np.ndarray] | None  # (n_slots,) each: negatives, positives above the
    #: @best_f1 threshold
    bins: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (n_slots, ECE_BINS) count, label and score sums
    ece: np.ndarray | None  # (n_slots,)


@dataclass
class Grouping:
    """Metrics of one grouping: index ``g < n_groups`` is group ``g``, index ``n_groups`` is all of
    the grouping's present samples."""

    count: np.ndarray  # samples
    positives: np.ndarray  # positive samples (weighted sums with weights)
    negatives: np.ndarray  # negative samples (weighted sums with weights)
    threshold: float  # decision threshold of the "@best_f1" metrics (NaN when not computed)
    values: dict[str, np.ndarray] = field(default_factory=dict)
    #: what the pictures draw, from measure(..., curves=True): of every grouping (one object)
    curves: Curves | None = None
    first_slot: int = 0  # this grouping's first slot in ``curves``


def optional_sums(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, sizes: np.ndarray, entries: tuple,
                  weights: np.ndarray | None = None, above: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> dict[str, np.ndarray]:
    """Per-slot sums of the registry ``entries`` (``_metric_registry.Sum``), each by the pass it
    names: "slot_sums" adds up the entry's per-sample term (in any order); "precision_sums" walks
    the samples, sorted by score, from the top, starting from ``above`` (each slot's positives and
    negatives scoring above all of these: the partitions above, in a distributed sort; default none).
    Shared by :func:`measure` and the distributed backend (which adds up per-partition sums)."""
    sums: dict[str, np.ndarray] = {}
    for entry in entries:
        if entry.made_by == "slot_sums":
            from ..kernels import calibration

            sums[entry.name] = calibration.slot_sums(term_values(entry, labels, scores), codes, sizes, weights)
        elif entry.made_by == "precision_sums":
            from ..kernels import precision

            if above is None:  # no counts above: empty arrays of the counters' type
                above = (np.empty(0, np.int64 if weights is None else np.float64),) * 2
            sums[entry.name] = precision.precision_sums(scores, labels, codes, sizes, *above, weights)
        else:  # pragma: no cover - a table entry without a maker here
            raise RuntimeError(f"internal error: no pass {entry.made_by!r} for the sum {entry.name!r}")
    return sums


def term_values(entry, labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The per-sample values of the sum ``entry``'s term, as float64; a ValueError when the term
    does not give one number per sample."""
    values = np.ascontiguousarray(entry.term(labels, scores), dtype=np.float64)
    if values.shape != scores.shape:
        raise ValueError(f"the term of the sum {entry.name!r} gave an array of shape {values.shape} for "
                         f"{len(scores)} samples; it must return one number per sample (NumPy arithmetic on "
                         "labels and scores)")
    return values


def from_counts(sizes: np.ndarray, count: np.ndarray, positives: np.ndarray, negatives: np.ndarray,
                thresholds: np.ndarray, keys: set[str], u2: np.ndarray | None = None,
                loss_sums: np.ndarray | None = None, ece: np.ndarray | None = None,
                confusion: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                totals: np.ndarray | None = None, extra: dict[str, np.ndarray] | None = None) -> list[Grouping]:
    """Per-slot metrics from the kernels' per-slot sums, split into groupings.

    ``u2`` (twice the Mann-Whitney U) gives AUC, ``loss_sums`` (summed BCE terms) gives BCE over
    ``totals`` (default ``count``), ``ece`` is taken as it is, and ``confusion`` maps a key suffix
    ("" or "@best_f1") to the positives and negatives above that threshold; ``extra`` holds other
    per-slot sums by their registry name ("precision", "squared_error"). Shared by
    :func:`measure` and the distributed evaluation, which adds up per-partition sums.
    """
    totals = count if totals is None else totals
    sums = {"count": count, "positives": positives, "negatives": negatives, "totals": totals}
    if u2 is not None:
        sums["u2"] = u2
    if loss_sums is not None:
        sums["loss"] = loss_sums
    if ece is not None:
        sums["ece"] = ece
    if extra:
        sums.update((name, value) for name, value in extra.items() if value is not None)
    suffixes = {suffix: {"tp": tp, "fp": fp} for suffix, (tp, fp) in confusion.items()} if confusion else {}
    order, ordered = _report_keys(frozenset(keys), frozenset(sums))
    per_slot = _metric_registry.finish(sums, ordered, suffixes)
    order = [key for key in order if key in per_slot]
    if len(sizes) == 1:  # one grouping: its slots are every slot
        return [Grouping(count, positives, negatives, float(thresholds[0]), {key: per_slot[key] for key in order})]
    groupings = []
    start = 0
    for k, size in enumerate(sizes.tolist()):
        window = slice(start, start + size + 1)
        start += size + 1
        values = {key: per_slot[key][window] for key in order}
        groupings.append(Grouping(count[window], positives[window], negatives[window], float(thresholds[k]),
                                  values))
    return groupings


@_metric_registry.derived
@lru_cache(maxsize=256)
def _report_keys(keys: frozenset[str], sums: frozenset[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The keys of ``keys`` whose metric the per-slot ``sums`` (or confusion counts) determine, in
    report order, and as a set."""
    available = {metric.name for metric in _metric_registry.REGISTRY.per_group
                 if metric.at_threshold or all(need in sums for need in metric.sums)}
    order = tuple(key for key in _metric_registry.REGISTRY.key_order if key in keys and key.removesuffix(BEST) in available)
    return order, frozenset(order)
