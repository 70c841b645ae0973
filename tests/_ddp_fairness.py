"""Two gloo ranks on localhost each update a FairnessMetric with their share of the batches; rank 0
writes compute() as JSON to argv[1] (run by tests/test_torch.py).

``python _ddp_fairness.py OUT CHECKPOINT_FOLDER 1`` stops half-way through the batches, each rank saving
its metric's ``state_dict()`` (``persistent(True)``) there; ``... 2`` starts fresh processes that load
them with ``torch.load(weights_only=True)``, add the other half and compute."""
import json
import os
import socket
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def batches(n_batches=6, size=700):
    """The same batches on every rank (each rank takes every other one)."""
    rng = np.random.default_rng(42)
    out = []
    for _ in range(n_batches):
        y = rng.integers(0, 2, size)
        scores = torch.tensor(rng.random(size) * 0.7 + 0.3 * y, dtype=torch.bfloat16)
        out.append((scores, torch.tensor(y), {"sex": rng.choice(["F", "M"], size), "site": rng.integers(0, 3, size)}))
    return out


def run(rank, world, port, path, folder=None, phase=0):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from fairmedfm_fast.torch import FairnessMetric

    metric = FairnessMetric(intersectional=True)
    metric.persistent(True)
    everything = batches()
    half = len(everything) // 2
    chosen = range(len(everything)) if not phase else range(half) if phase == 1 else range(half, len(everything))
    if phase == 2:
        metric.load_state_dict(torch.load(os.path.join(folder, f"rank{rank}.pt"), weights_only=True))
    for k in chosen:
        if k % world == rank:
            metric.update(*everything[k])
    if phase == 1:
        torch.save(metric.state_dict(), os.path.join(folder, f"rank{rank}.pt"))
        dist.destroy_process_group()
        return
    values = metric.compute()  # synchronises the ranks
    again = metric.compute()  # a second compute gathers again, without counting twice
    if rank == 0:
        with open(path, "w") as handle:
            json.dump({"values": values, "again": again, "local": metric.accumulator.n_samples}, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    # rank 1 in a new process, rank 0 in this one (one interpreter fewer to start than mp.spawn)
    extra = (sys.argv[2], int(sys.argv[3])) if len(sys.argv) > 3 else ()
    other = mp.get_context("spawn").Process(target=run, args=(1, 2, free, sys.argv[1], *extra))
    other.start()
    run(0, 2, free, sys.argv[1], *extra)
    other.join(120)
    sys.exit(other.exitcode)
