"""Per-thread CPU of a run's processes, sampled from ``/proc/<pid>/task/<tid>/stat``.

A rank whose data path runs on one thread (DLRM reads and preprocesses each batch on the
rank's own thread) can be limited by that thread while the process uses one core of two: the
process's CPU share does not show it, the thread's does. :class:`Sampler` reads, every
``interval_s`` seconds in a background thread of the launcher, every thread of the launched
processes and their descendants (torchrun's ranks, their DataLoader worker processes,
TensorFlow's pools): each thread's time on a CPU and time waiting for one on a run queue
(``schedstat``, ns; where the kernel has none, user + system clock ticks of ``stat`` and no
wait), its name (``comm``, 15 characters) and its start (field 22 of ``stat``).
:func:`shares` turns the samples into each thread's CPU seconds over a wall-clock window (the
training phase, cut by linear interpolation between samples) as a share of one core
(``share``), and the share it wanted (``demand``: on a CPU or waiting for one; on a shared box a
thread that never sleeps shows a share under 1 but a demand near 1); :func:`groups` names the
thread groups of a rank (its main thread, its DataLoader workers, a TensorFlow pool such as
``tf_data_private``).

Written by the launcher as ``threads.csv`` in the run folder (``wall``, ``start_wall``: seconds
since the epoch; ``cpu_ns``, ``wait_ns``: ns).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..host import dstat

HZ = os.sysconf("SC_CLK_TCK")
COLUMNS = ["wall", "pid", "ppid", "tid", "proc", "name", "cpu_ns", "wait_ns", "start_wall"]


def _boot_wall() -> float:
    """The wall-clock time (epoch seconds) of boot, to place a thread's start (ticks since boot)."""
    up = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - up


def read_threads(pids: list[int], boot_wall: float) -> list[dict]:
    """One row per live thread of ``pids`` and their descendants (see the module docstring)."""
    now = time.time()
    rows = []
    seen = set()
    for root in pids:
        for p in dstat.descendants(root):
            if p in seen:
                continue
            seen.add(p)
            try:
                head = Path(f"/proc/{p}/stat").read_text()
                proc, ppid = head[head.index("(") + 1: head.rindex(")")], int(head.rsplit(")", 1)[1].split()[1])
                tasks = list(Path(f"/proc/{p}/task").iterdir())
            except (OSError, ValueError):
                continue   # the process ended between the listing and the read
            for t in tasks:
                try:
                    s = (t / "stat").read_text()
                    f = s.rsplit(")", 1)[1].split()
                    try:
                        on, wait = (int(x) for x in (t / "schedstat").read_text().split()[:2])
                    except (OSError, ValueError):   # no schedstat: ticks, no run-queue wait
                        on, wait = (int(f[11]) + int(f[12])) * 10**9 // HZ, 0
                except OSError:
                    continue
                rows.append({"wall": now, "pid": p, "ppid": ppid, "tid": int(t.name), "proc": proc,
                             "name": s[s.index("(") + 1: s.rindex(")")], "cpu_ns": on, "wait_ns": wait,
                             "start_wall": boot_wall + int(f[19]) / HZ})
    return rows


class Sampler(dstat.Sampler):
    """Background sampler of the threads of ``pids`` (and descendants) every ``interval_s``
    seconds (start, stop and ``with`` as :class:`experiments.host.dstat.Sampler`); :meth:`frame`
    gives the rows (columns :data:`COLUMNS`)."""

    def __init__(self, pids: list[int], interval_s: float = 0.1):
        super().__init__(interval_s=interval_s)
        self.pids = list(pids)
        self._boot = _boot_wall()

    def _loop(self) -> None:
        while True:
            self._rows.extend(read_threads(self.pids, self._boot))
            if self._stop.wait(self.interval_s):
                break
        self._rows.extend(read_threads(self.pids, self._boot))  # the last counts of those still alive

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self._rows, columns=COLUMNS)


def _at(t: float, walls, values, born: float) -> float:
    """A thread's cumulative counter at time ``t``: 0 at its start ``born``, linear between samples,
    flat after the last one."""
    xs, ys = [born, *walls], [0.0, *values]
    if t <= xs[0]:
        return 0.0
    return float(np.interp(t, xs, ys))


def shares(samples: pd.DataFrame, start: float, end: float) -> pd.DataFrame:
    """Each thread's CPU seconds in the window ``[start, end]`` (epoch seconds): one row per
    thread that lived in it (``pid``, ``ppid``, ``tid``, ``proc``, ``name``, ``cpu_s``,
    ``wait_s``, ``wall_s``: the part of the window it lived, from its start or ``start`` to its
    last sample or ``end``; ``share`` = cpu / wall of one core; ``demand`` = (cpu + run-queue
    wait) / wall). The counters are interpolated linearly between samples."""
    cols = ["pid", "ppid", "tid", "proc", "name", "cpu_s", "wait_s", "wall_s", "share", "demand"]
    out = []
    if not len(samples):
        return pd.DataFrame(columns=cols)
    for (pid, tid), g in samples.sort_values("wall").groupby(["pid", "tid"], sort=False):
        born = min(float(g["start_wall"].iloc[0]), float(g["wall"].iloc[0]))
        a, b = max(start, born), min(end, float(g["wall"].iloc[-1]))
        if b <= a:
            continue
        w = g["wall"].to_numpy(float)
        cpu = (_at(b, w, g["cpu_ns"].to_numpy(float), born) - _at(a, w, g["cpu_ns"].to_numpy(float), born)) / 1e9
        wait = (_at(b, w, g["wait_ns"].to_numpy(float), born) - _at(a, w, g["wait_ns"].to_numpy(float), born)) / 1e9
        last = g.iloc[-1]
        out.append({"pid": int(pid), "ppid": int(last["ppid"]), "tid": int(tid), "proc": last["proc"],
                    "name": last["name"], "cpu_s": cpu, "wait_s": wait, "wall_s": b - a,
                    "share": cpu / (b - a), "demand": (cpu + wait) / (b - a)})
    return pd.DataFrame(out, columns=cols)


_TRAILING = re.compile(r"[\d_/:-]+$")
# threads of a rank that are not its data path: the collectives' (gloo, NCCL, TensorFlow's
# gRPC), torchrun's store and the allocator's; they count in the CPU split, not as the busiest
NOT_DATA_PATH = ("gloo", "pt_gloo", "pt_nccl", "pt_tcpstore", "pt_elastic", "grpc", "jemalloc")


def group_of(row, rank_pids: set[int]) -> str | None:
    """The thread group a thread belongs to: ``main thread`` (a rank's own), ``DataLoader
    workers`` (threads of a rank's child processes), ``unnamed threads`` (named as their
    process), or its name without a trailing number (``tf_Compute``, ``pt_gloo_runloop``); None
    for the launcher's threads (not a rank's)."""
    if row.pid in rank_pids:
        if row.tid == row.pid:
            return "main thread"
        return "unnamed threads" if row.name == row.proc else (_TRAILING.sub("", row.name) or row.name)
    if row.ppid in rank_pids:
        return "DataLoader workers"
    return None


def groups(per_thread: pd.DataFrame, rank_pids: dict[int, int]) -> pd.DataFrame:
    """Per rank and thread group: the CPU seconds of its threads, the busiest thread (by demand)
    with its share and demand of one core and its name, and ``wall_s`` (DataLoader workers: the summed wall of the worker
    processes; else the longest-lived thread's), ``data_path`` (False for
    :data:`NOT_DATA_PATH`) (``per_thread``: :func:`shares`' rows;
    ``rank_pids``: {pid: rank})."""
    if not len(per_thread):
        return pd.DataFrame(columns=["rank", "group", "data_path", "threads", "cpu_s", "wall_s", "busiest_share",
                                     "busiest_demand", "busiest"])
    t = per_thread.copy()
    t["group"] = [group_of(r, set(rank_pids)) for r in t.itertuples()]
    t = t[t["group"].notna()]
    t["rank"] = [rank_pids.get(p, rank_pids.get(pp)) for p, pp in zip(t["pid"], t["ppid"])]
    # TensorFlow names its pools (tf_Compute: the inter-op pool, where tf.data's map runs); the
    # threads tf.data starts itself (interleave, map and prefetch runners) keep the process's name
    tf = set(t.loc[t["group"].str.startswith("tf_"), "pid"])
    t.loc[t["pid"].isin(tf) & (t["group"] == "unnamed threads"), "group"] = "tf.data runners"
    rows = []
    for (rank, grp), g in t.groupby(["rank", "group"]):
        top = g.loc[g["demand"].fillna(-1).idxmax()]
        mains = g[g["tid"] == g["pid"]]   # a group of processes (workers): the wall of each
        wall = float(mains["wall_s"].sum()) if len(mains) and grp == "DataLoader workers" else float(g["wall_s"].max())
        rows.append({"rank": int(rank), "group": grp, "data_path": not grp.startswith(NOT_DATA_PATH),
                     "threads": len(g), "cpu_s": float(g["cpu_s"].sum()),
                     "wall_s": wall, "busiest_share": float(top["share"]), "busiest_demand": float(top["demand"]),
                     "busiest": f"{top['proc']}/{top['name']}"})
    return pd.DataFrame(rows)
