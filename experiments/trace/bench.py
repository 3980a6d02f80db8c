"""Benchmark (not a test): run-time overhead of each tracing back end and mode, and what each
one sees (issue 42).

``python -m experiments.trace.bench [--dir DIR] [--runs N] [--io-mib M] [--py-runs N]
[--py-images N] [--epochs N] [--jobs ...] [--backends ...] [--no-coverage] [--short] [--out DIR]``
(``--report DIR``: only print a run's tables as Markdown) prints, for each job,
the median wall time of the command alone (from its start to its exit; a tracer's own start-up
and parsing are not counted, except DFTracer's, which runs inside the command) untraced and
under each back end and mode that can run here, and the overhead in percent with its 95 %
bootstrap interval (ratio of medians), all measured in the same alternating run. The jobs:

- ``fio_128k``, ``fio_4k``: fio reading a page-cached file (in ``/dev/shm`` by default: other
  jobs dropping the page cache cannot turn its reads into disk reads) with ``psync`` at 128 KiB
  (sample-sized reads, as a DataLoader does) and at 4 KiB (the worst case: one call per 4 KiB);
- ``dataloader``, ``tfdata``: :mod:`.read_jobs` over a small ImageNet-like JPEG set (made in the
  same folder), through a PyTorch DataLoader with 2 worker processes and through tf.data (whose
  reads happen in TensorFlow's C++ threads); their wall time includes the interpreter's imports.

The back ends and modes:

- ``bpftrace_timeline``: one printed line per call and per block request (what timelines need);
- ``bpftrace_vector``: calls counted in the kernel by (operation, file, size), one line per
  block request (all Table 4.2 needs); goal: < 3 % at 128 KiB and < 15 % at 4 KiB (:data:`GOALS`);
- ``strace`` (ptrace; VFS only);
- ``dftracer_<version>``: DFTracer's ``LD_PRELOAD`` library (:mod:`.dftracer_backend`; libc
  calls of every file, its trace written by the traced process itself), each release of
  :data:`.dftracer_backend.RELEASES`: the 1.0.2 DLIO 2.0.0 pins and the current one (issue 56);
- ``bpftrace_floor``: not a tracer, the floor under the bpftrace ones: the same exit
  tracepoints as the vector mode with programs that only count the command's calls
  (:func:`probe_floor`; by process name, so TensorFlow's renamed threads' calls fire the probes
  but are not counted).

A back end that cannot run here is printed with its reason and recorded in ``env.json``
(``not_measured``). Both bpftrace modes trace the block layer of the whole device too (every
process's requests, as the thesis did). ``overhead_pct`` is the wall-time overhead (the goal's
measure); ``cpu_overhead_pct`` the overhead in the command's own CPU seconds (user + system of
it and its children, from ``wait4``): the probes run inside the traced calls, so their cost is
there, and on a loaded box, where a process waits for a core as long as the others make it, it
is far stabler than wall time. ``tracer_cpu_us_per_call``: bpftrace's own CPU (start-up
excluded) per traced call, the user-space side; ``probe_cpu_us_per_call``: the traced
command's extra CPU per traced call (for strace: ptrace's stops, strace's own CPU included; for
DFTracer: all of its cost). Then the coverage table (:mod:`.coverage`): the known I/O job once
under each back end, per case and file the calls and bytes attributed and a verdict. Written to
``--out`` (default ``results/trace_bench/``): ``overhead.csv``, ``raw.csv``, ``goals.csv`` (each
goal's verdict from its interval: met, not met, undecided), ``coverage.csv``, ``env.json``.

Issue 70's table (``per_call.csv``): per job and back end, what tracing adds to the command's CPU
per call in µs (each repeat's traced run against the same repeat's untraced run, net of the
same for the job's one-block start-up run, so that what a run costs whatever its calls is not
spread over them, ``per_run_ms`` beside it, :func:`per_call`; median over runs with its 95 %
interval over runs), the untraced command's own µs per call, the floors of
each probe kind (``bpftrace_floor``: count-only on the exit tracepoints; ``bpftrace_floor_kfunc``:
count-only on the system-call functions' fexit, where bpftrace attaches it) and the vector
program on each (``bpftrace_vector``: tracepoints; ``bpftrace_vector_kfunc``); the CPU overhead
beside it; ``per_call_goals.csv``: issue 70's targets with computed verdicts. ``env.json``
records which program each back end ran (``tracer_programs``) and why there is no kfunc one
(``why_not_kfunc``). ``--short``: the fio jobs at 64 MiB, 2 runs, no coverage (a smoke check).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from ..host import envinfo
from ..settings import paths
from ..statistics import stats
from ..output.results import atomic_write, write_json
from . import bpftrace_backend as bt
from . import dftracer_backend, read_jobs
from .tracer import Tracer, backend_status, wait_cpu


def fio_cmd(path: Path, bs_kib: int, io_mib: int, file_mib: int, io_kib: int | None = None) -> list[str]:
    """fio reading ``path`` sequentially with ``psync`` in ``bs_kib`` KiB calls, ``io_mib`` MiB
    in all (``io_kib`` KiB where given)."""
    io = f"{io_kib}k" if io_kib is not None else f"{io_mib}m"
    return [shutil.which("fio") or "fio", "--name=bench", f"--filename={path}", "--rw=read",
            f"--bs={bs_kib}k", f"--size={file_mib}m", f"--io_size={io}", "--ioengine=psync",
            "--output=/dev/null"]


def warm(*files: Path) -> None:
    """Read ``files`` once, so they are in the page cache (other jobs on a shared box drop caches)."""
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass


def untraced(cmd: list[str], cwd=None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``cmd`` run untraced."""
    t = time.perf_counter()
    meta: dict = {}
    rc = wait_cpu(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=cwd), meta)
    if rc != 0:
        raise RuntimeError(f"{cmd[0]} exited with {rc}")
    return time.perf_counter() - t, meta["command_cpu_s"]


def fio_jobs(directory: Path, io_mib: int = 2048, file_mib: int = 256, block_sizes=(128, 4)) -> list[dict]:
    """fio reading a ``file_mib`` MiB file (written once in ``directory``) at each block size.
    ``start_cmd``: the same fio reading one block, run beside it in every repeat: what a run
    costs whatever its calls (fio's start-up, and a tracer's per-run cost), which
    :func:`per_call` takes out so that only what grows with the calls is divided by them."""
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "bench.bin"
    if not data.exists() or data.stat().st_size != file_mib << 20:
        with open(data, "wb") as f:
            for _ in range(file_mib):
                f.write(os.urandom(1 << 20))
    out = []
    for bs in block_sizes:
        io = io_mib if bs >= 64 else max(io_mib // 8, 16)
        out.append({"job": f"fio_{bs}k", "cmd": fio_cmd(data, bs, io, file_mib), "block_kib": bs,
                    "io_mib": io, "warm": [data], "start_cmd": fio_cmd(data, bs, io, file_mib, io_kib=bs)})
    return out


def python_jobs(folder: Path, epochs: int = 1, workers: int = 2, names=read_jobs.JOBS) -> list[dict]:
    """The Python read jobs of :mod:`.read_jobs` over the ImageNet-like set in ``folder``."""
    files = [Path(f) for f in read_jobs.files_of(folder)]
    io = sum(f.stat().st_size for f in files) * epochs / 2**20
    return [{"job": n, "cmd": [sys.executable, "-m", "experiments.trace.read_jobs", n, str(folder),
                               "--epochs", str(epochs), "--workers", str(workers), "--quiet"],
             "block_kib": float("nan"), "io_mib": round(io, 1), "warm": files, "cwd": str(paths.root())}
            for n in names]


def floor_kinds() -> list[str]:
    """The probe kinds whose count-only program (the floor) can run here, of
    :data:`.bpftrace_backend.PROBE_KINDS`: ``tracepoint`` wherever bpftrace runs, ``kfunc``
    where it attaches fexit programs."""
    if not backend_status()["bpftrace"]["ok"]:
        return []
    return ["tracepoint"] + (["kfunc"] if bt.probe_kind()[0] == "kfunc" else [])


def floor_name(kind: str) -> str:
    return "bpftrace_floor" if kind == "tracepoint" else f"bpftrace_floor_{kind}"


def measure(jobs: list[dict], runs: int = 5, backends=None, block_watch=None,
            floor=None, runs_of=None) -> pd.DataFrame:
    """One row per (job, back end, repeat): ``command_s`` (wall), ``command_cpu_s`` and the
    calls traced; untraced and traced runs alternate within each repeat. A job with a
    ``start_cmd`` (:func:`fio_jobs`) runs it too in each repeat, right after the job, as job
    ``<job>_start`` (untraced, floors, back ends), so :func:`per_call` can pair them.
    ``block_watch``: paths whose device the block layer is traced on. ``runs_of``: job ->
    runs (default ``runs``). ``floor``: the probe kinds whose count-only program runs too
    (default :func:`floor_kinds`; ``True``/``False``: the tracepoint one or none)."""
    if backends is None:
        backends = default_backends()
    if floor is None:
        floor = floor_kinds()
    elif floor is True or floor is False:
        floor = ["tracepoint"] if floor else []
    rows = []
    for job in jobs:
        cwd = job.get("cwd")
        untraced(job["cmd"], cwd)  # warm the page cache and the program
        n_rep = (runs_of or {}).get(job["job"], runs)
        for r in range(n_rep):
            progress_line(f"{job['job']}: repeat {r + 1}/{n_rep}")
            for name, cmd in [(job["job"], job["cmd"])] + (
                    [(f"{job['job']}_start", job["start_cmd"])] if job.get("start_cmd") else []):
                base = {"job": name, "block_kib": job["block_kib"], "io_mib": job["io_mib"]}
                rows += _one_repeat(cmd, cwd, job["warm"], base, r, floor, backends, block_watch)
    return pd.DataFrame(rows)


def _one_repeat(cmd, cwd, warm_files, base: dict, r: int, floor, backends, block_watch) -> list[dict]:
    """One repeat of ``cmd``: untraced, under each floor program, under each back end."""
    rows = []
    warm(*warm_files)
    wall, cpu = untraced(cmd, cwd)
    rows.append({**base, "backend": "none", "repeat": r, "command_s": wall, "command_cpu_s": cpu,
                 "calls": 0, "loadavg_1m": os.getloadavg()[0]})
    for kind in floor:
        warm(*warm_files)
        wall, cpu, n = probe_floor(cmd, cwd, kind)
        rows.append({**base, "backend": floor_name(kind), "repeat": r, "command_s": wall,
                     "command_cpu_s": cpu, "calls": n, "loadavg_1m": os.getloadavg()[0]})
    for b, kw in backends:
        warm(*warm_files)
        tr, rc = Tracer(watch=block_watch or warm_files[:1], sample=False, quiet=True, **kw).run(cmd, cwd=cwd)
        if rc != 0:  # a tracer that breaks the job: counted, not timed
            progress_line(f"{base['job']} under {b} exited with {rc}; counted in failed_runs")
            rows.append({**base, "backend": b, "repeat": r, "exit_status": rc,
                         "loadavg_1m": os.getloadavg()[0]})
            continue
        rows.append({**base, "backend": b, "repeat": r, "exit_status": 0,
                     "command_s": tr.meta["command_s"], "command_cpu_s": tr.meta["command_cpu_s"],
                     "calls": traced_calls(tr),
                     "block_requests": int((tr.events["layer"] == "block").sum()),
                     "lost": tr.meta.get("lost_events", 0),
                     "unparsed": tr.meta.get("unparsed_lines", 0),
                     "tracer_cpu_s": tr.meta.get("tracer_cpu_s"),
                     "probes": tr.meta.get("probes"),
                     "loadavg_1m": os.getloadavg()[0]})
    return rows


def progress_line(msg: str) -> None:
    print(f"trace bench: {msg}", file=sys.stderr, flush=True)


FLOOR_SYSCALLS = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
                  "pwritev", "pwritev2")


READY_TOKEN = "__READY_FILE__"


def probe_floor(cmd: list[str], cwd=None, kind: str = "tracepoint") -> tuple[float, float, int]:
    """(wall s, CPU s, calls) of ``cmd`` run with the least a syscall tracer of probe ``kind``
    can attach: the vector mode's exit hooks (``tracepoint``: the exit tracepoints; ``kfunc``:
    the fexit of the system-call functions), each with a program that only counts the
    command's calls (``comm`` filter). What that costs per call is the floor of any bpftrace
    tracer built on that kind of probe on this kernel."""
    wall, cpu, text = under_program(probe_program(os.path.basename(cmd[0])[:15], kind), cmd, cwd)
    n = [int(x.split(":")[1]) for x in text.splitlines() if x.startswith("@n:")]
    return wall, cpu, n[0] if n else 0


def probe_program(comm: str, kind: str = "tracepoint") -> str:
    """The floor's bpftrace program: every read/write exit hook of ``kind`` counts process
    ``comm``'s calls."""
    if kind not in bt.PROBE_KINDS:
        raise ValueError(f"kind = {kind!r}; allowed: {', '.join(bt.PROBE_KINDS)}")
    hook = "tracepoint:syscalls:sys_exit_{}" if kind == "tracepoint" else "kretfunc:__x64_sys_{}"
    probes = ",".join(hook.format(x) for x in FLOOR_SYSCALLS
                      if x in (bt._probe()["syscalls"] or FLOOR_SYSCALLS))
    return (f'BEGIN {{ system("touch {READY_TOKEN}"); }} {probes} /comm == "{comm}"/ {{ @n = count(); }} '
            'END { print(@n); clear(@n); }')


def under_program(prog: str, cmd: list[str], cwd=None) -> tuple[float, float, str]:
    """(wall s, CPU s, bpftrace's output) of ``cmd`` run untraced while the bpftrace program
    ``prog`` is attached (its ``BEGIN`` must touch the file :data:`READY_TOKEN`, replaced by a path)."""
    import signal
    with tempfile.TemporaryDirectory(prefix="dlio-trace-floor-") as tmp:
        ready, out = Path(tmp, "ready"), Path(tmp, "out")
        p = subprocess.Popen(["bpftrace", "--unsafe", "-o", str(out), "-e", prog.replace(READY_TOKEN, str(ready))],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            t0 = time.monotonic()
            while not ready.exists():
                if p.poll() is not None or time.monotonic() - t0 > 120:
                    raise RuntimeError("bpftrace (a bench program) did not start")
                time.sleep(0.02)
            wall, cpu = untraced(cmd, cwd)
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            try:
                # detaching its probes can take minutes on a loaded box (a fresh clone's make test
                # beside a traced stage: over 60 s); a bpftrace left running would trace the next bench
                p.wait(timeout=300)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise RuntimeError("bpftrace (a bench program) did not stop within 300 s of SIGINT") from None
        return wall, cpu, out.read_text() if out.exists() else ""


def default_backends() -> list[tuple[str, dict]]:
    """(name, Tracer keywords) of every back end and mode that can run here."""
    status = backend_status()
    out = []
    if status["bpftrace"]["ok"]:
        out.append(("bpftrace_timeline", {"backend": "bpftrace", "mode": "timeline"}))
        if bt.kernel_files_available()[0]:
            out.append(("bpftrace_vector", {"backend": "bpftrace", "mode": "vector", "probes": "tracepoint"}))
            if bt.probe_kind()[0] == "kfunc":
                out.append(("bpftrace_vector_kfunc", {"backend": "bpftrace", "mode": "vector", "probes": "kfunc"}))
    if status["strace"]["ok"]:
        out.append(("strace", {"backend": "strace"}))
    for release in dftracer_backend.RELEASES:
        if dftracer_backend.available(release)[0]:
            out.append((dftracer_backend.label(release), {"backend": "dftracer", "dftracer_release": release}))
    return out


def traced_calls(tr) -> int:
    """System calls the trace recorded (per-call rows, or the calls counted in the kernel)."""
    if tr.counts is not None:
        return int(tr.meta.get("vfs_calls_counted", tr.counts["calls"].sum()))
    return int((tr.events["layer"] == "vfs").sum())


def table(raw: pd.DataFrame) -> pd.DataFrame:
    """Per (job, back end): runs timed, runs the traced job failed in (``failed_runs``: a tracer
    that crashed it), median command seconds, calls, the wall-time and CPU overhead in
    percent over the untraced medians with their 95 % bootstrap intervals (ratio of medians,
    :func:`experiments.statistics.stats.ratio_of_medians`; ``*_lo``/``*_hi``), and the per-call CPU."""
    raw = raw.assign(tracer_cpu_s=raw.get("tracer_cpu_s"),
                     failed=(raw.get("exit_status", pd.Series(0, index=raw.index)).fillna(0) != 0))
    med = raw.groupby(["job", "backend"], sort=False).agg(
        block_kib=("block_kib", "first"), io_mib=("io_mib", "first"), runs=("command_s", "count"),
        failed_runs=("failed", "sum"),
        median_s=("command_s", "median"), cpu_s=("command_cpu_s", "median"), calls=("calls", "median"),
        tracer_cpu_s=("tracer_cpu_s", "median"), loadavg_1m=("loadavg_1m", "median")).reset_index()
    base = med[med.backend == "none"].set_index("job")
    for col, key in (("command_s", "overhead"), ("command_cpu_s", "cpu_overhead")):
        pts, los, his = [], [], []
        for job, b in zip(med.job, med.backend):
            x = raw[(raw.job == job) & (raw.backend == b)][col]
            y = raw[(raw.job == job) & (raw.backend == "none")][col]
            pt, ci = stats.ratio_of_medians(x, y, level=0.95)
            pts.append(100 * (pt - 1))
            los.append(100 * (ci.low - 1))
            his.append(100 * (ci.high - 1))
        med[f"{key}_pct"], med[f"{key}_lo"], med[f"{key}_hi"] = pts, los, his
    # what the probes cost inside each traced call (the traced command's extra CPU per call)
    med["probe_cpu_us_per_call"] = [1e6 * (m - base.loc[j, "cpu_s"]) / n if n else float("nan")
                                    for j, m, n in zip(med.job, med.cpu_s, med.calls)]
    med["tracer_cpu_us_per_call"] = 1e6 * med["tracer_cpu_s"] / med["calls"].where(med["calls"] > 0)
    return med.drop(columns=["tracer_cpu_s"])


# the vector mode's goals (issue 42): wall-time overhead in percent, per fio job
GOALS = {("bpftrace_vector", "fio_128k"): 3.0, ("bpftrace_vector", "fio_4k"): 15.0}


def per_call(raw: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per (job, back end) that counts its calls: what tracing adds to the traced command's CPU
    per call, in µs, with its interval over runs. Each repeat's traced run is set against the
    same repeat's untraced run (they alternate, so a slow spell of a loaded box slows both).

    Where the job has a start-up run beside it (job ``<job>_start``: the same command reading
    one block, :func:`fio_jobs`), what a run costs whatever its calls is taken out first:
    ``us_per_call`` is the median over runs of ((traced - untraced CPU s of the job) -
    (traced - untraced CPU s of its start-up run)) / (the job's calls - the start-up run's),
    and ``per_run_ms`` (``per_run_lo``/``per_run_hi``) the median of the start-up run's
    traced - untraced CPU in ms: a tracer's cost per run (its gate, the command's start-up
    under the probes), which dividing by the calls would have spread over them (issue 70: the
    quiet run of 2026-11-29 read the same 0.22 s a run at 16,500 and at 65,600 calls).
    Without one (``net_of_start`` False) it is (traced - untraced CPU s) / calls, per-run
    costs included. ``us_lo``/``us_hi``: the ``level`` interval
    (:func:`experiments.statistics.stats.median_ci`, the unit the run; ``us_coverage``: what it covers at
    this number of runs). The ``none`` row is the untraced command's own CPU per call (calls:
    the median the tracers counted; net of its start-up run where there is one)."""
    ok = raw[(raw.get("exit_status", pd.Series(0, index=raw.index)).fillna(0) == 0)]
    rows = []
    jobs = [j for j in ok["job"].unique() if not str(j).endswith("_start")]
    for job in jobs:
        g = ok[ok.job == job]
        s = ok[ok.job == f"{job}_start"]
        net = bool(len(s))
        base = g[g.backend == "none"].set_index("repeat")["command_cpu_s"]
        counted = g[(g.backend != "none") & (g["calls"] > 0)]
        if not len(counted):
            continue
        calls = float(counted["calls"].median())
        if net:
            s_base = s[s.backend == "none"].set_index("repeat")["command_cpu_s"]
            s_calls = float(s[(s.backend != "none") & (s["calls"] > 0)]["calls"].median())
            own = (base - s_base).dropna()
            pt, ci = stats.median_ci(1e6 * own / (calls - s_calls), level, of="runs")
        else:
            pt, ci = stats.median_ci(1e6 * base / calls, level, of="runs")
        rows.append({"job": job, "backend": "none", "runs": ci.n, "calls": calls, "us_per_call": pt,
                     "us_lo": ci.low, "us_hi": ci.high, "us_coverage": ci.coverage, "net_of_start": net})
        for b, gb in counted.groupby("backend", sort=False):
            gb = gb[gb["repeat"].isin(base.index)].set_index("repeat")
            extra = gb["command_cpu_s"] - base.loc[gb.index]
            n = gb["calls"].astype(float)
            row = {"job": job, "backend": b, "calls": float(gb["calls"].median()), "net_of_start": net}
            if net:
                sb = s[s.backend == b].set_index("repeat")
                sb = sb[sb.index.isin(s_base.index)]
                per_run = (sb["command_cpu_s"] - s_base.loc[sb.index]).reindex(extra.index)
                keep = per_run.notna()
                extra = extra[keep] - per_run[keep]
                n = n[keep] - sb["calls"].astype(float).reindex(n.index)[keep]
                rp, rci = stats.median_ci(1e3 * per_run[keep].to_numpy(), level, of="runs")
                row.update(per_run_ms=rp, per_run_lo=rci.low, per_run_hi=rci.high)
            pt, ci = stats.median_ci(1e6 * extra.to_numpy() / n.to_numpy(), level, of="runs")
            row.update(runs=ci.n, us_per_call=pt, us_lo=ci.low, us_hi=ci.high, us_coverage=ci.coverage)
            rows.append(row)
    cols = ["job", "backend", "runs", "calls", "us_per_call", "us_lo", "us_hi", "us_coverage", "net_of_start",
            "per_run_ms", "per_run_lo", "per_run_hi"]
    return pd.DataFrame(rows).reindex(columns=cols)


# issue 70's targets for the vector mode (each vector row: tracepoint and kfunc programs)
US_PER_CALL_GOAL = ("fio_4k", 0.4)      # µs per call at 4 KiB
CPU_GOAL = ("fio_4k", 10.0)             # % CPU at 4 KiB


def per_call_goals(t: pd.DataFrame, pc: pd.DataFrame, raw: pd.DataFrame) -> pd.DataFrame:
    """Issue 70's targets against each vector row, each verdict computed (:func:`goal_verdict`
    on the interval): µs per call at 4 KiB (:data:`US_PER_CALL_GOAL`), CPU overhead at 4 KiB
    (:data:`CPU_GOAL`), and at 128 KiB the traced runs' median CPU inside the untraced runs'
    own range (min to max: ``met`` inside, ``not met`` above)."""
    rows = []
    for b in sorted(x for x in t.backend.unique() if str(x).startswith("bpftrace_vector")):
        # (table, goal, its target's words, the value's columns): the same verdict for each
        for tab, (job, limit), words, (v, lo, hi) in (
                (pc, US_PER_CALL_GOAL, f"<= {US_PER_CALL_GOAL[1]:g} µs per call", ("us_per_call", "us_lo", "us_hi")),
                (t, CPU_GOAL, f"<= +{CPU_GOAL[1]:g} % CPU",
                 ("cpu_overhead_pct", "cpu_overhead_lo", "cpu_overhead_hi"))):
            r = tab[(tab.backend == b) & (tab.job == job)]
            if len(r):
                r = r.iloc[0]
                rows.append({"backend": b, "job": r.job, "target": words, "value": r[v], "lo": r[lo],
                             "hi": r[hi], "verdict": goal_verdict(r[lo], r[hi], limit + 1e-12)})
        x = raw[(raw.backend == b) & (raw.job == "fio_128k")]["command_cpu_s"].dropna()
        y = raw[(raw.backend == "none") & (raw.job == "fio_128k")]["command_cpu_s"].dropna()
        if len(x) and len(y):
            lo, hi, med = 100 * (y.min() / y.median() - 1), 100 * (y.max() / y.median() - 1), 100 * (x.median() / y.median() - 1)
            rows.append({"backend": b, "job": "fio_128k", "target": "CPU within the untraced runs' range",
                         "value": med, "lo": lo, "hi": hi,
                         "verdict": "met" if lo <= med <= hi else ("not met" if med > hi else "met (below)")})
    return pd.DataFrame(rows)


# published costs of eBPF probes (not measured here): ns per call, with their source
PUBLISHED = [
    ("cloudflare/ebpf_exporter benchmark", "empty probe, tracepoint", 15),
    ("cloudflare/ebpf_exporter benchmark", "empty probe, fentry", 24),
    ("cloudflare/ebpf_exporter benchmark", "empty probe, kprobe", 137),
    ("cloudflare/ebpf_exporter benchmark", "simple map update, fentry", "35-42"),
    ("cloudflare/ebpf_exporter benchmark", "complex map update, fentry", "96-103"),
    ("rezolus PR #1155 (tcp_sendmsg)", "fentry", 48),
    ("rezolus PR #1155 (tcp_sendmsg)", "kprobe", 110),
]


def image_set(directory: Path, n_images: int) -> Path:
    """A small ImageNet-like JPEG set (params.yaml's size mix and seed) in ``directory``, made once."""
    from ..settings import config
    from ..datasets import imagenet_like
    out = directory / f"imagenet_like-{n_images}"
    if not (out / imagenet_like.MANIFEST).exists():
        cfg = config.load(seed=None, imagenet_size_mix=None)
        imagenet_like.generate(out, imagenet_like.ImageNetLikeConfig(n_images=n_images, n_classes=4),
                               cfg.imagenet_size_mix, cfg.seed)
    return out


def goal_verdict(lo: float, hi: float, goal: float) -> str:
    """``met`` when the whole 95 % interval lies below the goal, ``not met`` when it lies at or
    above it, else ``undecided`` (the interval spans the goal, or there is none)."""
    if hi < goal:
        return "met"
    if lo >= goal:
        return "not met"
    return "undecided"


def goals(t: pd.DataFrame) -> pd.DataFrame:
    """The goals of :data:`GOALS` against the table's rows, each with its verdict on the wall
    and on the CPU overhead interval."""
    rows = []
    for (b, job), goal in GOALS.items():
        r = t[(t.backend == b) & (t.job == job)]
        if len(r):
            r = r.iloc[0]
            rows.append({"backend": b, "job": job, "goal_pct": goal, **{k: r[k] for k in (
                "overhead_pct", "overhead_lo", "overhead_hi", "cpu_overhead_pct", "cpu_overhead_lo",
                "cpu_overhead_hi")}, "wall_verdict": goal_verdict(r.overhead_lo, r.overhead_hi, goal),
                "cpu_verdict": goal_verdict(r.cpu_overhead_lo, r.cpu_overhead_hi, goal)})
    return pd.DataFrame(rows)


JOB_NAMES = ("fio_128k", "fio_4k") + read_jobs.JOBS
BACKEND_NAMES = ("bpftrace_timeline", "bpftrace_vector", "bpftrace_vector_kfunc", "strace")


def check_args(a) -> str:
    """The first bad argument as one line (the argument, its value, what is allowed), or ""."""
    for name in ("runs", "py_runs", "py_images", "io_mib", "epochs"):
        if getattr(a, name) < 1:
            return f"error: --{name.replace('_', '-')} = {getattr(a, name)}; allowed: an integer >= 1"
    bad = [j for j in a.jobs if j not in JOB_NAMES]
    if bad:
        return f"error: --jobs {' '.join(bad)}: unknown; allowed: {', '.join(JOB_NAMES)}"
    names = BACKEND_NAMES + tuple(dftracer_backend.label(r) for r in dftracer_backend.RELEASES)
    bad = [b for b in (getattr(a, "backends", None) or []) if b not in names]
    if bad:
        return f"error: --backends {' '.join(bad)}: unknown; allowed: {', '.join(names)}"
    return ""


def print_per_call(t: pd.DataFrame, pc: pd.DataFrame, pg: pd.DataFrame) -> None:
    """The µs-per-call table with the CPU overhead beside it, and issue 70's targets."""
    if not len(pc):
        return
    m = pc.merge(t[["job", "backend", "cpu_overhead_pct", "cpu_overhead_lo", "cpu_overhead_hi"]],
                 on=["job", "backend"], how="left")
    print("\nCost per call (µs of the traced command's CPU a call; 'none': the untraced command's own; "
          "median over runs of each repeat's traced minus untraced run, 95 % interval over runs, "
          "binomial order statistics) and the CPU overhead beside it:")
    print(m.to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
    for g in pg.itertuples():
        print(f"{g.backend} on {g.job}: {g.target}: {g.value:.2f} [{g.lo:.2f}, {g.hi:.2f}] -> {g.verdict}")
    print("Published (not measured here), ns per call: " + "; ".join(
        f"{src}: {what} {ns}" for src, what, ns in PUBLISHED))


def print_tables(t: pd.DataFrame, cov: pd.DataFrame | None, load: tuple, a) -> None:
    loaded = max(load[0][0], load[1][0]) > 0.5 * (os.cpu_count() or 1)
    print(f"\nTracing overhead, same alternating run: fio psync reads of a page-cached file (median of "
          f"{a.runs}), the Python read jobs over {a.py_images} ImageNet-like JPEGs (median of "
          f"{a.py_runs}; wall includes the interpreter's imports); host {os.uname().nodename}, "
          f"{os.cpu_count()} CPUs, load average {load[0][0]:.1f} before and {load[1][0]:.1f} after: "
          f"{'a loaded box, wall-time overheads are noisy' if loaded else 'an idle box'}")
    cols = ["job", "backend", "runs", "failed_runs", "median_s", "overhead_pct", "overhead_lo", "overhead_hi", "cpu_s",
            "cpu_overhead_pct", "cpu_overhead_lo", "cpu_overhead_hi", "calls", "probe_cpu_us_per_call",
            "tracer_cpu_us_per_call"]
    print(t[cols].to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
    for g in goals(t).itertuples():
        print(f"{g.backend} overhead on {g.job}: wall {g.overhead_pct:.1f} % [{g.overhead_lo:.1f}, "
              f"{g.overhead_hi:.1f}], CPU {g.cpu_overhead_pct:.1f} % [{g.cpu_overhead_lo:.1f}, "
              f"{g.cpu_overhead_hi:.1f}]; goal < {g.goal_pct:g} %: wall {g.wall_verdict}, CPU {g.cpu_verdict}")
    if cov is not None:
        from .coverage import per_file
        print("\nWhat each back end attributes on the known I/O job: per case and file, the bytes it "
              "attributed and its verdict against what the job did (calls too in coverage.csv):")
        print(per_file(cov).to_string())


REPORT_ROWS = ("none", "bpftrace_floor", "bpftrace_floor_kfunc", "bpftrace_vector", "bpftrace_vector_kfunc",
               "dftracer_2.2.0", "dftracer_1.0.2")


def report(folder: Path) -> str:
    """Markdown tables of a bench run's records in ``folder`` (``per_call.csv``,
    ``overhead.csv``, ``env.json``): per back end, µs per call and CPU overhead at 4 KiB and
    128 KiB with their 95 % intervals ("not measured" with the reason where a row could not
    run), then the published per-probe costs beside our floors and vector rows."""
    import json
    folder = Path(folder)
    pc = pd.read_csv(folder / "per_call.csv")
    t = pd.read_csv(folder / "overhead.csv")
    env = json.loads((folder / "env.json").read_text())
    nm = env.get("not_measured", {})
    jobs = [j for j in ("fio_4k", "fio_128k") if j in set(t.job)]

    def cell(df, job, b, col, lo, hi, fmt):
        r = df[(df.job == job) & (df.backend == b)]
        if not len(r):
            return "not measured"
        r = r.iloc[0]
        return f"{fmt(r[col])} [{fmt(r[lo])}, {fmt(r[hi])}]"
    us = lambda x: f"{x:.2f}"
    pct = lambda x: f"{x:+.0f}"
    head = ["back end"] + [f"{j} {w}" for j in jobs for w in ("µs per call", "CPU %")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    backends = [b for b in REPORT_ROWS if b in set(t.backend) or b in nm] + \
        [b for b in t.backend.unique() if b not in REPORT_ROWS]
    for b in backends:
        if b not in set(t.backend):
            lines.append(f"| `{b}` | " + " | ".join([f"not measured ({nm.get(b, '?')})"] + [""] * (len(head) - 2)) + " |")
            continue
        cells = []
        for j in jobs:
            cells += [cell(pc, j, b, "us_per_call", "us_lo", "us_hi", us),
                      cell(t, j, b, "cpu_overhead_pct", "cpu_overhead_lo", "cpu_overhead_hi", pct)]
        lines.append(f"| `{b}` | " + " | ".join(cells) + " |")
    lines += ["", "| published (not measured here) | what | ns per call |", "|---|---|---|"]
    lines += [f"| {src} | {what} | {ns} |" for src, what, ns in PUBLISHED]
    return "\n".join(lines) + "\n"


def _bpftrace_version() -> str | None:
    exe = shutil.which("bpftrace")
    if not exe:
        return None
    p = subprocess.run([exe, "--version"], capture_output=True, text=True)
    return p.stdout.strip() or None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.trace.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None,
                    help="folder for the 256 MiB test file and the JPEGs (default: a folder in "
                         "/dev/shm, so that no other job's cache dropping turns the page-cache reads "
                         "into disk reads)")
    ap.add_argument("--runs", type=int, default=6,
                    help="runs of each fio job (6: the fewest whose median interval reaches 95 %%)")
    ap.add_argument("--io-mib", type=int, default=2048)
    ap.add_argument("--py-runs", type=int, default=3, help="runs of each Python read job")
    ap.add_argument("--py-images", type=int, default=256, help="JPEGs the Python jobs read")
    ap.add_argument("--epochs", type=int, default=2, help="epochs of the Python jobs")
    ap.add_argument("--jobs", nargs="+", default=list(JOB_NAMES), help=f"of {', '.join(JOB_NAMES)}")
    ap.add_argument("--no-coverage", action="store_true", help="leave out the coverage table")
    ap.add_argument("--backends", nargs="+", default=None,
                    help="only these back ends (of those that can run here; the untraced runs and the "
                         "floors always run)")
    ap.add_argument("--short", action="store_true",
                    help="a quick check: the fio jobs only, 64 MiB each, 2 runs, no coverage table "
                         "(intervals then cover less than 95 %%; for a smoke test, not for figures)")
    ap.add_argument("--out", default=None, help="folder for overhead.csv, raw.csv, coverage.csv, "
                                                "env.json (default: results/trace_bench)")
    ap.add_argument("--report", default=None, metavar="DIR",
                    help="measure nothing: print the Markdown tables of the records in DIR (per_call.csv, "
                         "overhead.csv, env.json), as docs/tracing.md shows them")
    a = ap.parse_args(argv)
    if a.report:
        if not (Path(a.report) / "per_call.csv").exists():
            print(f"error: --report {a.report}: no per_call.csv there; allowed: a folder a bench run wrote",
                  file=sys.stderr)
            return 2
        print(report(Path(a.report)), end="")
        return 0
    if a.short:
        a.jobs, a.io_mib, a.runs, a.no_coverage = [j for j in a.jobs if j.startswith("fio_")], 64, 2, True
    if check_args(a):  # before any work
        print(check_args(a), file=sys.stderr)
        return 2
    shm = Path("/dev/shm")
    d = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(
        prefix=f"dlio-trace-bench-{paths.checkout_id()}-", dir=shm if shm.is_dir() else None))
    if not shutil.which("fio"):
        print("fio is not installed; nothing to measure")
        return 1
    not_measured = {name: s["why"] for name, s in backend_status().items() if not s["ok"] and name != "dftracer"}
    if backend_status()["bpftrace"]["ok"] and bt.probe_kind()[0] != "kfunc":
        not_measured["bpftrace_floor_kfunc"] = not_measured["bpftrace_vector_kfunc"] = bt.probe_kind()[1]
    not_measured.update({dftracer_backend.label(r): dftracer_backend.available(r)[1]
                         for r in dftracer_backend.RELEASES if not dftracer_backend.available(r)[0]})
    for name, why in not_measured.items():
        print(f"{name}: not measured ({why})")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the tf.data job's start-up lines
    load0 = os.getloadavg()
    jobs = [j for j in fio_jobs(d, a.io_mib) if j["job"] in a.jobs]
    py = [n for n in read_jobs.JOBS if n in a.jobs]
    if py:
        jobs += python_jobs(image_set(d, a.py_images), a.epochs, names=py)
    # the block layer is traced on the project's disk (every request on it, as the thesis did)
    backends = [(n, kw) for n, kw in default_backends() if a.backends is None or n in a.backends]
    raw = measure(jobs, a.runs, backends, block_watch=[paths.root()], runs_of={n: a.py_runs for n in py})
    cov = None
    if not a.no_coverage:
        from . import coverage
        progress_line("coverage: the known I/O job under each back end")
        cov = coverage.measure(directory=d)
    load1 = os.getloadavg()
    t = table(raw)
    pc = per_call(raw)
    pg = per_call_goals(t, pc, raw)
    print_tables(t, cov, (load0, load1), a)
    print_per_call(t, pc, pg)
    out = Path(a.out) if a.out else paths.results_dir("trace_bench")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "overhead.csv", lambda p: t.to_csv(p, index=False))
    atomic_write(out / "raw.csv", lambda p: raw.to_csv(p, index=False))
    atomic_write(out / "goals.csv", lambda p: goals(t).to_csv(p, index=False))
    atomic_write(out / "per_call.csv", lambda p: pc.to_csv(p, index=False))
    atomic_write(out / "per_call_goals.csv", lambda p: pg.to_csv(p, index=False))
    if cov is not None:
        atomic_write(out / "coverage.csv", lambda p: cov.to_csv(p, index=False))
    write_json(out / "env.json", envinfo.capture(
        stage="trace_bench", runs=a.runs, py_runs=a.py_runs, py_images=a.py_images,
        epochs=a.epochs, io_mib=a.io_mib, jobs=a.jobs, not_measured=not_measured, short=a.short,
        tracer_programs={b: sorted(set(g.dropna())) for b, g in raw.groupby("backend")["probes"]}
        if "probes" in raw else {}, floors=floor_kinds(), why_not_kfunc=bt.probe_kind()[1],
        bpftrace_version=_bpftrace_version(), published_ns_per_call=PUBLISHED,
        dftracer_libraries={dftracer_backend.label(r): {"version": dftracer_backend.version(r),
                                                        "library": str(dftracer_backend.preload_library(r)[0])}
                            for r in dftracer_backend.RELEASES if dftracer_backend.available(r)[0]},
        loadavg_before=load0, loadavg_after=load1))
    print(f"\n-> {out}/overhead.csv, raw.csv, goals.csv{', coverage.csv' if cov is not None else ''}, env.json")
    if not a.dir:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
