"""Export a trace to the Chrome trace event format (JSON), which Perfetto (ui.perfetto.dev)
and chrome://tracing open for interactive exploration.

Mapping: each VFS call and block request is a complete event (``ph: "X"``; ``ts``/``dur`` in
microseconds since the trace started) on its process/thread, named by the operation, with
``cat`` = layer and ``args`` = path, fd, offset, size (bytes), device, sector. Block requests
go on a process named ``block <device>``. Sampler series become counter events (``ph: "C"``):
MB/s and CPU %. Phases from the application log become spans on a process named ``phases``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ..output.results import atomic_write
from .schema import Trace

BLOCK_PID = 1_000_000_000
PHASE_PID = 1_000_000_001


def _clean(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            continue
        out[k] = v.item() if hasattr(v, "item") else v
    return out


def events(trace: Trace, phases: pd.DataFrame | None = None) -> list[dict]:
    """The list of trace events (see the module docstring)."""
    out: list[dict] = []
    names: dict[int, str] = {}
    devs: dict[str, int] = {}
    ev = trace.events
    for r in ev.itertuples(index=False):
        ts = float(r.t_s) * 1e6
        dur = 0.0 if pd.isna(r.latency_s) else float(r.latency_s) * 1e6
        args = _clean({"path": r.path, "fd": r.fd, "offset": r.offset, "size": r.size,
                       "device": r.device, "sector": r.sector, "error": r.error or None,
                       "comm": r.comm})
        if r.layer == "block":
            pid = devs.setdefault(str(r.device), BLOCK_PID + len(devs))
            tid = int(r.pid)
        else:
            pid, tid = int(r.pid), int(r.tid)
            names.setdefault(pid, str(r.comm))
        out.append({"name": str(r.op), "cat": str(r.layer), "ph": "X", "ts": ts, "dur": dur,
                    "pid": pid, "tid": tid, "args": args})
    meta = [{"name": "process_name", "ph": "M", "pid": p, "args": {"name": f"{n} ({p})"}}
            for p, n in names.items()]
    meta += [{"name": "process_name", "ph": "M", "pid": p, "args": {"name": f"block {d}"}}
             for d, p in devs.items()]
    s = trace.samples
    if len(s):
        for r in s.to_dict("records"):
            vals = {k: r[k] for k in ("read_MBps", "write_MBps", "vfs_read_MBps", "vfs_write_MBps",
                                      "cpu_util_pct", "tree_cpu_pct", "gpu_util")
                    if k in r and r[k] == r[k] and r[k] is not None}
            if vals:
                out.append({"name": str(r["source"]), "ph": "C", "ts": float(r["t_s"]) * 1e6,
                            "pid": 0, "args": vals})
        meta.append({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "/proc sampler"}})
    if phases is not None and len(phases):
        t0 = float(trace.meta.get("started", 0.0))
        for r in phases.itertuples():
            out.append({"name": r.phase, "cat": "phase", "ph": "X" if r.kind == "interval" else "i",
                        "ts": (r.start - t0) * 1e6, "dur": (r.end - r.start) * 1e6,
                        "pid": PHASE_PID, "tid": int(r.pid or 0), "s": "g",
                        "args": _clean({"epoch": r.epoch})})
        meta.append({"name": "process_name", "ph": "M", "pid": PHASE_PID, "args": {"name": "phases"}})
    return meta + out


def export(trace: Trace, path: str | Path, phases: pd.DataFrame | None = None) -> Path:
    """Write ``{"traceEvents": [...], "metadata": {...}}`` to ``path`` (atomically)."""
    doc = {"traceEvents": events(trace, phases), "displayTimeUnit": "ms",
           "metadata": _clean({k: (json.dumps(v) if isinstance(v, (list, dict)) else v)
                               for k, v in trace.meta.items()})}
    text = json.dumps(doc, default=str)
    return atomic_write(Path(path), lambda p: p.write_text(text))
