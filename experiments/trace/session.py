"""One tracer session, several traced windows: attach once, cut each run's trace out by time.

Attaching bpftrace's probes takes about 5 s on the reference box and detaching about 3 s
(the kernel compiles, verifies and later releases every probe), whatever the run in between.
A stage that traces twelve short runs one :class:`~.tracer.Tracer` each pays that twelve
times. A :class:`Session` starts one tracer on this process (children followed as always) and
hands out windows; each window's :class:`~.schema.Trace` is the session's events and samples
between the window's start and end, with ``t_s`` counted from the window's start, so it is what
a Tracer around the same block would have recorded, less the attach and detach.

    with Session(watch=[tier_dir]) as s:
        for side in sides:
            with s.window(side) as w:
                run(side)
    traces = {name: w.trace for name, w in s.windows.items()}   # after the session ends

A window's trace exists once the session has ended (the back end's output is parsed once, at
the end). ``vector`` mode counts calls in the kernel without times, so they cannot be split:
a session refuses it. Files are named by the folder names the tracer saw first (bpftrace
emits a file's name once per session): a folder renamed inside a session (a data set staged
as ``<name>.partial`` and renamed) keeps its old name in every window, so stage data before
the session starts.
"""

from __future__ import annotations

import contextlib
import time

import pandas as pd

from . import resolve
from .schema import Trace, TraceError, conform
from .tracer import BLOCK_MARGIN_S, Tracer


class Window:
    """One traced block of a :class:`Session`: its name, start and end (wall clock, s) and,
    once the session has ended, its :attr:`trace`."""

    def __init__(self, name: str):
        self.name = name
        self.started = self.ended = float("nan")
        self.trace: Trace | None = None


class Session:
    """One :class:`~.tracer.Tracer` (same keywords) for several windows; see the module docstring."""

    def __init__(self, **tracer_kw):
        if tracer_kw.get("mode", "timeline") == "vector":
            raise TraceError("trace session mode = 'vector'; allowed: timeline (a session splits its "
                             "trace by time, and vector mode's in-kernel counts have no times)")
        self.tracer = Tracer(keep_parsed=True, **tracer_kw)
        self.windows: dict[str, Window] = {}
        self.trace: Trace | None = None   # the whole session, once ended

    def __enter__(self) -> "Session":
        self.tracer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.trace = self.tracer.stop()
        for w in self.windows.values():
            w.trace = cut(self.trace, w.started, w.ended, self.tracer.parsed_raw, len(self.windows))

    @contextlib.contextmanager
    def window(self, name: str):
        """Trace the block as the window ``name`` (unique in this session)."""
        if name in self.windows:
            raise TraceError(f"trace session window {name!r} twice; each window needs its own name")
        if self.trace is not None:
            raise TraceError(f"trace session window {name!r} after the session ended")
        w = self.windows[name] = Window(name)
        w.started = time.time_ns() / 1e9
        try:
            yield w
        finally:
            w.ended = time.time_ns() / 1e9


def cut(whole: Trace, started: float, ended: float, raw: pd.DataFrame | None = None,
        windows: int = 1) -> Trace:
    """The part of ``whole`` between ``started`` and ``ended`` (wall clock, s): VFS calls that
    began inside, block requests issued inside (``BLOCK_MARGIN_S`` either side, as a Tracer
    keeps), sampler intervals that ended inside; ``t_s`` from ``started``. ``raw`` (the back
    end's parsed rows) names the window's memory-mapped files."""
    lo_ns, hi_ns = int(started * 1e9), int(ended * 1e9)
    ev = whole.events
    ts = ev["timestamp"].astype("int64") if len(ev) else pd.Series(dtype="int64")
    margin = int(BLOCK_MARGIN_S * 1e9)
    is_block = ev["layer"] == "block" if len(ev) else pd.Series(dtype=bool)
    keep = (~is_block & (ts >= lo_ns) & (ts <= hi_ns)) | (is_block & (ts >= lo_ns - margin) & (ts <= hi_ns + margin))
    events = ev[keep].copy() if len(ev) else ev.copy()
    if len(events):
        events["t_s"] = (events["timestamp"].astype("int64") - lo_ns) / 1e9
    samples = whole.samples
    if len(samples) and "wall" in samples:
        samples = samples[(samples["wall"] >= started) & (samples["wall"] <= ended + 1e-9)].copy()
        samples["t_s"] = samples["wall"] - started
    meta = dict(whole.meta)
    vfs = events[events["layer"] == "vfs"] if len(events) else events
    if raw is not None and len(raw) and "timestamp_ns" in raw:
        r = raw[(raw["timestamp_ns"] >= lo_ns) & (raw["timestamp_ns"] <= hi_ns)]
        meta["mapped_files"] = resolve.mapped_files(r, vfs)
    if "unnamed_calls" in meta:
        meta["unnamed_calls"] = int((vfs["path"].isna() & (vfs["error"] == 0)).sum()) if len(vfs) else 0
    meta.update(started=started, ended=ended, n_events=int(len(events)),
                session={"windows": windows, "started": whole.meta.get("started"),
                         "ended": whole.meta.get("ended"),
                         "tracer_cpu_s": meta.pop("tracer_cpu_s", None)})
    return Trace(conform(events), samples, meta, None)
