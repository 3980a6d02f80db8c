"""strace back end (``strace -f -T -ttt -y``): the VFS layer only, when eBPF is not allowed.

``-f`` follows every child and thread, ``-T`` gives each call's duration, ``-ttt`` its wall-clock
start (``-tt`` with the date, as epoch seconds, so a trace across midnight stays ordered), ``-y``
names the file behind each descriptor (strace reads it from ``/proc/<pid>/fd`` at the call, so
duplicated, inherited and redirected descriptors are named right), ``-s 0`` keeps buffers out
of the log. Traced: the read and write family (``preadv``/``pwritev`` and their ``2`` forms
included), the copies ``sendfile``, ``copy_file_range``, ``splice`` (two rows each, source and
destination), ``mmap`` of a file (with its protection and flags), and ``openat``, ``close``,
``lseek``, ``dup*``, ``fcntl`` for the offsets (:mod:`.resolve`). ``clone``/``fork``/``execve``
are traced too, to map threads to their process (strace prints thread ids) and to name
processes. ptrace stops the traced threads at every call, so this back end costs far more than
bpftrace (see ``python -m experiments.trace.bench``); no block-layer view.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..host.procs import interrupt

IO_SYSCALLS = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev", "pwritev",
               "pwritev2", "sendfile", "copy_file_range", "splice", "mmap", "openat", "close", "lseek",
               "dup", "dup2", "dup3", "fcntl")
COPIES = {"sendfile": (1, 0), "copy_file_range": (0, 2), "splice": (0, 2)}  # (source, destination) argument
_PROT = {"PROT_READ": 1, "PROT_WRITE": 2, "PROT_EXEC": 4}
_MAPF = {"MAP_SHARED": 1, "MAP_PRIVATE": 2, "MAP_SHARED_VALIDATE": 3, "MAP_ANONYMOUS": 0x20}
PROC_SYSCALLS = ("clone", "clone3", "fork", "vfork", "execve")
FLAGS = ["-f", "-T", "-ttt", "-y", "-s", "0", "-qq",
         "-e", "trace=" + ",".join(IO_SYSCALLS + PROC_SYSCALLS)]

_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+|\?|0x[0-9a-fA-F]+)(<.*?>)?(?:\s+(\w+)\s+\(.*?\))?(?:\s+<(\d+\.\d+)>)?\s*$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
_FDPATH = re.compile(r"^\s*(-?\d+)<(.*?)>")
_ERRNO = {"ENOENT": 2, "EBADF": 9, "EAGAIN": 11, "EINTR": 4, "EACCES": 13, "EINVAL": 22,
          "ESPIPE": 29, "EISDIR": 21}


@lru_cache(maxsize=None)
def available() -> tuple[bool, str]:
    """(usable, why not): strace installed and ptrace allowed (tried on ``true``)."""
    exe = shutil.which("strace")
    if not exe:
        return False, "strace is not installed"
    true = shutil.which("true") or "/bin/true"
    try:
        p = subprocess.run([exe, "-qq", "-e", "trace=none", true], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False, "strace did not finish on `true` within 30 s"
    if p.returncode != 0:
        return False, f"strace cannot trace here (ptrace not permitted?): {p.stderr.strip()[-200:]}"
    return True, ""


class StraceSession:
    """strace writing ``out_file``: either running ``cmd`` (:meth:`run_command`) or attached to a
    live process and its future children (:meth:`attach`)."""

    def __init__(self, out_file: Path):
        self.out_file = Path(out_file)
        self.err_file = self.out_file.with_suffix(".err")
        self.proc: subprocess.Popen | None = None

    def command(self, cmd: list[str]) -> list[str]:
        return ["strace", *FLAGS, "-o", str(self.out_file), "--", *cmd]

    def attach(self, pid: int, timeout_s: float = 30.0, follow=()) -> None:
        """Attach to ``pid`` and the pids of ``follow`` (their children from now on followed)."""
        self._err = open(self.err_file, "w")
        pids = [a for p in (pid, *follow) for a in ("-p", str(p))]
        self.proc = subprocess.Popen(["strace", *[f for f in FLAGS if f != "-qq"], "-o", str(self.out_file),
                                      *pids], stderr=self._err, stdout=subprocess.DEVNULL,
                                     start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError("strace could not attach: " + self.err_file.read_text().strip()[-200:])
            if "attached" in self.err_file.read_text():
                time.sleep(0.05)
                return
            time.sleep(0.02)
        raise RuntimeError(f"strace did not attach within {timeout_s:.0f} s")

    def stop(self, root_exited: bool = False) -> None:
        """Detach (SIGINT). When the traced process has exited, strace ends by itself once it
        has written the last calls: give it that chance first."""
        if self.proc and root_exited:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc and self.proc.poll() is None:
            interrupt(self.proc)  # SIGINT detaches from the traced threads
        if hasattr(self, "_err") and not self._err.closed:
            self._err.close()


def _comm_of(exe_args: str) -> str:
    m = re.match(r'\s*"([^"]*)"', exe_args)
    return os.path.basename(m.group(1))[:15] if m else ""


def _split_args(args: str) -> list[str]:
    """Top-level comma-separated arguments (brackets, braces and quotes kept together)."""
    out, depth, cur, quote = [], 0, [], False
    for ch in args:
        if quote:
            cur.append(ch)
            if ch == '"':
                quote = False
            continue
        if ch == '"':
            quote = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def _flags(text: str, names: dict[str, int]) -> int:
    v = 0
    for part in text.split("|"):
        part = part.strip()
        if part in names:
            v |= names[part]
        else:
            try:
                v |= int(part, 0)
            except ValueError:
                pass
    return v


def parse(out_file: Path, root_pid: int | None = None, root_comm: str = "") -> tuple[pd.DataFrame, list[tuple]]:
    """(raw vfs calls, forks) from an strace log: thread ids mapped to process ids, paths from
    ``-y``; feed to :func:`experiments.trace.resolve.resolve` for offsets."""
    tgid: dict[int, int] = {}
    comm: dict[int, str] = {}
    if root_pid is not None:
        tgid[root_pid] = root_pid
        comm[root_pid] = root_comm[:15]
    pending: dict[int, tuple[float, str]] = {}
    rows, forks = [], []
    with open(out_file, errors="replace") as f:
        for line in f:
            m = _LINE.match(line.rstrip("\n"))
            if not m:
                continue
            tid, ts, rest = int(m.group(1)), float(m.group(2)), m.group(3)
            if rest.startswith("+++") or rest.startswith("---"):
                continue
            if rest.endswith("<unfinished ...>"):
                pending[tid] = (ts, rest[: -len("<unfinished ...>")])
                continue
            r = _RESUMED.match(rest)
            if r:
                start = pending.pop(tid, None)
                if start is None:
                    continue
                ts, rest = start[0], start[1] + r.group(2)
            c = _CALL.match(rest)
            if not c:
                continue
            name, args, ret_s, ret_path, errname, lat = c.groups()
            ret = int(ret_s, 0) if ret_s not in ("?",) else -1
            if errname and ret == -1:
                ret = -_ERRNO.get(errname, 1)
            pid = tgid.setdefault(tid, tid)
            if name in PROC_SYSCALLS:
                if name == "execve" and ret == 0:
                    comm[pid] = _comm_of(args)
                elif name != "execve" and ret > 0:
                    thread = "CLONE_THREAD" in args
                    tgid[ret] = pid if thread else ret
                    comm.setdefault(ret, comm.get(pid, ""))
                    if not thread:
                        forks.append((int(ts * 1e9), pid, ret))
                continue
            if name in COPIES:  # two rows: the source and the destination, same bytes
                src, dst = COPIES[name]
                base = "sendfile" if name == "sendfile" else name
                plain = [a.strip() for a in _split_args(args)]
                for role, i in (("in", src), ("out", dst)):
                    m2 = _FDPATH.match(plain[i]) if i < len(plain) else None
                    rows.append({"timestamp_ns": int(round(ts * 1e6)) * 1000, "pid": pid, "tid": tid,
                                 "comm": comm.get(pid, ""), "op": f"{base}_{role}",
                                 "fd": int(m2.group(1)) if m2 else -1, "ret": ret, "pos": -1,
                                 "latency_s": float(lat) if lat else float("nan"),
                                 "path": m2.group(2) if m2 else None})
                continue
            fd, path = -1, None
            fm = _FDPATH.match(args)
            extra = {}
            if name == "mmap":
                a = [x.strip() for x in _split_args(args)]
                if len(a) < 6:
                    continue
                fm = _FDPATH.match(a[4])
                if not fm:
                    continue  # anonymous memory
                extra = {"prot": _flags(a[2], _PROT), "flags": _flags(a[3], _MAPF),
                         "length": int(a[1], 0), "pos": int(a[5], 0)}
            if name == "openat":
                fd = ret
                path = ret_path[1:-1] if ret_path else None
                if path is None:  # a failed open: keep the name it tried
                    nm = re.search(r',\s*"([^"]*)"', args)
                    path = nm.group(1) if nm else None
            elif fm:
                fd, path = int(fm.group(1)), fm.group(2)
            pos = -1
            try:
                if name in ("pread64", "pwrite64", "preadv", "pwritev"):
                    pos = int(args.rsplit(",", 1)[1])
                elif name in ("preadv2", "pwritev2"):
                    pos = int(args.rsplit(",", 2)[1])
                elif name == "fcntl":  # the command, for the resolver (F_DUPFD = 0, F_DUPFD_CLOEXEC)
                    cmd = args.split(",")[1].strip()
                    pos = {"F_DUPFD": 0, "F_DUPFD_CLOEXEC": 1030}.get(cmd, -1)
            except (IndexError, ValueError):
                pos = -1
            row = {"timestamp_ns": int(round(ts * 1e6)) * 1000, "pid": pid, "tid": tid,
                   "comm": comm.get(pid, ""), "op": name, "fd": fd, "ret": ret, "pos": pos,
                   "latency_s": float(lat) if lat else float("nan"), "path": path}
            rows.append({**row, **extra})
    return pd.DataFrame(rows), forks
