"""Every per-slot sum of one stratified bootstrap resample of one grouping, without copying the
drawn samples out: :func:`stratified_resample`.

The resample's draws are counted in stratum order (:func:`resampling.draw_strata`). When the strata
are the grouping's own groups (``evaluate``'s default: each attribute resampled within its groups),
a group's samples lie together in stratum order, ascending in score: its count, positives and AUC
sums (integers) come from one run over its counts and labels there, its running sums in local
variables rather than in a table indexed by group. The rest is summed over the sorted order, from
the counts scattered there: every sum of the "all samples" slot, and each group's compensated sums
(BCE terms, scores at its ECE bin edges). The best-F1 sweep comes first (a resample's totals are
known from its draws) and skips the runs of samples where no threshold can beat the best F1 so far,
from one sum over their counts.

The results are those of :func:`sweeps.ranked_sums` and :func:`sweeps.best_f1_sweep` on the drawn
samples weighted by their counts, bit for bit: counts, positives and U2 are integers (exact in any
order), and the compensated sums add the same terms in the same order, folded after the same drawn
samples (a sample not drawn adds exact zeros).
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
)
from ._statistics import (
    add_sample,
    cannot_beat,
    enter_block,
    f1_candidate,
    f1_slack,
    first_above,
    settle,
)
from .calibration import calibration_error, equal_width_edges
from .resampling import draw_strata
from .sweeps import FOLD

# Each group's compensated sums in :func:`_overall` (one row a group).
#: Fewest samples the best-F1 sweep tries to skip at once.
SKIP_FROM = 16
#: Most samples it tries to skip at once (one sum over their counts decides).
SKIP_UP_TO = 4096


def tie_blocks(sorted_scores, starts=None):
    """The runs of equal scores (two samples or more) of an ascending array, or of each ascending
    run ``sorted_scores[starts[c]:starts[c + 1]]``: start and end positions, int64 arrays of shape
    (n_blocks,), ascending. NumPy; once per arrangement (and attribute)."""
    equal = sorted_scores[1:] == sorted_scores[:-1]  # i: samples i and i + 1 are tied
    if starts is not None:
        breaks = np.asarray(starts[1:-1])
        equal[breaks[(breaks > 0) & (breaks < len(sorted_scores))] - 1] = False  # no block across two runs
    tied = np.flatnonzero(equal)
    if tied.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    first = np.concatenate(([True], tied[1:] != tied[:-1] + 1))
    last = np.concatenate((tied[1:] != tied[:-1] + 1, [True]))
    return tied[first].astype(np.int64), (tied[last] + 2).astype(np.int64)


@kernel
def stratified_resample(members, stratum_starts, seed, resample, tally, counts, limit, n_groups, sorted_scores,
                        sorted_labels, sorted_codes, loss_terms, block_starts, block_ends, stratum_scores,
                        stratum_labels, run_starts, run_ends, cuts, stratum_cuts, n_bins, sweep_f1):
    """Draw one resample of one grouping within its groups, and give every per-slot sum of it.

    Parameters
    ----------
    members : integer array of shape (n_drawable,)
        Sorted positions of the samples grouped by group (stratum ``c`` is group ``c``), ascending
        within each group; samples without a group are in none.
    stratum_starts : intp array of shape (n_strata + 1,), n_strata <= n_groups
        Group ``c`` is ``members[stratum_starts[c]:stratum_starts[c + 1]]``.
    seed : uint64
    resample : int
        The resample's number (its random stream).
    tally : integer array of shape (>= stratum_starts[-1],), scratch: the draws in stratum order
    counts : array of shape (n,), the dtype of ``tally``, scratch: the counts in sorted order
    limit : int
        The largest count accepted (at most the type's largest value).
    n_groups : int
    sorted_scores, sorted_labels, sorted_codes, loss_terms : arrays of shape (n,), in ascending score
        order (``sorted_codes``: the grouping's codes, negative for no group)
    block_starts, block_ends : int64 arrays, the tie blocks of :func:`tie_blocks`
    stratum_scores, stratum_labels : arrays of shape (n_drawable,)
        ``sorted_scores[members]``, ``sorted_labels[members]``
    run_starts, run_ends : int64 arrays, the tie blocks within each group's run
        (:func:`tie_blocks` of ``stratum_scores`` and ``stratum_starts``)
    cuts : int64 array of shape (T,), ascending
        Positions in the sorted order (``searchsorted(sorted_scores, t, "right")`` of thresholds
        ``t``): every slot records its positives and negatives before them.
    stratum_cuts : int64 array of shape (n_strata, T)
        The same thresholds' positions in each stratum's run (counted from its start).
    n_bins : int
        ECE bins per slot.
    sweep_f1 : bool
        Whether to run the best-F1 sweep.

    Returns
    -------
    ok : bool
        False when a count did not fit (it wrapped, or passed ``limit``): to be repeated with wider
        ``tally`` and ``counts``. The other outputs are then meaningless.
    count, positives, u2, loss, pos_below, neg_below :
        as :func:`sweeps.ranked_sums` on the drawn samples weighted by their counts (int64 counts)
    ece : float64 array of shape (n_groups + 1,)
        ECE from the ECE bin sums of :func:`sweeps.ranked_sums` (``calibration.calibration_error``)
    threshold : float
        The best-F1 threshold (NaN without a sweep, or without drawn samples)
    pos_at, neg_at : int64 arrays of shape (n_groups + 1,)
        As :func:`sweeps.best_f1_sweep` (zeros without a sweep).
    """
    n = sorted_scores.shape[0]
    n_strata = stratum_starts.shape[0] - 1
    n_drawable = stratum_starts[n_strata]
    n_slots = n_groups + 1
    n_cuts = cuts.shape[0]
    n_edges = n_bins + 1
    count = filled(n_slots, 0)
    positives = filled(n_slots, 0)
    u2 = filled(n_slots, 0)
    loss = filled(n_slots, 0.0)
    pos_cut = filled((n_slots, n_cuts), 0)
    neg_cut = filled((n_slots, n_cuts), 0)
    pos_at = filled(n_slots, 0)
    neg_at = filled(n_slots, 0)
    # Each slot's running count, positives and score sum at each of its bin edges.
    at_count = filled((n_slots, n_edges), 0)
    at_pos = filled((n_slots, n_edges), 0)
    at_score = filled((n_slots, n_edges), 0.0)
    # The draws, scattered to sorted order; their total shows a count that wrapped.
    draw_strata(stratum_starts, seed, resample, tally)
    if n_drawable < n:
        for i in range(n):
            counts[i] = 0
    total = 0
    top = 0
    n_pos = 0
    for j in range(n_drawable):
        counts[members[j]] = tally[j]
        v = np.int64(tally[j])
        total += v
        top = max(top, v)
        n_pos += v if stratum_labels[j] != 0 else 0
    if total != n_drawable or top > limit:
        return False, count, positives, u2, loss, pos_cut, neg_cut, loss, np.nan, pos_at, neg_at
    n_neg = n_drawable - n_pos
    # Each slot's lowest and highest drawn score, then its ECE bin edges.
    low = filled(n_slots, np.nan)
    high = filled(n_slots, np.nan)
    for c in range(n_strata):
        a = stratum_starts[c]
        b = stratum_starts[c + 1]
        for j in range(a, b):
            if tally[j] != 0:
                low[c] = stratum_scores[j]
                break
        for j in range(b - 1, a - 1, -1):
            if tally[j] != 0:
                high[c] = stratum_scores[j]
                break
    for i in range(n):
        if counts[i] != 0:
            low[n_groups] = sorted_scores[i]
            break
    for i in range(n - 1, -1, -1):
        if counts[i] != 0:
            high[n_groups] = sorted_scores[i]
            break
    edges = equal_width_edges(low, high, n_bins)
    threshold = np.nan
    best_stop = 0
    if sweep_f1:
        threshold, best_stop, best_pos, best_neg = _best_f1(counts, sorted_scores, sorted_labels, block_starts,
                                                            block_ends, n_pos, n_neg)
        if best_stop > 0:
            pos_at[n_groups] = best_pos
            neg_at[n_groups] = best_neg
    _overall(counts, sorted_scores, sorted_labels, sorted_codes, loss_terms, block_starts, block_ends, cuts, edges,
             n_groups, count, positives, u2, loss, pos_cut, neg_cut, at_count, at_pos, at_score)
    next_run = np.int64(0)  # the first tie block of the group (not a literal: see _overall)
    for c in range(n_strata):
        a = stratum_starts[c]
        b = stratum_starts[c + 1]
        while next_run < run_starts.shape[0] and run_starts[next_run] < a:
            next_run += 1
        if a == b:
            continue
        best_at = b + 1  # where the counts at the best threshold are read (never without one)
        if best_stop > 0:
            best_at = first_above(stratum_scores, a, b, threshold)
        _group(c, a, b, tally, stratum_scores, stratum_labels, run_starts, run_ends, next_run, stratum_cuts, edges,
               best_at, count, positives, u2, pos_cut, neg_cut, at_count, at_pos, pos_at, neg_at)
    bin_count = filled((n_slots, n_bins), 0.0)  # as floats: the engine's ECE takes weighted bin sums
    bin_labels = filled((n_slots, n_bins), 0.0)
    bin_scores = filled((n_slots, n_bins), 0.0)
    for slot in range(n_slots):
        for e in range(n_bins):
            bin_count[slot, e] = at_count[slot, e + 1] - at_count[slot, e]
            bin_labels[slot, e] = at_pos[slot, e + 1] - at_pos[slot, e]
            bin_scores[slot, e] = at_score[slot, e + 1] - at_score[slot, e]
    ece = calibration_error(bin_count, bin_labels, bin_scores, 0)
    return True, count, positives, u2, loss, pos_cut, neg_cut, ece, threshold, pos_at, neg_at


@inline_kernel
def _ascending_order(keys):
    # The positions of ``keys`` in ascending order (equal keys in any order), by a bottom-up merge
    # sort: a few marks a resample, and much less to compile than np.argsort's quicksort.
    m = keys.shape[0]
    order = filled(m, 0)
    other = filled(m, 0)
    for t in range(m):
        order[t] = t
    width = 1
    while width < m:
        for low in range(0, m, 2 * width):
            middle = min(low + width, m)
            high = min(low + 2 * width, m)
            a = low
            b = middle
            for t in range(low, high):
                if a < middle and (b >= high or keys[order[a]] <= keys[order[b]]):
                    other[t] = order[a]
                    a += 1
                else:
                    other[t] = order[b]
                    b += 1
        order, other = other, order
        width *= 2
    return order


@inline_kernel
def _overall(counts, sorted_scores, sorted_labels, sorted_codes, loss_terms, block_starts, block_ends, cuts, edges,
             overall, count, positives, u2, loss, pos_cut, neg_cut, at_count, at_pos, at_score):
    # Over the sorted order: every sum of the "all samples" slot, and each group's compensated sums
    # (BCE terms, scores at its bin edges), as sweeps.ranked_sums takes them (the same order, folded
    # after the same drawn samples: the groups every `every`, the overall slot every FOLD).
    n = sorted_scores.shape[0]
    n_cuts = cuts.shape[0]
    n_edges = edges.shape[1]
    # every slot's bin edges as positions, in ascending order (ties in any order: they read the same)
    marks = filled((overall + 1) * n_edges, 0)
    for slot in range(overall + 1):
        for e in range(n_edges):
            at = n + 1 if np.isnan(edges[slot, 0]) else first_above(sorted_scores, 0, n, edges[slot, e])
            marks[slot * n_edges + e] = at
    mark_order = _ascending_order(marks)
    next_mark = 0
    mark = marks[mark_order[0]]
    sums = filled((overall, 6), 0.0)  # each group's plain and compensated sums (LOSS, ... below)
    o_count = o_pos = o_u2 = o_neg_below = o_block_pos = o_block_neg = 0  # its AUC state (add_sample)
    o_loss_part = o_score_part = o_loss = o_loss_comp = o_score = o_score_comp = 0.0  # its float sums
    next_cut = 0
    cut = cuts[0] if n_cuts > 0 else n + 1
    next_block = np.int64(0)  # not a literal 0: enter_block would also compile for Literal[int](0)
    next_tie = block_starts[0] if block_starts.shape[0] > 0 else n  # where the first tie block starts
    block_start = 0
    block_end = 0
    m = 0
    every = max(FOLD, 8 * (overall + 1))
    o_fold = FOLD
    fold = every
    i = 0
    while True:
        if i == block_end and block_end > block_start:  # settle the tie block that ends here
            o_u2, o_neg_below, o_block_pos, o_block_neg = settle(o_u2, o_neg_below, o_block_pos, o_block_neg)
            block_start = block_end
        if m >= fold or i == n:
            fold += every
            for slot in range(overall):
                fold_sums(sums, slot)
        if m >= o_fold or i == n:
            o_fold += FOLD
            o_loss, o_loss_comp, o_loss_part = fold_running(o_loss, o_loss_comp, o_loss_part)
            o_score, o_score_comp, o_score_part = fold_running(o_score, o_score_comp, o_score_part)
        while cut <= i:
            pos_cut[overall, next_cut] = o_pos
            neg_cut[overall, next_cut] = o_count - o_pos
            next_cut += 1
            cut = cuts[next_cut] if next_cut < n_cuts else n + 1
        while mark <= i:  # a slot's running sums at one of its bin edges
            slot, e = divmod(mark_order[next_mark], n_edges)
            if slot == overall:
                at_count[slot, e] = o_count
                at_pos[slot, e] = o_pos
                total, compensation = neumaier_step(o_score, o_score_comp, o_score_part)
            else:  # its count and positives come from its own run
                total, compensation = neumaier_step(sums[slot, SCORE], sums[slot, SCORE_COMP],
                                                    sums[slot, SCORE_PART])
            at_score[slot, e] = total + compensation
            next_mark += 1
            mark = marks[mark_order[next_mark]] if next_mark < marks.shape[0] else n + 1
        if i == n:
            break
        if i == next_tie:
            block_start, block_end, next_block, next_tie = enter_block(block_starts, block_ends, next_block, n)
        stop = min(cut, mark, next_tie, n)
        tied = i < block_end
        if tied:
            stop = min(stop, block_end)
        limit = min(fold, o_fold)
        while i < stop and m < limit:  # branch-free: a sample not drawn adds exact zeros (to group 0 if
            # it has no group)
            w = np.int64(counts[i])
            m += 1 if w != 0 else 0
            pw = w if sorted_labels[i] != 0 else 0
            term = w * loss_terms[i]
            weighted_score = w * np.float64(sorted_scores[i])
            slot = max(sorted_codes[i], 0)
            sums[slot, LOSS_PART] += term
            sums[slot, SCORE_PART] += weighted_score
            o_loss_part += term
            o_score_part += weighted_score
            o_count, o_pos, o_u2, o_neg_below, o_block_pos, o_block_neg = add_sample(
                o_count, o_pos, o_u2, o_neg_below, o_block_pos, o_block_neg, w, pw, tied)
            i += 1
    count[overall], positives[overall], u2[overall] = o_count, o_pos, o_u2
    loss[overall] = o_loss + o_loss_comp
    for slot in range(overall):
        loss[slot] = sums[slot, LOSS] + sums[slot, LOSS_COMP]


@inline_kernel
def _group(c, a, b, tally, stratum_scores, stratum_labels, run_starts, run_ends, next_run, stratum_cuts, edges,
           best_at, count, positives, u2, pos_cut, neg_cut, at_count, at_pos, pos_at, neg_at):
    # Group c over its stratum's run [a, b): its count, positives and AUC sums, and its counts at
    # the cuts, at its bin edges and at the best threshold (integers: exact in any order).
    n_cuts = stratum_cuts.shape[1]
    n_edges = edges.shape[1]
    next_cut = 0
    cut = a + stratum_cuts[c, 0] if n_cuts > 0 else b + 1
    mark_e = 0
    mark = first_above(stratum_scores, a, b, edges[c, 0]) if not np.isnan(edges[c, 0]) else b + 1
    next_tie = run_starts[next_run] if next_run < run_starts.shape[0] and run_starts[next_run] < b else b
    g_count = 0
    g_pos = 0
    g_u2 = 0
    g_neg_below = 0
    block_pos = 0
    block_neg = 0
    block_start = a
    block_end = a
    j = a
    while True:
        if j == block_end and block_end > block_start:  # settle the tie block that ends here
            g_u2, g_neg_below, block_pos, block_neg = settle(g_u2, g_neg_below, block_pos, block_neg)
            block_start = block_end
        while cut <= j:
            pos_cut[c, next_cut] = g_pos
            neg_cut[c, next_cut] = g_count - g_pos
            next_cut += 1
            cut = a + stratum_cuts[c, next_cut] if next_cut < n_cuts else b + 1
        while mark <= j:
            at_count[c, mark_e] = g_count
            at_pos[c, mark_e] = g_pos
            mark_e += 1
            mark = first_above(stratum_scores, a, b, edges[c, mark_e]) if mark_e < n_edges else b + 1
        if j == best_at:
            pos_at[c] = g_pos
            neg_at[c] = g_count - g_pos
        if j == b:
            break
        if j == next_tie:
            block_start, block_end, next_run, next_tie = enter_block(run_starts, run_ends, next_run, b)
        stop = min(cut, mark, next_tie, b)
        if best_at > j:
            stop = min(stop, best_at)
        tied = j < block_end
        if tied:
            stop = min(stop, block_end)
        while j < stop:  # branch-free: a sample not drawn adds exact zeros
            w = np.int64(tally[j])
            pw = w if stratum_labels[j] != 0 else 0
            g_count, g_pos, g_u2, g_neg_below, block_pos, block_neg = add_sample(
                g_count, g_pos, g_u2, g_neg_below, block_pos, block_neg, w, pw, tied)
            j += 1
    count[c], positives[c], u2[c] = g_count, g_pos, g_u2


@inline_kernel
def _best_f1(counts, sorted_scores, sorted_labels, block_starts, block_ends, n_pos, n_neg):
    # best_f1_sweep over the drawn samples: the threshold, where its block ends in the sorted order,
    # and the positives and negatives below that end. A block is a tie block or a single sample.
    n = sorted_scores.shape[0]
    best = -np.inf
    best_stop = 0
    best_value = np.nan
    pos_below = 0
    neg_below = 0
    best_pos = 0
    best_neg = 0
    next_block = np.int64(0)  # not a literal 0: enter_block would also compile for Literal[int](0)
    next_tie = block_starts[0] if block_starts.shape[0] > 0 else n
    retry = 0  # where to try skipping again
    i = 0
    while i < n:
        tp = n_pos - pos_below
        predicted = float(tp) + float(n_neg - neg_below)
        if best > 0.0 and i >= retry:
            # Skip the samples up to the next tie block while no threshold among them can beat the
            # best: there F1 <= 2 TP / (predicted + positives), with TP at most today's and predicted
            # at least today's less their summed counts (exact integers, so the bound is too).
            slack = f1_slack(tp, predicted, n_pos, best)
            stop = min(i + min(max(int(slack * 0.5), 0), SKIP_UP_TO), next_tie)
            retry = i + SKIP_FROM  # while F1 climbs, a few samples at a time
            if stop - i >= SKIP_FROM:
                drawn = 0
                drawn_pos = 0
                for j in range(i, stop):
                    v = np.int64(counts[j])
                    drawn += v
                    drawn_pos += v if sorted_labels[j] != 0 else 0
                if cannot_beat(tp, n_pos + n_neg - pos_below - neg_below - drawn, n_pos, best):
                    pos_below += drawn_pos
                    neg_below += drawn - drawn_pos
                    i = stop
                    continue
        end = i + 1  # one block: a tie block, or the single sample i
        if i == next_tie:
            _, end, next_block, next_tie = enter_block(block_starts, block_ends, next_block, n)
        block_pos = 0
        block_neg = 0
        for j in range(i, end):
            v = np.int64(counts[j])
            pw = v if sorted_labels[j] != 0 else 0
            block_pos += pw
            block_neg += v - pw
        # F1 at threshold sorted_scores[i] (predicted positive: score >= it) counts this block.
        if block_pos + block_neg > 0:
            f1 = f1_candidate(tp, n_neg - neg_below, n_pos, best)
            if f1 > best:
                best = f1
                best_stop = end
                best_value = np.float64(sorted_scores[i])
                best_pos = pos_below + block_pos
                best_neg = neg_below + block_neg
        pos_below += block_pos
        neg_below += block_neg
        i = end
    return best_value, best_stop, best_pos, best_neg
