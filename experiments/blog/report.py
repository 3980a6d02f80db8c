"""Figures and claims for Nelson's blog: size histogram, tf.data threads, DataLoader workers,
the collectl table, warm vs cold page cache."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..verdicts import reasons
from ..settings import reference
from ..figures import style
from ..claims.declared import Measured, join, lookup
from ..host.tiers import storage_tier_of as storage_tier  # noqa: F401 (the tier the claims judge: the first with a device)
from .findings import (_cold, device_reads, measure_runs, run_tables, warm_cold)  # noqa: F401

STAGE = "blog_report"
# the configurations each figure draws ({figure: {stage: selection}}, selections as in a finding's
# `compares`): the memory tier's runs are read here, by no finding (experiments.review.unread)
DRAWS = {"tfdata_threads": {"blog": {"framework": "tensorflow"}},   # every tier, format and thread count, cold
         "torch_workers": {"blog": {"framework": "pytorch"}}}       # every tier and worker count, cold


def plot_histogram(hist: pd.DataFrame):
    """Share of our JPEGs per power-of-two bin beside the bssplit mix, percent."""
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    x = np.arange(len(hist))
    ax.bar(x - 0.2, hist["mix_percent"], 0.4, label="ImageNet mix (blog's bssplit)", edgecolor="0.2",
           color=style.category("source", "paper")["color"])
    ax.bar(x + 0.2, hist["files_percent"], 0.4, label="our JPEG set", edgecolor="0.2",
           color=style.category("source", "ours")["color"])
    ax.set_xticks(x, hist["bucket"])
    ax.set_xlabel("file size bin [B, 2B)")
    ax.set_ylabel("files, %")
    ax.set_title("Image-size histogram in power-of-two bins")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig


def _lines(ax, d: pd.DataFrame, key: str, label_of):
    """One line per ``label_of`` group: colour by tier, marker and line style by format
    (:func:`experiments.figures.style.category`), the same in both figures whatever the rows' order."""
    for lab, g in d.groupby(label_of, sort=False):
        g = g.sort_values(key)
        lab = lab if isinstance(lab, tuple) else (lab,)
        look = dict(zip(label_of, lab))
        fmt = style.category("format", look.get("format", g["format"].iloc[0]))
        ax.errorbar(g[key], g["images_per_s"], yerr=style.ci_yerr(g, "images_per_s"), capsize=2,
                    color=style.category("tier", look["tier"])["color"], marker=fmt["marker"], ls=fmt["ls"],
                    label=" ".join(map(str, lab)))


def plot_tf_threads(summary: pd.DataFrame):
    """tf.data images/s against private threads, TFRecords vs JPEG files, per tier (cold);
    ``summary`` with the medians' intervals (:func:`experiments.statistics.stats.with_median_ci`)."""
    d = summary[(summary["framework"] == "tensorflow") & (summary["cache"] == "cold")]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    _lines(ax, d, "threads", ["tier", "format"])
    ax.set_xlabel("tf.data private threads")
    ax.set_ylabel(f"images/s, cold cache\n({style.CI_LABEL})")
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
    ax.set_ylabel(f"images/s, cold cache\n({style.CI_LABEL})")
    ax.set_title("PyTorch DataLoader over JPEG files (torchvision decode)")
    style.legend_beside(ax, title="tier")
    fig.tight_layout()
    return fig


def plot_warm_cold(wc: pd.DataFrame):
    """Each warm run beside the cold run before it, on the tiers whose cache can be evicted; a
    memory-backed tier (tmpfs: no block device, its pages are the data) is left out, and the
    figure says so."""
    shown = wc[wc["evictable"]] if "evictable" in wc else wc
    left_out = sorted(set(wc["tier"]) - set(shown["tier"]))
    fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(shown) + 3.2), 3.8))
    labels = [f"{r.framework}\n{r.tier} {r.format}" for r in shown.itertuples()]
    x = np.arange(len(shown))
    ax.bar(x - 0.2, shown["cold_images_per_s"], 0.4, label="cold (evicted)", edgecolor="0.2",
           color=style.category("cache", "cold")["color"])
    ax.bar(x + 0.2, shown["warm_images_per_s"], 0.4, label="warm (page cache)", edgecolor="0.2",
           color=style.category("cache", "warm")["color"])
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_xlabel("framework, tier and format of the run")
    ax.set_ylabel("images/s")
    ax.set_title("Same run, cold vs warm page cache\n(blog's finding 5)")   # on one line: wider than a 1-run figure
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


def _needs(claim_id: str) -> str:
    """The declared ``needs`` of one of this stage's claims (what a measurement would need)."""
    return lookup(STAGE, claim_id)[1].needs or ""


def claims(hist: pd.DataFrame, summary: pd.DataFrame, collectl: pd.DataFrame,
           wc: pd.DataFrame, tier: str, reads: pd.DataFrame | None = None,
           env: dict | None = None, fio: pd.DataFrame | None = None,
           raw: pd.DataFrame | None = None, dstat_rows: pd.DataFrame | None = None,
           fio_raw: pd.DataFrame | None = None) -> list[dict]:
    """The blog's findings on ``tier`` (the first with a block device), each emitted whether or
    not its data was measured (declared in ``experiments/claims/papers/nelson-dl-io-blog.yaml``).
    ``env``: the blog stage's env.json (cores, memory, cold-run residency); ``fio``: the device
    baseline, from which failing claims get their reason.

    Intervals (95 %): the throughput ratios from ``raw`` (the blog stage's raw.parquet, one row
    per run: ratio of medians, bootstrap over runs); the collectl ratios from ``dstat_rows``
    (one row per sampled interval: ratio of medians over intervals, the runs resampled and the
    intervals within each drawn run, :func:`experiments.statistics.stats.runs_bootstrap`); warm over cold from ``wc`` (each warm run over
    the cold run just before it, paired); storage reads from ``reads`` (one row per warm run).
    The blog's headline numbers that need its hardware (8 V100 GPUs, a 96-vCPU instance, network
    persistent storage) are rows too, not measured, each with what this box shows instead;
    ``fio_raw`` (fio_baseline's raw.parquet, one row per fio run) gives the 16K random reads'
    IOPS this box shows beside the blog's 16K row."""
    from ..claims.report_levels import judged_at_their_levels

    runs = lambda: measure_runs(summary, collectl, wc, tier, reads, env, fio, raw, dstat_rows)   # noqa: E731
    return join(STAGE, [measure_histogram(hist), measure_histogram_rest(hist),
                        *(judged_at_their_levels("blog", raw, runs, {"storage_tier": tier}) if raw is not None
                          else runs()),
                        *measure_headlines(summary, tier, env or {}, fio),
                        measure_fio_small_reads(tier, fio, fio_raw)])


def measure_histogram(hist: pd.DataFrame) -> Measured:
    """The share of our JPEGs in the 64K and 128K bins, percent."""
    has_hist = len(hist) and {"bucket", "files_percent"} <= set(hist)
    big = hist["bucket"].isin(["64K", "128K"]) if has_hist else None
    share = hist.loc[big, "files_percent"].sum() if has_hist else np.nan
    return Measured("blog_size_64k_128k", share,
                    note=f"the blog's own bssplit puts {hist.loc[big, 'mix_percent'].sum():g}% there"
                    if has_hist and "mix_percent" in hist else "",
                    why_not="the sizes are drawn from the blog's bssplit mix" if has_hist
                    else "the blog stage wrote no size histogram")


def measure_histogram_rest(hist: pd.DataFrame) -> Measured:
    """Of our JPEGs outside the 64K and 128K bins, the share in the bins below 64K, percent."""
    need = {"bucket", "bucket_bytes", "files_percent"}
    if not len(hist) or not need <= set(hist):
        return Measured("blog_size_rest_smaller", why_not="the blog stage wrote no size histogram")
    rest = hist[~hist["bucket"].isin(["64K", "128K"])]
    total = float(rest["files_percent"].sum())
    if total <= 0:
        return Measured("blog_size_rest_smaller", why_not="every image of the set is in the 64K or 128K bin")
    small = float(rest.loc[rest["bucket_bytes"] < 64 * 1024, "files_percent"].sum())
    mix = (f"; the blog's own bssplit puts {hist.loc[~hist['bucket'].isin(['64K', '128K']) & (hist['bucket_bytes'] < 65536), 'mix_percent'].sum():g}"
           f" of its {100 - hist.loc[hist['bucket'].isin(['64K', '128K']), 'mix_percent'].sum():g} % outside them below 64K"
           if "mix_percent" in hist else "")
    return Measured("blog_size_rest_smaller", small / total * 100,
                    note=f"{total:.3g} % of the files lie outside the 64K and 128K bins{mix}",
                    why_not="the sizes are drawn from the blog's bssplit mix, whose 256K bin holds the larger rest")


def measure_fio_small_reads(tier: str, fio: pd.DataFrame | None, fio_raw: pd.DataFrame | None) -> Measured:
    """The blog's "16K IOPS was somewhat slower in both cases", which its next sentence sets
    against its own Ceph QEMU/KVM post's 16K tests: not measurable here (the declared needs).
    Its reason gives what this tier shows a reader who has that post: fio_baseline's 16 KiB
    random read (``randread16k``, the blog's job; IOPS, median and range over its runs in
    ``fio_raw``, else the median in ``fio``) beside its 1 MiB sequential read (MB/s)."""
    seq, mb = reasons.fio_MBps(fio, tier, "seqread"), reasons.fio_MBps(fio, tier, "randread16k")
    d = (fio_raw[(fio_raw["tier"] == tier) & ~fio_raw["warmup"].astype(bool) & (fio_raw["job"] == "randread16k")]
         if fio_raw is not None and len(fio_raw) and "iops" in fio_raw else pd.DataFrame())
    f = (fio[(fio["tier"] == tier) & (fio["job"] == "randread16k")]
         if fio is not None and len(fio) and "iops" in fio else pd.DataFrame())
    if len(d):
        iops = (f"{d['iops'].median():,.0f} IOPS" + (f" (median of {len(d)} runs, {d['iops'].min():,.0f}-"
                                                     f"{d['iops'].max():,.0f})" if len(d) > 1 else " (1 run)"))
    else:
        iops = f"{float(f['iops'].iloc[0]):,.0f} IOPS" if len(f) else ""
    here = (f"here fio's 16K random read on {tier} gives {iops}, {mb:,.0f} MB/s, against "
            f"{seq:,.0f} MB/s for its 1 MiB sequential read (fio_baseline)" if iops else
            f"fio_baseline has no 16K random read (job randread16k) on tier {tier}")
    return Measured("blog_fio_small_reads_slower", why_not=f"{_needs('blog_fio_small_reads_slower')}; {here}")


def measure_headlines(summary: pd.DataFrame, tier: str, env: dict, fio: pd.DataFrame | None) -> list[Measured]:
    """The blog's headline numbers: each needs hardware this box lacks (8 V100 GPUs, a
    many-core instance, network persistent storage), so each is not measured; its reason is the
    declared need and what this box shows instead (images/s, cores, fio's MB/s and reads/s)."""
    n = reasons.cores(env)
    c = _cold(summary, tier)
    best = float(c["images_per_s"].max()) if len(c) else np.nan
    rnd = reasons.fio_MBps(fio, tier, "randread")
    f = fio[(fio["tier"] == tier) & (fio["job"] == "randread")] if fio is not None and len(fio) else None
    iops = float(f["iops"].iloc[0]) if f is not None and "iops" in f and len(f) else np.nan
    here = f"here: the best cold run on {tier} gives {best:,.0f} images/s on {n} cores"
    run = {
        "blog_gbps_for_8_v100": "",
        "blog_local_tops_8600_images_per_s": here,
        "blog_persistent_tops_7000_8000_images_per_s": here,
        "blog_cpu_linear_in_threads_to_30_cores": f"this box has {n} cores: CPU use cannot grow past {n}",
        "blog_jpeg_decode_51pct_of_cpu": "",
        "blog_fio_persistent_10k_reads_per_s":
            f"fio's bssplit random read on {tier}: {iops:,.0f} reads/s, {rnd:,.0f} MB/s (fio_baseline)",
        "blog_fio_persistent_over_1gbps_large_reads":
            f"fio's 1 MiB sequential read on the local {tier}: "
            f"{reasons.fio_MBps(fio, tier, 'seqread') / 1e3:,.2f} GB/s (fio_baseline)",
        "blog_fio_local_3_4x_persistent": "",
    }
    return [Measured(i, why_not="; ".join(x for x in (_needs(i), shown) if x)) for i, shown in run.items()]
