"""Checkpointing in the AlexNet mini-application of Chien et al. 2018 (Section III-C, V-C; Fig 9
and Fig 10): ``iterations`` training steps (:class:`experiments.chien.alexnet.Trainer`) with a
checkpoint every ``interval``, written with ``tf.train.Checkpoint`` to a tier directly or
through the burst buffer (:mod:`.burst_buffer`: the fast tier, then drained to the slow one),
and the stall each checkpoint costs the step loop (s)."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from ..host import cache, dstat
from ..host.cache import EvictionMethod
from ..settings.config import ConfigError, Section, validate
from ..host.tiers import Tier, tier_named
from ..stages import Stage, rounds
from .alexnet import Trainer, build_pipeline, check_batches, data_folder, run_steps


class CheckpointConfig(Section):
    """The ``alexnet_checkpoint`` section: Fig 9 and Fig 10."""

    iterations: int = Field(20, ge=1, le=1_000_000, description="M (paper 100)")
    interval: int = Field(4, ge=1, le=1_000_000, description="checkpoint every K iterations (paper 20)")
    batch_size: int = Field(64, ge=1, le=65536)
    threads: int = Field(8, ge=1, le=1024)
    prefetch: int = Field(1, ge=0, le=64)
    data_tier: str = Field("disk", description="tier the images are read from (paper: SSD)")
    targets: list[str] = Field(["mem", "disk"], min_length=1, description="tiers checkpointed to directly")
    fast: str = Field("mem", description="burst buffer: the fast tier (paper: Optane)")
    slow: str = Field("disk", description="burst buffer: the slow tier (paper: HDD)")
    burst_buffer: bool = True
    keep: int = Field(2, ge=1, le=1000, description="checkpoints kept on the fast tier")
    fast_capacity_MB: float | None = Field(None, gt=0, description="cap on the fast tier, MB; null = free space")
    sync: Literal["fsync", "syncfs", "none"] = "fsync"
    runs: int = Field(2, ge=1, le=50)
    warmup: int = Field(1, ge=0, le=5)
    eviction: EvictionMethod = "auto"
    dstat_interval_s: float = Field(0.5, gt=0, le=10)

    @model_validator(mode="after")
    def _tiers_differ(self):
        if self.burst_buffer and self.fast == self.slow:
            raise ValueError(f"alexnet_checkpoint.fast = slow = {self.fast!r}; a burst buffer needs two tiers")
        if self.interval > self.iterations:
            raise ValueError(f"alexnet_checkpoint.interval = {self.interval} is larger than "
                             f"iterations = {self.iterations}: no checkpoint would be taken")
        return self


# --- checks before any work -----------------------------------------------------------------

def prepare_checkpoint_tiers(named: list[tuple[str, Tier]]) -> dict[str, str]:
    """Check the tiers checkpoints go to, before any work (see :func:`experiments.host.tiers.prepare`:
    an unmounted or mistyped tier outside the project is an error, not a new folder).
    ``named`` pairs each tier with the parameter that names it. Returns name -> directory."""
    from ..host.tiers import prepare

    out = {}
    for param, t in named:
        try:
            prepare(t)
        except ConfigError as e:
            raise ConfigError(f"{param} = {t.name!r}: {e}") from None
        out[t.name] = str(t.dir)
    return out


def check_checkpoint_params(cfg, source) -> tuple[Tier, dict[str, str], int]:
    """Notebook 12's checks before any work: the data tier and every checkpoint target exist
    and are usable, the batch fits the data set. Returns (data tier, target name ->
    directory, images in the set)."""
    from ..datasets.caltech_like import read_manifest

    c = cfg.alexnet_checkpoint
    data_tier = tier_named(c.data_tier, cfg.tiers, "alexnet_checkpoint.data_tier")
    named = [(f"alexnet_checkpoint.targets[{i}]", t) for i, t in enumerate(c.targets)]
    if c.burst_buffer:
        named += [("alexnet_checkpoint.fast", c.fast), ("alexnet_checkpoint.slow", c.slow)]
    n_images = len(read_manifest(source))
    check_batches(n_images, {"alexnet_checkpoint.batch_size": c.batch_size})
    dirs = prepare_checkpoint_tiers([(param, tier_named(name, cfg.tiers, param)) for param, name in named])
    return data_tier, dirs, n_images


# --- checkpointing (Fig 9, Fig 10) ----------------------------------------------------------

CKPT_RUN = "alexnet-ckpt"


def checkpoint_modes(cfg: CheckpointConfig) -> list[dict]:
    """No checkpoint, each target tier directly, and the burst buffer (fast, then drained)."""
    modes = [{"mode": "none", "target": "none", "primary": None, "slow": None}]
    modes += [{"mode": "direct", "target": t, "primary": t, "slow": None} for t in cfg.targets]
    if cfg.burst_buffer:
        modes.append({"mode": "burst", "target": f"{cfg.fast}>{cfg.slow}", "primary": cfg.fast,
                      "slow": cfg.slow})
    return modes


def _manager(mode: dict, tier_dirs: dict[str, str], cfg: CheckpointConfig, log=None):
    from .burst_buffer import CheckpointManager

    if mode["primary"] is None:
        return None
    return CheckpointManager(
        tier_dirs[mode["primary"]], tier_dirs[mode["slow"]] if mode["slow"] else None,
        run=CKPT_RUN, keep=cfg.keep if mode["slow"] else 10**9, sync=cfg.sync,
        capacity_bytes=int(cfg.fast_capacity_MB * 1e6) if (cfg.fast_capacity_MB and mode["slow"]) else None,
        drain_log=log)


def checkpoint_bytes_estimate(trainer: Trainer) -> int:
    """Expected size of one checkpoint: every variable, plus 1% and 1 MB for the index."""
    return int(trainer.state_bytes() * 1.01 + 1e6)


def check_checkpoint_tiers(trainer: Trainer, tier_dirs: dict[str, str], cfg: CheckpointConfig) -> int:
    """Before any training: every manager checks its tiers (missing directory, a fast tier too
    small for one checkpoint, a slow tier without room for all of them). Returns the estimate."""
    need = checkpoint_bytes_estimate(trainer)
    n = cfg.iterations // cfg.interval
    for mode in checkpoint_modes(cfg):
        mgr = _manager(mode, tier_dirs, cfg)
        if mgr is not None:
            mgr.check(need, n)
    return need


def _clear(tier_dirs: dict[str, str]) -> None:
    import shutil
    from pathlib import Path

    for d in tier_dirs.values():
        shutil.rmtree(Path(d) / CKPT_RUN, ignore_errors=True)


KEYS = ("mode", "target")   # the columns that name one configuration (a checkpoint mode)
SIDE_TABLES = ("saves", "drains", "dstat")


def measuring_stage(cfg: CheckpointConfig, trainer: Trainer, m: pd.DataFrame, n_classes: int,
                    tier_dirs: dict[str, str], image_size: int, seed: int, logdir):
    """Fig 9 and 10's runs as one measuring stage (:class:`experiments.repeats.MeasuringStage`),
    built, not run: the checkpoint tiers checked and the model warmed (outside the runs), then
    per mode (none, each target tier, the burst buffer) and round ``iterations`` steps with a
    checkpoint every ``interval``; ``warmup + runs`` rounds, every mode once a round in a
    seeded order (a fixed count, looked at once). ``logdir``: the burst buffer's drain logs."""
    from .. import repeats

    devices = sorted({d for d in (dstat.device_of(p) for p in tier_dirs.values()) if d})
    check_checkpoint_tiers(trainer, tier_dirs, cfg)
    expect = checkpoint_bytes_estimate(trainer)
    ck = trainer.checkpoint()
    trainer.warm(cfg.batch_size)

    def run_one(mode: dict, i: int):
        _clear(tier_dirs)
        log = logdir / f"drain-{i}-{mode['target']}.jsonl"
        mgr = _manager(mode, tier_dirs, cfg, log)
        if mgr is not None:
            mgr.recover()
        ev = cache.evict([data_folder(m)], cfg.eviction, label=cfg.data_tier)
        ds = build_pipeline(list(m["abspath"]), list(m["label"]), n_classes, cfg.threads,
                            cfg.batch_size, cfg.prefetch, image_size, seed, repeat=True)

        def on_step(step):
            if mgr is None or step % cfg.interval:
                return 0.0
            return mgr.save(step, lambda prefix: ck.write(prefix), expect)["stall_s"]

        s = dstat.Sampler(devices=devices, pid=os.getpid(), interval_s=cfg.dstat_interval_s)
        w0 = time.time()
        with s:
            seconds, st = run_steps(trainer, ds, cfg.iterations, on_step)
            t_end = time.perf_counter()
            if mgr is not None:
                mgr.wait()
            drain_done = time.perf_counter() - t_end + seconds
            time.sleep(min(cfg.dstat_interval_s * 2, 2.0))  # let the tail of write-back show
        saves = [e for e in (mgr.events if mgr else []) if e["event"] == "save"]
        drains = [e for e in (mgr.drain_events() if mgr else []) if e["event"] == "drain"]
        stalls = [e["stall_s"] for e in saves]
        f = s.frame()
        side = {"saves": pd.DataFrame([{**{k: v for k, v in e.items() if k != "event"},
                                        "start_s": e["wall_start"] - w0, "end_s": e["wall_end"] - w0}
                                       for e in saves]),
                "drains": pd.DataFrame([{"step": e["step"], "bytes": e["bytes"], "seconds": e["seconds"],
                                         "start_s": e["wall_start"] - w0, "end_s": e["wall_end"] - w0}
                                        for e in drains]),
                "dstat": f.assign(run_end_s=seconds) if len(f) else f}
        return repeats.Run({"seconds": seconds, "iterations": len(st),
                            "checkpoints": len(saves), "stall_median_s": float(np.median(stalls)) if stalls else 0.0,
                            "stall_total_s": float(np.sum(stalls)), "compute_s": st["compute_s"].sum(),
                            "data_s": st["data_s"].sum(), "drain_done_s": drain_done,
                            "checkpoint_MB": float(np.median([e["bytes"] for e in saves]) / 1e6) if saves else 0.0,
                            "eviction": ev}, side)

    modes = checkpoint_modes(cfg)
    return repeats.MeasuringStage("alexnet_checkpoint", KEYS, modes, run_one,
                                  repeats.RoundsPlan(cfg.runs, cfg.runs), seed, warmup=cfg.warmup,
                                  tables=SIDE_TABLES, progress="alexnet checkpoint runs",
                                  quantities=("seconds",), units="saves", unit_quantities=("stall_s",),
                                  context=lambda rows: {"fast": cfg.fast, "slow": cfg.slow,
                                                        "burst": f"{cfg.fast}>{cfg.slow}"})


def measure_checkpoint(trainer: Trainer, m: pd.DataFrame, n_classes: int, tier_dirs: dict[str, str],
                       cfg: CheckpointConfig, image_size: int, seed: int, purchases=()):
    """Fig 9 and 10: ``iterations`` steps with a checkpoint every ``interval``, for each mode
    (none, each target tier, the burst buffer), ``warmup + runs`` rounds, every mode once a
    round in a seeded order (a fixed count, looked at once: :class:`experiments.repeats.MeasuringStage`);
    then the runs ``make decide`` bought (``purchases``: ``params.yaml``'s
    ``decide.alexnet_checkpoint``). When a decide run appends to the stage, the runs and tables
    measured before are kept and only the purchases run.

    Returns the :class:`experiments.repeats.Measurement`: ``rows`` (one per run: run time,
    median and total stall, seconds; the run time stops at the last step, the burst buffer's
    drain may go on after it: ``drain_done_s``) and the side tables ``saves`` (one row per
    checkpoint: wait, write, sync, stall seconds, bytes), ``drains`` (one row per background
    copy), ``dstat`` (per-interval device and process MB/s, time from run start).
    """
    import shutil
    import tempfile
    from pathlib import Path

    from .. import repeats

    logdir = Path(tempfile.mkdtemp(prefix="alexnet-drain-"))
    try:
        stage = measuring_stage(cfg, trainer, m, n_classes, tier_dirs, image_size, seed, logdir)
        got = repeats.measure(stage, purchases)
    finally:
        _clear(tier_dirs)
        shutil.rmtree(logdir, ignore_errors=True)
    got.rows = got.rows.drop(columns=["primary", "slow"], errors="ignore")
    return got


def verify_restore(trainer: Trainer, tier_dirs: dict[str, str], cfg: CheckpointConfig,
                   n_classes: int, image_size: int, width: float, dense_width: float) -> dict:
    """Save through the burst buffer, wait for the drain, drop the fast copy (as if the fast
    tier were lost), recover from the slow tier into a fresh model and compare every variable
    bit for bit. Returns what happened."""
    import shutil
    from pathlib import Path

    from .burst_buffer import CheckpointManager

    run = "alexnet-verify"
    for d in (cfg.fast, cfg.slow):
        shutil.rmtree(Path(tier_dirs[d]) / run, ignore_errors=True)
    mgr = CheckpointManager(tier_dirs[cfg.fast], tier_dirs[cfg.slow], run=run, keep=cfg.keep, sync=cfg.sync)
    mgr.recover()
    want = trainer.weights()
    mgr.save(1, lambda p: trainer.checkpoint().write(p))
    mgr.wait()
    shutil.rmtree(Path(tier_dirs[cfg.fast]) / run)
    again = CheckpointManager(tier_dirs[cfg.fast], tier_dirs[cfg.slow], run=run, keep=cfg.keep, sync=cfg.sync)
    found = again.recover()
    fresh = Trainer(n_classes, image_size, width, dense_width, seed=12345)
    fresh.checkpoint().read(found.prefix).assert_consumed()
    got = fresh.weights()
    same = len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(want, got))
    for d in (cfg.fast, cfg.slow):
        shutil.rmtree(Path(tier_dirs[d]) / run, ignore_errors=True)
    return {"restored_from": str(Path(found.path).parent.parent), "step": found.step,
            "variables": len(want), "bit_identical": bool(same)}


def summarize_checkpoint(runs: pd.DataFrame, fast: str, saves: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per mode: median run time and median stall per checkpoint (s), the overhead over the
    run with no checkpoint (s), and run time, overhead and stall as ratios to checkpointing to
    the fast tier ``fast`` alone (direct). With ``saves`` (one row per checkpoint), the stall
    per checkpoint is the median over every checkpoint of the timed runs (pooled), else the
    median of the runs' medians."""
    d = runs[~runs["warmup"]]
    s = (d.groupby(["mode", "target"], sort=False)
          .agg(seconds=("seconds", "median"), seconds_min=("seconds", "min"),
               seconds_max=("seconds", "max"), stall_median_s=("stall_median_s", "median"),
               stall_total_s=("stall_total_s", "median"), drain_done_s=("drain_done_s", "median"),
               checkpoints=("checkpoints", "first"), checkpoint_MB=("checkpoint_MB", "median"),
               runs=("seconds", "size"))
          .reset_index())
    if saves is not None and len(saves):
        pooled = saves[~saves["warmup"]].groupby("target")["stall_s"].median()
        s["stall_median_s"] = [float(pooled.get(t, v)) for t, v in zip(s["target"], s["stall_median_s"])]
    none = s.loc[s["mode"] == "none", "seconds"]
    s["overhead_s"] = s["seconds"] - (float(none.iloc[0]) if len(none) else np.nan)
    ref = s[(s["mode"] == "direct") & (s["target"] == fast)]
    for col in ("seconds", "overhead_s", "stall_median_s"):
        base = float(ref[col].iloc[0]) if len(ref) else np.nan
        s[f"{col}_vs_fast"] = s[col] / base if base else np.nan
    s.loc[s["mode"] == "none", ["overhead_s_vs_fast", "stall_median_s_vs_fast"]] = np.nan
    return s


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): checkpoint modes x rounds."""
    c = p["alexnet_checkpoint"]
    return len(checkpoint_modes(SimpleNamespace(**{k: c[k] for k in ("targets", "burst_buffer", "fast", "slow")}))) \
        * rounds(c)


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`)."""
    return [{"mode": m["mode"], "target": m["target"]}
            for m in checkpoint_modes(validate("alexnet_checkpoint", p["alexnet_checkpoint"]))]


STAGE = Stage("alexnet_checkpoint", "notebooks/12-alexnet-checkpoint.ipynb", "measuring",
              {"alexnet_checkpoint": "CheckpointConfig"},
              ("seed", "tiers", "caltech_like.n_classes", "alexnet.image_size", "alexnet.width", "alexnet.dense_width",
               "alexnet.learning_rate", "alexnet_checkpoint"), True, "alexnet_report", ("data/caltech_like",),
              size="size", configs="configurations")
