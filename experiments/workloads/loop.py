"""One rank's training loop, the same for a real run, a sleep run and the emulator.

Each workload program (:mod:`.unet3d`, :mod:`.bert`, :mod:`.dlrm`) supplies its data path (a
data set and loader, a batch reader, a tf.data input function) and its step; this module runs
them. Per training step: the data wait (``data_ns``), the copy to the device (``to_device_ns``,
where the workload has one), the step, the record (one row of ``steps-r<rank>.csv``); around
the steps the phases of the application log (``init``, ``train``, ``eval``, ``checkpoint``,
:class:`~.steptimer.AppLog`), the checkpoint points and the records a rank leaves behind.

The step is one of three, chosen from the run's ``run.json``:

- the model's (``compute: real``): forward, loss, backward, optimizer, written in the workload;
- a :class:`~.step_compute.SleepStep` (``compute: sleep``): the model is built (its checkpoints
  write the same variables) but each step sleeps a time drawn from the compute model;
- a :class:`~.step_compute.SleepStep` with no model built (the emulator: ``run.json`` has an
  ``emulator`` block, written by :mod:`experiments.emulator.launch`); checkpoints replay a
  traced pattern instead of the framework's save (the replay is passed in by the emulator's
  rank program, :func:`experiments.emulator.checkpoint.replayer`), and
  ``emulator.sync_steps: false`` drops the per-step barrier.

Step records have one set of columns for all three: the parts of :data:`.steptimer.PARTS`
(ns), ``epoch``, ``step``, ``samples`` (the batch as configured), the workload's own fields
(DLRM: ``local_samples``, ``vfs_ns``, ``prep_ns``), ``loss`` (NaN when no model ran) and
``sleep_drawn_ns`` (the compute time drawn for the step, ns; NaN in a real run).

A rank writes ``steps-r<rank>.csv``, ``app-r<rank>.jsonl``, its loaders'
``loader-r<rank>-p<pid>.jsonl`` and ``rank-r<rank>.json`` (rank, pid, device, the resolved
``compute``, evaluations, checkpoints written, ``/proc/self/io`` counters over the measured
window, CPU time per phase, peak RSS).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from . import step_compute
from .steptimer import AppLog, StepTimer, peak_rss_bytes

# The fields every step record has, whatever computed the step.
STEP_DEFAULTS = {"loss": float("nan"), "sleep_drawn_ns": float("nan")}


def read_run(argv=None) -> dict:
    """The run description ``RUN_DIR/run.json`` named by the program's one argument."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m experiments.workloads.<workload> RUN_DIR")
    return json.loads((Path(argv[0]) / "run.json").read_text())


def emulated(run: dict) -> bool:
    """True when the run is an emulation: no model is built, checkpoints replay a pattern."""
    return bool(run.get("emulator"))


def threads_per_rank(run: dict, local_world: int) -> int:
    """Intra-op threads of one rank: ``config.train.threads_per_rank``, or CPUs / ranks on this machine."""
    return run["config"]["train"].get("threads_per_rank") or max(1, (os.cpu_count() or 1) // max(1, local_world))


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


def sleep_step(run: dict, barrier: Callable[[], object] | None) -> step_compute.SleepStep | None:
    """The run's :class:`~.step_compute.SleepStep` (None for ``compute: real``); ``barrier`` is the
    per-step collective, left out when an emulation asks for ``sync_steps: false``."""
    if emulated(run) and not run["emulator"].get("sync_steps", True):
        barrier = None
    return step_compute.from_run(run, barrier=barrier)


def slept(sleep: step_compute.SleepStep) -> Callable:
    """A step function for :meth:`RankLoop.steps` that sleeps one drawn compute time."""
    def step(batch, t) -> dict:
        return {"sleep_drawn_ns": int(round(sleep(t) * 1e9))}
    return step


def model_step(t, model, opt, loss_fn, inputs: tuple, target):
    """A PyTorch model's training step, each part timed on ``t`` (``forward_ns``, ``loss_ns``,
    ``backward_ns``, ``optimizer_ns``); returns the loss tensor."""
    out = model(*inputs)
    t.mark("forward_ns")
    loss = loss_fn(out, target)
    t.mark("loss_ns")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    t.mark("backward_ns")
    opt.step()
    t.mark("optimizer_ns")
    return loss


def torch_model(run: dict, build: Callable[[], object], device, sleep, lr: float, momentum: float = 0.9):
    """``(net, model, opt)`` of a PyTorch rank: ``build()`` on ``device``, wrapped in DDP when a
    process group is up, SGD with ``momentum``; ``(None, None, None)`` in an emulation (no model
    is built). A sleep run (``sleep`` not None) still holds the optimizer state a trained model
    checkpoints (momentum buffers): zero gradients, one step, the weights unchanged."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    if emulated(run):
        return None, None, None
    net = build().to(device)
    model = DDP(net, device_ids=[device.index] if device.type == "cuda" else None) if dist.is_initialized() else net
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    if sleep is not None:
        for p in net.parameters():
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return net, model, opt


def torch_saver(rank: int, path: Path, state: Callable[[], dict]) -> Callable[..., dict | None]:
    """A PyTorch program's checkpoint: rank 0 writes ``state()`` to ``path`` with ``torch.save``
    (overwriting the previous one, as the references); its facts are ``bytes`` and ``seconds``."""
    def save(**key) -> dict | None:
        import time

        import torch

        if rank != 0:
            return None
        t0 = time.perf_counter_ns()
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state(), path)
        return {"bytes": path.stat().st_size, "seconds": (time.perf_counter_ns() - t0) / 1e9}
    return save


def checkpointer(run: dict, rank: int, save: Callable[..., dict | None],
                 replay: Callable[[dict, int], Callable[..., dict | None]] | None = None
                 ) -> Callable[..., dict | None]:
    """What writes a checkpoint in this run: the framework's ``save(**key)``, or in an emulation
    the emulator's ``replay(run, rank)`` (passed in by :mod:`experiments.emulator.rank`, as the
    step is: the workloads do not import the emulator that uses them). Either returns the facts
    of what this rank wrote (None: it wrote nothing)."""
    if not emulated(run):
        return save
    if replay is None:
        raise RuntimeError("run.json has an emulator block but no checkpoint replay was passed in: "
                           "start an emulated rank with python -m experiments.emulator.rank RUN_DIR")
    return replay(run, rank)


class RankLoop:
    """One rank's application log, step timer, facts and records (module docstring).

    ``sync``: the device synchronization before each timer mark (CUDA), or None; ``barrier``:
    the collective that closes a checkpoint (PyTorch ranks), or None.
    """

    def __init__(self, run: dict, rank: int, world: int, sync: Callable | None = None,
                 barrier: Callable[[], object] | None = None):
        self.run, self.rank, self.world = run, rank, world
        self.app = AppLog(Path(run["run_dir"]) / f"app-r{rank}.jsonl", rank, run["workload"])
        self.timer = StepTimer(sync)
        self.barrier = barrier
        self.facts: dict = {"evals": [], "checkpoints": [], "compute": run.get("compute") or {"mode": "real"}}
        self._io = proc_io()

    def phase(self, phase: str, **key):
        return self.app.phase(phase, **key)

    def steps(self, batches: Iterable, step: Callable, to_device: Callable | None = None,
              first_step: int = 0, **key) -> None:
        """Train on ``batches`` (an iterable of ``(batch, fields)``, asked for its next batch
        while the data wait is timed): per batch the copy to the device (when ``to_device`` is
        given, ``to_device_ns``), ``step(batch, timer)`` (marks its own parts and returns
        record fields: ``loss`` or ``sleep_drawn_ns``), then the record with ``key`` (``epoch``),
        ``step`` (from ``first_step``), ``samples`` and the batch's ``fields``."""
        t, B = self.timer, self.run["batch_size"]
        t.start_wait()
        for i, (batch, fields) in enumerate(batches):
            t.got_batch()
            if to_device is not None:
                batch = to_device(batch)
                t.mark("to_device_ns")
            out = step(batch, t)
            t.end_step(**key, step=first_step + i, samples=B, **fields, **(STEP_DEFAULTS | out))
            t.start_wait()

    def checkpoint(self, write: Callable[..., dict | None], barrier: bool = True, **key) -> None:
        """One checkpoint point: ``write(**key)`` in a ``checkpoint`` phase (its facts kept with
        ``key``), then, when ``barrier``, the ranks wait for each other (the writer is slowest)."""
        with self.app.phase("checkpoint", **key):
            got = write(**key)
            if got:
                self.facts["checkpoints"].append({**key, **got})
            if barrier and self.barrier is not None:
                self.barrier()

    def io_start(self) -> None:
        """Start a window of /proc/self/io counting (bytes this process read and wrote)."""
        self._io, self._io_ns = proc_io(), time.time_ns()

    def io_stop(self, name: str = "io") -> None:
        """Keep the counters' growth since :meth:`io_start` (or the last stop) as ``facts[name]``,
        and the window's wall-clock start and end (ns) as ``facts["io_windows"][name]``: reads
        that background threads issue outside every window (tf.data prefetching while the
        barrier runs) are not counted, and a trace compared with these counters is cut to them.
        The window ends just before the counters are read and the next begins just after, so a
        read a background thread enters in between (a trace stamps a call at its entry) is in
        the counters but in neither window, never in a window but not in the counters."""
        end = time.time_ns()
        now, t = proc_io(), time.time_ns()
        self.facts[name] = {k: v - self._io.get(k, 0) for k, v in now.items()}
        self.facts.setdefault("io_windows", {})[name] = [self._io_ns, end]
        self._io, self._io_ns = now, t

    def finish(self, *loader_logs) -> None:
        """Flush the loader records, write ``steps-r<rank>.csv`` and ``rank-r<rank>.json``,
        close the application log."""
        import pandas as pd

        d = Path(self.run["run_dir"])
        for log in loader_logs:
            log.flush_to(d, self.rank)
        self.facts["phase_usage"] = self.app.usage()
        pd.DataFrame(self.timer.rows).to_csv(d / f"steps-r{self.rank}.csv", index=False)
        (d / f"rank-r{self.rank}.json").write_text(json.dumps(
            {"rank": self.rank, "pid": os.getpid(), **self.facts, **peak_rss_bytes()}, default=str))
        self.app.close()
