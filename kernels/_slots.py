"""Slot layout shared by the kernels: grouping ``k`` owns ``n_groups[k] + 1`` consecutive slots."""

from ._arrays import filled
from ._jit import inline_kernel, kernel


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


@inline_kernel
def fold_running(total, compensation, part):
    """A plain running sum ``part`` moved into its compensated total, for sums in local variables:
    ``(total, compensation, 0.0)`` updated (:func:`fold_sums` for a table's row)."""
    total, compensation = neumaier_step(total, compensation, part)
    return total, compensation, 0.0


# The columns of a per-slot table of float sums (``sweeps.ranked_sums``, ``bootstrap``): plain running
# sums of the BCE terms and of the scores, and the compensated totals they are folded into.
LOSS_PART, SCORE_PART, LOSS, LOSS_COMP, SCORE, SCORE_COMP = range(6)


@inline_kernel
def fold_sums(sums, slot):
    """Move a slot's plain running sums (row ``slot`` of ``sums``) into their compensated totals."""
    total, compensation = neumaier_step(sums[slot, LOSS], sums[slot, LOSS_COMP], sums[slot, LOSS_PART])
    sums[slot, LOSS] = total
    sums[slot, LOSS_COMP] = compensation
    total, compensation = neumaier_step(sums[slot, SCORE], sums[slot, SCORE_COMP], sums[slot, SCORE_PART])
    sums[slot, SCORE] = total
    sums[slot, SCORE_COMP] = compensation
    sums[slot, LOSS_PART] = 0.0
    sums[slot, SCORE_PART] = 0.0


@inline_kernel
def slots_of(codes, offsets, n_groups, k, i, groups_only=False):
    """The slots that sample ``i`` adds to in grouping ``k`` (row ``k`` of ``codes``): its group's and
    the grouping's "all present samples" slot (-1 when ``groups_only``); ``(-1, -1)`` when it has no
    group there."""
    code = codes[k, i]
    if code < 0:
        return -1, -1
    overall = offsets[k] + n_groups[k]
    if groups_only:
        overall = -1
    return offsets[k] + code, overall
