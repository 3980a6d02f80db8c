"""The burst buffer in front of an LLM checkpoint (Chien et al. Fig 9, 10, at LLM scale).

Training computes for ``interval_s`` (a sleep: the compute model of a step interval), then
checkpoints. Written directly to the slow tier, training waits for the whole write and its
fsync. Through the burst buffer (:class:`experiments.chien.burst_buffer.CheckpointManager`,
the project's crash-safe drain: a save lands and is fsynced on the fast tier, a background
process copies it to the slow tier, verifies it and publishes it; at most ``keep`` checkpoints
stay on the fast tier), training waits for the fast write, plus any time the fast tier is full
of checkpoints not yet drained (``wait_s``). A checkpoint's ``stall_s`` is everything training
waited for.

All ranks' files of one checkpoint (:mod:`.llm_layout`, DeepSpeed's names) are written by
this one process from a state generated once (:func:`states`: the training state is in memory
already; its generation is no part of a stall). ``slow_MBps`` > 0 emulates a slow tier:
the direct write and the drain's copy are held to that rate (the drain's ``throttle_MBps``).
Units: seconds, bytes.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pandas as pd

from ..chien import burst_buffer as bb
from . import llm_layout as L

# no stall: every wait under this share of the fast tier's own save (or NO_STALL_S); removing the
# drained checkpoints from the fast tier is part of the wait (~30-40 ms for 110 MB here)
NO_STALL_SHARE, NO_STALL_S = 0.25, 0.02


def states(lo: L.Layout, seed: int = 0) -> list[tuple[str, dict]]:
    """Every rank's files of one checkpoint as (name, tensors), generated once: the training
    state a checkpoint saves is in memory already, so its generation is not part of a stall
    (memory: one checkpoint, ``lo.total_bytes``)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out = []
    for fs in lo.files:
        for f in fs:
            dt = torch.float16 if f.dtype_bytes == 2 else torch.float32
            out.append((f.name, {str(i): torch.rand(b // f.dtype_bytes, dtype=dt, generator=gen)
                                 for i, b in enumerate(f.tensors)}))
    return out


def write_files(state: list[tuple[str, dict]], folder: Path) -> int:
    """The files of one checkpoint into ``folder`` with ``torch.save`` (not synced: the caller
    makes them durable); the bytes written."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, tensors in state:
        with open(folder / name, "wb") as fh:
            torch.save(tensors, fh)
        n += (folder / name).stat().st_size
    return n


def _hold(t0: float, nbytes: int, MBps: float) -> None:
    """Sleep until ``nbytes`` at ``MBps`` have had their time since ``t0`` (an emulated slow tier)."""
    if MBps > 0:
        left = nbytes / (MBps * 1e6) - (time.perf_counter() - t0)
        if left > 0:
            time.sleep(left)


def direct(state: list, slow: Path, interval_s: float, checkpoints: int,
           slow_MBps: float = 0, run: str = "llm-bb-direct") -> list[dict]:
    """Checkpoints written and fsynced straight to ``slow``: training waits for all of it."""
    rows, base = [], Path(slow) / run
    shutil.rmtree(base, ignore_errors=True)
    try:
        for step in range(1, checkpoints + 1):
            time.sleep(interval_s)
            t0 = time.perf_counter()
            folder = base / L.checkpoint_dir(step)
            n = write_files(state, folder)
            t1 = time.perf_counter()
            bb.make_durable(folder, "fsync")
            bb._fsync_path(base)
            _hold(t0, n, slow_MBps)
            t2 = time.perf_counter()
            rows.append({"mode": "direct", "keep": None, "step": step, "bytes": n, "write_s": t1 - t0,
                         "sync_s": t2 - t1, "wait_s": 0.0, "stall_s": t2 - t0})
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


def buffered(state: list, fast: Path, slow: Path, keep: int, interval_s: float, checkpoints: int,
             slow_MBps: float = 0, run: str = "llm-bb") -> list[dict]:
    """Checkpoints through the burst buffer with ``keep`` on the fast tier."""
    expect = sum(t.numel() * t.element_size() for _, d in state for t in d.values())
    run = f"{run}-k{keep}"
    for t in (fast, slow):
        shutil.rmtree(Path(t) / run, ignore_errors=True)
    mgr = bb.CheckpointManager(fast, slow, run=run, keep=keep, sync="fsync", throttle_MBps=slow_MBps)
    mgr.recover()
    rows = []
    try:
        for step in range(1, checkpoints + 1):
            time.sleep(interval_s)
            ev = mgr.save(step, lambda prefix: write_files(state, Path(prefix).parent),
                          expect_bytes=expect)
            rows.append({"mode": "burst buffer", "keep": keep, "step": step, "bytes": ev["bytes"],
                         "write_s": ev["write_s"], "sync_s": ev["sync_s"], "wait_s": ev["wait_s"],
                         "stall_s": ev["stall_s"]})
        mgr.wait()
    finally:
        mgr.wait()
        for t in (fast, slow):
            shutil.rmtree(Path(t) / run, ignore_errors=True)
    return rows


def check(lo: L.Layout, fast: Path, slow: Path, keeps: list[int], checkpoints: int) -> None:
    """Stop (ConfigError) when the fast tier cannot hold one checkpoint or the slow tier all of them."""
    bb.CheckpointManager(fast, slow, run="llm-bb-check", keep=max(keeps)).check(
        lo.total_bytes + sum(map(len, lo.files)) * (64 << 10), checkpoints)


def run_mode(state: list, fast: Path, slow: Path, keep: int | None, interval_s: float, checkpoints: int,
             slow_MBps: float = 0) -> list[dict]:
    """One run: ``checkpoints`` checkpoints direct to ``slow`` (``keep`` None) or through the
    burst buffer keeping ``keep`` on the fast tier; one row per checkpoint."""
    if keep is None:
        return direct(state, slow, interval_s, checkpoints, slow_MBps)
    return buffered(state, fast, slow, keep, interval_s, checkpoints, slow_MBps)


def stalls(lo: L.Layout, fast: Path, slow: Path, keeps: list[int], interval_s: float,
           checkpoints: int, slow_MBps: float = 0) -> pd.DataFrame:
    """One pass, one row per checkpoint: direct to ``slow``, then through the burst buffer for
    each keep (the stage runs them in rounds: :func:`experiments.emulator.llm_stage.burst_buffer`).
    Stops first (ConfigError) when the fast tier cannot hold one checkpoint or the slow tier
    all of them (:func:`check`)."""
    check(lo, fast, slow, keeps, checkpoints)
    state = states(lo)
    return pd.DataFrame([r for k in (None, *keeps)
                         for r in run_mode(state, fast, slow, k, interval_s, checkpoints, slow_MBps)])


def smallest_keep(df: pd.DataFrame) -> int | None:
    """The smallest keep whose checkpoints never waited for the drain (every ``wait_s`` under
    ``NO_STALL_SHARE`` of that run's median fast save, or ``NO_STALL_S``); None when every keep
    stalled."""
    b = df[df["mode"] == "burst buffer"]
    for k, g in b.groupby("keep"):
        limit = max(NO_STALL_S, NO_STALL_SHARE * (g["write_s"] + g["sync_s"]).median())
        if (g["wait_s"] <= limit).all():
            return int(k)
    return None
