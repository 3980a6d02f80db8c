"""What bound an emulated run: the client (its CPU) or the storage.

MLPerf Storage's users report client-bound results as storage results without knowing it
(mlcommons/storage issues 334, 626, 779). The emulator answers from what the ranks recorded:

- **data wait share**: per rank, the data wait over the step time summed over its steps
  (``data_ns`` / ``step_ns`` of ``steps-r*.csv``); the run's is the median over ranks;
- **CPU share** of a rank: its CPU seconds over its wall seconds times the cores it had (the
  host's usable cores / ranks on the host); the host's is the ranks' CPU seconds summed over
  the longest rank's seconds times the host's cores. Which seconds, best first
  (``cpu_measured_as``): the training phase's (``phase_usage.train`` of ``rank-r*.json``: the
  process's own CPU and wall while training, plus its waited-for children's CPU, i.e. the
  DataLoader workers, ``cpu_children_s``); else the whole process (``cpu_s + cpu_children_s``
  from ``getrusage`` at exit, over ``life_s``, from the launch to the rank's exit: start-up
  included, which a short run feels); else the phases' span of its application log.

The run is **client-bound** when the data wait dominates (share >= :data:`WAIT_DOMINATES`)
while the ranks' CPU is near the cores they had (median rank CPU share >=
:data:`CPU_NEAR_CORES`): waiting for data with no CPU left means the client could not go
faster whatever the storage did. Otherwise it is **storage-bound** (when the data wait
dominates) or the accelerators were kept busy and the storage is the next limit.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

CPU_NEAR_CORES = 0.8  # CPU seconds / (wall seconds x cores) at which the ranks had no CPU left
WAIT_DOMINATES = 0.5  # data wait / step time at which the wait is most of the step


def host_cores() -> int:
    """Cores this process may run on (the affinity mask, which containers and Slurm set)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def classify(steps: pd.DataFrame, ranks: list[dict], phases: pd.DataFrame | None, cores: int,
             ranks_per_host: int) -> dict:
    """The ``bound`` and the CPU figures behind it (see the module docstring).

    ``steps``: the ranks' step records (``rank``, ``data_ns``, ``step_ns``); ``ranks``: their
    ``rank-r*.json`` facts (``rank``, ``cpu_s``, ``cpu_children_s``); ``phases``: phase
    intervals (``rank``, ``start``, ``end``, seconds since the epoch; None or empty: the steps'
    summed ``step_ns`` is each rank's wall); ``cores``: usable cores of one host;
    ``ranks_per_host``: ranks that shared them. Seconds and shares (0..1)."""
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
        return {"bound": "storage", "why": "no rank records: nothing says the client was the limit",
                "cpu_by_rank": {}, "host": {}, "data_wait_share": float("nan"), "cpu_share": float("nan")}
    run_wall = float(t["wall_s"].max())
    host_share = float(t["cpu_s"].sum()) / (run_wall * cores * (len(t) / ranks_per_host)) \
        if run_wall > 0 else float("nan")
    cpu_share = float(t["cpu_share"].median())
    wait = float(t["data_wait_share"].median())
    waits = bool(wait >= WAIT_DOMINATES)
    busy = bool(cpu_share >= CPU_NEAR_CORES)
    bound = "client" if waits and busy else "storage"
    fig = (f"the data wait was {100 * wait:.0f} % of the step time and the ranks used "
           f"{100 * cpu_share:.0f} % of the {per_core:.3g} core(s) each had (host: {100 * host_share:.0f} % "
           f"of {cores} cores)")
    if bound == "client":
        why = (f"client-bound: {fig}; the client's CPU, not the storage, was the limit, so this "
               "run does not measure the storage (fewer accelerators per client, or more clients)")
    elif waits:
        why = f"storage-bound: {fig}; the ranks waited for data with CPU to spare"
    else:
        why = (f"storage-bound (the data wait did not dominate): {fig}; the client's CPU was not "
               "the limit")
    return {"bound": bound, "why": why, "data_wait_share": wait, "cpu_share": cpu_share,
            "cpu_measured_as": ", ".join(sorted(set(t["how"]))),
            "cpu_near_cores": CPU_NEAR_CORES, "wait_dominates": WAIT_DOMINATES,
            "host": {"cores": cores, "ranks": ranks_per_host, "cpu_s": float(t["cpu_s"].sum()),
                     "wall_s": run_wall, "cpu_share": host_share},
            "cpu_by_rank": {str(r.rank): {"cpu_s": r.cpu_s, "wall_s": r.wall_s, "cores": r.cores,
                                          "cpu_share": r.cpu_share,
                                          "data_wait_share": None if np.isnan(r.data_wait_share)
                                          else r.data_wait_share}
                            for r in t.itertuples()}}
