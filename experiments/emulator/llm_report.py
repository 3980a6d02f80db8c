"""The ``llm_checkpoint_report`` stage's claims and figures of what the ``llm_checkpoint`` stage
measured (:mod:`.llm_stage`: the variants, the runs, the burst buffer).

Claims (``extension``: MLPerf Storage's checkpointing, not one of the five papers): how much a
missing fsync inflates the write throughput, how much a cache-served read phase inflates the
read throughput (each a ratio of the per-checkpoint medians with its bootstrap interval, on the
storage tier), the burst buffer's stall against writing to the slow tier directly, and a check
that the layout's full-size totals match the published sizes. Units: GiB/s = 2^30 B/s, s.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from ..statistics import stats
from ..claims.declared import Measured, join
from . import llm_burst_buffer as B, llm_checkpoint as C, llm_layout as L
from .llm_stage import JOB, VARIANTS, bounds, burst_buffer, check, measure, summarize  # noqa: F401

STAGE = "llm_checkpoint_report"
# the configurations each figure draws ({figure: {stage: selection}}, selections as in a finding's
# `compares`): the run throughput of every tier and variant (experiments.review.unread)
DRAWS = {"llm_checkpoint_throughput": {"llm_checkpoint": {}}}


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


def _ratio(per: pd.DataFrame, tier: str, op: str, num: str, den: str):
    """The median over runs of each run's median GiB/s of variant ``num``'s checkpoints over
    ``den``'s on ``tier`` (x), its interval over the runs
    (:func:`experiments.statistics.stats.ratio_of_run_medians`)."""
    sel = lambda v: per[(per["tier"] == tier) & (per["op"] == op) & (per["variant"] == v)]   # noqa: E731
    runs = lambda d: [g["throughput_GiBps"].to_numpy(dtype=float) for _, g in d.groupby("run")] \
        if "run" in d else [d["throughput_GiBps"].to_numpy(dtype=float)]   # noqa: E731
    a, b = sel(num), sel(den)
    if not len(a) or not len(b):
        return float("nan"), None
    # one value a run (its median over its 2-3 checkpoints): a pooled median of so few jumps
    return stats.ratio_of_run_medians(runs(a), runs(b), what="checkpoint throughputs")


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
    the phase's bytes and where they came from (``evictions``: one row per run), for a note."""
    col, where = ("device_read_ratio", "read_from") if op == "read" else ("device_write_ratio", "written_to")
    if col not in evictions:
        return ""
    e = evictions[(evictions["tier"] == storage) & (evictions["variant"] != "direct")]
    # the median over runs of the ratio, the most frequent answer of where the bytes went
    g = e.groupby("variant", sort=False)
    bits = [f"{v} {'n/a' if pd.isna(x[col].median()) else format(x[col].median(), '.2f')} "
            f"({x[where].mode().iloc[0] if x[where].notna().any() else 'unknown'})" for v, x in g]
    return f"; device audit, device / phase bytes of the {op}s: " + ", ".join(bits) if bits else ""


def measure_burst_buffer(stalls: pd.DataFrame) -> Measured:
    """The stall a checkpoint costs training written straight to the slow tier over the stall
    through the burst buffer at its smallest keep that does not fall behind (x, s over s, per
    checkpoint medians of each run, interval over the runs: :func:`stats.ratio_of_run_medians`)."""
    runs = lambda d: [g["stall_s"].to_numpy(dtype=float) for _, g in d.groupby("run")] \
        if "run" in d else [d["stall_s"].to_numpy(dtype=float)]   # noqa: E731
    d = stalls[stalls["mode"] == "direct"]
    k = B.smallest_keep(stalls)
    bb = stalls[(stalls["mode"] == "burst buffer") & (stalls["keep"] == (k if k is not None else stalls["keep"].max()))]
    v, ci = (stats.ratio_of_run_medians(runs(d), runs(bb), what="stalls")
             if len(d) and len(bb) else (float("nan"), None))
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
    from ..figures import style

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
    from ..figures import style

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
    from ..figures import style

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
