"""The host's reasons: what on this box bounds a value, from measurements other stages already
made (env.json, the fio baseline), for a failing finding's ``why_not``; and the rows a finding
is judged on."""

from __future__ import annotations

import pandas as pd

# measurements other stages already made (env.json, the fio baseline).

def cores(env: dict) -> int:
    """CPUs this process could use when ``env`` (an env.json) was captured."""
    cpu = env.get("cpu") or {}
    return int(cpu.get("affinity") or cpu.get("count") or 0)


def memory_gib(env: dict) -> float:
    return float(env.get("memory_bytes") or 0) / 2**30


def fio_MBps(fio: pd.DataFrame, tier: str, job: str) -> float:
    """fio's median bandwidth (MB/s) of ``job`` (seqread, seqwrite, randread) on ``tier``, from
    ``results/fio_baseline/summary.csv``; NaN when it was not measured, or when its device audit
    says the page cache served it (``served_by`` cache: no storage reference)."""
    if fio is None or not len(fio):
        return float("nan")
    r = fio[(fio["tier"] == tier) & (fio["job"] == job)]
    if len(r) and "served_by" in r and r["served_by"].iloc[0] == "cache":
        return float("nan")
    return float(r["bw_MBps"].iloc[0]) if len(r) else float("nan")


def cold_run(env: dict, tier: str) -> dict:
    """The residency measured after the evictions of ``tier``'s runs, from a measuring stage's
    env.json (``cold_runs``, written by :mod:`experiments.host.cache`): keyword arguments for
    :func:`claim` (``resident_fraction``: the largest over the runs; ``memory_backed``)."""
    c = (env.get("cold_runs") or {}).get(tier)
    if not c:
        return {"resident_fraction": None, "memory_backed": False}
    return {"resident_fraction": c.get("resident_fraction_max"),
            "memory_backed": bool(c.get("memory_backed"))}


def scale_had(env: dict) -> str:
    """What a multi-process stage's run reached, from its env.json's ``scale`` (``procs_max``,
    ``nodes_max``, ``allocation_nodes``): the words a scale claim's ``why_not`` gives beside
    the processes it needs."""
    s = env.get("scale") or {}
    if not s:
        return "this run recorded no scale (env.json has no 'scale')"
    return (f"this run had at most {s.get('procs_max', '?')} processes over {s.get('nodes_max', '?')} "
            f"node(s), in an allocation of {s.get('allocation_nodes', '?')} node(s)")



def one_node(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of ``frame`` measured on one node (``nodes`` == 1; every row of a table without
    that column). The step and bandwidth findings compare strategies at the same P on one
    node, as the default profile measures them; runs spread over the nodes of an allocation
    (``nodes`` > 1, the paper profile's ``[1, all]``) stay in summary.csv and the figures,
    never mixed into a one-node interval."""
    if frame is None or "nodes" not in frame:
        return frame
    return frame[frame["nodes"] == 1]

