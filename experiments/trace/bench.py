"""Benchmark (not a test): run-time overhead of each tracing back end and mode, and what each
one sees (issue 42).

``python -m experiments.trace.bench [--dir DIR] [--repeats N] [--io-mib M] [--py-repeats N]
[--py-images N] [--epochs N] [--jobs ...] [--no-coverage] [--out DIR]`` prints, for each job,
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

from .. import envinfo, paths, stats
from ..results import atomic_write, write_json
from . import bpftrace_backend as bt
from . import dftracer_backend, read_jobs
from .tracer import Tracer, backend_status, wait_cpu


def fio_cmd(path: Path, bs_kib: int, io_mib: int, file_mib: int) -> list[str]:
    return [shutil.which("fio") or "fio", "--name=bench", f"--filename={path}", "--rw=read",
            f"--bs={bs_kib}k", f"--size={file_mib}m", f"--io_size={io_mib}m", "--ioengine=psync",
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
    """fio reading a ``file_mib`` MiB file (written once in ``directory``) at each block size."""
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
                    "io_mib": io, "warm": [data]})
    return out


def python_jobs(folder: Path, epochs: int = 1, workers: int = 2, names=read_jobs.JOBS) -> list[dict]:
    """The Python read jobs of :mod:`.read_jobs` over the ImageNet-like set in ``folder``."""
    files = [Path(f) for f in read_jobs.files_of(folder)]
    io = sum(f.stat().st_size for f in files) * epochs / 2**20
    return [{"job": n, "cmd": [sys.executable, "-m", "experiments.trace.read_jobs", n, str(folder),
                               "--epochs", str(epochs), "--workers", str(workers), "--quiet"],
             "block_kib": float("nan"), "io_mib": round(io, 1), "warm": files, "cwd": str(paths.root())}
            for n in names]


def measure(jobs: list[dict], repeats: int = 5, backends=None, block_watch=None,
            floor: bool | None = None, repeats_of=None) -> pd.DataFrame:
    """One row per (job, back end, repeat): ``command_s`` (wall), ``command_cpu_s`` and the
    calls traced; untraced and traced runs alternate within each repeat. ``block_watch``: paths
    whose device the block layer is traced on. ``repeats_of``: job -> repeats (default ``repeats``)."""
    if backends is None:
        backends = default_backends()
    if floor is None:
        floor = backend_status()["bpftrace"]["ok"]
    rows = []
    for job in jobs:
        cmd, cwd = job["cmd"], job.get("cwd")
        base = {"job": job["job"], "block_kib": job["block_kib"], "io_mib": job["io_mib"]}
        untraced(cmd, cwd)  # warm the page cache and the program
        n_rep = (repeats_of or {}).get(job["job"], repeats)
        for r in range(n_rep):
            progress_line(f"{job['job']}: repeat {r + 1}/{n_rep}")
            warm(*job["warm"])
            wall, cpu = untraced(cmd, cwd)
            rows.append({**base, "backend": "none", "repeat": r, "command_s": wall, "command_cpu_s": cpu,
                         "calls": 0, "loadavg_1m": os.getloadavg()[0]})
            if floor:
                warm(*job["warm"])
                wall, cpu, n = probe_floor(cmd, cwd)
                rows.append({**base, "backend": "bpftrace_floor", "repeat": r, "command_s": wall,
                             "command_cpu_s": cpu, "calls": n, "loadavg_1m": os.getloadavg()[0]})
            for b, kw in backends:
                warm(*job["warm"])
                tr, rc = Tracer(watch=block_watch or job["warm"][:1], sample=False, quiet=True, **kw).run(cmd, cwd=cwd)
                if rc != 0:  # a tracer that breaks the job: counted, not timed
                    progress_line(f"{job['job']} under {b} exited with {rc}; counted in failed_runs")
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
                             "loadavg_1m": os.getloadavg()[0]})
    return pd.DataFrame(rows)


def progress_line(msg: str) -> None:
    print(f"trace bench: {msg}", file=sys.stderr, flush=True)


FLOOR_SYSCALLS = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
                  "pwritev", "pwritev2")


READY_TOKEN = "__READY_FILE__"


def probe_floor(cmd: list[str], cwd=None) -> tuple[float, float, int]:
    """(wall s, CPU s, calls) of ``cmd`` run with the least a syscall tracer can attach: the
    same exit tracepoints as the vector mode, each with a program that only counts the
    command's calls (``comm`` filter). What that costs per call is the floor of any
    bpftrace tracer built on syscall tracepoints on this kernel."""
    wall, cpu, text = under_program(probe_program(os.path.basename(cmd[0])[:15]), cmd, cwd)
    n = [int(x.split(":")[1]) for x in text.splitlines() if x.startswith("@n:")]
    return wall, cpu, n[0] if n else 0


def probe_program(comm: str) -> str:
    """The floor's bpftrace program: every read/write exit tracepoint counts process ``comm``'s calls."""
    probes = ",".join(f"tracepoint:syscalls:sys_exit_{x}" for x in FLOOR_SYSCALLS
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
            p.wait(timeout=60)
        return wall, cpu, out.read_text() if out.exists() else ""


def default_backends() -> list[tuple[str, dict]]:
    """(name, Tracer keywords) of every back end and mode that can run here."""
    status = backend_status()
    out = []
    if status["bpftrace"]["ok"]:
        out.append(("bpftrace_timeline", {"backend": "bpftrace", "mode": "timeline"}))
        if bt.kernel_files_available()[0]:
            out.append(("bpftrace_vector", {"backend": "bpftrace", "mode": "vector"}))
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
    :func:`experiments.stats.ratio_of_medians`; ``*_lo``/``*_hi``), and the per-call CPU."""
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


def image_set(directory: Path, n_images: int) -> Path:
    """A small ImageNet-like JPEG set (params.yaml's size mix and seed) in ``directory``, made once."""
    from .. import config
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


def check_args(a) -> str:
    """The first bad argument as one line (the argument, its value, what is allowed), or ""."""
    for name in ("repeats", "py_repeats", "py_images", "io_mib", "epochs"):
        if getattr(a, name) < 1:
            return f"error: --{name.replace('_', '-')} = {getattr(a, name)}; allowed: an integer >= 1"
    bad = [j for j in a.jobs if j not in JOB_NAMES]
    if bad:
        return f"error: --jobs {' '.join(bad)}: unknown; allowed: {', '.join(JOB_NAMES)}"
    return ""


def print_tables(t: pd.DataFrame, cov: pd.DataFrame | None, load: tuple, a) -> None:
    loaded = max(load[0][0], load[1][0]) > 0.5 * (os.cpu_count() or 1)
    print(f"\nTracing overhead, same alternating run: fio psync reads of a page-cached file (median of "
          f"{a.repeats}), the Python read jobs over {a.py_images} ImageNet-like JPEGs (median of "
          f"{a.py_repeats}; wall includes the interpreter's imports); host {os.uname().nodename}, "
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.trace.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None,
                    help="folder for the 256 MiB test file and the JPEGs (default: a folder in "
                         "/dev/shm, so that no other job's cache dropping turns the page-cache reads "
                         "into disk reads)")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of each fio job")
    ap.add_argument("--io-mib", type=int, default=2048)
    ap.add_argument("--py-repeats", type=int, default=3, help="repeats of each Python read job")
    ap.add_argument("--py-images", type=int, default=256, help="JPEGs the Python jobs read")
    ap.add_argument("--epochs", type=int, default=2, help="epochs of the Python jobs")
    ap.add_argument("--jobs", nargs="+", default=list(JOB_NAMES), help=f"of {', '.join(JOB_NAMES)}")
    ap.add_argument("--no-coverage", action="store_true", help="leave out the coverage table")
    ap.add_argument("--out", default=None, help="folder for overhead.csv, raw.csv, coverage.csv, "
                                                "env.json (default: results/trace_bench)")
    a = ap.parse_args(argv)
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
    raw = measure(jobs, a.repeats, block_watch=[paths.root()], repeats_of={n: a.py_repeats for n in py})
    cov = None
    if not a.no_coverage:
        from . import coverage
        progress_line("coverage: the known I/O job under each back end")
        cov = coverage.measure(directory=d)
    load1 = os.getloadavg()
    t = table(raw)
    print_tables(t, cov, (load0, load1), a)
    out = Path(a.out) if a.out else paths.results_dir("trace_bench")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "overhead.csv", lambda p: t.to_csv(p, index=False))
    atomic_write(out / "raw.csv", lambda p: raw.to_csv(p, index=False))
    atomic_write(out / "goals.csv", lambda p: goals(t).to_csv(p, index=False))
    if cov is not None:
        atomic_write(out / "coverage.csv", lambda p: cov.to_csv(p, index=False))
    write_json(out / "env.json", envinfo.capture(
        stage="trace_bench", repeats=a.repeats, py_repeats=a.py_repeats, py_images=a.py_images,
        epochs=a.epochs, io_mib=a.io_mib, jobs=a.jobs, not_measured=not_measured,
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
