"""Classification fairness as a torchmetrics ``Metric``: :class:`FairnessMetric`.

Needs PyTorch and torchmetrics (``pip install torch torchmetrics``), which the rest of the package
does not. The metric's state lives in torchmetrics states (tensors, no pickle), so that torchmetrics'
own synchronisation across DDP ranks, ``merge_state`` and checkpoints (``persistent(True)``) carry
every batch, and ``compute()`` equals :func:`~fairmedfm_fast.evaluate` on the samples of every rank.
"""
from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import torch
    from torchmetrics import Metric
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("fairmedfm_fast.torch needs PyTorch and torchmetrics; install them with "
                      "pip install torch torchmetrics") from error

from ._backends.accumulator_state import Segment
from .accumulator import COMPACT_FROM, FairnessAccumulator
from .report import FairnessReport

__all__ = ["FairnessMetric", "FairnessValue"]

_instances = itertools.count()

#: The batches added since the last flush are written to the states once they hold this many samples
#: (and whenever torchmetrics reads the states): a step only adds its batch to the accumulator.
FLUSH_ROWS = 1 << 16

#: The torchmetrics states (all concatenated across ranks): the rows of every segment of the
#: accumulator's state (see ``_backends/accumulator_state.py``): scores as the bytes of their float
#: type (named in the header), keys as the bits of their uint32; each segment's new cells, and each
#: segment's header (JSON, UTF-8) with its length.
STATES = (("scores", torch.uint8), ("keys", torch.int32), ("counts", torch.int64), ("weights", torch.float64),
          ("cells", torch.int64), ("header", torch.uint8), ("header_size", torch.int64))


class FairnessMetric(Metric):
    """Fairness of a binary classifier over the batches of a validation loop, for torchmetrics and
    Lightning.

    ``update(preds, target, sensitive_features, *, sample_weight=None)`` takes a batch in
    torchmetrics' order (scores first; tensors on any device and of any float dtype, or anything
    :func:`~fairmedfm_fast.evaluate` takes); ``compute()`` returns the report's
    :meth:`~fairmedfm_fast.FairnessReport.scalars` (``{"auc_gap/race": ..., "eod/sex": ...}``);
    :attr:`report` is the full report of the last ``compute()``. In a ``MetricCollection`` with other
    metrics, pass the attributes by keyword: ``collection.update(preds, target,
    sensitive_features=attrs)`` (the other metrics take two arguments).

    Parameters
    ----------
    pos_label, score_type, score_column, bins, intersectional, metrics
        How a batch is read: as in :class:`~fairmedfm_fast.FairnessAccumulator`.
    threshold, min_group_size
        As in :func:`~fairmedfm_fast.evaluate`, applied by ``compute()``.
    **kwargs
        torchmetrics ``Metric`` options (``process_group``, ``compute_on_cpu``, ...);
        ``dist_sync_on_step=True`` is refused.

    Notes
    -----
    The state is the accumulator's table of distinct (score, label, group) rows as tensors in list
    states, in segments: one per batch since the last compaction, each with its new groups in a JSON
    header (group codes are found batch by batch, so each rank numbers its own), compacted into one
    segment as the accumulator compacts. ``state_dict()`` holds only tensors (``torch.load(...,
    weights_only=True)`` reads it); ``merge_state``, checkpoints and the gathering of every rank give
    the numbers of ``evaluate`` on all the samples.

    ``forward`` (calling the metric on a batch) adds the batch and returns None: the fairness of one
    batch is rarely defined (groups without both labels). To log with Lightning, log the dict of
    :meth:`compute` at the end of the epoch, or one value as a metric object with :meth:`value`::

        def on_validation_epoch_end(self):
            # compute() gives every rank the values of every rank's batches: sync_dist=True averages
            # equal values (no change) and keeps Lightning from warning under DDP
            self.log_dict(self.fairness.compute(), sync_dist=True)
            self.fairness.reset()

        # or, in __init__: self.auc_gap = self.fairness.value("auc_gap/sex"), then in validation_step:
        #     self.fairness.update(preds, target, sensitive_features=attrs)
        #     self.log("auc_gap/sex", self.auc_gap, on_epoch=True)
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    def __init__(self, *, pos_label: Any = None, score_type: str = "auto", score_column: int | None = None,
                 bins: dict | None = None, intersectional: bool = False, metrics: Sequence[str] | None = None,
                 threshold: float | None = None, min_group_size: int | None = None, **kwargs: Any):
        if kwargs.get("dist_sync_on_step"):
            raise ValueError("dist_sync_on_step=True: gathering every rank's rows at each step is never needed here; "
                             "leave it False: compute() gathers the batches of every rank")
        super().__init__(**kwargs)
        self._options = {"pos_label": pos_label, "score_type": score_type, "score_column": score_column,
                         "bins": bins, "intersectional": intersectional, "metrics": metrics}
        FairnessAccumulator(**self._options)  # checks the options
        self.threshold = threshold
        self.min_group_size = min_group_size
        for name, _ in STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat", persistent=False)
        # A state of its own value, so that a MetricCollection never takes two of these metrics for one
        # (its compute groups share the states of metrics whose states are equal after a batch).
        self.add_state("instance", default=torch.tensor(float(next(_instances))), dist_reduce_fx=None,
                       persistent=False)
        self.report: FairnessReport | None = None
        self._book = _Book()
        self._adopt(FairnessAccumulator(**self._options), fresh=True)
        self.register_load_state_dict_post_hook(_loaded)

    # -- batches ------------------------------------------------------------------------------

    def update(self, preds: Any, target: Any, sensitive_features: Any, *, sample_weight: Any = None) -> None:
        """Add one batch: scores (probabilities, logits or an (n, k) matrix), labels, the batch's
        sensitive attributes (a DataFrame, a dict of arrays or tensors, ...) and optional weights. A
        batch that raises changes nothing."""
        live = self._accumulator()
        try:
            live.update(target, preds, _plain(sensitive_features), sample_weight=sample_weight)
        except ValueError as error:
            raise ValueError(_torch_words(str(error))) from None
        book = self._book
        book.waiting += len(preds) if hasattr(preds, "__len__") else 1
        if book.waiting >= FLUSH_ROWS:
            self._flush()

    def forward(self, *args: Any, **kwargs: Any) -> None:
        """Add a batch (as :meth:`update`); returns None (see the class notes)."""
        self.update(*args, **kwargs)

    def compute(self) -> dict[str, float]:
        """The flat summary of the report on every batch (of every rank when distributed)."""
        accumulator = self._book.live if self._in_step() else _decode(self._arrays(), self._options)
        if accumulator.n_samples == 0:
            raise ValueError("no batch was added: call update(preds, target, sensitive_features) first")
        self.report = accumulator.result(threshold=self.threshold, min_group_size=self.min_group_size)
        return self.report.scalars()

    @property
    def accumulator(self) -> FairnessAccumulator:
        """The :class:`~fairmedfm_fast.FairnessAccumulator` of this rank's batches (made again from the
        states when they were replaced)."""
        return self._accumulator()

    def value(self, key: str) -> FairnessValue:
        """A metric object for one value of :meth:`compute` (such as ``"auc_gap/sex"``), sharing this
        metric's state, for Lightning's ``self.log(name, metric)``."""
        return FairnessValue(self, key)

    def reset(self) -> None:
        super().reset()
        self.report = None
        self._adopt(FairnessAccumulator(**self._options), fresh=True)

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return super().__getstate__()

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        self._flush()
        return super().state_dict(*args, **kwargs)

    @property
    def metric_state(self) -> dict[str, Any]:
        self._flush()
        return super().metric_state

    def merge_state(self, incoming_state: Any) -> None:
        self._flush()
        if isinstance(incoming_state, FairnessMetric):
            incoming_state._flush()
        super().merge_state(incoming_state)

    def sync(self, *args: Any, **kwargs: Any) -> None:
        # the batches since the last flush join the states; a rank without batches holds no tensors:
        # give it empty ones of each state's type, so that every rank gathers as many tensors of the
        # same types
        self._flush()
        in_step = self._in_step()
        for name, dtype in STATES:
            if isinstance(getattr(self, name), list) and not getattr(self, name):
                setattr(self, name, [torch.zeros(0, dtype=dtype, device=self.device)])
        if in_step:  # still the live accumulator's states
            self._book.token = self._state_token()
        super().sync(*args, **kwargs)

    def plot(self, *args: Any, **kwargs: Any) -> Any:
        """The plots of the report of the last :meth:`compute` (:meth:`FairnessReport.plot`)."""
        if self.report is None:
            raise ValueError("plot() draws the report of the last compute(): call compute() first")
        return self.report.plot(*args, **kwargs)

    # -- the state ----------------------------------------------------------------------------

    def _accumulator(self) -> FairnessAccumulator:
        """The accumulator of the states: the one kept beside them, or made again from them where they
        were replaced (``load_state_dict``, ``merge_state``, an unsync)."""
        if not self._in_step():
            self._adopt(_decode(self._arrays(), self._options))
        return self._book.live

    def _flush(self) -> None:
        """The batches added since the last flush into the states, as one segment (the states are
        written at the boundaries where torchmetrics reads them: state_dict, merge_state, sync)."""
        book = self._book
        if not book.waiting or not self._in_step():
            return
        live = book.live
        segment = live.segment(book.mark)
        if book.fresh:  # the first segment of a stream says how batches are read
            segment.start = True
            segment.reading = segment.reading or live.reading()
        self._append(segment)
        book.mark = live.mark()
        book.waiting = 0
        if book.rows >= book.rewrite_at:  # the table compacts: so do the states
            self._adopt(live)

    def _adopt(self, accumulator: FairnessAccumulator, fresh: bool = False) -> None:
        """Make ``accumulator`` the live one and the states one segment of its whole state."""
        book = self._book
        book.live = accumulator
        accumulator.keep_journal()
        book.waiting = book.segments = 0
        book.replaced = False
        for name, _ in STATES:
            setattr(self, name, [])
        book.rows = 0
        book.fresh = fresh or accumulator.n_samples == 0
        if not book.fresh:
            self._append(accumulator.segment())
        book.mark = accumulator.mark()
        book.rewrite_at = max(COMPACT_FROM, 2 * book.rows)
        book.token = self._state_token()

    def _append(self, segment: Segment) -> None:
        header = _header(segment)
        parts = {"scores": segment.scores.view(np.uint8), "keys": segment.keys.view(np.int32),
                 "counts": segment.counts, "weights": segment.weights, "cells": segment.cells.ravel(),
                 "header": np.frombuffer(header, np.uint8).copy(), "header_size": np.array([len(header)], np.int64)}
        device = self.device
        for name, _ in STATES:
            part = parts[name]
            if part is not None and (len(part) or name == "header_size"):
                tensor = torch.from_numpy(np.ascontiguousarray(part))
                getattr(self, name).append(tensor if device.type == "cpu" else tensor.to(device))
        book = self._book
        book.rows += len(segment.scores)
        book.segments += 1
        book.last_header = header
        book.fresh = False
        book.token = self._state_token()

    def _state_token(self) -> tuple:
        """What tells the states the live accumulator wrote from states put in their place, at once:
        replacing the states (``merge_state``, ``reset``, a sync, a move) sets new lists or tensors."""
        sizes = self.header_size
        return id(sizes), len(sizes) if isinstance(sizes, list) else -1, id(self.scores)

    def _in_step(self) -> bool:
        """Whether the states are those the live accumulator wrote: the same lists, or copies of them
        (an unsync restores copies; moving the metric to a device makes new lists), but not states
        loaded from a checkpoint."""
        book = self._book
        if book.replaced:
            return False
        if book.token == self._state_token():
            return True
        headers = self.header
        same = (isinstance(headers, list) and len(headers) == book.segments and
                (not headers or headers[-1].cpu().numpy().tobytes() == book.last_header))
        if same:
            book.token = self._state_token()
        return same

    def _arrays(self) -> dict[str, np.ndarray]:
        """Each state as one array (on the CPU)."""
        out = {}
        for name, dtype in STATES:
            state = getattr(self, name)
            if isinstance(state, list):
                state = torch.cat(state) if state else torch.zeros(0, dtype=dtype)
            out[name] = state.detach().cpu().numpy().astype(np.dtype(str(dtype).removeprefix("torch.")), copy=False)
        return out


class _Book:
    """The metric's own bookkeeping, beside its states: the live accumulator (the states' rows,
    read), where its next segment starts, and what tells that the states are still its own."""

    live: FairnessAccumulator
    mark: tuple = ((), 0, None)
    fresh: bool = True  # the next segment starts a stream
    rows: int = 0  # rows in the states
    waiting: int = 0  # samples added since the last flush (in the live accumulator's journal)
    rewrite_at: int = COMPACT_FROM  # rows at which the states are made one segment again
    token: tuple = ()
    segments: int = 0  # segments in the states
    last_header: bytes = b""  # the last of their headers (each holds a number used once: see _header)
    replaced: bool = False  # states loaded from a checkpoint since


class FairnessValue(Metric):
    """One value of a :class:`FairnessMetric`'s :meth:`~FairnessMetric.compute`, as a metric object
    (made by :meth:`FairnessMetric.value`): its ``compute()`` is that value as a tensor; it holds no
    state of its own (update the parent), and its ``reset()`` resets the parent."""

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    def __init__(self, parent: FairnessMetric, key: str, **kwargs: Any):
        super().__init__(**kwargs)
        object.__setattr__(self, "parent", parent)  # not a submodule: its states are the parent's alone
        self.key = key
        # The parent gathers the ranks and keeps the computed values; the wrapper Metric puts around
        # compute (a sync of this metric's no states, a warning that it saw no update) is left out.
        self.compute = self._value

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: the parent metric holds the batches."""

    def compute(self) -> torch.Tensor:
        """The value, from the parent's :meth:`~FairnessMetric.compute`."""
        return self._value()

    def _value(self) -> torch.Tensor:
        values = self.parent.compute()
        if self.key not in values:
            raise ValueError(f"{self.key!r} is not among the metric's values: {sorted(values)}")
        return torch.tensor(values[self.key], dtype=torch.float64)

    def reset(self) -> None:
        super().reset()
        self.parent.reset()


def _decode(arrays: dict[str, np.ndarray], options: dict[str, Any]) -> FairnessAccumulator:
    """The accumulator of the states' segments: one per stream (rank or merged metric), merged."""
    sizes = arrays["header_size"].tolist()
    ends = np.cumsum(sizes).tolist()
    at = dict.fromkeys(("scores", "keys", "counts", "weights", "cells"), 0)
    streams: list[FairnessAccumulator] = []
    for end, size in zip(ends, sizes):
        header = json.loads(arrays["header"][end - size:end].tobytes())
        rows = header["rows"]
        lengths = {"scores": rows * np.dtype(header["dtype"]).itemsize, "keys": rows,
                   "counts": rows if header["counts"] else 0, "weights": rows if header["weights"] else 0,
                   "cells": header["cells"] * len(header["groups"])}
        parts = {}
        for name, length in lengths.items():
            parts[name] = arrays[name][at[name]:at[name] + length]
            at[name] += length
        segment = Segment.from_parts(header, parts["scores"].view(np.dtype(header["dtype"])),
                                     parts["keys"].view(np.uint32), parts["counts"], parts["weights"], parts["cells"])
        if segment.start or not streams:
            streams.append(FairnessAccumulator(**options))
        streams[-1].apply(segment)
    merged = streams[0] if streams else FairnessAccumulator(**options)
    for other in streams[1:]:
        merged.merge(other)
    return merged


_PLAIN_HEADERS: dict[tuple, tuple[bytes, bytes]] = {}
_ids = itertools.count(int.from_bytes(os.urandom(6), "little") << 16)  # unique across processes too


def _header(segment: Segment) -> bytes:
    """A segment's header as JSON (UTF-8), with a number used once (``"id"``: a copy of the states is told
    from other states by their last header); that of a batch that found nothing new from a template."""
    if segment.reading is not None or segment.start or len(segment.cells) or any(segment.groups):
        return json.dumps({**segment.header(), "id": next(_ids)}, separators=(",", ":")).encode()
    key = (segment.scores.dtype.str, segment.weights is not None, len(segment.groups))
    around = _PLAIN_HEADERS.get(key)
    if around is None:
        before, after = json.dumps({**segment.header(), "rows": -1}, separators=(",", ":")).split('"rows":-1')
        around = _PLAIN_HEADERS[key] = (f'{before}"rows":'.encode(), after.encode())
    return around[0] + f"{len(segment.scores)},\"id\":{next(_ids)}".encode() + around[1]


_WORDS = ((re.compile(r"\by_true\b"), "target"), (re.compile(r"\by_score\b"), "preds"),
          (re.compile(r"to the accumulator"), "to FairnessMetric"),
          (re.compile(r" \(the command line leaves such rows out with a note, as fairmedfm score does\)"), ""),
          (re.compile(r"at samples (\[[^\]]*\])"), r"at \1 in this batch"))


def _torch_words(message: str) -> str:
    """An accumulator's message in the metric's terms: its argument names, positions in the batch."""
    for pattern, words in _WORDS:
        message = pattern.sub(words, message)
    return message


def _loaded(module: FairnessMetric, incompatible_keys: Any) -> None:
    """After ``load_state_dict`` (of the metric or of a module holding it): where it set the metric's
    states (persistent ones), they replace the batches the live accumulator holds."""
    if module._book.token != module._state_token():
        module._book.replaced = True


def _plain(sensitive_features: Any) -> Any:
    """A dict of tensors as a dict of arrays (each moved to the CPU once); anything else as it is."""
    if isinstance(sensitive_features, dict):
        return {name: value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
                for name, value in sensitive_features.items()}
    return sensitive_features
