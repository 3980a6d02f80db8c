"""Figures and claims for Nelson's blog: size histogram, tf.data threads, DataLoader workers,
the collectl table, warm vs cold page cache."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import claims as C
from .. import reference, stats, style
from ..claims.declared import Measured, join, lookup

STAGE = "blog_report"


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
    (:func:`experiments.style.category`), the same in both figures whatever the rows' order."""
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
    ``summary`` with the medians' intervals (:func:`experiments.stats.with_median_ci`)."""
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
                     "evictable": (isinstance(w.device, str) and bool(w.device))
                     if hasattr(w, "device") else None,
                     "warm_resident_fraction": getattr(w, "resident_fraction", np.nan)})
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




_SAMPLED = ("interval over the sampled intervals of the cold runs: consecutive, not independent, "
            "so optimistic")


def _lowest_median(*groups) -> float:
    return min(float(np.median(g)) for g in groups)


def _highest_median(*groups) -> float:
    return max(float(np.median(g)) for g in groups)


def _interval_samples(dstat_rows: pd.DataFrame | None, tier: str, framework: str, fmt: str,
                      col: str) -> np.ndarray | None:
    """Per sampled interval of the cold runs on a block device of ``tier``, ``col`` (KB_per_read
    or queue_len): the samples behind :func:`experiments.blog.tfrecord.collectl_table`'s medians."""
    if dstat_rows is None or not len(dstat_rows):
        return None
    d = dstat_rows[dstat_rows["source"].astype(str).str.startswith("dev:") & (dstat_rows["cache"] == "cold")
                   & (dstat_rows["tier"] == tier) & (dstat_rows["framework"] == framework)
                   & (dstat_rows["format"] == fmt)]
    d = d[d["read_iops"] > 0]
    if col == "KB_per_read":
        return (d["read_MBps"] * 1e3 / d["read_iops"]).to_numpy(dtype=float)
    return d[col].to_numpy(dtype=float)


def _needs(claim_id: str) -> str:
    """The declared ``needs`` of one of this stage's claims (what a measurement would need)."""
    return lookup(STAGE, claim_id)[1].needs or ""


def _cold(summary: pd.DataFrame, tier: str) -> pd.DataFrame:
    return summary[(summary["cache"] == "cold") & (summary["tier"] == tier)]


def _cpu_words(summary: pd.DataFrame, tier: str, n: int, fio: pd.DataFrame | None) -> str:
    """Why the runs' findings can fail on this box: decoding, not the device, bounds them."""
    c = _cold(summary, tier)
    best_MBps = float(c["MBps"].max()) if len(c) and "MBps" in c else np.nan
    rnd = C.fio_MBps(fio, tier, "randread")
    return (f"decoding bounds these runs on {n} cores: the best cold run reads {best_MBps:,.0f} "
            f"MB/s, fio's random read on {tier} gives {rnd:,.0f} MB/s")


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
    per run and repeat: ratio of medians, bootstrap); the collectl ratios from ``dstat_rows``
    (one row per sampled interval: ratio of medians over intervals, which are consecutive and so
    not independent: the interval is optimistic); warm over cold from ``wc`` (each warm run over
    the cold run just before it, paired); storage reads from ``reads`` (one row per warm run).
    The blog's headline numbers that need its hardware (8 V100 GPUs, a 96-vCPU instance, network
    persistent storage) are rows too, not measured, each with what this box shows instead;
    ``fio_raw`` (fio_baseline's raw.parquet, one row per fio run) gives the 16K random reads'
    IOPS this box shows beside the blog's 16K row."""
    return join(STAGE, [measure_histogram(hist),
                        *measure_runs(summary, collectl, wc, tier, reads, env, fio, raw, dstat_rows),
                        *measure_headlines(summary, tier, env or {}, fio),
                        measure_fio_small_reads(tier, fio, fio_raw)])


def measure_runs(summary: pd.DataFrame, collectl: pd.DataFrame, wc: pd.DataFrame, tier: str,
                 reads: pd.DataFrame | None = None, env: dict | None = None,
                 fio: pd.DataFrame | None = None, raw: pd.DataFrame | None = None,
                 dstat_rows: pd.DataFrame | None = None) -> list[Measured]:
    """What the blog stage's runs measure on ``tier`` (threads, format, workers, the collectl
    ratios, warm vs cold), each with its interval: the rows :func:`claims` adds to the others and
    those :func:`decided` judges the runs so far with."""
    env = env or {}
    cpu = _cpu_words(summary, tier, C.cores(env), fio)
    return [*measure_throughput(summary, tier, env, raw, cpu),
            *measure_collectl(collectl, tier, env, dstat_rows, cpu),
            *measure_page_cache(wc, reads, tier, env, cpu)]


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


def measure_throughput(summary: pd.DataFrame, tier: str, env: dict, raw: pd.DataFrame | None,
                       cpu: str) -> list[Measured]:
    """Images/s of the cold runs on ``tier``: most over fewest tf.data private threads
    (TFRecords), TFRecord over JPEG at the most threads, most over fewest DataLoader workers;
    each a ratio of medians (x) with its bootstrap interval over the repeats of ``raw``."""
    cold = C.cold_run(env, tier)
    c = _cold(summary, tier)
    tf = c[c["framework"] == "tensorflow"]
    tr = tf[tf["format"] == "tfrecord"].set_index("threads")["images_per_s"].sort_index()
    jp = tf[tf["format"] == "jpeg"].set_index("threads")["images_per_s"].sort_index()
    pt = c[c["framework"] == "pytorch"].set_index("workers")["images_per_s"].sort_index()

    def ratio(fallback, num: dict, den: dict):
        """images/s of the cold runs ``num`` over ``den`` on ``tier``, with its interval."""
        if raw is None or not np.isfinite(fallback):
            return fallback, None
        return stats.ratio_of_medians(stats.samples(raw, "images_per_s", tier=tier, cache="cold", **num),
                                      stats.samples(raw, "images_per_s", tier=tier, cache="cold", **den))

    out = []
    tf_kw = dict(framework="tensorflow", format="tfrecord")
    v, ci = ratio(tr.iloc[-1] / tr.iloc[0] if len(tr) > 1 else np.nan,
                  {**tf_kw, "threads": tr.index.max() if len(tr) else 0},
                  {**tf_kw, "threads": tr.index.min() if len(tr) else 0})
    out.append(Measured(
        "blog_private_threads_help", v, ci,
        context=f"tier {tier}" + (f"; {int(tr.index.max())} over {int(tr.index.min())} threads"
                                  if len(tr) > 1 else ""),
        why_not=cpu if len(tr) > 1 else "blog.threads has fewer than two counts, or no "
        f"TFRecord run on tier {tier}", **cold))
    t = tr.index.max() if len(tr) else None
    v, ci = ratio(tr[t] / jp[t] if t is not None and t in jp.index else np.nan,
                  {**tf_kw, "threads": t}, {"framework": "tensorflow", "format": "jpeg", "threads": t})
    out.append(Measured(
        "blog_tfrecord_not_slower", v, ci,
        context=f"tier {tier}" + (f", {int(t)} threads" if t is not None else ""),
        note="the blog's Conclusion, item 1: 'Pre-processing data into a format like "
             "TFRecords on fast local storage is a big win from an IO perspective'; "
             "it does not time JPEG files in tf.data",
        why_not=(f"{cpu}; the {int(c['images_per_s'].count())} cold runs open "
                 "files from a local disk, where per-file metadata costs little")
        if t is not None and t in jp.index else f"no TFRecord and JPEG runs on tier {tier}", **cold))
    pt_kw = dict(framework="pytorch", format="jpeg")
    v, ci = ratio(pt.iloc[-1] / pt.iloc[0] if len(pt) > 1 else np.nan,
                  {**pt_kw, "workers": pt.index.max() if len(pt) else 0},
                  {**pt_kw, "workers": pt.index.min() if len(pt) else 0})
    out.append(Measured(
        "blog_workers_help", v, ci,
        context=f"tier {tier}" + (f"; {int(pt.index.max())} over {int(pt.index.min())} workers"
                                  if len(pt) > 1 else ""),
        note="our extension: the blog ran PyTorch but never varied its DataLoader workers",
        why_not=cpu if len(pt) > 1 else "blog.workers has fewer than two counts", **cold))
    return out


def measure_collectl(collectl: pd.DataFrame, tier: str, env: dict, dstat_rows: pd.DataFrame | None,
                     cpu: str) -> list[Measured]:
    """The collectl tables' comparisons on ``tier``'s device during the cold runs, TensorFlow
    (TFRecords) against PyTorch (JPEG files): KB per read (TF over PyTorch), queue length
    (PyTorch over TF), read KB/s (TF over PyTorch); each a ratio of medians (x) with its
    interval over the sampled intervals (consecutive, so optimistic)."""
    cold = C.cold_run(env, tier)
    q = (collectl[collectl["tier"] == tier].set_index(["framework", "format"])
         if len(collectl) and "tier" in collectl else pd.DataFrame())
    both = len(q) and ("tensorflow", "tfrecord") in q.index and ("pytorch", "jpeg") in q.index
    a = q.loc[("tensorflow", "tfrecord")] if both else None
    b = q.loc[("pytorch", "jpeg")] if both else None
    ref = reference.NELSON_COLLECTL
    nodev = (f"no device reads were sampled on tier {tier} during the cold runs (a memory tier, "
             "or every read was served from the page cache)")

    def per_interval(col, num, den, fallback):
        sa = _interval_samples(dstat_rows, tier, *num, col)
        sb = _interval_samples(dstat_rows, tier, *den, col)
        if sa is None or sb is None or not np.isfinite(fallback):
            return fallback, None
        if col == "queue_len":   # a queue of 0 in every interval would divide by 0
            sb = np.maximum(sb, 1e-9)
        return stats.ratio_of_medians(sa, sb)

    TF, PT = ("tensorflow", "tfrecord"), ("pytorch", "jpeg")
    out = []
    # The blog: "When just looking at the IO sizes, both runs appear similar" (128 and 113 KB per
    # device read): the row of that comparison. Its inference that TF asks for much larger reads
    # is about the read calls, which the device's request size does not show
    # (blog_tf_requests_much_larger_reads, not measured).
    v, ci = per_interval("KB_per_read", TF, PT, a["KB_per_read"] / b["KB_per_read"] if both else np.nan)
    out.append(Measured(
        "blog_collectl_read_sizes_similar", v, ci, context=f"tier {tier}",
        note=f"the blog's tables: {ref['tensorflow']['KB_per_read']} and {ref['pytorch']['KB_per_read']} "
             "KB per read (its device's max_sectors_kb caps both at 128 KB)"
             + (f"; here TF {a['KB_per_read']:.0f} KB, PyTorch {b['KB_per_read']:.0f} KB per read" if both else "")
             + f"; {_SAMPLED}",
        why_not=(f"KB per read here: TF {a['KB_per_read']:.0f}, PyTorch {b['KB_per_read']:.0f}: the "
                 "device splits reads at its own max_sectors_kb, and TF's TFRecord reads reach past "
                 "the JPEG files' sizes where the cap is higher than the blog's 128 KB"
                 if both else nodev), **cold))
    v, ci = per_interval("queue_len", PT, TF, b["queue_len"] / max(a["queue_len"], 1e-9) if both else np.nan)
    out.append(Measured(
        "blog_collectl_tf_shorter_queue", v, ci, context=f"tier {tier}", note=_SAMPLED,
        why_not=(f"queue length here: TF {a['queue_len']:.2f}, PyTorch {b['queue_len']:.2f} "
                 f"(the blog: {ref['tensorflow']['queue_len']}, {ref['pytorch']['queue_len']} "
                 f"with 8 GPUs to feed); {cpu}") if both else nodev, **cold))
    v, ci = per_interval("read_MBps", TF, PT, a["read_KBps"] / b["read_KBps"] if both else np.nan)
    out.append(Measured(
        "blog_collectl_tf_reads_device_faster", v, ci, context=f"tier {tier}",
        note="the blog's tables: TF 913,512-1,081,324 KB/s, PyTorch 695,636-761,136 KB/s (medians "
             f"{ref['tensorflow']['read_KBps']:,} and {ref['pytorch']['read_KBps']:,}), each "
             f"feeding 8 V100s; {_SAMPLED}",
        why_not=(f"read KB/s here: TF {a['read_KBps']:,.0f}, PyTorch {b['read_KBps']:,.0f}; {cpu}"
                 if both else nodev), **cold))
    return out


def measure_page_cache(wc: pd.DataFrame, reads: pd.DataFrame | None, tier: str, env: dict,
                       cpu: str) -> list[Measured]:
    """Conclusion item 5 on ``tier``: the lowest warm over cold images/s ratio across frameworks
    and formats (x, median over paired repeats) and the largest warm-run storage MB over the cold
    run's (ratio, own processes' reads), each with its bootstrap interval."""
    cold = C.cold_run(env, tier)
    gib = C.memory_gib(env)
    w = wc[wc["tier"] == tier] if len(wc) else wc
    warm_res = float(w["warm_resident_fraction"].min()) \
        if len(w) and "warm_resident_fraction" in w and w["warm_resident_fraction"].notna().any() else np.nan
    evicted = (f"only {warm_res:.0%} of the data set was still in the page cache when a warm run "
               "started (other processes on this box evict or drop it)"
               if np.isfinite(warm_res) and warm_res < 0.9 else "")
    keys = [k for k in ("framework", "format", "parallelism") if k in w]
    groups = [g["warm_over_cold"].to_numpy(dtype=float) for _, g in w.groupby(keys, dropna=False)] \
        if len(w) and keys else ([w["warm_over_cold"].to_numpy(dtype=float)] if len(w) else [])
    v, ci = (stats.bootstrap(_lowest_median, *groups,
                             method="lowest median of paired warm/cold ratios, bootstrap over repeats")
             if groups else (np.nan, None))
    faster = Measured(
        "blog_warm_faster", v, ci, context=f"tier {tier}",
        note=f"residency when the warm runs started: at least {warm_res:.0%}" if np.isfinite(warm_res) else "",
        why_not="; ".join(x for x in (evicted, cpu) if x) if len(w) else f"no warm run on tier {tier}",
        **cold)
    r = reads[reads["tier"] == tier] if reads is not None and len(reads) else pd.DataFrame()
    r = r.assign(share=r["warm_storage_MB"] / r["cold_storage_MB"].clip(lower=1e-9)) if len(r) else r
    k = r["share"].idxmax() if len(r) else None
    rgroups = [g["share"].to_numpy(dtype=float) for _, g in r.groupby(["framework", "format"])] if len(r) else []
    v, ci = (stats.bootstrap(_highest_median, *rgroups,
                             method="highest median of warm/cold storage reads, bootstrap over repeats")
             if rgroups else (np.nan, None))
    # What was measured, per configuration (median over its warm runs): the note says it
    # whatever the verdict; the reason for reads (why_not) only when there were reads to explain.
    per_cfg = (r.groupby(["framework", "format"]).agg(
        warm=("warm_storage_MB", "median"), cold=("cold_storage_MB", "median"),
        data=("data_MB", "median"), runs=("share", "size")) if len(r) else pd.DataFrame())
    measured = "; ".join(f"{fw} {fm}: warm runs read {x.warm:.1f} MB from storage, the cold runs "
                         f"before them {x.cold:.1f} MB, of {x.data:.1f} MB of data (median of "
                         f"{int(x.runs)} warm runs)" for (fw, fm), x in per_cfg.iterrows())
    read_some = k is not None and r.loc[k, "share"] >= 0.1
    nothing = Measured(
        "blog_warm_reads_nothing", v, ci, context=f"tier {tier}",
        note="; ".join(x for x in (measured, "this is why each cold run drops the "
                                   "cache first, as the blog did") if x),
        why_not=(f"the warm {r.loc[k, 'framework']} {r.loc[k, 'format']} run made "
                 f"storage read {r.loc[k, 'warm_storage_MB']:.1f} of "
                 f"{r.loc[k, 'data_MB']:.1f} MB: "
                 + (evicted if evicted else
                    f"{warm_res:.0%} of the data set was cached when it started, so the "
                    "reads came during the run (pages dropped meanwhile: drop_caches "
                    "by any process is system-wide; or files other than the data set)"
                    if np.isfinite(warm_res) else
                    f"its pages left the cache ({gib:.0f} GiB of memory, shared with "
                    "other processes)"))
        if read_some else "" if k is not None
        else f"no per-process read counters for warm runs on tier {tier}")
    return [faster, nothing]


def run_tables(raw: pd.DataFrame, dstat_rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """What the blog stage and this report derive from its runs (``raw``: one row per run;
    ``dstat_rows``: one per sampled interval), as they derive it: ``summary`` (medians per
    configuration, :func:`experiments.blog.tfrecord.summarize_runs`), ``collectl``,
    ``wc`` (:func:`warm_cold`) and ``reads`` (:func:`device_reads`)."""
    from .tfrecord import collectl_table, summarize_runs

    return {"summary": summarize_runs(raw), "collectl": collectl_table(dstat_rows, raw),
            "wc": warm_cold(raw) if len(raw) else pd.DataFrame(),
            "reads": device_reads(dstat_rows, raw) if len(raw) else pd.DataFrame()}


def decided(raw: pd.DataFrame, dstat_rows: pd.DataFrame, level: float) -> dict:
    """{finding: :class:`experiments.sequential.Judged`} on the blog's runs so far, for
    :func:`experiments.sequential.run`: the findings of :func:`measure_runs` on the storage
    tier (:func:`storage_tier`), computed from ``raw`` and ``dstat_rows`` as this report
    computes them (:func:`run_tables`), with intervals at ``level``; a finding with a value is
    decided when its verdict is not ``inconclusive``, with its forecast (the futility stop);
    one without a value is left out (more repeats cannot give it one)."""
    from .. import sequential

    t = run_tables(raw, dstat_rows)
    with stats.corrected_level(level):
        ms = measure_runs(t["summary"], t["collectl"], t["wc"], storage_tier(raw), t["reads"],
                          raw=raw, dstat_rows=dstat_rows)
        ids = {m.id for m in ms}
        found = [c for c in join(STAGE, ms) if c["id"] in ids]
    return sequential.judged([c for c in found if c["our_value"] is not None and np.isfinite(c["our_value"])],
                             level)


def needs(finding: str, raw: pd.DataFrame, configs: list[tuple]) -> list[int]:
    """The run configurations (indices into ``configs``, tuples of
    :data:`experiments.blog.tfrecord.KEYS`) a blog finding compares, for ``make decide``: those
    on the storage tier (:func:`storage_tier`), where :func:`decided` judges the runs."""
    tier = storage_tier(raw)
    return [i for i, c in enumerate(configs) if c[1] == tier]


def measure_fio_small_reads(tier: str, fio: pd.DataFrame | None, fio_raw: pd.DataFrame | None) -> Measured:
    """The blog's "16K IOPS was somewhat slower in both cases", which its next sentence sets
    against its own Ceph QEMU/KVM post's 16K tests: not measurable here (the declared needs).
    Its reason gives what this tier shows a reader who has that post: fio_baseline's 16 KiB
    random read (``randread16k``, the blog's job; IOPS, median and range over its runs in
    ``fio_raw``, else the median in ``fio``) beside its 1 MiB sequential read (MB/s)."""
    seq, mb = C.fio_MBps(fio, tier, "seqread"), C.fio_MBps(fio, tier, "randread16k")
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
    n = C.cores(env)
    c = _cold(summary, tier)
    best = float(c["images_per_s"].max()) if len(c) else np.nan
    rnd = C.fio_MBps(fio, tier, "randread")
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
            f"{C.fio_MBps(fio, tier, 'seqread') / 1e3:,.2f} GB/s (fio_baseline)",
        "blog_fio_local_3_4x_persistent": "",
    }
    return [Measured(i, why_not="; ".join(x for x in (_needs(i), shown) if x)) for i, shown in run.items()]


def storage_tier(raw: pd.DataFrame) -> str:
    """The first tier with a block device (its cold runs read the device), else the first."""
    tiers = list(dict.fromkeys(raw["tier"]))
    disk = [t for t in tiers if (raw.loc[raw["tier"] == t, "device"] != "").any()]
    return (disk or tiers)[0]
