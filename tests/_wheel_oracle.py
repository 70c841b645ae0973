"""Oracle comparisons against an installed fairmedfm_fast, run as a script in a new process
(``python tests/_wheel_oracle.py``, from a folder outside the checkout, with the wheel installed).

Calls ``evaluate``, the one-number functions and ``evaluate_segmentation`` of both packages on a few
seeded inputs through ``compare.check`` (values within 1e-9, the same warnings, inputs unchanged),
counts every compilation of the process with numba's ``numba:compile`` event and prints one JSON line:
where ``fairmedfm_fast`` was imported from, the number of comparisons, and the compilations.
"""
import json

import numpy as np
import pandas as pd
from numba.core import event

compiled = []


class _Listener(event.Listener):
    def on_start(self, ev):
        function = ev.data["dispatcher"].py_func
        compiled.append([f"{function.__module__}.{function.__name__}", [str(t) for t in ev.data["args"]]])

    def on_end(self, ev):
        pass


event.register("numba:compile", _Listener())

import fairmedfm  # noqa: E402
from compare import check  # noqa: E402

import fairmedfm_fast  # noqa: E402

checked = 0
for seed, n in ((0, 200), (1, 1000), (2, 57)):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    p[: n // 10] = np.round(p[: n // 10], 1)  # ties
    features = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "site": rng.choice(["a", "b", "c", "d"], n)})
    check("evaluate", y, p, features[["sex"]])
    check("evaluate", y, p, features, intersectional=seed == 1)
    for name in ("auc_gap", "worst_group_auc", "accuracy_gap", "ece_gap", "equalized_odds_score"):
        check(name, y, p, sensitive_features=features["site"])
    masks = rng.random((8, 12, 12)) < 0.3
    predictions = masks ^ (rng.random((8, 12, 12)) < 0.1)
    groups = {"sex": ["F", "M"] * 4}
    check("evaluate_segmentation", groups, pred_masks=predictions, true_masks=masks)
    check("evaluate_segmentation", groups, dice=rng.random(8))
    checked += 9

print(json.dumps({"module": fairmedfm_fast.__file__, "oracle": fairmedfm.__version__, "checked": checked,
                  "compiled": compiled}))
