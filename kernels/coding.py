"""Group codes from raw attribute columns: how often each code occurs."""
import numpy as np

from ._jit import kernel

#: Up to this many codes, each is counted in a pass of its own (a vectorized comparison).
FEW_CODES = 8


@kernel
def code_counts(codes, n_codes):
    """Samples of each code ``0 .. n_codes - 1`` (negative codes are not counted).

    Parameters
    ----------
    codes : integer array of shape (n,), each below ``n_codes``
    n_codes : int

    Returns
    -------
    int64 array of shape (n_codes,)
    """
    counts = np.zeros(n_codes + 1, np.int64)  # slot n_codes takes the negative codes
    if n_codes <= FEW_CODES:
        for code in range(n_codes):
            found = 0
            for i in range(codes.shape[0]):
                found += codes[i] == code
            counts[code] = found
        return counts[:n_codes]
    for i in range(codes.shape[0]):
        code = np.int64(codes[i])
        counts[code if code >= 0 else n_codes] += 1
    return counts[:n_codes]


@kernel
def text_codes(offsets, data, capacity):
    """Codes of strings given as Arrow's ``offsets`` (n + 1 positions into ``data``) and ``data``
    (their UTF-8 bytes): equal bytes, equal code; codes in order of first occurrence.

    A hash table of ``capacity`` entries (a power of two; a number between is rounded up to one).
    Strings of up to 8 bytes are told apart by their length and their bytes packed in one word;
    longer ones by comparing their bytes. The word comes from two aligned loads and a mask chosen by
    the length from a table, with no branch on the length (attributes such as "Asian", "Hispanic"
    or "18-39", "80+" mix lengths at random: a branch on them is mispredicted once in a few samples),
    except in a column whose first 64 strings all have at most 3 bytes ("F", "g0"), where a loop
    over the bytes is faster and, the lengths being alike, predicted.

    Returns
    -------
    codes : int32 array of shape (n,)
    firsts : int64 array of shape (n_distinct,), the first sample of each code; an empty array
        when there are more than ``capacity // 2`` distinct strings (the caller codes otherwise).
    """
    n = offsets.shape[0] - 1
    bits = 1  # log2(capacity), rounded up: the slot is the mixed hash's top bits
    while (1 << bits) < capacity:
        bits += 1
    capacity = 1 << bits
    shift = np.uint64(64 - bits)
    codes = np.empty(n, np.int32)
    table = np.full(capacity, -1, np.int64)  # code at each slot
    most = capacity // 2
    firsts = np.empty(most, np.int64)
    packed = np.empty(most, np.uint64)  # each code's first 8 bytes
    lengths = np.empty(most, np.int64)
    n_distinct = 0
    mask = np.uint64(capacity - 1)
    n_words = data.shape[0] // 8
    words = data[:n_words * 8].view(np.uint64)  # the first 8 bytes of a string from two aligned loads
    end = offsets[0] if n >= 0 else 0
    short = 3  # strings of up to this many bytes packed by the loop over their bytes (-1: none)
    for i in range(min(n, 64)):
        if offsets[i + 1] - offsets[i] > 3:
            short = -1
            break
    masks = np.empty(9, np.uint64)  # the low `length` bytes of a word
    masks[0] = np.uint64(0)
    for k in range(1, 9):
        masks[k] = ((np.uint64(1) << np.uint64(8 * k - 1)) << np.uint64(1)) - np.uint64(1)
    for i in range(n):
        start = end
        end = offsets[i + 1]
        length = end - start
        q = start >> 3
        if length <= short:  # (packed otherwise than by the loads: a string is equal only to one of its length)
            word = np.uint64(0)
            for b in range(start, end):
                word = (word << np.uint64(8)) | np.uint64(data[b])
        elif q + 1 < n_words:  # byte b of the string is bits 8b.. of the word (little-endian, as the loop below)
            at = np.uint64(8 * (start & 7))
            word = (words[q] >> at) | ((words[q + 1] << np.uint64(1)) << (np.uint64(63) - at))
            word &= masks[min(length, 8)]
        else:  # near the end of the bytes
            word = np.uint64(0)
            for b in range(start, start + min(length, 8)):
                word |= np.uint64(data[b]) << np.uint64(8 * (b - start))
        h = word ^ np.uint64(length)
        for b in range(start + 8, end):  # the bytes after the eighth: FNV-1a
            h = (h ^ np.uint64(data[b])) * np.uint64(1099511628211)
        slot = np.intp((h * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        code = table[slot]
        if code >= 0 and length <= 8 and packed[code] == word and lengths[code] == length:
            codes[i] = code  # the usual case, a short string met before at its first slot: no loop
            continue
        while True:
            code = table[slot]
            if code < 0:
                if n_distinct == most:
                    return codes, firsts[:0]
                table[slot] = n_distinct
                firsts[n_distinct] = i
                packed[n_distinct] = word
                lengths[n_distinct] = length
                codes[i] = n_distinct
                n_distinct += 1
                break
            if lengths[code] == length and packed[code] == word:
                same = True
                other = offsets[firsts[code]]
                for b in range(8, length):
                    if data[other + b] != data[start + b]:
                        same = False
                        break
                if same:
                    codes[i] = code
                    break
            slot = (slot + 1) & np.intp(mask)
    return codes, firsts[:n_distinct]


@kernel
def row_codes(rows, capacity):
    """Codes of the rows of a 2-D array of unsigned words (fixed-width text: a NumPy ``U`` or ``S``
    array viewed as uint64, uint32 or uint8 words): equal rows, equal code; codes in order of first
    occurrence.

    A hash table of ``capacity`` entries (a power of two). Each row's words are folded into one
    64-bit key, each word shifted ``64 // width`` bits past the one before: where every word is
    below ``2 ** (64 // width)`` (short text of small code points: "F", "18-39", "Hispanic" as
    bytes) the key is the row itself, exactly, and rows of such keys are told apart by their keys
    alone; other rows are compared word by word.

    Parameters
    ----------
    rows : uint8, uint32 or uint64 array of shape (n, width), C-contiguous, width >= 1
    capacity : int, a power of two (a number between is rounded up to one), at least 2

    Returns
    -------
    codes : int32 array of shape (n,)
    firsts : int64 array of shape (n_distinct,), the first row of each code; an empty array when
        there are more than ``capacity // 2`` distinct rows (call again with a larger table).
    """
    n = rows.shape[0]
    width = rows.shape[1]
    bits = 1  # log2(capacity), rounded up: the slot is the mixed key's top bits
    while (1 << bits) < capacity:
        bits += 1
    capacity = 1 << bits
    shift = np.uint64(64 - bits)
    codes = np.empty(n, np.int32)
    table = np.full(capacity, -1, np.int32)  # code at each slot
    most = capacity // 2
    firsts = np.empty(most, np.int64)
    keys = np.empty(most, np.uint64)
    exact = np.empty(most, np.bool_)  # whether the code's key is its row
    copies = np.empty((most, width), rows.dtype)  # each code's row (no gather from its first sample)
    n_distinct = 0
    mask = capacity - 1
    step = np.uint64(64 // width if width > 1 else 0)  # bits between words (a rotation: no bit is lost)
    back = np.uint64(64) - step
    limit = np.uint64(1) << step
    for i in range(n):
        if width == 1:
            key = np.uint64(rows[i, 0])
            is_exact = True
        else:
            key = np.uint64(0)
            seen = np.uint64(0)
            for j in range(width):
                word = np.uint64(rows[i, j])
                seen |= word
                key = ((key << step) | (key >> back)) ^ word
            is_exact = seen < limit
        mixed = (key ^ (key >> np.uint64(29))) * np.uint64(0x9E3779B97F4A7C15)  # a bijection
        slot = np.intp(mixed >> shift)
        while True:
            code = table[slot]
            if code < 0:
                if n_distinct == most:
                    return codes, firsts[:0]
                table[slot] = n_distinct
                firsts[n_distinct] = i
                keys[n_distinct] = key
                exact[n_distinct] = is_exact
                for j in range(width):
                    copies[n_distinct, j] = rows[i, j]
                codes[i] = n_distinct
                n_distinct += 1
                break
            if keys[code] == key:
                if is_exact and exact[code]:
                    codes[i] = code
                    break
                same = True
                for j in range(width):
                    if copies[code, j] != rows[i, j]:
                        same = False
                        break
                if same:
                    codes[i] = code
                    break
            slot = (slot + 1) & mask
    return codes, firsts[:n_distinct]


@kernel
def more_distinct_than(values, limit):
    """Whether ``values`` (unsigned integers: the bits of scores) hold more than ``limit`` distinct
    values; stops at the first value past them. A hash table of keys alone, with room for ``limit``
    values (at most half full).

    Parameters
    ----------
    values : uint32 or uint64 array of shape (n,)
    limit : int, at least 1

    Returns
    -------
    bool
    """
    bits = 1  # log2 of the table: the slot is the mixed key's top bits
    while (1 << bits) < 2 * limit:
        bits += 1
    shift = np.uint64(64 - bits)
    mask = (1 << bits) - 1
    table = np.zeros(1 << bits, np.uint64)  # key + 1 at each slot; 0: empty
    found = 0
    for i in range(values.shape[0]):
        key = np.uint64(values[i]) + np.uint64(1)  # (a uint64 of all ones would be a NaN's bits: none here)
        slot = np.intp((key * np.uint64(0x9E3779B97F4A7C15)) >> shift)
        while True:
            held = table[slot]
            if held == key:
                break
            if held == 0:
                table[slot] = key
                found += 1
                if found > limit:
                    return True
                break
            slot = (slot + 1) & mask
    return False
