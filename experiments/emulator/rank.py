"""One emulated accelerator: ``python -m experiments.emulator.rank RUN_DIR`` (under ``torchrun``
for UNET3D and DLRM, one process per rank with ``TF_CONFIG`` for BERT; :mod:`.launch` starts it).

Each rank runs the real workload's data path, imported from :mod:`experiments.workloads`, and
builds no model. Where the real step computes (to-device, forward, loss, backward, optimizer)
it sleeps a time drawn from the compute model, then waits at a barrier standing in for the
step's gradient all-reduce (``sync_steps``; ``allreduce_ns``). The draws use the same seed on
every rank, so all ranks sleep the same time in a step, as a synchronized data-parallel group
does; the barrier then only absorbs the ranks' different data waits.

- UNET3D: :class:`~experiments.workloads.unet3d.CaseDataset` (``np.load`` of the pair, then the
  reference's augmentations) in a ``DataLoader`` with ``train.workers`` workers and the default
  prefetch, a ``DistributedSampler`` seeded alike on every rank; epochs; evaluation (every case
  of the rank's share loaded whole, then the evaluation time slept: the compute model's
  ``unet3d_eval``) after every ``eval_every`` epochs and the last; a checkpoint at the end.
- BERT: :func:`~experiments.workloads.bert.input_fn` (the reference's tf.data pipeline) for this
  worker's file shard, through ``MultiWorkerMirroredStrategy.distribute_datasets_from_function``
  as the real program, so sharding and the iterator are the real ones; the strategy is kept
  for that and for the barriers (a scalar all-reduce), no variable is created. Checkpoints at
  the start and the end (every worker); ``eval_steps`` evaluation batches of the held-out file.
- DLRM: :class:`~experiments.workloads.dlrm.BatchReader`, one ``pread`` of the global batch per
  step at the same random offset on every rank; evaluation every ``eval_every`` steps (and at
  the end), each followed by a checkpoint (rank 0).

Evaluation batches of BERT and DLRM sleep the compute model's mean for the batch (the thesis
approximated evaluation with the training fits, Sec 5.2.2, 5.3.2).

Written per rank, as the real programs: ``steps-r<rank>.csv`` (the real columns plus
``sleep_ns``, the time slept, and ``sleep_drawn_ns``, the time drawn), ``app-r<rank>.jsonl`` (phases, :class:`~experiments.workloads.steptimer.AppLog`),
``loader-r<rank>-p<pid>.jsonl`` (UNET3D, DLRM) and ``rank-r<rank>.json`` (pid, checkpoints
written, evaluations, /proc/self/io counters, peak RSS).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ..workloads.steptimer import AppLog, LoaderLog, StepTimer, peak_rss_bytes
from . import checkpoint as ckpt
from .config import eval_model, load_compute_model


def read_run(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m experiments.emulator.rank RUN_DIR")
    return json.loads((Path(argv[0]) / "run.json").read_text())


def proc_io() -> dict:
    """This process's /proc/self/io counters (bytes): rchar, read_bytes, wchar, write_bytes."""
    out = {}
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            k, v = line.split(":")
            out[k.strip()] = int(v)
    except OSError:
        pass
    return out


class Compute:
    """Draws and sleeps one step's compute time (seconds) from the compute model."""

    def __init__(self, run: dict, salt: int = 0):
        c = run["emulator"]
        self.model = load_compute_model(c["compute_model"])
        G, B = c["accelerators"], c["batch_size"]
        self.mean, self.std = self.model.mean_std(run["workload"], G, B)
        self.draw = self.model.sampler(run["workload"], G, B, [run["seed"], 0xE4, salt])
        self.slept: list[float] = []

    def sleep(self, seconds: float | None = None) -> tuple[int, float]:
        """Sleep a drawn time (or ``seconds``); (nanoseconds actually slept, seconds drawn)."""
        s = self.draw() if seconds is None else max(0.0, seconds)
        t0 = time.perf_counter_ns()
        if s > 0:
            time.sleep(s)
        self.slept.append(s)
        return time.perf_counter_ns() - t0, s


def _record(t: StepTimer, slept: tuple[int, float], **fields) -> None:
    """End the step; ``sleep_ns`` (the step timer's part, as in a workload's ``compute: sleep``
    step) is the time slept, ``sleep_drawn_ns`` the time asked for."""
    t.end_step(sleep_drawn_ns=int(round(slept[1] * 1e9)), **fields)


def _write(run: dict, rank: int, steps: list[dict], facts: dict) -> None:
    import pandas as pd

    d = Path(run["run_dir"])
    pd.DataFrame(steps).to_csv(d / f"steps-r{rank}.csv", index=False)
    (d / f"rank-r{rank}.json").write_text(json.dumps(
        {"rank": rank, "pid": os.getpid(), **facts, **peak_rss_bytes()}, default=str))


def _checkpoint(run: dict, app: AppLog, rank: int, pattern, facts: dict, barrier, **key) -> None:
    with app.phase("checkpoint", **key):
        tag = key.get("tag", "end")
        got = ckpt.replay(pattern, run["checkpoint_dir"], rank, tag=tag, seed=run["seed"],
                          scale=run["emulator"].get("checkpoint_scale", 1.0))
        if got["writes"]:
            facts["checkpoints"].append({**key, **{k: got[k] for k in ("files", "writes", "bytes", "seconds", "names")}})
        barrier()


# ----------------------------------------------------------------------------- PyTorch

def _torch_setup(run: dict):
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    threads = run["emulator"].get("threads_per_rank") or max(1, (os.cpu_count() or 1) // max(1, local_world))
    torch.set_num_threads(threads)
    if "MASTER_ADDR" in os.environ and world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    one = torch.zeros(1)

    def barrier() -> None:
        if dist.is_initialized():
            dist.all_reduce(one)
    return rank, world, barrier


def _torch_finish() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def unet3d(run: dict) -> None:
    from torch.utils.data import DataLoader, DistributedSampler

    from ..workloads.unet3d import CaseDataset

    sec, B, seed = run["config"], run["batch_size"], run["seed"]
    tc, mc = sec["train"], sec["model"]
    rank, world, barrier = _torch_setup(run)
    sync = barrier if run["emulator"]["sync_steps"] else (lambda: None)
    app = AppLog(Path(run["run_dir"]) / f"app-r{rank}.jsonl", rank, "unet3d")
    pattern = ckpt.load(run["emulator"]["checkpoint_pattern"]).require("unet3d")
    with app.phase("init"):
        train_ds = CaseDataset(run["data_dir"], "train", mc["crop"], seed, run["run_dir"], rank)
        sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True, seed=seed,
                                     drop_last=True)
        loader = DataLoader(train_ds, batch_size=B, sampler=sampler, num_workers=tc["workers"],
                            drop_last=True)
        eval_ds = CaseDataset(run["data_dir"], "eval", mc["crop"], seed, run["run_dir"], rank, train=False)
        eval_sampler = DistributedSampler(eval_ds, num_replicas=world, rank=rank, shuffle=False)
        compute = Compute(run)
        ev = eval_model(run["emulator"]["compute_model"])
        ev_rng = np.random.default_rng([seed, 0xE5, rank])
    t = StepTimer()
    facts = {"evals": [], "checkpoints": [], "steps_per_epoch": len(loader), "eval_model": ev,
             "compute": {"mean_s": compute.mean, "std_s": compute.std}}
    io0 = proc_io()
    for epoch in range(tc["epochs"]):
        sampler.set_epoch(epoch)
        train_ds.epoch = epoch
        with app.phase("train", epoch=epoch):
            t.start_wait()
            for step, (x, y) in enumerate(loader):
                t.got_batch()
                slept = compute.sleep()
                t.mark("sleep_ns")
                sync()
                t.mark("allreduce_ns")
                _record(t, slept, epoch=epoch, step=step, samples=B)
                t.start_wait()
        last = epoch == tc["epochs"] - 1
        if last or (tc["eval_every"] and (epoch + 1) % tc["eval_every"] == 0):
            with app.phase("eval", epoch=epoch):
                for i in eval_sampler:
                    t0 = time.perf_counter_ns()
                    x, _ = eval_ds[i]
                    t1 = time.perf_counter_ns()
                    mb = x.numel() * 4 / 1e6
                    mean = ev["intercept_s"] + ev["s_per_MB"] * mb if "s_per_MB" in ev else ev["mean_s"]
                    s = max(0.0, float(ev_rng.normal(mean, ev["std_s"])) if ev["std_s"] > 0 else mean)
                    compute.sleep(s)
                    facts["evals"].append({"epoch": epoch, "case": int(i), "bytes": int(x.numel() * 4),
                                           "load_s": (t1 - t0) / 1e9, "sleep_s": s})
                barrier()
    facts["io"] = {k: v - io0.get(k, 0) for k, v in proc_io().items()}
    _checkpoint(run, app, rank, pattern, facts, barrier, epoch=tc["epochs"] - 1)
    train_ds.log.flush_to(run["run_dir"], rank)
    eval_ds.log.flush_to(run["run_dir"], rank)
    _write(run, rank, t.rows, facts)
    app.close()
    _torch_finish()


def dlrm(run: dict) -> None:
    from ..workloads.data_dlrm import SAMPLE_BYTES
    from ..workloads.dlrm import BatchReader

    sec, B, seed = run["config"], run["batch_size"], run["seed"]
    tc = sec["train"]
    rank, world, barrier = _torch_setup(run)
    sync = barrier if run["emulator"]["sync_steps"] else (lambda: None)
    app = AppLog(Path(run["run_dir"]) / f"app-r{rank}.jsonl", rank, "dlrm")
    pattern = ckpt.load(run["emulator"]["checkpoint_pattern"]).require("dlrm")
    log = LoaderLog()
    with app.phase("init"):
        cap = sec["model"]["max_cardinality"]
        train = BatchReader(run["data_dir"], "train", cap, seed, log)
        test = BatchReader(run["data_dir"], "eval", cap, seed, LoaderLog())
        compute = Compute(run)
    t = StepTimer()
    facts = {"evals": [], "checkpoints": [], "compute": {"mean_s": compute.mean, "std_s": compute.std}}
    io0 = proc_io()
    app.event("train", "begin", epoch=0)
    for step in range(tc["steps"]):
        t.start_wait()
        _, _, y, vfs, prep = train.read(B, rank, world)
        t.got_batch()
        slept = compute.sleep()
        t.mark("sleep_ns")
        sync()
        t.mark("allreduce_ns")
        _record(t, slept, epoch=0, step=step, samples=B, local_samples=len(y), vfs_ns=vfs, prep_ns=prep)
        last = step == tc["steps"] - 1
        if (tc["eval_every"] and (step + 1) % tc["eval_every"] == 0) or last:
            app.event("train", "end", epoch=0, step=step)
            if tc["eval_steps"]:
                with app.phase("eval", step=step):
                    t0 = time.perf_counter_ns()
                    for k in range(tc["eval_steps"]):
                        off = (k * B) % max(1, test.n - B + 1)
                        test.read(B, rank, world, offset=off)
                        compute.sleep(compute.mean)
                    facts["evals"].append({"step": step, "seconds": (time.perf_counter_ns() - t0) / 1e9,
                                           "batches": tc["eval_steps"], "bytes": tc["eval_steps"] * B * SAMPLE_BYTES})
            _checkpoint(run, app, rank, pattern, facts, barrier, step=step)
            if not last:
                app.event("train", "begin", epoch=0, step=step + 1)
    facts["io"] = {k: v - io0.get(k, 0) for k, v in proc_io().items()}
    log.flush_to(run["run_dir"], rank)
    _write(run, rank, t.rows, facts)
    app.close()
    _torch_finish()


# ----------------------------------------------------------------------------- TensorFlow

def bert(run: dict) -> None:
    sec, B, seed = run["config"], run["batch_size"], run["seed"]
    dc, tc = sec["data"], sec["train"]
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    app = AppLog(Path(run["run_dir"]) / f"app-r{rank}.jsonl", rank, "bert")
    app.event("init", "begin")
    pattern = ckpt.load(run["emulator"]["checkpoint_pattern"]).require("bert")
    import tensorflow as tf

    from ..workloads.bert import feature_spec, input_fn
    from ..workloads.data_bert import train_files

    threads = run["emulator"].get("threads_per_rank") or max(1, (os.cpu_count() or 1) // world)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(max(2, threads))
    comm = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
    files = train_files(run["data_dir"])
    ds = strategy.distribute_datasets_from_function(
        lambda ctx: input_fn(tf, files, ctx.input_pipeline_id, ctx.num_input_pipelines, B,
                             dc["seq_len"], dc["max_predictions"], tc["cycle_length"],
                             tc["shuffle_buffer"], tc["map_threads"], seed))

    @tf.function
    def _reduce():
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), axis=None)

    def barrier() -> None:
        if world > 1:
            float(_reduce())
    sync = barrier if run["emulator"]["sync_steps"] else (lambda: None)
    compute = Compute(run)
    barrier()              # traced and compiled here, so its own file reads are not counted below
    io0 = proc_io()
    facts_io_t0 = time.time()
    it = iter(ds)
    first = next(it)       # the real program takes the first batch during its init, too
    io1 = proc_io()        # the shuffle buffer's first fill is read by now
    barrier()
    app.event("init", "end")
    facts = {"checkpoints": [], "evals": [], "compute": {"mean_s": compute.mean, "std_s": compute.std},
             "io_t0": facts_io_t0, "io_first_batch": {k: v - io0.get(k, 0) for k, v in io1.items()}}
    _checkpoint(run, app, rank, pattern, facts, barrier, tag="start")
    t = StepTimer()
    with app.phase("train", epoch=0):
        for step in range(tc["steps"]):
            t.start_wait()
            batch = first if step == 0 else next(it)
            t.got_batch()
            slept = compute.sleep()
            t.mark("sleep_ns")
            sync()
            t.mark("allreduce_ns")
            _record(t, slept, epoch=0, step=step, samples=B)
    del batch
    facts["io"] = {k: v - io1.get(k, 0) for k, v in proc_io().items()}
    _checkpoint(run, app, rank, pattern, facts, barrier, tag="end")
    if tc["eval_steps"]:
        with app.phase("eval"):
            t0 = time.perf_counter_ns()
            spec = feature_spec(tf, dc["seq_len"], dc["max_predictions"])
            # as the real program's evaluation: the held-out file, parsed, batched, eval_steps batches
            ev = (tf.data.TFRecordDataset(str(Path(run["data_dir"]) / "eval" / "eval.tfrecord"))
                  .map(lambda r: {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v
                                  for k, v in tf.io.parse_single_example(r, spec).items()})
                  .batch(B).take(tc["eval_steps"]))
            n = 0
            for _ in ev:
                compute.sleep(compute.mean)
                n += 1
            facts["evals"].append({"seconds": (time.perf_counter_ns() - t0) / 1e9, "batches": n})
    _write(run, rank, t.rows, facts)
    app.close()
    if world > 1:
        # leave together, then exit without TensorFlow's shutdown handshake (as the real program)
        barrier()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main(argv=None) -> None:
    run = read_run(argv)
    {"unet3d": unet3d, "bert": bert, "dlrm": dlrm}[run["workload"]](run)


if __name__ == "__main__":
    main()
