"""From raw system calls to schema rows: which file each call touched, and at which offset.

Two ways, depending on what the back end saw:

- **From the kernel** (:class:`KernelNames`, bpftrace with BTF): each call carries the inode
  (device, number, generation) of the ``struct file`` it operated on, and the first call on an
  inode printed the names of the file and of its directories up to the file system's root.
  :meth:`KernelNames.path` puts the path together and prefixes the mount point from the mount
  table (``/proc/<pid>/mountinfo``). No descriptor bookkeeping: ``dup``, inherited and
  redirected descriptors name the right file by construction.
- **From descriptor numbers** (:func:`resolve`; strace, and bpftrace without BTF): a walk over
  the calls in time order with a per-process descriptor table. Each descriptor points to an
  *open file description* (what ``openat`` creates): ``dup``/``dup2``/``dup3`` and
  ``fcntl(F_DUPFD, F_DUPFD_CLOEXEC)`` make the new descriptor point to the same one, ``fork``
  copies the parent's table (the child shares the descriptions), ``close`` drops the
  descriptor, and ``exec`` keeps the table. The file position belongs to the description
  (shared by duplicates and by parent and child, as in the kernel): 0 after ``openat``,
  advanced by each ``read``/``write``/``readv``/``writev``, set by ``lseek``'s return value;
  ``pread64``/``pwrite64``/``preadv``/``pwritev`` carry their own offset. When the back end
  already names the file (strace's ``-y``), that name wins and the table only supplies
  offsets. Descriptors opened before tracing began come from ``initial`` (or
  ``/proc/<pid>/fd`` while the process lives); their offset stays unknown (NaN) until an
  ``lseek``.
"""

from __future__ import annotations

import os
import re

import pandas as pd

from .schema import COPY_IN, COPY_OUT, conform

AT_FDCWD = -100
OFFSET_OPS = {"read", "readv", "write", "writev"}
POS_OPS = {"pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2"}
IO_OPS = OFFSET_OPS | POS_OPS | set(COPY_IN) | set(COPY_OUT)
DUP_OPS = {"dup", "dup2", "dup3"}
F_DUPFD, F_DUPFD_CLOEXEC = 0, 1030
S_IFMT, S_IFIFO, S_IFSOCK, S_IFREG = 0o170000, 0o010000, 0o140000, 0o100000


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


def read_mountinfo(pid: int | str = "self") -> str:
    try:
        with open(f"/proc/{pid}/mountinfo") as f:
            return f.read()
    except OSError:
        return ""


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


class KernelNames:
    """Paths of the files a kernel-naming trace saw, from its ``P`` records.

    ``add(dev, ino, gen, parent_ino, parent_gen, mode, name)`` records one dentry (dev in the
    kernel's encoding, major << 20 | minor); a dentry that is its own parent is the root of its
    file system. ``path(dev, ino, gen)`` is the absolute path: the names up to the root, under
    the mount point of that file system in ``mountinfo`` (the mount whose root is the longest
    prefix; the topmost of equals). Pipes and sockets are named as ``/proc/<pid>/fd`` names
    them (``pipe:[ino]``, ``socket:[ino]``); None when the names are incomplete.
    """

    def __init__(self, mountinfo: str | None = None):
        self._n: dict[tuple[int, int, int], tuple[int, int, int, str]] = {}
        self._mounts: dict[int, list[tuple[str, str]]] = {}
        self._cache: dict[tuple[int, int, int], str | None] = {}
        for line in (read_mountinfo() if mountinfo is None else mountinfo).splitlines():
            f = line.split()
            if len(f) < 5:
                continue
            try:
                major, minor = map(int, f[2].split(":"))
            except ValueError:
                continue
            self._mounts.setdefault((major << 20) | minor, []).append((_unescape(f[3]), _unescape(f[4])))

    def add(self, dev: int, ino: int, gen: int, pino: int, pgen: int, mode: int, name: str) -> None:
        self._n[(dev, ino, gen)] = (pino, pgen, mode, name)
        self._cache.clear()

    def __len__(self) -> int:
        return len(self._n)

    def path(self, dev: int, ino: int, gen: int) -> str | None:
        key = (int(dev), int(ino), int(gen))
        if key not in self._cache:
            self._cache[key] = self._path(key)
        return self._cache[key]

    def _path(self, key) -> str | None:
        first = self._n.get(key)
        if first is None:
            return None
        kind = first[2] & S_IFMT
        if kind in (S_IFIFO, S_IFSOCK) and key[0] not in self._mounts:
            return f"{'pipe' if kind == S_IFIFO else 'socket'}:[{key[1]}]"
        parts = []
        k = key
        for _ in range(4096):
            e = self._n.get(k)
            if e is None:
                return None
            pino, pgen, _, name = e
            if (pino, pgen) == (k[1], k[2]):  # the file system's root
                break
            parts.append(name)
            k = (k[0], pino, pgen)
        rel = "/" + "/".join(reversed(parts))
        mounts = self._mounts.get(key[0])
        if not mounts:  # not a mounted file system: an anonymous inode (eventfd, epoll, ...)
            return f"anon_inode:{first[3]}" if kind not in (S_IFREG, 0o040000) else None
        best = None
        for root, point in mounts:
            r = root.rstrip("/")
            if rel == r or rel.startswith(r + "/") or r == "":
                if best is None or len(r) >= len(best[0]):
                    best = (r, point)
        if best is None:
            return None
        rest = rel[len(best[0]):]
        return os.path.normpath(best[1].rstrip("/") + rest) if rest else best[1]


def resolve(vfs: pd.DataFrame, forks: list[tuple] = (), initial: dict[int, dict[int, str]] | None = None,
            cwd: str | None = None, t0_ns: int | None = None) -> pd.DataFrame:
    """Schema rows (layer ``vfs``) from raw calls (see the module docstring).

    ``vfs`` columns: ``timestamp_ns, pid, tid, comm, op, fd, ret, latency_s`` and ``pos`` (-1 or
    the explicit offset; for ``fcntl`` its command); optionally ``path`` (strace's ``-y``
    already names it) and, for openat, ``filename``/``dfd``. Rows of ``mmap`` keep their
    ``pos`` (the mapping's file offset) and ``length``.
    """
    if vfs is None or not len(vfs):
        return conform(pd.DataFrame())
    initial = {int(k): dict(v) for k, v in (initial or {}).items()}
    cwd = cwd or os.getcwd()
    tables: dict[int, dict[int, int]] = {}  # pid -> fd -> open file description
    ofd_path: dict[int, str | None] = {}
    ofd_pos: dict[int, float] = {}
    next_ofd = [0]

    def new_ofd(path, pos=float("nan")) -> int:
        next_ofd[0] += 1
        ofd_path[next_ofd[0]] = path
        ofd_pos[next_ofd[0]] = pos
        return next_ofd[0]

    def table_of(pid: int) -> dict[int, int]:
        if pid not in tables:
            tables[pid] = {fd: new_ofd(p) for fd, p in initial.get(pid, {}).items()}
        return tables[pid]

    events = vfs.sort_values("timestamp_ns", kind="stable").to_dict("records")
    forks = sorted(forks)
    fi = 0
    rows = []
    for e in events:
        while fi < len(forks) and forks[fi][0] <= e["timestamp_ns"]:
            _, parent, child = forks[fi]
            tables[child] = dict(table_of(parent))
            fi += 1
        pid, fd, op, ret = int(e["pid"]), int(e["fd"]), e["op"], int(e["ret"])
        table = table_of(pid)
        path = e.get("path") if isinstance(e.get("path"), str) and e.get("path") else None
        offset = float("nan")
        size = float("nan")
        if op == "openat":
            if ret >= 0:
                if path is None:
                    name = e.get("filename") or ""
                    if name and not name.startswith("/"):
                        dfd = int(e.get("dfd", AT_FDCWD))
                        base = cwd if dfd == AT_FDCWD else ofd_path.get(table.get(dfd), None) or cwd
                        name = os.path.normpath(os.path.join(base, name))
                    path = name
                table[ret] = new_ofd(path, 0.0)
            fd = ret
        elif op in DUP_OPS or (op == "fcntl" and int(e.get("pos", -1)) in (F_DUPFD, F_DUPFD_CLOEXEC)):
            o = table.get(fd)
            if o is None:
                o = new_ofd(path or _proc_fd(pid, fd))
                table[fd] = o
            path = path or ofd_path.get(o)
            if ret >= 0:
                table[ret] = o
        elif op == "close":
            o = table.pop(fd, None)
            path = path or (ofd_path.get(o) if o is not None else None)
        else:
            o = table.get(fd)
            if o is None:
                o = new_ofd(path or _proc_fd(pid, fd))
                table[fd] = o
            elif path is not None and ofd_path.get(o) is None:
                ofd_path[o] = path
            path = path or ofd_path.get(o)
            if op == "lseek":
                if ret >= 0:
                    ofd_pos[o] = float(ret)
            elif op in OFFSET_OPS:
                offset = ofd_pos.get(o, float("nan"))
                if ret > 0:
                    ofd_pos[o] = offset + ret
            elif op in POS_OPS or op == "mmap":
                p = int(e.get("pos", -1))
                if p >= 0:
                    offset = float(p)
                elif op in ("preadv2", "pwritev2"):  # offset -1: the current position
                    offset = ofd_pos.get(o, float("nan"))
                    if ret > 0:
                        ofd_pos[o] = offset + ret
            if op in IO_OPS and ret >= 0:
                size = float(ret)
            elif op == "mmap":
                size = float(e.get("length", float("nan")))
        rows.append({"timestamp_ns": e["timestamp_ns"], "pid": pid, "tid": int(e["tid"]),
                     "comm": e.get("comm", ""), "layer": "vfs", "op": op, "path": path, "fd": fd,
                     "offset": offset, "size": size, "latency_s": e.get("latency_s", float("nan")),
                     "error": ret if ret < 0 else 0})
    return finish(pd.DataFrame(rows), t0_ns)


PROT_WRITE, PROT_EXEC, MAP_SHARED = 2, 4, 1


def mapped_files(raw: pd.DataFrame, vfs: pd.DataFrame) -> dict[str, dict]:
    """Per file that was memory-mapped: ``{"mmaps": n, "shared": any MAP_SHARED,
    "shared_write": any shared mapping with PROT_WRITE, "exec": any PROT_EXEC}``, from the raw
    ``mmap`` rows (``prot``, ``flags``) and their resolved paths (the ``mmap`` rows of ``vfs``,
    in the same time order). A file with an executable mapping is a program or a library."""
    if raw is None or not len(raw) or "op" not in raw or "prot" not in raw:
        return {}
    r = raw[raw["op"] == "mmap"].sort_values("timestamp_ns", kind="stable")
    r = r[(r["ret"] >= 0) | (r["ret"] <= -4096)] if "ret" in r else r
    v = vfs[(vfs["op"] == "mmap") & (vfs["error"] == 0)] if len(vfs) else vfs
    paths = list(v["path"]) if len(v) == len(r) else list(r["path"]) if "path" in r else []
    out: dict[str, dict] = {}
    for path, prot, flags in zip(paths, r["prot"], r["flags"]):
        if not isinstance(path, str) or not path:
            continue
        d = out.setdefault(path, {"mmaps": 0, "shared": False, "shared_write": False, "exec": False})
        d["mmaps"] += 1
        shared = bool(int(flags) & MAP_SHARED)
        d["shared"] |= shared
        d["shared_write"] |= shared and bool(int(prot) & PROT_WRITE)
        d["exec"] |= bool(int(prot) & PROT_EXEC)
    return out


def kernel_rows(vfs: pd.DataFrame, t0_ns: int | None = None) -> pd.DataFrame:
    """Schema rows from calls already named by the kernel (``path``, and ``pos`` = the offset
    the call used, -1 when it has none)."""
    if vfs is None or not len(vfs):
        return conform(pd.DataFrame())
    df = vfs.copy()
    io = df["op"].isin(IO_OPS)
    df["size"] = df["ret"].where(io & (df["ret"] >= 0)).astype(float)
    if "length" in df:
        df.loc[df["op"] == "mmap", "size"] = df["length"]
    df["offset"] = df["pos"].where(df["pos"] >= 0).astype(float)
    df.loc[~(io | (df["op"] == "mmap")), "offset"] = float("nan")
    df["error"] = df["ret"].where((df["ret"] < 0) & (df["ret"] > -4096), 0)
    df["layer"] = "vfs"
    return finish(df, t0_ns)


def finish(df: pd.DataFrame, t0_ns: int | None = None) -> pd.DataFrame:
    """Add ``timestamp`` (UTC) and ``t_s`` from ``timestamp_ns`` and conform to the schema."""
    if not len(df):
        return conform(df)
    df = df.sort_values("timestamp_ns", kind="stable")
    t0 = t0_ns if t0_ns is not None else int(df["timestamp_ns"].min())
    df["timestamp"] = pd.to_datetime(df["timestamp_ns"], unit="ns", utc=True)
    df["t_s"] = (df["timestamp_ns"] - t0) / 1e9
    return conform(df)
