"""What a training step does after its data wait, when it does not run the model: ``sleep(t)``.

The real step (forward, loss, backward, optimizer) stays in each rank program; this module is
the other strategy, used by the three rank programs (:mod:`.loop`) in ``compute: sleep`` mode
and when they run as the emulator (the same programs with no model built). It imports neither a framework nor pydantic, so a rank
program or a DataLoader worker pays nothing for it.

A sleep step, as the thesis's Fig 3.1 and Sec 5.1.3: after the batch is in hand (and moved to
the device), sleep ``t`` seconds, ``t`` drawn per step from ``Normal(mean, std)`` floored at 0
(the compute model's value at this run's G and B, resolved by the launcher into ``run.json``),
then the per-step collective that the real step has (DDP's gradient all-reduce / the
strategy's reduce), so ranks stay in lock step as in training. Every rank draws the same
sequence of times (one draw per step, shared): a real rank's measured compute time already
includes waiting for the slowest rank in the gradient all-reduce, so after synchronization all
ranks see about the same step time; independent draws followed by the barrier would count that
wait twice (the barrier would wait for the largest of G draws). Timer marks:
``sleep_ns`` (the sleep as measured), ``allreduce_ns`` (the collective); each step's drawn
``t`` is returned so the rank can record it (``sleep_drawn_ns``, :func:`experiments.workloads.loop.sleep_step`).

``time.sleep`` blocks in the kernel (``clock_nanosleep``): the process uses no CPU while it
sleeps, as a host thread waiting on an accelerator would not (the rank's CPU time per train
phase is recorded in ``rank-r*.json`` to show it).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

MODES = ("real", "sleep")


class SleepStep:
    """Draws and sleeps one step's compute time; ``barrier`` is the per-step collective (or None).

    >>> s = SleepStep(mean_s=0.2, std_s=0.02, seed=1)
    >>> t.got_batch(); drawn = s(t)          # t: a steptimer.StepTimer
    """

    def __init__(self, mean_s: float, std_s: float, seed: int,
                 barrier: Callable[[], object] | None = None,
                 eval_mean_s: float | None = None, eval_std_s: float | None = None,
                 eval_s_per_MB: float | None = None, eval_intercept_s: float = 0.0):
        self.mean_s, self.std_s = float(mean_s), max(0.0, float(std_s))
        self.eval_mean_s = self.mean_s if eval_mean_s is None else float(eval_mean_s)
        self.eval_std_s = self.std_s if eval_std_s is None else max(0.0, float(eval_std_s))
        # an evaluation step that grows with the case (UNET3D's window over a whole image)
        self.eval_s_per_MB, self.eval_intercept_s = eval_s_per_MB, float(eval_intercept_s or 0.0)
        self.rng = np.random.default_rng(seed)
        self.barrier = barrier

    def draw(self, evaluation: bool = False, mb: float | None = None) -> float:
        """One step's time in seconds, ``max(0, Normal(mean, std))``; an evaluation step of a
        case of ``mb`` MB has mean ``eval_intercept_s + eval_s_per_MB * mb`` when the model has
        a per-MB evaluation time."""
        if not evaluation:
            mu, sd = self.mean_s, self.std_s
        elif mb is not None and self.eval_s_per_MB is not None:
            mu, sd = self.eval_intercept_s + self.eval_s_per_MB * mb, self.eval_std_s
        else:
            mu, sd = self.eval_mean_s, self.eval_std_s
        return max(0.0, float(self.rng.normal(mu, sd)) if sd > 0 else mu)

    def __call__(self, timer=None) -> float:
        """Sleep one training step's compute time, then the barrier; returns the drawn seconds."""
        t = self.draw()
        time.sleep(t)
        if timer is not None:
            timer.mark("sleep_ns")
        if self.barrier is not None:
            self.barrier()
            if timer is not None:
                timer.mark("allreduce_ns")
        return t

    def evaluate(self, mb: float | None = None) -> float:
        """Sleep one evaluation step's time (no barrier: evaluation has no gradient exchange);
        ``mb``: the evaluated case's size in MB, for a per-MB model. Returns the drawn seconds."""
        t = self.draw(evaluation=True, mb=mb)
        time.sleep(t)
        return t


def from_run(run: dict, seed_offset: int = 0, barrier: Callable[[], object] | None = None) -> SleepStep | None:
    """The sleep strategy a run folder's ``run.json`` asks for, or None for ``compute: real``.

    ``run["compute"]`` (:meth:`experiments.workloads.compute_model.ComputeModel.run_facts`,
    written at launch by the workloads' and the emulator's launchers) holds the resolved
    ``mean_s``, ``std_s``, ``eval_mean_s``, ``eval_std_s`` (and ``eval_s_per_MB``,
    ``eval_intercept_s``). Ranks share one sequence of draws (module docstring); a non-zero
    ``seed_offset`` gives a process its own sequence.
    """
    c = run.get("compute") or {"mode": "real"}
    if c.get("mode", "real") == "real":
        return None
    if c["mode"] != "sleep":
        raise ValueError(f"run.json compute.mode = {c['mode']!r}; allowed: {', '.join(MODES)}")
    return SleepStep(c["mean_s"], c["std_s"], seed=[int(run["seed"]), 0x5EE9, int(seed_offset)],
                     barrier=barrier, eval_mean_s=c.get("eval_mean_s"), eval_std_s=c.get("eval_std_s"),
                     eval_s_per_MB=c.get("eval_s_per_MB"), eval_intercept_s=c.get("eval_intercept_s", 0.0))


def torch_barrier(device=None) -> Callable[[], object] | None:
    """The per-step collective of a PyTorch rank: an all-reduce of one float on ``device``
    (gloo on CPU, NCCL on a GPU), or None when there is no process group (one rank)."""
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        return None
    one = torch.zeros(1, device=device)
    return lambda: dist.all_reduce(one)
