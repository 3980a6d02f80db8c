"""Figures and claims for the AlexNet mini-application (Chien et al. 2018, Fig 6 to Fig 10).

Reads what ``caltech_like``, ``alexnet_prefetch`` and ``alexnet_checkpoint`` measured; draws
in the paper's way (Fig 6: run time with prefetch as the bar, the excess without prefetch on
top; Fig 9: run time per checkpoint target with the no-checkpoint time shaded) and measures the
paper's claims (``measure_*``), joined with their declarations in
``experiments/claims/papers/chien2018-tensorflow-io.yaml``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..verdicts import reasons
from ..statistics import stats
from ..figures import style
from ..claims.declared import Measured, join
from .alexnet_findings import (measure_batch_size, measure_checkpoint, measure_prefetch,  # noqa: F401
                               prefetch_ratio, stall_ratios)


def plot_sizes(manifest: pd.DataFrame, hist: pd.DataFrame):
    """Histogram of generated file sizes (percent per 2 kB bin), with median and mean."""
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    w = float(hist["bin_hi_KB"].iloc[0] - hist["bin_lo_KB"].iloc[0])
    ax.bar(hist["bin_lo_KB"] + w / 2, hist["files_percent"], width=w * 0.9, edgecolor="0.2")
    kb = manifest["bytes"] / 1000
    for v, ls, lab in [(kb.median(), "--", "median"), (kb.mean(), ":", "mean")]:
        ax.axvline(v, color="0.2", ls=ls, lw=1.2, label=f"{lab} {v:.1f} kB")
    ax.set_xlabel("file size, kB (last bin: everything larger)")
    ax.set_ylabel("files, %")
    ax.set_title("Caltech-101-like images (JPEG and PNG)")
    style.legend_beside(ax)   # beside the axes: never over a bar
    fig.tight_layout()
    return fig


def plot_fig6(summary: pd.DataFrame):
    """Fig 6: per tier, bars of the median run time with one batch prefetched (whiskers: its 95 %
    interval, ``summary`` from :func:`experiments.statistics.stats.with_median_ci`), and on top (white,
    hatched) the excess when nothing is prefetched: the cost of I/O. Prefetch and no prefetch
    keep one look in every panel (:func:`experiments.figures.style.category`); the tier is the panel."""
    d = summary[summary["experiment"] == "prefetch"]
    tiers = list(dict.fromkeys(d["tier"]))
    pf = style.category("prefetch", "prefetch")["color"]
    fig, axes = plt.subplots(2, len(tiers), figsize=(3.6 * len(tiers) + 2.4, 6.2), squeeze=False,
                             sharey="row", gridspec_kw={"height_ratios": [2, 1]})
    top = float(np.nanmax(np.r_[d["seconds"], d["no_prefetch_seconds"]]))
    for ax, low, tier in zip(axes[0], axes[1], tiers):
        t = d[d["tier"] == tier]
        with_p = t[t["prefetch"] > 0].sort_values("threads")
        x = np.arange(len(with_p))
        ax.bar(x, with_p["seconds"], color=pf, edgecolor="0.2", label="prefetch 1 batch",
               yerr=style.ci_yerr(with_p, "seconds"), capsize=3)
        excess = with_p["io_excess_s"].to_numpy()
        ax.bar(x, np.clip(excess, 0, None), bottom=with_p["seconds"], color="white", edgecolor="0.2",
               hatch="//", label="no prefetch")
        neg = excess < 0
        if neg.any():
            ax.scatter(x[neg], (with_p["seconds"] + excess)[neg], marker="_", s=200, color="0.1",
                       label="no prefetch (faster here)")
        ax.set_xticks(x, [str(n) for n in with_p["threads"]])
        ax.set_ylim(0, top * 1.08)
        ax.set_title(f"tier {tier}")
        ax.set_ylabel("run time, s (median)\nhatched: no prefetch's excess")
        no_p = t[t["prefetch"] == 0].sort_values("threads")
        low.bar(x - 0.2, no_p["data_s"].to_numpy(), 0.4, color="white", edgecolor="0.2", hatch="//",
                label="no prefetch")
        low.bar(x + 0.2, with_p["data_s"].to_numpy(), 0.4, color=pf, edgecolor="0.2",
                label="prefetch 1 batch")
        low.set_xticks(x, [str(n) for n in with_p["threads"]])
        low.set_xlabel("map threads")
        low.set_ylabel("wait for data, s\nper epoch (median)")
    style.legend_beside(axes[0][-1], axes[0])   # beside the panels: never over a bar
    style.legend_beside(axes[1][-1], axes[1])
    fig.suptitle("Fig 6: AlexNet epoch, prefetch vs none")
    fig.tight_layout()
    return fig


def plot_fig7(batches: pd.DataFrame):
    """Fig 7: median run time of one epoch against batch size, with and without prefetch;
    ``batches`` with the medians' intervals (:func:`experiments.statistics.stats.with_median_ci`)."""
    fig, ax = plt.subplots(figsize=(6.8, 3.6))
    for (tier, p), g in batches.groupby(["tier", "prefetch"], sort=False):
        g = g.sort_values("batch_size")
        ax.errorbar(g["batch_size"], g["seconds"], yerr=style.ci_yerr(g, "seconds"), marker="o", capsize=3,
                    ls="-" if p else "--", color=style.category("tier", tier)["color"], label=f"{tier}, prefetch {p}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(batches["batch_size"].unique()), [str(b) for b in sorted(batches["batch_size"].unique())])
    ax.set_xlabel("batch size, images")
    ax.set_ylabel(f"run time of one epoch, s\n({style.CI_LABEL})")
    ax.set_title(f"Fig 7: batch size ({int(batches['threads'].iloc[0])} map threads)")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig


def read_rate(samples: pd.DataFrame) -> pd.DataFrame:
    """Per (tier, prefetch) the read rate Fig 8 plots: where the tier has a block device, the
    bytes the training process tree made the kernel fetch from storage (``/proc/<pid>/io``
    ``read_bytes``: the device's own counters also count every other process on a shared
    box, and a cache drop makes them all re-read); for a memory tier, which has no device,
    the process tree's VFS reads (``rchar``)."""
    out = []
    for (tier, p), g in samples.groupby(["tier", "prefetch"], sort=False):
        pr = g[g["source"] == "proc"]
        if g["source"].str.startswith("dev:").any():
            out.append(pr.assign(MBps=pr["read_MBps"], view="process reads from storage"))
        else:
            out.append(pr.assign(MBps=pr["vfs_read_MBps"], view="process VFS reads"))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def _edges(g: pd.DataFrame) -> np.ndarray:
    """Interval edges of dstat rows (``time_s`` is each interval's end)."""
    t = g["time_s"].to_numpy()
    return np.concatenate([[t[0] - g["interval_s"].iloc[0]], t])


def plot_fig8(samples: pd.DataFrame, steps: pd.DataFrame):
    """Fig 8: MB read per second during one cold epoch, prefetch (gray area) vs none (white
    area, outlined), one panel per tier; ticks mark the first and last iteration."""
    r = read_rate(samples)
    tiers = list(dict.fromkeys(r["tier"]))
    fig, axes = plt.subplots(len(tiers), 1, figsize=(8.5, 2.6 * len(tiers)), squeeze=False)
    for ax, tier in zip(axes[:, 0], tiers):
        for p in sorted(r.loc[r["tier"] == tier, "prefetch"].unique(), reverse=True):
            g = r[(r["tier"] == tier) & (r["prefetch"] == p)].sort_values("time_s")
            if not len(g):
                continue
            if p:
                ax.stairs(g["MBps"], _edges(g), fill=True, color="0.6", alpha=0.8,
                          label=f"prefetch {p}")
            else:
                ax.stairs(g["MBps"], _edges(g), color="0.1", lw=1.4, label="no prefetch")
            s = steps[(steps["tier"] == tier) & (steps["prefetch"] == p)]
            if len(s):
                for t in (s["time_s"].min(), s["time_s"].max()):
                    ax.axvline(t, color="0.1" if not p else "0.45", ls=":", lw=0.8)
        view = r.loc[r["tier"] == tier, "view"].iloc[0]
        ax.set_title(f"tier {tier} ({view})", fontsize=10)
        ax.set_xlabel("time since start of sampling, s")
        ax.set_ylabel("read, MB/s")
        style.legend_beside(ax)
    fig.suptitle("Fig 8: data read per interval during an epoch (dotted: first and last iteration)")
    fig.tight_layout()
    return fig


def plot_fig9(ck: pd.DataFrame):
    """Fig 9: median run time per checkpoint target (top) with the run time without checkpoints
    shaded; median stall per checkpoint (bottom). ``ck``: the summary with the intervals of
    ``seconds`` and ``stall_median_s`` (:func:`experiments.statistics.stats.with_median_ci` over the runs
    and over the checkpoints)."""
    d = ck[ck["mode"] != "none"]
    none = float(ck.loc[ck["mode"] == "none", "seconds"].iloc[0]) if (ck["mode"] == "none").any() else np.nan
    labels = [("burst buffer " + t.replace(">", "→")) if m == "burst" else t for m, t in zip(d["mode"], d["target"])]
    x = np.arange(len(d))
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7.5, 6), sharex=True)
    a1.bar(x, d["seconds"], color="white", edgecolor="0.2",
           yerr=style.ci_yerr(d, "seconds"), capsize=3)
    if np.isfinite(none):
        a1.bar(x, [min(none, s) for s in d["seconds"]], color="0.7", edgecolor="0.2",
               label=f"no checkpoint ({none:.1f} s)")
        style.legend_beside(a1)
    a1.set_ylabel(f"run time, s\n({style.CI_LABEL})")
    a1.set_title(f"Fig 9: {int(d['checkpoints'].iloc[0])} checkpoints of "
                 f"{d['checkpoint_MB'].iloc[0]:.0f} MB during the run")
    a2.bar(x, d["stall_median_s"], color="0.4", edgecolor="0.2", yerr=style.ci_yerr(d, "stall_median_s"),
           capsize=3)
    a2.set_ylabel(f"stall per checkpoint, s\n({style.CI_LABEL})")
    a2.set_xticks(x, labels, rotation=15)
    a2.set_xlabel("checkpoint target")
    fig.tight_layout()
    return fig


def plot_fig10(dst: pd.DataFrame, saves: pd.DataFrame, drains: pd.DataFrame, runs: pd.DataFrame,
               panels: list[str]):
    """Fig 10: write MB/s per interval for the checkpoint targets in ``panels`` (the slow tier
    directly, the burst buffer): the block device's writes and the process tree's VFS writes;
    shaded: checkpoint saves (dark) and background drains (light); dotted: end of training."""
    d = dst[~dst["warmup"]]
    rep = int(d["repeat"].max())
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.8 * len(panels)), squeeze=False, sharex=True)
    for ax, target in zip(axes[:, 0], panels):
        g = d[(d["target"] == target) & (d["repeat"] == rep)]
        for src, gg in g.groupby("source"):
            gg = gg.sort_values("time_s")
            col = "vfs_write_MBps" if src == "proc" else "write_MBps"
            lab = ("process-tree VFS writes (every tier)" if src == "proc"
                   else f"device {src[4:]} writes (whole box)")
            ax.stairs(gg[col], _edges(gg), label=lab, color="0.1" if src != "proc" else "tab:blue", lw=1.3)
        for _, e in saves[(saves["target"] == target) & (saves["repeat"] == rep)].iterrows():
            ax.axvspan(e["start_s"], e["end_s"], color="0.3", alpha=0.35, lw=0)
        for _, e in drains[(drains["target"] == target) & (drains["repeat"] == rep)].iterrows() if len(drains) else []:
            ax.axvspan(e["start_s"], e["end_s"], color="tab:orange", alpha=0.2, lw=0)
        end = runs[(runs["target"] == target) & (runs["repeat"] == rep)]["seconds"]
        if len(end):
            ax.axvline(float(end.iloc[0]), ls=":", color="0.2")
        ax.set_title(("burst buffer " + target.replace(">", " → ")) if ">" in target
                     else f"checkpoint straight to {target}", fontsize=10)
        ax.set_ylabel("write, MB/s")
        style.legend_beside(ax, fontsize=7)
    axes[-1, 0].set_xlabel("time since start of training, s (dark: save, light: drain, dotted: end)")
    fig.suptitle("Fig 10: write activity during checkpointing")
    fig.tight_layout()
    return fig


STAGE = "alexnet_report"


def claims(summary: pd.DataFrame, batches: pd.DataFrame, ck: pd.DataFrame, fast: str,
           slow: str, env: dict | None = None, fio: pd.DataFrame | None = None,
           ck_env: dict | None = None, raw: pd.DataFrame | None = None,
           saves: pd.DataFrame | None = None, steps: pd.DataFrame | None = None,
           ck_runs: pd.DataFrame | None = None) -> list[dict]:
    """The paper's claims for Fig 6, 7, 9 and 10 against our medians, each emitted whether or
    not its data was measured (the paper's side:
    ``experiments/claims/papers/chien2018-tensorflow-io.yaml``). ``env``: alexnet_prefetch's
    env.json (cores, cold-run residency, the warm-up count); ``fio``: the device baseline, for
    the burst buffer's measured reason; ``ck_env``: alexnet_checkpoint's env.json. The 95 %
    intervals come from the samples: ``raw`` (alexnet_prefetch's raw.parquet, one row per run
    and repeat), ``saves`` (alexnet_checkpoint's saves.csv, one row per checkpoint) and
    ``steps`` (alexnet_prefetch's steps.csv, one row per training step) and ``ck_runs``
    (alexnet_checkpoint's raw.parquet, one row per run: the run times Fig 9 compares); a
    finding whose samples are not given has no interval and is ``inconclusive``."""
    from ..claims.report_levels import judged_at_their_levels

    env, ck_env = env or {}, ck_env or {}
    n = reasons.cores(env or ck_env)
    bp = (env.get("params") or {}).get("alexnet") or {}
    sweeps = lambda: [*measure_prefetch(summary, env, n, raw), *measure_batch_size(batches, env, n, raw, steps)]  # noqa: E731
    ckpt = lambda: measure_checkpoint(ck, fast, slow, env, n, fio, saves, ck_runs)   # noqa: E731
    # each finding at the level of the looks at the configurations it compares
    return join(STAGE, [
        *(judged_at_their_levels("alexnet_prefetch", raw, sweeps, {"batch_threads": bp.get("batch_threads"),
                                                                     "batch_tiers": bp.get("batch_tiers")})
          if raw is not None else sweeps()),
        *(judged_at_their_levels("alexnet_checkpoint", ck_runs, ckpt,
                                 {"fast": fast, "slow": slow, "burst": f"{fast}>{slow}"})
          if ck_runs is not None and len(ck_runs) else ckpt()),
        measure_drain_after_end(ck_runs, fast, slow)])


def measure_drain_after_end(ck_runs: pd.DataFrame | None, fast: str, slow: str) -> Measured:
    """Fig 10: the burst buffer's copy to the slow tier goes on after the application ends.
    Per timed burst-buffer run of ``ck_runs`` (alexnet_checkpoint's raw.parquet), the time its
    last copy was durable on the slow tier (``drain_done_s``: the drain waited for, from the run's
    start) over the run time (``seconds``, to the last step), x; the median over the runs, its
    interval over the runs (:func:`experiments.statistics.stats.median_ci`)."""
    rid = "burst-buffer-drain-outlasts-run"
    need = {"mode", "seconds", "drain_done_s"}
    if ck_runs is None or not len(ck_runs) or not need <= set(ck_runs.columns):
        return Measured(rid, why_not="alexnet_checkpoint wrote no runs with their drain times "
                                     "(alexnet_checkpoint.burst_buffer off, or a table from before drain_done_s)")
    d = ck_runs[ck_runs["mode"] == "burst"]
    if "warmup" in d:
        d = d[~d["warmup"].astype(bool)]
    d = d[d["seconds"] > 0]
    if not len(d):
        return Measured(rid, why_not="alexnet_checkpoint made no timed burst-buffer run")
    x = (d["drain_done_s"] / d["seconds"]).to_numpy(dtype=float)
    v, ci = stats.median_ci(x, of="runs")
    after = (d["drain_done_s"] - d["seconds"]).to_numpy(dtype=float)
    return Measured(
        rid, v, ci if len(x) > 1 else None, context=f"burst buffer {fast} > {slow}",
        note=(f"{len(x)} runs; the last copy durable on {slow} {np.median(after):.2f} s (median) after the last "
              f"step of a {np.median(d['seconds']):.1f} s run; our drain fsyncs each copy and reads it back, "
              "where the paper's copy left its flush to ext4's write-back"),
        why_not=(f"the drain kept up: each checkpoint's copy to {slow} was durable before the next save, so "
                 "nothing was left to copy when the last step ended" if v <= 1.01 else
                 "the copies ended after the last step in the median run; the runs vary: "
                 + ", ".join(f"{a:.2f} s" for a in after) + " after the end"))


