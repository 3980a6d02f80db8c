"""The ``llm_checkpoint`` stage (notebook 53): measure the LLM checkpoint workload on each tier
in its variants, the burst buffer in front, and report it with claims.

Variants per tier (:func:`measure`), each a run of :func:`.llm_checkpoint.run_variant`:

- ``fsync``: writes with fsync of files and folder; the cache evicted before the reads
  (``cold`` reads; a memory-backed tier cannot be evicted and is flagged ``cache-served``);
- ``no-fsync``: writes without fsync (what a benchmark that forgets it measures); the reads
  right after, cache not dropped (``cache-served``, as DLIO's issue 277 found);
- ``direct`` (``read_direct``, tiers that are not memory-backed): as ``fsync``, reads with
  O_DIRECT.

Claims (``extension``: MLPerf Storage's checkpointing, not one of the five papers): how much a
missing fsync inflates the write throughput, how much a cache-served read phase inflates the
read throughput (each a ratio of the per-checkpoint medians with its bootstrap interval, on the
storage tier), the burst buffer's stall against writing to the slow tier directly, and a check
that the layout's full-size totals match the published sizes. Units: GiB/s = 2^30 B/s, s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats
from ..claims.declared import Measured, join
from . import llm_burst_buffer as B, llm_checkpoint as C, llm_layout as L

STAGE = "llm_checkpoint_report"
VARIANTS = {"fsync": dict(fsync=True, evict="auto", direct=False),
            "no-fsync": dict(fsync=False, evict="none", direct=False),
            "direct": dict(fsync=True, evict="auto", direct=True)}


def check(cfg, tiers: dict[str, Path]) -> None:
    """Stop before any work (ConfigError, one line) when a tier of the stage cannot take its
    checkpoints (:func:`.llm_checkpoint.check`: writable, disk, memory) or the burst buffer's
    fast tier one checkpoint and its slow tier all of them."""
    lo = L.layout(cfg.model, cfg.ranks, cfg.scale)
    for t in cfg.tiers:
        C.check(lo, tiers[t] / "llm_checkpoint", cfg.checkpoints, direct=cfg.read_direct)
    b = cfg.burst_buffer
    blo = L.layout(cfg.model, cfg.ranks, b.scale or cfg.scale)
    from ..chien.burst_buffer import CheckpointManager
    CheckpointManager(tiers[b.fast], tiers[b.slow], run="llm-bb-check", keep=max(b.keeps)).check(
        blo.total_bytes + sum(map(len, blo.files)) * C.HEADER_BYTES, b.checkpoints)


def measure(cfg, tiers: dict[str, Path], seed: int = 0, progress=print) -> dict:
    """Every variant on every tier of ``cfg.tiers`` (``tiers``: name -> folder), one pool of
    ranks for all; ``files``, ``steps`` (labelled by tier and variant), ``evictions`` (with each
    run's device verdicts) and ``device`` (each phase's device audit, one row per tier, variant
    and op: :func:`experiments.device_audit.columns`)."""
    from .. import cache, device_audit, launcher

    lo = L.layout(cfg.model, cfg.ranks, cfg.scale)
    check(cfg, tiers)
    files, steps, evs, devs = [], [], [], []
    with launcher.RankPool(lo.ranks, C.RANK_PROGRAM) as pool:
        for t in cfg.tiers:
            mem = cache.memory_backed(tiers[t])
            for v, kw in VARIANTS.items():
                if v == "direct" and (mem or not cfg.read_direct):
                    continue
                progress(f"llm_checkpoint: tier {t}, {v}: {cfg.checkpoints} checkpoints of "
                         f"{lo.total_bytes / 1e6:.1f} MB from {lo.ranks} ranks")
                r = C.run_variant(lo, tiers[t] / "llm_checkpoint", checkpoints=cfg.checkpoints,
                                  pause_s=cfg.pause_s, seed=seed, pool=pool, label=t, tier=t,
                                  variant=v, **kw)
                files.append(r["files"])
                steps.append(r["steps"])
                rd, wr = (device_audit.columns(r["device"][op]) for op in ("read", "write"))
                evs.append({"tier": t, "variant": v, "read": r["read"], **r["eviction"],
                            "device_read_ratio": rd["device_read_ratio"], "read_from": rd["read_from"],
                            "device_write_ratio": wr["device_write_ratio"], "written_to": wr["written_to"]})
                devs += [{"tier": t, "variant": v, "op": op, **device_audit.columns(a)}
                         for op, a in r["device"].items()]
    return {"layout": lo, "files": pd.concat(files, ignore_index=True),
            "steps": pd.concat(steps, ignore_index=True), "evictions": pd.DataFrame(evs),
            "device": pd.DataFrame(devs)}


def summarize(steps: pd.DataFrame, device: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per checkpoint and per run (tier, variant, phase) metrics (:func:`.llm_checkpoint.metrics`),
    with the read mode, each phase's device audit (``device``: :func:`measure`'s, its columns
    joined) and the phase's verdict: none for reads served from the page cache and for writes
    the page cache still held when the phase ended (``written_to`` cache: no fsync)."""
    per, run = C.metrics(steps, ["tier", "variant", "read"])
    if device is not None and len(device):
        run = run.merge(device, on=["tier", "variant", "op"], how="left")
    held = run["written_to"].eq("cache") if "written_to" in run else pd.Series(False, index=run.index)
    run["verdict"] = [C.verdict(r) if op == "read" else WRITES_HELD if h else "storage"
                      for r, op, h in zip(run["read"], run["op"], held)]
    return per, run


WRITES_HELD = "no storage verdict: the page cache held the writes when the phase ended (device audit)"


JOB = {"write": "seqwrite", "read": "seqread"}   # the fio_baseline job a phase is judged against


def bounds(run: pd.DataFrame, steps: pd.DataFrame, fio: pd.DataFrame | None) -> pd.DataFrame:
    """``run`` with the emulator's bound verdict (:func:`experiments.emulator.bound.verdict`) of
    each phase that reached the storage: its run throughput against fio's sequential write or
    read on the same tier (``fio_MBps``, ``client_fraction_of_fio``), a rank's busiest demand
    (its thread's on-CPU and run-queue seconds over its I/O seconds: torch.save and torch.load
    run on the rank's one thread; the median over checkpoints of the largest over ranks) and the
    ranks' CPU share of the host's cores. The timed part of a rank does nothing but I/O, so its data wait is all of it.
    A phase whose reads or writes were the page cache's gets no verdict."""
    from ..claims import fio_MBps
    from .bound import host_cores, verdict

    s = steps.assign(demand=steps["demand_s"] / steps["io_s"])
    keys = ["tier", "variant", "read", "op"]
    g = s.groupby(keys + ["step"])
    per = pd.DataFrame({"busiest": g["demand"].max(),
                        "share": g["cpu_s"].sum() / (g["io_s"].max() * host_cores())}).reset_index()
    med = per.groupby(keys)[["busiest", "share"]].median()
    rows = []
    for _, r in run.iterrows():
        mb = fio_MBps(fio, r["tier"], JOB[r["op"]])
        ref = {"bytes_per_s": mb * 1e6, "how": f"fio_baseline {JOB[r['op']]} on tier {r['tier']}"}
        m = med.loc[tuple(r[k] for k in keys)]
        b, why, frac = (("no verdict", r["verdict"], float("nan")) if r["verdict"] != "storage" else
                        verdict(r["run_throughput_GiBps"] * C.GiB, ref, 1.0, m["busiest"], m["share"],
                                "main thread"))
        rows.append({"fio_MBps": mb, "client_fraction_of_fio": frac, "bound": b, "bound_why": why,
                     "busiest_demand": m["busiest"], "cpu_share": m["share"]})
    return pd.concat([run.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def engineer_rows(summary: pd.DataFrame, model: str) -> pd.DataFrame:
    """The stage's phases that reached the storage as rows of the storage engineer's table
    (:func:`experiments.emulator.bench.engineer_table`'s columns; no accelerators here)."""
    s = summary[summary["bound"] != "no verdict"]
    return pd.DataFrame({
        "tier": s["tier"], "workload": f"{model} checkpoint " + s["op"] + " (" + s["variant"] + ")",
        "compute_model": "none", "max_accelerators": float("nan"), "limit_of": s["bound"],
        "client_cold_MBps": s["run_throughput_GiBps"] * C.GiB / 1e6, "fio_cold_MBps": s["fio_MBps"],
        "client_fraction_of_fio_cold": s["client_fraction_of_fio"], "bound": s["bound"],
        "where_time_went": [f"torch.{'save' if o == 'write' else 'load'}: the busiest rank wanted "
                            f"{d:.0%} of a core over its I/O" for o, d in zip(s["op"], s["busiest_demand"])],
        "stopped_because": ""})


def burst_buffer(cfg, tiers: dict[str, Path]) -> pd.DataFrame:
    """The burst buffer's stalls (:func:`.llm_burst_buffer.stalls`) with the stage's layout."""
    b = cfg.burst_buffer
    lo = L.layout(cfg.model, cfg.ranks, b.scale or cfg.scale)
    return B.stalls(lo, tiers[b.fast], tiers[b.slow], b.keeps, b.interval_s, b.checkpoints, b.slow_MBps)


def _ratio(per: pd.DataFrame, tier: str, op: str, num: str, den: str):
    sel = lambda v: per[(per["tier"] == tier) & (per["op"] == op) & (per["variant"] == v)]["throughput_GiBps"]  # noqa: E731
    a, b = sel(num).to_numpy(), sel(den).to_numpy()
    if len(a) < 2 or len(b) < 2:
        return float("nan"), None
    return stats.ratio_of_medians(a, b)


def claims(per: pd.DataFrame, evictions: pd.DataFrame, stalls: pd.DataFrame, storage: str) -> list[dict]:
    """The stage's claims (module docstring; declared in
    ``experiments/claims/papers/mlperf-storage-checkpointing.yaml``), judged on the ``storage``
    tier."""
    return join(STAGE, [*measure_throughput(per, evictions, storage), measure_burst_buffer(stalls),
                        measure_layout()])


def measure_throughput(per: pd.DataFrame, evictions: pd.DataFrame, storage: str) -> list[Measured]:
    """What a missing fsync does to the write throughput and a cache-served read phase to the
    read throughput on ``storage``: ratios of the per-checkpoint medians (x, GiB/s over GiB/s),
    each with its bootstrap interval."""
    v, ci = _ratio(per, storage, "write", "no-fsync", "fsync")
    writes = Measured(
        "llm_ckpt_nofsync_inflates_writes", v, ci, context=f"tier {storage}",
        note="DLIO's configs ask for fsync: True, but its loader stores it as checkpoint_sync "
             "while the save reads checkpoint_fsync (default False), so it never fsyncs "
             "(argonne-lcf/dlio_benchmark utils/config.py, checkpointing/base_checkpointing.py)"
             + _audit_note(evictions, storage, "write"),
        why_not="the tier absorbs the writes at the rate it syncs them here")
    v, ci = _ratio(per, storage, "read", "no-fsync", "fsync")
    e = evictions[(evictions["tier"] == storage) & (evictions["variant"] == "fsync")]
    rf = float(e["resident_fraction"].iloc[0]) if len(e) and e["resident_fraction"].notna().all() else None
    reads = Measured(
        "llm_ckpt_cache_inflates_reads", v, ci, context=f"tier {storage}",
        resident_fraction=rf, memory_backed=bool(len(e) and e["memory_backed"].all()),
        note="dlio_benchmark issue 277: the whole checkpoint resident when the read phase starts"
             + _audit_note(evictions, storage, "read"),
        why_not="torch.load's deserialization, not the device, bounds the reads here")
    return [writes, reads]


def _audit_note(evictions: pd.DataFrame, storage: str, op: str) -> str:
    """The device audit of ``op`` (read, write) of the variants on ``storage``: device bytes over
    the phase's bytes and where they came from (``evictions``: :func:`measure`'s), for a note."""
    col, where = ("device_read_ratio", "read_from") if op == "read" else ("device_write_ratio", "written_to")
    if col not in evictions:
        return ""
    e = evictions[evictions["tier"] == storage]
    bits = [f"{r['variant']} {'n/a' if pd.isna(r[col]) else format(r[col], '.2f')} ({r[where]})"
            for _, r in e[e["variant"] != "direct"].iterrows()]
    return f"; device audit, device / phase bytes of the {op}s: " + ", ".join(bits) if bits else ""


def measure_burst_buffer(stalls: pd.DataFrame) -> Measured:
    """The stall a checkpoint costs training written straight to the slow tier over the stall
    through the burst buffer at its smallest keep that does not fall behind (x, s over s, per
    checkpoint medians, bootstrap interval)."""
    d = stalls[stalls["mode"] == "direct"]["stall_s"].to_numpy()
    k = B.smallest_keep(stalls)
    bb = stalls[(stalls["mode"] == "burst buffer") & (stalls["keep"] == (k if k is not None else stalls["keep"].max()))]
    v, ci = (stats.ratio_of_medians(d, bb["stall_s"].to_numpy()) if len(d) > 1 and len(bb) > 1
             else (float("nan"), None))
    return Measured("llm_ckpt_burst_buffer_stall", v, ci, context=f"keep {k if k is not None else 'max'}",
                    note="Chien et al. Fig 9 at LLM scale: the crash-safe drain of chien/burst_buffer.py",
                    why_not="the fast tier is not faster than the slow one for these files here")


def measure_layout() -> Measured:
    """The largest relative difference of the layout's full-size totals from the published
    sizes (a fraction)."""
    err = max(abs(L.layout(n).total_bytes / 2**30 / g - 1) for n, g in L.PUBLISHED_GIB.items())
    return Measured("llm_ckpt_layout_totals", err,
                    note="105, 912 and 5,292 GiB (the rules' 'GB' and '5.29 TB' are binary, in "
                         "thousands of GiB)")


# ------------------------------------------------------------------------------ figures

def plot_throughput(run: pd.DataFrame):
    """Run throughput (the rules') per tier, phase and variant; DLIO's rank-0 mean as a dot."""
    import matplotlib.pyplot as plt

    run = run.assign(what=run["op"] + " " + run["variant"] + " (" + np.where(run["op"] == "read", run["read"], "") + ")")
    run["what"] = run["what"].str.replace(" ()", "", regex=False)
    tiers = list(dict.fromkeys(run["tier"]))
    whats = list(dict.fromkeys(run["what"]))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    w = 0.8 / max(1, len(whats))
    from .. import style

    for i, wt in enumerate(whats):
        s = run[run["what"] == wt].set_index("tier").reindex(tiers)
        x = np.arange(len(tiers)) + i * w
        one = run[run["what"] == wt].iloc[0]
        # colour: the variant; hatch: the phase (write; read cold; read served from the cache)
        hatch = "" if one["op"] == "write" else ("//" if one["read"] == "cold" else "..")
        ax.bar(x, s["run_throughput_GiBps"], w, label=wt, color=style.category("llm_variant", one["variant"])["color"],
               hatch=hatch, edgecolor="0.2")
        ax.plot(x, s["dlio_rank0_mean_GiBps"], "k.", label="DLIO's rank-0 mean of rates" if i == 0 else None)
    ax.set_xticks(np.arange(len(tiers)) + w * (len(whats) - 1) / 2, tiers)
    ax.set_xlabel("tier")
    ax.set_ylabel("run throughput, GiB/s")
    ax.set_title("LLM checkpoint throughput (total bytes / total time)")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig


def plot_timeline(files: pd.DataFrame, tier: str, variant: str = "fsync", step: int | None = None):
    """Every rank's files of one checkpoint write: open to close, the fsync part darker."""
    import matplotlib.pyplot as plt

    f = files[(files["tier"] == tier) & (files["variant"] == variant) & (files["op"] == "write")]
    step = step if step is not None else int(f["step"].max())
    f = f[f["step"] == step]
    from .. import style

    fig, ax = plt.subplots(figsize=(8, 0.35 * f["rank"].nunique() + 1.4))
    colors = style.colors("checkpoint_file", ("model", "optim"))
    for _, r in f.iterrows():
        ax.barh(r["rank"], r["t_close"] - r["t_open"] - r["fsync_s"], left=r["t_open"], color=colors[r["kind"]],
                label=f"{r['kind']} file: torch.save")
        ax.barh(r["rank"], r["fsync_s"], left=r["t_close"] - r["fsync_s"], color=colors[r["kind"]],
                alpha=0.45, hatch="//", label=f"{r['kind']} file: fsync")
    ax.set_xlabel("time from the checkpoint's barrier, s")
    ax.set_ylabel("rank")
    ax.invert_yaxis()
    ax.set_title(f"one checkpoint write per rank (tier {tier}, checkpoint {step})")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig


def plot_stalls(stalls: pd.DataFrame):
    """Stall per checkpoint: direct to the slow tier and through the burst buffer per keep."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.4))
    s = stalls.assign(what=np.where(stalls["mode"] == "direct", "direct to the slow tier",
                                    "burst buffer, keep " + stalls["keep"].fillna(0).astype(int).astype(str)))
    from .. import style

    for wt, g in s.groupby("what", sort=False):
        key = "direct" if g["mode"].iloc[0] == "direct" else int(g["keep"].fillna(0).iloc[0])
        st = style.category("bb_keep", key)
        ax.plot(g["step"], g["stall_s"], marker=st["marker"], color=st["color"], label=wt)
    ax.set_xlabel("checkpoint")
    ax.set_ylabel("stall, s")
    ax.set_title("time training waits per checkpoint")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig
