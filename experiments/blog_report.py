"""Figures and claims for Nelson's blog: size histogram, tf.data threads, DataLoader workers,
the collectl table, warm vs cold page cache."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import reference, style
from .claims import claim

SOURCE = "Nelson (blog)"


def plot_histogram(hist: pd.DataFrame):
    """Share of our JPEGs per power-of-two bin beside the bssplit mix, percent."""
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    x = np.arange(len(hist))
    ax.bar(x - 0.2, hist["mix_percent"], 0.4, label="ImageNet mix (blog's bssplit)", edgecolor="0.2")
    ax.bar(x + 0.2, hist["files_percent"], 0.4, label="our JPEG set", edgecolor="0.2")
    ax.set_xticks(x, hist["bucket"])
    ax.set_xlabel("file size bin [B, 2B)")
    ax.set_ylabel("files, %")
    ax.set_title("Image-size histogram in power-of-two bins")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _lines(ax, d: pd.DataFrame, key: str, label_of):
    for lab, g in d.groupby(label_of, sort=False):
        g = g.sort_values(key)
        ax.errorbar(g[key], g["images_per_s"], yerr=[g["images_per_s"] - g["images_per_s_min"],
                    g["images_per_s_max"] - g["images_per_s"]], marker="o", capsize=2,
                    label=" ".join(map(str, lab)) if isinstance(lab, tuple) else str(lab))


def plot_tf_threads(summary: pd.DataFrame):
    """tf.data images/s against private threads, TFRecords vs JPEG files, per tier (cold)."""
    d = summary[(summary["framework"] == "tensorflow") & (summary["cache"] == "cold")]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    _lines(ax, d, "threads", ["tier", "format"])
    ax.set_xlabel("tf.data private threads")
    ax.set_ylabel("images/s (median, cold cache)")
    ax.set_title("tf.data: TFRecords vs JPEG files (decode + resize)")
    style.legend_beside(ax, title="tier, format")
    fig.tight_layout()
    return fig


def plot_torch_workers(summary: pd.DataFrame):
    """PyTorch DataLoader images/s against num_workers, per tier (cold)."""
    d = summary[(summary["framework"] == "pytorch") & (summary["cache"] == "cold")]
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    _lines(ax, d, "workers", ["tier"])
    ax.set_xlabel("DataLoader num_workers")
    ax.set_ylabel("images/s (median, cold cache)")
    ax.set_title("PyTorch DataLoader over JPEG files (torchvision decode)")
    style.legend_beside(ax, title="tier")
    fig.tight_layout()
    return fig


def warm_cold(raw: pd.DataFrame) -> pd.DataFrame:
    """Each warm run beside the cold run just before it (same framework, tier, format and
    parallelism: the same run, cache evicted or not), images/s."""
    raw = raw.assign(par=raw["threads"].fillna(raw["workers"]))
    by_run = raw.set_index("run")
    rows = []
    for w in raw[raw["cache"] == "warm"].itertuples():
        c = by_run.loc[w.run - 1] if (w.run - 1) in by_run.index else None
        same = c is not None and c["cache"] == "cold" and c["par"] == w.par and \
            c["format"] == w.format and c["tier"] == w.tier
        cold = float(c["images_per_s"]) if same else np.nan
        rows.append({"framework": w.framework, "tier": w.tier, "format": w.format,
                     "parallelism": w.par, "cold_images_per_s": cold,
                     "warm_images_per_s": w.images_per_s, "warm_over_cold": w.images_per_s / cold,
                     # a tier without a block device (tmpfs) cannot be evicted: cold is warm there
                     "evictable": isinstance(w.device, str) and bool(w.device)})
    return pd.DataFrame(rows)


def device_reads(dstat_rows: pd.DataFrame, wc_raw: pd.DataFrame) -> pd.DataFrame:
    """MB the run's own process tree made storage fetch (``/proc/<pid>/io`` read_bytes: not
    disturbed by other processes on the device) during each warm run and the cold run just
    before it (sum over sampled intervals of read MB/s x interval)."""
    if dstat_rows.empty:
        return pd.DataFrame()
    d = dstat_rows[dstat_rows["source"] == "proc"]
    mb = (d["read_MBps"] * d["interval_s"]).groupby(d["run"]).sum()
    rows = []
    for w in wc_raw[wc_raw["cache"] == "warm"].itertuples():
        if w.run in mb.index and (w.run - 1) in mb.index:
            rows.append({"framework": w.framework, "tier": w.tier, "format": w.format,
                         "cold_storage_MB": mb[w.run - 1], "warm_storage_MB": mb[w.run],
                         "data_MB": w.bytes / 1e6})
    return pd.DataFrame(rows)


def plot_warm_cold(wc: pd.DataFrame):
    """Each warm run beside the cold run before it, on the tiers whose cache can be evicted; a
    memory-backed tier (tmpfs: no block device, its pages are the data) is left out, and the
    figure says so."""
    shown = wc[wc["evictable"]] if "evictable" in wc else wc
    left_out = sorted(set(wc["tier"]) - set(shown["tier"]))
    fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(shown) + 3.2), 3.8))
    labels = [f"{r.framework}\n{r.tier} {r.format}" for r in shown.itertuples()]
    x = np.arange(len(shown))
    ax.bar(x - 0.2, shown["cold_images_per_s"], 0.4, label="cold (evicted)", edgecolor="0.2")
    ax.bar(x + 0.2, shown["warm_images_per_s"], 0.4, label="warm (page cache)", edgecolor="0.2")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_xlabel("framework, tier and format of the run")
    ax.set_ylabel("images/s")
    ax.set_title("Same run, cold vs warm page cache (blog's finding 5)")
    style.legend_beside(ax)
    if left_out:
        ax.annotate(f"not shown: tier {', '.join(left_out)}\n(memory-backed: cannot be evicted)",
                    xy=(1.02, 0.0), xycoords="axes fraction", fontsize=7, color="0.35", va="bottom")
    fig.tight_layout()
    return fig


def collectl_with_paper(table: pd.DataFrame) -> pd.DataFrame:
    """Our collectl-style medians beside the blog's (TF read TFRecords, PyTorch read JPEGs)."""
    rows = []
    for fw, ref in reference.NELSON_COLLECTL.items():
        rows.append({"who": "blog (NVMe, 8 V100)", "framework": fw,
                     "format": "tfrecord" if fw == "tensorflow" else "jpeg", **ref})
    for r in table.itertuples():
        rows.append({"who": f"ours ({r.tier}, {r.source})", "framework": r.framework,
                     "format": r.format, "read_KBps": r.read_KBps, "reads_per_s": r.reads_per_s,
                     "KB_per_read": r.KB_per_read, "queue_len": r.queue_len})
    return pd.DataFrame(rows)


def claims(hist: pd.DataFrame, summary: pd.DataFrame, collectl: pd.DataFrame,
           wc: pd.DataFrame, tier: str, reads: pd.DataFrame | None = None) -> list[dict]:
    out = []
    share = hist.loc[hist["bucket"].isin(["64K", "128K"]), "files_percent"].sum()
    out.append(claim("blog_size_64k_128k", SOURCE, "size histogram",
                     "roughly 80% of the images are in the 64 KB or 128 KB bins", share, "%",
                     f"within 15% of {reference.NELSON_64K_128K_SHARE_PERCENT}",
                     paper_value=reference.NELSON_64K_128K_SHARE_PERCENT,
                     note=f"the blog's own bssplit puts "
                          f"{hist.loc[hist['bucket'].isin(['64K', '128K']), 'mix_percent'].sum():g}% there"
                     if "mix_percent" in hist else ""))
    cold = summary[(summary["cache"] == "cold") & (summary["tier"] == tier)]
    tf = cold[cold["framework"] == "tensorflow"]
    tr = tf[tf["format"] == "tfrecord"].set_index("threads")["images_per_s"]
    if len(tr) > 1:
        out.append(claim("blog_private_threads_help", SOURCE, "tf.data private threads",
                         f"more private threads raise tf.data throughput over TFRecords (tier {tier}; "
                         f"{int(tr.index.max())} over {int(tr.index.min())} threads)",
                         tr.iloc[-1] / tr.iloc[0] if tr.index.is_monotonic_increasing
                         else tr[tr.index.max()] / tr[tr.index.min()], "x", "> 1.2",
                         why_not="decoding is bound by this box's two cores"))
    jp = tf[tf["format"] == "jpeg"].set_index("threads")["images_per_s"]
    if len(tr) and len(jp):
        t = tr.index.max()
        out.append(claim("blog_tfrecord_not_slower", SOURCE, "TFRecords vs JPEG",
                         f"TFRecords are at least as fast as individual JPEG files (tier {tier}, "
                         f"{int(t)} threads)", tr[t] / jp[t], "x", ">= 0.95",
                         why_not="on a local disk with a small set, per-file metadata costs little"))
    pt = cold[cold["framework"] == "pytorch"].set_index("workers")["images_per_s"]
    if len(pt) > 1:
        out.append(claim("blog_workers_help", SOURCE, "PyTorch workers",
                         f"more DataLoader workers raise throughput (tier {tier}; "
                         f"{int(pt.index.max())} over {int(pt.index.min())} workers)",
                         pt[pt.index.max()] / pt[pt.index.min()], "x", "> 1.2",
                         why_not="decoding is bound by this box's two cores"))
    c = collectl[collectl["tier"] == tier] if len(collectl) else collectl
    if len(c):
        q = c.set_index(["framework", "format"])
        if ("tensorflow", "tfrecord") in q.index and ("pytorch", "jpeg") in q.index:
            a, b = q.loc[("tensorflow", "tfrecord")], q.loc[("pytorch", "jpeg")]
            ref = reference.NELSON_COLLECTL
            out.append(claim("blog_collectl_tf_larger_requests", SOURCE, "collectl table",
                             "TensorFlow's TFRecord reads reach the device in larger requests than "
                             "PyTorch's JPEG reads (KB per read, TF over PyTorch)",
                             a["KB_per_read"] / b["KB_per_read"], "x", ">= 1",
                             paper_value=ref["tensorflow"]["KB_per_read"] / ref["pytorch"]["KB_per_read"]))
            out.append(claim("blog_collectl_tf_shorter_queue", SOURCE, "collectl table",
                             "TensorFlow's TFRecord reads keep a shorter device queue than "
                             "PyTorch's JPEG reads (queue length, PyTorch over TF)",
                             b["queue_len"] / max(a["queue_len"], 1e-9), "x", "> 1",
                             paper_value=ref["pytorch"]["queue_len"] / ref["tensorflow"]["queue_len"],
                             why_not="with 2 cores the readers are CPU-bound and rarely queue"))
    w = wc[wc["tier"] == tier]
    if len(w):
        out.append(claim("blog_warm_faster", SOURCE, "finding 5",
                         f"a warm page cache makes the same run faster (tier {tier}; lowest warm "
                         "over cold ratio across frameworks and formats)", w["warm_over_cold"].min(),
                         "x", "> 1", why_not="decoding, not reading, bounds these runs here"))
    r = reads[reads["tier"] == tier] if reads is not None and len(reads) else pd.DataFrame()
    if len(r):
        out.append(claim("blog_warm_reads_nothing", SOURCE, "finding 5",
                         f"once the data set is cached the run stops reading storage (tier "
                         f"{tier}; largest warm-run storage MB over the cold run's, own processes)",
                         (r["warm_storage_MB"] / r["cold_storage_MB"].clip(lower=1e-9)).max(),
                         "ratio", "< 0.1",
                         note="why cold runs must drop the cache first, as the blog did",
                         why_not="another process on this shared box may have dropped the page "
                                 "cache between the cold and the warm run"))
    return out


def storage_tier(raw: pd.DataFrame) -> str:
    """The first tier with a block device (its cold runs read the device), else the first."""
    tiers = list(dict.fromkeys(raw["tier"]))
    disk = [t for t in tiers if (raw.loc[raw["tier"] == t, "device"] != "").any()]
    return (disk or tiers)[0]
