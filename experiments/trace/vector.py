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

One computation for both trace modes: a ``timeline`` trace's calls are first counted per
(operation, file, size) (:func:`counts_of`), which is what a ``vector``-mode trace already holds
(:attr:`Trace.counts`, counted in the kernel); the quartiles are read off the discrete size
distribution exactly as ``numpy.quantile`` (linear interpolation) would from the expanded list.

"Not measured" (NaN, with the reason from :func:`not_measured`), rather than 0:

- the block components when the back end does not see the block layer (strace, /proc, or
  block tracing off);
- every VFS component but the amounts under the /proc back end (no per-call events);
- the VFS read components when a data file was memory-mapped (``mmap``; reads through a
  mapping are page faults, never read calls, so the counts and bytes would be too low; the
  thesis did not trace ``mmap`` either, Sec 4.2); likewise the write components when a
  checkpoint file was mapped shared and writable. Block reads stay real. Which mappings count:
  a file matching the filter and never mapped executable (a program or library); with no
  filter, only shared mappings (``MAP_SHARED``: LMDB, ``numpy.memmap``) outside the system's
  and the Python environment's folders, since every program maps private copies of locale
  and library files and glibc maps its gconv cache shared;
- the VFS components of a vector-mode trace whose in-kernel map overflowed.

Copies (``sendfile``, ``copy_file_range``, ``splice``) move file bytes without a read call; they
are not in Table 4.2's VFS counts (the thesis's tracer did not see them either) but are
counted beside them by :func:`describe` (``copy_reads``/``copy_read_bytes`` from data files,
``copy_writes``/``copy_write_bytes`` to checkpoint files).
"""

from __future__ import annotations

import fnmatch
import math
import os
import sys

import numpy as np
import pandas as pd

from ..settings import reference
from . import proc_backend
from .schema import COPY_IN, COPY_OUT, VFS_READS, VFS_WRITES, Trace, TraceError, conform_counts

_R, _W = reference.HOVON_WEIGHT_READ, reference.HOVON_WEIGHT_WRITE  # Table 4.2's weights
COMPONENTS: list[tuple[str, str, int]] = [
    ("vfs_reads", "Number VFS reads", _R),
    ("vfs_read_bytes", "Amount VFS read (B)", _R),
    ("unique_files_read", "Number unique files read", _R),
    ("vfs_read_size_q1", "1st quartile VFS read size (B)", _R),
    ("vfs_read_size_median", "Median VFS read size (B)", _R),
    ("vfs_read_size_q3", "3rd quartile VFS read size (B)", _R),
    ("bio_reads", "Number BIO reads", _R),
    ("bio_read_bytes", "Amount BIO read (B)", _R),
    ("bio_random_read_pct", "Random BIO reads (%)", _R),
    ("bio_sequential_read_pct", "Sequential BIO reads (%)", _R),
    ("bio_vfs_read_pct", "Amount BIO read / Amount VFS read (%)", _R),
    ("vfs_writes", "Number VFS writes", _W),
    ("vfs_write_bytes", "Amount VFS written (B)", _W),
    ("unique_files_written", "Number unique files written to", _W),
    ("vfs_write_size_q1", "1st quartile VFS write size (B)", _W),
    ("vfs_write_size_median", "Median VFS write size (B)", _W),
    ("vfs_write_size_q3", "3rd quartile VFS write size (B)", _W),
    ("bio_writes", "Number BIO writes", _W),
    ("bio_write_bytes", "Amount BIO written (B)", _W),
]
VFS_READ_KEYS = ["vfs_reads", "vfs_read_bytes", "unique_files_read", "vfs_read_size_q1",
                 "vfs_read_size_median", "vfs_read_size_q3"]
VFS_WRITE_KEYS = ["vfs_writes", "vfs_write_bytes", "unique_files_written", "vfs_write_size_q1",
                  "vfs_write_size_median", "vfs_write_size_q3"]
BIO_KEYS = ["bio_reads", "bio_read_bytes", "bio_random_read_pct", "bio_sequential_read_pct",
            "bio_writes", "bio_write_bytes"]
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


def weighted_quantile(values, counts, q: float) -> float:
    """The ``q`` quantile of ``values`` each repeated ``counts`` times, exactly as
    ``numpy.quantile`` (linear interpolation) on the expanded list; 0.0 when empty."""
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=np.int64)
    keep = c > 0
    v, c = v[keep], c[keep]
    n = int(c.sum())
    if n == 0:
        return 0.0
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(c[order])
    h = (n - 1) * q
    lo = int(math.floor(h))
    at = lambda k: v[int(np.searchsorted(cum, k + 1))]  # noqa: E731 - value of rank k (0-based)
    x = at(lo)
    return float(x + (h - lo) * (at(min(lo + 1, n - 1)) - x)) if h > lo else float(x)


_KINDS = {**{op: "read" for op in VFS_READS}, **{op: "write" for op in VFS_WRITES}}


def counts_of(trace: Trace | pd.DataFrame) -> pd.DataFrame:
    """The calls of a trace counted per (op, path, size, error), with how many were
    sequential (Listing A.1's rule on offsets, per process, file and read|write; a call with
    an unknown offset is not sequential). A ``vector``-mode trace has them already
    (counted in the kernel); a ``timeline`` trace's rows are counted here."""
    if isinstance(trace, Trace):
        if trace.counts is not None:
            return conform_counts(trace.counts)
        ev = trace.events
    else:
        ev = trace
    v = ev[(ev["layer"] == "vfs") & ev["op"].isin([*VFS_READS, *VFS_WRITES, *COPY_IN, *COPY_OUT])]
    if not len(v):
        return conform_counts(None)
    v = v.sort_values("timestamp", kind="stable").assign(
        kind=v["op"].map(_KINDS).fillna("copy"), sequential=0, calls=1)
    ok = (v["error"] == 0) & v["kind"].isin(["read", "write"])
    s = v[ok]
    end = (s["offset"] + s["size"]).groupby([s["pid"], s["path"].fillna(""), s["kind"]]).shift(1)
    v.loc[s.index, "sequential"] = (s["offset"].notna() & (s["offset"] == end)).astype(int)
    v = v.assign(path=v["path"].astype(object).where(v["path"].notna(), None),
                 size=v["size"].where(v["error"] == 0))
    g = v.groupby(["op", "path", "size", "error"], dropna=False, sort=True)[["calls", "sequential"]].sum()
    return conform_counts(g.reset_index())


def _select(counts: pd.DataFrame, ops, spec) -> pd.DataFrame:
    c = counts[counts["op"].isin(list(ops)) & (counts["error"] == 0)]
    return c[file_filter(c["path"], spec)]


def _vfs_components(c: pd.DataFrame, prefix: str, files_key: str) -> dict[str, float]:
    return {f"vfs_{prefix}s": float(c["calls"].sum()),
            f"vfs_{prefix}_bytes": float((c["size"] * c["calls"]).sum()),
            files_key: float(c["path"].nunique()),
            f"vfs_{prefix}_size_q1": weighted_quantile(c["size"], c["calls"], .25),
            f"vfs_{prefix}_size_median": weighted_quantile(c["size"], c["calls"], .5),
            f"vfs_{prefix}_size_q3": weighted_quantile(c["size"], c["calls"], .75)}


# with no filter, shared mappings of files here are caches of the system (glibc's gconv cache,
# the Python environment's files), not a workload's data
SYSTEM_PREFIXES = tuple(dict.fromkeys(
    ["/usr/", "/lib/", "/lib64/", "/lib32/", "/etc/", "/var/cache/", "/var/lib/",
     sys.prefix.rstrip("/") + "/", sys.base_prefix.rstrip("/") + "/"]))


def mapped(trace: Trace, spec, write: bool = False) -> list[str]:
    """Files matching ``spec`` that the traced processes memory-mapped (read: any mapping;
    ``write``: shared and writable), programs and libraries (executable mappings) left out;
    with ``spec`` None only shared mappings of files outside :data:`SYSTEM_PREFIXES` count
    (see the module docstring)."""
    files = trace.meta.get("mapped_files") or {} if isinstance(trace, Trace) else {}
    if not files:
        return []
    paths = pd.Series(list(files), dtype=object)
    keep = file_filter(paths, spec)
    out = []
    for p, k in zip(paths, keep):
        d = files[p]
        if not k or d.get("exec"):
            continue
        if write and not d.get("shared_write"):
            continue
        if spec is None and (not d.get("shared") or p.startswith(SYSTEM_PREFIXES)):
            continue
        out.append(p)
    return sorted(out)


def _names(paths: list[str], n: int = 3) -> str:
    short = ", ".join(os.path.basename(p) for p in paths[:n])
    return short + (f" and {len(paths) - n} more" if len(paths) > n else "")


def not_measured(trace: Trace | pd.DataFrame, data=None, checkpoint=None, devices=None,
                 block_files=None) -> dict[str, str]:
    """Why each component of :func:`characteristic_vector` that is NaN is not measured
    (component key -> reason, one sentence); {} when everything was measured."""
    if isinstance(trace, pd.DataFrame):
        return {}
    meta = trace.meta
    backend = meta.get("backend", "events")
    out: dict[str, str] = {}
    if backend == "proc":
        why = ("the /proc back end has no per-call events (counts, sizes and files need bpftrace "
               "or strace); its amounts are the process tree's /proc/<pid>/io totals")
        for k in VFS_READ_KEYS[2:] + VFS_WRITE_KEYS[2:] + ["vfs_reads", "vfs_writes"]:
            out[k] = why
        for k in BIO_KEYS:
            if k not in ("bio_read_bytes", "bio_write_bytes"):
                out[k] = why
    elif not bool(meta.get("block_traced", backend in ("bpftrace", "events"))):
        why = meta.get("why_no_block") or "the block layer was not traced"
        if backend in ("strace", "dftracer"):
            why = f"{backend} sees {'system' if backend == 'strace' else 'libc'} calls only, not the block layer"
        for k in BIO_KEYS + ["bio_vfs_read_pct"]:
            out[k] = why
    lost = int(meta.get("agg_lost_calls") or 0)  # traces from before issue 70 counted them
    if lost or meta.get("agg_full"):
        why = ("the in-kernel aggregation map was full: calls past it were not counted"
               + (f" ({lost} call(s) not attributed to a file)" if lost else "")
               + " (trace again with a larger max_keys)")
        for k in VFS_READ_KEYS + VFS_WRITE_KEYS + ["bio_vfs_read_pct"]:
            out.setdefault(k, why)
    m = mapped(trace, data)
    if m:
        why = (f"data file(s) {_names(m)} memory-mapped: reads through a mapping are page faults, "
               f"not read calls (block reads are still counted)")
        for k in VFS_READ_KEYS + ["bio_vfs_read_pct"]:
            out.setdefault(k, why)
    m = mapped(trace, checkpoint, write=True)
    if m:
        why = (f"checkpoint file(s) {_names(m)} memory-mapped shared and writable: writes through "
               f"a mapping are not write calls")
        for k in VFS_WRITE_KEYS:
            out.setdefault(k, why)
    return out


def characteristic_vector(trace: Trace | pd.DataFrame, data=None, checkpoint=None, devices=None,
                          block_files=None) -> dict[str, float]:
    """Table 4.2's 19 components (see :data:`COMPONENTS`) of ``trace``.

    A component the trace cannot give is NaN ("not measured"; :func:`not_measured` says why):
    the block ones for an strace trace, everything but the amounts for a /proc-only trace
    (its amounts: the process tree's ``rchar``/``wchar`` and ``read_bytes``/``write_bytes``
    from ``/proc/<pid>/io``, exact for a traced command, sampled otherwise, never filtered by
    file: only a rough stand-in), the VFS read components when a data file was memory-mapped.

    ``block_files``: files whose on-disk extents the block requests must touch (a narrower
    filter than the thesis's device filter, for a shared machine; needs the files to still be
    where they were when traced).
    """
    if isinstance(trace, pd.DataFrame):
        trace = Trace(trace, pd.DataFrame(), {"backend": "events", "block_traced": True})
    ev = trace.events
    backend = trace.meta.get("backend", "events")
    has_vfs = backend in ("bpftrace", "strace", "dftracer", "events")
    has_block = bool(trace.meta.get("block_traced", backend in ("bpftrace", "events")))
    nan = float("nan")
    v: dict[str, float] = {k: nan for k in KEYS}
    if has_vfs:
        c = counts_of(trace)
        v.update(_vfs_components(_select(c, VFS_READS, data), "read", "unique_files_read"))
        v.update(_vfs_components(_select(c, VFS_WRITES, checkpoint), "write", "unique_files_written"))
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
    elif not has_vfs:  # /proc only: the amounts are all there is
        tot = proc_totals(trace)
        v["bio_read_bytes"] = tot.get("bio_read_bytes", nan)
        v["bio_write_bytes"] = tot.get("bio_write_bytes", nan)
        v["vfs_read_bytes"] = tot.get("vfs_read_bytes", nan)
        v["vfs_write_bytes"] = tot.get("vfs_write_bytes", nan)
    for k in not_measured(trace, data, checkpoint, devices, block_files):
        v[k] = nan
    vr, brd = v["vfs_read_bytes"], v["bio_read_bytes"]
    v["bio_vfs_read_pct"] = 100.0 * brd / vr if vr and vr == vr and brd == brd else (0.0 if vr == 0 else nan)
    return v


def proc_totals(trace: Trace) -> dict[str, float]:
    """The /proc back end's amounts: exact ``/proc/<pid>/io`` totals of a traced command's tree
    when the tracer read them (``meta['proc_io_totals']``), else the sampler's sum."""
    t = trace.meta.get("proc_io_totals") or {}
    if t:
        return {"vfs_read_bytes": float(t.get("rchar", "nan")), "vfs_write_bytes": float(t.get("wchar", "nan")),
                "bio_read_bytes": float(t.get("read_bytes", "nan")),
                "bio_write_bytes": float(t.get("write_bytes", "nan"))}
    return proc_backend.totals(trace.samples)


def describe(trace: Trace, data=None, checkpoint=None, devices=None, block_files=None) -> dict[str, float]:
    """The vector plus what Table 4.2 leaves out: VFS random/sequential read percentages
    (``vfs_random_read_pct``, ``vfs_sequential_read_pct``, from offsets; calls with an unknown
    offset in ``vfs_reads_offset_unknown``), block-read counts of Listing A.1
    (``bio_random_reads``, ``bio_sequential_reads``), the copies (``copy_reads`` and
    ``copy_read_bytes`` out of data files, ``copy_writes``/``copy_write_bytes`` into checkpoint
    files: ``sendfile``, ``copy_file_range``, ``splice``) and ``mapped_data_files`` (data files
    read through ``mmap``). Every value a number."""
    out = characteristic_vector(trace, data, checkpoint, devices, block_files)
    nan = float("nan")
    if trace.mode == "vector" and trace.counts is not None:
        r = _select(counts_of(trace), VFS_READS, data)
        n = int(r["calls"].sum())
        seq = int(r["sequential"].sum())
        rnd, unk = n - seq, 0
        if not trace.meta.get("vfs_sequential_counted", True):  # not counted in the kernel
            rnd, seq, unk = 0, 0, n
    else:
        rnd, seq, unk = vfs_sequentiality(vfs_reads(trace.events, data))
    n = rnd + seq
    out["vfs_random_read_pct"] = 100.0 * rnd / n if n else nan
    out["vfs_sequential_read_pct"] = 100.0 * seq / n if n else nan
    out["vfs_reads_offset_unknown"] = float(unk)
    if math.isnan(out["vfs_reads"]):  # not measured (proc back end, mapped data files)
        out["vfs_random_read_pct"] = out["vfs_sequential_read_pct"] = nan
    br = block_rows(trace.events, "read", devices, file_sectors(block_files) if block_files else None)
    brnd, bseq = num_ranseq_accesses(br)
    out["bio_random_reads"], out["bio_sequential_reads"] = float(brnd), float(bseq)
    has_calls = trace.backend in ("bpftrace", "strace", "dftracer", "events")
    c = counts_of(trace) if has_calls else None
    for key, ops, spec in (("copy_read", COPY_IN, data), ("copy_write", COPY_OUT, checkpoint)):
        if c is None:
            out[f"{key}s"] = out[f"{key}_bytes"] = nan
            continue
        s = _select(c, ops, spec)
        out[f"{key}s"] = float(s["calls"].sum())
        out[f"{key}_bytes"] = float((s["size"] * s["calls"]).sum())
    out["mapped_data_files"] = float(len(mapped(trace, data)))
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
