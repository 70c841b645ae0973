"""Samples as 64-bit records for a sort across machines (the Dask backend's sort by score).

A record holds what the sorted passes need of a sample: the score's order-preserving key (the bits of
:func:`.sorting.float_key`), the label (bit 0 of the payload) and each grouping's ``code + 1`` (0 for
a negative code) in as many bits as that grouping's largest code needs, at ``code_shifts[k]``.

- **One word** (a float32 score and a payload of up to 32 bits): ``key << pay_bits | payload`` in one
  uint64, so that the words' unsigned order is the scores' order (equal scores then by label and
  codes), and a sort of the words is the sort of the samples.
- **Two words** (a float64 score, or a wider payload): the key in one uint64, the payload in a
  parallel uint32 or uint64.

:func:`route_records` packs one partition's samples and groups them by score range (the ranges'
lower bounds are scores, so equal scores always share a range); :func:`unpack_records` turns the
records of a range back into score bits, labels and codes.
"""
import numpy as np

from ._jit import inline_kernel, kernel
from .sorting import float_key


@inline_kernel
def _score_bits(key, wide):
    """The bits of the float whose key (:func:`.sorting.float_key`) this is (-0.0 comes back as 0.0)."""
    sign = np.uint64(1) << np.uint64(63 if wide else 31)
    full = (sign << np.uint64(1)) - np.uint64(1)  # all ones (wraps for 64 bits)
    return key ^ sign if key & sign else full ^ key


#: Buckets of the directory that :func:`route_records` finds a sample's range from (a 32 KiB table, in cache).
DIRECTORY = 4096


@inline_kernel
def _range_directory(bound_keys):
    """A directory of the keys between the first and the last bound, in :data:`DIRECTORY` buckets of
    ``2**shift`` keys: per bucket, how many bounds are at most its lowest key. Returns (table, shift)."""
    n_bounds = bound_keys.shape[0]
    shift = 0
    if n_bounds > 0:
        while ((bound_keys[n_bounds - 1] - bound_keys[0]) >> np.uint64(shift)) >= DIRECTORY:
            shift += 1
    table = np.empty(DIRECTORY, np.int64)
    r = 0
    for b in range(DIRECTORY):
        lowest = bound_keys[0] + (np.uint64(b) << np.uint64(shift)) if n_bounds > 0 else np.uint64(0)
        while r < n_bounds and bound_keys[r] <= lowest:
            r += 1
        table[b] = r
    return table, np.uint64(shift)


@kernel
def route_records(score_bits, labels, codes, code_shifts, bounds, pay_bits, ranges, first, words, pays, n_groups,
                  tally, ends):
    """Pack each sample of ``score_bits`` (uint32 or uint64 bits of float32 or float64 scores) into a
    record and group the records by score range, in sample order within a range; on the way, count
    each slot's negatives and positives per range and find each slot's lowest and highest score key.

    Parameters
    ----------
    labels : uint8 (n,), 0 or 1
    codes : int (K, n), ``-1 <= code < 2**(width of its field) - 1``
    code_shifts : uint64 (K,), the bit of each grouping's field in the payload
    bounds : array (R - 1,) of the scores' dtype's bits, ascending: range ``r`` holds the scores
        ``bounds[r - 1] <= score < bounds[r]``
    pay_bits : the payload's width; one word per record when ``pays`` is empty, else two
    ranges : int32 (n,), scratch (each sample's range)
    first : int64 (R + 1,), out: range ``r``'s records are ``words[first[r]:first[r + 1]]``
    words : uint64 (n,), out: the records (one word), or their keys (two words)
    pays : uint32 or uint64 (n,) or (0,), out: the payloads (two words)
    n_groups : int64 (K,), groups per grouping (the slot layout of ``kernels/__init__.py``)
    tally : int64 (R, n_slots, 2), out: per range and slot, negatives and positives
    ends : uint64 (n_slots, 2), out: per slot, the lowest and highest key (:func:`key_scores`);
        ``2**64 - 1`` and 0 for an empty slot
    """
    n = score_bits.shape[0]
    n_groupings = codes.shape[0]
    wide = score_bits.itemsize == 8
    two_words = pays.shape[0] > 0
    at = np.uint64(pay_bits)
    bound_keys = np.empty(bounds.shape[0], np.uint64)
    for r in range(bounds.shape[0]):
        bound_keys[r] = float_key(np.uint64(bounds[r]), wide)
    table, shift = _range_directory(bound_keys)
    first[:] = 0
    tally[:] = 0
    ends[:, 0] = np.uint64(0xFFFFFFFFFFFFFFFF)
    ends[:, 1] = 0
    offsets = np.empty(n_groupings, np.int64)
    overall = np.empty(n_groupings, np.int64)
    start = 0
    for k in range(n_groupings):
        offsets[k] = start
        overall[k] = start + n_groups[k]
        start += n_groups[k] + 1
    n_bounds = bound_keys.shape[0]
    lowest = bound_keys[0] if n_bounds > 0 else np.uint64(0)
    highest = bound_keys[n_bounds - 1] if n_bounds > 0 else np.uint64(0)
    # Each sample's range: how many bounds are at most its key, from the directory, then a step past
    # each bound of its bucket at most the key (one or none, for bounds at the scores' quantiles).
    # Written out here: as an inlined function taking the arrays (or a binary search over them), the
    # reference counting of its array arguments took 20-36 ns a row (0.7 ns here).
    for i in range(n):
        key = float_key(np.uint64(score_bits[i]), wide)
        if n_bounds == 0 or key < lowest:
            r = 0
        elif key >= highest:
            r = n_bounds
        else:
            r = table[np.intp((key - lowest) >> shift)]
            while bound_keys[r] <= key:  # r < n_bounds: the last bound is above the key
                r += 1
        ranges[i] = r
        first[r + 1] += 1
    for r in range(first.shape[0] - 1):
        first[r + 1] += first[r]
    next_free = first[:-1].copy()
    for i in range(n):
        label = labels[i]
        payload = np.uint64(label)
        key = float_key(np.uint64(score_bits[i]), wide)
        r = ranges[i]
        for k in range(n_groupings):
            code = max(np.int64(codes[k, i]), -1)
            payload |= np.uint64(code + 1) << code_shifts[k]
            if code >= 0:  # the group's slot (its grouping's "all" slot is their sum: below)
                slot = offsets[k] + code
                tally[r, slot, label] += 1
                if key < ends[slot, 0]:
                    ends[slot, 0] = key
                if key > ends[slot, 1]:
                    ends[slot, 1] = key
        position = next_free[r]
        next_free[r] = position + 1
        if two_words:
            words[position] = key
            pays[position] = payload
        else:
            words[position] = (key << at) | payload
    for k in range(n_groupings):  # each grouping's "all" slot from its groups'
        for slot in range(offsets[k], overall[k]):
            for r in range(tally.shape[0]):
                tally[r, overall[k], 0] += tally[r, slot, 0]
                tally[r, overall[k], 1] += tally[r, slot, 1]
            ends[overall[k], 0] = min(ends[overall[k], 0], ends[slot, 0])
            ends[overall[k], 1] = max(ends[overall[k], 1], ends[slot, 1])


@kernel
def unpack_records(words, pays, pay_bits, code_shifts, out_bits, out_labels, out_codes):
    """The score bits, labels and codes of records (:func:`route_records`), in the records' order.

    ``out_bits`` (n,) uint32 or uint64 (float32 or float64 scores), ``out_labels`` (n,) uint8,
    ``out_codes`` (K, n) of any signed integer type (a field of 0 comes out as -1)."""
    n = words.shape[0]
    n_groupings = out_codes.shape[0]
    wide = out_bits.itemsize == 8
    two_words = pays.shape[0] > 0
    at = np.uint64(pay_bits)
    below = (np.uint64(1) << at) - np.uint64(1) if pay_bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    masks = np.empty(n_groupings, np.uint64)
    for k in range(n_groupings):
        end = code_shifts[k + 1] if k + 1 < n_groupings else at
        masks[k] = (np.uint64(1) << (end - code_shifts[k])) - np.uint64(1)
    one = np.uint64(1)
    for i in range(n):
        word = words[i]
        if two_words:
            key = word
            payload = np.uint64(pays[i])
        else:
            key = word >> at
            payload = word & below
        out_bits[i] = _score_bits(key, wide)
        out_labels[i] = np.uint8(payload & one)
        for k in range(n_groupings):
            out_codes[k, i] = np.int64((payload >> code_shifts[k]) & masks[k]) - 1


def key_scores(keys, dtype):
    """The scores (float64, of ``dtype`` float32 or float64) whose keys (:func:`.sorting.float_key`,
    uint64) these are; -0.0 comes back as 0.0, as from :func:`unpack_records`."""
    keys = np.asarray(keys, np.uint64)
    wide = np.dtype(dtype).itemsize == 8
    sign = np.uint64(1) << np.uint64(63 if wide else 31)
    full = np.uint64(0xFFFFFFFFFFFFFFFF if wide else 0xFFFFFFFF)
    bits = np.where(keys & sign, keys ^ sign, full ^ keys)
    return bits.astype(np.uint64 if wide else np.uint32).view(dtype).astype(np.float64)
