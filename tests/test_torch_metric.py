"""FairnessMetric by torchmetrics' rules, one test per thing a torchmetrics or Lightning user does:
merge_state, checkpoints, torch.load(weights_only=True), a rejected batch, a change of kind, the
messages, reset, plot, dist_sync_on_step, Lightning's log and log_dict (real torch, torchmetrics and
Lightning)."""
import io
import warnings

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

import fairmedfm_fast as fm  # noqa: E402
from fairmedfm_fast.torch import FairnessMetric  # noqa: E402


def batches(n=4096, size=512, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(0, n, size):
        y = rng.integers(0, 2, size)
        scores = rng.random(size) * 0.7 + 0.3 * y
        out.append((torch.tensor(scores, dtype=torch.float32), torch.tensor(y),
                    {"sex": rng.choice(["F", "M"], size), "site": rng.choice(["a", "b", "c"], size)}))
    return out


def evaluate_all(parts, **options):
    scores = torch.cat([part[0] for part in parts])
    y = torch.cat([part[1] for part in parts])
    groups = {name: np.concatenate([part[2][name] for part in parts]) for name in parts[0][2]}
    return fm.evaluate(y, scores, groups, **options).scalars()


def close(values, expected):
    assert values.keys() == expected.keys()
    for key, value in expected.items():
        assert values[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def filled(parts, **options):
    metric = FairnessMetric(**options)
    for part in parts:
        metric.update(*part)
    return metric


def test_merge_state_keeps_every_sample():
    parts = batches()
    one, two = filled(parts[:4]), filled(parts[4:])
    one.merge_state(two)
    close(one.compute(), evaluate_all(parts))
    assert one.report.metadata["n_samples"] == 4096
    # and a batch added after the merge joins them
    extra = batches(512, 512, seed=1)
    one.update(*extra[0])
    close(one.compute(), evaluate_all(parts + extra))


def test_a_checkpoint_keeps_the_data_and_loads_with_weights_only():
    parts = batches()
    metric = filled(parts[:5])
    metric.persistent(True)
    buffer = io.BytesIO()
    torch.save(metric.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)  # tensors only, no pickle of our classes
    restored = FairnessMetric()
    restored.persistent(True)
    restored.load_state_dict(state)
    close(restored.compute(), evaluate_all(parts[:5]))
    for part in parts[5:]:  # the epoch goes on after the reload
        restored.update(*part)
    close(restored.compute(), evaluate_all(parts))
    # a state_dict without persistence holds nothing of the metric (torchmetrics' default)
    assert not any(key in FairnessMetric().state_dict() for key in ("scores", "header"))


def test_the_state_stays_compact_over_many_batches():
    # 16-bit scores: the table, and so the states, stay bounded by the distinct (score, label, cell)
    # rows (here at most 2 x 2 x 16,257 bfloat16 values in [0, 1)), whatever the number of batches
    from fairmedfm_fast.accumulator import COMPACT_FROM

    rng = np.random.default_rng(3)
    metric = FairnessMetric()
    parts = []
    for _ in range(600):
        y = rng.integers(0, 2, 1000)
        scores = torch.tensor(rng.random(1000), dtype=torch.bfloat16)
        parts.append((scores, torch.tensor(y), {"sex": rng.choice(["F", "M"], 1000)}))
        metric.update(*parts[-1])
    rows = sum(len(tensor) for tensor in metric.keys)
    assert rows < 2 * COMPACT_FROM < 600 * 1000
    metric.persistent(True)
    restored = FairnessMetric()
    restored.load_state_dict(metric.state_dict())
    close(restored.compute(), evaluate_all(parts))


def test_a_rejected_batch_changes_nothing():
    parts = batches(2048)
    metric = FairnessMetric()
    scores, target, groups = parts[0]
    with pytest.raises(ValueError, match="target has 511 samples but preds has 512"):
        metric.update(scores * 8 - 4, target[:-1], groups)  # logits, one label short
    for part in parts:  # probabilities: read as such, not through a sigmoid
        metric.update(*part)
    close(metric.compute(), evaluate_all(parts))
    assert "score_transform" not in metric.report.metadata


def test_a_change_of_kind_between_batches_is_refused():
    metric = FairnessMetric()
    scores, target, groups = batches(1024)[0]
    metric.update(scores, target, {"sex": np.where(groups["sex"] == "F", 0, 1)})
    with pytest.raises(ValueError, match=r"sensitive_features\['sex'\] holds text values in this batch but integer"):
        metric.update(scores, target, {"sex": groups["sex"]})
    empty = {"sex": np.array([None] * 512, object)}  # no value: fixes no kind, and is accepted
    metric.update(scores, target, empty)
    assert metric.accumulator.n_samples == 1024


def test_messages_use_the_metric_s_argument_names():
    metric = FairnessMetric()
    with pytest.raises(ValueError, match=r"call update\(preds, target, sensitive_features\) first"):
        metric.compute()
    scores, target, groups = batches(1024)[0]
    metric.update(scores, target, groups)
    broken = scores.clone()
    broken[7] = float("nan")
    with pytest.raises(ValueError) as error:
        metric.update(broken, target, groups)
    message = str(error.value)
    assert "preds has 1 missing values" in message and "at [7] in this batch" in message
    assert "probabilitys" not in message and "command line" not in message and "y_score" not in message


def test_reset_forgets_the_report_and_the_batches():
    parts = batches(2048)
    metric = filled(parts)
    metric.compute()
    metric.reset()
    assert metric.report is None and metric.accumulator.n_samples == 0
    assert all(getattr(metric, name) == [] for name in ("scores", "keys", "header"))
    metric.update(*parts[0])
    close(metric.compute(), evaluate_all(parts[:1]))


def test_plot_draws_the_report_or_says_what_to_do():
    pytest.importorskip("matplotlib")
    metric = filled(batches(2048))
    with pytest.raises(ValueError, match=r"call compute\(\) first"):
        metric.plot()
    metric.compute()
    assert metric.plot() is not None


def test_dist_sync_on_step_is_refused():
    with pytest.raises(ValueError, match="dist_sync_on_step=True"):
        FairnessMetric(dist_sync_on_step=True)


def test_forward_adds_the_batch_and_returns_none():
    parts = batches(2048)
    metric = FairnessMetric()
    assert all(metric(*part) is None for part in parts)
    close(metric.compute(), evaluate_all(parts))


def test_one_value_as_a_metric_object():
    parts = batches(2048)
    metric = filled(parts)
    gap = metric.value("auc_gap/sex")
    expected = evaluate_all(parts)
    assert gap.compute().item() == pytest.approx(expected["auc_gap/sex"], abs=1e-12)
    with pytest.raises(ValueError, match="'auc_gap/age' is not among"):
        metric.value("auc_gap/age").compute()


def test_lightning_logs_the_values_without_warnings(tmp_path):
    lightning = pytest.importorskip("lightning.pytorch")
    parts = batches(2048, 256)
    logged = {}

    class Model(lightning.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.fairness = FairnessMetric()
            self.auc_gap = self.fairness.value("auc_gap/sex")
            self.eod = self.fairness.value("eod/site")

        def validation_step(self, batch, index):
            scores, target, groups = parts[index]
            self.fairness.update(scores, target, sensitive_features=groups)
            self.log("auc_gap_object", self.auc_gap, on_epoch=True, on_step=False)
            self.log("eod_object", self.eod, on_epoch=True, on_step=False)

        def on_validation_epoch_end(self):
            values = self.fairness.compute()
            self.log_dict(values, sync_dist=True)
            logged.update(values)

    loader = torch.utils.data.DataLoader(torch.zeros(len(parts), 1), batch_size=1)
    trainer = lightning.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = trainer.validate(Model(), loader, verbose=False)
    expected = evaluate_all(parts)
    close(logged, expected)
    assert results[0]["auc_gap_object"] == pytest.approx(expected["auc_gap/sex"], abs=1e-6)
    assert results[0]["eod_object"] == pytest.approx(expected["eod/site"], abs=1e-6)
    ours = [str(w.message) for w in caught if "sync_dist" in str(w.message) or "fairmedfm" in str(w.filename)
            or "torchmetrics" in str(w.filename)]
    assert ours == []


def test_the_state_is_tensors_in_torchmetrics_states():
    metric = filled(batches(1024))
    for name in ("scores", "keys", "cells", "header", "header_size"):
        state = getattr(metric, name)
        assert isinstance(state, list) and all(isinstance(t, torch.Tensor) for t in state), name
    assert metric._reductions["scores"].__name__ == "dim_zero_cat"
    assert pd.Series([t.dtype for t in metric.header]).eq(torch.uint8).all()


def test_batches_not_yet_written_to_the_states_survive_a_move_a_copy_and_a_non_persistent_load():
    # a step adds its batch to the accumulator; the states are written when torchmetrics reads them
    import copy
    import pickle

    parts = batches(2048)
    metric = FairnessMetric()
    holder = torch.nn.ModuleDict({"fairness": metric})
    for part in parts[:2]:
        metric.update(*part)
    holder.to("cpu")  # new state lists: the unwritten batches stay
    holder.load_state_dict(holder.state_dict())  # a non-persistent metric's states are not in it
    metric.update(*parts[2])
    close(copy.deepcopy(metric).compute(), evaluate_all(parts[:3]))
    close(pickle.loads(pickle.dumps(metric)).compute(), evaluate_all(parts[:3]))
    metric.update(*parts[3])
    close(metric.compute(), evaluate_all(parts))


def test_loading_a_checkpoint_replaces_the_batches_added_since():
    parts = batches(2048)
    metric = FairnessMetric()
    metric.persistent(True)
    for part in parts[:2]:
        metric.update(*part)
    saved = {key: [t.clone() for t in value] if isinstance(value, list) else value
             for key, value in metric.state_dict().items()}
    for part in parts[2:]:
        metric.update(*part)
    metric.load_state_dict(saved)
    close(metric.compute(), evaluate_all(parts[:2]))
    metric.update(*parts[3])
    close(metric.compute(), evaluate_all(parts[:2] + parts[3:]))


def test_lightning_ddp_on_two_processes_logs_every_rank_s_values_without_warnings(tmp_path):
    """About 15 s: Lightning starts a second process running tests/_lightning_ddp.py."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("lightning.pytorch")
    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    from _lightning_ddp import batches as ddp_batches

    out = tmp_path / "logged.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(here / "_lightning_ddp.py"), str(out)], check=True, env=env, timeout=300,
                   cwd=tmp_path, capture_output=True)
    result = json.loads(out.read_text())
    expected = evaluate_all(ddp_batches())
    close(result["logged"], expected)  # both ranks' batches
    assert result["results"]["auc_gap/sex"] == pytest.approx(expected["auc_gap/sex"], abs=1e-6)
    assert result["results"]["auc_gap_object"] == pytest.approx(expected["auc_gap/sex"], abs=1e-6)
    ours = [w for w in result["warnings"] if "sync_dist" in w or "fairmedfm" in w or "torchmetrics" in w]
    assert ours == []
