"""Group codes from raw attribute columns: how often each code occurs."""
import numpy as np

from ._config import kernel

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
