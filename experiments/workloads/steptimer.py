"""Per-step instrumentation (the thesis's Listing 4.1) and the application log of phases.

**Step records.** :class:`StepTimer` times the parts of one training step with
``time.perf_counter_ns`` and keeps one record per step: ``data_ns`` (waiting for the batch),
``to_device_ns``, ``forward_ns``, ``loss_ns``, ``backward_ns``, ``optimizer_ns``,
``allreduce_ns`` (an extra all-reduce outside backward, such as UNET3D's cumulative loss, or
the per-step barrier of a sleep run), ``sleep_ns`` (``compute: sleep``: the sleep standing in
for forward to optimizer), ``compute_ns`` (from the batch in hand to the end of the step) and
``step_ns`` (data + compute). Parts a workload does not have stay 0. On CUDA the timer synchronizes the device
before each mark so a part's time is its own.

**Loader records.** :class:`LoaderLog` collects, inside data loaders (also in DataLoader
worker processes), ``vfs_ns`` (reading the bytes: ``np.load`` / ``pread``) and ``prep_ns``
(preprocessing) per sample or per batch.

**Application log format** (``app-r<rank>.jsonl``, read by the tracing toolkit): JSON Lines,
one object per line, UTF-8, appended and flushed as it happens::

    {"ts": 1700000000.123456, "rank": 0, "workload": "unet3d", "phase": "train", "event": "begin", "epoch": 1}

``ts`` is wall-clock time (``time.time()``, seconds since the Unix epoch, so it lines up with
kernel traces), ``rank`` the global rank, ``phase`` one of ``init``, ``train``, ``eval``,
``checkpoint`` (``epoch`` / ``step`` may be added), ``event`` is ``begin`` or ``end``. A phase's
``begin`` and ``end`` lines come in order within one rank's file; nothing else is in the file.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

PHASES = ("init", "train", "eval", "checkpoint")
PARTS = ("data_ns", "to_device_ns", "forward_ns", "loss_ns", "backward_ns", "optimizer_ns",
         "allreduce_ns", "sleep_ns", "compute_ns", "step_ns")


class AppLog:
    """Writer of one rank's application log (format in the module docstring).

    It also adds up, per phase, the wall time and this process's CPU time (all its threads,
    ``time.process_time``) between each ``begin`` and ``end``: :meth:`usage`. A rank that
    sleeps instead of computing shows CPU far below wall time in its ``train`` phase.
    """

    def __init__(self, path: str | os.PathLike, rank: int, workload: str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rank, self.workload = rank, workload
        self._f = open(self.path, "a", buffering=1)
        self._open: dict[str, tuple[float, float]] = {}
        self._usage: dict[str, dict] = {}

    def event(self, phase: str, event: str, **extra) -> None:
        if phase not in PHASES or event not in ("begin", "end"):
            raise ValueError(f"phase {phase!r} / event {event!r}; allowed phases {PHASES}, events begin, end")
        rec = {"ts": time.time(), "rank": self.rank, "workload": self.workload, "phase": phase,
               "event": event, **extra}
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        now = (time.perf_counter(), time.process_time())
        if event == "begin":
            self._open[phase] = now
        elif phase in self._open:
            w0, c0 = self._open.pop(phase)
            u = self._usage.setdefault(phase, {"wall_s": 0.0, "cpu_s": 0.0})
            u["wall_s"] += now[0] - w0
            u["cpu_s"] += now[1] - c0

    def usage(self) -> dict:
        """Per phase: ``wall_s`` and ``cpu_s`` (this process, seconds) summed over its intervals."""
        return {p: dict(u) for p, u in self._usage.items()}

    @contextmanager
    def phase(self, phase: str, **extra):
        self.event(phase, "begin", **extra)
        try:
            yield
        finally:
            self.event(phase, "end", **extra)

    def close(self) -> None:
        self._f.close()


def read_app_log(path: str | os.PathLike) -> list[dict]:
    """The records of an application log, in file order."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def phase_intervals(records: list[dict]) -> list[dict]:
    """Pair ``begin``/``end`` lines per (rank, phase) into intervals with ``start``, ``end``, ``seconds``."""
    open_, out = {}, []
    for r in records:
        key = (r["rank"], r["phase"])
        if r["event"] == "begin":
            open_[key] = r
        elif key in open_:
            b = open_.pop(key)
            extra = {k: v for k, v in b.items() if k not in ("ts", "event")}
            out.append({**extra, "start": b["ts"], "end": r["ts"], "seconds": r["ts"] - b["ts"]})
    return out


class StepTimer:
    """Marks inside one training step; :meth:`records` gives one dict per step.

    >>> t = StepTimer(sync=None)
    >>> t.start_wait()                 # before asking the loader for the next batch
    >>> batch = next(it); t.got_batch()
    >>> ...; t.mark("to_device_ns"); ...; t.mark("forward_ns"); ...
    >>> t.end_step(epoch=0, step=0, batch_size=4)
    """

    def __init__(self, sync=None):
        self.sync = sync or (lambda: None)
        self.rows: list[dict] = []
        self._wait0 = self._compute0 = self._last = 0
        self._cur: dict = {}

    def start_wait(self) -> None:
        self.sync()
        self._wait0 = time.perf_counter_ns()

    def got_batch(self) -> None:
        now = time.perf_counter_ns()
        self._cur = {p: 0 for p in PARTS}
        self._cur["data_ns"] = now - self._wait0
        self._compute0 = self._last = now

    def mark(self, part: str) -> None:
        """The time since the previous mark (or the batch) is ``part``'s."""
        self.sync()
        now = time.perf_counter_ns()
        self._cur[part] += now - self._last
        self._last = now

    def end_step(self, **fields) -> dict:
        self.sync()
        now = time.perf_counter_ns()
        self._cur["compute_ns"] = now - self._compute0
        self._cur["step_ns"] = self._cur["data_ns"] + self._cur["compute_ns"]
        row = {**fields, **self._cur, "end_wall": time.time()}
        self.rows.append(row)
        return row


class LoaderLog:
    """Per-sample (or per-batch) VFS-read and preprocessing latencies, in ns.

    In a DataLoader worker each process appends to its own list; :meth:`flush_to` writes them
    as JSON lines to ``<dir>/loader-r<rank>-p<pid>.jsonl`` so worker processes need no pipe.
    """

    def __init__(self):
        self.rows: list[dict] = []

    def add(self, vfs_ns: int, prep_ns: int, **fields) -> None:
        self.rows.append({**fields, "vfs_ns": int(vfs_ns), "prep_ns": int(prep_ns), "pid": os.getpid()})

    def flush_to(self, folder: str | os.PathLike, rank: int) -> None:
        if not self.rows:
            return
        p = Path(folder) / f"loader-r{rank}-p{os.getpid()}.jsonl"
        with open(p, "a") as f:
            for r in self.rows:
                f.write(json.dumps(r) + "\n")
        self.rows.clear()


def peak_rss_bytes() -> dict:
    """Peak resident set size of this process and of its largest waited-for child, in bytes;
    and the CPU seconds (user + system) of this process and of its waited-for children."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"peak_rss_bytes": me.ru_maxrss * 1024, "peak_rss_children_bytes": kids.ru_maxrss * 1024,
            "cpu_s": me.ru_utime + me.ru_stime, "cpu_children_s": kids.ru_utime + kids.ru_stime}
