"""``fairmedfm_fast.dask.evaluate`` on a fresh ``LocalCluster`` (two worker processes), run as a script
(``python tests/_dask_first_call.py``): counts the compilations in this process and in each worker with
numba's ``numba:compile`` event, and prints one JSON line: those compilations, the workers' package
folders and a number to compare with the in-memory ``evaluate``.

The workers import the package the script's interpreter imports (an installed wheel in
``tests/test_wheel.py``), so their first call shows whether its shipped cache serves them.
"""
import json
import logging
import sys

import numpy as np
import pandas as pd


def listen(dask_worker=None):
    """Register a ``numba:compile`` listener in this process; its list is kept on ``dask_worker`` (or
    returned, in the client)."""
    from numba.core import event

    seen = []

    class Listener(event.Listener):
        def on_start(self, ev):
            function = ev.data["dispatcher"].py_func
            seen.append([f"{function.__module__.rsplit('.', 1)[-1]}.{function.__name__}",
                         [str(t) for t in ev.data["args"]]])

        def on_end(self, ev):
            pass

    event.register("numba:compile", Listener())
    if dask_worker is not None:
        dask_worker.fairmedfm_compiled = seen
        import fairmedfm_fast

        return fairmedfm_fast.__file__
    return seen


def main():
    import dask.dataframe as dd
    import distributed

    import fairmedfm_fast as fm
    from fairmedfm_fast import dask as fmd

    logging.getLogger("distributed").setLevel(logging.ERROR)
    in_client = listen()
    rng = np.random.default_rng(0)
    n = 4000
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame({"y": y, "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1),
                          "g": rng.choice(["a", "b", "c"], n), "h": rng.choice(["x", "y"], n)})
    numbers = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, distributed.Client(cluster) as client:
        modules = sorted(set(client.run(listen).values()))
        for dtype in (np.float64, np.float32):  # two-word and one-word records
            ddf = dd.from_pandas(frame.assign(p=frame["p"].astype(dtype)), npartitions=3)
            report = fmd.evaluate(ddf, label="y", score="p", sensitive=["g", "h"], intersectional=True)
            numbers[np.dtype(dtype).name] = float(report.summary.loc["g", "auc-gap"])
        in_workers = client.run(lambda dask_worker: dask_worker.fairmedfm_compiled)
    in_client = list(in_client)  # the Dask calls' (the in-memory ones below may compile in a checkout)
    for dtype in (np.float64, np.float32):
        expected = fm.evaluate(frame["y"], frame["p"].astype(dtype), frame[["g", "h"]], intersectional=True)
        numbers[f"in_memory_{np.dtype(dtype).name}"] = float(expected.summary.loc["g", "auc-gap"])
    print(json.dumps({"workers": {address: seen for address, seen in in_workers.items()}, "client": in_client,
                      "modules": modules, "numbers": numbers}))


if __name__ == "__main__":
    sys.exit(main())
