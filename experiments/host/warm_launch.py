"""Warm launch: start-up paid once per stage, each run still a fresh process.

A fresh rank process spends most of a short run starting: Python, numpy, the framework
(``import torch`` about 3 s, ``import tensorflow`` and Keras about 5 s on the 2-core reference
box). A **warm parent** (a fork server, one per framework and stage) imports those modules once;
every rank of every run is then a process forked from it (:class:`Parent`), which runs the rank
program (``python -m MODULE ARGS`` as ``__main__``) with the environment a fresh launch gives it
and writes its output to the run's log. What every run shares is what fresh processes share
anyway, the imported code's pages (copy-on-write) and the page cache; each run has its own
process, process group, model, data loader, random state and files.

Why not :mod:`multiprocessing`'s ``forkserver``: it is one per process with one preload list,
and a stage runs PyTorch and TensorFlow workloads whose runs must not carry the other framework
(its memory, its threads). The parent here is the same mechanism, one per framework.

What a forked run does not inherit, made as a fresh process has it:

- **threads**: the parent imports with ``OMP_NUM_THREADS=1`` and ``OPENBLAS_NUM_THREADS=1`` so
  that no thread pool starts before the fork; the one thread allowed to be alive at a fork is
  jemalloc's background thread (pyarrow's allocator, which pandas loads; jemalloc's fork
  handlers make the fork safe), checked at start (:data:`ALLOWED_THREADS`). The run sets its
  own environment and its BLAS and OpenMP pools to its ``OMP_NUM_THREADS``
  (``threadpoolctl``), as a fresh process reads it at load.
- **random state**: numpy's and PyTorch's global generators are re-seeded from the OS in each
  run (Python's ``random`` re-seeds itself at fork); the workloads seed what they draw from
  ``run.json`` anyway.
- **rusage**: a forked run's CPU time and peak RSS count from the fork; the parent reports
  each run's CPU seconds (its own and its waited-for children's, ``wait4``) for ``usage.json``.

What a forked run does share with its siblings: the parent's address-space layout (libraries
are where the parent loaded them; fresh processes get a new layout each) and Python's string
hash seed. Whether that shrinks the variance between runs is measured, not assumed
(:mod:`experiments.workloads.launch_bench`, docs/statistics.md "Warm launch").

Runs across several machines (torchrun's c10d rendezvous, the emulator's Slurm script) still
start with torchrun: a warm parent serves one host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

# modules a warm parent imports, per framework: what the rank programs import before their
# first step (the rank program itself is not preloaded: runpy runs it as __main__, as -m does)
PRELOAD = {
    "torch": ["numpy", "pandas", "scipy.ndimage", "torch", "torch.nn", "torch.nn.functional",
              "torch.distributed", "torch.nn.parallel", "torch.utils.data",
              "torch._dynamo",   # what DDP and the optimizers import at first use: ~8 s here
              "experiments.workloads.loop", "experiments.workloads.rank",
              "experiments.workloads.step_compute", "experiments.workloads.steptimer"],
    "tensorflow": ["numpy", "pandas", "tensorflow", "keras", "experiments.workloads.loop",
                   "experiments.workloads.step_compute", "experiments.workloads.steptimer",
                   "experiments.workloads.data_bert"],
}
FRAMEWORKS = tuple(PRELOAD)
# threads that may be alive in the parent when it forks (names from /proc/self/task/*/comm)
ALLOWED_THREADS = ("jemalloc_bg_thd",)
QUIET = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
         "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def thread_names() -> list[str]:
    """The names of this process's threads other than the calling one."""
    me = threading.get_native_id()
    out = []
    for t in os.listdir("/proc/self/task"):
        if int(t) == me:
            continue
        try:
            out.append(Path(f"/proc/self/task/{t}/comm").read_text().strip())
        except OSError:   # ended meanwhile
            pass
    return out


class WarmProc:
    """One forked run process, as :class:`subprocess.Popen` is used by the launchers: ``pid``,
    :meth:`poll`, :meth:`wait`, :meth:`kill`; ``cpu_s``: its CPU seconds once it has ended."""

    def __init__(self, parent: "Parent", pid: int):
        self.parent, self.pid = parent, pid
        self.returncode: int | None = None
        self.cpu_s = float("nan")
        self._done = threading.Event()

    def _ended(self, code: int, cpu_s: float) -> None:
        self.returncode, self.cpu_s = code, cpu_s
        self._done.set()

    def poll(self) -> int | None:
        if not self._done.is_set() and not self.parent.alive():
            self._ended(-9, float("nan"))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while not self._done.wait(0.2):
            if self.poll() is not None:
                break
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"warm run {self.pid}", timeout)
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass


class Parent:
    """A warm parent of ``framework`` (:data:`PRELOAD`): started here, ready when it has
    imported its modules (``import_s``: the seconds that took, paid once). :meth:`start` forks
    a run process from it. Use as a context manager (or :meth:`close`)."""

    def __init__(self, framework: str, timeout_s: float = 600):
        if framework not in PRELOAD:
            raise ValueError(f"framework = {framework!r}; allowed: {', '.join(FRAMEWORKS)}")
        from ..settings import paths

        self.framework = framework
        env = {**os.environ, **QUIET,
               "PYTHONPATH": str(paths.root()) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self._proc = subprocess.Popen([sys.executable, "-m", "experiments.host.warm_launch", framework],
                                      cwd=paths.root(), env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = self._proc.pid   # what a tracer started later follows (its forks are the runs)
        self._lock = threading.Lock()
        self._runs: dict[int, WarmProc] = {}
        self._started: dict[int, list] = {}
        self._next = 0
        self._ready = threading.Event()
        self.info: dict = {}
        self._err: list[str] = []
        threading.Thread(target=self._drain_err, daemon=True).start()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(timeout_s) or not self.info:
            self.close()
            raise RuntimeError(f"warm parent ({framework}) did not start: {''.join(self._err)[-3000:]}")
        self.import_s = self.info["import_s"]

    def _drain_err(self) -> None:
        for line in self._proc.stderr:
            self._err = (self._err + [line])[-200:]

    def _read(self) -> None:
        for line in self._proc.stdout:
            msg = json.loads(line)
            if "ready" in msg:
                self.info = msg["ready"]
                self._ready.set()
            elif "id" in msg:   # forked: registered before its exit can be reported
                run = WarmProc(self, msg["pid"])
                with self._lock:
                    self._runs[run.pid] = run
                    box = self._started.pop(msg["id"])
                box.append(run)
                box[0].set()
            elif "exit" in msg:
                with self._lock:
                    run = self._runs.pop(msg["pid"], None)
                if run is not None:
                    run._ended(msg["exit"], msg["cpu_s"])
        self._ready.set()   # the parent ended (before ready, or later)
        with self._lock:
            for box in self._started.values():
                box[0].set()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def start(self, module: str, argv: list[str], env: dict, log, cwd=None) -> WarmProc:
        """Fork a process that runs ``python -m module argv...`` with environment ``env`` (the
        whole of it), its stdout and stderr appended to the file ``log`` (a path or an open
        file's name), in ``cwd`` (default: the repository's root)."""
        from ..settings import paths

        if not self.alive():
            raise RuntimeError(f"warm parent ({self.framework}) has ended: {''.join(self._err)[-3000:]}")
        log = log.name if hasattr(log, "write") else log   # an open file: its path
        with self._lock:
            rid, self._next = self._next, self._next + 1
            box = [threading.Event()]
            self._started[rid] = box
        req = {"id": rid, "module": module, "argv": [str(a) for a in argv], "env": dict(env),
               "cwd": str(cwd or paths.root()), "log": str(log)}
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        box[0].wait()
        if len(box) < 2:
            raise RuntimeError(f"warm parent ({self.framework}) ended before it forked {module}: "
                               f"{''.join(self._err)[-3000:]}")
        return box[1]

    def close(self) -> None:
        """End the parent (its runs have ended or are killed with it)."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Parents:
    """One :class:`Parent` per framework, started when first asked for, closed together (a
    stage's runs share them); ``import_s``: each started parent's import seconds.

    ``multi_rank``: whether runs of several ranks are forked too (:meth:`serves`; each rank with
    torchrun's environment). The workload stages fork them: two DLRM ranks forked from one parent
    were slower than two fresh ranks in alternating rounds on 2026-11-28 (forward 73 against 40 ms),
    which did not recur, and under the same load (pairs at the same time) a forked pair computed
    as fast as a fresh one (docs/statistics.md, "Two forked ranks: the same load"). Off by
    default, for callers that have not measured it (their runs of several ranks start fresh)."""

    def __init__(self, multi_rank: bool = False):
        self._parents: dict[str, Parent] = {}
        self.multi_rank = multi_rank

    def serves(self, ranks: int) -> bool:
        """Whether a run of ``ranks`` ranks is forked from these parents."""
        return ranks == 1 or self.multi_rank

    def get(self, framework: str) -> Parent:
        if framework not in self._parents or not self._parents[framework].alive():
            self._parents[framework] = Parent(framework)
        return self._parents[framework]

    def start(self, frameworks) -> "Parents":
        """Start the parents of ``frameworks`` now (before a stage's first run, so that no run's
        wall time carries a parent's imports)."""
        for f in frameworks:
            self.get(f)
        return self

    @property
    def import_s(self) -> dict[str, float]:
        return {k: p.import_s for k, p in self._parents.items()}

    def close(self) -> None:
        while self._parents:
            self._parents.popitem()[1].close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------- the parent process itself

def _child(req: dict) -> None:
    """In the forked process: become the run (environment, files, threads, random state), run
    the module as ``__main__``, exit with its code (never returns)."""
    import runpy
    import traceback

    code = 1
    try:
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        fd = os.open(req["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.closerange(3, 65536)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        threads = int(req["env"].get("OMP_NUM_THREADS") or (os.cpu_count() or 1))
        import threadpoolctl

        threadpoolctl.threadpool_limits(threads)   # the pools a fresh process sizes from its environment
        import numpy as np

        np.random.seed()   # from the OS, as a fresh process's
        if "torch" in sys.modules:
            sys.modules["torch"].seed()
        sys.argv = [req["module"], *req["argv"]]
        try:
            runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        import atexit

        atexit._run_exitfuncs()   # what a fresh interpreter runs at exit
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(framework: str) -> int:
    """The parent: import :data:`PRELOAD` ``[framework]``, check its threads, say ``ready``
    (JSON on stdout), then fork one run per request line on stdin and report each run's pid
    and, once it has ended, its exit code and CPU seconds. Ends at the end of stdin, after its
    runs have ended."""
    import importlib
    import selectors

    t0 = time.perf_counter()
    for m in PRELOAD[framework]:
        importlib.import_module(m)
    import_s = time.perf_counter() - t0
    alive = [n for n in thread_names() if n not in ALLOWED_THREADS]
    if alive:
        print(f"warm parent ({framework}): threads alive after the imports ({alive}); a fork would "
              f"copy their locks, not the threads. Allowed: {list(ALLOWED_THREADS)}", file=sys.stderr)
        return 3
    out = sys.stdout

    def say(msg: dict) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    say({"ready": {"pid": os.getpid(), "import_s": import_s, "framework": framework,
                   "threads_at_fork": thread_names()}})
    running, buf, open_in = set(), b"", True
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ)
    while open_in or running:
        if open_in and sel.select(timeout=0.1):
            data = os.read(0, 1 << 16)   # raw: a buffered reader would hide lines from select
            if not data:
                open_in = False
                sel.unregister(0)
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                req = json.loads(line)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(req)
                running.add(pid)
                say({"id": req["id"], "pid": pid})
        elif not open_in:
            time.sleep(0.1)
        while running:
            try:
                pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                running.clear()
                break
            if pid == 0:
                break
            running.discard(pid)
            say({"pid": pid, "exit": os.waitstatus_to_exitcode(status), "cpu_s": ru.ru_utime + ru.ru_stime})
    return 0


def probe(path: str) -> None:
    """Write what makes this process a run of its own (JSON at ``path``): pid, parent pid,
    ``OMP_NUM_THREADS``, PyTorch's intra-op threads (None without torch loaded), a draw from
    numpy's and PyTorch's global generators, the string hash seed's effect (hash of "run")."""
    import numpy as np

    torch = sys.modules.get("torch")
    Path(path).write_text(json.dumps({
        "pid": os.getpid(), "ppid": os.getppid(), "omp": os.environ.get("OMP_NUM_THREADS"),
        "torch_threads": torch.get_num_threads() if torch else None,
        "np_draw": float(np.random.random()), "torch_draw": float(torch.rand(1)) if torch else None,
        "hash": hash("run")}))
    print("probe written", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "probe":
        probe(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) != 2 or sys.argv[1] not in PRELOAD:
        raise SystemExit(f"usage: python -m experiments.host.warm_launch {{{','.join(FRAMEWORKS)}}} "
                         "| probe FILE")
    sys.exit(serve(sys.argv[1]))
