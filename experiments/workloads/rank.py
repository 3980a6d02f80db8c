"""What every PyTorch rank program sets up and tears down: the process group (gloo on CPU,
NCCL when CUDA is present and the run is not an emulation), the device and the threads.

A run folder holds ``run.json`` (written by :mod:`.launch`, or by
:mod:`experiments.emulator.launch` for an emulation): ``workload``, ``config`` (the params
section as a dict), ``batch_size``, ``ranks``, ``seed``, ``data_dir``, ``run_dir``,
``checkpoint_dir``, ``compute`` (the resolved compute model of a sleep run or an emulation) and,
for an emulation, ``emulator``. The loop and the records are :mod:`.loop`'s.
"""

from __future__ import annotations

import os

from .loop import emulated, threads_per_rank


def setup_torch(run: dict):
    """Initialise the process group; returns (rank, world, local_rank, device, sync).

    An emulation stays on the CPU (gloo) even where CUDA is present: it builds no model."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.set_num_threads(threads_per_rank(run, int(os.environ.get("LOCAL_WORLD_SIZE", world))))
    cuda = torch.cuda.is_available() and not emulated(run)
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


def finish() -> None:
    """Leave together: a last barrier, then the process group is destroyed."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
