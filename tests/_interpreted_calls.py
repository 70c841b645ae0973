"""Small calls over the classification and segmentation paths, run as a script in a new process
(``python tests/_interpreted_calls.py``); prints one JSON line: every report in full, and the
kernels numba compiled (the ``numba:compile`` event). tests/test_interpreted.py runs it with an
empty cache (the kernels' plain-Python copies answer) and with ``FAIRMEDFM_FAST_INTERPRET=never``
(compiled kernels answer) and compares the two."""
import json
import warnings

import numpy as np
from numba.core import event

compiled = []


class _Listener(event.Listener):
    def on_start(self, ev):
        function = ev.data["dispatcher"].py_func
        compiled.append(f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}")

    def on_end(self, ev):
        pass


event.register("numba:compile", _Listener())

import fairmedfm_fast as fm  # noqa: E402 - after the listener, which must see every compile

rng = np.random.default_rng(5)
n = 700
y = (rng.random(n) < 0.35).astype(np.int64)
tied = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), 2)  # many ties
smooth = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y)))
single = np.where(np.arange(n) < 30, "only", "rest").astype(object)
y[:30] = 0  # a group with one class: skipped
age = rng.uniform(20, 90, n)
age[5:12] = np.nan
features = {"sex": rng.choice(["F", "M"], n), "site": rng.integers(0, 4, n), "age": age, "single": single}
weights = rng.integers(1, 4, n).astype(np.float64)
reports = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    reports["float64_ties"] = fm.evaluate(y, tied, features, bins={"age": 3}).to_dict()
    reports["float32"] = fm.evaluate(y, smooth.astype(np.float32), features, bins={"age": 3}).to_dict()
    reports["weights"] = fm.evaluate(y, smooth, features, bins={"age": 3}, sample_weight=weights).to_dict()
    reports["threshold_metrics"] = fm.evaluate(y, tied.astype(np.float32), {"sex": features["sex"]}, threshold=0.3,
                                               metrics=["ap", "brier", "fpr", "fnr", "selection_rate"]).to_dict()
    reports["intersectional"] = fm.evaluate(y, smooth, {"sex": features["sex"], "site": features["site"]},
                                            intersectional=True).to_dict()
    reports["one_number"] = [fn(y, tied, sensitive_features=features["site"]) for fn in
                             (fm.auc_gap, fm.ece_gap, fm.bce_gap, fm.accuracy_gap,
                              fm.equal_opportunity_difference, fm.equalized_odds_score)]
    reports["find_threshold"] = float(fm.metrics.find_threshold(smooth, y))
    masks = rng.random((8, 12, 12)) < 0.3
    predictions = masks ^ (rng.random((8, 12, 12)) < 0.1)
    groups = {"sex": ["F", "M"] * 4}
    reports["segmentation"] = fm.evaluate_segmentation(groups, pred_masks=predictions, true_masks=masks,
                                                       metrics=["dice", "hd95", "assd", "nsd"], nsd_tolerance=1.0).to_dict()
    maps = (0.5 * rng.random((8, 12, 12)) + 0.4 * masks).astype(np.float32)
    reports["voxels"] = fm.evaluate_voxels(maps, masks, groups).to_dict()
print(json.dumps({"compiled": compiled, "reports": reports}, default=str, sort_keys=True))
