"""Real PyTorch and torchmetrics: 16-bit tensors in every function that takes scores, the
FairnessMetric alone, in a MetricCollection and over two gloo DDP ranks."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

import fairmedfm_fast as fm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    scores = rng.random(n) * 0.7 + 0.3 * y
    return y, scores, {"sex": rng.choice(["F", "M"], n), "site": rng.integers(0, 3, n)}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_tensors_of_every_float_dtype_give_the_numbers_of_their_values(dtype):
    y, scores, groups = data()
    tensor = torch.tensor(scores, dtype=getattr(torch, dtype), requires_grad=True)
    # the values the tensor holds, as NumPy (bfloat16 values are float32 values)
    values = tensor.detach().float().numpy() if dtype == "bfloat16" else tensor.detach().numpy()
    report, expected = fm.evaluate(torch.tensor(y), tensor, groups), fm.evaluate(y, values, groups)
    pd.testing.assert_frame_equal(report.by_group, expected.by_group)
    pd.testing.assert_frame_equal(report.summary, expected.summary)
    assert fm.auc_gap(y, tensor, sensitive_features=groups["site"]) == fm.auc_gap(
        y, values, sensitive_features=groups["site"])
    # a non-contiguous view (every other row of a matrix of two score columns)
    matrix = torch.stack([1 - tensor.detach(), tensor.detach()], dim=1)
    assert not matrix[:, 1].is_contiguous()
    assert fm.auc_gap(y, matrix[:, 1], sensitive_features=groups["site"]) == fm.auc_gap(
        y, values, sensitive_features=groups["site"])


def test_metric_alone_and_in_a_metric_collection_equals_evaluate():
    from torchmetrics import MetricCollection
    from torchmetrics.classification import BinaryAUROC

    from fairmedfm_fast.torch import FairnessMetric

    y, scores, groups = data(4000, 1)
    tensor = torch.tensor(scores, dtype=torch.float32)
    collection = MetricCollection({"auroc": BinaryAUROC(), "fair": FairnessMetric(),
                                   "fixed": FairnessMetric(threshold=0.4)})
    single = FairnessMetric()
    for a in range(0, 4000, 512):
        batch = {name: values[a:a + 512] for name, values in groups.items()}
        collection.update(tensor[a:a + 512], torch.tensor(y[a:a + 512]), sensitive_features=batch)
        single(tensor[a:a + 512], torch.tensor(y[a:a + 512]), batch)  # forward adds the batch
    values = collection.compute()
    expected = fm.evaluate(y, tensor, groups).scalars()
    fixed = fm.evaluate(y, tensor, groups, threshold=0.4).scalars()
    assert {key: values[f"fair_{key}"] for key in expected} == expected
    assert {key: values[f"fixed_{key}"] for key in fixed} == fixed
    assert single.compute() == expected
    assert single.report.summary.loc["site", "auc-gap"] == expected["auc_gap/site"]
    single.reset()
    assert single.accumulator.n_samples == 0


def _ddp(tmp_path, *extra):
    out = tmp_path / "values.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(Path(__file__).parent / "_ddp_fairness.py"), str(out), *extra], check=True,
                   env=env, timeout=300)
    return json.loads(out.read_text()) if out.exists() else None


def _all_batches():
    sys.path.insert(0, str(Path(__file__).parent))
    from _ddp_fairness import batches

    parts = batches()
    scores = torch.cat([part[0] for part in parts])
    y = torch.cat([part[1] for part in parts])
    groups = {name: np.concatenate([part[2][name] for part in parts]) for name in ("sex", "site")}
    return fm.evaluate(y, scores, groups, intersectional=True).scalars()


def test_two_gloo_ranks_give_evaluate_on_all_samples(tmp_path):
    """About 10 s: two processes that import torch and the kernels (from the JIT cache)."""
    result = _ddp(tmp_path)
    expected = _all_batches()
    assert result["values"].keys() == expected.keys()
    for key, value in expected.items():
        assert result["values"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        assert result["again"][key] == result["values"][key]
    assert result["local"] == 3 * 700  # rank 0 kept its own share


def test_two_gloo_ranks_checkpointed_half_way_and_resumed_in_new_processes(tmp_path):
    """Each rank saves its state_dict half-way; two new processes load it (weights_only=True), add
    the rest and give evaluate on every batch."""
    assert _ddp(tmp_path, str(tmp_path), "1") is None
    assert sorted(path.name for path in tmp_path.glob("rank*.pt")) == ["rank0.pt", "rank1.pt"]
    result = _ddp(tmp_path, str(tmp_path), "2")
    expected = _all_batches()
    assert result["values"].keys() == expected.keys()
    for key, value in expected.items():
        assert result["values"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert result["local"] == 3 * 700


def test_every_function_that_takes_scores_takes_16_bit_tensors():
    """bfloat16 and float16 tensors give the numbers of the float32 / float16 arrays of their values."""
    import warnings

    y, scores, groups = data(1500, 2)
    site = groups["site"]
    for dtype in (torch.bfloat16, torch.float16):
        tensor = torch.tensor(scores, dtype=dtype)
        values = tensor.float().numpy() if dtype == torch.bfloat16 else tensor.numpy()
        for name in ("auc_gap", "worst_group_auc", "accuracy_gap", "bce_gap", "ece_gap",
                     "equal_opportunity_difference", "equalized_odds_score"):
            function = getattr(fm, name)
            assert function(y, tensor, sensitive_features=site) == function(y, values, sensitive_features=site), name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            assert fm.classification_fairness(tensor, y, site) == fm.classification_fairness(values, y, site)
            assert fm.segmentation_fairness(tensor, site) == fm.segmentation_fairness(values, site)
        pd.testing.assert_frame_equal(fm.evaluate_segmentation(groups, dice=tensor).summary,
                                      fm.evaluate_segmentation(groups, dice=values).summary)
        two = pd.DataFrame({"a": y, "b": 1 - y})
        pd.testing.assert_frame_equal(
            fm.evaluate_tasks(two, torch.stack([tensor, tensor], 1), groups).summary,
            fm.evaluate_tasks(two, np.stack([values, values], 1), groups).summary)
        maps, masks = tensor[:1200].reshape(12, 10, 10), torch.tensor(y[:1200].reshape(12, 10, 10))
        pd.testing.assert_frame_equal(
            fm.evaluate_voxels(maps, masks, {"sex": ["F", "M"] * 6}).by_group,
            fm.evaluate_voxels(maps.float().numpy() if dtype == torch.bfloat16 else maps.numpy(), masks.numpy(),
                               {"sex": ["F", "M"] * 6}).by_group)
