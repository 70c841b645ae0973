"""The Dask backend's sort of records (``kernels.records``) and the ranges' sums: each partition's rows
packed into records and split by score range, each range gathered, sorted and summed where it lands.
:func:`routed` writes that part of the graph; ``dask.py`` calls it once over the persisted columns, or
once per pass over the files when the rows cannot all be held (streaming)."""
from __future__ import annotations

import functools
import math
import operator
import sys
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import ranges as _ranges
from .._engine import records as _records
from .._inputs import arrays as _inputs
from . import dask_memory as _memory
from . import dask_survey as _survey


def rows_of(local: _survey.LocalColumns, plan: _survey.Plan) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """One partition as kernel inputs: probabilities, 0/1 labels and one global code row per grouping."""
    columns = plan.columns
    raw, numbers, encoded, _ = local
    n = len(raw)
    if columns.pos_label is not None:
        labels = np.asarray(raw == columns.pos_label).astype(np.uint8)
    else:
        labels = raw.astype(np.uint8)
    if n:
        scores = _inputs.positive_scores(numbers, plan.score_type)[0].astype(plan.score_dtype, copy=False)
    else:
        scores = np.empty(0, plan.score_dtype)
    rows = []
    for (codes, local_names), names in zip(encoded, plan.groups):
        position = {group: i for i, group in enumerate(names)}
        # in the narrow type of the records' codes: a gather into int64 wrote 8 bytes a row
        lookup = np.array([position[group] for group in local_names] + [-1], plan.code_dtype)
        rows.append(lookup[codes])
    if plan.combined:
        rows.append(combined_codes(rows, plan))
    if plan.all_samples:
        rows.append(np.zeros(n, plan.code_dtype))
    return scores, labels, rows


def combined_codes(rows: list[np.ndarray], plan: _survey.Plan) -> np.ndarray:
    """Codes of the intersectional attribute: the index of each row's combination among those present."""
    widths = [len(names) + 1 for names in plan.groups]  # code + 1: 0 for a missing value
    space = math.prod(widths)
    key = np.zeros(len(rows[0]), np.int32 if space < 2**31 else np.int64)
    for row, width in zip(rows, widths):  # in place: no temporary array per step
        key *= width
        key += row
        key += 1
    cells = np.zeros(len(plan.combined), np.int64)  # ascending, as the combinations are
    for i, cell in enumerate(plan.combined):
        value = 0
        for code, width in zip(cell, widths):
            value = value * width + code + 1
        cells[i] = value
    if space <= _survey.DENSE_CELLS:  # one gather from a table of every combination
        table = np.full(space, -1, plan.code_dtype)
        table[cells] = np.arange(len(cells))
        return table[key]
    codes = np.searchsorted(cells, key)
    found = codes < len(cells)
    found[found] = cells[codes[found]] == key[found]
    return np.where(found, codes, -1)


def pack(local: _survey.LocalColumns, *, plan: _survey.Plan, layout: _records.Layout, bounds: np.ndarray, sizes: np.ndarray,
         keep: range | None = None) -> tuple:
    """One partition's rows (:func:`_survey.local_columns`) as records, split by score range: a tuple of one piece per
    range (the words, or the keys and payloads), each sent whole to the task that sorts its range,
    then the partition's counts: per range and slot its negatives and positives (R, n_slots, 2), and
    per slot the lowest and highest score's key (n_slots, 2; see ``kernels.records``). With ``keep``
    (the ranges of one pass of several), the other ranges' pieces are empty."""
    out = _records.route(*rows_of(local, plan), layout, bounds, sizes)
    _memory.release_reader_memory()  # the last partition's reading, once the sort no longer needs it
    _size_pieces_once()
    if keep is None:
        return Pieces(out)
    # one pass of several (streaming): copies of the kept ranges' pieces, so that the rest is freed now
    empty = out[0][:0].copy() if layout.pay_dtype is None else (out[0][0][:0].copy(), out[0][1][:0].copy())
    return Pieces((*(_copied(piece) if r in keep else empty for r, piece in enumerate(out[:-1])), out[-1]))


class Pieces(tuple):
    """What :func:`pack` returns: a partition's pieces, one per range, then its counts. Dask counts each
    piece in a worker's managed memory once its ``fairmedfm-piece`` task has taken it, so the tuple itself
    is sized as the tuple alone (:func:`_size_pieces_once`): sized as its arrays, the records were
    counted twice while a partition's pieces were being taken, and at 1e9 rows a worker's managed memory
    read 7.2 GiB with 4.4 GiB in use, past the spill target (60% of 11.7 GiB)."""

    __slots__ = ()


_sized = False


def _size_pieces_once() -> None:
    """Register with Dask (in this worker process, once) the size of :class:`Pieces`: the tuple alone."""
    global _sized
    if not _sized:
        from dask.sizeof import sizeof

        sizeof.register(Pieces)(sys.getsizeof)
        _sized = True


def _copied(piece: Any) -> Any:
    return piece.copy() if isinstance(piece, np.ndarray) else tuple(part.copy() for part in piece)


def counted(counts: list[tuple[np.ndarray, np.ndarray]], *, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """Per range and slot the samples and positives (R, n_slots), per slot the lowest and highest
    score (NaN where empty), from the partitions' counts (:func:`pack`)."""
    tally = sum(c[0] for c in counts)
    low = np.minimum.reduce([c[1][:, 0] for c in counts])
    high = np.maximum.reduce([c[1][:, 1] for c in counts])
    count = tally[:, :, 0] + tally[:, :, 1]
    empty = count.sum(axis=0) == 0
    low, high = _records.key_scores(low, dtype), _records.key_scores(high, dtype)
    low[empty] = high[empty] = np.nan
    return count, tally[:, :, 1], low, high


def sorted_range(pieces: list, layout: _records.Layout, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The records of one score range (a piece from each partition) as the sorted kernel inputs: scores,
    labels and codes (K, n). One word a row: a sort of the words (NumPy's, SIMD where the CPU has it)
    is the sort by score, then by label and codes; two words: the in-memory sort
    (``_engine.arrange``) of the unpacked rows."""
    two = layout.pay_dtype is not None
    words = np.concatenate([piece[0] if two else piece for piece in pieces]) if pieces else np.empty(0, np.uint64)
    pays = np.concatenate([piece[1] for piece in pieces]) if two and pieces else np.empty(0, layout.pay_dtype or
                                                                                       np.uint64)
    if not two:
        words.sort()  # a fresh array (concatenate copies): the pieces stay as they were
    scores, labels, codes = _records.unpack(words, pays, layout, len(sizes))
    if two:
        arranged = _engine.arrange(scores, labels, list(codes), sizes.tolist())
        scores, labels, codes = arranged.scores, arranged.labels, arranged.codes
    return scores, labels, codes


def range_sums(rows: tuple[np.ndarray, np.ndarray, np.ndarray], plan: _ranges.RangePlan, index: int
                ) -> dict[str, Any]:
    """The engine's sums of one sorted range (``_ranges.range_sums``), with its first and last score."""
    scores, labels, codes = rows
    sums = _ranges.range_sums(scores, labels, codes, plan, index)
    sums["first"] = float(scores[0]) if len(scores) else math.nan
    sums["last"] = float(scores[-1]) if len(scores) else math.nan
    return sums


def sorted_sums(pieces: list, plan: _ranges.RangePlan, index: int, *, layout: _records.Layout) -> dict[str, Any]:
    """One range's records sorted (:func:`sorted_range`) and summed (:func:`range_sums`) in one task:
    its sorted arrays live only as long as the task."""
    return range_sums(sorted_range(pieces, layout, plan.sizes), plan, index)


def routed(local: list, holders: list[str | None], plan: _survey.Plan, layout: _records.Layout, bounds: np.ndarray,
           sizes: np.ndarray, make_plan: Callable[[tuple], _ranges.RangePlan], keep: range | None = None
           ) -> tuple[Any, list[Any]]:
    """The sort of records and the ranges' sums as one graph over the persisted columns ``local``: per
    partition a routing task (:func:`pack`) and a selection of each of its pieces, both on the worker
    that holds the partition (``holders``; else the scheduler may send the whole tuple to an idle
    worker), the range plan from the routing counts, and a sort-and-sum task per range
    (:func:`sorted_sums`). Returns the plan's Delayed and the ranges'. With ``keep``, only those
    ranges are sorted and summed (one pass of several over the partitions ``local``, read again).

    The graph is written as a mapping: built as Delayed objects (one per piece), the P x R
    selections kept the client busy merging graphs, 1.3 to 1.8 s at 50 partitions and 50 ranges,
    while the workers waited."""
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    token = uuid.uuid4().hex  # keys "fairmedfm-pack-<token>" etc.: the dashboard shows the kind
    pack_name, piece_name, sums_name = (f"fairmedfm-{kind}-{token}" for kind in ("pack", "piece", "sums"))
    n_ranges, n_parts = len(bounds) + 1, len(local)
    packing = functools.partial(pack, plan=plan, layout=layout, bounds=bounds, sizes=sizes, keep=keep)
    kept = range(n_ranges) if keep is None else keep
    per_worker: dict[str | None, tuple[dict, list]] = {}
    for p, (item, holder) in enumerate(zip(local, holders)):
        tasks, items = per_worker.setdefault(holder, ({}, []))
        tasks[(pack_name, p)] = (packing, item.key)
        for r in [*kept, n_ranges]:  # the last: the partition's counts
            tasks[(piece_name, p, r)] = (operator.getitem, (pack_name, p), r)
        items.append(item)
    layers = []
    for j, (holder, (tasks, items)) in enumerate(per_worker.items()):
        annotations = None if holder is None else {"workers": [holder], "allow_other_workers": True}
        layer = f"fairmedfm-route-{j}-{token}"
        graph = HighLevelGraph.from_collections(layer, MaterializedLayer(tasks, annotations=annotations),
                                                dependencies=items)
        layers.append(Delayed(next(iter(tasks)), graph, layer=layer))
    counted_key, plan_key = (f"fairmedfm-counted-{token}", 0), (f"fairmedfm-range-plan-{token}", 0)
    tasks = {counted_key: (functools.partial(counted, dtype=plan.score_dtype),
                           [(piece_name, p, n_ranges) for p in range(n_parts)]),
             plan_key: (make_plan, counted_key)}
    sums = functools.partial(sorted_sums, layout=layout)
    for r in kept:
        tasks[(sums_name, r)] = (sums, [(piece_name, p, r) for p in range(n_parts)], plan_key, r)
    graph = HighLevelGraph.from_collections(sums_name, MaterializedLayer(tasks), dependencies=layers)
    return (Delayed(plan_key, graph, layer=sums_name),
            [Delayed((sums_name, r), graph, layer=sums_name) for r in kept])
