"""Slot layout shared by the kernels: grouping ``k`` owns ``n_groups[k] + 1`` consecutive slots."""

from ._arrays import filled
from ._config import inline_kernel, kernel


@kernel
def slot_offsets(n_groups):
    """First slot of each grouping, and the total number of slots.

    Parameters
    ----------
    n_groups : int64 array of shape (K,)

    Returns
    -------
    offsets : int64 array of shape (K,)
    n_slots : int
    """
    offsets = filled(n_groups.shape[0], 0)
    total = 0
    for k in range(n_groups.shape[0]):
        offsets[k] = total
        total += n_groups[k] + 1
    return offsets, total


@inline_kernel
def neumaier_add(sums, compensations, index, value):
    """Add ``value`` to ``sums[index]`` with Neumaier's compensated summation."""
    total = sums[index]
    updated = total + value
    if abs(total) >= abs(value):
        compensations[index] += (total - updated) + value
    else:
        compensations[index] += (value - updated) + total
    sums[index] = updated


@inline_kernel
def neumaier_step(total, compensation, value):
    """``(total + value, compensation)`` updated by Neumaier's compensated summation (for running
    sums kept in local variables)."""
    updated = total + value
    if abs(total) >= abs(value):
        compensation += (total - updated) + value
    else:
        compensation += (value - updated) + total
    return updated, compensation
