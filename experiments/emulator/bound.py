"""What bound an emulated run: the storage, the client (its CPU), or neither for certain.

MLPerf Storage's users report client-bound results as storage results without knowing it
(mlcommons/storage issues 223, 364, 626, 689). A client that reads tmpfs at 8 % of what fio
reads from the same files was not held back by the storage, whatever its process's CPU says:
a rank whose data path runs on one thread (DLRM reads and preprocesses each batch on its own
thread) is limited by that thread while the process uses one core of two. So the run is judged
against the storage and per thread (:func:`verdict`):

- **storage** when the data path drove at least :data:`STORAGE_CLOSE` of what the storage
  delivers (``client_fraction_of_reference``): the client's bytes/s over the reference's, the
  fio job that reads the same files with the same requests where the bench ran one beside the
  run (:mod:`.bench`), else the tier's ``fio_baseline`` job for that kind of request
  (:func:`reference`: sequential reads for UNET3D and BERT, random reads for DLRM);
- **client** when it did not, the data wait was at least :data:`WAIT_MATTERS` of the step
  time, and a thread of the data path (a rank's own threads, its DataLoader workers,
  TensorFlow's pools; per-thread CPU from ``/proc/<pid>/task/*/stat`` and ``schedstat``,
  :mod:`.threads`) was near a full core over the training phase (its *demand*: on a CPU or
  waiting on a run queue for one, at least :data:`THREAD_FULL`: on a box shared with other
  work a thread that never waits for I/O gets less than a core but wants all of it), or a
  rank's process (with its workers) used at least :data:`CPU_NEAR_CORES` of the cores it had;
- **undetermined** otherwise, with the figures (no reference measured, or a slow client whose
  threads were not busy: waiting on something neither figure sees, e.g. a lock or the launcher).

The process figures (``cpu_by_rank``): a rank's CPU seconds over its wall seconds times the
cores it had (the host's usable cores / ranks on the host), best first (``cpu_measured_as``):
the training phase's (``phase_usage.train`` of ``rank-r*.json``, plus its waited-for
children's CPU, the DataLoader workers); else the whole process (``cpu_s + cpu_children_s``
over ``life_s``); else the phases' span of its application log.

**Where the client's time went** (:func:`where_time_went`): the data path's parts from the step
and loader records (``vfs_ns``: read syscalls, ``prep_ns``: preprocessing, the rest of the data
wait or of the workers' time: other) and the CPU of each thread group, so a storage engineer
reads whether more clients, more accelerators per client or a lighter data path would reach
the storage.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..host.envinfo import host_cores  # noqa: F401  (the one core count; callers import it from here)

# client bytes/s over the storage's (same files, same requests) at which the storage is the
# limit: issue 12's goal for the emulator; fio's own runs differ by ~10 % on a shared box
STORAGE_CLOSE = 0.8
# a thread's (on-CPU + run-queue wait) seconds over its wall seconds at which it wanted the whole
# core: sampling at 0.1 s and interpolation keep a saturated thread a few % under 1
THREAD_FULL = 0.9
# a rank's CPU seconds / (wall seconds x its cores) at which the process had no CPU left
CPU_NEAR_CORES = 0.8
# data wait / step time from which the data path sets the pace: at 10 % waiting the
# accelerators fall under MLPerf Storage's 90 % utilization
WAIT_MATTERS = 0.1

VERDICTS = ("storage", "client", "undetermined")
# which fio_baseline job stands for a workload's requests where no same-files job ran
BASELINE_JOB = {"unet3d": "seqread", "bert": "seqread", "dlrm": "randread", "retinanet": "seqread"}


def reference(workload: str, data_dir) -> dict:
    """The storage's bytes/s for this workload's requests where no fio job ran beside the run:
    the ``fio_baseline`` stage's median of :data:`BASELINE_JOB` on the tier that holds
    ``data_dir`` (``results/fio_baseline/summary.csv``). ``{"bytes_per_s": NaN, ...}`` when that
    was not measured or the data is on no configured tier."""
    from ..settings import config, paths
    from ..verdicts.reasons import fio_MBps
    from ..host.tiers import tier_of

    job = BASELINE_JOB[workload]
    none = {"bytes_per_s": float("nan"), "how": f"no fio reference (fio_baseline {job} not measured for this tier)"}
    f = paths.results_dir("fio_baseline") / "summary.csv"
    try:
        tier = tier_of(Path(data_dir), config.load(seed=None, tiers=None).tiers)
    except (config.ConfigError, FileNotFoundError, OSError):
        return none
    if tier is None or not f.exists():
        return none
    mbps = fio_MBps(pd.read_csv(f), tier.name, job)
    if mbps != mbps:
        return none
    return {"bytes_per_s": mbps * 1e6,
            "how": f"fio_baseline {job} on tier {tier.name} ({mbps:.4g} MB/s; no same-files fio job ran)"}


def process_figures(steps: pd.DataFrame, ranks: list[dict], phases: pd.DataFrame | None, cores: int,
                    ranks_per_host: int) -> dict:
    """The data wait share and each rank's process CPU share (module docstring), per rank and
    for the host. ``steps``: ``rank``, ``data_ns``, ``step_ns``; ``ranks``: ``rank-r*.json``
    facts; ``phases``: ``rank``, ``start``, ``end`` (epoch seconds); ``cores``: usable cores of
    one host; ``ranks_per_host``: ranks that shared them."""
    if cores < 1 or ranks_per_host < 1:
        raise ValueError(f"cores = {cores}, ranks_per_host = {ranks_per_host}; allowed: integers >= 1")
    per_core = cores / ranks_per_host
    rows = []
    for r in ranks:
        k = int(r["rank"])
        st = steps[steps["rank"] == k] if len(steps) else steps
        step_s = float(st["step_ns"].sum()) / 1e9 if len(st) else 0.0
        wait = float(st["data_ns"].sum()) / 1e9 / step_s if step_s > 0 else float("nan")
        kids = float(r.get("cpu_children_s", 0.0))
        train = (r.get("phase_usage") or {}).get("train") or {}
        if train.get("wall_s"):
            cpu, wall, how = float(train["cpu_s"]) + kids, float(train["wall_s"]), "training phase"
        elif r.get("life_s"):
            cpu, wall, how = float(r.get("cpu_s", 0.0)) + kids, float(r["life_s"]), "whole process"
        else:
            ph = phases[phases["rank"] == k] if phases is not None and len(phases) else None
            wall = float(ph["end"].max() - ph["start"].min()) if ph is not None and len(ph) else step_s
            cpu, how = float(r.get("cpu_s", 0.0)) + kids, "whole process over its phases"
        rows.append({"rank": k, "cpu_s": cpu, "wall_s": wall, "cores": per_core, "how": how,
                     "cpu_share": cpu / (wall * per_core) if wall > 0 else float("nan"),
                     "data_wait_share": wait})
    t = pd.DataFrame(rows)
    if not len(t):
        return {"data_wait_share": float("nan"), "cpu_share": float("nan"), "cpu_measured_as": "",
                "host": {}, "cpu_by_rank": {}}
    run_wall = float(t["wall_s"].max())
    host_share = float(t["cpu_s"].sum()) / (run_wall * cores * (len(t) / ranks_per_host)) \
        if run_wall > 0 else float("nan")
    return {"data_wait_share": float(t["data_wait_share"].median()), "cpu_share": float(t["cpu_share"].median()),
            "cpu_measured_as": ", ".join(sorted(set(t["how"]))),
            "host": {"cores": cores, "ranks": ranks_per_host, "cpu_s": float(t["cpu_s"].sum()),
                     "wall_s": run_wall, "cpu_share": host_share},
            "cpu_by_rank": {str(r.rank): {"cpu_s": r.cpu_s, "wall_s": r.wall_s, "cores": r.cores,
                                          "cpu_share": r.cpu_share,
                                          "data_wait_share": None if np.isnan(r.data_wait_share)
                                          else r.data_wait_share}
                            for r in t.itertuples()}}


def thread_figures(samples: pd.DataFrame | None, ranks: list[dict], phases: pd.DataFrame | None) -> dict:
    """Per rank and thread group over the training phase (:func:`.threads.groups`), and the
    busiest thread of the run's data path (not :data:`.threads.NOT_DATA_PATH`): ``{"groups": [rows], "busiest_share", "busiest_group",
    "busiest_thread", "rank"}``; NaN shares without samples (a run folder without
    ``threads.csv``)."""
    from .threads import groups, shares

    none = {"groups": [], "busiest_share": float("nan"), "busiest_demand": float("nan"), "busiest_group": None,
            "busiest_thread": None}
    pids = {int(r["pid"]): int(r["rank"]) for r in ranks if r.get("pid")}
    if samples is None or not len(samples) or not pids:
        return none
    tr = phases[phases["phase"] == "train"] if phases is not None and len(phases) and "phase" in phases else None
    start, end = ((float(tr["start"].min()), float(tr["end"].max())) if tr is not None and len(tr)
                  else (float(samples["wall"].min()), float(samples["wall"].max())))
    g = groups(shares(samples, start, end), pids)
    dp = g[g["data_path"].astype(bool)] if len(g) else g
    if not len(dp):
        return none | {"groups": g.to_dict("records")}
    top = dp.loc[dp["busiest_demand"].fillna(-1).idxmax()]
    return {"groups": g.to_dict("records"), "busiest_share": float(top["busiest_share"]),
            "busiest_demand": float(top["busiest_demand"]),
            "busiest_group": str(top["group"]), "busiest_thread": str(top["busiest"]), "rank": int(top["rank"]),
            "window_s": end - start}


# readable names of the thread groups a storage engineer meets (TensorFlow names its pools)
GROUP_LABELS = {"main thread": "the rank's main thread", "DataLoader workers": "DataLoader workers",
                "tf_Compute": "tf.data's parse (its map on TensorFlow's inter-op pool)",
                "tf.data runners": "tf.data's runner threads (interleave, map, prefetch)",
                "tf_data_private": "tf.data's private pool", "tf_inter_op": "TensorFlow's inter-op pool",
                "tf_intra_op": "TensorFlow's intra-op pool"}


def label(group: str | None) -> str:
    if group is None:
        return "not measured"
    for k, v in GROUP_LABELS.items():
        if group.startswith(k):
            return v
    return group


def where_time_went(steps: pd.DataFrame, loader: pd.DataFrame | None, threads: dict) -> dict:
    """Where the data path's time went: ``parts`` (share of the data path's time, 0..1) from the
    records, ``cpu_by_group`` (share of the ranks' sampled CPU per thread group) and ``text``.

    DLRM (read and preprocessing on the rank's thread, in the step records): of the summed
    data wait, ``read syscalls`` (``vfs_ns``), ``preprocessing`` (``prep_ns``), ``other``.
    UNET3D (per sample in the DataLoader workers, loader records): of the workers' summed wall
    seconds in the training phase (from the thread samples; else of their summed records),
    the same three. BERT (tf.data reads and parses inside the graph, no records): the CPU per
    thread group only."""
    parts = {}
    if len(steps) and {"vfs_ns", "prep_ns"} <= set(steps.columns) and steps["vfs_ns"].notna().any():
        den = float(steps["data_ns"].sum())
        v, p = float(steps["vfs_ns"].fillna(0).sum()), float(steps["prep_ns"].fillna(0).sum())
        what = "of the data wait"
    elif loader is not None and len(loader) and {"vfs_ns", "prep_ns"} <= set(loader.columns):
        lo = loader[loader["split"] == "train"] if "split" in loader else loader
        v, p = float(lo["vfs_ns"].sum()), float(lo["prep_ns"].sum())
        wk = [g for g in threads.get("groups", []) if g["group"] == "DataLoader workers"]
        worker_wall = sum(w.get("wall_s", 0.0) for w in wk)
        den = worker_wall * 1e9 if worker_wall * 1e9 >= v + p else v + p
        what = "of the DataLoader workers' time" if den > v + p else "of the DataLoader workers' recorded time"
    else:
        den, what = 0.0, ""
    if den > 0:
        parts = {"read syscalls": v / den, "preprocessing": p / den, "other": max(0.0, 1 - (v + p) / den)}
    cpu = {}
    gs = threads.get("groups", [])
    total = sum(g["cpu_s"] for g in gs)
    if total > 0:
        for g in gs:
            cpu[g["group"]] = cpu.get(g["group"], 0.0) + g["cpu_s"] / total
    bits = []
    if parts:
        bits.append(", ".join(f"{k} {100 * x:.0f} %" for k, x in parts.items()) + f" ({what})")
    if cpu:
        top = sorted(cpu.items(), key=lambda kv: -kv[1])
        rest = sum(x for _, x in top[3:])
        bits.append("CPU: " + ", ".join(f"{label(k)} {100 * x:.0f} %" for k, x in top[:3])
                    + (f", other {100 * rest:.0f} %" if rest >= 0.005 else ""))
    if threads.get("busiest_group") is not None:
        bits.append(f"busiest thread: {label(threads['busiest_group'])} ({threads['busiest_thread']}), "
                    f"{100 * threads['busiest_share']:.0f} % of a core used, {100 * threads['busiest_demand']:.0f} % "
                    "wanted")
    return {"parts": parts, "parts_of": what, "cpu_by_group": cpu,
            "busiest_group": threads.get("busiest_group"), "text": "; ".join(bits) or "not measured"}


def verdict(client_bps: float, ref: dict | None, data_wait_share: float, busiest_demand: float,
            cpu_share: float, busiest_group: str | None = None) -> tuple[str, str, float]:
    """``(bound, why, client_fraction_of_reference)`` by the rules of the module docstring.
    ``client_bps``: the data path's bytes/s; ``ref``: ``{"bytes_per_s", "how"}`` of the storage
    (None or NaN: not measured); ``data_wait_share``, ``busiest_demand`` (the busiest thread's
    on-CPU + run-queue seconds over its wall seconds), ``cpu_share`` (a rank's share of its
    cores): 0..1, NaN where not measured."""
    ref = ref or {"bytes_per_s": float("nan"), "how": "no fio reference"}
    rb = float(ref.get("bytes_per_s", float("nan")))
    frac = client_bps / rb if rb > 0 and client_bps == client_bps else float("nan")
    pct = lambda x: "n/a" if x != x else f"{100 * x:.0f} %"  # noqa: E731 - NaN: not measured
    fig = (f"the client drove {'n/a' if client_bps != client_bps else format(client_bps / 1e6, '.4g')} MB/s, "
           f"{'n/a' if frac != frac else format(frac, '.2f')} of the storage's "
           f"{'n/a' if rb != rb else format(rb / 1e6, '.4g')} MB/s ({ref.get('how', '')}); data wait "
           f"{pct(data_wait_share)} of the step time; busiest thread "
           f"{label(busiest_group) if busiest_group else 'not measured'} wanted {pct(busiest_demand)} of a core; "
           f"ranks used {pct(cpu_share)} of their cores")
    if frac == frac and frac >= STORAGE_CLOSE:
        return "storage", f"storage-bound (>= {STORAGE_CLOSE} of the storage): {fig}", frac
    thread_full = busiest_demand == busiest_demand and busiest_demand >= THREAD_FULL
    cores_full = cpu_share == cpu_share and cpu_share >= CPU_NEAR_CORES
    waits = data_wait_share == data_wait_share and data_wait_share >= WAIT_MATTERS
    if waits and (thread_full or cores_full):
        what = (f"a thread of the data path was near a full core (>= {THREAD_FULL})" if thread_full
                else f"the ranks were near their cores (>= {CPU_NEAR_CORES})")
        what += f", below {STORAGE_CLOSE} of the storage" if frac == frac else ", no storage reference measured"
        return "client", (f"client-bound ({what}): {fig}; the client's "
                          "CPU, not the storage, was the limit: more clients or a lighter data path would "
                          "reach further"), frac
    if not waits:
        return "undetermined", (f"undetermined (the data wait was under {100 * WAIT_MATTERS:.0f} % of the "
                                f"step: the data path did not set the pace): {fig}"), frac
    why = ("no storage reference was measured" if frac != frac else
           f"below {STORAGE_CLOSE} of the storage with no thread near a full core")
    return "undetermined", f"undetermined ({why}): {fig}", frac


def classify(steps: pd.DataFrame, ranks: list[dict], phases: pd.DataFrame | None, cores: int,
             ranks_per_host: int, threads: pd.DataFrame | None = None, loader: pd.DataFrame | None = None,
             client_bps: float = float("nan"), ref: dict | None = None) -> dict:
    """The ``bound`` of a run and every figure behind it (module docstring): the process
    figures (:func:`process_figures`), the thread figures (:func:`thread_figures` of
    ``threads``, the sampled ``threads.csv``), where the time went (:func:`where_time_went`)
    and the verdict of the data path's ``client_bps`` against ``ref``. Seconds, bytes/s and
    shares (0..1)."""
    proc = process_figures(steps, ranks, phases, cores, ranks_per_host)
    th = thread_figures(threads, ranks, phases)
    spent = where_time_went(steps, loader, th)
    bound, why, frac = verdict(client_bps, ref, proc["data_wait_share"], th["busiest_demand"],
                               proc["cpu_share"], th["busiest_group"])
    return {"bound": bound, "why": why, "where_time_went": spent["text"], "time_split": spent,
            "client_bytes_per_s": client_bps, "reference_bytes_per_s": (ref or {}).get("bytes_per_s", float("nan")),
            "reference_how": (ref or {}).get("how", "no fio reference"), "client_fraction_of_reference": frac,
            "threads": th, **proc, "cpu_near_cores": CPU_NEAR_CORES, "thread_full": THREAD_FULL,
            "storage_close": STORAGE_CLOSE, "wait_matters": WAIT_MATTERS}


def rejudge(summary: dict, client_bps: float, ref: dict) -> dict:
    """The verdict of a finished run's ``summary`` (its ``client_cpu`` figures) for another
    measure of its bytes/s and another storage reference (the bench's same-files fio job):
    ``{"bound", "why", "client_fraction_of_reference"}``."""
    c = summary.get("client_cpu") or {}
    th = c.get("threads") or {}
    num = lambda x: float("nan") if x is None else float(x)  # noqa: E731 - JSON null: not measured
    b, why, frac = verdict(client_bps, ref, num(c.get("data_wait_share")), num(th.get("busiest_demand")),
                           num(c.get("cpu_share")), th.get("busiest_group"))
    return {"bound": b, "why": why, "client_fraction_of_reference": frac}
