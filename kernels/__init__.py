"""Numba kernels of fairmedfm_fast, installed as ``fairmedfm_fast.kernels``.

Plain loops over contiguous NumPy arrays and scalars. Nothing here imports pandas or pyarrow, and
nothing validates: the API layer (``fairmedfm_fast``) hands over clean arrays.

Groups are integer codes. A *grouping* (one sensitive attribute) is one row of a ``(K, n)`` code
matrix with values ``0 .. n_groups[k] - 1``, or a negative code for a sample left out of that
grouping (missing attribute value). Every per-group result is laid out in *slots*: grouping ``k``
owns ``n_groups[k] + 1`` consecutive slots, one per group followed by one for all of the
grouping's present samples (its "overall"). :func:`slot_offsets` gives where each grouping starts.

Modules, one per kernel family:

- :mod:`.sorting`: the one sort, a radix sort on the scores' full bits that carries each
  sample's label and codes with its score (or its index).
- :mod:`.rank_sums`: AUC's sums of one grouping without a sorted copy: a radix partition whose
  buckets are sorted and swept while in cache.
- :mod:`.sweeps`: the fused passes over the sorted samples (counts, AUC, score ranges, BCE sums,
  prefix counts at thresholds; then the best-F1 sweep and the ECE bins).
- :mod:`.ranking`: AUC (needs scores sorted ascending), the best-F1 threshold sweep, and
  confusion counts above thresholds (the Dask backend's per-partition kernels).
- :mod:`.records`: rows as 64-bit records (score key, label, codes) routed by score range, for
  the Dask backend's sort across workers.
- :mod:`.calibration`: score ranges, pandas.cut-equivalent bin edges, binned calibration sums
  (ECE), per-sample log-loss terms and their per-slot sums (BCE).
- :mod:`.resampling`: stratified bootstrap counts and permuted codes (counter-based random
  numbers: results depend on the seed only).
- :mod:`.bootstrap`: the sums of one resample within a grouping's groups, from its draw counts
  (the drawn samples are not copied out).
- :mod:`.delong`: per-slot sums of the AUC's placement values and of their squares (DeLong's
  variance), one walk down the sorted order.

Every kernel takes optional float64 ``weights`` (sample weights or bootstrap counts);
:mod:`._weights` resolves ``weights=None`` at compile time. The steps that several kernels share
are written once: the slot layout and the slots a sample adds to in :mod:`._slots`, and the steps of
the sorted-order statistics (a tie block's end, AUC's credit of a tie block, the best-F1 candidate)
in :mod:`._statistics`; within a module, the radix sort's key-and-payload scatter
(``sorting._scatter_digit``) and the segmentation kernels' interval rule (``segmentation.inside``).
"""
