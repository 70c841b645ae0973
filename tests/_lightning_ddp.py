"""Lightning ``Trainer(strategy="ddp", devices=2, accelerator="cpu")`` validating with a FairnessMetric:
each rank logs every summary value (``log_dict`` of ``compute()``) and one value as a metric object;
rank 0 writes what was logged, and the warnings Lightning and torchmetrics gave, as JSON to argv[1]
(run by tests/test_torch_metric.py; Lightning starts the second rank by running this file again)."""
import json
import sys
import warnings

import numpy as np
import torch

warnings.simplefilter("always")
caught = []
warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: caught.append(
    f"{category.__name__}: {message} ({filename}:{lineno})")

import lightning.pytorch as pl  # noqa: E402

from fairmedfm_fast.torch import FairnessMetric  # noqa: E402


def batches(n_batches=8, size=300):
    rng = np.random.default_rng(7)
    out = []
    for _ in range(n_batches):
        y = rng.integers(0, 2, size)
        scores = torch.tensor(rng.random(size) * 0.7 + 0.3 * y, dtype=torch.float32)
        out.append((scores, torch.tensor(y), {"sex": rng.choice(["F", "M"], size),
                                              "site": rng.choice(["a", "b", "c"], size)}))
    return out


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.fairness = FairnessMetric()
        self.auc_gap = self.fairness.value("auc_gap/sex")
        self.logged = {}

    def validation_step(self, batch, index):
        scores, target, groups = batches()[int(batch[0, 0])]
        self.fairness.update(scores, target, sensitive_features=groups)
        self.log("auc_gap_object", self.auc_gap, on_epoch=True, on_step=False)

    def on_validation_epoch_end(self):
        values = self.fairness.compute()  # every rank's batches: the same values on every rank
        self.log_dict(values, sync_dist=True)  # the mean of equal values: no change, and no warning
        self.logged = values


if __name__ == "__main__":
    model = Model()
    loader = torch.utils.data.DataLoader(torch.arange(8, dtype=torch.float32).reshape(8, 1), batch_size=1)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    results = trainer.validate(model, loader, verbose=False)
    if trainer.global_rank == 0:
        with open(sys.argv[1], "w") as handle:
            json.dump({"logged": model.logged, "results": results[0], "warnings": caught}, handle)
