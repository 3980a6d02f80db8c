"""What every PyTorch rank program shares: reading its run description, the process group
(gloo on CPU, NCCL when CUDA is present), the device, threads, and writing its records.

A run folder holds ``run.json`` (written by :mod:`.launch`): ``workload``, ``config`` (the
params section as a dict), ``batch_size``, ``ranks``, ``seed``, ``data_dir``, ``run_dir``.
Each rank writes ``steps-r<rank>.csv`` (one row per step, :mod:`.steptimer`),
``app-r<rank>.jsonl`` (phases), ``loader-r<rank>-p<pid>.jsonl`` (loader latencies) and
``rank-r<rank>.json`` (device, peak RSS, evaluation and checkpoint facts).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def read_run(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m experiments.workloads.<workload> RUN_DIR")
    return json.loads((Path(argv[0]) / "run.json").read_text())


def setup_torch(run: dict):
    """Initialise the process group; returns (rank, world, local_rank, device, sync)."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    threads = run["config"]["train"].get("threads_per_rank") or max(1, (os.cpu_count() or 1) // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", world))))
    torch.set_num_threads(threads)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local % torch.cuda.device_count())
        device = torch.device("cuda", local % torch.cuda.device_count())
        sync = torch.cuda.synchronize
    else:
        device, sync = torch.device("cpu"), None
    if "MASTER_ADDR" in os.environ:
        dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    torch.manual_seed(run["seed"])  # identical initial weights on every rank
    return rank, world, local, device, sync


def write_rank(run: dict, rank: int, steps: list[dict], facts: dict) -> None:
    import pandas as pd

    from .steptimer import peak_rss_bytes

    d = Path(run["run_dir"])
    pd.DataFrame(steps).to_csv(d / f"steps-r{rank}.csv", index=False)
    (d / f"rank-r{rank}.json").write_text(json.dumps({"rank": rank, **facts, **peak_rss_bytes()}))


def finish() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
