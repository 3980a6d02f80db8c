"""Figures and claims for the tf.data read micro-benchmark (Chien et al. Fig 4, 5, Table I)."""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import reference, style
from .claims import claim

SOURCE = "Chien 2018"


def _fio(fio: pd.DataFrame, tier: str, job: str) -> float:
    r = fio[(fio["tier"] == tier) & (fio["job"] == job)]
    return float(r["bw_MBps"].iloc[0]) if len(r) else float("nan")


def plot_scaling(reads: pd.DataFrame, fio: pd.DataFrame, variant: str, title: str):
    """One panel per tier: median images/s per thread count (bars, min-max whiskers), MB/s on
    the right axis, and fio's random-read bandwidth with the same size mix as the ceiling."""
    d = reads[reads["variant"] == variant]
    tiers = list(dict.fromkeys(d["tier"]))
    colors = style.tier_colors(tiers)
    fig, axes = plt.subplots(1, len(tiers), figsize=(4.2 * len(tiers), 3.8), squeeze=False)
    for ax, tier in zip(axes[0], tiers):
        t = d[d["tier"] == tier].sort_values("threads")
        x = np.arange(len(t))
        err = [t["images_per_s"] - t["images_per_s_min"], t["images_per_s_max"] - t["images_per_s"]]
        ax.bar(x, t["images_per_s"], yerr=err, capsize=3, color=colors[tier], edgecolor="0.2")
        ax.set_xticks(x, [str(n) for n in t["threads"]])
        ax.set_xlabel("tf.data map threads (num_parallel_calls)")
        ax.set_ylabel("images/s (median)")
        ax.set_title(f"tier {tier}")
        per_image = float(t["mean_image_bytes"].iloc[0])
        sec = ax.secondary_yaxis("right", functions=(lambda v, b=per_image: v * b / 1e6,
                                                     lambda v, b=per_image: v * 1e6 / b))
        sec.set_ylabel("MB/s")
        ceiling = _fio(fio, tier, "randread") * 1e6 / per_image
        top = float(t["images_per_s_max"].max())
        if np.isfinite(ceiling) and ceiling <= 3 * top:
            ax.axhline(ceiling, ls="--", color="0.3", lw=1.2)
            ax.text(len(t) - 0.5, ceiling, "fio random read", ha="right", va="bottom", fontsize=8)
        elif np.isfinite(ceiling):
            ax.text(0.5, 0.97, f"fio random-read ceiling {ceiling * per_image / 1e6:,.0f} MB/s\n"
                    f"({ceiling / top:.0f}x the best bar, off scale)", transform=ax.transAxes,
                    ha="center", va="top", fontsize=8, color="0.3")
            ax.set_ylim(0, top * 1.35)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_device_baseline(fio: pd.DataFrame):
    """Table I as bars: fio median MB/s per tier and job."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    tiers = list(dict.fromkeys(fio["tier"]))
    jobs = list(dict.fromkeys(fio["job"]))
    w = 0.8 / len(jobs)
    for i, job in enumerate(jobs):
        v = [_fio(fio, t, job) for t in tiers]
        ax.bar(np.arange(len(tiers)) + i * w, v, w, label=job, edgecolor="0.2")
    ax.set_xticks(np.arange(len(tiers)) + w * (len(jobs) - 1) / 2, tiers)
    ax.set_xlabel("tier")
    ax.set_ylabel("bandwidth, MB/s (median)")
    ax.set_title("Device baseline (fio; cf. Table I)")
    ax.legend(title="fio job", fontsize=8)
    fig.tight_layout()
    return fig


def plot_size_histogram(hist: pd.DataFrame):
    """Share of generated files per power-of-two bucket beside the bssplit mix, percent."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    x = np.arange(len(hist))
    ax.bar(x - 0.2, hist["mix_percent"], 0.4, label="ImageNet mix (blog's bssplit)", edgecolor="0.2")
    ax.bar(x + 0.2, hist["files_percent"], 0.4, label="generated files", edgecolor="0.2")
    ax.set_xticks(x, [f"[{b}, {2 * int(b[:-1])}K)" for b in hist["bucket"]], rotation=35, fontsize=8,
                  ha="right", rotation_mode="anchor")
    ax.set_xlabel("file size bucket, KiB")
    ax.set_ylabel("files, %")
    ax.set_title("ImageNet-like JPEG sizes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fraction_of_fio(reads: pd.DataFrame, fio: pd.DataFrame) -> pd.DataFrame:
    """Per tier and variant: best median MB/s over thread counts, as a fraction of fio's
    random read with the same size mix on that tier (the benchmark target is >= 0.8 read-only)."""
    rows = []
    for (tier, variant), g in reads.groupby(["tier", "variant"], sort=False):
        b = g.loc[g["MBps"].idxmax()]
        ceiling = _fio(fio, tier, "randread")
        rows.append({"tier": tier, "variant": variant, "best_threads": int(b["threads"]),
                     "best_MBps": float(b["MBps"]), "fio_randread_MBps": ceiling,
                     "fio_seqread_MBps": _fio(fio, tier, "seqread"),
                     "fraction_of_fio": float(b["MBps"]) / ceiling})
    return pd.DataFrame(rows)


def generation_vs_fio(generation: dict, fio: pd.DataFrame) -> pd.DataFrame:
    """Data-generation throughput (MB/s) beside fio's sequential write on every tier;
    ``generation`` is the generator's facts (``env.json["generation"]`` of imagenet_like)."""
    return pd.DataFrame([{"tier": t, "generation_MBps": generation["MBps"],
                          "fio_seqwrite_MBps": _fio(fio, t, "seqwrite"),
                          "generation_workers": generation["workers"],
                          "ratio": generation["MBps"] / _fio(fio, t, "seqwrite")}
                         for t in dict.fromkeys(fio["tier"])])


def claims(reads: pd.DataFrame, env: dict) -> list[dict]:
    """The paper's Section VI claims, checked against our medians."""
    cpus = (env.get("cpu") or {}).get("count") or os.cpu_count()
    why = f"the full pipeline decodes JPEGs on the CPU and this host has {cpus} cores"
    out = []
    full = reads[reads["variant"] == "full"]
    for tier, g in full.groupby("tier", sort=False):
        sp = g.set_index("threads")["speedup_vs_min_threads"]
        for n, paper in reference.CHIEN_HDD_SPEEDUP.items():
            if n in sp.index and g["threads"].min() == 1:
                out.append(claim(
                    f"tfdata-speedup-{n}t-{tier}", SOURCE, "Fig 4",
                    f"{n} tf.data threads read faster than 1 (tier {tier}; paper: HDD)",
                    our_value=sp[n], unit="x over 1 thread", rule="> 1.3", paper_value=paper,
                    why_not=why))
    if 8 in set(full["threads"]) and 1 in set(full["threads"]):
        best = full[full["threads"] == 8]
        b = best.loc[best["speedup_vs_min_threads"].idxmax()]
        out.append(claim(
            "tfdata-speedup-8t-parallel-fs", SOURCE, "Fig 4",
            "8 threads give a large speed-up on a parallel file system (paper: 7.8x on Lustre)",
            our_value=b["speedup_vs_min_threads"], unit="x over 1 thread", rule="> 4",
            paper_value=reference.CHIEN_LUSTRE_SPEEDUP_8,
            note=f"best tier here: {b['tier']}",
            why_not=f"no parallel file system among the tiers, and {why}"))
    for tier, g in reads.groupby("tier", sort=False):
        v = g.groupby("variant")["images_per_s"].max()
        if {"full", "read_only"} <= set(v.index):
            out.append(claim(
                f"tfdata-read-only-faster-{tier}", SOURCE, "Fig 5",
                f"Reading alone is faster than reading, decoding and resizing (tier {tier})",
                our_value=v["read_only"] / v["full"], unit="x (best read-only / best full)",
                rule="> 1"))
    return out
