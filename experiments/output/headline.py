"""Headline metrics: the few numbers of each stage that a person compares between runs.

``metrics.json`` of a stage holds only these (``dvc metrics show``; after changing a parameter,
``dvc metrics diff``); the long tables stay in ``summary.csv`` and the other ``.csv`` files.
Every stage draws its keys from one small vocabulary, :data:`KEYS`, so that ``dvc metrics
show`` (one table, a column per distinct key) stays narrow enough to read. A stage's numbers
are taken on its *storage tier* (:func:`experiments.host.tiers.storage_tier`: the first tier whose
reads reach a device), the one its claims are judged on.
"""

from __future__ import annotations

import math

import pandas as pd

# key -> what it means and its unit. Add a key only when no existing one says it.
KEYS: dict[str, str] = {
    "MBps": "read bandwidth on the storage tier, MB/s (10^6 B/s): the stage's best configuration",
    "iops": "random reads per second on the storage tier (fio, the ImageNet size mix)",
    # short keys: `dvc metrics show` (a column per key, 4 spaces apart, the widest path first)
    # stays within 200 columns (test_smoke_first_hour); 207 with images_per_s and median_KB
    "img_per_s": "images per second on the storage tier: the stage's best configuration",
    "speedup": "the stage's headline ratio (named in its function below); > 1 is the paper's direction",
    "seconds": "the stage's headline time, s",
    "MB": "size of the generated data set, MB (10^6 B)",
    "claims": "claims the stage checks (findings and checks)",
    "holds": "claims whose verdict is holds",
    "fails": "claims whose verdict is fails",
    "undecided": "claims whose verdict is inconclusive (the interval straddles the rule, or n = 1)",
    "similarity": "weighted cosine similarity of a traced run and its repeat (Eq 4.1)",
    "match": "fraction of traced components that match what was asked (fio's job; a replayed checkpoint)",
    "data_share": "median share of a training step spent waiting for data (thesis workloads)",
    "r2": "R² of the stage's fit: the worst over its workloads (thesis Eq 5.1, 5.3, 5.5)",
    "au": "median accelerator utilization of the stage's emulated runs (thesis Eq 3.1), 0-1",
}


def _num(x) -> float | None:
    x = float(x)
    return None if not math.isfinite(x) else x


def _best(df: pd.DataFrame, col: str) -> pd.Series | None:
    df = df[df[col].notna()]
    return None if df.empty else df.loc[df[col].idxmax()]


def claims(claim_list: list[dict]) -> dict:
    """Report stages and the claims table: how many claims, how many hold, fail, are inconclusive."""
    verdicts = [c.get("verdict") for c in claim_list]
    return {"claims": len(verdicts), "holds": verdicts.count("holds"), "fails": verdicts.count("fails"),
            "undecided": verdicts.count("inconclusive")}


def data_set(facts: dict) -> dict:
    """A generated image set: MB and generation seconds (its image count and size mix are
    parameters, ``dvc params diff``; its file sizes are in the stage's raw table and claims)."""
    return {"MB": facts["bytes"] / 1e6, "seconds": facts["seconds"]}


def fio_baseline(summary: pd.DataFrame, storage: str) -> dict:
    """Sequential read MB/s and random-read IOPS of fio on the storage tier (Table I)."""
    s = summary[summary["tier"] == storage].set_index("job")
    return {"MBps": _num(s.loc["seqread", "bw_MBps"]), "iops": _num(s.loc["randread", "iops"])}


def tfdata_read(summary: pd.DataFrame, storage: str) -> dict:
    """tf.data on the storage tier: the full pipeline's best images/s, the read-only
    pipeline's best MB/s, and ``speedup``: the full pipeline's best over its fewest threads (Fig 4)."""
    s = summary[summary["tier"] == storage]
    full, ro = _best(s[s["variant"] == "full"], "images_per_s"), _best(s[s["variant"] == "read_only"], "MBps")
    return {"img_per_s": None if full is None else _num(full["images_per_s"]),
            "MBps": None if ro is None else _num(ro["MBps"]),
            "speedup": None if full is None else _num(full["speedup_vs_min_threads"])}


def alexnet_prefetch(summary: pd.DataFrame, storage: str) -> dict:
    """AlexNet on the storage tier with the most map threads and one batch prefetched: epoch
    seconds, images/s, and ``speedup``: the epoch without prefetch over the epoch with it (Fig 6)."""
    d = summary[(summary["experiment"] == "prefetch") & (summary["tier"] == storage) & (summary["prefetch"] > 0)]
    if d.empty:
        return {"seconds": None, "img_per_s": None, "speedup": None}
    r = d.loc[d["threads"].idxmax()]
    return {"seconds": _num(r["seconds"]), "img_per_s": _num(r["images_per_s"]),
            "speedup": _num(r["no_prefetch_seconds"] / r["seconds"])}


def alexnet_checkpoint(summary: pd.DataFrame, fast: str, slow: str) -> dict:
    """Checkpointing through the burst buffer: its run seconds, and ``speedup``: the median
    stall of checkpointing straight to the slow tier over the burst buffer's (Fig 9; paper 2.6x)."""
    s = summary.set_index("target")
    burst = f"{fast}>{slow}"
    if burst not in s.index:
        return {"seconds": _num(s.loc[slow, "seconds"]) if slow in s.index else None, "speedup": None}
    ratio = s.loc[slow, "stall_median_s"] / s.loc[burst, "stall_median_s"] if slow in s.index else math.nan
    return {"seconds": _num(s.loc[burst, "seconds"]), "speedup": _num(ratio)}


def deepio(loader: pd.DataFrame, storage: str) -> dict:
    """DeepIO's loaders on the storage tier: opportunistic's best MB/s, and ``speedup``:
    opportunistic's best MB/s over ordered's best (Fig 10, 11)."""
    s = loader[loader["tier"] == storage]
    opp, ordd = _best(s[s["mode"] == "opportunistic"], "MBps"), _best(s[s["mode"] == "ordered"], "MBps")
    return {"MBps": None if opp is None else _num(opp["MBps"]),
            "speedup": None if opp is None or ordd is None else _num(opp["MBps"] / ordd["MBps"])}


def lmdbio(summary: pd.DataFrame, storage: str, dataset: str) -> dict:
    """LMDBIO on the storage tier, ``dataset``, the most processes: the staggered readers'
    seconds, and ``speedup``: plain LMDB's time over theirs (Fig 2)."""
    s = summary[(summary["tier"] == storage) & (summary["dataset"] == dataset)]
    s = s[s["P"] == s["P"].max()].set_index("strategy")
    if "stag" not in s.index:
        return {"seconds": None, "speedup": None}
    return {"seconds": _num(s.loc["stag", "seconds"]), "speedup": _num(s.loc["stag", "speedup_vs_lmdb"])}


def blog(summary: pd.DataFrame, storage: str) -> dict:
    """The blog's tf.data runs, cold, on the storage tier: TFRecords' best images/s, and
    ``speedup``: TFRecords' best over JPEG files' best."""
    s = summary[(summary["framework"] == "tensorflow") & (summary["cache"] == "cold") & (summary["tier"] == storage)]
    rec, jpg = _best(s[s["format"] == "tfrecord"], "images_per_s"), _best(s[s["format"] == "jpeg"], "images_per_s")
    return {"img_per_s": None if rec is None else _num(rec["images_per_s"]),
            "speedup": None if rec is None or jpg is None else _num(rec["images_per_s"] / jpg["images_per_s"])}


def workload_runs(runs: pd.DataFrame, summary: pd.DataFrame) -> dict:
    """A thesis workload's sweep (real, sleep or random-content runs): the runs' wall seconds
    in all and the median data share of a step (compute times are in summary.csv)."""
    return {"seconds": _num(runs["wall_seconds"].sum()), "data_share": _num(summary["data_share"].median())}


def workload_fits(models: dict, claim_list: list[dict]) -> dict:
    """The compute-time fits: ``r2``, the worst mean-model R² over the workloads, and the claims."""
    r2 = [m["mean"]["r2"] for m in models.values() if m["mean"].get("r2") is not None]
    return {"r2": _num(min(r2)) if r2 else None, **claims(claim_list)}


def validation(au: pd.DataFrame, claim_list: list[dict]) -> dict:
    """The sleep validation: ``au``, the median accelerator utilization of the sleep runs
    (Eq 3.1), and the claims."""
    sl = au[au["row"] == "sleep"]["au"]
    return {"au": _num(sl.median()) if len(sl) else None, **claims(claim_list)}


def llm_checkpoint(run: pd.DataFrame, storage: str) -> dict:
    """LLM checkpointing on the storage tier: ``MBps``, the cold read phase's run throughput
    (the rules': total bytes over total time); its report adds the claims."""
    r = run[(run["tier"] == storage) & (run["op"] == "read") & (run["read"] == "cold")]
    return {"MBps": _num(r["run_throughput_GiBps"].iloc[0] * 2**30 / 1e6) if len(r) else None}
