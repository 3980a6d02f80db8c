"""The application log of training phases: a format workloads write and timelines read.

Format (JSON Lines, one object per line, UTF-8), written by :class:`PhaseLog`:

    {"ts": 1795346270.7653, "event": "begin", "phase": "train", "epoch": 1, "pid": 4242, "rank": 0}
    {"ts": 1795346275.1021, "event": "end",   "phase": "train", "epoch": 1, "pid": 4242, "rank": 0}

- ``ts``: wall-clock seconds since the Unix epoch (``time.time()``), float, so it lines up with
  the traces' ``timestamp``;
- ``event``: ``begin`` (``start`` is accepted too) or ``end`` (an ``end`` closes the latest open
  ``begin`` of the same phase, rank and pid), or ``mark`` (an instant, e.g. an epoch boundary:
  ``{"event": "mark", "phase": "epoch", "epoch": 2}``);
- ``phase``: one of :data:`PHASES` (``init``, ``train``, ``eval``, ``checkpoint``) or any other
  short name (drawn in grey);
- optional: ``epoch`` (int), ``step`` (int), ``pid`` (int, the writer), ``rank`` (int), and any
  other keys (kept, not interpreted).

This is the format the thesis workloads' ``experiments.workloads.steptimer.AppLog`` writes
(``app-r<rank>.jsonl``, one file per rank; it adds ``workload``); :func:`read` takes one file,
several, or a folder (every ``*.jsonl`` in it).

A workload finds the log's path in the environment variable ``DLIO_PHASE_LOG`` (set by
``python -m experiments.trace run --phase-log FILE``); :func:`from_env` returns a no-op log when
it is unset. Several processes may append to one file: each line is one ``write``.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from .schema import TraceError

PHASES = ("init", "train", "eval", "checkpoint")
ENV = "DLIO_PHASE_LOG"
EVENTS = ("begin", "start", "end", "mark")

# the tracing stage's loader phase log, kept in its results folder beside the trace (its data
# tier, where the loader wrote it, is not a result: a shipped run does not carry it)
LOADER_LOG = "phases_loader.jsonl"


class PhaseLog:
    """Appends phase events to ``path``; ``None`` makes a log that writes nothing."""

    def __init__(self, path: str | os.PathLike | None, rank: int | None = None):
        self.path = Path(path) if path else None
        self.rank = rank

    def _write(self, event: str, phase: str, **extra) -> None:
        if self.path is None:
            return
        rec = {"ts": time.time(), "event": event, "phase": phase, "pid": os.getpid()}
        if self.rank is not None:
            rec["rank"] = self.rank
        rec.update({k: v for k, v in extra.items() if v is not None})
        line = (json.dumps(rec) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def start(self, phase: str, **extra) -> None:
        self._write("begin", phase, **extra)

    def end(self, phase: str, **extra) -> None:
        self._write("end", phase, **extra)

    def mark(self, phase: str, **extra) -> None:
        self._write("mark", phase, **extra)

    @contextmanager
    def phase(self, phase: str, **extra):
        """``with log.phase("train", epoch=1): ...`` writes the start and end lines."""
        self.start(phase, **extra)
        try:
            yield
        finally:
            self.end(phase, **extra)


def from_env(rank: int | None = None) -> PhaseLog:
    return PhaseLog(os.environ.get(ENV) or None, rank)


def read(path) -> pd.DataFrame:
    """Phase intervals: ``phase, start, end, epoch, pid, rank, kind`` (wall-clock s; ``kind`` is
    ``interval`` or ``mark``, a mark has ``start == end``). ``path``: a file, a list of files or
    a folder of ``*.jsonl``. :class:`TraceError` on a malformed line (file and line number)."""
    if isinstance(path, (list, tuple)):
        files = [Path(p) for p in path]
    elif Path(path).is_dir():
        files = sorted(Path(path).glob("*.jsonl"))
    else:
        files = [Path(path)]
    cols = ["phase", "start", "end", "epoch", "pid", "rank", "kind"]
    rows = []
    for f in files:
        rows += _read_one(f)
    return pd.DataFrame(rows, columns=cols).sort_values("start", kind="stable").reset_index(drop=True)


def _read_one(path: Path) -> list[dict]:
    if not path.is_file():
        raise TraceError(f"phase log {path} does not exist")
    open_: dict[tuple, list[dict]] = {}
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ts, event, phase = float(rec["ts"]), rec["event"], str(rec["phase"])
        except (ValueError, KeyError, TypeError) as e:
            raise TraceError(f"{path}:{i}: not a phase-log line ({e}); expected JSON with ts, event, phase") from None
        if event not in EVENTS:
            raise TraceError(f"{path}:{i}: event {event!r}; allowed: {', '.join(EVENTS)}")
        key = (phase, rec.get("pid"), rec.get("rank"))
        if event in ("begin", "start"):
            open_.setdefault(key, []).append(rec)
        elif event == "end":
            if open_.get(key):
                s = open_[key].pop()
                rows.append({"phase": phase, "start": float(s["ts"]), "end": ts,
                             "epoch": s.get("epoch", rec.get("epoch")), "pid": rec.get("pid"),
                             "rank": rec.get("rank"), "kind": "interval"})
        else:
            rows.append({"phase": phase, "start": ts, "end": ts, "epoch": rec.get("epoch"),
                         "pid": rec.get("pid"), "rank": rec.get("rank"), "kind": "mark"})
    for (phase, pid, rank), recs in open_.items():  # never closed: open until the last event
        last = max([r["end"] for r in rows] + [float(r["ts"]) for r in recs])
        for s in recs:
            rows.append({"phase": phase, "start": float(s["ts"]), "end": last, "epoch": s.get("epoch"),
                         "pid": pid, "rank": rank, "kind": "interval"})
    return rows
