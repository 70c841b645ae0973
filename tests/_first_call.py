"""A new user's first calls, run as a script in a new process (``python tests/_first_call.py [--all]``).

Counts every compilation of the process with numba's ``numba:compile`` event, and prints one JSON
line: the compilations (``module.name`` and argument types), the argument types every kernel of
``fairmedfm_fast.kernels`` holds afterwards (compiled or loaded), the warnings, and a few numbers to compare with the oracle. The first calls: ``evaluate`` on 1,000
samples with 1 attribute, ``auc_gap``, ``evaluate_segmentation`` on 8 small mask pairs,
``evaluate_voxels`` and ``fairmedfm-fast score`` of a 1,000-row CSV. With ``--cache``, the
kernels' writable cache folders too. With ``--all``, more of the API:
float32 and read-only scores, weights, several attributes, a DataFrame of strings, the one-number
functions, memory-mapped masks, Dice scores.
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import warnings

import numpy as np
from numba.core import event

compiled = []


class _Listener(event.Listener):
    def on_start(self, ev):
        dispatcher = ev.data["dispatcher"]
        function = dispatcher.py_func
        compiled.append([f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}",
                         [str(t) for t in ev.data["args"]]])

    def on_end(self, ev):
        pass


event.register("numba:compile", _Listener())

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import fairmedfm_fast as fm
    from fairmedfm_fast import cli

    everything = "--all" in sys.argv
    rng = np.random.default_rng(0)
    y = np.tile([0, 1], 500)
    p = np.clip(0.3 * y + 0.7 * rng.random(1000), 0, 1)
    sex = np.repeat(["F", "M"], 500)
    numbers = {"auc_gap_evaluate": float(fm.evaluate(y, p, {"sex": sex}).summary.loc["sex", "auc-gap"]),
               "auc_gap": float(fm.auc_gap(y, p, sensitive_features=sex))}
    masks = rng.random((8, 16, 16)) < 0.3
    predictions = masks ^ (rng.random((8, 16, 16)) < 0.1)
    groups = {"sex": ["F", "M"] * 4}
    numbers["dice_gap"] = float(fm.evaluate_segmentation(groups, pred_masks=predictions, true_masks=masks)
                                .summary.loc["sex", "delta_dice"])
    maps = (0.5 * rng.random((8, 16, 16)) + 0.4 * masks).astype(np.float32)
    fm.evaluate_voxels(maps, masks, groups)
    with tempfile.TemporaryDirectory() as folder:
        table = os.path.join(folder, "predictions.csv")
        with open(table, "w") as handle:
            handle.write("label,prob,sex\n" + "".join(f"{a},{b!r},{c}\n" for a, b, c in zip(y, p.tolist(), sex)))
        with contextlib.redirect_stdout(io.StringIO()) as printed, contextlib.redirect_stderr(io.StringIO()):
            cli.main(["score", table])
        numbers["score"] = json.loads(printed.getvalue())["sex"]["auc-gap"] if "sex" in printed.getvalue() else None
        if everything:
            weights = rng.random(1000) + 0.5
            site = rng.choice(["a", "b", "c"], 1000)
            frozen = p.copy()
            frozen.flags.writeable = False
            for scores in (p.astype(np.float32), frozen):
                fm.evaluate(y, scores, {"sex": sex, "site": site}, sample_weight=weights)
                fm.ece_gap(y, scores, sensitive_features=site)
            fm.evaluate(y, p, {"sex": sex}, n_boot=5, random_state=0)
            import pandas as pd

            frame = pd.DataFrame({"sex": sex, "site": site})  # pandas' default str columns: Arrow-backed
            fm.evaluate(y, p, frame)
            for name in ("auc_gap", "worst_group_auc", "accuracy_gap", "ece_gap", "equalized_odds_score"):
                getattr(fm, name)(y, p, sensitive_features=frame["site"])
            fm.evaluate_segmentation(groups, dice=rng.random(8))
            paths = {"pred": [], "true": []}
            for i in range(2):
                for role, array in (("pred", predictions[i]), ("true", masks[i])):
                    path = os.path.join(folder, f"{role}{i}.npy")
                    np.save(path, array.astype(np.uint8))
                    paths[role].append(path)
            fm.evaluate_segmentation({"sex": ["F", "M"]}, pred_masks=paths["pred"], true_masks=paths["true"])

from fairmedfm_fast import warmup  # noqa: E402
from fairmedfm_fast.kernels._caches import cache_location  # noqa: E402
from fairmedfm_fast.kernels._signatures import spell  # noqa: E402

kernels = warmup.kernels()
print(json.dumps({
    "compiled": compiled,
    "held": {name: [[spell(t) for t in signature] for signature in k.overloads] for name, k in kernels.items()},
    # Finding the writable folder may create it: only asked for (a process that compiled has one).
    "cache": sorted({str(cache_location(k)) for k in kernels.values() if k.overloads}) if "--cache" in sys.argv
    else None,
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
    "numbers": numbers,
}))
