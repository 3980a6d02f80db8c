"""Trace a block of Python or a command, with every child process, into one :class:`Trace`.

    from experiments import trace
    with trace.Tracer(watch=["data/unet3d"]) as t:      # this process and its children
        train()
    t.trace.save("results/x/trace.parquet")

    tr, rc = trace.run(["fio", "job.fio"], watch=["/mnt/ssd"])   # a command and its children

Back ends (``backend="auto"`` tries them in this order, says in one line why one cannot run,
and records the choice and the reasons in ``trace.meta``):

``bpftrace``  VFS system calls + block requests (root, tracefs, eBPF allowed); files named from
              the kernel's ``struct file`` where the kernel has BTF (``files="kernel"``), else
              from descriptor numbers followed through ``dup``/``fcntl``/``fork``;
``strace``    VFS system calls only (ptrace allowed); files named by ``strace -y``;
``dftracer``  DFTracer, the field's user-space tracer (an ``LD_PRELOAD`` library from
              ``pydftracer``, in DLIO's environment): libc's POSIX calls of a command and its
              ``exec``-ed children (:mod:`experiments.trace.dftracer_backend` says what it
              misses); a command only, never chosen by ``auto``;
``proc``      no events: only the ``/proc`` sampler below (and, for a command, the exact
              ``/proc/<pid>/io`` totals of its whole tree, read before it is reaped).

Modes (``mode=``): ``timeline`` (default) records one row per call, for timelines and
per-call analysis; ``vector`` has bpftrace count the calls in the kernel (by operation, file,
size), which is all Table 4.2 needs and costs far less per call (``python -m
experiments.trace.bench``); it has no per-call rows (``trace.counts`` instead). ``vector``
needs bpftrace with kernel file naming; elsewhere the trace falls back to ``timeline`` and says
why (``meta['why_not_vector']``): the vector is the same, only dearer.

The ``/proc`` sampler (:mod:`experiments.trace.proc_backend`) runs beside any of them unless
``sample=False``: per-second VFS/device MB/s and CPU (and GPU) utilization.
``watch`` names files or directories the workload touches: their block devices are the ones the
block layer is traced on and sampled (none given: the device of the current directory for the
sampler, every device for bpftrace).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from ..host import dstat
from . import bpftrace_backend as bt
from . import bpftrace_output
from . import dftracer_backend, proc_backend, resolve, strace_backend
from .schema import Trace, TraceError, conform

BACKENDS = ("auto", "bpftrace", "strace", "dftracer", "proc")
# block probes see the device before a trace starts and after it ends: requests this close (s) are kept
BLOCK_MARGIN_S = 0.01
MODES = bt.MODES
FILE_NAMING = bt.FILE_NAMING
_said: set[str] = set()


def _say_once(msg: str, quiet: bool = False) -> None:
    if msg not in _said and not quiet:
        _said.add(msg)
        print(f"trace: {msg}", file=sys.stderr)


def backend_status() -> dict[str, dict]:
    """Each back end: whether it can run here and, if not, why (one line)."""
    ok, why, block = bt.available()
    sok, swhy = strace_backend.available()
    return {"bpftrace": {"ok": ok, "why": why, "block": block},
            "strace": {"ok": sok, "why": swhy, "block": False},
            "dftracer": dict(zip(("ok", "why"), dftracer_backend.available()), block=False),
            "proc": {"ok": Path("/proc/self/io").exists(), "why": "" if Path("/proc/self/io").exists()
                     else "/proc/<pid>/io is missing (kernel without task I/O accounting)", "block": False}}


def choose_backend(requested: str = "auto", quiet: bool = False) -> tuple[str, list[str]]:
    """(back end to use, reasons the preferred ones could not run)."""
    if requested not in BACKENDS:
        raise TraceError(f"trace backend = {requested!r}; allowed: {', '.join(BACKENDS)}")
    order = ["bpftrace", "strace", "proc"] if requested == "auto" else [requested]
    status = backend_status()
    reasons = []
    for name in order:
        if status[name]["ok"]:
            if reasons:
                _say_once(f"{'; '.join(reasons)}; using {name}", quiet)
            return name, reasons
        reasons.append(f"{name} unavailable: {status[name]['why']}")
    if requested != "auto":
        raise TraceError(f"trace backend {requested!r} cannot run here: {status[requested]['why']}")
    return "proc", reasons


def devices_of(watch) -> list[str]:
    devs = []
    for p in watch or []:
        d = dstat.device_of(p)
        if d is None and not Path(p).exists():
            d = dstat.device_of(Path(p).parent)
        if d and bt.disk_of(d) not in devs:
            devs.append(bt.disk_of(d))
    return devs


def check_command(cmd: list[str]) -> list[str]:
    """The command as a list; :class:`TraceError` when it is empty or not found."""
    if isinstance(cmd, str):
        cmd = shlex.split(cmd)
    if not cmd:
        raise TraceError("trace run: no command given; usage: python -m experiments.trace run -o OUT -- CMD ...")
    exe = cmd[0]
    if os.sep in exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise TraceError(f"trace run: command {exe!r} does not exist or is not executable")
    elif shutil.which(exe) is None:
        raise TraceError(f"trace run: command {exe!r} not found on PATH")
    return list(cmd)


class Tracer:
    """Context manager tracing this process and its children; ``.trace`` after the block.

    backend: auto | bpftrace | strace | proc. watch: files/directories whose devices to trace
    at the block level and sample. block_scope: ``device`` (every request to those devices, as
    the thesis) or ``tree`` (only requests issued by the traced processes). interval_s: the
    sampler's period in seconds (default 1). sample: run the /proc sampler. keep_raw: keep the
    back end's raw log next to the parsed rows (``meta['raw_dir']``). mode: ``timeline`` or
    ``vector`` (see the module docstring). files: how bpftrace names files, ``auto`` (kernel
    where possible), ``kernel`` or ``descriptors``. max_keys: entries per bpftrace map (vector
    mode: distinct (operation, file, size) triples, and distinct files; a full map is detected
    by its entry count and recorded in ``meta['agg_full']``, the calls it lost not counted). vfs_sequential: in vector mode, also count in the kernel which
    calls continue where the same process's previous call on the file ended (VFS
    sequentiality, not part of Table 4.2; about a fifth of the probe's cost; default off in
    vector mode, always available in timeline mode). dftracer_release: which DFTracer the
    ``dftracer`` back end preloads, ``dlio`` (the 1.0.2 DLIO pins) or ``current`` (the release
    in ``.venv-dftracer``; :data:`~experiments.trace.dftracer_backend.RELEASES`). probes: the
    vector program's hooks, ``auto`` (fentry/fexit where the kernel allows, else the system-call
    tracepoints), ``kfunc`` or ``tracepoint``; the kind that ran is ``meta['probes']``, why it
    is not ``kfunc`` ``meta['why_not_kfunc']`` (issue 70). follow: pids of processes started
    before the trace (a warm parent whose forks are the runs: :mod:`experiments.host.warm_launch`)
    traced with their children beside this process's tree, from the start (bpftrace, strace;
    the ``/proc`` sampler and back end see every descendant of the root anyway);
    ``meta['follow']``.
    """

    def __init__(self, backend: str = "auto", watch=(), block: bool = True, block_scope: str = "device",
                 interval_s: float = 1.0, sample: bool = True, keep_raw: bool = False, quiet: bool = False,
                 mode: str = "timeline", files: str = "auto", max_keys: int | None = None,
                 vfs_sequential: bool | None = None, keep_parsed: bool = False,
                 dftracer_release: str = "dlio", probes: str = "auto", follow=()):
        if block_scope not in ("device", "tree"):
            raise TraceError(f"trace block_scope = {block_scope!r}; allowed: device, tree")
        if interval_s <= 0:
            raise TraceError(f"trace interval_s = {interval_s}; must be > 0")
        if mode not in MODES:
            raise TraceError(f"trace mode = {mode!r}; allowed: {', '.join(MODES)}")
        if files not in FILE_NAMING:
            raise TraceError(f"trace files = {files!r}; allowed: {', '.join(FILE_NAMING)}")
        if max_keys is not None and not 1024 <= int(max_keys) <= 1 << 24:
            raise TraceError(f"trace max_keys = {max_keys}; allowed: 1024 to {1 << 24}")
        if probes not in ("auto",) + bt.PROBE_KINDS:
            raise TraceError(f"trace probes = {probes!r}; allowed: auto, {', '.join(bt.PROBE_KINDS)}")
        self.requested_probes = probes
        self.follow = tuple(int(p) for p in follow)
        gone = [p for p in self.follow if not Path(f"/proc/{p}").exists()]
        if gone:
            raise TraceError(f"trace follow = {list(self.follow)}: no process {gone}; allowed: pids of running processes")
        self.requested = backend
        self.requested_mode = mode
        self.requested_files = files
        self.vfs_sequential = (mode != "vector") if vfs_sequential is None else bool(vfs_sequential)
        self.max_keys = int(max_keys) if max_keys is not None else (262144 if mode == "vector" else 65536)
        if dftracer_release not in dftracer_backend.RELEASES:
            raise TraceError(f"trace dftracer_release = {dftracer_release!r}; allowed: "
                             f"{', '.join(dftracer_backend.RELEASES)}")
        self.dftracer_release = dftracer_release
        if backend == "dftracer" and dftracer_release != "dlio":   # backend_status has DLIO's
            ok, why = dftracer_backend.available(dftracer_release)
            if not ok:
                raise TraceError(f"trace backend 'dftracer' ({dftracer_release}) cannot run here: {why}")
            self.backend, self.fallbacks = "dftracer", []
        else:
            self.backend, self.fallbacks = choose_backend(backend, quiet)
        self.watch = [str(p) for p in (watch or [])]
        self.devices = devices_of(self.watch)
        self.block = block
        self.block_scope = block_scope
        self.interval_s = interval_s
        self.sample = sample
        self.keep_raw = keep_raw
        self.keep_parsed = keep_parsed   # a Session cuts its windows' mapped files from these rows
        self.parsed_raw: pd.DataFrame | None = None
        self.quiet = quiet
        self.trace: Trace | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="dlio-trace-"))
        self._session = None
        self._sampler = None
        self._maps = None
        self.meta: dict = {}

    # -- starting and stopping -------------------------------------------------------------
    def _begin_meta(self, root_pid: int, command=None) -> None:
        status = backend_status()
        block_ok = self.backend == "bpftrace" and self.block and status["bpftrace"]["block"]
        why_no_block = "" if block_ok else (
            "block layer traced by bpftrace only" if self.backend != "bpftrace" else
            "block tracing turned off" if not self.block else "kernel lacks block:block_rq_* tracepoints")
        files, why_files = "", ""
        if self.backend == "bpftrace":
            kok, kwhy = bt.kernel_files_available()
            if self.requested_files == "kernel" and not kok:
                raise TraceError(f"trace files = 'kernel' cannot run here: {kwhy}")
            files = "kernel" if kok and self.requested_files != "descriptors" else "descriptors"
            why_files = "" if files == "kernel" else (kwhy if not kok else "descriptors requested")
        elif self.backend == "strace":
            files = "strace -y"
        elif self.backend == "dftracer":
            files = "dftracer fname (libc calls, LD_PRELOAD)"
        mode, why_mode = self.requested_mode, ""
        if mode == "vector" and files != "kernel":
            mode = "timeline"
            why_mode = (f"vector mode needs bpftrace naming files from the kernel; back end "
                        f"{self.backend}" + (f" ({why_files})" if why_files else ""))
            _say_once(f"{why_mode}; tracing in timeline mode (same vector, more overhead)", self.quiet)
        self.mode, self.files = mode, files
        self.meta = {"backend": self.backend, "requested_backend": self.requested,
                     "mode": mode, "requested_mode": self.requested_mode, "why_not_vector": why_mode,
                     "file_naming": files, "why_not_kernel_files": why_files,
                     "fallbacks": self.fallbacks, "root_pid": root_pid, "follow": list(self.follow),
                     "command": command, "cwd": os.getcwd(), "watch": self.watch,
                     "devices": self.devices, "block_traced": bool(block_ok),
                     "block_scope": self.block_scope, "why_no_block": why_no_block,
                     "interval_s": self.interval_s, "sampled": self.sample,
                     "host": os.uname().nodename, "kernel": os.uname().release}
        self._block_ok = block_ok

    def _start_sampler(self, pid: int) -> None:
        if self.sample:
            sdevs = self.devices or [d for d in [dstat.device_of(os.getcwd())] if d]
            self._sampler = proc_backend.sampler(pid, sdevs, self.interval_s).start()
        if self.backend == "proc":  # the only way this back end sees mapped files
            self._maps = proc_backend.MapsWatcher(pid, min(self.interval_s, 0.5)).start()

    def start(self, pid: int | None = None, command=None) -> "Tracer":
        if self.backend == "dftracer":  # its library must be preloaded when the process starts
            raise TraceError("trace backend 'dftracer' traces a command only (LD_PRELOAD at its "
                             "start); use Tracer.run / `python -m experiments.trace run`")
        pid = os.getpid() if pid is None else pid
        self._begin_meta(pid, command)
        self._initial = {p: resolve.fd_table(p) for p in (pid, *self.follow)}
        self._mountinfo = resolve.read_mountinfo(pid) or resolve.read_mountinfo()
        self._comms = {}
        for p in (pid, *self.follow):
            try:
                self._comms[p] = Path(f"/proc/{p}/comm").read_text().strip()
            except OSError:
                self._comms[p] = ""
        self._root_comm = self._comms[pid]
        self._offset_ns, self.meta["clock_uncertainty_ns"] = bt.clock_offset_ns()
        self.meta["clock_offset_ns"] = self._offset_ns
        while True:
            try:
                if self.backend == "bpftrace":
                    self._session = bt.BpftraceSession(self._dir / "bpftrace.out", self.devices or None,
                                                       self._block_ok, self.block_scope, self.mode,
                                                       self.files, self.max_keys, self.vfs_sequential,
                                                       self.requested_probes, self.follow)
                    self._session.start(pid)
                    self.meta.update(probes=self._session.probes, why_not_kfunc=self._session.why_not_kfunc)
                elif self.backend == "strace":
                    self._session = strace_backend.StraceSession(self._dir / "strace.out")
                    self._session.attach(pid, follow=self.follow)
                break
            except RuntimeError as e:  # it passed the checks but failed to start: next one, if auto
                if self._session is not None:
                    self._session.stop()
                    self._session = None
                if self.requested != "auto" or self.backend == "proc":
                    shutil.rmtree(self._dir, ignore_errors=True)
                    raise TraceError(f"trace backend {self.backend!r} failed to start: {e}") from None
                reason = f"{self.backend} failed to start: {e}"
                self.backend = "strace" if self.backend == "bpftrace" and backend_status()["strace"]["ok"] \
                    else "proc"
                self.fallbacks.append(reason)
                _say_once(f"{reason}; using {self.backend}", self.quiet)
                clock = {k: self.meta[k] for k in ("clock_offset_ns", "clock_uncertainty_ns")}
                self._begin_meta(pid, command)
                self._mountinfo = getattr(self, "_mountinfo", "")
                self.meta.update(clock)
        self._start_sampler(pid)
        self._t0_ns = time.time_ns()
        self.meta["started"] = self._t0_ns / 1e9
        return self

    def stop(self) -> Trace:
        self.meta["ended"] = time.time_ns() / 1e9
        if isinstance(self._session, strace_backend.StraceSession):
            self._session.stop(root_exited=self.meta.get("returncode") is not None)
        elif self._session is not None:
            self._session.stop()
        if self._sampler is not None:
            self._sampler.stop()
        if getattr(self, "_maps", None) is not None:
            self._maps.stop()
        self.trace = self._collect()
        return self.trace

    def __enter__(self) -> "Tracer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- parsing ---------------------------------------------------------------------------
    def _collect(self) -> Trace:
        pid = self.meta["root_pid"]
        vfs = conform(pd.DataFrame())
        block = conform(pd.DataFrame())
        counts = None
        if self.backend == "bpftrace":
            p = bpftrace_output.parse_output(self._session.out_file, self._offset_ns, self._comms,
                                mountinfo=self._mountinfo)
            self.meta["lost_events"] = self._session.lost_events()
            self.meta["unparsed_lines"] = p.unparsed
            self.meta["unparsed_examples"] = p.unparsed_examples
            if p.unparsed:
                _say_once(f"{p.unparsed} line(s) of bpftrace output did not parse (recorded in the "
                          f"trace's meta: unparsed_lines), e.g. {p.unparsed_examples[0]!r}", self.quiet)
            if hasattr(self._session, "cpu_at_stop"):  # bpftrace's CPU while tracing, start-up excluded
                self.meta["tracer_cpu_s"] = self._session.cpu_at_stop - self._session.cpu_at_ready
            raw = pd.concat([d for d in (p.vfs, p.mmaps) if len(d)] or [p.vfs], ignore_index=True)
            if self.files == "kernel":
                vfs = resolve.kernel_rows(raw, self._t0_ns)
            else:
                vfs = resolve.resolve(raw, p.forks, self._initial, self.meta["cwd"], self._t0_ns)
            if len(p.block):
                block = resolve.finish(p.block.drop(columns=["rwbs"]), self._t0_ns)
            if self.mode == "vector":
                counts = _counts(p.counts)
                # the calls counted are the aggregation's (no separate total: issue 70); where
                # the aggregation or the file numbers' map is full, calls past it were not
                # counted and how many is not known
                total = (int(p.counts["calls"].sum()) if len(p.counts) else 0) + int(p.totals.get("badregs", 0))
                self.meta["vfs_calls_counted"] = total
                self.meta["one_probe_per_call"] = bool(bt._probe()["exit_regs"]) or self.meta.get("probes") == "kfunc"
                self.meta["exit_regs_mismatch"] = int(p.totals.get("badregs", 0))
                self.meta["vfs_sequential_counted"] = self.vfs_sequential
                entries = max(int(p.totals.get("agg_entries", 0)), int(p.totals.get("inode_entries", 0)))
                self.meta["agg_full"] = entries >= self.max_keys
                self.meta["agg_lost_calls"] = None if self.meta["agg_full"] else 0
                self.meta["max_keys"] = self.max_keys
                if self.meta["agg_full"]:
                    _say_once(f"the in-kernel aggregation map was full ({entries} entries): calls past it "
                              f"were not counted (raise max_keys above {self.max_keys})", self.quiet)
            ok = vfs["error"] == 0
            self.meta["unnamed_calls"] = int((vfs["path"].isna() & ok).sum()) + (
                int(counts.loc[counts["path"].isna() & (counts["error"] == 0), "calls"].sum()) if counts is not None and len(counts) else 0)
        elif self.backend == "strace":
            raw, forks = strace_backend.parse(self._session.out_file, pid, self.meta.get("comm", ""))
            vfs = resolve.resolve(raw, forks, self._initial, self.meta["cwd"], self._t0_ns)
        elif self.backend == "dftracer":
            files = dftracer_backend.trace_files(self._dir / "dftracer")
            raw, self.meta["unparsed_lines"] = dftracer_backend.read_events(files)
            vfs, self.meta["dftracer_other_calls"] = dftracer_backend.to_rows(raw, self._t0_ns)
            self.meta["dftracer_files"] = len(files)
            raw = dftracer_backend.mmaps(raw)
        elif self._maps is not None:  # no events: the mappings only name the mapped files
            raw = self._maps.frame()
            vfs = self._maps.rows(self._t0_ns)
        else:
            raw = pd.DataFrame()
        self.meta["mapped_files"] = resolve.mapped_files(raw, vfs)
        self.parsed_raw = raw if self.keep_parsed else None
        if self.backend == "proc":
            vfs = conform(pd.DataFrame())
        if len(block):  # block probes see the device before the start and after the end
            lo = pd.Timestamp(self.meta["started"] - BLOCK_MARGIN_S, unit="s", tz="UTC")
            hi = pd.Timestamp(self.meta["ended"] + BLOCK_MARGIN_S, unit="s", tz="UTC")
            block = block[(block["timestamp"] >= lo) & (block["timestamp"] <= hi)]
        events = pd.concat([d for d in (vfs, block) if len(d)] or [vfs], ignore_index=True)
        events = conform(events.sort_values("timestamp", kind="stable"))
        samples = self._sampler.frame() if self._sampler is not None else pd.DataFrame()
        if len(samples):
            samples["t_s"] = samples["wall"] - self._t0_ns / 1e9
        if self.keep_raw:
            self.meta["raw_dir"] = str(self._dir)
        else:
            shutil.rmtree(self._dir, ignore_errors=True)
        self.meta["n_events"] = int(len(events))
        return Trace(events, samples, dict(self.meta), counts)

    # -- a command -------------------------------------------------------------------------
    def run(self, cmd: list[str], env: dict | None = None, cwd=None) -> tuple[Trace, int]:
        """Run ``cmd`` traced with all its children; (trace, exit status of the command)."""
        cmd = check_command(cmd)
        env = {**os.environ, **(env or {})}
        self.meta["comm"] = os.path.basename(cmd[0])[:15]
        if self.backend == "strace":
            self._begin_meta(None, cmd)
            self.meta["comm"] = os.path.basename(cmd[0])[:15]
            self._offset_ns, self.meta["clock_uncertainty_ns"] = bt.clock_offset_ns()
            self.meta["clock_offset_ns"] = self._offset_ns
            self._session = strace_backend.StraceSession(self._dir / "strace.out")
            self._t0_ns = time.time_ns()
            self.meta["started"] = self._t0_ns / 1e9
            t_cmd = time.perf_counter()
            proc = subprocess.Popen(self._session.command(cmd), env=env, cwd=cwd)
            self.meta["root_pid"] = proc.pid
            self._initial = {}
            self._start_sampler(proc.pid)
            rc = wait_cpu(proc, self.meta)
            self.meta["command_s"] = time.perf_counter() - t_cmd  # strace's start-up included
            self.meta["root_pid"] = None  # strace's children carry the command's pids
            self._session = _Done(self._session)
        elif self.backend == "dftracer":
            rc = self._run_dftracer(cmd, env, cwd)
        else:
            # start the command held at a gate, so its pid is known before it does anything
            r, w = os.pipe()
            bash = shutil.which("bash")
            if bash:  # bash (not dash) reads descriptors above 9
                gate = [bash, "-c", f'read -r _ <&{r}; exec {r}<&-; exec "$@"', "gate"]
            else:
                gate = [sys.executable, "-c", "import os,sys; os.read(int(sys.argv[1]), 1); "
                        "os.close(int(sys.argv[1])); os.execvp(sys.argv[2], sys.argv[2:])", str(r)]
            proc = subprocess.Popen([*gate, *cmd], pass_fds=(r,), env=env, cwd=cwd)
            os.close(r)
            try:
                self.start(proc.pid, cmd)
                self.meta["comm"] = os.path.basename(cmd[0])[:15]
            except BaseException:
                os.close(w)
                proc.kill()
                proc.wait()
                raise
            t_cmd = time.perf_counter()
            os.write(w, b"go\n")
            os.close(w)
            if self.backend == "proc":
                # wait until it has exited but is not yet reaped: its /proc/<pid>/io then holds
                # the exact totals of the whole tree (the children it reaped are added to it)
                try:
                    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
                    self.meta["proc_io_totals"] = proc_backend.exited_totals(proc.pid)
                except OSError:
                    pass
            rc = wait_cpu(proc, self.meta)
            self.meta["command_s"] = time.perf_counter() - t_cmd
        self.meta["returncode"] = rc
        return self.stop(), rc


    def _run_dftracer(self, cmd: list[str], env: dict, cwd) -> int:
        """Run ``cmd`` with DFTracer preloaded (its trace files go to this tracer's folder)."""
        self._begin_meta(None, cmd)
        self.meta["comm"] = os.path.basename(cmd[0])[:15]
        self._offset_ns, self.meta["clock_uncertainty_ns"] = bt.clock_offset_ns()
        self.meta["clock_offset_ns"] = self._offset_ns
        self.meta["dftracer_library"] = str(dftracer_backend.preload_library(self.dftracer_release)[0])
        self.meta["dftracer_version"] = dftracer_backend.version(self.dftracer_release)
        self.meta["dftracer_data_dir"] = "all"
        env = {**env, **dftracer_backend.environment(self._dir / "dftracer", release=self.dftracer_release)}
        self._t0_ns = time.time_ns()
        self.meta["started"] = self._t0_ns / 1e9
        t_cmd = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd)
        self.meta["root_pid"] = proc.pid
        self._initial = {}
        self._start_sampler(proc.pid)
        rc = wait_cpu(proc, self.meta)
        self.meta["command_s"] = time.perf_counter() - t_cmd  # its initialization included
        return rc


def wait_cpu(proc: subprocess.Popen, meta: dict | None = None) -> int:
    """Wait for ``proc``; its exit status. ``meta['command_cpu_s']``: the CPU seconds (user +
    system) of it and every descendant it waited for (under strace: strace's own included)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if meta is not None:
        meta["command_cpu_s"] = ru.ru_utime + ru.ru_stime
    return proc.returncode


class _Done:
    """A finished strace session (it ended with the command)."""

    def __init__(self, s):
        self.out_file = s.out_file

    def stop(self) -> None:
        pass


def _counts(agg: pd.DataFrame) -> pd.DataFrame:
    """The in-kernel aggregation (op, dev, ino, gen, ret, sequential, calls, path) as the
    schema's counts table: one row per (op, path, size, error)."""
    from .schema import conform_counts
    if agg is None or not len(agg):
        return conform_counts(None)
    a = agg.copy()
    a["error"] = a["ret"].where((a["ret"] < 0) & (a["ret"] > -4096), 0)
    a["size"] = a["ret"].where(a["ret"] >= 0).astype(float)
    a["sequential"] = a["sequential"] * a["calls"]
    a["path"] = a["path"].astype(object).where(a["path"].notna(), None)
    g = a.groupby(["op", "path", "size", "error"], dropna=False, sort=True)[["calls", "sequential"]].sum()
    return conform_counts(g.reset_index())


def run(cmd, **kw) -> tuple[Trace, int]:
    """Trace ``cmd`` (list or shell-quoted string) and its children: (trace, exit status).
    Keywords as for :class:`Tracer`."""
    return Tracer(**kw).run(cmd)
