"""A ``dstat`` of our own: per-interval I/O of devices and of a process tree, from /proc.

Always available (no root, no eBPF). It samples, every ``interval_s`` seconds in a background
thread:

- ``/proc/diskstats`` for the given block devices: sectors read and written, read and write
  requests, time spent doing I/O, requests in flight (the device view, what dstat and the
  TensorFlow study's Fig 8 and Fig 10 show);
- ``/proc/<pid>/io`` for a process and all its descendants: ``rchar``/``wchar`` (bytes passed
  through read/write system calls, page cache included: the VFS view) and
  ``read_bytes``/``write_bytes`` (bytes the process caused to be fetched from or sent to storage).

A memory tier (tmpfs) has no block device, so only the process view sees its traffic.

With ``cpu=True`` it also samples ``/proc/stat`` (whole-machine CPU utilization, 100 % = every
core busy) and the process tree's user+system time from ``/proc/<pid>/stat`` (source ``cpu``);
with ``gpu=True``, where ``nvidia-smi`` exists, each GPU's utilization and memory (source
``gpu:<index>``), as in the thesis's Fig 5.1 top row. Both are off by default.

    with dstat.Sampler(devices=["vda"], pid=os.getpid(), interval_s=1.0) as s:
        train()
    df = s.frame()   # one row per interval and source, rates in MB/s (10^6 B/s)
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pandas as pd

SECTOR = 512
_DISK_FIELDS = ("reads", "reads_merged", "sectors_read", "ms_reading", "writes", "writes_merged",
                "sectors_written", "ms_writing", "in_flight", "ms_io", "weighted_ms_io")


def device_of(path: str | os.PathLike) -> str | None:
    """The block device name (as in /proc/diskstats, e.g. ``vda``) holding ``path``, or None
    for file systems without one (tmpfs, NFS, Lustre)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    for dev, (ma, mi) in _disk_numbers().items():
        if (ma, mi) == (major, minor):
            return dev
    return None


def _disk_numbers() -> dict[str, tuple[int, int]]:
    out = {}
    try:
        for line in Path("/proc/diskstats").read_text().splitlines():
            f = line.split()
            out[f[2]] = (int(f[0]), int(f[1]))
    except OSError:
        pass
    return out


def read_diskstats(devices: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Counters of /proc/diskstats per device (all devices when ``devices`` is None)."""
    out = {}
    try:
        lines = Path("/proc/diskstats").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        f = line.split()
        if devices is not None and f[2] not in devices:
            continue
        out[f[2]] = dict(zip(_DISK_FIELDS, map(int, f[3:14])))
    return out


def descendants(pid: int) -> list[int]:
    """``pid`` and every live descendant, from /proc/<pid>/task/*/children."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo.extend(int(c) for c in task.read_text().split())
            except OSError:
                pass
    return seen


def read_cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from the first line of /proc/stat."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    return sum(f[:8]) - idle, sum(f[:8])


def read_tree_cpu(pid: int) -> int:
    """User+system jiffies of ``pid`` and its live descendants (children already reaped add
    through cutime/cstime of their parent)."""
    total = 0
    for p in descendants(pid):
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in f[11:15])
        except (OSError, ValueError, IndexError):
            continue
    return total


def read_gpus() -> list[dict[str, float]]:
    """Per-GPU utilization (%) and memory used (MiB) from nvidia-smi; [] without one."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,utilization.memory,memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in out.strip().splitlines():
        try:
            u, m, used = (float(x) for x in line.split(","))
        except ValueError:
            continue
        gpus.append({"gpu_util": u, "gpu_mem_util": m, "gpu_mem_MiB": used})
    return gpus


def read_proc_io(pid: int) -> dict[str, int]:
    """Summed /proc/<pid>/io counters of ``pid`` and its descendants (missing ones skipped)."""
    total = {"rchar": 0, "wchar": 0, "read_bytes": 0, "write_bytes": 0}
    for p in descendants(pid):
        try:
            for line in Path(f"/proc/{p}/io").read_text().splitlines():
                k, v = line.split(":")
                if k in total:
                    total[k] += int(v)
        except (OSError, ValueError):
            continue
    return total


class Sampler:
    """Background sampler of /proc/diskstats and /proc/<pid>/io; see the module docstring.

    Counters of processes that exit between two samples are lost for that interval (as in
    dstat); the device counters are not affected.
    """

    def __init__(self, devices: list[str] | None = None, pid: int | None = None,
                 interval_s: float = 1.0, cpu: bool = False, gpu: bool = False):
        if interval_s <= 0:
            raise ValueError(f"dstat: interval_s = {interval_s}; must be > 0")
        self.devices = [d for d in (devices or []) if d]
        self.pid = pid
        self.interval_s = interval_s
        self.cpu = cpu
        self.gpu = gpu
        self._rows: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0_wall = 0.0

    def _snapshot(self) -> dict:
        snap = {"t": time.perf_counter(), "wall": time.time(),
                "disk": read_diskstats(self.devices) if self.devices else {}}
        if self.pid is not None:
            snap["proc"] = read_proc_io(self.pid)
        if self.cpu:
            snap["cpu"] = read_cpu_times()
            if self.pid is not None:
                snap["tree_cpu"] = read_tree_cpu(self.pid)
        if self.gpu:
            snap["gpu"] = read_gpus()
        return snap

    def _loop(self) -> None:
        prev = self._snapshot()
        while not self._stop.wait(self.interval_s - (time.perf_counter() - prev["t"]) % self.interval_s):
            cur = self._snapshot()
            self._emit(prev, cur)
            prev = cur
        cur = self._snapshot()  # the last, partial interval, so nothing at the end is lost
        if cur["t"] > prev["t"]:
            self._emit(prev, cur)

    def _emit(self, a: dict, b: dict) -> None:
        dt = b["t"] - a["t"]
        base = {"time_s": b["t"] - self._t0, "wall": b["wall"], "interval_s": dt}
        for dev, c in b["disk"].items():
            p = a["disk"].get(dev)
            if p is None:
                continue
            d = {k: c[k] - p[k] for k in _DISK_FIELDS if k != "in_flight"}
            self._rows.append({**base, "source": f"dev:{dev}",
                               "read_MBps": d["sectors_read"] * SECTOR / 1e6 / dt,
                               "write_MBps": d["sectors_written"] * SECTOR / 1e6 / dt,
                               "read_iops": d["reads"] / dt, "write_iops": d["writes"] / dt,
                               "avg_request_KB": (d["sectors_read"] + d["sectors_written"]) * SECTOR
                               / 1e3 / max(d["reads"] + d["writes"], 1),
                               "queue_len": d["weighted_ms_io"] / 1e3 / dt,
                               "util": min(d["ms_io"] / 1e3 / dt, 1.0), "in_flight": c["in_flight"]})
        if "proc" in b:
            d = {k: max(b["proc"][k] - a["proc"][k], 0) for k in b["proc"]}
            self._rows.append({**base, "source": "proc",
                               "read_MBps": d["read_bytes"] / 1e6 / dt,
                               "write_MBps": d["write_bytes"] / 1e6 / dt,
                               "vfs_read_MBps": d["rchar"] / 1e6 / dt,
                               "vfs_write_MBps": d["wchar"] / 1e6 / dt})
        if "cpu" in b and b["cpu"][1] > a["cpu"][1]:
            row = {**base, "source": "cpu",
                   "cpu_util_pct": 100.0 * (b["cpu"][0] - a["cpu"][0]) / (b["cpu"][1] - a["cpu"][1])}
            if "tree_cpu" in b:
                hz = os.sysconf("SC_CLK_TCK")
                row["tree_cpu_pct"] = 100.0 * max(b["tree_cpu"] - a["tree_cpu"], 0) / hz / dt \
                    / (os.cpu_count() or 1)
            self._rows.append(row)
        for i, g in enumerate(b.get("gpu", [])):
            self._rows.append({**base, "source": f"gpu:{i}", **g})

    def start(self) -> "Sampler":
        self._t0 = time.perf_counter()
        self.t0_wall = time.time()
        self._thread = threading.Thread(target=self._loop, name="dstat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def frame(self) -> pd.DataFrame:
        """One row per interval and source (``dev:<name>`` or ``proc``), rates in MB/s."""
        return pd.DataFrame(self._rows)
