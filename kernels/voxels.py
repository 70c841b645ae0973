"""Voxel kernels: exact per-group AUC, best-F1 sweep, ECE and BCE of billions of scores, by buckets.

A score's *key* is its bit pattern (float32 or float64; the sign bit cleared, so -0.0 keys as 0.0),
or the value itself for uint8 maps: for scores in [0, 1] the unsigned order of the keys is the
order of the scores. ``key >> low_bits`` is the score's *bucket*; a *record* is
``(key & low_mask) << payload_bits | cell << 1 | label``, where a *cell* is one combination of the
group codes of every grouping (codes are per image, so a record carries its image's cell, not
its codes). Records are staged per bucket (:func:`encode_map`, :func:`stage_by_bucket`), then
each bucket is sorted and swept in score order (:func:`sweep_buckets`), carrying the counts of the
buckets before it, so that the sweep sees exactly the ascending order of one global sort.

Modes: 0 float32 bits (uint32 keys), 1 uint8 value ``v`` meaning ``v / 255``, 2 float64 bits.
"""
import numpy as np

from ._jit import inline_kernel, kernel
from ._slots import neumaier_add, neumaier_step
from ._statistics import credit, f1_candidate

FLOAT32, UINT8, FLOAT64 = 0, 1, 2
#: Most lanes (two per slot) added per record at once; more slots go through each record's cell.
_MAX_LANES = 64
#: Buckets from this many records are ordered in two counting passes (each part fits in cache).
_TWO_STEPS = 1 << 17
#: Records added into int32 lanes before they move to the int64 counts.
_PIECE = 1 << 30


@inline_kernel
def _key_rule(mode):
    """``(mask, limit)``: a score's key is its bits ``& mask``; it is a probability (within [0, 1],
    not NaN; -0.0 allowed) when the key is at most ``limit`` and the sign bit is clear or the key 0."""
    if mode == 1:
        return np.uint64(0xFF), np.uint64(0xFF)
    if mode == 0:
        return np.uint64(0x7FFFFFFF), np.uint64(0x3F800000)
    return np.uint64(0x7FFFFFFFFFFFFFFF), np.uint64(0x3FF0000000000000)


@inline_kernel
def _probability_key(bits, i, mask, limit):
    """Voxel ``i``'s key under :func:`_key_rule`'s ``mask`` and ``limit``, and whether its score is a
    probability."""
    raw = np.uint64(bits[i])
    key = raw & mask
    return key, key <= limit and (raw == key or key == 0)


@inline_kernel
def _record_layout(mode, low_bits, payload, payload_bits, bucket_lo, bucket_hi):
    """The constants of a map's records: ``(low_mask, shift, pshift, lo, span, mask, limit, tag)``.
    A valid voxel's key goes to bucket ``(key >> shift) - lo`` (kept when below ``span``), and its
    record is ``((key & low_mask) << pshift) | tag | label``; ``mask, limit`` are :func:`_key_rule`'s."""
    mask, limit = _key_rule(mode)
    return (np.uint64((1 << low_bits) - 1), np.uint64(low_bits), np.uint64(payload_bits), np.uint64(bucket_lo),
            np.uint64(bucket_hi - bucket_lo), mask, limit, np.uint64(payload))


@inline_kernel
def _store_totals(totals, count, positives, smallest, largest):
    """Add a map's voxels and positives to ``totals`` and widen its key range."""
    totals[0] += count
    totals[1] += positives
    totals[2] = np.int64(smallest)
    if count:
        totals[3] = np.int64(largest)


@kernel
def encode_map(bits, truth, roi, mode, low_bits, payload, payload_bits, bucket_lo, bucket_hi, stage_bucket,
               records, position, totals):
    """Stage the records of one map whose bucket lies in ``[bucket_lo, bucket_hi)``: record and
    bucket of the next such voxel to ``records[position[0]]`` and ``stage_bucket[position[0]]``
    (both must have room for every voxel of the map), sorted into buckets later
    (:func:`stage_by_bucket`); ``position[0]`` moves on.

    Parameters
    ----------
    bits : uint32 (mode 0), uint8 (mode 1) or uint64 (mode 2) array of shape (n,)
    truth : uint8 array of shape (n,); nonzero = positive
    roi : uint8 array of shape (n,) (nonzero = counted) or of shape (0,) (every voxel counted)
    payload : int, ``cell << 1``
    stage_bucket : uint16 array; records : uint32 or uint64 array; position : int64 array of shape (1,)
    totals : int64 array of shape (5,), updated over every voxel in the ROI (any bucket):
        voxels, positives, smallest key, largest key, and the first invalid voxel (-1 if none)
    """
    low_mask, shift, pshift, lo, span, mask, limit, tag = _record_layout(mode, low_bits, payload, payload_bits,
                                                                         bucket_lo, bucket_hi)
    use_roi = roi.shape[0] > 0
    count = positives = 0
    smallest, largest = np.uint64(totals[2]), np.uint64(max(totals[3], 0))
    fill = position[0]
    for i in range(bits.shape[0]):
        if use_roi and roi[i] == 0:
            continue
        key, valid = _probability_key(bits, i, mask, limit)
        if not valid:
            if totals[4] < 0:
                totals[4] = i
            continue
        label = np.uint64(truth[i] != 0)
        count += 1
        positives += label
        smallest = min(smallest, key)
        largest = max(largest, key)
        bucket = (key >> shift) - lo  # wraps around below the window
        stage_bucket[fill] = np.uint16(bucket)  # written always, kept when in the window
        records[fill] = ((key & low_mask) << pshift) | tag | label
        fill += bucket < span
    position[0] = fill
    _store_totals(totals, count, positives, smallest, largest)


@kernel
def count_map(bits, truth, roi, mode, low_bits, histogram, totals):
    """Add the voxels of one map (within the ROI) to ``histogram`` (int64, one count per bucket) and
    to ``totals`` (as :func:`encode_map`'s), so that :func:`scatter_map` need not check them."""
    shift = np.uint64(low_bits)
    use_roi = roi.shape[0] > 0
    mask, limit = _key_rule(mode)
    count = positives = 0
    smallest, largest = np.uint64(totals[2]), np.uint64(max(totals[3], 0))
    for i in range(bits.shape[0]):
        if use_roi and roi[i] == 0:
            continue
        key, valid = _probability_key(bits, i, mask, limit)
        if not valid:
            if totals[4] < 0:
                totals[4] = i
            continue
        count += 1
        positives += truth[i] != 0
        smallest = min(smallest, key)
        largest = max(largest, key)
        histogram[np.intp(key >> shift)] += 1
    _store_totals(totals, count, positives, smallest, largest)


@kernel
def scatter_map(bits, truth, roi, mode, low_bits, payload, payload_bits, bucket_lo, bucket_hi, records, position):
    """Write the record of each valid voxel of one map whose bucket ``b`` lies in ``[bucket_lo,
    bucket_hi)`` to ``records[position[b - bucket_lo]]``, which moves on; ``position`` comes from a
    counting pass (:func:`count_map`) and a prefix sum, so that records land in their buckets in
    one scatter."""
    low_mask, shift, pshift, lo, span, mask, limit, tag = _record_layout(mode, low_bits, payload, payload_bits,
                                                                         bucket_lo, bucket_hi)
    use_roi = roi.shape[0] > 0
    for i in range(bits.shape[0]):
        if use_roi and roi[i] == 0:
            continue
        raw = np.uint64(bits[i])
        key = raw & mask
        bucket = (key >> shift) - lo  # wraps around below the window
        if not ((bucket < span) & (key <= limit) & ((raw == key) | (key == 0))):  # one branch
            continue
        b = np.intp(bucket)
        records[position[b]] = ((key & low_mask) << pshift) | tag | np.uint64(truth[i] != 0)
        position[b] += 1


@kernel
def count_buckets(bits, roi, mode, low_bits, histogram):
    """Add the voxels of one map (within the ROI) to ``histogram`` (int64, one count per bucket)."""
    shift = np.uint64(low_bits)
    use_roi = roi.shape[0] > 0
    mask, limit = _key_rule(mode)
    for i in range(bits.shape[0]):
        if use_roi and roi[i] == 0:
            continue
        key, valid = _probability_key(bits, i, mask, limit)
        if valid:
            histogram[np.intp(key >> shift)] += 1


@kernel
def stage_by_bucket(stage_bucket, stage_record, fill, n_buckets, arena, offset):
    """Counting sort of the first ``fill`` staged records by bucket, into ``arena[offset:offset + fill]``.

    Returns
    -------
    starts : int64 array of shape (n_buckets + 1,); bucket ``b`` is ``arena[starts[b]:starts[b + 1]]``
    """
    starts = np.zeros(n_buckets + 1, np.int64)
    starts[0] = offset
    for i in range(fill):
        starts[np.intp(stage_bucket[i]) + 1] += 1
    for b in range(n_buckets):
        starts[b + 1] += starts[b]
    position = starts[:-1].copy()
    for i in range(fill):
        b = np.intp(stage_bucket[i])
        arena[position[b]] = stage_record[i]
        position[b] += 1
    return starts


@inline_kernel
def _value(key, mode, word32, float32, word64, float64):
    if mode == 1:
        return float(key) / 255.0
    if mode == 0:
        word32[0] = np.uint32(key)
        return np.float64(float32[0])
    word64[0] = key
    return float64[0]


@kernel
def cell_counts(records, chunk_starts, first, last, payload_bits, n_cells):
    """Negatives and positives of each cell in buckets ``first`` to ``last - 1``: int64 (n_cells, 2)."""
    out = np.zeros((n_cells, 2), np.int64)
    pmask = np.uint64((1 << payload_bits) - 1)
    for c in range(chunk_starts.shape[0]):
        for i in range(chunk_starts[c, first], chunk_starts[c, last]):
            payload = np.intp(records[i] & pmask)
            out[payload >> 1, payload & 1] += 1
    return out


@inline_kernel
def _take(positives, negatives, index):
    """The counts at ``index``, which are reset to zero."""
    p = positives[index]
    q = negatives[index]
    positives[index] = 0
    negatives[index] = 0
    return p, q


@inline_kernel
def _scale(high, mode, word32, float32, word64, float64):
    """``(base, unit)`` of the bucket whose keys are ``high | low``: the value of key ``high | low``
    is ``(base + low) * unit`` exactly (float32: one exponent per bucket; uint8: ``v / 255``), so
    that score sums within the bucket are integer sums."""
    if mode == 1:
        return np.int64(high), 1.0 / 255.0
    value = _value(high, mode, word32, float32, word64, float64)
    unit = _value(high | np.uint64(1), mode, word32, float32, word64, float64) - value
    return np.int64(value / unit), unit


@inline_kernel
def _scaled(total, mode, unit):
    """The score sum whose integer form is ``total`` (see :func:`_scale`), rounded once."""
    if mode == 1:
        return float(total) / 255.0
    return float(total) * unit


@kernel
def sweep_buckets(records, chunk_starts, first, last, bucket_lo, mode, low_bits, payload_bits, cell_slots,
                  all_slot, group_overall, group_slots, slot_cells, event_value, event_slot, fixed, counts, at_or_below,
                  slot_sums, snap_counts, snap_sums, cursor, best):
    """Sweep buckets ``first`` to ``last - 1`` of one window in ascending score order, updating the
    carried state in place (the counts below must already include every earlier bucket).

    Per distinct score the records add up per slot: a row of int32 lanes per record (two per slot
    of any cell) when the score has many records and the slots are few, else through the slots of
    each record's cell.
    Per slot present: the Mann-Whitney U, the counts below and the BCE sum; score sums are exact
    integers within a bucket (float32 and uint8 maps; see :func:`_scale`), added once per bucket.
    ECE bins are counts and score sums between two of the slot's bin edges, taken as snapshots
    when the sweep passes an edge (an *event*).

    Parameters
    ----------
    records : uint32 or uint64 array; chunk ``c`` holds bucket ``b`` (of this window) at
        ``records[chunk_starts[c, b]:chunk_starts[c, b + 1]]`` (see :func:`stage_by_bucket`)
    bucket_lo : int, the first bucket of the window (keys are ``(bucket_lo + b) << low_bits | low``)
    cell_slots : int64 array of shape (n_cells, m); the distinct slots of each cell (-1 after the last),
        but for ``all_slot``
    all_slot : int, the slot of every cell (its counts are the run's)
    group_overall : int64 array of shape (K,); the slot of all samples of each grouping
    group_slots : (starts, slots), int64 arrays of shape (K + 1,) and (total,): the slots of each grouping
    slot_cells : (slots, starts, cells), int64 arrays of shape (S,), (S + 1,) and (total,): the slots
        of ``cell_slots`` and the cells of each
    event_value, event_slot : float64 and int64 arrays of shape (E,), by ascending value: the ECE bin
        edges of the slots; ``snap_*[e]`` is written when the sweep passes ``event_value[e]``
    fixed : float64 array of shape (F,), ascending; thresholds whose counts above are wanted
    counts : int64 array of shape (n_slots, 5), state: positives below, negatives below, twice the
        Mann-Whitney U, positives and negatives at or below the best-F1 threshold of the slot's grouping
    at_or_below : int64 array of shape (F, n_slots, 2): positives and negatives scoring at or below
        ``fixed[f]``, written when the sweep passes ``fixed[f]``
    slot_sums : float64 array of shape (4, n_slots): compensated sums of the scores (and their
        compensations), then of the BCE terms (and theirs), of each slot
    snap_counts : int64 array of shape (E, 2); snap_sums : float64 array of shape (E, 2): at each
        event, the slot's positives and negatives below and its compensated score sum below
    cursor : int64 array of shape (2,): events passed, fixed thresholds passed
    best : float64 array of shape (K, 4): best F1, its threshold, positives, negatives of the grouping
    """
    n_chunks = chunk_starts.shape[0]
    n_cells, width = cell_slots.shape
    n_slots = counts.shape[0]
    n_groupings = group_overall.shape[0]
    n_fixed = fixed.shape[0]
    n_events = event_value.shape[0]
    group_start, group_list = group_slots
    spread_slots, cells_start, cells_list = slot_cells
    n_spread = spread_slots.shape[0]
    score_sum = slot_sums[0]
    score_comp = slot_sums[1]
    loss_sum = slot_sums[2]
    loss_comp = slot_sums[3]
    integer_sums = mode != 2
    pshift = np.uint64(payload_bits)
    pmask = np.uint64((1 << payload_bits) - 1)
    word32 = np.empty(1, np.uint32)
    float32 = word32.view(np.float32)
    word64 = np.empty(1, np.uint64)
    float64 = word64.view(np.float64)
    spare = n_slots  # a slot of no sample: pads the rows of cell_slots
    slot_pos = np.zeros(n_slots + 1, np.int64)
    slot_neg = np.zeros(n_slots + 1, np.int64)
    slot_int = np.zeros(n_slots, np.int64)  # this bucket's score sum of each slot, as an integer
    touched_slots = np.empty(n_slots + 2, np.int64)
    seen = np.zeros(n_slots + 1, np.int64)  # the last run that touched each slot
    stamp = 0
    width += 1
    padded = np.empty((n_cells, width), np.int64)  # the slots of each cell, the all slot first
    spread = np.empty(n_spread + 1, np.int64)  # the slots of any cell, the all slot first
    spread[0] = all_slot
    spread[1:] = spread_slots
    # table[payload, lanes]: 1 in the lane of the payload's label in each slot of its cell
    n_lanes = (2 * n_spread + 9) // 8 * 8
    table = np.zeros((2 * n_cells, n_lanes if n_lanes <= _MAX_LANES else 0), np.int32)
    lanes = np.zeros(n_lanes, np.int32)
    for c in range(n_cells):
        padded[c, 0] = all_slot
        for j in range(1, width):
            padded[c, j] = cell_slots[c, j - 1] if cell_slots[c, j - 1] >= 0 else spare
    for t in range(n_spread + 1 if table.shape[1] else 0):
        for j in range(cells_start[t - 1], cells_start[t]) if t else range(n_cells):
            c = cells_list[j] if t else j
            table[2 * c + 1, 2 * t] = 1
            table[2 * c, 2 * t + 1] = 1
    n_spread += 1
    improved = np.zeros(n_groupings, np.bool_)
    largest = 0
    for b in range(first, last):
        size = 0
        for c in range(n_chunks):
            size += chunk_starts[c, b + 1] - chunk_starts[c, b]
        largest = max(largest, size)
    if largest == 0:
        return
    gathered = np.empty(largest if n_chunks > 1 else 0, records.dtype)
    n_low = 1 << low_bits
    counting = 0 < low_bits <= 16
    payloads = np.empty(largest, np.uint16)  # a bucket's payloads (cell << 1 | label) in score order
    run_capacity = n_low if counting else (1 if low_bits == 0 else largest)
    run_low = np.empty(run_capacity, np.uint64)  # a bucket's distinct low key bits, ascending
    run_start = np.empty(run_capacity + 1, np.int64)  # and where their payloads start
    low_counts = np.zeros(n_low + 1 if counting else 1, np.int64)
    half = low_bits // 2
    n_parts = 1 << (low_bits - half)
    part_shift = np.uint64(payload_bits + half)
    part_fill = np.empty(n_parts, np.int64)
    parted = np.empty(largest if counting and largest >= _TWO_STEPS else 0, records.dtype)
    for b in range(first, last):
        if n_chunks == 1:  # the bucket lies in one piece: no copy
            size = chunk_starts[0, b + 1] - chunk_starts[0, b]
            bucket = records[chunk_starts[0, b]:chunk_starts[0, b + 1]]
        else:
            size = 0
            for c in range(n_chunks):
                start, stop = chunk_starts[c, b], chunk_starts[c, b + 1]
                gathered[size:size + stop - start] = records[start:stop]
                size += stop - start
            bucket = gathered[:size]
        if size == 0:
            continue
        # Order the bucket: its runs of equal keys, and their payloads.
        n_runs = 0
        if low_bits == 0:  # one key per bucket
            for i in range(size):
                payloads[i] = np.uint16(bucket[i] & pmask)
            run_low[0] = 0
            run_start[0] = 0
            n_runs = 1
        elif counting and size * 8 >= n_low:  # counting sort on the low key bits
            low_counts[:] = 0
            for i in range(size):
                low_counts[np.intp(bucket[i] >> pshift) + 1] += 1
            for v in range(n_low):
                if low_counts[v + 1]:
                    run_low[n_runs] = v
                    run_start[n_runs] = low_counts[v]
                    n_runs += 1
                low_counts[v + 1] += low_counts[v]
            if size < _TWO_STEPS:
                for i in range(size):
                    v = np.intp(bucket[i] >> pshift)
                    payloads[low_counts[v]] = np.uint16(bucket[i] & pmask)
                    low_counts[v] += 1
            else:  # a large bucket: first by the upper half of the low bits, then each part in cache
                for h in range(n_parts):
                    part_fill[h] = low_counts[h << half]
                for i in range(size):
                    h = np.intp(bucket[i] >> part_shift)
                    parted[part_fill[h]] = bucket[i]
                    part_fill[h] += 1
                for i in range(size):
                    v = np.intp(parted[i] >> pshift)
                    payloads[low_counts[v]] = np.uint16(parted[i] & pmask)
                    low_counts[v] += 1
        else:
            sorted_records = np.sort(bucket)
            previous = ~np.uint64(0)
            for i in range(size):
                low = np.uint64(sorted_records[i] >> pshift)
                if low != previous:
                    run_low[n_runs] = low
                    run_start[n_runs] = i
                    n_runs += 1
                    previous = low
                payloads[i] = np.uint16(sorted_records[i] & pmask)
        run_start[n_runs] = size
        high = np.uint64(bucket_lo + b) << np.uint64(low_bits)
        base, unit = _scale(high, mode, word32, float32, word64, float64)
        for r in range(n_runs):
            start, stop = run_start[r], run_start[r + 1]
            if (stop - start) * width * 2 >= n_spread and n_lanes <= _MAX_LANES:
                # many records: add up every slot's counts at once (a row of lanes per payload)
                for piece in range(start, stop, _PIECE):
                    for i in range(piece, min(stop, piece + _PIECE)):
                        payload = np.intp(payloads[i])
                        for j in range(n_lanes):
                            lanes[j] += table[payload, j]
                    for t in range(n_spread):
                        s = spread[t]
                        slot_pos[s] += lanes[2 * t]
                        slot_neg[s] += lanes[2 * t + 1]
                    lanes[:] = 0
                n_hit = n_spread
                touched_slots[:n_spread] = spread
            else:  # few: through the slots of each record's cell (``spare`` pads the rows)
                stamp += 1
                n_hit = 0
                for i in range(start, stop):
                    payload = np.intp(payloads[i])
                    label = payload & 1
                    cell = payload >> 1
                    for j in range(width):
                        s = padded[cell, j]
                        touched_slots[n_hit] = s
                        n_hit += seen[s] != stamp
                        seen[s] = stamp
                        slot_pos[s] += label
                        slot_neg[s] += 1 - label
            low = run_low[r]
            value = _value(high | np.uint64(low), mode, word32, float32, word64, float64)
            while cursor[1] < n_fixed and value > fixed[cursor[1]]:  # passing a fixed threshold
                f = cursor[1]
                for s in range(n_slots):
                    at_or_below[f, s, 0] = counts[s, 0]
                    at_or_below[f, s, 1] = counts[s, 1]
                cursor[1] = f + 1
            while cursor[0] < n_events and value > event_value[cursor[0]]:  # passing an ECE bin edge
                e = cursor[0]
                s = event_slot[e]
                snap_counts[e, 0] = counts[s, 0]
                snap_counts[e, 1] = counts[s, 1]
                total, compensation = neumaier_step(score_sum[s], score_comp[s],
                                                    _scaled(slot_int[s], mode, unit))
                snap_sums[e, 0] = total
                snap_sums[e, 1] = compensation
                cursor[0] = e + 1
            log_p = -max(np.log(value), -100.0) if slot_pos[all_slot] else 0.0
            log_q = -max(np.log(1.0 - value), -100.0) if slot_neg[all_slot] else 0.0
            # F1 at this threshold (predicted positive: score >= value), from the counts below it.
            f1 = 0.0
            for k in range(n_groupings):
                improved[k] = False
                overall = group_overall[k]
                if slot_pos[overall] + slot_neg[overall] == 0:
                    continue
                if k == 0 or overall != group_overall[k - 1]:  # groupings of the same samples: one F1
                    f1 = f1_candidate(best[k, 2] - counts[overall, 0], best[k, 3] - counts[overall, 1], best[k, 2],
                                      best[k, 0])
                if f1 > best[k, 0]:
                    best[k, 0] = f1
                    best[k, 1] = value
                    improved[k] = True
            key = base + np.int64(low)
            for t in range(n_hit):
                s = touched_slots[t]
                p, q = _take(slot_pos, slot_neg, s)
                if s == spare:
                    continue
                counts[s, 2], counts[s, 1] = credit(counts[s, 2], counts[s, 1], p, q)
                counts[s, 0] += p
                if integer_sums:
                    slot_int[s] += (p + q) * key
                else:
                    neumaier_add(score_sum, score_comp, s, float(p + q) * value)
                neumaier_add(loss_sum, loss_comp, s, float(p) * log_p + float(q) * log_q)
            for k in range(n_groupings):
                if improved[k]:
                    for j in range(group_start[k], group_start[k + 1]):
                        s = group_list[j]
                        counts[s, 3] = counts[s, 0]
                        counts[s, 4] = counts[s, 1]
        if integer_sums:  # the bucket's score sums, rounded once
            for s in range(n_slots):
                if slot_int[s]:
                    neumaier_add(score_sum, score_comp, s, _scaled(slot_int[s], mode, unit))
                    slot_int[s] = 0
