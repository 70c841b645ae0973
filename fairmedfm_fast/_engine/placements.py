"""DeLong's placement sums of the AUC (``kernels.delong``) over the sorted samples, for the analytic
intervals: the same ranges and threads as the fused pass of ``classification.measure``."""
from __future__ import annotations

import numpy as np

from .._util.threads import on_threads
from .classification import Arranged, split_ranges
from .sorting import n_threads


def placement_sums(arranged: Arranged, rows: list[int]) -> dict[int, list[np.ndarray]]:
    """``kernels.delong.placement_sums`` of the groupings ``rows`` over the sorted, unweighted
    ``arranged`` samples: grouping -> its (n_slots, 7) sums over each range of :func:`classification.split_ranges`, in
    order (the caller combines them). The groupings without missing codes share one pass and its
    overall slot; each other grouping has a pass of its own. Ranges and passes share the threads."""
    from ..kernels import delong

    scores, labels, codes, sizes = arranged.scores, arranged.labels, arranged.codes, arranged.sizes
    complete = [bool(codes[k].min(initial=0) >= 0) for k in rows]
    whole = [k for k, done in zip(rows, complete) if done]
    parts = ([whole] if whole else []) + [[k] for k, done in zip(rows, complete) if not done]
    ranges = split_ranges(scores)

    def one(part: list[int], a: int, b: int) -> np.ndarray:
        first, stop = part[0], part[-1] + 1
        picked = slice(first, stop) if part == list(range(first, stop)) else part
        return delong.placement_sums(scores, labels, codes[picked], sizes[picked], a, b, len(part) > 1 or
                                     part[0] in whole)

    jobs = [(part, a, b) for part in parts for a, b in ranges]
    threads = min(n_threads(len(scores)), len(jobs))
    done = (on_threads([lambda job=job: one(*job) for job in jobs], threads) if threads > 1
            else [one(*job) for job in jobs])
    out: dict[int, list[np.ndarray]] = {k: [] for k in rows}
    for (part, _, _), sums in zip(jobs, done):
        start = 0
        for k in part:
            out[k].append(sums[start:start + int(sizes[k]) + 1])
            start += int(sizes[k]) + 1
    return out
