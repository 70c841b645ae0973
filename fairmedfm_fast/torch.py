"""Classification fairness as a torchmetrics ``Metric``: :class:`FairnessMetric`.

Needs PyTorch and torchmetrics (``pip install torch torchmetrics``), which the rest of the package
does not. The metric's state is a :class:`~fairmedfm_fast.FairnessAccumulator`; across DDP ranks
each rank's compact state is gathered (pickled into a byte tensor) and merged, so ``compute()``
equals :func:`~fairmedfm_fast.evaluate` on the samples of every rank.
"""
from __future__ import annotations

import itertools
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import torch
    from torchmetrics import Metric
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("fairmedfm_fast.torch needs PyTorch and torchmetrics; install them with "
                      "pip install torch torchmetrics") from error

from .accumulator import FairnessAccumulator
from .report import FairnessReport

__all__ = ["FairnessMetric"]

_instances = itertools.count()


class FairnessMetric(Metric):
    """Fairness of a binary classifier over the batches of a validation loop, for torchmetrics and
    Lightning.

    ``update(preds, target, sensitive_features, *, sample_weight=None)`` takes a batch in
    torchmetrics' order (scores first; tensors on any device and of any float dtype, or anything
    :func:`~fairmedfm_fast.evaluate` takes); ``compute()`` returns the report's
    :meth:`~fairmedfm_fast.FairnessReport.scalars` (``{"auc_gap/race": ..., "eod/sex": ...}``,
    ready for ``self.log_dict``); :attr:`report` is the full report of the last ``compute()``.

    Parameters
    ----------
    pos_label, score_type, score_column, bins, intersectional, metrics
        How a batch is read: as in :class:`~fairmedfm_fast.FairnessAccumulator`.
    threshold, min_group_size
        As in :func:`~fairmedfm_fast.evaluate`, applied by ``compute()``.
    **kwargs
        torchmetrics ``Metric`` options (``dist_sync_on_step``, ``process_group``, ...).

    Notes
    -----
    ``forward`` (calling the metric on a batch) adds the batch and returns None: the fairness of
    one batch is rarely defined (groups without both labels), so no per-batch value is computed.
    """

    is_differentiable = False
    higher_is_better = None
    full_state_update = False

    def __init__(self, *, pos_label: Any = None, score_type: str = "auto", score_column: int | None = None,
                 bins: dict | None = None, intersectional: bool = False, metrics: Sequence[str] | None = None,
                 threshold: float | None = None, min_group_size: int | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._options = {"pos_label": pos_label, "score_type": score_type, "score_column": score_column,
                         "bins": bins, "intersectional": intersectional, "metrics": metrics}
        self.accumulator = FairnessAccumulator(**self._options)
        self.threshold = threshold
        self.min_group_size = min_group_size
        # The accumulators of every rank, pickled, gathered when the metric synchronises.
        self.add_state("gathered", default=[], dist_reduce_fx=None)
        # A state of its own value, so that a MetricCollection never takes two of these metrics for
        # one (its compute groups share the registered states, and ours lives outside them).
        self.add_state("instance", default=torch.tensor(float(next(_instances))), dist_reduce_fx=None,
                       persistent=False)
        self._merged: FairnessAccumulator | None = None
        self.report: FairnessReport | None = None

    def update(self, preds: Any, target: Any, sensitive_features: Any, *, sample_weight: Any = None) -> None:
        """Add one batch: scores (probabilities, logits or an (n, k) matrix), labels, the batch's
        sensitive attributes (a DataFrame, a dict of arrays or tensors, ...) and optional weights."""
        self.accumulator.update(target, preds, _plain(sensitive_features), sample_weight=sample_weight)

    def forward(self, *args: Any, **kwargs: Any) -> None:
        """Add a batch (as :meth:`update`); returns None (see the class notes)."""
        self.update(*args, **kwargs)

    def compute(self) -> dict[str, float]:
        """The flat summary of the report on every batch (of every rank when distributed)."""
        accumulator = self._merged if self._merged is not None else self.accumulator
        self.report = accumulator.result(threshold=self.threshold, min_group_size=self.min_group_size)
        return self.report.scalars()

    def reset(self) -> None:
        super().reset()
        self.accumulator.reset()
        self._merged = None

    def _sync_dist(self, dist_sync_fn: Any = None, process_group: Any = None) -> None:
        payload = np.frombuffer(pickle.dumps(self.accumulator, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        self.gathered = [torch.from_numpy(payload.copy()).to(self.device)]
        if dist_sync_fn is None:
            super()._sync_dist(process_group=process_group)
        else:
            super()._sync_dist(dist_sync_fn, process_group)
        merged = FairnessAccumulator(**self._options)
        for part in self.gathered:  # every rank's, in rank order
            merged.merge(pickle.loads(part.cpu().numpy().tobytes()))
        self._merged = merged
        self.gathered = []

    def unsync(self, should_unsync: bool = True) -> None:
        super().unsync(should_unsync)
        if should_unsync:
            self._merged = None


def _plain(sensitive_features: Any) -> Any:
    """A dict of tensors as a dict of arrays (each moved to the CPU once); anything else as it is."""
    if isinstance(sensitive_features, dict):
        return {name: value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
                for name, value in sensitive_features.items()}
    return sensitive_features
