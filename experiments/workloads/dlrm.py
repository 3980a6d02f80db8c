"""DLRM (PyTorch), one rank's training program: ``torchrun ... -m experiments.workloads.dlrm RUN_DIR``.

Model as the reference (Section 4.1.3): a bottom MLP on the 13 dense features, one
``EmbeddingBag`` per categorical feature (rows capped at ``max_cardinality``, ids folded with
``%`` as the reference's ``--max-ind-range``), dot interaction of the 27 vectors (the strictly
lower triangle of their Gram matrix plus the bottom MLP's output), a top MLP, binary
cross-entropy. The whole model is replicated on every rank under DDP (the reference splits the
embedding tables over GPUs, model-parallel, with an all-to-all; not reproduced at CPU scale).

Loader as the reference's binary loader (Fig 5.15): no workers, no prefetch; each step reads
one whole global batch with a single ``pread`` at a random sample offset (the same offset on
every rank, so the batch is global) and preprocesses it as one (log(1 + x) of the dense
features, ids folded), then takes this rank's slice. ``vfs_ns`` is the ``pread``, ``prep_ns``
the preprocessing; both sum to ``data_ns``. Every ``eval_every`` steps (and at the end):
evaluation on the test file, then a checkpoint that overwrites the previous one (rank 0).

The loop (data wait, to-device, step, record, phases, evaluation and checkpoint points) is
:mod:`.loop`'s, shared with the sleep run and the emulator (no model built, checkpoints
replayed from a traced pattern). ``train.compute: sleep`` (:mod:`.step_compute`): the same reads, phases, evaluation reads and
checkpoints; forward to optimizer become one ``sleep(t)`` followed by an all-reduce of one
float (standing in for DDP's gradient all-reduce, which keeps the ranks in step). Each
evaluation batch is read, then one evaluation step slept (the training model, as the thesis
approximated DLRM's evaluation, Sec 5.3.2).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from . import loop, step_compute
from . import rank as rk
from .data_dlrm import SAMPLE_BYTES, SAMPLE_INTS, open_reader
from .steptimer import LoaderLog


class BatchReader:
    """One ``pread`` of ``batch`` samples per call, at a random offset (or a given one)."""

    def __init__(self, folder, split: str, cap: int, seed: int, log: LoaderLog):
        self.fd, self.n = open_reader(folder, split)
        self.cap, self.log = cap, log
        self.rng = np.random.default_rng([seed, 0xD1, split == "eval"])

    def read(self, batch: int, rank: int, world: int, offset: int | None = None):
        import torch

        if offset is None:
            offset = int(self.rng.integers(0, self.n - batch + 1))
        t0 = time.perf_counter_ns()
        buf = os.pread(self.fd, batch * SAMPLE_BYTES, offset * SAMPLE_BYTES)
        t1 = time.perf_counter_ns()
        a = np.frombuffer(buf, dtype=np.int32).reshape(batch, SAMPLE_INTS)
        lo, hi = np.array_split(np.arange(batch), world)[rank][[0, -1]]
        a = a[lo:hi + 1]
        y = torch.from_numpy(a[:, 0].astype(np.float32))
        dense = torch.from_numpy(np.log1p(a[:, 1:14].astype(np.float32)))
        cat = torch.from_numpy((a[:, 14:] % self.cap).astype(np.int64))
        t2 = time.perf_counter_ns()
        self.log.add(t1 - t0, t2 - t1, offset=offset, bytes=len(buf), samples=batch)
        return dense, cat, y, t1 - t0, t2 - t1


def build_model(model_cfg: dict):
    import torch
    from torch import nn

    from .data_dlrm import CRITEO_CARDINALITIES

    m = SimpleNamespace(**model_cfg)  # validated by settings.DlrmModel before launch
    dim = m.embedding_dim
    rows = [min(c, m.max_cardinality) for c in CRITEO_CARDINALITIES]

    def mlp(sizes, last_act=True):
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if last_act or i < len(sizes) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = mlp([13, *m.bottom_mlp, dim])
            self.emb = nn.ModuleList(nn.EmbeddingBag(r, dim, mode="sum") for r in rows)
            n = 27
            self.li, self.lj = torch.tril_indices(n, n, offset=-1)
            self.top = mlp([dim + n * (n - 1) // 2, *m.top_mlp, 1], last_act=False)

        def forward(self, dense, cat):
            x = self.bottom(dense)
            ly = [e(cat[:, j:j + 1]) for j, e in enumerate(self.emb)]
            t = torch.stack([x, *ly], dim=1)                      # (B, 27, D)
            z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
            return self.top(torch.cat([x, z], dim=1)).squeeze(1)

    return DLRM()


def eval_segments(steps: int, eval_every: int) -> list[tuple[int, int]]:
    """(first, last) step of each stretch of training between evaluation points: an evaluation
    (and a checkpoint) after every ``eval_every`` steps and after the last step."""
    ends = [s for s in range(steps) if (eval_every and (s + 1) % eval_every == 0) or s == steps - 1]
    return [(a, b) for a, b in zip([0] + [e + 1 for e in ends[:-1]], ends)]


def main(argv=None, replay=None) -> None:
    """One rank of DLRM: the real model, a sleep run or the emulator (:mod:`.loop`)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    run = loop.read_run(argv)
    cfg, B, seed = run["config"], run["batch_size"], run["seed"]
    tc = cfg["train"]
    rank, world, _, device, sync = rk.setup_torch(run)
    barrier = step_compute.torch_barrier(device)
    lp = loop.RankLoop(run, rank, world, sync=sync, barrier=barrier)
    loader_log = LoaderLog()
    model = opt = None
    with lp.phase("init"):
        sleep = loop.sleep_step(run, barrier)
        if not loop.emulated(run):
            model = build_model(cfg["model"]).to(device)
            if dist.is_initialized():
                model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
            opt = torch.optim.SGD(model.parameters(), lr=tc["lr"])
            loss_fn = torch.nn.BCEWithLogitsLoss()
        cap = cfg["model"]["max_cardinality"]
        train = BatchReader(run["data_dir"], "train", cap, seed, loader_log)
        test = BatchReader(run["data_dir"], "eval", cap, seed, LoaderLog())
        save = loop.torch_saver(rank, Path(run["checkpoint_dir"]) / "dlrm.pt",
                                lambda: (model.module if hasattr(model, "module") else model).state_dict())
        write_checkpoint = loop.checkpointer(run, rank, save, replay)
    lp.facts["device"] = str(device)

    def batches(n: int):
        """``n`` global batches, one ``pread`` each; this rank's slice and its read times."""
        for _ in range(n):
            dense, cat, y, vfs, prep = train.read(B, rank, world)
            yield (dense, cat, y), {"local_samples": len(y), "vfs_ns": vfs, "prep_ns": prep}

    def real_step(batch, t) -> dict:
        dense, cat, y = batch
        return {"loss": float(loop.model_step(t, model, opt, loss_fn, (dense, cat), y).detach())}

    step = loop.slept(sleep) if sleep is not None else real_step
    lp.io_start()
    for a, b in eval_segments(tc["steps"], tc["eval_every"]):
        lp.app.event("train", "begin", epoch=0, **({"step": a} if a else {}))
        lp.steps(batches(b - a + 1), step, first_step=a, epoch=0,
                 to_device=lambda x: tuple(v.to(device) for v in x))
        lp.app.event("train", "end", epoch=0, step=b)
        if tc["eval_steps"]:
            with lp.phase("eval", step=b):
                t0, correct, seen = time.perf_counter_ns(), 0, 0
                if model is not None:
                    model.eval()
                with torch.no_grad():
                    for k in range(tc["eval_steps"]):
                        off = (k * B) % max(1, test.n - B + 1)
                        d, c, yy, _, _ = test.read(B, rank, world, offset=off)
                        if sleep is not None:
                            sleep.evaluate()
                            continue
                        p = model(d.to(device), c.to(device))
                        correct += int(((p > 0).float().cpu() == yy).sum())
                        seen += len(yy)
                if model is not None:
                    model.train()
                lp.facts["evals"].append({"step": b, "seconds": (time.perf_counter_ns() - t0) / 1e9,
                                          "batches": tc["eval_steps"], "bytes": tc["eval_steps"] * B * SAMPLE_BYTES,
                                          "accuracy": correct / seen if seen else float("nan")})
        lp.checkpoint(write_checkpoint, step=b)
    lp.io_stop()
    lp.finish(loader_log)
    rk.finish()


if __name__ == "__main__":
    main()
