"""LLM checkpointing as MLPerf Storage defines it: run, check, measure (docs/emulator.md).

A run of one layout (:mod:`.llm_layout`) on one tier folder: ``checkpoints`` checkpoints written
by the ranks (MPI processes of :mod:`.llm_rank`, started by :class:`experiments.host.launcher.RankPool`:
``mpiexec`` on one host, ``srun`` in a Slurm allocation), then the cache handled (evicted with
:func:`experiments.host.cache.evict`, or left as it is) and the page-cache residency of the files
measured (``mincore``), then the same checkpoints read back in the same order.

Metrics, as the rules define them (:func:`metrics`): a checkpoint's ``duration_s`` is the
maximum over ranks of the rank's own save (load) time, its ``throughput_GiBps`` the checkpoint's
bytes over that duration; the run's ``run_throughput_GiBps`` is all bytes over the sum of the
durations. ``dlio_rank0_mean_GiBps`` is what DLIO reports (the mean over checkpoints of the
bytes over rank 0's own time), kept beside them under that name. A read phase that starts with
more than 5 % of its bytes resident (``experiments.host.cache.COLD_LIMIT``), or whose device served
less than it read (each phase's device audit, :mod:`experiments.host.device_audit`), is
``cache-served``: it gets no storage verdict. Units: bytes, seconds, GiB/s = 2^30 B/s.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
from pydantic import Field, field_validator, model_validator

from ..host import cache, device_audit
from ..settings.config import ConfigError, Section
from . import llm_layout as L
from ..stages import Stage, count

RANK_PROGRAM = "experiments.emulator.llm_rank"
RANK_OVERHEAD_BYTES = 640 << 20   # one rank's Python, torch and MPI before any state (peak RSS ~610 MB here)
HEADER_BYTES = 64 << 10           # torch.save's zip and pickle around a file's tensors, at most
GiB = 2**30


class BurstBufferConfig(Section):
    fast: str = "mem"
    slow: str = "disk"
    keeps: list[int] = Field([1, 2, 3], min_length=1)
    interval_s: float = Field(0.5, ge=0)          # compute between checkpoints (a sleep)
    checkpoints: int = Field(4, ge=1)
    slow_MBps: float = Field(0, ge=0)             # > 0: the drain and the direct write held to this rate
    scale: float | None = Field(None, ge=1)       # None: the stage's scale

    @field_validator("keeps")
    @classmethod
    def _keeps(cls, v):
        if any(k < 1 for k in v):
            raise ValueError(f"keeps = {v}: allowed: counts >= 1")
        return sorted(set(v))


class LLMCheckpointConfig(Section):
    """The ``llm_checkpoint`` section (notebook 53)."""

    model: str = "llama3-8b"
    ranks: int | None = Field(None, ge=1)        # None: the rules' count for the model
    scale: float = Field(512, ge=1)
    checkpoints: int = Field(3, ge=2)            # 2 at least: an interval needs samples
    runs: int = Field(1, ge=1, le=50)         # runs of each (tier, variant), in seeded rounds
    pause_s: float = Field(0.2, ge=0)
    tiers: list[str] = Field(["mem", "disk"], min_length=1)
    read_direct: bool = True
    burst_buffer: BurstBufferConfig = BurstBufferConfig()

    @field_validator("model")
    @classmethod
    def _model(cls, v):
        if v not in L.MODELS:
            raise ValueError(f"model = {v!r}; allowed: {', '.join(L.MODELS)}")
        return v

    @model_validator(mode="after")
    def _ranks(self):
        if self.ranks is not None:
            L.check_ranks(L.MODELS[self.model], self.ranks)
        return self


# ------------------------------------------------------------------------------ checks

def mem_available() -> int:
    """Memory available to new processes on this host (``MemAvailable``, through psutil), B."""
    import psutil

    return int(psutil.virtual_memory().available)


def needs(lo: L.Layout, checkpoints: int, ranks_here: int | None = None,
          memory_backed: bool = False, direct: bool = False) -> dict:
    """Disk (all checkpoints stay until they are read back) and memory (every rank on this
    host: its runtime and its largest file, twice with ``direct``: the aligned buffer and the
    loaded copy; plus the files themselves on a memory-backed tier) a run needs, in bytes."""
    ranks_here = ranks_here or lo.ranks
    files = sum(map(len, lo.files))
    disk = (lo.total_bytes + files * HEADER_BYTES) * checkpoints
    per_rank = RANK_OVERHEAD_BYTES + (2 if direct else 1) * lo.largest_file
    return {"disk_bytes": disk, "memory_bytes": ranks_here * per_rank + (disk if memory_backed else 0),
            "per_rank_memory_bytes": per_rank}


def check(lo: L.Layout, folder: Path, checkpoints: int, ranks_here: int | None = None,
          direct: bool = False) -> dict:
    """Stop before any write, with one line, when ``folder`` is not writable or the run would
    not fit its free space or this host's available memory; the needs (:func:`needs`)."""
    folder = Path(folder)
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"--tier = {str(folder)!r}: not a writable folder; allowed: a folder this "
                          "user may write (or create)")
    mem = cache.memory_backed(probe)
    n = needs(lo, checkpoints, ranks_here, mem, direct)
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    if n["disk_bytes"] > free:
        raise ConfigError(f"--tier = {str(folder)!r}: {checkpoints} checkpoints of {lo.model.name} at "
                          f"scale {lo.scale:g} need {n['disk_bytes'] / 1e9:.2f} GB but {free / 1e9:.2f} GB "
                          "are free; allowed: a larger --scale, fewer --checkpoints or another tier")
    avail = mem_available()
    if n["memory_bytes"] > avail:
        raise ConfigError(f"--ranks = {lo.ranks}: the ranks need {n['memory_bytes'] / 1e9:.2f} GB of "
                          f"memory{' (tier in memory included)' if mem else ''} but {avail / 1e9:.2f} GB "
                          "are available; allowed: a larger --scale or fewer ranks a host")
    return {**n, "free_bytes": free, "mem_available_bytes": avail, "memory_backed": mem}


# ------------------------------------------------------------------------------ a run

def _frames(rows: list[dict], **labels) -> tuple[pd.DataFrame, pd.DataFrame]:
    files = pd.DataFrame([{**labels, "op": r["op"], "rank": r["rank"], "host": r["host"],
                           "peak_rss_bytes": r["peak_rss_bytes"], **f} for r in rows for f in r["files"]])
    steps = pd.DataFrame([{**labels, "op": r["op"], "rank": r["rank"], **s}
                          for r in rows for s in r["steps"]])
    return files, steps


def run_variant(lo: L.Layout, run_dir: Path, *, fsync: bool = True, evict: str = "auto",
                direct: bool = False, checkpoints: int = 3, pause_s: float = 0.2, seed: int = 0,
                pool=None, label: str | None = None, keep: bool = False, nodes: int = 1,
                **labels) -> dict:
    """Write ``checkpoints`` checkpoints into ``run_dir`` from every rank, handle the cache
    (``evict``: a method of :func:`experiments.host.cache.evict`, ``none`` leaves it), measure the
    residency, read them back. Returns ``files`` and ``steps`` (per rank, both phases),
    ``eviction`` (its facts), ``device`` (each phase's device audit,
    :mod:`experiments.host.device_audit`: ``write`` and ``read``) and ``cache_served`` (files resident
    when the reads began, or a device that served less than they read). ``run_dir`` is removed
    afterwards unless ``keep``. ``pool``: a :class:`experiments.host.launcher.RankPool` of ``lo.ranks`` ranks (else
    ranks started for this run over ``nodes`` nodes: ``srun`` in a Slurm allocation)."""
    from ..host import launcher

    run_dir = Path(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    spec = {"model": lo.model.name, "scale": lo.scale, "run_dir": str(run_dir), "seed": seed,
            "steps": list(range(1, checkpoints + 1)), "pause_s": pause_s, "fsync": fsync,
            "direct": direct}
    # each phase's device audit: srun's ranks are not this process's children (device count only)
    own = not launcher.in_slurm()
    tag = " ".join(str(x) for x in (label or run_dir, labels.get("variant")) if x)
    try:
        with device_audit.Span(run_dir, f"{tag} write", processes=own) as sw:
            w = launcher.call(RANK_PROGRAM, {**spec, "op": "write"}, lo.ranks, nodes, pool)
        ev = cache.evict([run_dir], evict, label=label or str(run_dir))
        with device_audit.Span(run_dir, f"{tag} read", processes=own) as sr:
            r = launcher.call(RANK_PROGRAM, {**spec, "op": "read"}, lo.ranks, nodes, pool)
    finally:
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    facts = ev.facts()
    nbytes = lambda rows: sum(x["bytes"] for q in rows for x in q["steps"])  # noqa: E731 - a phase's bytes
    audit = {"write": sw.judge(written_bytes=nbytes(w)), "read": sr.judge(read_bytes=nbytes(r))}
    # cache-served: the files resident when the reads began, or the device served less than they read
    served = bool(facts["memory_backed"] or (facts["resident_fraction"] or 0) > cache.COLD_LIMIT
                  or device_audit.cache_served(audit["read"]))
    read_mode = "direct" if direct else ("cache-served" if served else "cold")
    lab = {"fsync": fsync, "eviction": str(ev), "read": read_mode, **labels}
    wf, ws = _frames(w, **lab)
    rf, rs = _frames(r, **lab)
    return {"files": pd.concat([wf, rf], ignore_index=True), "steps": pd.concat([ws, rs], ignore_index=True),
            "eviction": facts, "cache_served": served,
            "resident_fraction": facts["resident_fraction"], "read": read_mode, "device": audit}


def metrics(steps: pd.DataFrame, by: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per checkpoint (``by`` + op + step): bytes, ``duration_s`` = max over ranks of ``io_s``,
    ``throughput_GiBps`` = bytes / duration, ``rank0_s`` and ``rank0_GiBps``. Per run (``by`` +
    op): ``run_throughput_GiBps`` = all bytes / sum of durations, the median and spread of the
    checkpoints' throughputs, and ``dlio_rank0_mean_GiBps`` (DLIO's figure: the mean over
    checkpoints of bytes / rank 0's time)."""
    by = list(by or [])
    # per checkpoint of each run (the run a unit of the intervals); per phase over all runs
    keys = by + (["run"] if "run" in steps and "run" not in by else []) + ["op", "step"]
    g = steps.groupby(keys, sort=False)
    per = g.agg(bytes=("bytes", "sum"), duration_s=("io_s", "max"), ranks=("rank", "nunique")).reset_index()
    r0 = steps[steps["rank"] == 0].set_index(keys)["io_s"].rename("rank0_s")
    per = per.join(r0, on=keys)
    per["throughput_GiBps"] = per["bytes"] / per["duration_s"] / GiB
    per["rank0_GiBps"] = per["bytes"] / per["rank0_s"] / GiB
    run = per.groupby(by + ["op"], sort=False).agg(
        checkpoints=("step", "count"), bytes=("bytes", "sum"), total_s=("duration_s", "sum"),
        median_GiBps=("throughput_GiBps", "median"), min_GiBps=("throughput_GiBps", "min"),
        dlio_rank0_mean_GiBps=("rank0_GiBps", "mean")).reset_index()
    run["run_throughput_GiBps"] = run["bytes"] / run["total_s"] / GiB
    return per, run


def verdict(read_mode: str) -> str:
    """What a read phase's numbers say: nothing about the storage when it was served from the
    page cache (or the tier is memory)."""
    return "no storage verdict: served from the page cache" if read_mode == "cache-served" else "storage"


def summary_md(lo: L.Layout, r: dict) -> str:
    """The command's report of one run: the rules' metrics beside DLIO's, the residency."""
    per, run = metrics(r["steps"])
    ev = r["eviction"]
    lines = [f"# {lo.model.name}: {lo.ranks} ranks, scale 1/{lo.scale:g}, "
             f"{lo.total_bytes / GiB:.3f} GiB a checkpoint",
             "", f"eviction before the reads: {ev['method']} (asked: {ev['requested']}); resident then: "
             f"{'n/a' if ev['resident_fraction'] is None else format(ev['resident_fraction'], '.1%')}"
             f"{' (memory-backed tier)' if ev['memory_backed'] else ''}; reads: {r['read']} "
             f"({verdict(r['read'])})", "",
             *[f"{op}s: {device_audit.words(a, op)}" for op, a in r.get("device", {}).items()], "",
             "| phase | checkpoints | GiB | run throughput GiB/s (rules) | median GiB/s | min GiB/s "
             "| DLIO's rank-0 mean of rates GiB/s |", "|---|---|---|---|---|---|---|"]
    for _, x in run.iterrows():
        lines.append(f"| {x['op']} | {x['checkpoints']} | {x['bytes'] / GiB:.3f} | "
                     f"{x['run_throughput_GiBps']:.3f} | {x['median_GiBps']:.3f} | {x['min_GiBps']:.3f} | "
                     f"{x['dlio_rank0_mean_GiBps']:.3f} |")
    rss = r["files"].groupby("rank")["peak_rss_bytes"].max()
    lines += ["", f"peak RSS a rank: {rss.max() / 1e6:.0f} MB (largest file {lo.largest_file / 1e6:.1f} MB)"]
    return "\n".join(lines) + "\n"


def write_run(out: Path, lo: L.Layout, r: dict) -> None:
    """A command run's folder: ``rank-NNNN.csv`` per rank (every file: bytes, open-to-close,
    fsync time), ``checkpoints.csv`` (the rules' per-checkpoint metrics), ``summary.json``,
    ``summary.md``; each written atomically."""
    from ..output.results import atomic_write, write_json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cols = ["op", "step", "file", "kind", "bytes", "t_open", "t_close", "open_to_close_s", "fsync_s", "gen_s"]
    for rank, g in r["files"].groupby("rank"):
        atomic_write(out / f"rank-{rank:04d}.csv", lambda p, g=g: g[cols].to_csv(p, index=False))
    per, run = metrics(r["steps"])
    atomic_write(out / "checkpoints.csv", lambda p: per.to_csv(p, index=False))
    write_json(out / "summary.json", {"model": lo.model.name, "ranks": lo.ranks, "scale": lo.scale,
                                      "checkpoint_bytes": lo.total_bytes, "eviction": r["eviction"],
                                      "read": r["read"], "device_audit": r.get("device"),
                                      "runs": run.to_dict("records")})
    md = summary_md(lo, r)
    atomic_write(out / "summary.md", lambda p: p.write_text(md))


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): tiers x runs x checkpoints."""
    c = p["llm_checkpoint"]
    return count(c["tiers"]) * int(c["runs"]) * int(c["checkpoints"])


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`): each tier's variants, ``direct`` only on a tier not memory-backed."""
    c = p["llm_checkpoint"]
    memory = {t["name"] for t in p["tiers"] if cache.memory_backed(t["path"])}
    return [{"tier": x, "variant": v} for x in c["tiers"] for v in ("fsync", "no-fsync", "direct")
            if not (v == "direct" and (x in memory or not c.get("read_direct", True)))]


STAGE = Stage("llm_checkpoint", "notebooks/55-llm-checkpoint.ipynb", "measuring",
              {"llm_checkpoint": "LLMCheckpointConfig"},
              ("seed", "tiers", "llm_checkpoint"), True, "llm_checkpoint_report", ("results/fio_baseline/summary.csv",),
              note="LLM checkpointing as MLPerf Storage defines it (measures; draws nothing).",
              size="size", configs="configurations",
              builder="experiments.emulator.llm_stage:measuring_stage")   # its stage code, beside the layout it measures
