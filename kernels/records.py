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

from ._config import inline_kernel, kernel
from .sorting import float_key


@inline_kernel
def _score_bits(key, wide):
    """The bits of the float whose key (:func:`.sorting.float_key`) this is (-0.0 comes back as 0.0)."""
    sign = np.uint64(1) << np.uint64(63 if wide else 31)
    full = (sign << np.uint64(1)) - np.uint64(1)  # all ones (wraps for 64 bits)
    return key ^ sign if key & sign else full ^ key


@inline_kernel
def _range_of(key, bound_keys):
    """How many of the ascending ``bound_keys`` are at most ``key``: the index of its score range."""
    low = 0
    high = bound_keys.shape[0]
    while low < high:
        middle = (low + high) >> 1
        if bound_keys[middle] <= key:
            low = middle + 1
        else:
            high = middle
    return low


@kernel
def route_records(score_bits, labels, codes, code_shifts, bounds, pay_bits, ranges, first, words, pays):
    """Pack each sample of ``score_bits`` (uint32 or uint64 bits of float32 or float64 scores) into a
    record and group the records by score range, in sample order within a range.

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
    """
    n = score_bits.shape[0]
    n_groupings = codes.shape[0]
    wide = score_bits.itemsize == 8
    two_words = pays.shape[0] > 0
    at = np.uint64(pay_bits)
    bound_keys = np.empty(bounds.shape[0], np.uint64)
    for r in range(bounds.shape[0]):
        bound_keys[r] = float_key(np.uint64(bounds[r]), wide)
    first[:] = 0
    for i in range(n):
        r = _range_of(float_key(np.uint64(score_bits[i]), wide), bound_keys)
        ranges[i] = r
        first[r + 1] += 1
    for r in range(first.shape[0] - 1):
        first[r + 1] += first[r]
    next_free = first[:-1].copy()
    for i in range(n):
        payload = np.uint64(labels[i])
        for k in range(n_groupings):
            payload |= np.uint64(max(np.int64(codes[k, i]), -1) + 1) << code_shifts[k]
        key = float_key(np.uint64(score_bits[i]), wide)
        r = ranges[i]
        position = next_free[r]
        next_free[r] = position + 1
        if two_words:
            words[position] = key
            pays[position] = payload
        else:
            words[position] = (key << at) | payload


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
