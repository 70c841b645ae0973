"""Radix sort of scores that carries each sample's payload (label, group codes) with its key.

Least-significant-digit radix sort on the full bits of the score: 64-bit keys for float64, 32-bit
keys for float32, so no tie fix-up is needed. The usual sign-flip transform makes the keys' unsigned
order the order of the floats, negative scores and subnormals included; -0.0 is keyed as 0.0, so
that equal scores keep their input order (the sort is stable, as ``np.argsort(kind="stable")``).

Each sample travels as its 64-bit key and, in a parallel array, a payload (the label and up to
seven int8 codes packed byte by byte, or the sample index): 32 bits for up to three groupings (or an
index below 2**32), 64 otherwise. Nothing is read at random after the sort.
"""
import numpy as np

from ._config import inline_kernel, kernel

_BITS = 11  # digit width: 2048 buckets, whose write positions stay in cache
_RADIX = 1 << _BITS
_WIDEST = 13  # the second level's widest digit: 8192 buckets, a 64 KiB count table


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
def _lsd(keys, pays, keys2, pays2, start, stop, low, n_bits, counts, starts):
    # Stable LSD radix sort of keys[start:stop] (a cache-sized piece, payloads alongside) by the low
    # ``n_bits`` bits of (key - low): 8-bit digits, so that the per-piece tables stay small; digits
    # every key shares are skipped. ``counts`` (8, 256) and ``starts`` (256,) are scratch tables.
    m = stop - start
    if m < 2:
        return
    if m <= 24:
        _insertion(keys, pays, start, stop)
        return
    mask = np.uint64(255)
    n_digits = (n_bits + 7) // 8
    counts[:n_digits] = 0
    for i in range(start, stop):
        relative = keys[i] - low
        for d in range(n_digits):
            counts[d, np.intp((relative >> np.uint64(8 * d)) & mask)] += 1
    a_keys, a_pays, b_keys, b_pays = keys, pays, keys2, pays2
    swapped = False
    for d in range(n_digits):
        shift = np.uint64(8 * d)
        skip = False
        for bucket in range(256):
            if counts[d, bucket] == m:
                skip = True
                break
        if skip:
            continue
        total = start
        for bucket in range(256):
            starts[bucket] = total
            total += counts[d, bucket]
        for i in range(start, stop):
            key = a_keys[i]
            bucket = np.intp(((key - low) >> shift) & mask)
            position = starts[bucket]
            b_keys[position] = key
            b_pays[position] = a_pays[i]
            starts[bucket] = position + 1
        a_keys, a_pays, b_keys, b_pays = b_keys, b_pays, a_keys, a_pays
        swapped = not swapped
    if swapped:
        keys[start:stop] = keys2[start:stop]
        pays[start:stop] = pays2[start:stop]


@inline_kernel
def _insertion(keys, pays, start, stop):
    # Stable insertion sort of a short run by key.
    for i in range(start + 1, stop):
        key = keys[i]
        payload = pays[i]
        j = i - 1
        while j >= start and keys[j] > key:
            keys[j + 1] = keys[j]
            pays[j + 1] = pays[j]
            j -= 1
        keys[j + 1] = key
        pays[j + 1] = payload


@kernel
def _scatter(keys, pays, to_keys, to_pays, start, stop, low, shift, bits, counts):
    # Stable scatter of keys[start:stop] (payloads alongside) into to_keys[start:stop] by the
    # ``bits``-bit digit of (key - low) at ``shift``; ``counts`` (at least 2**bits + 1,) receives the
    # buckets' bounds.
    radix = 1 << bits
    mask = np.uint64(radix - 1)
    counts[:radix + 1] = 0
    for i in range(start, stop):
        counts[np.intp(((keys[i] - low) >> shift) & mask) + 1] += 1
    counts[0] = start
    for bucket in range(radix):
        counts[bucket + 1] += counts[bucket]
    starts = counts[:radix].copy()
    for i in range(start, stop):
        key = keys[i]
        bucket = np.intp(((key - low) >> shift) & mask)
        position = starts[bucket]
        to_keys[position] = key
        to_pays[position] = pays[i]
        starts[bucket] = position + 1


@kernel
def _sort_records(keys, pays, keys2, pays2):
    # Stable sort of the keys, each payload moving with its key, in place: most-significant-digit
    # radix sort on (key - smallest key), with ``keys2``/``pays2`` as scratch, 11 bits then up to 13
    # (the second level inside each bucket, as wide as the bucket is large), then runs of at most 32 by insertion
    # sort and longer ones by an LSD radix sort on the bits below. Keys and payloads live in separate
    # arrays, so that a 32-bit payload moves 12 bytes a sample instead of 16.
    n = keys.shape[0]
    if n < 2:
        return
    low = keys[0]
    high = low
    for i in range(n):
        key = keys[i]
        if key < low:
            low = key
        if key > high:
            high = key
    span = high - low
    n_bits = 0
    while n_bits < 64 and (span >> np.uint64(n_bits)) != 0:
        n_bits += 1
    if n_bits == 0:  # every key equal
        return
    first = np.empty(_RADIX + 1, np.int64)
    second = np.empty((1 << _WIDEST) + 1, np.int64)
    table = np.empty((8, 256), np.int64)
    positions = np.empty(256, np.int64)
    shift1 = n_bits - _BITS if n_bits > _BITS else 0
    _scatter(keys, pays, keys2, pays2, 0, n, low, np.uint64(shift1), min(n_bits, _BITS), first)
    # the scratch arrays hold the first-level buckets; every bucket ends sorted in keys/pays
    for bucket in range(_RADIX):
        start = first[bucket]
        stop = first[bucket + 1]
        m = stop - start
        if m == 0:
            continue
        if shift1 == 0 or m <= 32:
            keys[start:stop] = keys2[start:stop]
            pays[start:stop] = pays2[start:stop]
            if shift1 > 0:
                _insertion(keys, pays, start, stop)
            continue
        # the second level's width grows with the bucket, for about 8 keys a sub-bucket
        bits = 1
        while bits < _WIDEST and (m >> (bits + 3)) > 0:
            bits += 1
        bits = min(bits, shift1)
        shift2 = shift1 - bits
        _scatter(keys2, pays2, keys, pays, start, stop, low, np.uint64(shift2), bits, second)
        if shift2 == 0:
            continue
        for sub in range(1 << bits):
            begin = second[sub]
            end = second[sub + 1]
            if end - begin <= 1:
                continue
            if end - begin <= 32:
                _insertion(keys, pays, begin, end)
            else:
                _lsd(keys, pays, keys2, pays2, begin, end, low, shift2, table, positions)


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
        In the order of ``np.argsort(scores, kind="stable")``. The three share one buffer, which
        served the sort as its scratch space.
    """
    n = score_bits.shape[0]
    n_groupings = codes.shape[0]
    width = score_bits.itemsize
    payload = np.uint32 if n_groupings <= 3 else np.uint64  # label and codes, a byte each
    pay_width = np.dtype(payload).itemsize
    buffer = np.empty(max((8 + pay_width) * n, (width + 1 + n_groupings) * n), np.uint8)
    keys2 = buffer[:8 * n].view(np.uint64)
    pays2 = buffer[8 * n:(8 + pay_width) * n].view(payload)
    out_bits = buffer[:width * n].view(score_bits.dtype)
    out_labels = buffer[width * n:(width + 1) * n]
    out_codes = buffer[(width + 1) * n:(width + 1 + n_groupings) * n].view(np.int8).reshape(n_groupings, n)
    _sort_carrying(score_bits, labels, codes, keys2, pays2, out_bits, out_labels, out_codes)
    return out_bits, out_labels, out_codes


@kernel
def _sort_carrying(score_bits, labels, codes, keys2, pays2, out_bits, out_labels, out_codes):
    # The kernel of sort_carrying: writes the outputs, which alias ``keys2``/``pays2`` (read only before).
    n = score_bits.shape[0]
    n_groupings = codes.shape[0]
    wide = score_bits.itemsize == 8
    keys = np.empty(n, np.uint64)
    pays = np.empty(n, pays2.dtype)
    for i in range(n):
        keys[i] = _float_key(np.uint64(score_bits[i]), wide)
        payload = np.uint64(labels[i])
        for k in range(n_groupings):
            payload |= np.uint64(np.uint8(codes[k, i])) << np.uint64(8 * (k + 1))
        pays[i] = payload
    _sort_records(keys, pays, keys2, pays2)
    byte = np.uint64(0xFF)
    for i in range(n):
        out_bits[i] = _float_bits(keys[i], wide)
        payload = np.uint64(pays[i])
        out_labels[i] = np.uint8(payload & byte)
        for k in range(n_groupings):
            out_codes[k, i] = np.int8(np.uint8((payload >> np.uint64(8 * (k + 1))) & byte))


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
    index = np.uint32 if n < 1 << 32 else np.uint64
    return _sort_order(score_bits, np.empty(n, np.uint64), np.empty(n, index))


@kernel
def _sort_order(score_bits, keys2, pays2):
    # The kernel of sort_order, with the scratch arrays (the index type sized to n).
    n = score_bits.shape[0]
    wide = score_bits.itemsize == 8
    keys = np.empty(n, np.uint64)
    pays = np.empty(n, pays2.dtype)
    for i in range(n):
        keys[i] = _float_key(np.uint64(score_bits[i]), wide)
        pays[i] = i
    _sort_records(keys, pays, keys2, pays2)
    out_bits = np.empty(n, score_bits.dtype)
    order = np.empty(n, np.intp)
    for i in range(n):
        out_bits[i] = _float_bits(keys[i], wide)
        order[i] = np.intp(pays[i])
    return order, out_bits
