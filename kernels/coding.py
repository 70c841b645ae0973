"""Group codes from raw attribute columns: how often each code occurs."""
import numpy as np

from ._jit import inline_kernel, kernel

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


@inline_kernel
def _word_masks():
    """``masks[k]``: the low ``k`` bytes of a word (k = 0 .. 8)."""
    masks = np.empty(9, np.uint64)
    masks[0] = np.uint64(0)
    for k in range(1, 9):
        masks[k] = ((np.uint64(1) << np.uint64(8 * k - 1)) << np.uint64(1)) - np.uint64(1)
    return masks


@inline_kernel
def _head(words, n_words, masks, data, start, length):
    """The first 8 bytes of the string ``data[start:start + length]`` as a little-endian word, zeros
    past its end: from two aligned loads of ``words`` (``data`` viewed as ``n_words`` words) and a
    mask chosen by the length from ``masks`` (no branch on the length: attributes such as "Asian",
    "Hispanic" or "18-39", "80+" mix lengths at random, and a branch on them is mispredicted once in a
    few samples); byte by byte near the end of ``data``."""
    q = np.uint64(start) >> np.uint64(3)  # unsigned indices: no wraparound check
    if q + np.uint64(1) < n_words:  # byte b of the string is bits 8b.. of the word
        at = np.uint64(8) * (np.uint64(start) & np.uint64(7))
        word = (words[q] >> at) | ((words[q + np.uint64(1)] << np.uint64(1)) << (np.uint64(63) - at))
        return word & masks[np.uint64(min(length, 8))]
    word = np.uint64(0)
    for b in range(start, start + min(length, 8)):
        word |= np.uint64(data[b]) << np.uint64(8 * (b - start))
    return word


@inline_kernel
def _mixed(word, length, data, start, end):
    """The hash of the string ``data[start:end]`` whose first 8 bytes are ``word``: the word and the
    length, then FNV-1a over the bytes after the eighth, multiplied so that its top bits (a table's
    slot) depend on every bit."""
    h = word ^ np.uint64(length)
    for b in range(start + 8, end):
        h = (h ^ np.uint64(data[b])) * np.uint64(1099511628211)
    return h * np.uint64(0x9E3779B97F4A7C15)


@inline_kernel
def _word_and_slot(words, n_words, masks, data, start, end, shift):
    """The first 8 bytes of the string ``data[start:end]`` (:func:`_head`) and its slot in a table of
    ``2 ** (64 - shift)`` slots (:func:`_mixed`)."""
    word = _head(words, n_words, masks, data, start, end - start)
    return word, _mixed(word, end - start, data, start, end) >> shift


@kernel
def text_codes(offsets, data, capacity, codes):
    """Code strings given as Arrow's ``offsets`` (n + 1 positions into ``data``) and ``data`` (their
    UTF-8 bytes) into ``codes``: equal bytes, equal code; codes in order of first occurrence.

    A hash table of ``capacity`` slots (a power of two; a number between is rounded up to one), each
    slot holding its string's code, length and first 8 bytes (packed in one word), so that a string
    met before is found by one probe of three arrays at one index. Strings of up to 8 bytes are told
    apart by length and word alone; longer ones are then compared byte by byte.

    Parameters
    ----------
    offsets : int32 or int64 array of shape (n + 1,)
        Positions into ``data``; they need not start at 0 (a slice of a column's offsets codes that
        piece of it).
    data : uint8 array
    capacity : int
    codes : int8 or int32 array of shape (n,), written
        int8 codes hold at most 127 distinct strings.

    Returns
    -------
    firsts : int64 array of shape (n_distinct,), the first sample of each code; an empty array when
        there are more distinct strings than ``capacity // 2`` or than ``codes`` can hold (the caller
        codes again with a larger table or wider codes).
    """
    n = offsets.shape[0] - 1
    bits = 1  # log2(capacity), rounded up: the slot is the mixed hash's top bits
    while (1 << bits) < capacity:
        bits += 1
    capacity = 1 << bits
    shift = np.uint64(64 - bits)
    slot_code = np.full(capacity, -1, codes.dtype)
    slot_word = np.zeros(capacity, np.uint64)  # a code's first 8 bytes
    slot_length = np.full(capacity, -1, np.int64)
    most = capacity // 2
    if codes.itemsize == 1:
        most = min(most, 127)
    firsts = np.empty(most, np.int64)
    n_distinct = 0
    mask = np.uint64(capacity - 1)
    n_words = np.uint64(data.shape[0] // 8)
    words = data[:n_words * 8].view(np.uint64)  # the first 8 bytes of a string from two aligned loads
    masks = _word_masks()
    end = np.int64(offsets[0]) if n >= 0 else 0
    for i in range(n):
        start = end
        end = np.int64(offsets[i + 1])
        length = end - start
        word, slot = _word_and_slot(words, n_words, masks, data, start, end, shift)
        if slot_word[slot] == word and slot_length[slot] == length and length <= 8:
            codes[i] = slot_code[slot]  # the usual case, a short string met before at its first slot
            continue
        while True:
            code = slot_code[slot]
            if code < 0:
                if n_distinct == most:
                    return firsts[:0]
                slot_code[slot] = n_distinct
                slot_word[slot] = word
                slot_length[slot] = length
                firsts[n_distinct] = i
                codes[i] = n_distinct
                n_distinct += 1
                break
            if slot_length[slot] == length and slot_word[slot] == word:
                same = True
                other = offsets[firsts[code]]
                for b in range(8, length):
                    if data[other + b] != data[start + b]:
                        same = False
                        break
                if same:
                    codes[i] = code
                    break
            slot = (slot + np.uint64(1)) & mask
    return firsts[:n_distinct]



@kernel
def known_text(offsets, data, first, stride, slot_group, slot_word, slot_length, slot_at, pool, combined):
    """Add ``stride`` times the group of each string, from sample ``first`` on, to ``combined``, the
    groups being those of a table of the strings met before (a hash table kept between calls, filled
    by :func:`add_text`); stops at the first string the table does not hold.

    The accumulator's text batches: with every attribute's groups known, a batch's combination of
    groups (in mixed radix) comes from its Arrow columns in a pass each, without coding them anew.

    Parameters
    ----------
    offsets : int32 or int64 array of shape (n + 1,), positions into ``data`` (Arrow's)
    data : uint8 array, the strings' UTF-8 bytes
    first : int, the first sample to read
    stride : int, the attribute's place value in ``combined``
    slot_group, slot_word, slot_length, slot_at : arrays of the table's ``capacity`` slots (a power of
        two, at least 2; of another length, the largest power of two within it is used): each slot's group (int32), string's first 8 bytes (uint64), length (int64) and where its
        bytes start in ``pool`` (int64); an empty slot has group -1 and length -1
    pool : uint8 array, the bytes of the table's strings
    combined : int32 array of shape (n,), added to

    Returns
    -------
    int: the first sample from ``first`` whose string is not in the table; n when every one is.
    """
    n = offsets.shape[0] - 1
    capacity = slot_group.shape[0]
    bits = 1  # log2(capacity), rounded down (never past the arrays); a shift by 64 would be undefined
    while (2 << bits) <= capacity:
        bits += 1
    shift = np.uint64(64 - bits)
    mask = np.uint64((1 << bits) - 1)
    n_words = np.uint64(data.shape[0] // 8)
    words = data[:n_words * 8].view(np.uint64)
    masks = _word_masks()
    step = np.int32(stride)
    end = np.int64(offsets[first]) if first <= n else 0
    for i in range(first, n):
        start = end
        end = np.int64(offsets[i + 1])
        length = end - start
        word, slot = _word_and_slot(words, n_words, masks, data, start, end, shift)
        if slot_word[slot] == word and slot_length[slot] == length and length <= 8:
            combined[i] += slot_group[slot] * step  # the usual case: a short string at its first slot
            continue
        while True:
            group = slot_group[slot]
            if group < 0:
                return i
            if slot_word[slot] == word and slot_length[slot] == length:
                same = True
                other = slot_at[slot]
                for b in range(8, length):
                    if pool[other + b] != data[start + b]:
                        same = False
                        break
                if same:
                    combined[i] += group * step
                    break
            slot = (slot + np.uint64(1)) & mask
    return n


@kernel
def add_text(pool, start, length, group, slot_group, slot_word, slot_length, slot_at):
    """Put the string ``pool[start:start + length]`` in a :func:`known_text` table as ``group`` (the
    string is not in it yet; the table has an empty slot).

    Parameters
    ----------
    pool : uint8 array, the bytes of the table's strings
    start, length, group : int
    slot_group, slot_word, slot_length, slot_at : the table's arrays (see :func:`known_text`), written
    """
    capacity = slot_group.shape[0]
    bits = 1  # log2(capacity), rounded down (never past the arrays); a shift by 64 would be undefined
    while (2 << bits) <= capacity:
        bits += 1
    words = pool[:0].view(np.uint64)  # none: the word is read byte by byte
    word = _head(words, np.uint64(0), _word_masks(), pool, start, length)
    slot = _mixed(word, length, pool, start, start + length) >> np.uint64(64 - bits)
    while slot_group[slot] >= 0:
        slot = (slot + np.uint64(1)) & np.uint64((1 << bits) - 1)
    slot_group[slot] = group
    slot_word[slot] = word
    slot_length[slot] = length
    slot_at[slot] = start


@kernel
def cell_keys(combined, cell_of, labels, first, keys):
    """The accumulator's keys, ``keys[i] = cell_of[combined[i]] * 2 + labels[i]``, from sample
    ``first`` on; stops at the first combination without a cell (``cell_of`` negative there).

    Parameters
    ----------
    combined : int32 array of shape (n,), each in ``0 .. len(cell_of) - 1``
    cell_of : int32 array, each combination's cell (-1: none yet)
    labels : uint8 array of shape (n,), 0 or 1
    first : int
    keys : uint32 array of shape (n,), written

    Returns
    -------
    int: the first sample from ``first`` whose combination has no cell; n when every one has.
    """
    for i in range(first, combined.shape[0]):
        cell = cell_of[np.uint32(combined[i])]
        if cell < 0:
            return i
        keys[i] = (np.uint32(cell) << np.uint32(1)) | np.uint32(labels[i])
    return combined.shape[0]


@inline_kernel
def _row_table(capacity, codes):
    """:func:`row_codes`' hash table: ``capacity`` rounded up to a power of two (``bits`` its log2),
    each slot's code (-1: empty), key and second word, and room for the first row of each code (the
    most distinct rows: half the slots, and at most 127 for int8 ``codes``)."""
    bits = 1
    while (1 << bits) < capacity:
        bits += 1
    capacity = 1 << bits
    most = capacity // 2
    if codes.itemsize == 1:
        most = min(most, 127)
    return (bits, np.full(capacity, -1, codes.dtype), np.zeros(capacity, np.uint64), np.zeros(capacity, np.uint64),
            np.empty(most, np.int64))


@kernel
def row_codes(rows, capacity, codes):
    """Code the rows of a 2-D array of unsigned words (fixed-width text: a NumPy ``U`` or ``S`` array
    viewed as uint64, uint32 or uint8 words; Arrow's 16-byte string views) into ``codes``: equal rows,
    equal code; codes in order of first occurrence.

    A hash table of ``capacity`` slots (a power of two; a number between is rounded up to one), each
    holding its row's code and 64-bit key. Rows of one or two words are their key (two words: the
    second kept beside it), exactly. Wider rows fold their words into the key, each shifted
    ``64 // width`` bits past the one before: where every word is below ``2 ** (64 // width)`` (short
    text of small code points: "F", "18-39", "Hispanic" as bytes) the key is still the row itself and
    rows of such keys are told apart by their keys alone; other rows are compared word by word.

    Parameters
    ----------
    rows : uint8, uint32 or uint64 array of shape (n, width), C-contiguous, width >= 1
    capacity : int, at least 2
    codes : int8 or int32 array of shape (n,), written
        int8 codes hold at most 127 distinct rows.

    Returns
    -------
    firsts : int64 array of shape (n_distinct,), the first row of each code; an empty array when
        there are more distinct rows than ``capacity // 2`` or than ``codes`` can hold.
    """
    n = rows.shape[0]
    width = rows.shape[1]
    bits, slot_code, slot_key, slot_second, firsts = _row_table(capacity, codes)  # (second: of two-word rows)
    capacity = slot_code.shape[0]
    shift = np.uint64(64 - bits)  # the slot is the mixed key's top bits
    slot_exact = np.zeros(capacity, np.bool_)  # whether the slot's key is its row
    most = firsts.shape[0]
    copies = np.empty((most, width), rows.dtype)  # each code's row (no gather from its first sample)
    n_distinct = 0
    mask = np.uint64(capacity - 1)
    step = np.uint64(64 // width if width > 2 else 0)  # bits between words (a rotation: no bit is lost)
    back = np.uint64(64) - step
    limit = np.uint64(1) << step
    for i in range(n):
        second = np.uint64(0)
        if width <= 2:
            key = np.uint64(rows[i, 0])
            if width == 2:
                second = np.uint64(rows[i, 1])
            is_exact = True
            mixed = (key ^ ((second << np.uint64(32)) | (second >> np.uint64(32)))) * np.uint64(0x9E3779B97F4A7C15)
        else:
            key = np.uint64(0)
            seen = np.uint64(0)
            for j in range(width):
                word = np.uint64(rows[i, j])
                seen |= word
                key = ((key << step) | (key >> back)) ^ word
            is_exact = seen < limit
            mixed = (key ^ (key >> np.uint64(29))) * np.uint64(0x9E3779B97F4A7C15)
        slot = mixed >> shift
        if is_exact and slot_key[slot] == key and slot_second[slot] == second and slot_exact[slot]:
            codes[i] = slot_code[slot]  # the usual case: a row met before, at its first slot
            continue
        while True:
            code = slot_code[slot]
            if code < 0:
                if n_distinct == most:
                    return firsts[:0]
                slot_code[slot] = n_distinct
                slot_key[slot] = key
                slot_second[slot] = second
                slot_exact[slot] = is_exact
                firsts[n_distinct] = i
                for j in range(width):
                    copies[n_distinct, j] = rows[i, j]
                codes[i] = n_distinct
                n_distinct += 1
                break
            if slot_key[slot] == key and slot_second[slot] == second:
                if is_exact and slot_exact[slot]:
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
            slot = (slot + np.uint64(1)) & mask
    return firsts[:n_distinct]


#: Rows that :func:`latin_row_codes` narrows to bytes at a time (in a buffer that stays in cache).
_LATIN_BLOCK = 2048


@inline_kernel
def _byte_window(words, at, mask):
    """The bytes from byte ``at`` of the little-endian words ``words`` as one word (byte k at bits 8k),
    kept by ``mask`` (the low bytes wanted); ``words`` holds at least 8 bytes past them. Without a
    branch: the next word's share is shifted in two steps, so that none is a shift by 64 bits (a
    branch on the offset made the loop ten times slower)."""
    first = at >> 3
    low = np.uint64((at & 7) * 8)
    high = (words[first + 1] << (np.uint64(63) - low)) << np.uint64(1)
    return ((words[first] >> low) | high) & mask


@inline_kernel
def _byte_mask(n_bytes):
    """The low ``n_bytes`` (0 to 8) bytes of a word."""
    if n_bytes >= 8:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return (np.uint64(1) << np.uint64(8 * n_bytes)) - np.uint64(1)


@kernel
def latin_row_codes(rows, capacity, codes):
    """:func:`row_codes` of rows of 1 to 16 code points (a NumPy ``U`` array viewed as uint32 words)
    where every code point is below 256 (Latin-1 text, ASCII included): each block of rows is first
    narrowed to bytes (a vectorized pass), so that a row is one or two words read from the bytes
    whatever its width, rather than a word per code point folded into a key.

    Returns
    -------
    firsts : int64 array, as :func:`row_codes` returns it (empty: the table or the codes' type is full)
    narrow : bool, False when some code point is 256 or more, or the rows are not 1 to 16 wide (the
        rows are then not coded: call :func:`row_codes`)
    """
    n = rows.shape[0]
    width = rows.shape[1]
    if width == 0 or width > 16:
        return np.empty(0, np.int64), False
    bits, slot_code, slot_key, slot_second, firsts = _row_table(capacity, codes)
    capacity = slot_code.shape[0]
    shift = np.uint64(64 - bits)
    most = firsts.shape[0]
    n_distinct = 0
    mask = np.uint64(capacity - 1)
    flat = rows.reshape(n * width)
    narrowed = np.zeros((_LATIN_BLOCK * width + 24 + 7) // 8, np.uint64)  # 16 bytes past a row's 16, and a word
    as_bytes = narrowed.view(np.uint8)
    first_mask = _byte_mask(min(width, 8))
    second_mask = _byte_mask(max(width - 8, 0))
    for begin in range(0, n, _LATIN_BLOCK):
        m = min(_LATIN_BLOCK, n - begin)
        seen = np.uint32(0)
        block = flat[begin * width:(begin + m) * width]
        for k in range(m * width):
            point = block[k]
            seen |= point
            as_bytes[k] = np.uint8(point & np.uint32(255))
        if seen >= np.uint32(256):
            return firsts[:0], False
        for t in range(m):
            at = t * width
            key = _byte_window(narrowed, at, first_mask)
            second = _byte_window(narrowed, at + 8, second_mask)  # (zero for rows of up to 8)
            mixed = (key ^ ((second << np.uint64(32)) | (second >> np.uint64(32)))) * np.uint64(0x9E3779B97F4A7C15)
            slot = mixed >> shift
            while True:
                code = slot_code[slot]
                if code < 0:
                    if n_distinct == most:
                        return firsts[:0], True
                    slot_code[slot] = n_distinct
                    slot_key[slot] = key
                    slot_second[slot] = second
                    firsts[n_distinct] = begin + t
                    codes[begin + t] = n_distinct
                    n_distinct += 1
                    break
                if slot_key[slot] == key and slot_second[slot] == second:
                    codes[begin + t] = code
                    break
                slot = (slot + np.uint64(1)) & mask
    return firsts[:n_distinct], True


@kernel
def remap_codes(codes, lookup, out):
    """``out[i] = lookup[codes[i]]``: codes in order of first occurrence as codes in report order.

    Parameters
    ----------
    codes : int8, int16 or int32 array of shape (n,), each in ``0 .. len(lookup) - 1``
    lookup : int8, int16 or int32 array
    out : array of shape (n,) and the type of ``lookup``, written; may be ``codes`` itself
    """
    for i in range(codes.shape[0]):
        out[i] = lookup[np.uint32(codes[i])]


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


@kernel
def split_keys(keys, cell_codes, labels, codes, start, stop):
    """The accumulator's rows (``key = cell * 2 + label``) ``start:stop`` as labels and group codes, in
    one pass: ``labels[i] = keys[i] & 1`` and ``codes[k, i] = cell_codes[k, keys[i] >> 1]``.

    Parameters
    ----------
    keys : uint32 array of shape (n,)
    cell_codes : int8 array of shape (K, n_cells), each cell's code in each grouping
    labels : uint8 array of shape (n,), written
    codes : int8 array of shape (K, n), written
    start, stop : int, the rows to split (threads take a range each)
    """
    n_groupings = cell_codes.shape[0]
    one = np.uint32(1)
    for i in range(start, stop):
        key = keys[i]
        labels[i] = np.uint8(key & one)
        cell = key >> one
        for k in range(n_groupings):
            codes[k, i] = cell_codes[k, cell]
