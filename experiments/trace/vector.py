"""The characteristic vector of a trace (the thesis's Table 4.2) and the sequentiality counts.

Components, in the table's order (key, label, weight): see :data:`COMPONENTS`. Read components
weigh 2, write components 1 (Section 4.6). Sizes in bytes, percentages in percent (0-100).

Filters (Section 4.6: "we filter the reads to include only those made to data files, and only
writes to checkpoint files"): ``data`` and ``checkpoint`` are lists of directories (every file
under them), files, or glob patterns (``*.npy``; a pattern without ``/`` matches the file name).
``None`` keeps every regular file (paths under /proc, /sys, /dev and pipes/sockets are never
counted). Block requests cannot be tied to files; they are filtered by device (the thesis traced
only the disk holding data and checkpoints).

Random and sequential block reads follow Listing A.1 exactly: block read requests in time order;
per pid, the first request is random; a request is sequential when it starts at the sector where
the same pid's previous request ended (``sector + bytes / 512``), otherwise random.
VFS sequentiality (:func:`vfs_sequentiality`): the same rule on file offsets, per (pid, file).
"""

from __future__ import annotations

import fnmatch
import math
import os

import pandas as pd

from . import proc_backend
from .schema import VFS_READS, VFS_WRITES, Trace, TraceError

COMPONENTS: list[tuple[str, str, int]] = [
    ("vfs_reads", "Number VFS reads", 2),
    ("vfs_read_bytes", "Amount VFS read (B)", 2),
    ("unique_files_read", "Number unique files read", 2),
    ("vfs_read_size_q1", "1st quartile VFS read size (B)", 2),
    ("vfs_read_size_median", "Median VFS read size (B)", 2),
    ("vfs_read_size_q3", "3rd quartile VFS read size (B)", 2),
    ("bio_reads", "Number BIO reads", 2),
    ("bio_read_bytes", "Amount BIO read (B)", 2),
    ("bio_random_read_pct", "Random BIO reads (%)", 2),
    ("bio_sequential_read_pct", "Sequential BIO reads (%)", 2),
    ("bio_vfs_read_pct", "Amount BIO read / Amount VFS read (%)", 2),
    ("vfs_writes", "Number VFS writes", 1),
    ("vfs_write_bytes", "Amount VFS written (B)", 1),
    ("unique_files_written", "Number unique files written to", 1),
    ("vfs_write_size_q1", "1st quartile VFS write size (B)", 1),
    ("vfs_write_size_median", "Median VFS write size (B)", 1),
    ("vfs_write_size_q3", "3rd quartile VFS write size (B)", 1),
    ("bio_writes", "Number BIO writes", 1),
    ("bio_write_bytes", "Amount BIO written (B)", 1),
]
KEYS = [k for k, _, _ in COMPONENTS]
WEIGHTS = {k: w for k, _, w in COMPONENTS}
LABELS = {k: label for k, label, _ in COMPONENTS}
NEVER = ("/proc/", "/sys/", "/dev/")
SECTOR = 512


def _matcher(spec):
    if spec is None:
        return lambda p: True
    if isinstance(spec, (str, os.PathLike)):
        spec = [spec]
    rules = []
    for s in spec:
        s = str(s)
        if any(ch in s for ch in "*?["):
            rules.append(("glob", s))
        else:
            rules.append(("prefix", os.path.abspath(s).rstrip("/")))

    def match(p: str) -> bool:
        for kind, r in rules:
            if kind == "glob":
                if fnmatch.fnmatch(p if "/" in r else os.path.basename(p), r):
                    return True
            elif p == r or p.startswith(r + "/"):
                return True
        return False
    return match


def file_filter(paths: pd.Series, spec) -> pd.Series:
    """Boolean mask: regular-file paths (absolute, not /proc, /sys, /dev) matching ``spec``."""
    m = _matcher(spec)
    return paths.fillna("").astype(str).map(
        lambda p: p.startswith("/") and not p.startswith(NEVER) and m(p)).astype(bool)


def vfs_reads(events: pd.DataFrame, data=None) -> pd.DataFrame:
    """Successful VFS reads (read, pread64, readv) of data files, in time order."""
    v = events[(events["layer"] == "vfs") & events["op"].isin(VFS_READS) & (events["error"] == 0)]
    return v[file_filter(v["path"], data)].sort_values("timestamp", kind="stable")


def vfs_writes(events: pd.DataFrame, checkpoint=None) -> pd.DataFrame:
    """Successful VFS writes (write, pwrite64, writev) to checkpoint files, in time order."""
    v = events[(events["layer"] == "vfs") & events["op"].isin(VFS_WRITES) & (events["error"] == 0)]
    return v[file_filter(v["path"], checkpoint)].sort_values("timestamp", kind="stable")


def file_sectors(paths) -> list[tuple[int, int]]:
    """Disk sector ranges [start, end) holding the files ``paths`` (FIEMAP ioctl; partition
    offset added, so they compare with block-tracepoint sectors). [] where unsupported."""
    import fcntl
    import struct

    out = []
    for path in paths or []:
        path = str(path)
        try:
            st = os.stat(path)
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        part_start = 0
        try:
            sysdir = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
            if os.path.exists(sysdir + "/partition"):
                part_start = int(open(sysdir + "/start").read())
        except (OSError, ValueError):
            pass
        try:
            start, n = 0, 128
            while True:
                buf = bytearray(struct.pack("QQIIII", start, (1 << 64) - 1 - start, 1, 0, n, 0) + b"\0" * 56 * n)
                fcntl.ioctl(fd, 0xC020660B, buf)  # FS_IOC_FIEMAP, FIEMAP_FLAG_SYNC
                mapped = struct.unpack_from("I", buf, 20)[0]
                last = False
                for i in range(mapped):
                    lo, ph, ln, _, _, fl = struct.unpack_from("QQQQQI", buf, 32 + 56 * i)
                    out.append((part_start + ph // SECTOR, part_start + (ph + ln + SECTOR - 1) // SECTOR))
                    start = lo + ln
                    last = bool(fl & 1)
                if mapped == 0 or last:
                    break
        except OSError:
            pass
        finally:
            os.close(fd)
    return sorted(out)


def block_rows(events: pd.DataFrame, op: str, devices=None, sectors=None) -> pd.DataFrame:
    """Block requests of ``op`` (read/write), optionally only on ``devices`` and only those
    overlapping the sector ranges ``sectors`` (see :func:`file_sectors`), in time order."""
    b = events[(events["layer"] == "block") & (events["op"] == op)]
    if devices:
        b = b[b["device"].isin(list(devices))]
    if sectors is not None:
        import numpy as np
        lo = b["sector"].to_numpy()
        hi = lo + b["size"].to_numpy() / SECTOR
        keep = np.zeros(len(b), dtype=bool)
        for a, z in sectors:
            keep |= (lo < z) & (hi > a)
        b = b[keep]
    return b.sort_values("timestamp", kind="stable")


def num_ranseq_accesses(rows) -> tuple[int, int]:
    """(random, sequential) block accesses: Listing A.1 of the thesis, line by line.

    ``rows``: iterable of mappings with ``PID``, ``SECTOR`` and ``BYTES`` (or a DataFrame with
    ``pid``, ``sector``, ``size``), in time order.
    """
    if isinstance(rows, pd.DataFrame):
        rows = [{"PID": p, "SECTOR": s, "BYTES": b}
                for p, s, b in zip(rows["pid"], rows["sector"], rows["size"])]
    random = 0
    seq = 0
    dic = {}  # map of (PID, sector)
    for row_data in rows:
        pid = row_data["PID"]
        sector = row_data["SECTOR"]
        sz = row_data["BYTES"] / 512  # the operation size in 512 B sectors
        if pid not in dic:
            dic[pid] = sector + sz
            random += 1
        else:
            # if the current operation starts at the sector where the previous one
            # by the same PID ended, it is sequential
            prev = dic[pid]
            if prev == sector:
                seq += 1
            else:
                random += 1
        dic[pid] = sector + sz
    return random, seq


def vfs_sequentiality(reads: pd.DataFrame) -> tuple[int, int, int]:
    """(random, sequential, unknown) VFS reads: the Listing A.1 rule on file offsets per
    (pid, file); reads whose offset is unknown (NaN) are counted apart."""
    random = seq = unknown = 0
    end: dict[tuple, float] = {}
    for pid, path, off, size in zip(reads["pid"], reads["path"], reads["offset"], reads["size"]):
        if off is None or (isinstance(off, float) and math.isnan(off)):
            unknown += 1
            continue
        key = (pid, path)
        if key in end and end[key] == off:
            seq += 1
        else:
            random += 1
        end[key] = off + (size if size == size else 0)
    return random, seq, unknown


def _q(s: pd.Series, q: float) -> float:
    return float(s.quantile(q)) if len(s) else 0.0


def characteristic_vector(trace: Trace | pd.DataFrame, data=None, checkpoint=None, devices=None,
                          block_files=None) -> dict[str, float]:
    """Table 4.2's 19 components (see :data:`COMPONENTS`) of ``trace``.

    A component the trace cannot give is NaN ("not measured"): the block ones for an strace
    trace, everything but the amounts for a /proc-only trace, whose amounts come from the
    process tree's ``rchar``/``wchar`` and ``read_bytes``/``write_bytes`` (``/proc/<pid>/io``:
    unfiltered, and I/O of a child after the last sample before it exited is missed, so only
    a rough stand-in).

    ``block_files``: files whose on-disk extents the block requests must touch (a narrower
    filter than the thesis's device filter, for a shared machine; needs the files to still be
    where they were when traced).
    """
    if isinstance(trace, pd.DataFrame):
        trace = Trace(trace, pd.DataFrame(), {"backend": "events", "block_traced": True})
    ev = trace.events
    backend = trace.meta.get("backend", "events")
    has_vfs = backend in ("bpftrace", "strace", "events")
    has_block = bool(trace.meta.get("block_traced", backend in ("bpftrace", "events")))
    nan = float("nan")
    v: dict[str, float] = {k: nan for k in KEYS}
    if has_vfs:
        r = vfs_reads(ev, data)
        w = vfs_writes(ev, checkpoint)
        v.update({
            "vfs_reads": float(len(r)), "vfs_read_bytes": float(r["size"].sum()),
            "unique_files_read": float(r["path"].nunique()),
            "vfs_read_size_q1": _q(r["size"], .25), "vfs_read_size_median": _q(r["size"], .5),
            "vfs_read_size_q3": _q(r["size"], .75),
            "vfs_writes": float(len(w)), "vfs_write_bytes": float(w["size"].sum()),
            "unique_files_written": float(w["path"].nunique()),
            "vfs_write_size_q1": _q(w["size"], .25), "vfs_write_size_median": _q(w["size"], .5),
            "vfs_write_size_q3": _q(w["size"], .75),
        })
    if has_block:
        sectors = file_sectors(block_files) if block_files else None
        br = block_rows(ev, "read", devices, sectors)
        bw = block_rows(ev, "write", devices, sectors)
        rnd, seq = num_ranseq_accesses(br)
        n = rnd + seq
        v.update({"bio_reads": float(len(br)), "bio_read_bytes": float(br["size"].sum()),
                  "bio_random_read_pct": 100.0 * rnd / n if n else 0.0,
                  "bio_sequential_read_pct": 100.0 * seq / n if n else 0.0,
                  "bio_writes": float(len(bw)), "bio_write_bytes": float(bw["size"].sum())})
    elif not has_vfs and len(trace.samples):  # /proc only: the amounts are all there is
        tot = proc_backend.totals(trace.samples)
        v["bio_read_bytes"] = tot.get("bio_read_bytes", nan)
        v["bio_write_bytes"] = tot.get("bio_write_bytes", nan)
        v["vfs_read_bytes"] = tot.get("vfs_read_bytes", nan)
        v["vfs_write_bytes"] = tot.get("vfs_write_bytes", nan)
    vr, brd = v["vfs_read_bytes"], v["bio_read_bytes"]
    v["bio_vfs_read_pct"] = 100.0 * brd / vr if vr and vr == vr and brd == brd else (0.0 if vr == 0 else nan)
    return v


def describe(trace: Trace, data=None, checkpoint=None, devices=None, block_files=None) -> dict[str, float]:
    """The vector plus what Table 4.2 leaves out: VFS random/sequential read percentages
    (``vfs_random_read_pct``, ``vfs_sequential_read_pct``, from offsets) and block-read
    counts of Listing A.1 (``bio_random_reads``, ``bio_sequential_reads``)."""
    out = characteristic_vector(trace, data, checkpoint, devices, block_files)
    r = vfs_reads(trace.events, data)
    rnd, seq, unk = vfs_sequentiality(r)
    n = rnd + seq
    out["vfs_random_read_pct"] = 100.0 * rnd / n if n else float("nan")
    out["vfs_sequential_read_pct"] = 100.0 * seq / n if n else float("nan")
    out["vfs_reads_offset_unknown"] = float(unk)
    br = block_rows(trace.events, "read", devices, file_sectors(block_files) if block_files else None)
    brnd, bseq = num_ranseq_accesses(br)
    out["bio_random_reads"], out["bio_sequential_reads"] = float(brnd), float(bseq)
    return out


def from_mapping(obj, source: str = "vector") -> dict[str, float]:
    """A vector from a JSON-like mapping of component keys to numbers (missing keys: NaN, "not
    measured"). :class:`TraceError` for an unknown key, a non-number or a negative value."""
    if not isinstance(obj, dict):
        raise TraceError(f"{source}: a vector must be a JSON object of components; got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(KEYS))
    if unknown:
        raise TraceError(f"{source}: unknown component(s) {', '.join(map(repr, unknown))}; "
                         f"allowed: {', '.join(KEYS)}")
    out = {}
    for k in KEYS:
        x = obj.get(k)
        if x is None:
            out[k] = float("nan")
            continue
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise TraceError(f"{source}: component {k} = {x!r}; must be a number >= 0 (or null)")
        if x < 0:
            raise TraceError(f"{source}: component {k} = {x!r}; must be >= 0")
        out[k] = float(x)
    return out
