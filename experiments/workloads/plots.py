"""The workload stages' figures (thesis Fig 5.2, 5.5, 5.6, 5.9, 5.11, 5.14, 5.16, 5.17, A.2,
A.3, A.4, A.5; Eq 3.1, 3.2): step breakdowns, latencies and throughputs against batch size and
rank count, compute-time distributions and fits, the multi-row validation figures, Fig A.3 and
accelerator utilization. Times in s, throughputs in samples/s.

The thesis's Fig 5.5, 5.6, 5.11, 5.16 and 5.17 have one row per source: real data, generated
data, sleep, benchmark. The real data sets (KiTS19, Wikipedia, Criteo) cannot be downloaded
here; our realistic generators stand in for them (the "real" row), the ``random`` content
for the thesis's generated data, and ``compute: sleep`` for its sleep row
(:mod:`.validation`, whose :data:`~.validation.ROWS` list the rows drawn). The
``workload_fits`` figures show the real row alone.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..figures import style
from . import compute_model as cm
from . import fits

TITLES = {"unet3d": "UNET3D", "bert": "BERT", "dlrm": "DLRM", "retinanet": "RetinaNet"}
ROW_NOTE = "real row: realistic generated data, real compute (the other rows: workload_validation)"
PART_LABELS = {"to_device_s": "to device", "forward_s": "forward", "loss_s": "loss",
               "backward_s": "backward (+DDP all-reduce)", "optimizer_s": "optimizer step",
               "allreduce_s": "cumulative-loss all-reduce", "sleep_s": "sleep (compute: sleep)"}
LATENCIES = [("data_s", "data latency"), ("vfs_s", "VFS read latency"), ("prep_s", "preprocessing latency")]
THROUGHPUTS = [("vfs_sps", "VFS throughput"), ("data_sps", "data throughput"),
               ("compute_sps", "compute throughput")]


def rank_colors(s: pd.DataFrame) -> dict:
    """One color per rank count in ``s`` (:func:`experiments.figures.style.category`), so that G=2 has
    the same color in every panel, row and figure, also where a row ran only some rank counts."""
    return style.colors("ranks", sorted(s["ranks"].unique()))


def _lines(ax, s: pd.DataFrame, col: str, ylabel: str, logy=False, colors: dict | None = None):
    colors = colors or rank_colors(s)
    for g, d in s.groupby("ranks"):
        d = d.sort_values("batch_size")
        ax.plot(d["batch_size"], d[col], marker="o", label=f"G={g}", color=colors[g])
        if f"{col}_q1" in d:
            ax.fill_between(d["batch_size"], d[f"{col}_q1"], d[f"{col}_q3"], alpha=0.2, color=colors[g])
    ax.set_xlabel("batch size (samples)")
    ax.set_ylabel(ylabel)
    if logy:
        style.log_axis(ax, "y")
    if s["batch_size"].max() / max(1, s["batch_size"].min()) >= 16:
        ax.set_xscale("log", base=2)


def plot_breakdown(s: pd.DataFrame, workload: str, figure: str):
    """Step breakdown: step, data and compute (top), compute's parts (bottom); median, IQR fill."""
    parts = [p for p in PART_LABELS if p in s and s[p].max() > 0]
    ncol = max(3, len(parts))
    fig, axes = plt.subplots(2 if parts else 1, ncol, figsize=(3.2 * ncol, 6 if parts else 3.2), squeeze=False)
    for ax, (col, name) in zip(axes[0], [("step_s", "whole step"), ("data_s", "data wait"),
                                         ("compute_s", "compute")]):
        _lines(ax, s, col, f"{name}, s")
        ax.set_title(name, fontsize=9)
    for ax in axes[0][3:]:
        ax.axis("off")
    if parts:
        for ax, col in zip(axes[1], parts):
            _lines(ax, s, col, f"{PART_LABELS[col]}, s")
            ax.set_title(PART_LABELS[col], fontsize=9)   # "backward (+DDP all-reduce)" was wider than its panel
        for ax in axes[1][len(parts):]:
            ax.axis("off")
    style.legend_beside(axes[0][2], axes=[axes[0][0]], title="ranks")
    fig.suptitle(f"{figure}: {TITLES[workload]} step breakdown (median, IQR) — {ROW_NOTE}", fontsize=9)
    fig.tight_layout()
    return fig


def _panel_row(s: pd.DataFrame, cols: list[tuple[str, str, str]], title: str):
    """One log-scale panel per (column, panel title, y label) present in ``s``, against batch size."""
    cols = [c for c in cols if c[0] in s and s[c[0]].notna().any()]
    fig, axes = plt.subplots(1, len(cols), figsize=(3.6 * len(cols), 3.4), squeeze=False)
    for ax, (col, name, ylabel) in zip(axes[0], cols):
        _lines(ax, s, col, ylabel, logy=True)
        ax.set_title(name)
    style.legend_beside(axes[0][-1], axes=[axes[0][0]], title="ranks")
    fig.suptitle(f"{title} — {ROW_NOTE}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_latencies(s: pd.DataFrame, workload: str, figure: str):
    """Data wait, VFS read and preprocessing latencies (Fig 5.5, 5.16)."""
    names = [("data_s", "data latency"), ("vfs_s", "VFS read latency"), ("prep_s", "preprocessing latency")]
    return _panel_row(s, [(c, n, f"{n}, s (median)") for c, n in names],
                      f"{figure}: {TITLES[workload]} latencies")


def plot_throughputs(s: pd.DataFrame, workload: str, figure: str):
    """VFS, data and compute throughputs, samples/s (Fig 5.6, 5.11, 5.17)."""
    names = [("vfs_sps", "VFS throughput"), ("data_sps", "data throughput"), ("compute_sps", "compute throughput")]
    return _panel_row(s, [(c, n, "samples/s (median)") for c, n in names],
                      f"{figure}: {TITLES[workload]} throughputs")


def plot_distributions(steps: pd.DataFrame, nfits: pd.DataFrame, workload: str, figure: str):
    """Compute-time histograms per (G, B) with the fitted normal (Fig A.2, A.4, A.5)."""
    from scipy import stats

    st = fits.steady(steps[steps["workload"] == workload])
    f = nfits[nfits["workload"] == workload]
    Gs, Bs = sorted(f["ranks"].unique()), sorted(f["batch_size"].unique())
    fig, axes = plt.subplots(len(Gs), len(Bs), figsize=(2.6 * len(Bs), 2.2 * len(Gs)), squeeze=False)
    for i, g in enumerate(Gs):
        for j, b in enumerate(Bs):
            ax = axes[i][j]
            v = st[(st["ranks"] == g) & (st["batch_size"] == b)]["compute_ns"] / 1e9
            r = f[(f["ranks"] == g) & (f["batch_size"] == b)]
            if len(v) and len(r):
                ax.hist(v, bins=min(20, max(3, len(v) // 2)), density=True, alpha=0.6,
                        color=style.category("source", "ours")["color"])
                x = np.linspace(v.min(), v.max(), 100)
                sd = max(float(r["std_s"].iloc[0]), 1e-9)
                ax.plot(x, stats.norm.pdf(x, float(r["mean_s"].iloc[0]), sd), color="k", lw=1)
            ax.set_title(f"G={g}, B={b}", fontsize=8)
            style.few_ticks(ax, "x")   # narrow compute-time ranges give long labels
            ax.tick_params(labelsize=7)
            if i == len(Gs) - 1:
                ax.set_xlabel("compute time, s", fontsize=8)
    fig.suptitle(f"{figure}: {TITLES[workload]} compute times with fitted normals", fontsize=9)
    fig.tight_layout()
    return fig


def plot_fit(nfits: pd.DataFrame, models: dict, workload: str):
    """Fitted mean and std of compute time against the linear models in G and B."""
    f = nfits[nfits["workload"] == workload]
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    for ax, stat, col in ((axes[0], "mean", "mean_s"), (axes[1], "std", "std_s")):
        for g, d in f.groupby("ranks"):
            d = d.sort_values("batch_size")
            c = style.category("ranks", g)["color"]
            ax.plot(d["batch_size"], d[col], "o", color=c, label=f"G={g} measured")
            ax.plot(d["batch_size"], fits.predict(models[workload][stat], g, d["batch_size"]), "-",
                    color=c, label=f"G={g} model")
        ax.set_xlabel("batch size (samples)")
        ax.set_ylabel(f"compute time {stat}, s")
        ax.set_title(f"{stat}: R² = {models[workload][stat]['r2']:.2f}")
    style.legend_beside(axes[1], axes=[axes[0]], fontsize=7)
    fig.suptitle(f"{TITLES[workload]}: linear model of compute time (cf. Eq 5.1-5.6)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_eval(evals: pd.DataFrame, model: dict):
    """UNET3D evaluation: sliding-window time per case against its image size (cf. Fig 5.3)."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    mb = evals["bytes"] / 1e6
    ax.scatter(mb, evals["window_s"], s=14, alpha=0.6)
    if "s_per_MB" in model:
        x = np.linspace(mb.min(), mb.max(), 10)
        ax.plot(x, model["intercept_s"] + model["s_per_MB"] * x, color="k", lw=1,
                label=f"{model['s_per_MB']:.3g} s/MB, R² = {model['r2']:.2f}")
        style.legend_beside(ax)
    ax.set_xlabel("case image size, MB")
    ax.set_ylabel("sliding-window inference, s")
    ax.set_title(f"UNET3D evaluation at batch 1: N({model['mean_s']:.3g} s, {model['std_s']:.2g} s)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def plot_rows(s: pd.DataFrame, rows, workload: str, figure: str, panels, unit: str, what: str):
    """The thesis's multi-row figure: one row per entry of ``rows`` (:class:`.validation.Row`)
    that has runs in ``s`` (column ``row``), one panel per column of ``panels`` measured in any
    row, against batch size, one line per rank count, median with inter-quartile fill; panels of
    a column share their y axis. A row without runs is not drawn (the caption says which)."""
    s = s[s["workload"] == workload]
    drawn = [r for r in rows if (s["row"] == r.key).any()]
    cols = [(c, n) for c, n in panels if c in s and s[c].notna().any()]
    if not drawn or not cols:
        raise ValueError(f"{figure}: no runs of {workload} with {', '.join(c for c, _ in panels)}")
    fig, axes = plt.subplots(len(drawn), len(cols), figsize=(3.6 * len(cols), 2.9 * len(drawn)),
                             squeeze=False, sharex=True, sharey="col")
    colors = rank_colors(s)
    for i, r in enumerate(drawn):
        d = s[s["row"] == r.key]
        for j, (c, name) in enumerate(cols):
            ax = axes[i][j]
            if d[c].notna().any():
                _lines(ax, d, c, "", logy=True, colors=colors)
            else:
                ax.text(0.5, 0.5, "not measured in this row", ha="center", va="center",
                        transform=ax.transAxes, fontsize=8, color="0.4")
            ax.set_title(f"{chr(65 + i)}) {name}", fontsize=9)
            ax.set_ylabel(f"{r.label}\n{unit}" if j == 0 else "", fontsize=8)
            if i < len(drawn) - 1:
                ax.set_xlabel("")
    # entries from every panel: a rank count that only a later row ran is named too
    style.legend_beside(axes[0][-1], axes=list(axes.ravel()), fontsize=7, title="ranks", title_fontsize=7)
    missing = [r.label for r in rows if r not in drawn]
    note = f" (no runs: {', '.join(missing)})" if missing else ""
    fig.suptitle(f"{figure}: {TITLES[workload]} {what}, median with IQR{note}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_fig_a3(s: pd.DataFrame, labels: dict):
    """Fig A.3: UNET3D data latency (and the loader's preprocessing latency) with the loader's
    preprocessing done, skipped, or replaced by a sleep, all with compute: sleep; one panel
    row per rank count, one line per variant, median with IQR fill."""
    s = s[(s["workload"] == "unet3d") & s["variant"].isin(list(labels))]
    if not len(s):
        raise ValueError("Fig A.3: no UNET3D sleep runs with the loader variants")
    variants = s[s["variant"] != "sleep"]                   # rank counts with a loader variant
    Gs = sorted((variants if len(variants) else s)["ranks"].unique())
    fig, axes = plt.subplots(len(Gs), 2, figsize=(8, 3 * len(Gs)), squeeze=False, sharex=True, sharey="col")
    for i, g in enumerate(Gs):
        for j, (col, name) in enumerate((("data_s", "data latency"), ("prep_s", "preprocessing latency"))):
            ax = axes[i][j]
            for v, label in labels.items():
                d = s[(s["ranks"] == g) & (s["variant"] == v)].sort_values("batch_size")
                if not len(d):
                    continue
                st = style.category("loader", v)
                ax.plot(d["batch_size"], d[col], marker=st["marker"], color=st["color"], label=label)
                ax.fill_between(d["batch_size"], d[f"{col}_q1"], d[f"{col}_q3"], alpha=0.2, color=st["color"])
            style.log_axis(ax, "y")
            ax.set_xticks(sorted(s["batch_size"].unique()))    # every batch size run (1 was unlabelled)
            ax.set_title(f"G={g}: {name}", fontsize=9)
            ax.set_ylabel(f"{name}, s" if j == 0 else "s", fontsize=8)
            if i == len(Gs) - 1:
                ax.set_xlabel("batch size (samples)")
    style.legend_beside(axes[0][-1], axes=list(axes.ravel()), fontsize=7)
    fig.suptitle("Fig A.3: UNET3D with compute: sleep, effect of an extra sleep in the loader "
                 "standing in for preprocessing (median, IQR)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_utilization(au: pd.DataFrame, rows):
    """Accelerator utilization (Eq 3.1) of every run against batch size: one panel per
    workload, one line per (row, rank count); the MLPerf Storage pass mark at 90 %."""
    ws = [w for w in TITLES if (au["workload"] == w).any()]
    fig, axes = plt.subplots(1, len(ws), figsize=(4 * len(ws) + 1.4, 3.4), squeeze=False)
    styles = {r.key: ls for r, ls in zip(rows, ["-", ":", "--", "-."] * 3)}
    for ax, w in zip(axes[0], ws):
        d = au[au["workload"] == w]
        for (row, g), x in d.groupby(["row", "ranks"], sort=False):
            x = x.groupby("batch_size", as_index=False)["au"].median()
            # colour: the row (run kind), marker: G; the same look in every panel
            ax.plot(x["batch_size"], 100 * x["au"], styles.get(row, "-"), color=style.category("run", row)["color"],
                    marker=style.category("ranks", g)["marker"], label=f"{row}, G={g}")
        ax.axhline(100 * cm.MLPERF_AU_PASS, color="k", lw=0.8)
        ax.set_title(TITLES[w], fontsize=9)
        ax.set_xlabel("batch size (samples)")
        ax.set_ylabel("accelerator utilization, %")
        if d["batch_size"].nunique() > 1 and d["batch_size"].max() / max(1, d["batch_size"].min()) >= 16:
            ax.set_xscale("log", base=2)
    style.legend_beside(axes[0][-1], axes=list(axes[0]), fontsize=6)   # one legend: one look per line
    fig.suptitle("Accelerator utilization (Eq 3.1, 3.2): ideal compute time over the train phases' wall time;\n"
                 "runs that slept: the compute model's mean per step; runs with real compute: their own measured "
                 "compute; line: MLPerf Storage's 90 %", fontsize=9)
    fig.tight_layout()
    return fig
