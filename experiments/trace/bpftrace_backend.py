"""bpftrace back end: system-call tracepoints (VFS layer) and block-layer tracepoints (BIO).

What it traces (the thesis's Section 4.2, made portable):

- ``tracepoint:syscalls:sys_{enter,exit}_{read,pread64,readv,write,pwrite64,writev,openat,close,
  lseek}`` for the traced process tree only. The tree is followed in the kernel: the root pid is
  seeded in a map and ``sched:sched_process_fork`` adds every child (DataLoader workers, torchrun
  ranks, a background copy), so no process name has to be guessed (the thesis's filter).
- ``tracepoint:block:block_rq_issue`` / ``block_rq_complete`` on the devices that hold the traced
  files (all devices when none is known): one row per request, latency = completion - issue. By
  default every request to the device is kept (``block_scope="device"``, as the thesis did, since
  write-back happens in kernel threads); ``"tree"`` keeps only requests issued by the tree.
- ``openat`` (and fork, which copies the file table) give the file-descriptor -> path mapping;
  ``lseek`` and the return values give offsets of ``read``/``write``.
- Time: bpftrace's ``nsecs`` is the kernel's CLOCK_MONOTONIC. Python reads the same clock
  (``time.monotonic_ns``) next to ``time.time_ns`` several times and keeps the pair with the
  smallest gap; that offset maps every kernel timestamp to wall-clock time (the thesis's
  "time alignment", to well under a microsecond of uncertainty instead of one second).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..procs import interrupt

TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
SYSCALLS = ("read", "pread64", "readv", "write", "pwrite64", "writev", "openat", "close", "lseek")
AT_FDCWD = -100


def tracefs_dir(mount: bool = True) -> tuple[str | None, str]:
    """The tracefs directory holding ``events/`` (mounting it when missing and root), or
    (None, why)."""
    for d in TRACEFS:
        if Path(d, "events").is_dir():
            return d, ""
    if mount and os.geteuid() == 0 and Path(TRACEFS[0]).is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS[0]], capture_output=True)
        if Path(TRACEFS[0], "events").is_dir():
            return TRACEFS[0], ""
    why = ("tracefs is not mounted and this user may not mount it (run as root: "
           "mount -t tracefs nodev /sys/kernel/tracing)") if os.geteuid() != 0 else \
        "tracefs is not mounted and `mount -t tracefs nodev /sys/kernel/tracing` failed"
    return None, why


@lru_cache(maxsize=None)
def available() -> tuple[bool, str, bool]:
    """(usable, why not, block tracepoints usable). Tries a one-probe program, so a kernel
    that forbids eBPF (a container without CAP_BPF) is found before any tracing."""
    exe = shutil.which("bpftrace")
    if not exe:
        return False, "bpftrace is not installed", False
    if os.geteuid() != 0:
        return False, "bpftrace needs root (CAP_BPF and CAP_PERFMON); running as an ordinary user", False
    d, why = tracefs_dir()
    if d is None:
        return False, why, False
    ev = Path(d, "events")
    missing = [s for s in SYSCALLS if not (ev / "syscalls" / f"sys_enter_{s}").is_dir()]
    if missing:
        return False, f"kernel lacks syscall tracepoints for {', '.join(missing)}", False
    block = all((ev / "block" / t).is_dir() for t in ("block_rq_issue", "block_rq_complete"))
    try:
        p = subprocess.run([exe, "-e", "tracepoint:syscalls:sys_enter_getppid { } BEGIN { exit(); }"],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "bpftrace did not start within 60 s", False
    if p.returncode != 0:
        last = [line for line in p.stderr.splitlines() if "RLIMIT_MEMLOCK" not in line]
        return False, f"bpftrace cannot load programs here: {(last or ['?'])[-1].strip()}", False
    return True, "", block


def kernel_dev(device: str) -> int | None:
    """The kernel's dev_t (major << 20 | minor, as block tracepoints report it) of the whole
    disk ``device`` (``vda``; a partition maps to its disk)."""
    sysdir = Path("/sys/class/block", device)
    if not sysdir.exists():
        return None
    if (sysdir / "partition").exists():
        sysdir = sysdir.resolve().parent
    try:
        major, minor = map(int, (sysdir / "dev").read_text().split(":"))
    except (OSError, ValueError):
        return None
    return (major << 20) | minor


def disk_of(device: str) -> str:
    sysdir = Path("/sys/class/block", device)
    if (sysdir / "partition").exists():
        return sysdir.resolve().parent.name
    return device


def _dev_names() -> dict[int, str]:
    out = {}
    for d in Path("/sys/class/block").glob("*"):
        try:
            major, minor = map(int, (d / "dev").read_text().split(":"))
            out[(major << 20) | minor] = d.name
        except (OSError, ValueError):
            continue
    return out


def script(devices: list[str] | None, block: bool, block_scope: str = "device",
           ready_file: str | None = None) -> str:
    """The bpftrace program; ``$1`` is the root pid of the traced tree. BEGIN runs once every
    probe is attached; it touches ``ready_file`` (output is block-buffered, so a printed line
    would not be seen until much later)."""
    ins = "/@tree[pid]/"
    touch = f' system("touch {ready_file}");' if ready_file else ""
    lines = [
        f'BEGIN {{ @tree[$1] = 1; printf("READY\\t%llu\\n", nsecs);{touch} }}',
        'tracepoint:sched:sched_process_fork /@tree[pid]/ { @tree[args->child_pid] = 1; '
        'printf("F\\t%llu\\t%d\\t%d\\t%s\\n", nsecs, pid, args->child_pid, comm); }',
        'tracepoint:sched:sched_process_exec /@tree[pid]/ { printf("E\\t%llu\\t%d\\t%s\\n", nsecs, pid, comm); }',
        "tracepoint:syscalls:sys_enter_read,tracepoint:syscalls:sys_enter_readv,"
        "tracepoint:syscalls:sys_enter_write,tracepoint:syscalls:sys_enter_writev,"
        "tracepoint:syscalls:sys_enter_close,tracepoint:syscalls:sys_enter_lseek "
        f"{ins} {{ @s[tid] = (nsecs, (int64)args->fd, (int64)-1); }}",
        "tracepoint:syscalls:sys_enter_pread64,tracepoint:syscalls:sys_enter_pwrite64 "
        f"{ins} {{ @s[tid] = (nsecs, (int64)args->fd, (int64)args->pos); }}",
        "tracepoint:syscalls:sys_enter_openat "
        f"{ins} {{ @s[tid] = (nsecs, (int64)args->dfd, (int64)args->flags); "
        'printf("N\\t%d\\t%s\\n", tid, str(args->filename)); }',
    ]
    for op in SYSCALLS:
        extra, arg, clean = "", "", ""
        lines.append(
            f"tracepoint:syscalls:sys_exit_{op} /@s[tid].0/ {{ $s = @s[tid]; "
            f'printf("V\\t{op}\\t%llu\\t%llu\\t%d\\t%d\\t%lld\\t%lld\\t%lld{extra}\\n", '
            f"$s.0, nsecs - $s.0, pid, tid, $s.1, args->ret, $s.2{arg}); "
            f"delete(@s[tid]);{clean} }}")
    if block:
        devs = [kernel_dev(d) for d in (devices or [])]
        devs = [d for d in devs if d is not None]
        dev_pred = " || ".join(f"args->dev == {d}" for d in devs)
        # the submitter of each bio, in its own context: requests are often dispatched later
        # from a kernel worker, so the pid at issue is not the process that asked
        qconds = [f"({dev_pred})"] if devs else []
        if block_scope == "tree":
            qconds.append("@tree[pid]")
        qpred = f"/{' && '.join(qconds)}/ " if qconds else ""
        lines.append(
            f"tracepoint:block:block_bio_queue {qpred}{{ "
            'printf("Q\\t%llu\\t%u\\t%llu\\t%d\\n", nsecs, args->dev, args->sector, pid); }')
        pred = f"/{dev_pred}/ " if devs else ""
        lines.append(
            f"tracepoint:block:block_rq_issue {pred}{{ "
            'printf("BI\\t%llu\\t%u\\t%llu\\t%u\\t%u\\t%s\\t%d\\t%d\\t%s\\n", nsecs, args->dev, '
            "args->sector, args->nr_sector, args->bytes, args->rwbs, pid, tid, comm); }")
        lines.append(
            f"tracepoint:block:block_rq_complete {pred}{{ "
            'printf("BC\\t%llu\\t%u\\t%llu\\t%u\\t%s\\n", nsecs, args->dev, args->sector, '
            "args->nr_sector, args->rwbs); }")
    lines.append("END { clear(@tree); clear(@s); }")
    return "\n".join(lines) + "\n"


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (0.0 when it is gone)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def clock_offset_ns(samples: int = 20) -> tuple[int, int]:
    """(wall - monotonic in ns, uncertainty in ns): the pair read with the smallest gap."""
    best = None
    for _ in range(samples):
        a = time.monotonic_ns()
        w = time.time_ns()
        b = time.monotonic_ns()
        cand = (b - a, w - (a + b) // 2)
        if best is None or cand[0] < best[0]:
            best = cand
    return best[1], best[0]


class BpftraceSession:
    """One running bpftrace writing to ``out_file``; ``start(root_pid)``, then ``stop()``."""

    def __init__(self, out_file: Path, devices: list[str] | None, block: bool,
                 block_scope: str = "device"):
        self.out_file = Path(out_file)
        self.err_file = self.out_file.with_suffix(".err")
        self.devices = [disk_of(d) for d in (devices or [])]
        self.block = block
        self.block_scope = block_scope
        self.proc: subprocess.Popen | None = None
        self.ready_ns = 0

    def start(self, root_pid: int, timeout_s: float = 60.0) -> None:
        ready = self.out_file.with_suffix(".ready")
        ready.unlink(missing_ok=True)
        prog = script(self.devices, self.block, self.block_scope, str(ready))
        env = {**os.environ, "BPFTRACE_STRLEN": "200", "BPFTRACE_PERF_RB_PAGES": "4096",
               "BPFTRACE_MAP_KEYS_MAX": "65536"}
        self._err = open(self.err_file, "w")
        self.proc = subprocess.Popen(["bpftrace", "--unsafe", "-o", str(self.out_file), "-e", prog,
                                      str(root_pid)],
                                     stdout=subprocess.DEVNULL, stderr=self._err, env=env,
                                     start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                self._err.close()
                lines = [ln for ln in self.err_file.read_text().splitlines()
                         if "ERROR" in ln and "RLIMIT_MEMLOCK" not in ln]
                raise RuntimeError("bpftrace exited before tracing: " + (lines[0].strip() if lines else "?"))
            if ready.exists():
                self.cpu_at_ready = self.cpu_s()
                return
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"bpftrace did not attach its probes within {timeout_s:.0f} s")

    def cpu_s(self) -> float:
        """CPU seconds (user + system) bpftrace itself has used so far (0 once it has exited)."""
        return proc_cpu_s(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            time.sleep(0.05)  # let the last events reach the ring buffer
            self.cpu_at_stop = self.cpu_s()
            interrupt(self.proc)
        if hasattr(self, "_err") and not self._err.closed:
            self._err.close()

    def lost_events(self) -> int:
        n = 0
        for p in (self.out_file, self.err_file):
            if p.exists():
                for line in p.read_text(errors="replace").splitlines():
                    if line.startswith("Lost ") and "events" in line:
                        try:
                            n += int(line.split()[1])
                        except ValueError:
                            pass
        return n


def parse(out_file: Path, offset_ns: int, comms: dict[int, str] | None = None, tree_only: bool = False
          ) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple]]:
    """(vfs rows, block rows, forks) from bpftrace's output; timestamps mapped to wall clock.

    vfs rows carry ``fd``, ``ret``, ``pos`` (-1 when the call has no offset argument) and, for
    openat, ``dfd``/``flags``/``filename``; paths and offsets are resolved afterwards
    (:func:`experiments.trace.resolve.resolve`).
    """
    vfs, issues, completes, forks, queued = [], [], [], [], []
    names: dict[int, str] = {}  # tid -> file name of its pending openat
    comms: dict[int, str] = dict(comms or {})  # pid -> process name (from fork and exec)
    with open(out_file, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            kind = parts[0]
            try:
                if kind == "V":
                    op, ts, lat, pid, tid, fd, ret, pos = parts[1:9]
                    comm = comms.get(int(pid), "")
                    row = {"op": op, "ts": int(ts), "latency_ns": int(lat), "pid": int(pid),
                           "tid": int(tid), "fd": int(fd), "ret": int(ret), "pos": int(pos),
                           "comm": comm}
                    if op == "openat":
                        row["dfd"], row["flags"] = row["fd"], row["pos"]
                        row["fd"], row["pos"] = row["ret"], -1
                        row["filename"] = names.pop(row["tid"], "")
                    vfs.append(row)
                elif kind == "N":
                    names[int(parts[1])] = parts[2] if len(parts) > 2 else ""
                elif kind == "BI":
                    ts, dev, sector, nr, nbytes, rwbs, pid, tid = parts[1:9]
                    issues.append({"ts": int(ts), "dev": int(dev), "sector": int(sector),
                                   "nr_sector": int(nr), "bytes": int(nbytes), "rwbs": rwbs,
                                   "pid": int(pid), "tid": int(tid),
                                   "comm": parts[9] if len(parts) > 9 else ""})
                elif kind == "Q":
                    queued.append((int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4])))
                elif kind == "BC":
                    ts, dev, sector, nr, rwbs = parts[1:6]
                    completes.append((int(ts), int(dev), int(sector)))
                elif kind == "F":
                    forks.append((int(parts[1]), int(parts[2]), int(parts[3])))
                    comms.setdefault(int(parts[3]), parts[4] if len(parts) > 4 else comms.get(int(parts[2]), ""))
                elif kind == "E":
                    comms[int(parts[2])] = parts[3] if len(parts) > 3 else ""
            except (ValueError, IndexError):
                continue  # a line cut by a lost event or a signal
    vdf = pd.DataFrame(vfs)
    if len(vdf):
        vdf["timestamp_ns"] = vdf["ts"] + offset_ns
        vdf["latency_s"] = vdf["latency_ns"] / 1e9
    bdf = _block_rows(issues, completes, offset_ns, queued, comms, tree_only)
    forks = [(ts + offset_ns, parent, child) for ts, parent, child in forks]
    return vdf, bdf, forks


def _block_rows(issues: list[dict], completes: list[tuple], offset_ns: int, queued=(), comms=None,
                tree_only: bool = False) -> pd.DataFrame:
    """One row per request: issue matched to the first later completion of the same
    (device, sector); pid = the process that queued the request's first bio (``Q`` lines) when
    known, else the one current at issue. ``tree_only``: keep only requests whose first bio was
    queued by the traced tree (the ``Q`` lines were filtered by tree)."""
    if not issues:
        return pd.DataFrame()
    comms = comms or {}
    by_key: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for ts, dev, sector, pid in sorted(queued):
        by_key.setdefault((dev, sector), []).append((ts, pid))
    keep = []
    for r in sorted(issues, key=lambda r: r["ts"]):
        q = by_key.get((r["dev"], r["sector"]))
        j = None
        if q:
            for k in range(len(q) - 1, -1, -1):
                if q[k][0] <= r["ts"]:
                    j = k
                    break
        if j is not None:
            _, pid = q.pop(j)
            if pid != r["pid"]:
                r = dict(r, pid=pid, tid=pid, comm=comms.get(pid, r["comm"]))
        elif tree_only:
            continue
        keep.append(r)
    issues = keep
    if not issues:
        return pd.DataFrame()
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
