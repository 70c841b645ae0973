"""Ranges of a distributed sort (the Dask backend): each range of scores is sorted on its own and read by
the same fused pass as in memory (:func:`range_sums`); the ranges' sums then combine as those of the
in-memory engine's split ranges do (:func:`from_ranges`). :class:`RangePlan` holds what one range needs
of the others, and the registry entries of the optional sums, which travel with it to the workers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._registry import metrics as _metric_registry
from . import classification as _engine
from . import one_grouping as _one_grouping


@dataclass
class RangePlan:
    """What the pass over one range of a distributed sort needs of the others (:func:`range_plan`).
    Ranges are numbered in ascending score order; equal scores never straddle two."""

    sizes: np.ndarray  # int64 (K,), groups per grouping
    thresholds: list[float]  # fixed decision thresholds (prediction score > t): 0.5, and a fixed @best_f1 one
    sweep: bool  # each grouping's best-F1 threshold wanted
    count: np.ndarray  # int64 (R, n_slots): each range's samples per slot
    positives: np.ndarray  # int64 (R, n_slots)
    edges: np.ndarray  # (n_slots, ECE_BINS + 1): the ECE bins of every slot's global score range
    complete: list[bool]  # the groupings that have every sample (they share a pass, as in memory)
    extra: tuple[str, ...]  # the opt-in metric keys (their sums made on the workers)
    analytic: bool  # DeLong placement sums too
    #: the registry entries of the optional sums ``extra`` reads (:func:`sum_entries`): the entries
    #: themselves travel to the workers, which need no registration of their own
    entries: tuple = ()


def range_plan(count: np.ndarray, positives: np.ndarray, low: np.ndarray, high: np.ndarray, sizes: np.ndarray,
               n: int, thresholds: list[float], sweep: bool, extra: tuple[str, ...] = (), analytic: bool = False,
               entries: tuple | None = None) -> RangePlan:
    """The plan of :func:`range_sums` from each range's per-slot ``count`` and ``positives`` (R, n_slots),
    each slot's lowest and highest score over all ranges (NaN for an empty slot) and the number of
    samples ``n``; ``entries``: those of :func:`sum_entries` (default: read from the registry here)."""
    count, positives = np.asarray(count, np.int64), np.asarray(positives, np.int64)
    complete = (count[:, _engine.overall_slots(sizes)].sum(axis=0) == n).tolist()
    entries = sum_entries(tuple(extra)) if entries is None else tuple(entries)
    return RangePlan(sizes, list(thresholds), sweep, count, positives, _one_grouping.ece_edges(low, high), complete, tuple(extra),
                     analytic, entries)


def range_summary(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, sizes: np.ndarray
                  ) -> tuple[np.ndarray, ...]:
    """Per slot, the samples, positives, lowest and highest score (NaN where empty) of one sorted range,
    for :func:`range_plan` (where no routing counted them)."""
    count, positives, _, _ = _engine.kernel_modules()[1].score_ranges(scores, labels, codes, sizes)
    low, high = _engine.sweep_kernels().score_ends(scores, codes, sizes)
    return count, positives, low, high


def sum_entries(extra: tuple[str, ...]) -> tuple:
    """The registry entries of the optional sums that the opt-in metric keys ``extra`` read, read on the
    client for :func:`range_plan` (a worker process may not know a metric registered in the client's
    session; it gets the entries themselves)."""
    if not extra:
        return ()
    base = frozenset(key.removesuffix(_engine.BEST) for key in extra)
    _metric_registry.check_metrics(base)
    return tuple(_metric_registry.REGISTRY.sum[name] for name in _metric_registry.optional_sums(base))


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _position_above(scores: np.ndarray, threshold: float) -> int:
    """``scores.searchsorted(threshold, "right")`` (the first score above ``threshold``, compared as
    float64) without NumPy's float64 copy of float32 ``scores``: the first score at or above the
    least float32 above ``threshold``."""
    if scores.dtype != np.float32 or not abs(threshold) <= _FLOAT32_MAX:  # NaN, infinities and beyond float32
        return int(scores.searchsorted(threshold, "right"))
    least = np.float32(threshold)
    if float(least) <= threshold:
        least = np.nextafter(least, np.float32(np.inf))
    return int(scores.searchsorted(least, "left"))


def range_sums(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, plan: RangePlan, index: int
               ) -> dict[str, np.ndarray]:
    """The sums of range ``index`` of ``plan`` (its samples sorted by score, as one pass of :func:`_sweep`
    over them would make): counts, U, BCE sums, counts at or below the fixed thresholds, the ECE bin
    sums of the global bins; each grouping's best-F1 candidate in the range (F1 counted with the
    ranges below it) with the counts at or below it; the optional sums (those "add_above" starting
    from the ranges above); DeLong's placement sums with ``plan.analytic``. :func:`from_ranges` joins
    the ranges' sums."""
    sizes = plan.sizes
    arranged = _engine.Arranged(scores, labels, codes, sizes, None, True)
    positions = [_position_above(scores, t) for t in plan.thresholds]
    out: dict[str, np.ndarray] = {}
    if plan.sweep:  # candidates of this range, from the counts of the ranges below
        # the complete groupings have the same samples, so one sweep serves them all (as in memory)
        whole = [k for k, done in enumerate(plan.complete) if done][:1]
        rows = whole + [k for k, done in enumerate(plan.complete) if not done]
        which = [0 if done and whole else rows.index(k) for k, done in enumerate(plan.complete)]
        overall = _engine.overall_slots(sizes)[rows]
        pos, neg = plan.positives[:, overall], plan.count[:, overall] - plan.positives[:, overall]
        picked = codes[rows[0]:rows[0] + 1] if len(rows) == 1 else codes[rows]
        found, best = _engine.kernel_modules()[0].best_f1_thresholds(scores, labels, picked, pos.sum(axis=0), neg.sum(axis=0),
                                                       pos[:index].sum(axis=0), neg[:index].sum(axis=0))
        found, best = found[which], best[which]
        known: dict[float, int] = {}  # the complete groupings share their threshold: one search
        for t in found.tolist():
            if t == t and t not in known:
                known[t] = _position_above(scores, t)
        at = [known.get(t, 0) for t in found.tolist()]
        out.update(found=found, best=best)
        positions += at
    cuts = np.array(sorted(set(positions)), np.int64)
    loss_terms = arranged.log_loss_terms()
    parts = [[0]] if len(sizes) == 1 else _engine.grouping_parts(plan.complete)
    done = [_engine.fused_passes(arranged, rows, loss_terms, cuts, True, False, None, 1, plan.edges) for rows in parts]
    count, positives, u2, loss, pos_cut, neg_cut, *_, bin_count, bin_labels, bin_scores = _engine.in_slot_order(parts, done,
                                                                                                       sizes)
    fixed = cuts.searchsorted(positions[:len(plan.thresholds)])
    out.update(count=count, positives=positives, u2=u2, loss=loss, pos_fixed=pos_cut[:, fixed],
               neg_fixed=neg_cut[:, fixed], bins=(bin_count, bin_labels, bin_scores))
    if plan.sweep:  # each grouping's slots at its candidate
        column = np.repeat(cuts.searchsorted(at), sizes + 1)
        slots = np.arange(len(count))
        out.update(pos_at=pos_cut[slots, column], neg_at=neg_cut[slots, column])
    out.update(_engine.optional_sums(scores, labels, codes, sizes, tuple(e for e in plan.entries if e.combine == "add")))
    later_pos = plan.positives[index + 1:].sum(axis=0)
    later_neg = plan.count[index + 1:].sum(axis=0) - later_pos
    out.update(_engine.optional_sums(scores, labels, codes, sizes, tuple(e for e in plan.entries if e.combine == "add_above"),
                             above=(later_pos, later_neg)))
    if plan.analytic:
        from ..kernels import delong

        out["placement"] = delong.placement_sums(scores, labels, codes, sizes, 0, len(scores), False)
    return out


def from_ranges(sums: list[dict[str, np.ndarray]], plan: RangePlan, fixed_best: float | None) -> list[_engine.Grouping]:
    """Every grouping's metrics from the :func:`range_sums` of all ranges, in ascending score order: the
    sums joined as :func:`_engine.joined_sums` joins those of consecutive ranges; each grouping's best-F1
    threshold is its best candidate, the lowest range's on ties (the lowest threshold wins, as in
    one sweep)."""
    sizes = plan.sizes
    joined = _engine.joined_sums([(s["count"], s["positives"], s["u2"], s["loss"], s["pos_fixed"], s["neg_fixed"], *s["bins"])
                      for s in sums])
    count, positives, u2, loss, pos_fixed, neg_fixed, bin_count, bin_labels, bin_scores = joined
    negatives = count - positives
    confusion = {"": (positives - pos_fixed[:, 0], negatives - neg_fixed[:, 0])}
    if fixed_best is not None:
        thresholds = np.full(len(sizes), float(fixed_best))
        confusion[_engine.BEST] = (positives - pos_fixed[:, 1], negatives - neg_fixed[:, 1])
    else:
        thresholds = np.full(len(sizes), np.nan)
        tp, fp = np.zeros(len(count), count.dtype), np.zeros(len(count), count.dtype)
        starts = np.concatenate(([0], np.cumsum(sizes + 1)))
        for k in range(len(sizes)):
            best, chosen = -math.inf, None
            for p, s in enumerate(sums):
                if s["best"][k] > best:
                    best, chosen = s["best"][k], p
            if chosen is None:
                continue
            window = slice(starts[k], starts[k + 1])
            thresholds[k] = sums[chosen]["found"][k]
            pos_below = plan.positives[:chosen, window].sum(axis=0) + sums[chosen]["pos_at"][window]
            neg_below = plan.count[:chosen, window].sum(axis=0) - plan.positives[:chosen, window].sum(axis=0) \
                + sums[chosen]["neg_at"][window]
            tp[window], fp[window] = positives[window] - pos_below, negatives[window] - neg_below
        confusion[_engine.BEST] = (tp, fp)
    names = _metric_registry.optional_sums(frozenset(key.removesuffix(_engine.BEST) for key in plan.extra))
    extra = {name: sum(s[name] for s in sums) for name in names}
    return _engine.from_counts(sizes, count, positives, negatives, thresholds, {*_engine.all_keys(), *plan.extra}, u2=u2,
                       loss_sums=loss, ece=_one_grouping.calibration_error(bin_count, bin_labels, bin_scores, 0),
                       confusion=confusion, extra=extra)


