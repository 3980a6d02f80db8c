"""From raw system calls to schema rows: file-descriptor -> path, and file offsets.

Both event back ends give, per call, the pid, the descriptor and the return value. Walking the
calls in time order with a per-process table (``openat`` adds, ``close`` removes, ``fork`` copies
the parent's table to the child) names the file of every ``read``/``write``; a per-descriptor
position (0 after ``openat``, advanced by each ``read``/``write``/``readv``/``writev``, set by
``lseek``'s return value) gives the offset of the calls that have none (``pread64``/``pwrite64``
carry theirs). Descriptors opened before tracing began are looked up in ``initial`` (or
``/proc/<pid>/fd`` while the process lives); their offset stays unknown (NaN) until an ``lseek``.
"""

from __future__ import annotations

import os

import pandas as pd

from .schema import conform

AT_FDCWD = -100
OFFSET_OPS = {"read", "readv", "write", "writev"}
IO_OPS = {"read", "pread64", "readv", "write", "pwrite64", "writev"}


def _proc_fd(pid: int, fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


def fd_table(pid: int) -> dict[int, str]:
    """The open descriptors of a live process (``/proc/<pid>/fd``), as a snapshot."""
    out = {}
    try:
        for e in os.scandir(f"/proc/{pid}/fd"):
            try:
                out[int(e.name)] = os.readlink(e.path)
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return out


def resolve(vfs: pd.DataFrame, forks: list[tuple] = (), initial: dict[int, dict[int, str]] | None = None,
            cwd: str | None = None, t0_ns: int | None = None) -> pd.DataFrame:
    """Schema rows (layer ``vfs``) from raw calls (see the module docstring).

    ``vfs`` columns: ``timestamp_ns, pid, tid, comm, op, fd, ret, latency_s`` and ``pos`` (-1 or
    the explicit offset); optionally ``path`` (strace's ``-y`` already names it) and, for openat,
    ``filename``/``dfd``.
    """
    if vfs is None or not len(vfs):
        return conform(pd.DataFrame())
    initial = {int(k): dict(v) for k, v in (initial or {}).items()}
    cwd = cwd or os.getcwd()
    tables: dict[int, dict[int, str]] = {}
    pos: dict[tuple[int, int], float] = {}
    events = vfs.sort_values("timestamp_ns", kind="stable").to_dict("records")
    forks = sorted(forks)
    fi = 0
    rows = []
    for e in events:
        while fi < len(forks) and forks[fi][0] <= e["timestamp_ns"]:
            _, parent, child = forks[fi]
            tables[child] = dict(tables.get(parent, initial.get(parent, {})))
            for (p, fd), v in list(pos.items()):
                if p == parent:
                    pos[(child, fd)] = v
            fi += 1
        pid, fd, op, ret = int(e["pid"]), int(e["fd"]), e["op"], int(e["ret"])
        table = tables.setdefault(pid, dict(initial.get(pid, {})))
        path = e.get("path") if isinstance(e.get("path"), str) and e.get("path") else None
        offset = float("nan")
        if op == "openat":
            if ret >= 0:
                if path is None:
                    name = e.get("filename") or ""
                    if name and not name.startswith("/"):
                        dfd = int(e.get("dfd", AT_FDCWD))
                        base = cwd if dfd == AT_FDCWD else table.get(dfd, cwd)
                        name = os.path.normpath(os.path.join(base, name))
                    path = name
                table[ret] = path
                pos[(pid, ret)] = 0.0
            fd = ret
        elif op == "close":
            path = path or table.get(fd)
            table.pop(fd, None)
            pos.pop((pid, fd), None)
        else:
            if path is None:
                path = table.get(fd)
                if path is None:
                    path = _proc_fd(pid, fd)
                    if path is not None:
                        table[fd] = path
            else:
                table.setdefault(fd, path)
            if op == "lseek":
                if ret >= 0:
                    pos[(pid, fd)] = float(ret)
            elif op in OFFSET_OPS:
                offset = pos.get((pid, fd), float("nan"))
                if ret > 0 and (pid, fd) in pos:
                    pos[(pid, fd)] = offset + ret
            elif op in ("pread64", "pwrite64"):
                offset = float(e["pos"])
        size = float(ret) if op in IO_OPS and ret >= 0 else float("nan") if op in IO_OPS else float("nan")
        rows.append({"timestamp_ns": e["timestamp_ns"], "pid": pid, "tid": int(e["tid"]),
                     "comm": e.get("comm", ""), "layer": "vfs", "op": op, "path": path, "fd": fd,
                     "offset": offset, "size": size, "latency_s": e["latency_s"],
                     "error": ret if ret < 0 else 0})
    return finish(pd.DataFrame(rows), t0_ns)


def finish(df: pd.DataFrame, t0_ns: int | None = None) -> pd.DataFrame:
    """Add ``timestamp`` (UTC) and ``t_s`` from ``timestamp_ns`` and conform to the schema."""
    if not len(df):
        return conform(df)
    df = df.sort_values("timestamp_ns", kind="stable")
    t0 = t0_ns if t0_ns is not None else int(df["timestamp_ns"].min())
    df["timestamp"] = pd.to_datetime(df["timestamp_ns"], unit="ns", utc=True)
    df["t_s"] = (df["timestamp_ns"] - t0) / 1e9
    return conform(df)

