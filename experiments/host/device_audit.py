"""What the device did during a run: the bytes the block device under a tier read and wrote,
beside the bytes the job read and wrote, and whether the job's reads were the device's or the
page cache's (docs/emulator.md, "The device audit").

Residency (:mod:`.cache`, ``mincore``) says how much of a data set was in the page cache when a
run began; it cannot see what happened during the run: a second epoch, a search's next trial, a
phase that reads what the last one wrote. The audit counts what the device did, three ways, each
an upper bound on the bytes the device served the job's data:

- ``device``: the growth of the device's counters in ``/proc/diskstats`` (sectors x 512 B) over
  the run, the device found from the tier's mount (:func:`block_device`);
  everything it did, other programs' I/O and metadata included;
- ``processes``: the growth of ``read_bytes`` in ``/proc/<pid>/io`` of this process and its
  descendants (:func:`experiments.host.dstat.read_proc_io`; a reaped child's count goes to its
  parent): the bytes the kernel fetched from storage for the job, readahead and page faults of
  mapped files included, other programs left out; a program that counts its own window (the
  emulator's ranks, ``rank-r*.json``) gives that instead;
- ``files``: where the block layer was traced (bpftrace in the traced comparison), the bytes of
  the requests that touched the data files' extents: the per-file split.

The audit takes the smallest measured (``read_measured_by``) over the bytes the job read
(``read_ratio``). A process count is used only when it saw the job's reads: its ``rchar``
(bytes through read calls) or its block reads reach :data:`THRESHOLD` of the job's bytes; for
ranks started by srun (not this process's descendants) or a job that maps its files the
device's count decides.

``read_from``: ``device`` at a ratio of at least :data:`THRESHOLD`; ``cache`` below it: *served
from the page cache*, the run's figures are not the storage's and give no storage verdict;
``memory`` on a memory-backed tier (no device, no ratio); ``unknown`` with no local block device
(NFS, overlay) or nothing read. Writes the same way (``written_to``) on the device's counters
alone: writeback runs in kernel threads, so no process count exists for it; ``cache`` means the
bytes were still in the page cache when the run ended (no fsync).

A span may also sample both counts (``sample_s``) so that a part of the run is judged alone
(:meth:`Span.window`: DLIO's epochs after the first, which its figure is made of).

Every audit of this process is kept; :func:`summary` is what ``env.json`` records
(``device_audit``, through :func:`experiments.host.envinfo.capture`). Bytes; MB = 10^6 B.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

from . import dstat
from .cache import COLD_LIMIT
from .tiers import MEMORY_FS, mount_of

# A cold run reads at least 1 - COLD_LIMIT (0.95) of its bytes from the device: the eviction
# leaves at most 5 % resident or the stage calls the run warm; readahead, whole pages and
# metadata only add to the device's side. Below 0.9 more than a tenth came from memory, which
# lifts a throughput by more than ~11 %, past the ~10 % spread of fio's own runs on this box
# (experiments/emulator/bound.py, STORAGE_CLOSE): the figure is then partly the cache's.
THRESHOLD = 1 - 2 * COLD_LIMIT
READ_FROM = ("device", "cache", "memory", "unknown")
_log: list[dict] = []
_said: set[str] = set()


def _num(x) -> float | None:
    """``x`` as a float, None for None/NaN."""
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def block_device(path) -> tuple[str, str | None]:
    """(file-system type, block device as ``/proc/diskstats`` names it: ``vda``, ``sda1``,
    ``dm-0``) under ``path``, from its mount (:func:`experiments.host.tiers.mount_of`, the one reader
    of the mount table): the file's device number, else the mount's source (``/dev/...``, links
    followed). The device is None on a memory-backed file system and on one with no local block
    device (NFS, Lustre, FUSE, overlay)."""
    fstype, source = mount_of(Path(path))
    if fstype in MEMORY_FS:
        return fstype, None
    dev = dstat.device_of(path)
    if dev is None and source.startswith("/dev/"):
        name = os.path.basename(os.path.realpath(source))
        dev = name if dstat.read_diskstats([name]) else None
    return fstype, dev


def pagecache_drops() -> int | None:
    """How many times the whole page cache was dropped since boot (``drop_pagecache`` in
    /proc/vmstat: another process writing drop_caches); None where the kernel does not say."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("drop_pagecache "):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


class Span:
    """The device's and the job's counters over one run: ``with Span(tier_folder) as s: run()``,
    then :meth:`judge` with the bytes the job read and wrote. ``processes``: count this
    process's descendants (False where the job's processes are not: ranks started by srun).
    ``sample_s``: also sample both counts every that many seconds (:class:`experiments.host.dstat.Sampler`),
    so that :meth:`window` gives them over a part of the run (a program's epochs)."""

    def __init__(self, path, label: str = "", processes: bool = True, sample_s: float | None = None):
        self.path, self.label, self.processes = Path(path), label or str(path), processes
        self.sample_s, self.samples = sample_s, None
        self.counts: dict = {}

    def __enter__(self) -> "Span":
        probe = self.path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        self.fstype, self.device = block_device(probe)
        if self.device is None and self.fstype not in MEMORY_FS and self.fstype not in _said:
            _said.add(self.fstype)   # said once per file-system type, recorded in every audit
            print(f"device audit: {probe} is on {self.fstype} with no local block device: its runs "
                  "are not judged (read_from unknown)")
        self._d0 = dstat.read_diskstats([self.device]).get(self.device) if self.device else None
        self._p0 = dstat.read_proc_io(os.getpid()) if self.processes else None
        self._drops0 = pagecache_drops()
        self._sampler = (dstat.Sampler([self.device] if self.device else [], os.getpid() if self.processes else None,
                                       self.sample_s).start() if self.sample_s else None)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        d1 = dstat.read_diskstats([self.device]).get(self.device) if self.device else None
        p1 = dstat.read_proc_io(os.getpid()) if self.processes else None
        c = {"fstype": self.fstype, "device": self.device, "seconds": time.perf_counter() - self._t0}
        drops = pagecache_drops()
        # a drop_caches during the run (another process) made part of it cold: said, not hidden
        c["cache_dropped_during"] = None if drops is None or self._drops0 is None else drops != self._drops0
        if self._d0 and d1:
            c["device_read_bytes"] = (d1["sectors_read"] - self._d0["sectors_read"]) * dstat.SECTOR
            c["device_written_bytes"] = (d1["sectors_written"] - self._d0["sectors_written"]) * dstat.SECTOR
        if self._p0 is not None and p1 is not None:
            c["processes_read_bytes"] = max(0, p1["read_bytes"] - self._p0["read_bytes"])
            c["processes_rchar"] = max(0, p1["rchar"] - self._p0["rchar"])
        self.counts = c
        if self._sampler is not None:
            self._sampler.stop()
            self.samples = self._sampler.frame()

    def window(self, start: float, end: float) -> dict:
        """The counts over [``start``, ``end``] (epoch seconds) from the samples: every sampled
        interval that overlaps it, whole (more than the window, never less: a sum cut short
        could only make the device's side too small)."""
        c = {k: self.counts.get(k) for k in ("fstype", "device", "cache_dropped_during")} | {"seconds": end - start}
        f = self.samples
        if f is None or not len(f):
            return c
        f = f[(f["wall"] > start) & (f["wall"] - f["interval_s"] < end)]
        def got(src: str, col: str) -> float:   # MB/s x seconds of each interval, in bytes
            g = f[f["source"] == src]
            return float((g[col] * g["interval_s"]).sum() * 1e6)

        if self.device:
            c["device_read_bytes"], c["device_written_bytes"] = got(f"dev:{self.device}", "read_MBps"), \
                got(f"dev:{self.device}", "write_MBps")
        if self.processes:
            c["processes_read_bytes"], c["processes_rchar"] = got("proc", "read_MBps"), got("proc", "vfs_read_MBps")
        return c

    def judge(self, read_bytes=None, written_bytes=None, job_processes: dict | None = None,
              files_read_bytes=None, counts: dict | None = None, what: str = "") -> dict:
        """:func:`judge` of this span's counts (or of ``counts``: a :meth:`window`), kept for
        :func:`summary` under its label (and ``what``: the part of the run judged)."""
        a = judge(counts or self.counts, read_bytes, written_bytes, job_processes, files_read_bytes)
        a["label"] = f"{self.label}: {what}" if what else self.label
        _log.append(a)
        return a


def judge(counts: dict, read_bytes=None, written_bytes=None, job_processes: dict | None = None,
          files_read_bytes=None) -> dict:
    """The audit of one run from its ``counts`` (:class:`Span`'s: ``fstype``, ``device``,
    ``device_read_bytes``, ``device_written_bytes``, ``processes_read_bytes``,
    ``processes_rchar``), the bytes the job read and wrote, the job's own process counts
    (``{"read_bytes", "rchar"}`` over its measured window) and the bytes the traced block
    requests on the data files' extents read. See the module docstring for the verdicts."""
    job_r, job_w = _num(read_bytes), _num(written_bytes)
    mem = counts.get("fstype") in MEMORY_FS
    bounds = {}
    if _num(files_read_bytes) is not None:
        bounds["files"] = _num(files_read_bytes)
    for name, got in (("program", job_processes), ("processes", counts)):
        got = got or {}
        rb, rc = _num(got.get("read_bytes" if name == "program" else "processes_read_bytes")), \
            _num(got.get("rchar" if name == "program" else "processes_rchar"))
        # a count that did not see the job's read calls did not see its block reads either
        # (asynchronous I/O counts no rchar; a count that already reaches the job's bytes is used)
        if rb is not None and job_r and ((rc or 0) >= THRESHOLD * job_r or rb >= THRESHOLD * job_r):
            bounds.setdefault("processes", rb)
            bounds["processes"] = min(bounds["processes"], rb)
    dev_r, dev_w = _num(counts.get("device_read_bytes")), _num(counts.get("device_written_bytes"))
    if dev_r is not None:
        bounds["device"] = dev_r
    by = min(bounds, key=bounds.get) if bounds and not mem else None   # memory: no device to count
    used = bounds.get(by) if by else None
    dev_w = None if mem else dev_w

    def verdict(job, dev):
        if mem:
            return None, "memory"
        if not counts.get("device") or dev is None:
            return None, "unknown"
        if not job:
            return None, "unknown"
        r = dev / job
        return r, "device" if r >= THRESHOLD else "cache"

    r_ratio, read_from = verdict(job_r, used)
    w_ratio, written_to = verdict(job_w, dev_w)
    return {"device": counts.get("device"), "fstype": counts.get("fstype"),
            "seconds": counts.get("seconds"), "job_read_bytes": job_r, "job_written_bytes": job_w,
            "device_read_bytes": used, "read_measured_by": by, "read_bounds": bounds,
            "device_written_bytes": dev_w, "read_ratio": r_ratio, "write_ratio": w_ratio,
            "read_from": read_from, "written_to": written_to, "threshold": THRESHOLD,
            "cache_dropped_during": counts.get("cache_dropped_during")}


def cache_served(a: dict | None, op: str = "read") -> bool:
    """Whether the audit ``a`` says the run's reads (``op`` read) or writes (write) were the page
    cache's: no storage verdict then."""
    return bool(a) and a.get("read_from" if op == "read" else "written_to") == "cache"


def words(a: dict | None, op: str = "read") -> str:
    """One line on the audit ``a`` of a run's reads (or writes), for a summary or a claim's note."""
    if not a:
        return "device audit: not taken"
    job, dev, ratio, where = ((a["job_read_bytes"], a["device_read_bytes"], a["read_ratio"], a["read_from"])
                              if op == "read" else
                              (a["job_written_bytes"], a["device_written_bytes"], a["write_ratio"], a["written_to"]))
    if where == "memory":
        return f"device audit: memory-backed tier ({a.get('fstype')}): no device, no ratio"
    if where == "unknown":
        why = ("no local block device under the tier" if not a.get("device")
               else f"the job {'read' if op == 'read' else 'wrote'} nothing measured")
        return f"device audit: not judged ({why})"
    verb, noun = ("read", "served") if op == "read" else ("wrote", "written")
    by = f", {a['read_measured_by']} count" if op == "read" and a.get("read_measured_by") else ""
    head = (f"{noun} from the page cache, no storage verdict" if where == "cache" and op == "read"
            else "held in the page cache at the run's end, no storage verdict" if where == "cache"
            else f"{noun} by the device")
    return (f"device audit: {head}: {a['device']} {verb} {dev / 1e6:.4g} MB for the job's {job / 1e6:.4g} MB "
            f"(ratio {ratio:.2f}, threshold {a['threshold']:.2f}{by})")


def columns(a: dict | None) -> dict:
    """The audit ``a`` as flat table columns (MB = 10^6 B); NaN/None where not measured."""
    a = a or {}
    mb = lambda x: float("nan") if _num(x) is None else _num(x) / 1e6  # noqa: E731
    return {"device": a.get("device"), "device_read_MB": mb(a.get("device_read_bytes")),
            "job_read_MB": mb(a.get("job_read_bytes")),
            "device_read_ratio": float("nan") if a.get("read_ratio") is None else a["read_ratio"],
            "read_from": a.get("read_from", "unknown"), "read_measured_by": a.get("read_measured_by"),
            "device_written_MB": mb(a.get("device_written_bytes")), "job_written_MB": mb(a.get("job_written_bytes")),
            "device_write_ratio": float("nan") if a.get("write_ratio") is None else a["write_ratio"],
            "written_to": a.get("written_to", "unknown")}


def log() -> list[dict]:
    """Every audit of this process, in order."""
    return list(_log)


def reset_log() -> None:
    _log.clear()


def summary() -> dict:
    """What ``env.json`` records: the threshold, how the bytes were counted, and every audit of
    this process (label, device, bytes, ratios, verdicts); empty when none was taken."""
    if not _log:
        return {}
    keep = ("label", "device", "fstype", "job_read_bytes", "device_read_bytes", "read_measured_by",
            "read_ratio", "read_from", "job_written_bytes", "device_written_bytes", "write_ratio",
            "written_to", "cache_dropped_during", "seconds")
    return {"threshold": THRESHOLD,
            "how": "device bytes: the smallest of /proc/diskstats of the tier's device, read_bytes of "
                   "the job's processes (/proc/<pid>/io) and traced block requests on the data files, "
                   "over the bytes the job read; writes: /proc/diskstats",
            "served_from_cache": sum(a["read_from"] == "cache" for a in _log),
            "runs": [{k: a.get(k) for k in keep} for a in _log]}
