"""Shared fixtures and the test-time table.

The smoke pipeline runs once per test session in a temporary copy of the project (``DLIO_ROOT``
points the package there) on the smoke profile, through DVC and papermill exactly as ``dvc
repro`` does; the smoke tests then assert on the files each notebook wrote. A smoke test of a
stage that ``SMOKE_STAGES`` left out is skipped (see ``stage_results``).

The smoke ``dvc repro`` starts in the background when the session starts (the whole suite, as
``make test`` runs it) or as soon as collection shows that a smoke test will run, and the smoke
tests are ordered last: the unit tests run beside the pipeline, whose
stages mostly keep one of the box's two cores busy. Once the pipeline has ended the unit tests,
one at a time, leave a core idle: the tests' self-contained subprocess work (``Background``: make
figures, make decide, the DVC edits) runs there, one job after another, before its tests come.
At the end of the session a table lists the
slowest tests and every smoke stage's wall time (from its ``env.json``), so that where the
minutes go is visible in every CI log."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def project_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files of the project (what a fresh clone has)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    # reference/ (the shipped reference run and its DVC store) is no part of what the smoke
    # pipeline runs: left out of the copies, which would carry its store for nothing
    return [f for f in out.split("\0") if f and (ROOT / f).is_file() and not f.startswith("reference/")]


def tree_digest(folder: Path) -> str:
    """SHA-256 (hex) of every file under ``folder``: its path relative to ``folder`` and its
    bytes, in sorted order. Equal digests: the same files with the same contents."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(Path(folder).rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(folder)).encode() + f.read_bytes())
    return h.hexdigest()


@pytest.fixture
def digest():
    """:func:`tree_digest`, for tests that compare generated folders."""
    return tree_digest


# The smoke pipeline's priority once a test waits for it (the unit tests keep 0): about 3:1 for a
# shared core. Until then it runs at 0 beside the unit tests: while they run, they are the suite's
# critical path (the fresh-clone CI of 6e21fcb: the pipeline done at 487 s at -5, the unit tests at
# 888 s), so both share the box as equals; the first test that waits makes it the critical path.
PIPELINE_NICE = -5


def stage_graph(root: Path) -> dict[str, set[str]]:
    """Every stage of the project at ``root`` and the stages it depends on (DVC's own graph)."""
    import warnings

    from dvc.repo import Repo

    with warnings.catch_warnings():   # DVC's own deprecation notices, not the project's
        warnings.simplefilter("ignore")
        with Repo(str(root)) as repo:
            g = repo.index.graph   # edge: stage -> a stage it depends on
            # a .dvc file's data source (reference/run.dvc) is tracked data, not a stage to run
            return {s.name: {d.name for d in g.successors(s) if not d.is_data_source} for s in g.nodes
                    if not s.is_data_source}


PARALLEL = 2   # stages run side by side: many mostly wait (sleeping ranks, tracer attach,
               # process start-up), so two at a time fill the box's two cores

# Stages never run side by side: both evict the same data set (caltech_like's copy on the disk
# tier) and read it, so one's reads refill the page cache the other has just emptied, and its
# cold runs (asserted by the smoke tests) are warm.
APART = [{"alexnet_prefetch", "alexnet_checkpoint"}]


def apart_from(stage: str, running) -> bool:
    """Whether ``stage`` may not start while the stages ``running`` run (:data:`APART`)."""
    return any(stage in g and g & set(running) for g in APART)

# Rough smoke-profile seconds of the long stages (from the suite's stage table), only to start
# the longest chain first; any other stage counts 10 s. A wrong figure costs time, not results.
HINT_S = {"traced_comparison": 150, "workload_sleep": 50, "emulator_patterns": 70,
          "workload_random": 60, "dlrm": 50, "bert": 45, "tracing_patterns": 30, "blog": 30,
          "workload_fits": 25, "unet3d": 25, "workload_validation": 25, "alexnet_prefetch": 20,
          "alexnet_checkpoint": 20, "tfdata_read": 15, "llm_checkpoint": 30}


def critical_path(deps: dict[str, set[str]]) -> dict[str, float]:
    """Per stage, its hinted seconds plus the longest hinted chain of stages that wait for it:
    the order in which ready stages start (longest first, as list scheduling does)."""
    after: dict[str, set[str]] = {s: set() for s in deps}
    for s, ds in deps.items():
        for d in ds:
            after.setdefault(d, set()).add(s)
    memo: dict[str, float] = {}

    def cp(s: str) -> float:
        if s not in memo:
            memo[s] = HINT_S.get(s, 10) + max((cp(t) for t in after[s]), default=0)
        return memo[s]

    return {s: cp(s) for s in deps}


class SmokeRun:
    """``dvc repro`` of the smoke profile in a copy of the project, run in the background."""

    def __init__(self, base: Path):
        self.root = base / "project"
        self.log = base / "repro.log"
        for f in project_files():
            (self.root / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, self.root / f)
        self.env = {**os.environ, "DLIO_ROOT": str(self.root),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        for cmd in ([sys.executable, "-m", "experiments.pipeline.profile", "smoke"],
                    ["dvc", "config", "--local", "core.no_scm", "true"]):
            subprocess.run(cmd, cwd=self.root, env=self.env, check=True, stdout=subprocess.DEVNULL)
        # SMOKE_STAGES="a b" limits the run to those stages and what they depend on (for work on
        # one stage); CI and `make test` leave it unset and run the whole pipeline.
        self.t0 = time.monotonic()
        self.wall_s: float | None = None
        targets = os.environ.get("SMOKE_STAGES", "").split()
        # the whole pipeline: stage by stage (`dvc repro -s`), PARALLEL at a time, each as soon
        # as the stages it depends on are done; SMOKE_STAGES: one `dvc repro` of those
        self._deps = {} if targets else stage_graph(self.root)
        self._rank = critical_path(self._deps)
        self._done: set[str] = set()
        self._running: dict[str, subprocess.Popen] = {}
        self._procs: list[subprocess.Popen] = []
        self._logs: list[Path] = []
        self._rc: int | None = None
        self._final = False
        self._lock = threading.Lock()
        self._nice = 0   # PIPELINE_NICE once a test waits (prioritize)
        if self._deps:
            self._poll()
        else:
            self._start(targets, self.log)
        # the next stage starts as soon as one ends, whether or not a test is waiting; at the
        # end the tests' background work starts (Background)
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        self.wait(check=False)
        start_background()

    def _start(self, args: list[str], log: Path) -> subprocess.Popen:
        """``dvc repro ARGS`` in the background, its output in ``log``. ``--wait-for-lock``:
        DVC holds the repo lock only to check and record stages (it lets go while a stage's
        command runs), so runs of different stages take turns for it."""
        with open(log, "w") as f:
            p = subprocess.Popen(["dvc", "--wait-for-lock", "repro", *args], cwd=self.root,
                                 env=self.env, stdout=f, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        # once a test waits for the pipeline it goes first where both want a core (which its
        # stages inherit; root only): prioritize
        if self._nice:
            try:
                os.setpriority(os.PRIO_PROCESS, p.pid, self._nice)
            except OSError:
                pass
        self._procs.append(p)
        self._logs.append(log)
        return p

    def _poll(self) -> int | None:
        with self._lock:
            return self._poll_locked()

    def _poll_locked(self) -> int | None:
        """None while running; else the run's exit status (0: every stage ran). Stages start
        :data:`PARALLEL` at a time, each when the stages it depends on are done, the longest
        chain first (:func:`critical_path`); then a last ``dvc repro`` checks that nothing is
        left, and the logs are joined into ``repro.log`` in the order the stages started (what
        ``make repro`` shows, for test_smoke_first_hour)."""
        if self._rc is not None:
            return self._rc
        rcs = [p.poll() for p in self._procs]
        if any(rcs):
            self._rc = next(r for r in rcs if r)
        elif self._deps and not self._final:
            for name, p in list(self._running.items()):
                if p.poll() is not None:
                    self._done.add(name)
                    del self._running[name]
            ready = sorted((s for s, d in self._deps.items() if s not in self._done
                            and s not in self._running and d <= self._done),
                           key=lambda s: -self._rank[s])
            for s in ready:
                if len(self._running) >= PARALLEL:
                    break
                if apart_from(s, self._running):
                    continue
                self._running[s] = self._start(["-s", s], self.log.with_name(f"repro-{len(self._logs):02d}-{s}.log"))
            if not self._running:   # every stage done: a last `dvc repro` finds nothing to do
                self._final = True
                self._start([], self.log.with_name("repro-last.log"))
            return None
        elif None in rcs:
            return None
        else:
            self._rc = 0
        if self._deps:
            self.log.write_text("".join(f.read_text(errors="replace") for f in self._logs))
        return self._rc

    def _failed(self) -> None:
        text = "".join(f.read_text(errors="replace") for f in self._logs if f.exists())
        pytest.fail(f"dvc repro failed ({self._rc}); the end of its log:\n{text[-6000:]}")

    def prioritize(self) -> None:
        """From now on the pipeline goes first (:data:`PIPELINE_NICE`): its running stages'
        processes, every thread of each (Linux sets one thread's priority per call), and the
        stages it starts later. Called when a test of the main thread waits for it."""
        from experiments.host.dstat import descendants

        with self._lock:
            if self._nice == PIPELINE_NICE or self._rc is not None:
                return
            self._nice = PIPELINE_NICE
            running = [p.pid for p in self._procs if p.poll() is None]
        for pid in running:
            try:
                tree = descendants(pid)
            except OSError:   # a process ended while its children were listed
                tree = [pid]
            for q in tree:
                for task in Path(f"/proc/{q}/task").glob("*"):
                    try:
                        os.setpriority(os.PRIO_PROCESS, int(task.name), self._nice)
                    except (OSError, ValueError):
                        pass

    def _waited_on(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.prioritize()

    def wait(self, check: bool = True) -> Path:
        """The whole pipeline, done."""
        self._waited_on()
        while self._poll() is None:
            time.sleep(0.5)
        if self.wall_s is None:
            self.wall_s = time.monotonic() - self.t0
        if self._rc and check:
            self._failed()
        return self.root

    def wait_for(self, stage: str) -> Path:
        """That stage, done: run_notebook printed ``STAGE: done in`` and DVC then recorded the
        stage in dvc.lock, so its results folder is complete and no longer moves. Returns when
        the pipeline ends without it too (a stage left out by ``SMOKE_STAGES``). Each ``dvc
        repro`` has its own log, so the lock-file line after the stage's is its own."""
        self._waited_on()
        done = re.compile(rf"(?:^|[\r\n]){re.escape(stage)}: done in .*?Updating lock file", re.S)
        while not any(done.search(f.read_text(errors="replace")) for f in self._logs if f.exists()):
            if self._poll() is not None:
                if self._rc:
                    self._failed()
                break
            time.sleep(1)
        return self.root / "results" / stage

    def stop(self) -> None:
        """End a run the session no longer waits for (a failed or interrupted session), and
        remove the copy's own tiers outside it (/dev/shm/...-{checkout}): nothing stays behind."""
        for p in self._procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        own = subprocess.run([sys.executable, "-m", "experiments.host.tiers", "dirs", "--own"], cwd=self.root,
                             env=self.env, capture_output=True, text=True).stdout.split()
        for d in own:
            shutil.rmtree(d, ignore_errors=True)


_SMOKE: SmokeRun | None = None


class Background:
    """Self-contained work of a test (its own copy of a project and the subprocesses it runs
    there: ``work(folder, env) -> result``), run beside the tests before it. The whole suite
    starts the selected tests' jobs as soon as the smoke pipeline has ended, two at a time in
    the order of their tests (:func:`start_background`): the tests left then mostly wait for
    them, where each job would otherwise run in turn when its test comes. A session without the
    pipeline starts them when collection is done; a test that reaches its job before the queue
    has started it runs it at once. The test marks
    itself ``@pytest.mark.background(JOB)`` (ordered after the unit tests: its work has had the
    longest to run) and asserts on ``JOB.result()``, which re-raises the work's exception."""

    def __init__(self, work):
        self.work = work
        self.name = work.__name__.strip("_")
        self._lock = threading.Lock()
        self._claimed = False
        self._done = threading.Event()
        self._out: tuple[bool, object] | None = None
        self.span: tuple[float, float | None] | None = None   # (start, end), s after the session started
        self.waited_s: float | None = None                    # how long its test waited for it

    def claim(self) -> bool:
        """Whether the caller is the one to run the work (the first to ask)."""
        with self._lock:
            first, self._claimed = not self._claimed, True
            return first

    def run(self) -> None:
        import tempfile

        self.span = (time.monotonic() - _T0, None)
        try:
            # the environment as the session began: not what a unit test has patched meanwhile
            folder = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=_BASETEMP))
            self._out = (True, self.work(folder, dict(_ENV0)))
        except BaseException as e:   # raised again in the test, with its traceback
            self._out = (False, e)
        finally:
            self.span = (self.span[0], time.monotonic() - _T0)
            self._done.set()

    def result(self):
        if self.claim():
            self.run()
        t = time.monotonic()
        self._done.wait()
        self.waited_s = time.monotonic() - t
        ok, value = self._out
        if not ok:
            raise value
        return value


_BASETEMP: Path | None = None
_ENV0: dict[str, str] = {}
_BACKGROUND: list[Background] = []   # the selected tests' jobs, known once collection is done


def smoke_project() -> Path:
    """The smoke project once its whole pipeline has run, for a :class:`Background` job (whose
    test takes the ``smoke_run`` fixture, so that the session starts the pipeline)."""
    assert _SMOKE is not None, "the smoke run was not started at collection"
    return _SMOKE.wait()


def smoke_stage(stage: str) -> Path:
    """That smoke stage's results folder once it is done, for a :class:`Background` job (whose
    test takes the ``smoke_run`` fixture)."""
    assert _SMOKE is not None, "the smoke run was not started at collection"
    return _SMOKE.wait_for(stage)


BACKGROUND_WORKERS = 2   # jobs side by side: once the pipeline has ended, the main thread's
                         # smoke tests mostly wait, and one job at a time left a core idle
                         # (the fresh-clone CI of 78d7a96: 242 s of jobs one after another)


def start_background() -> None:
    """Run the selected tests' background jobs in :data:`BACKGROUND_WORKERS` threads, each
    taking the next job in their tests' order as it finishes one (a job its test has already
    taken is left to it). Once per session."""
    global _QUEUE
    with _QUEUE_LOCK:
        if _QUEUE or not _BACKGROUND:
            return
        jobs = iter(list(_BACKGROUND))
        take = threading.Lock()

        def work() -> None:
            while True:
                with take:
                    job = next(jobs, None)
                if job is None:
                    return
                if job.claim():
                    job.run()

        _QUEUE = [threading.Thread(target=work, name=f"background-{i}", daemon=True)
                  for i in range(BACKGROUND_WORKERS)]
    for t in _QUEUE:
        t.start()


_QUEUE: list[threading.Thread] = []
_QUEUE_LOCK = threading.Lock()


def stop_background() -> None:
    """A session ended while a background job still runs (``-x``, Ctrl-C): end every process
    this one started that is still alive (its tests are over; the pipeline and the grading
    were stopped before), deepest first, so that nothing stays behind."""
    if not any(t.is_alive() for t in _QUEUE):
        return
    from experiments.host.dstat import descendants

    try:
        pids = descendants(os.getpid())[1:]
    except OSError:   # a process ended while its children were listed
        pids = []
    for pid in reversed(pids):
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    for t in _QUEUE:
        t.join(timeout=30)


class CourseClass:
    """The course's class grading (``tests/test_course.py --grade-class``) in a background
    process, started with the session as the smoke pipeline is: about 2.5 minutes of grading
    that the pytest process would otherwise wait on, while the unit tests go on beside it."""

    def __init__(self, base: Path):
        self.result_path = base / "course-class.json"
        self.log = base / "course-class.log"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "test_course.py"), "--grade-class",
                                          str(self.result_path)], cwd=ROOT, env=env, stdout=f,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self._data: dict | None = None

    def built_root(self) -> Path:
        """The folder of the course the background process built (before it grades): the
        bundle tests read it instead of building all eight labs a second time."""
        marker = self.result_path.with_suffix(".built")
        while not marker.exists():
            if self.proc.poll() is not None:
                pytest.fail(f"the background class grading ended ({self.proc.returncode}) before its course was built; "
                            f"the end of its log:\n{self.log.read_text(errors='replace')[-6000:]}")
            time.sleep(0.5)
        return Path(marker.read_text())

    def result(self) -> dict:
        """The grading's result (JSON of :func:`test_course.grade_class`), once it has ended."""
        if self._data is None:
            rc = self.proc.wait()
            if rc or not self.result_path.exists():
                pytest.fail(f"the background class grading failed ({rc}); the end of its log:\n"
                            f"{self.log.read_text(errors='replace')[-6000:]}")
            self._data = json.loads(self.result_path.read_text())
        return self._data

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        marker = self.result_path.with_suffix(".built")
        if marker.exists():
            shutil.rmtree(marker.read_text(), ignore_errors=True)


_COURSE: CourseClass | None = None


def _needs_smoke(item) -> bool:
    return bool({"smoke_root", "smoke_run"} & set(getattr(item, "fixturenames", ())))


# Smoke test files in the order the parallel pipeline finishes the stages they read (the
# longest chain first: the workloads and emulator_patterns, then traced_comparison beside the
# Chien, DeepIO, LMDBIO and blog stages, the reports and claims last), so that each waits only
# for its own stages (``stage_results``) while the pipeline goes on. The emulator's tests come
# first: their own runs (about two minutes of emulated training) need only emulator_patterns,
# one of the first stages, and overlap the rest of the pipeline instead of following it. Tests
# that read the whole run (every stage, the log, the claims table) come last.
SMOKE_ORDER = ["test_smoke_emulator.py", "test_smoke_workloads.py", "test_smoke_traced_comparison.py",
               "test_smoke_alexnet.py", "test_smoke_llm_checkpoint.py", "test_smoke_deepio_lmdbio_blog.py",
               "test_smoke_tracing.py", "test_lab_browser.py", "test_smoke_pipeline.py", "test_smoke_first_hour.py"]


def _smoke_rank(item) -> tuple[bool, int]:
    name = item.path.name
    rank = SMOKE_ORDER.index(name) if name in SMOKE_ORDER else len(SMOKE_ORDER)
    whole = "smoke_root" in item.fixturenames   # waits for the whole pipeline: after the rest
    return (whole, rank)


def _needs_class(item) -> bool:
    return "course_class" in set(getattr(item, "fixturenames", ()))


def _background(item) -> Background | None:
    m = item.get_closest_marker("background")
    return m.args[0] if m else None


def pytest_collection_modifyitems(session, config, items):
    """Unit tests first, then the tests of the background class grading, then those of the
    tests' own background work (:class:`Background`), then the smoke tests by the stages they
    read (stable otherwise): the unit tests run while the pipeline runs, and each smoke test
    waits only for its stages. The grading's and the background work's tests come after the
    unit tests so that the suite goes on beside that work instead of waiting for it."""
    items.sort(key=lambda i: (3, *_smoke_rank(i)) if _needs_smoke(i)
               else (2,) if _background(i) else (int(_needs_class(i)),))


def _whole_suite(config) -> bool:
    """``make test``'s invocation: no paths, no ``-k``, no marker expression leaving out the smoke
    tests, not ``--collect-only``: the smoke tests will run."""
    return (config.args_source != pytest.Config.ArgsSource.ARGS and not config.option.keyword
            and "not smoke" not in (config.option.markexpr or "") and not config.option.collectonly)


def pytest_sessionstart(session):
    """The whole suite starts the smoke pipeline before collecting (about 10 s earlier), and
    the course's class grading beside it. Every test that runs a measuring stage outside the
    pipeline reads its findings' rules from a folder written here once from the declarations
    (what the ``claim_rules`` stage writes into results/, which a fresh clone lacks)."""
    global _SMOKE, _COURSE, _BASETEMP, _ENV0
    from experiments.claims.steering import write_all
    from experiments.repeats.findings import RULES_ENV
    from experiments.repeats.purchases import BUYING

    rules = session.config._tmp_path_factory.mktemp("claim_rules")
    write_all(rules, BUYING)
    os.environ[RULES_ENV] = str(rules)
    _BASETEMP, _ENV0 = session.config._tmp_path_factory.getbasetemp(), dict(os.environ)
    if _whole_suite(session.config):
        _SMOKE = SmokeRun(session.config._tmp_path_factory.mktemp("smoke"))
        _COURSE = CourseClass(session.config._tmp_path_factory.mktemp("course"))


def pytest_collection_finish(session):
    """Start the smoke pipeline if a selected test needs it and the session has not; the
    selected tests' background jobs now if no pipeline runs, or if it has already ended."""
    global _SMOKE
    if session.config.option.collectonly:
        return
    _BACKGROUND[:] = list(dict.fromkeys(j for j in map(_background, session.items) if j is not None))
    if _SMOKE is None and any(_needs_smoke(i) for i in session.items):
        _SMOKE = SmokeRun(session.config._tmp_path_factory.mktemp("smoke"))
    if _SMOKE is None or _SMOKE._poll() is not None:
        start_background()


_T0 = time.monotonic()
_STARTED: dict[str, float] = {}   # test id -> seconds after the session started


def pytest_runtest_logstart(nodeid, location):
    _STARTED.setdefault(nodeid, time.monotonic() - _T0)


def pytest_sessionfinish(session, exitstatus):
    if _SMOKE is not None:
        _SMOKE.stop()
    if _COURSE is not None:
        _COURSE.stop()
    stop_background()


@pytest.fixture(scope="session")
def course_class() -> CourseClass | None:
    """The background class grading the whole suite started, or None (a module run alone
    grades in-process)."""
    return _COURSE


@pytest.fixture(scope="session")
def smoke_run() -> SmokeRun:
    """The smoke pipeline, running or done (wait with ``wait`` or ``wait_for(stage)``)."""
    assert _SMOKE is not None, "the smoke run was not started at collection"
    return _SMOKE


@pytest.fixture(scope="session")
def smoke_root(smoke_run) -> Path:
    """A copy of the project with params.yaml on the smoke profile and ``dvc repro`` run in it."""
    return smoke_run.wait()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The fifteen slowest tests (set-up, call and tear-down together) and, when the smoke
    pipeline ran, each stage's wall time as its env.json recorded it."""
    per_test: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for r in reports:
            if hasattr(r, "duration") and hasattr(r, "nodeid") and getattr(r, "when", None):
                per_test[r.nodeid] = per_test.get(r.nodeid, 0.0) + r.duration
    if not per_test:
        return
    tw = terminalreporter
    tw.section("test times")
    tw.write_line(f"{'seconds':>8}  slowest of {len(per_test)} tests (a smoke test's set-up includes "
                  "waiting for the pipeline)")
    for nodeid, d in sorted(per_test.items(), key=lambda kv: -kv[1])[:15]:
        tw.write_line(f"{d:8.1f}  {nodeid}  (started at {_STARTED.get(nodeid, float('nan')):.0f} s)")
    if _SMOKE is not None:
        stages = stage_times(_SMOKE.root)
        tw.write_line("")
        tw.write_line(f"{'seconds':>8}  smoke stage (wall time from results/<stage>/env.json)")
        for name, s in sorted(stages.items(), key=lambda kv: -kv[1]):
            tw.write_line(f"{s:8.1f}  {name}")
        wall = f"{_SMOKE.wall_s:.1f}" if _SMOKE.wall_s is not None else "(not waited for)"
        tw.write_line(f"{sum(stages.values()):8.1f}  all {len(stages)} stages; `dvc repro` wall time {wall} s")
        # where the session's wall time went: the unit tests beside the pipeline, then the
        # smoke tests (their own work after the pipeline ended is the suite's tail)
        smoke = [t for n, t in _STARTED.items() if any(n.startswith(f"tests/{f}") for f in SMOKE_ORDER)]
        if smoke:
            end = f"{_SMOKE.t0 - _T0 + _SMOKE.wall_s:.0f}" if _SMOKE.wall_s is not None else "?"
            tw.write_line(f"timeline (s after the session started): pipeline {_SMOKE.t0 - _T0:.0f} to "
                          f"{end}; smoke tests from {min(smoke):.0f}; session end {time.monotonic() - _T0:.0f}")
    for job in _BACKGROUND:   # whether each job was done before its test came
        if job.span is not None:
            end = f"{job.span[1]:.0f}" if job.span[1] is not None else "?"
            waited = f"{job.waited_s:.0f} s" if job.waited_s is not None else "(no test)"
            tw.write_line(f"background job {job.name}: {job.span[0]:.0f} to {end} s; its test waited {waited}")


def stage_times(root: Path) -> dict[str, float]:
    """Stage name -> wall seconds, from each results folder's env.json (stages that ran)."""
    out = {}
    for p in sorted((root / "results").glob("*/env.json")):
        run = json.loads(p.read_text()).get("run") or {}
        if "wall_s" in run:
            out[p.parent.name] = float(run["wall_s"])
    return out


@pytest.fixture
def smoke_results(smoke_root):
    return smoke_root / "results"


@pytest.fixture
def stage_results(smoke_run):
    """``stage_results("name")``: that stage's smoke results folder once the stage is done, or a
    skip if it did not run."""
    def get(stage: str) -> Path:
        d = smoke_run.wait_for(stage)
        if not d.exists() and os.environ.get("SMOKE_STAGES"):
            pytest.skip(f"stage {stage} not in SMOKE_STAGES")
        assert d.exists(), f"stage {stage} wrote no results folder"
        return d
    return get


@pytest.fixture
def dlrm_zero_data(tmp_path) -> Path:
    """A DLRM data set of zero samples in the workload's layout (4,096 training and 512 test
    samples of 160 B): enough for the emulator and its launchers to read, in no time."""
    d = tmp_path / "dlrm"
    d.mkdir()
    (d / "train_data.bin").write_bytes(b"\0" * 160 * 4096)
    (d / "test_data.bin").write_bytes(b"\0" * 160 * 512)
    return d
