"""bpftrace's output parsed: one small parser per record the program of
:func:`experiments.trace.bpftrace_backend.script` prints (``V`` calls, ``P`` names, ``N`` open
paths, ``M`` mmaps, ``BI``/``B``/``BC`` block requests, ``F``/``E`` forks and execs, and after
``AGG`` the in-kernel maps), gathered into :class:`Parsed` tables by :func:`parse_output`.
Lines that match no record are counted (``unparsed``, with up to five examples), never
silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import resolve
from .bpftrace_backend import OPS, unpack_opseq

_MAP_LINE = re.compile(r"^@(\w+)\[([-\d, ]+)\]: (\d+)$")
_SCALAR_LINE = re.compile(r"^@(\w+): (\d+)$")
_INODE_LINE = re.compile(r"^@inode\[(\d+)\]: \((\d+), (\d+), (\d+)\)$")  # file number: inode
_IGNORED = ("Attaching ", "Lost ", "READY")


@dataclass
class Parsed:
    """What one bpftrace output file holds, parsed.

    ``vfs``: one row per call (timeline mode) with ``op, ts, latency_ns, pid, tid, fd, ret,
    pos`` and, with kernel file naming, ``path``; ``block``: one row per request; ``forks``:
    (wall ns, parent, child); ``counts``: the in-kernel aggregation (vector mode: ``op, path,
    size, error, calls, sequential``); ``mmaps``: one row per ``mmap`` of a file;
    ``totals``: the scalars printed beside the aggregation (vector mode: ``badregs``, calls
    whose saved registers did not check) and the entries of each printed map (``agg_entries``,
    ``inode_entries``: a map with ``max_keys`` of them was full);
    ``unparsed``: lines that matched no known record (``unparsed_examples``: the first five).
    """

    vfs: pd.DataFrame
    block: pd.DataFrame
    forks: list
    counts: pd.DataFrame = field(default_factory=pd.DataFrame)
    mmaps: pd.DataFrame = field(default_factory=pd.DataFrame)
    totals: dict = field(default_factory=dict)
    unparsed: int = 0
    unparsed_examples: list = field(default_factory=list)
    names: resolve.KernelNames | None = None


@dataclass
class _Lines:
    """What :func:`parse_output` gathers, line by line, before the tables are built."""

    comms: dict[int, str]
    kn: resolve.KernelNames
    vfs: list = field(default_factory=list)
    issues: list = field(default_factory=list)
    completes: list = field(default_factory=list)
    requeues: list = field(default_factory=list)
    forks: list = field(default_factory=list)
    mmaps: list = field(default_factory=list)
    aggs: list = field(default_factory=list)   # (file number, packed op/bytes/sequential, calls)
    files: dict = field(default_factory=dict)  # file number -> (dev, ino, gen)
    totals: dict = field(default_factory=dict)  # badregs, agg_entries, inode_entries
    names_of_tid: dict = field(default_factory=dict)  # tid -> file name of its pending openat
    in_maps: bool = False


def _call_line(acc: _Lines, parts: list[str]) -> None:
    """``V``: one call (timeline mode): op, start, latency, pid, tid, fd, file, ret, offset."""
    op, ts, lat, pid, tid, fd, dev, ino, gen, ret, pos = parts[1:12]
    op = OPS[int(op)]
    row = {"op": op, "ts": int(ts), "latency_ns": int(lat), "pid": int(pid),
           "tid": int(tid), "fd": int(fd), "dev": int(dev), "ino": int(ino),
           "gen": int(gen), "ret": int(ret), "pos": int(pos),
           "comm": acc.comms.get(int(pid), "")}
    if op == "openat" and row["dev"] == 0:  # descriptors: resolved later
        row["dfd"], row["flags"] = row["fd"], row["pos"]
        row["fd"], row["pos"] = row["ret"], -1
        row["filename"] = acc.names_of_tid.pop(row["tid"], "")
    acc.vfs.append(row)


def _name_line(acc: _Lines, parts: list[str]) -> None:
    """``P``: a file's or directory's name and its parent (kernel file naming)."""
    acc.kn.add(*map(int, parts[1:7]), parts[7] if len(parts) > 7 else "")


def _open_path_line(acc: _Lines, parts: list[str]) -> None:
    """``N``: the path a thread's pending ``openat`` passed (descriptor naming)."""
    acc.names_of_tid[int(parts[1])] = parts[2] if len(parts) > 2 else ""


def _mmap_line(acc: _Lines, parts: list[str]) -> None:
    """``M``: one ``mmap`` of a file."""
    ts, pid, tid, fd, dev, ino, gen, length, off, prot, flags, ret = map(int, parts[1:13])
    acc.mmaps.append({"ts": ts, "pid": pid, "tid": tid, "fd": fd, "dev": dev, "ino": ino,
                      "gen": gen, "length": length, "pos": off, "prot": prot, "flags": flags,
                      "ret": ret, "comm": acc.comms.get(pid, "")})


def _issue_line(acc: _Lines, parts: list[str]) -> None:
    """``BI``: a block request at issue (timeline mode), with its submitter and the issuer."""
    ts, dev, sector, nr, nbytes, rwbs, pid, ipid, tid = parts[1:10]
    comm = parts[10] if len(parts) > 10 else ""
    if pid != ipid:  # queued by another process than the one issuing it
        tid, comm = pid, acc.comms.get(int(pid), "")
    acc.issues.append({"ts": int(ts), "dev": int(dev), "sector": int(sector),
                       "nr_sector": int(nr), "bytes": int(nbytes), "rwbs": rwbs,
                       "pid": int(pid), "tid": int(tid), "comm": comm})


def _request_line(acc: _Lines, parts: list[str]) -> None:
    """``B``: a block request at issue (vector mode), with its submitter."""
    ts, dev, sector, nr, nbytes, rwbs, pid = parts[1:8]
    acc.issues.append({"ts": int(ts), "dev": int(dev), "sector": int(sector),
                       "nr_sector": int(nr), "bytes": int(nbytes), "rwbs": rwbs,
                       "pid": int(pid), "tid": int(pid), "comm": acc.comms.get(int(pid), "")})


def _complete_line(acc: _Lines, parts: list[str]) -> None:
    """``BC``: a block request's completion (timeline mode)."""
    ts, dev, sector, _nr, _rwbs = parts[1:6]
    acc.completes.append((int(ts), int(dev), int(sector)))


def _requeue_line(acc: _Lines, parts: list[str]) -> None:
    """``BQ``: a block request put back on the queue; its next issue is not a new request."""
    ts, dev, sector = parts[1:4]
    acc.requeues.append((int(ts), int(dev), int(sector)))


def _fork_line(acc: _Lines, parts: list[str]) -> None:
    """``F``: a fork in the tree (time, parent, child, parent's name)."""
    acc.forks.append((int(parts[1]), int(parts[2]), int(parts[3])))
    acc.comms.setdefault(int(parts[3]), parts[4] if len(parts) > 4 else acc.comms.get(int(parts[2]), ""))


def _exec_line(acc: _Lines, parts: list[str]) -> None:
    """``E``: an exec in the tree: the process's new name."""
    acc.comms[int(parts[2])] = parts[3] if len(parts) > 3 else ""


def _maps_start(acc: _Lines, parts: list[str]) -> None:
    """``AGG``: the in-kernel maps follow (vector mode's END)."""
    acc.in_maps = True


def _map_line(acc: _Lines, line: str) -> None:
    """A printed map entry after ``AGG``: ``@agg[file number, packed]: calls`` (the packed key:
    :func:`.bpftrace_backend.unpack_opseq`), ``@inode[file number]: (dev, ino, gen)``, or the
    scalar ``@badregs``; anything else does not parse."""
    m = _MAP_LINE.match(line)
    ino = _INODE_LINE.match(line)
    sc = _SCALAR_LINE.match(line)
    key = [int(x) for x in m.group(2).split(",")] if m else []
    if m and m.group(1) == "agg" and len(key) == 2:
        acc.aggs.append((*key, int(m.group(3))))
        acc.totals["agg_entries"] = acc.totals.get("agg_entries", 0) + 1
    elif ino:
        acc.files[int(ino.group(1))] = tuple(int(x) for x in ino.group(2, 3, 4))
        acc.totals["inode_entries"] = acc.totals.get("inode_entries", 0) + 1
    elif sc and sc.group(1) == "badregs":
        # the explicit print comes first; bpftrace prints a cleared scalar again (as 0) when
        # it exits
        acc.totals.setdefault(sc.group(1), int(sc.group(2)))
    else:
        raise ValueError(line)


# the record each line starts with -> its parser (the records the program of :func:`script` prints)
_PARSERS = {"V": _call_line, "P": _name_line, "N": _open_path_line, "M": _mmap_line, "BI": _issue_line,
            "B": _request_line, "BC": _complete_line, "BQ": _requeue_line, "F": _fork_line, "E": _exec_line, "AGG": _maps_start}


def parse_output(out_file: Path, offset_ns: int, comms: dict[int, str] | None = None,
                 mountinfo: str | None = None) -> Parsed:
    """Parse bpftrace's output (either mode, either file naming); timestamps mapped to wall
    clock with ``offset_ns``; paths put together from the ``P`` lines and ``mountinfo``
    (the text of ``/proc/<pid>/mountinfo``, default this process's). Each line goes to the
    parser of its record (:data:`_PARSERS`); a line no parser takes is counted as unparsed."""
    acc = _Lines(dict(comms or {}), resolve.KernelNames(mountinfo))
    unparsed, examples = 0, []
    with open(out_file, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            parts = line.split("\t")
            try:
                if parts[0] in _PARSERS:
                    _PARSERS[parts[0]](acc, parts)
                elif acc.in_maps and line.startswith("@"):
                    _map_line(acc, line)
                elif line.strip() and not line.startswith(_IGNORED):
                    raise ValueError(line)
            except (ValueError, IndexError, KeyError):
                unparsed += 1  # e.g. a line cut by a lost event or a signal
                if len(examples) < 5:
                    examples.append(line[:200])
    return _tables(acc, offset_ns, unparsed, examples)


def _tables(acc: _Lines, offset_ns: int, unparsed: int, examples: list[str]) -> Parsed:
    """:class:`Parsed` from the gathered lines: wall-clock times, paths from the names."""
    kn = acc.kn

    def paths(df):
        return [kn.path(d, i, g) if i else None for d, i, g in zip(df["dev"], df["ino"], df["gen"])]

    vdf = pd.DataFrame(acc.vfs)
    if len(vdf):
        vdf["timestamp_ns"] = vdf["ts"] + offset_ns
        vdf["latency_s"] = vdf["latency_ns"] / 1e9
        if (vdf["dev"] != 0).any() or (vdf["ino"] != 0).any():
            vdf["path"] = paths(vdf)
    mdf = pd.DataFrame(acc.mmaps)
    if len(mdf):
        mdf["op"], mdf["latency_ns"], mdf["latency_s"] = "mmap", 0, float("nan")
        mdf["timestamp_ns"] = mdf["ts"] + offset_ns
        mdf["path"] = paths(mdf)
    rows = []
    for fid, packed, calls in acc.aggs:  # the file number back to its inode (0: no file)
        op, ret, seq = unpack_opseq(packed)
        rows.append((op, *acc.files.get(fid, (0, 0, 0)), ret, seq, calls))
    counts = pd.DataFrame(rows, columns=["op", "dev", "ino", "gen", "ret", "sequential", "calls"])
    if len(counts):
        counts["op"] = counts["op"].map(OPS)
        counts["path"] = paths(counts)
    bdf = _block_rows(_without_reissues(acc.issues, acc.requeues), acc.completes, offset_ns)
    forks = [(ts + offset_ns, parent, child) for ts, parent, child in acc.forks]
    return Parsed(vdf, bdf, forks, counts, mdf, acc.totals, unparsed, examples, kn)


def _dev_names() -> dict[int, str]:
    out = {}
    for d in Path("/sys/class/block").glob("*"):
        try:
            major, minor = map(int, (d / "dev").read_text().split(":"))
            out[(major << 20) | minor] = d.name
        except (OSError, ValueError):
            continue
    return out


def _without_reissues(issues: list[dict], requeues: list[tuple]) -> list[dict]:
    """``issues`` less the second issue of each requeued request: for each requeue (time,
    device, sector), the first later issue of the same (device, sector). The request keeps
    its first issue (its submitter, and its latency counted from there)."""
    if not requeues:
        return issues
    later: dict[tuple[int, int], list[int]] = {}
    for i in sorted(range(len(issues)), key=lambda i: issues[i]["ts"]):
        later.setdefault((issues[i]["dev"], issues[i]["sector"]), []).append(i)
    drop = set()
    for ts, dev, sector in sorted(requeues):
        for i in later.get((dev, sector), []):
            if issues[i]["ts"] > ts and i not in drop:
                drop.add(i)
                break
    return [r for i, r in enumerate(issues) if i not in drop]


def _block_rows(issues: list[dict], completes: list[tuple], offset_ns: int) -> pd.DataFrame:
    """One row per request: issue matched to the first later completion of the same
    (device, sector); pid = the process that asked for the request (found in the kernel at
    ``block_getrq``), else the one current at issue."""
    if not issues:
        return pd.DataFrame()
    issues = sorted(issues, key=lambda r: r["ts"])
    pending: dict[tuple[int, int], list[int]] = {}
    done = sorted(completes)
    names = _dev_names()
    ii = sorted(range(len(issues)), key=lambda i: issues[i]["ts"])
    lat = [float("nan")] * len(issues)
    # merge the two time-ordered streams
    ci = 0
    for i in ii:
        t = issues[i]["ts"]
        while ci < len(done) and done[ci][0] < t:
            key = (done[ci][1], done[ci][2])
            if pending.get(key):
                j = pending[key].pop(0)
                lat[j] = (done[ci][0] - issues[j]["ts"]) / 1e9
            ci += 1
        pending.setdefault((issues[i]["dev"], issues[i]["sector"]), []).append(i)
    for ts, dev, sector in done[ci:]:
        if pending.get((dev, sector)):
            j = pending[(dev, sector)].pop(0)
            lat[j] = (ts - issues[j]["ts"]) / 1e9
    rows = []
    for i, r in enumerate(issues):
        rw = r["rwbs"]
        op = "read" if "R" in rw else "write" if "W" in rw else "other"
        size = r["bytes"] or r["nr_sector"] * 512
        rows.append({"timestamp_ns": r["ts"] + offset_ns, "pid": r["pid"], "tid": r["tid"],
                     "comm": r["comm"], "layer": "block", "op": op, "size": float(size),
                     "latency_s": lat[i], "device": names.get(r["dev"], str(r["dev"])),
                     "sector": float(r["sector"]), "fd": -1, "rwbs": rw})
    return pd.DataFrame(rows)
