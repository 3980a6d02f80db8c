"""The always-available back end: :class:`experiments.host.dstat.Sampler` on the traced tree.

Per interval (default 1 s): ``/proc/<pid>/io`` of the process tree (``rchar``/``wchar``: the VFS
view; ``read_bytes``/``write_bytes``: what it made the storage do), ``/proc/diskstats`` of the
devices holding the traced files, whole-machine and tree CPU utilization, and GPUs where
``nvidia-smi`` exists. No per-call events: a proc-only trace yields the amounts of Table 4.2
(VFS and block bytes read and written) but no counts, sizes, files or sequentiality.

For a command (``trace.run``), the tracer also waits for it to exit without reaping it and
reads its ``/proc/<pid>/io`` then (:func:`exited_totals`): the kernel has added every reaped
descendant's counters to it, so those totals are exact for the whole tree (the sampler's sum
misses what a process did after the last sample before it exited). Memory-mapped files are
seen by looking at ``/proc/<pid>/maps`` each interval (:class:`MapsWatcher`).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd

from ..host import dstat


def sampler(pid: int, devices: list[str] | None, interval_s: float = 1.0) -> dstat.Sampler:
    return dstat.Sampler(devices=devices, pid=pid, interval_s=interval_s, cpu=True, gpu=True)


def totals(samples: pd.DataFrame) -> dict[str, float]:
    """Bytes over the whole run from a samples frame: ``vfs_read_bytes``, ``vfs_write_bytes``
    (process tree, rchar/wchar: every read/write, pipes included), ``bio_read_bytes``,
    ``bio_write_bytes`` (process tree, read_bytes/write_bytes: what it made the storage do) and
    ``device_read_bytes``, ``device_write_bytes`` (the devices, every process on them).
    I/O a process did after the last sample before it exited is not seen (see dstat)."""
    out = {}
    if samples is None or not len(samples):
        return out
    proc = samples[samples["source"] == "proc"]
    if len(proc):
        out["vfs_read_bytes"] = float((proc["vfs_read_MBps"] * proc["interval_s"]).sum() * 1e6)
        out["vfs_write_bytes"] = float((proc["vfs_write_MBps"] * proc["interval_s"]).sum() * 1e6)
        out["bio_read_bytes"] = float((proc["read_MBps"] * proc["interval_s"]).sum() * 1e6)
        out["bio_write_bytes"] = float((proc["write_MBps"] * proc["interval_s"]).sum() * 1e6)
    dev = samples[samples["source"].astype(str).str.startswith("dev:")]
    if len(dev):
        out["device_read_bytes"] = float((dev["read_MBps"] * dev["interval_s"]).sum() * 1e6)
        out["device_write_bytes"] = float((dev["write_MBps"] * dev["interval_s"]).sum() * 1e6)
    return out


def exited_totals(pid: int) -> dict[str, int]:
    """``/proc/<pid>/io`` of a process that has exited but is not yet reaped (its parent
    waited with ``WNOWAIT``): the exact totals of it and of every descendant it reaped
    (``rchar``, ``wchar``, ``read_bytes``, ``write_bytes``, ``syscr``, ``syscw``). {} when
    unreadable."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/io").read_text().splitlines():
            k, v = line.split(":")
            out[k.strip()] = int(v)
    except (OSError, ValueError):
        return {}
    return out


class MapsWatcher(threading.Thread):
    """Every ``interval_s``, the file-backed mappings of the traced tree (``/proc/<pid>/maps``
    of ``pid`` and its descendants): the only way this back end sees that a file is read
    through ``mmap``. A mapping made and dropped between two looks is missed."""

    def __init__(self, pid: int, interval_s: float = 0.5):
        super().__init__(name="maps", daemon=True)
        self.pid = pid
        self.interval_s = interval_s
        self._seen: dict[tuple[int, str, str, str], dict] = {}
        self._halt = threading.Event()

    def _look(self) -> None:
        for p in dstat.descendants(self.pid):
            try:
                text = Path(f"/proc/{p}/maps").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                f = line.split(maxsplit=5)
                if len(f) < 6 or not f[5].startswith("/"):
                    continue
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                key = (p, f[0], f[1], f[5])
                if key not in self._seen:
                    self._seen[key] = {"timestamp_ns": time.time_ns(), "pid": p, "tid": p, "path": f[5],
                                       "length": hi - lo, "pos": int(f[2], 16), "perms": f[1]}

    def run(self) -> None:
        self._look()
        while not self._halt.wait(self.interval_s):
            self._look()

    def start(self) -> "MapsWatcher":
        super().start()
        return self

    def stop(self) -> None:
        """Look a last time, then end the thread."""
        self._halt.set()
        self.join()
        self._look()

    def frame(self) -> pd.DataFrame:
        """Raw mmap rows (``op``, ``prot``, ``flags``, ``ret`` as the event back ends give them)."""
        rows = []
        for r in self._seen.values():
            perms = r["perms"]
            prot = (1 if "r" in perms else 0) | (2 if "w" in perms else 0) | (4 if "x" in perms else 0)
            rows.append({**r, "op": "mmap", "prot": prot, "flags": 1 if perms.endswith("s") else 2,
                         "ret": 0, "fd": -1})
        return pd.DataFrame(rows)

    def rows(self, t0_ns: int | None = None) -> pd.DataFrame:
        """Schema rows (``op`` mmap, ``size`` = mapping length, ``offset`` = its file offset)."""
        from .resolve import finish
        df = self.frame()
        if not len(df):
            return finish(df)
        df = df.assign(layer="vfs", size=df["length"].astype(float), offset=df["pos"].astype(float),
                       error=0, comm="")
        return finish(df, t0_ns)
