"""Fused sweeps over samples sorted by score: every per-slot sum of the classification metrics.

:func:`ranked_sums` reads the samples once for a set of groupings that have the same samples
present: per slot the sample count, positives, twice the Mann-Whitney U (AUC), the summed log-loss
terms (BCE), the positives and negatives below given cut positions (confusion counts at fixed
thresholds: with predictions ``score > t`` the samples above are those from
``searchsorted(sorted_scores, t, "right")``) and the ECE bin sums. Its ECE bins need each slot's
score range first, which :func:`score_ends` reads from either end of the sorted order.

:func:`best_f1_sweep` (which needs the totals): the best-F1 threshold of every grouping with the
per-slot counts below it.

Sorted order makes all of them cheap: tie blocks are runs, each slot's lowest score is its first,
and each slot's ECE bin is a run. Integer sums without weights, so counts, U and confusion counts
are exact; weighted sums (float64) otherwise, samples of weight 0 being absent.
"""
import numpy as np

from ._arrays import filled
from ._jit import inline_kernel, kernel
from ._slots import (
    LOSS,
    LOSS_COMP,
    LOSS_PART,
    SCORE,
    SCORE_COMP,
    SCORE_PART,
    fold_running,
    fold_sums,
    neumaier_step,
    slot_offsets,
)
from ._statistics import add_sample, f1_candidate, settle, tie_end, twice_placement
from ._weights import counters, weight_of

# Per-slot state of :func:`ranked_sums`, one row of each table per slot (a row is a cache line).
_COUNT, _POS, _U2, _NEG_BELOW, _BLOCK_POS, _BLOCK_NEG = range(6)
#: Samples between two folds of the plain running float sums into the compensated ones: a plain sum
#: of this many terms is exact to about ``FOLD * 2**-53`` of itself.
FOLD = 256


@kernel
def score_ends(sorted_scores, sorted_codes, n_groups, weights=None):
    """Lowest and highest score of every slot: its first and last present sample in sorted order,
    found by reading in from either end until every slot has been met (on most inputs a few
    hundred samples, a full read only when a slot is empty).

    Parameters
    ----------
    sorted_scores, sorted_codes, n_groups, weights : as in :func:`ranked_sums`

    Returns
    -------
    low, high : float64 arrays of shape (n_slots,); NaN for an empty slot
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings, n = sorted_codes.shape
    low = filled(n_slots, np.nan)
    high = filled(n_slots, np.nan)
    for k in range(n_groupings):
        wanted = n_groups[k] + 1
        for end in range(2):  # up from the lowest score, then down from the highest: one copy of the loop to compile
            up = end == 0
            wanted = _first_met(sorted_scores, sorted_codes, k, offsets[k], n_groups[k], weights, 0 if up else n - 1,
                                n if up else -1, 1 if up else -1, wanted, low if up else high)
    return low, high


@inline_kernel
def _first_met(sorted_scores, sorted_codes, k, first, n_groups, weights, start, stop, step, wanted, out):
    # Reading from ``start`` towards ``stop``, the score at which each slot of grouping ``k`` is
    # first met, into ``out``; stops once ``wanted`` slots are met, and returns how many were.
    met = 0
    overall = first + n_groups
    for i in range(start, stop, step):
        if met == wanted:
            break
        code = sorted_codes[k, i]
        if code < 0 or weight_of(weights, i) == 0:
            continue
        score = np.float64(sorted_scores[i])
        if np.isnan(out[overall]):
            out[overall] = score
            met += 1
        if np.isnan(out[first + code]):
            out[first + code] = score
            met += 1
    return met


@kernel
def ranked_sums(sorted_scores, sorted_labels, sorted_codes, n_groups, loss_terms, cuts, marks, n_bins, start, stop,
                weights=None):
    """One pass over the samples ``start:stop``: per-slot totals, AUC sums, BCE sums, prefix counts at
    cuts and ECE bin sums.

    The groupings of one call must have the same samples present (every grouping complete, or a
    single grouping): their "all present samples" slots then hold the same sums, which the pass
    computes once. A slot's ECE bin is a run of the sorted order, from the first sample above the
    bin's lower edge to the first above its upper edge: its sums are the differences of the slot's
    running sums at those two positions.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    sorted_labels : uint8 array of shape (n,), 0 or 1
    sorted_codes : integer array of shape (K, n); negative = not in the grouping (then in none)
    n_groups : int64 array of shape (K,)
    loss_terms : float64 array of shape (n,) (per-sample BCE terms), or None for no BCE
    cuts : int64 array of shape (T,), ascending
        Positions in the sorted order, each at a tie-block boundary (or ``n``): every slot records
        its positives and negatives before position ``cuts[t]``.
    marks : tuple of three int64 arrays, or None for no ECE bins
        :func:`bin_marks` of the slots' bin edges (``calibration.equal_width_edges`` of
        :func:`score_ends`)
    n_bins : int
        Bins per slot (1 without marks).
    start, stop : int
        The samples read, each at a tie-block boundary (or 0 and ``n``). The sums of consecutive
        ranges add up to those of their union, except U: a later range's ``u2`` adds twice its
        positives times the negatives before it. A cut or mark before ``start`` records zeros,
        one after ``stop`` the range's totals.
    weights : float64 array of shape (n,), optional

    Returns
    -------
    count, positives, u2 : arrays of shape (n_slots,), int64 (float64 with weights)
        ``AUC = u2 / (2 * positives * negatives)``, ties counted one half.
    loss : float64 array of shape (n_slots,), sums of ``loss_terms`` (zeros without)
    pos_below, neg_below : arrays of shape (n_slots, T), int64 (float64 with weights)
    bin_count, bin_labels, bin_scores : arrays of shape (n_slots, n_bins), as
        ``calibration.binned_calibration`` (pandas.cut's right-closed bins); zeros without marks
    """
    offsets, n_slots = slot_offsets(n_groups)
    n_groupings = sorted_codes.shape[0]
    n_cuts = cuts.shape[0]
    n_edges = n_bins + 1
    tally = counters(weights, (n_slots, 8))
    sums = filled((n_slots, 8), 0.0)
    pos_cut = counters(weights, (n_slots, n_cuts))
    neg_cut = counters(weights, (n_slots, n_cuts))
    # Each slot's running count, positives and score sum at the first sample above each edge.
    at_count = counters(weights, (n_slots, n_edges))
    at_pos = counters(weights, (n_slots, n_edges))
    at_score = filled((n_slots, n_edges), 0.0)
    overall = offsets[0] + n_groups[0] if n_groupings > 0 else 0  # computed once, copied at the end
    if marks is None:
        n_marks = 0
        mark_at = mark_slots = mark_edges = filled(0, 0)
    else:
        mark_at, mark_slots, mark_edges = marks
        n_marks = mark_at.shape[0]
    zero = tally[0, 0] - tally[0, 0]  # zero, of the counters' type
    # The overall slot lives in local variables: it changes with every sample, which through
    # memory would chain each update to the previous one.
    o_count = o_pos = o_u2 = o_neg_below = o_block_pos = o_block_neg = zero  # its AUC state (add_sample)
    o_loss_part = o_score_part = o_loss = o_loss_comp = o_score = o_score_comp = 0.0  # its float sums
    next_cut = 0
    cut = min(cuts[0], stop) if n_cuts > 0 else stop + 1  # one after stop is met at stop
    next_mark = 0
    mark = min(mark_at[0], stop) if n_marks > 0 else stop + 1
    # Each grouping folds its slots every FOLD samples, less often with many groups (a fold visits
    # each of them): a slot's plain sums then hold at most ``8 * (n_groups + 1)`` terms, still exact
    # to ~1e-11 at 10^4 groups. A grouping's schedule depends on it alone, so its sums are the same
    # whichever groupings share the pass.
    every = filled(n_groupings, 0)
    for k in range(n_groupings):
        every[k] = max(FOLD, 8 * (n_groups[k] + 1))
    folds = filled(n_groupings, 0)  # each grouping's next fold
    for k in range(n_groupings):
        folds[k] = start + every[k]
    o_fold = start + FOLD  # the overall slot's next fold
    fold_at = _earliest(o_fold, folds)
    block_start = start
    block_end = start  # the current tie block is [block_start, block_end); ties are rare
    # The next position where something besides adding a sample happens: a fold, a cut, a bin
    # edge, or the end of a tie block. One comparison per sample finds it.
    event = min(fold_at, cut, mark, stop)
    for i in range(start, stop + 1 if n_groupings > 0 else start):
        if i >= event:
            if i == block_end and block_end > block_start:  # settle the tie block that ends here
                o_u2, o_neg_below, o_block_pos, o_block_neg = _settle_block(
                    sorted_codes, offsets, block_start, block_end, tally, o_u2, o_neg_below, o_block_pos, o_block_neg)
                block_start = block_end
            if i >= fold_at or i == stop:  # fold the plain running sums into the compensated ones
                for k in range(n_groupings):
                    if i >= folds[k] or i == stop:
                        folds[k] += every[k]
                        for slot in range(offsets[k], offsets[k] + n_groups[k]):
                            fold_sums(sums, slot)
                if i >= o_fold or i == stop:
                    o_fold += FOLD
                    o_loss, o_loss_comp, o_loss_part = fold_running(o_loss, o_loss_comp, o_loss_part)
                    o_score, o_score_comp, o_score_part = fold_running(o_score, o_score_comp, o_score_part)
                fold_at = _earliest(o_fold, folds)
            while cut <= i:  # counts below this boundary
                for slot in range(n_slots):
                    pos_cut[slot, next_cut] = tally[slot, _POS]
                    neg_cut[slot, next_cut] = tally[slot, _COUNT] - tally[slot, _POS]
                pos_cut[overall, next_cut] = o_pos
                neg_cut[overall, next_cut] = o_count - o_pos
                next_cut += 1
                cut = min(cuts[next_cut], stop) if next_cut < n_cuts else stop + 1
            while mark <= i:  # a slot's running sums at one of its bin edges
                slot = mark_slots[next_mark]
                e = mark_edges[next_mark]
                if slot == overall:
                    at_count[slot, e] = o_count
                    at_pos[slot, e] = o_pos
                    total, compensation = neumaier_step(o_score, o_score_comp, o_score_part)
                else:
                    at_count[slot, e] = tally[slot, _COUNT]
                    at_pos[slot, e] = tally[slot, _POS]
                    total, compensation = neumaier_step(sums[slot, SCORE], sums[slot, SCORE_COMP],
                                                        sums[slot, SCORE_PART])
                at_score[slot, e] = total + compensation
                next_mark += 1
                mark = min(mark_at[next_mark], stop) if next_mark < n_marks else stop + 1
            if i == stop:
                break
            event = min(fold_at, cut, mark, stop)
            if block_end > i:
                event = min(event, block_end)
        value = sorted_scores[i]
        if i >= block_end and i + 1 < stop and sorted_scores[i + 1] == value:  # a tie block starts
            block_start = i
            block_end = tie_end(sorted_scores, i, stop)
            event = min(event, block_end)
        tied = i < block_end
        if sorted_codes[0, i] < 0:
            continue
        w = weight_of(weights, i)
        if w == 0:
            continue
        # Branch-free on the label (labels in sorted order are random: a branch mispredicts).
        pw = w * (1 if sorted_labels[i] != 0 else 0)
        nw = w - pw
        term = 0.0 if loss_terms is None else w * loss_terms[i]
        weighted_score = w * np.float64(value)
        o_loss_part += term
        o_score_part += weighted_score
        o_count, o_pos, o_u2, o_neg_below, o_block_pos, o_block_neg = add_sample(
            o_count, o_pos, o_u2, o_neg_below, o_block_pos, o_block_neg, w, pw, tied)
        for k in range(n_groupings):
            slot = offsets[k] + sorted_codes[k, i]
            tally[slot, _COUNT] += w
            tally[slot, _POS] += pw
            if loss_terms is not None:
                sums[slot, LOSS_PART] += term
            if marks is not None:
                sums[slot, SCORE_PART] += weighted_score
            if tied:
                tally[slot, _BLOCK_POS] += pw
                tally[slot, _BLOCK_NEG] += nw
            else:
                tally[slot, _U2] += pw * twice_placement(tally[slot, _NEG_BELOW], 0)  # a block of one
                tally[slot, _NEG_BELOW] += nw
    for k in range(n_groupings):  # the shared overall slot
        slot = offsets[k] + n_groups[k]
        tally[slot, _COUNT] = o_count
        tally[slot, _POS] = o_pos
        tally[slot, _U2] = o_u2
        sums[slot, LOSS] = o_loss
        sums[slot, LOSS_COMP] = o_loss_comp
        if slot != overall:  # element by element: a row assignment compiles slowly
            for t in range(n_cuts):
                pos_cut[slot, t] = pos_cut[overall, t]
                neg_cut[slot, t] = neg_cut[overall, t]
            for e in range(n_edges):
                at_count[slot, e] = at_count[overall, e]
                at_pos[slot, e] = at_pos[overall, e]
                at_score[slot, e] = at_score[overall, e]
    # The outputs, element by element (array expressions compile slowly).
    count = counters(weights, n_slots)
    positives = counters(weights, n_slots)
    u2 = counters(weights, n_slots)
    loss = filled(n_slots, 0.0)
    bin_count = counters(weights, (n_slots, n_edges - 1))
    bin_labels = filled((n_slots, n_edges - 1), 0.0)
    bin_scores = filled((n_slots, n_edges - 1), 0.0)
    for slot in range(n_slots):
        count[slot] = tally[slot, _COUNT]
        positives[slot] = tally[slot, _POS]
        u2[slot] = tally[slot, _U2]
        loss[slot] = sums[slot, LOSS] + sums[slot, LOSS_COMP]
        for b in range(n_edges - 1):
            bin_count[slot, b] = at_count[slot, b + 1] - at_count[slot, b]
            bin_labels[slot, b] = at_pos[slot, b + 1] - at_pos[slot, b]
            bin_scores[slot, b] = at_score[slot, b + 1] - at_score[slot, b]
    return count, positives, u2, loss, pos_cut, neg_cut, bin_count, bin_labels, bin_scores


@inline_kernel
def _earliest(first, later):
    # The smallest of ``first`` and the entries of ``later``.
    for value in later:
        first = min(first, value)
    return first


@inline_kernel
def _settle_block(sorted_codes, offsets, start, stop, tally, o_u2, o_neg_below, o_block_pos, o_block_neg):
    # Credit each positive of the tie block [start, stop) half of the block's negatives in its slot
    # (and in the overall slot, whose sums the caller keeps); returns the overall slot's AUC state.
    for k in range(sorted_codes.shape[0]):
        first = offsets[k]
        for j in range(start, stop):
            code = sorted_codes[k, j]
            if code < 0:
                continue
            slot = first + code
            if tally[slot, _BLOCK_POS] + tally[slot, _BLOCK_NEG] > 0:
                (tally[slot, _U2], tally[slot, _NEG_BELOW], tally[slot, _BLOCK_POS],
                 tally[slot, _BLOCK_NEG]) = settle(tally[slot, _U2], tally[slot, _NEG_BELOW], tally[slot, _BLOCK_POS],
                                                   tally[slot, _BLOCK_NEG])
    return settle(o_u2, o_neg_below, o_block_pos, o_block_neg)


def bin_marks(sorted_scores, edges, n_groups):
    """The marks of :func:`ranked_sums`: each slot's bin edges as positions in the sorted order, in
    ascending order, with their slots and edge numbers. The overall slots of the groupings after
    the first are left out (a pass computes the overall slot once); so are empty slots.

    Parameters
    ----------
    sorted_scores : float32 or float64 array of shape (n,), ascending
    edges : float64 array of shape (n_slots, n_edges) (``calibration.equal_width_edges``)
    n_groups : int64 array of shape (K,)

    Returns
    -------
    (positions, slots, edge numbers) : int64 arrays of shape (m,)
    """
    # ndarray methods rather than np.* wrappers: this runs on every evaluate call, small ones too
    n_edges = edges.shape[1]
    keep = ~np.isnan(edges[:, 0])
    keep[np.cumsum(np.asarray(n_groups) + 1)[1:] - 1] = False  # the overall slots after the first grouping's
    slots = keep.nonzero()[0].astype(np.int64)
    wanted = edges[slots].ravel()
    if sorted_scores.dtype == np.float32:
        # Searched as float32 (NumPy would otherwise copy the scores to float64): a float32 is above
        # an edge exactly when it is above the largest float32 at or below the edge.
        with np.errstate(over="ignore"):
            below = wanted.astype(np.float32)
        over = below > wanted
        below[over] = np.nextafter(below[over], np.float32(-np.inf))
        wanted = below
    # each edge's first sample above it (bins are right-closed); no kernel: one less to compile
    positions = sorted_scores.searchsorted(wanted, "right").astype(np.int64, copy=False)
    order = positions.argsort(kind="stable")
    return positions[order], slots[order // n_edges], (order % n_edges).astype(np.int64)


@kernel
def best_f1_sweep(sorted_scores, sorted_labels, sorted_codes, n_groups, n_pos, n_neg, weights=None):
    """Each grouping's best-F1 threshold with its slots' counts at or below it.

    Parameters
    ----------
    sorted_scores, sorted_labels, sorted_codes, n_groups, weights : as in :func:`ranked_sums`
        (here any groupings, complete or not); ``sorted_codes`` None for one grouping of one group
        holding every sample (the sweep shared by complete groupings), which reads no codes
    n_pos, n_neg : arrays of shape (K,)
        Positives and negatives among each grouping's present samples.

    Returns
    -------
    thresholds : float64 array of shape (K,)
        The best-F1 threshold of each grouping (candidates are the distinct scores, a sample
        predicted positive at ``score >= t``, the lowest threshold among equal F1; as
        ``ranking.best_f1_thresholds``); NaN without samples.
    pos_at, neg_at : arrays of shape (n_slots,)
        Positives and negatives of each slot scoring at most its grouping's best threshold (then
        ``score > t`` holds for the rest: TP = positives - pos_at).
    """
    offsets, n_slots = slot_offsets(n_groups)
    n = sorted_scores.shape[0]
    n_groupings = 1 if sorted_codes is None else sorted_codes.shape[0]
    thresholds = filled(n_groupings, np.nan)
    pos_at = counters(weights, n_slots)
    neg_at = counters(weights, n_slots)
    zero = pos_at[0] - pos_at[0] if n_slots > 0 else 0  # zero, of the counters' type
    for k in range(n_groupings):  # one grouping at a time: its sweep state in local variables
        first = offsets[k]
        overall = first + n_groups[k]
        # The best F1 so far, where its block ends and the overall counts up to there (selected
        # without a branch: while F1 climbs, whether a block beats the best is a coin toss).
        best = -np.inf
        best_stop = 0
        best_start = 0
        start = 0  # the current tie block's first sample
        pos_below = zero
        neg_below = zero
        best_pos = zero
        best_neg = zero
        block_pos = zero
        block_neg = zero
        present = False
        for i in range(n):
            value = sorted_scores[i]
            code = 0 if sorted_codes is None else sorted_codes[k, i]
            w = weight_of(weights, i)
            if code >= 0 and w != 0:
                present = True
                pw = w * (1 if sorted_labels[i] != 0 else 0)
                block_pos += pw
                block_neg += w - pw
            if i + 1 < n and sorted_scores[i + 1] == value:
                continue
            # the end of a tie block
            if present:
                # F1 at threshold `value` (predicted positive: score >= value) counts this block.
                f1 = f1_candidate(n_pos[k] - pos_below, n_neg[k] - neg_below, n_pos[k], best)
                pos_below += block_pos
                neg_below += block_neg
                better = f1 > best
                best = f1 if better else best
                best_stop = i + 1 if better else best_stop
                best_start = start if better else best_start
                best_pos = pos_below if better else best_pos
                best_neg = neg_below if better else best_neg
            block_pos = zero
            block_neg = zero
            present = False
            start = i + 1
        if best_stop > 0:
            thresholds[k] = sorted_scores[best_start]
            pos_at[overall] = best_pos
            neg_at[overall] = best_neg
            for i in range(best_stop):  # each group's counts at or below the best threshold
                code = 0 if sorted_codes is None else sorted_codes[k, i]
                w = weight_of(weights, i)
                if code >= 0 and w != 0:
                    pw = w * (1 if sorted_labels[i] != 0 else 0)
                    pos_at[first + code] += pw
                    neg_at[first + code] += w - pw
    return thresholds, pos_at, neg_at
