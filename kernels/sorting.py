"""Radix sort of scores that carries each sample's payload (label, group codes) with its key.

Least-significant-digit radix sort on the full bits of the score: 64-bit keys for float64, 32-bit
keys for float32, so no tie fix-up is needed. The usual sign-flip transform makes the keys' unsigned
order the order of the floats, negative scores and subnormals included; -0.0 is keyed as 0.0, so
that equal scores keep their input order (the sort is stable, as ``np.argsort(kind="stable")``).

Each sample travels as a 16-byte record, its key beside a 64-bit payload (the label and up to seven
int8 codes packed byte by byte, or the sample index), so that nothing is read at random after the
sort.
"""
import numpy as np

from ._config import kernel

_BITS = 11  # digit width: 2048 buckets, whose write positions stay in cache
_RADIX = 1 << _BITS


@kernel
def _float_key(bits, wide):
    # Unsigned key with the order of the float whose bits these are (-0.0 keyed as +0.0).
    if wide:
        sign = np.uint64(1) << np.uint64(63)
        full = np.uint64(0xFFFFFFFFFFFFFFFF)
    else:
        sign = np.uint64(1) << np.uint64(31)
        full = np.uint64(0xFFFFFFFF)
    if bits == sign:
        bits = np.uint64(0)
    if bits & sign:
        return full ^ bits
    return bits | sign


@kernel
def _float_bits(key, wide):
    # Inverse of _float_key.
    if wide:
        sign = np.uint64(1) << np.uint64(63)
        full = np.uint64(0xFFFFFFFFFFFFFFFF)
    else:
        sign = np.uint64(1) << np.uint64(31)
        full = np.uint64(0xFFFFFFFF)
    if key & sign:
        return key ^ sign
    return full ^ key


@kernel
def _radix_passes(records, counts, n_digits):
    # Stable scatter of the (n, 2) records by each digit that differs between keys; returns the
    # array holding the result (``records`` or the other buffer).
    n = records.shape[0]
    mask = np.uint64(_RADIX - 1)
    target = np.empty_like(records)
    source = records
    for d in range(n_digits):
        skip = False
        for b in range(_RADIX):
            if counts[d, b] == n:
                skip = True
                break
        if skip:
            continue
        starts = np.empty(_RADIX, np.int64)
        total = 0
        for b in range(_RADIX):
            starts[b] = total
            total += counts[d, b]
        shift = np.uint64(d * _BITS)
        for i in range(n):
            key = source[i, 0]
            b = np.intp((key >> shift) & mask)
            position = starts[b]
            target[position, 0] = key
            target[position, 1] = source[i, 1]
            starts[b] = position + 1
        source, target = target, source
    return source


@kernel
def sort_carrying(score_bits, labels, codes):
    """Sort the scores ascending, carrying each sample's label and int8 codes with it.

    Parameters
    ----------
    score_bits : uint32 or uint64 array of shape (n,)
        The bits of float32 or float64 scores (``scores.view(np.uint32)`` / ``np.uint64``).
    labels : uint8 array of shape (n,)
    codes : int8 array of shape (K, n), K <= 7

    Returns
    -------
    sorted_bits : array of shape (n,), the bits of the sorted scores (-0.0 becomes 0.0)
    sorted_labels : uint8 array of shape (n,)
    sorted_codes : int8 array of shape (K, n)
        In the order of ``np.argsort(scores, kind="stable")``.
    """
    n = score_bits.shape[0]
    n_groupings = codes.shape[0]
    wide = score_bits.itemsize == 8
    bits = score_bits
    n_digits = (score_bits.itemsize * 8 + _BITS - 1) // _BITS
    mask = np.uint64(_RADIX - 1)
    records = np.empty((n, 2), np.uint64)
    counts = np.zeros((n_digits, _RADIX), np.int64)
    for i in range(n):
        key = _float_key(np.uint64(bits[i]), wide)
        payload = np.uint64(labels[i])
        for k in range(n_groupings):
            payload |= np.uint64(np.uint8(codes[k, i])) << np.uint64(8 * (k + 1))
        records[i, 0] = key
        records[i, 1] = payload
        for d in range(n_digits):
            counts[d, np.intp((key >> np.uint64(d * _BITS)) & mask)] += 1
    records = _radix_passes(records, counts, n_digits)
    out_bits = np.empty(n, score_bits.dtype)
    sorted_labels = np.empty(n, np.uint8)
    sorted_codes = np.empty((n_groupings, n), np.int8)
    byte = np.uint64(0xFF)
    for i in range(n):
        out_bits[i] = _float_bits(records[i, 0], wide)
        payload = records[i, 1]
        sorted_labels[i] = np.uint8(payload & byte)
        for k in range(n_groupings):
            sorted_codes[k, i] = np.int8(np.uint8((payload >> np.uint64(8 * (k + 1))) & byte))
    return out_bits, sorted_labels, sorted_codes


@kernel
def sort_order(score_bits):
    """Ascending order of the scores (given by their bits, as in :func:`sort_carrying`) and the sorted
    scores' bits, by the same radix sort carrying each
    sample's index (for payloads that do not fit in 64 bits: weights, wide codes).

    Returns
    -------
    order : intp array of shape (n,), equal to ``np.argsort(scores, kind="stable")``
    sorted_bits : array of shape (n,), the bits of the sorted scores (-0.0 becomes 0.0)
    """
    n = score_bits.shape[0]
    wide = score_bits.itemsize == 8
    bits = score_bits
    n_digits = (score_bits.itemsize * 8 + _BITS - 1) // _BITS
    mask = np.uint64(_RADIX - 1)
    records = np.empty((n, 2), np.uint64)
    counts = np.zeros((n_digits, _RADIX), np.int64)
    for i in range(n):
        key = _float_key(np.uint64(bits[i]), wide)
        records[i, 0] = key
        records[i, 1] = np.uint64(i)
        for d in range(n_digits):
            counts[d, np.intp((key >> np.uint64(d * _BITS)) & mask)] += 1
    records = _radix_passes(records, counts, n_digits)
    out_bits = np.empty(n, score_bits.dtype)
    order = np.empty(n, np.intp)
    for i in range(n):
        out_bits[i] = _float_bits(records[i, 0], wide)
        order[i] = np.intp(records[i, 1])
    return order, out_bits
