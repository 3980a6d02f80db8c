"""DFTracer back end: the field's user-space tracer (``LD_PRELOAD``), its trace turned into our rows.

DFTracer (``pydftracer`` on PyPI, LLNL; DLIO turns it on by default) intercepts libc's POSIX
calls in every library of a process (GOTCHA rewrites their symbol tables) and writes one
Chrome trace event per call, per process, to ``<prefix>-<name>-<pid>-preload.pfw`` (JSON
lines, ``.pfw.gz`` when compressed). It runs as the command's ``LD_PRELOAD`` with::

    DFTRACER_ENABLE=1 DFTRACER_INIT=PRELOAD DFTRACER_LOG_FILE=<prefix>
    DFTRACER_DATA_DIR=all DFTRACER_INC_METADATA=1 (file names in each event)

so it traces a command only (the preload must be there when it starts), not the Python block
of :class:`~experiments.trace.tracer.Tracer` used as a context manager. The library comes from
DLIO's environment (``.venv-dlio``, ``env/dlio.lock`` pins ``pydftracer``): its wheels are
manylinux_2_34 only and DLIO's environment already carries it, so the main lock is left alone.
``$DFTRACER_PRELOAD`` names another ``libdftracer_preload.so``.

What it sees (and so what the rows hold): ``read``/``pread(64)``/``write``/``pwrite(64)``,
``open*``/``close``/``lseek*``, ``mmap*`` (the mapping, not the page reads), ``dup*``,
``fcntl``; each event carries the file name (``fname``), the bytes returned (``ret``) and, for
positional calls, the offset. What it cannot: calls that bypass libc's symbols (a raw
``syscall``, a statically linked program), the vector calls (``readv``/``preadv*``, not wrapped
by this version), the copies (``sendfile``, ``copy_file_range``, ``splice``), page-fault reads
of a mapping, the block layer. Children started with ``exec`` inherit the preload (each writes
its own file); a ``fork``-ed child writes into its parent's file under the parent's pid. A
failed call has ``error = -1`` (DFTracer records ``ret == -1``, not the errno).
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
from functools import lru_cache
from pathlib import Path

import pandas as pd

from .schema import conform

# DFTracer's call names -> the schema's ops (calls of other names are counted, not kept)
OPS = {"read": "read", "pread": "pread64", "pread64": "pread64", "write": "write",
       "pwrite": "pwrite64", "pwrite64": "pwrite64", "open": "openat", "open64": "openat",
       "openat": "openat", "creat64": "openat", "close": "close", "lseek": "lseek",
       "lseek64": "lseek", "mmap": "mmap", "mmap64": "mmap", "dup": "dup", "dup2": "dup2",
       "fcntl": "fcntl"}
SIZED = ("read", "pread64", "write", "pwrite64")
_FILE = re.compile(r"-(?P<name>[^/]*)-(?P<pid>\d+)-[^-/]+\.pfw(\.gz)?$")


def preload_library() -> tuple[Path | None, str]:
    """(``libdftracer_preload.so``, why not found): ``$DFTRACER_PRELOAD``, else the one the
    ``pydftracer`` wheel put in DLIO's environment."""
    if os.environ.get("DFTRACER_PRELOAD"):
        p = Path(os.environ["DFTRACER_PRELOAD"])
        return (p, "") if p.is_file() else (None, f"DFTRACER_PRELOAD={p}: no such file")
    from ..paths import DLIO_VENV as VENV, dlio_venv
    v = dlio_venv()
    if (v / "UNAVAILABLE").exists():
        return None, (f"pydftracer is installed only in DLIO's environment, which could not be "
                      f"installed here: {(v / 'UNAVAILABLE').read_text().strip()}")
    libs = sorted(v.glob("lib/python3*/site-packages/dftracer/lib/libdftracer_preload.so"))
    if not libs:
        return None, (f"no libdftracer_preload.so in {VENV} (pydftracer from env/dlio.lock); "
                      f"run `make setup` (or `bash env/setup-dlio.sh`)")
    return libs[0], ""


@lru_cache(maxsize=None)
def available() -> tuple[bool, str]:
    """(usable, why not): the preload library exists and loads into ``true`` without error."""
    import subprocess
    lib, why = preload_library()
    if lib is None:
        return False, why
    true = "/bin/true" if os.path.exists("/bin/true") else "true"
    try:
        p = subprocess.run([true], env={**os.environ, "LD_PRELOAD": str(lib), "DFTRACER_ENABLE": "0"},
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"{lib.name} could not be tried on `true`: {e}"
    err = p.stderr.strip()
    if p.returncode != 0 or "cannot be preloaded" in err:
        return False, f"{lib} does not load here: {err[-200:] or f'exit status {p.returncode}'}"
    return True, ""


def environment(prefix: Path, data_dir: str = "all") -> dict[str, str]:
    """The variables that make a command write its DFTracer trace to ``<prefix>-*.pfw``."""
    lib, why = preload_library()
    if lib is None:
        raise RuntimeError(why)
    pre = os.environ.get("LD_PRELOAD", "")
    return {"LD_PRELOAD": f"{lib}:{pre}" if pre else str(lib), "DFTRACER_ENABLE": "1",
            "DFTRACER_INIT": "PRELOAD", "DFTRACER_LOG_FILE": str(prefix),
            "DFTRACER_DATA_DIR": data_dir, "DFTRACER_INC_METADATA": "1"}


def trace_files(prefix: Path) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(f"{glob.escape(str(prefix))}-*.pfw*"))


def read_events(files) -> tuple[pd.DataFrame, int]:
    """Every complete event (``"ph": "X"``) of DFTracer's trace files, one row each, with the
    file name's process name as ``comm``; (rows, lines that did not parse). Exact duplicate
    lines are dropped (a ``fork``-ed child may flush a copy of its parent's buffer)."""
    rows, bad, seen = [], 0, set()
    for f in files:
        f = Path(f)
        m = _FILE.search(f.name)
        comm = m.group("name")[:15] if m else ""
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", errors="replace") as fh:
            for line in fh:
                line = line.strip().rstrip(",")
                if not line or line in ("[", "]"):
                    continue
                if line in seen:
                    continue
                seen.add(line)
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    bad += 1
                    continue
                if e.get("ph") != "X":
                    continue
                a = e.get("args") or {}
                rows.append({"name": e.get("name"), "cat": e.get("cat"), "pid": e.get("pid"),
                             "tid": e.get("tid"), "ts_us": e.get("ts"), "dur_us": e.get("dur"),
                             "fname": a.get("fname"), "ret": a.get("ret"), "fd": a.get("fd"),
                             "offset": a.get("offset"), "length": a.get("length"), "flags": a.get("flags"),
                             "comm": comm})
    return pd.DataFrame(rows, columns=["name", "cat", "pid", "tid", "ts_us", "dur_us", "fname", "ret",
                                       "fd", "offset", "length", "flags", "comm"]), bad


def to_rows(ev: pd.DataFrame, t0_ns: int) -> tuple[pd.DataFrame, int]:
    """DFTracer events as the schema's ``vfs`` rows (times from its microsecond clock, which is
    the wall clock); (rows, calls of names the schema has no op for, e.g. ``stat``)."""
    if not len(ev):
        return conform(pd.DataFrame()), 0
    ev = ev[ev["cat"].isin(["POSIX", "STDIO"]) | ev["cat"].isna()]
    known = ev["name"].isin(list(OPS))
    other = int((~known).sum())
    ev = ev[known].copy()
    op = ev["name"].map(OPS)
    ret = pd.to_numeric(ev["ret"], errors="coerce")
    ts_ns = pd.to_numeric(ev["ts_us"], errors="coerce").astype("int64") * 1000
    failed = (ret == -1) & (op != "mmap")   # mmap's return (an address) is not recorded
    size = ret.where(op.isin(SIZED) & ~failed)
    size = size.where(op != "mmap", pd.to_numeric(ev["length"], errors="coerce"))
    out = pd.DataFrame({
        "timestamp": pd.to_datetime(ts_ns, unit="ns", utc=True), "t_s": (ts_ns - t0_ns) / 1e9,
        "pid": pd.to_numeric(ev["pid"], errors="coerce"), "tid": pd.to_numeric(ev["tid"], errors="coerce"),
        "comm": ev["comm"], "layer": "vfs", "op": op,
        "path": ev["fname"].where(ev["fname"].notna() & (ev["fname"] != ""), None),
        "fd": pd.to_numeric(ev["fd"], errors="coerce").fillna(ret.where(op == "openat")).fillna(-1),
        "offset": pd.to_numeric(ev["offset"], errors="coerce").where(op.isin(["pread64", "pwrite64", "mmap"])),
        "size": size, "latency_s": pd.to_numeric(ev["dur_us"], errors="coerce") / 1e6,
        "error": failed.astype("int64") * -1})
    return conform(out.sort_values("timestamp", kind="stable")), other


def mmaps(ev: pd.DataFrame) -> pd.DataFrame:
    """The ``mmap`` events as :func:`experiments.trace.resolve.mapped_files` reads them. DFTracer
    records the mapping's flags but not its protection: ``prot`` is PROT_READ for all (so a
    mapping is never taken for a program's or library's; the loader maps those without libc)."""
    m = ev[ev["name"].isin(["mmap", "mmap64"])] if len(ev) else ev
    return pd.DataFrame({"op": "mmap", "path": m["fname"] if len(m) else [],
                         "timestamp_ns": pd.to_numeric(m["ts_us"], errors="coerce") * 1000 if len(m) else [],
                         "prot": 1, "flags": pd.to_numeric(m["flags"], errors="coerce").fillna(0)
                         if len(m) else []})


def load_trace(files, t0_ns: int | None = None):
    """A :class:`~experiments.trace.schema.Trace` from stored DFTracer trace files (``.pfw`` or
    ``.pfw.gz``; a folder means every such file in it), e.g. the ones DLIO writes: the same
    vector, similarity and timeline then come out of it. ``t0_ns``: the trace's start (default:
    its first event)."""
    from .resolve import mapped_files
    from .schema import Trace
    files = [Path(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    files = [p for f in files for p in (sorted(f.glob("*.pfw")) + sorted(f.glob("*.pfw.gz"))
                                        if f.is_dir() else [f])]
    ev, bad = read_events(files)
    if t0_ns is None:
        ts = pd.to_numeric(ev["ts_us"], errors="coerce")
        t0_ns = int(ts.min()) * 1000 if len(ts.dropna()) else 0
    rows, other = to_rows(ev, t0_ns)
    meta = {"backend": "dftracer", "mode": "timeline", "block_traced": False,
            "why_no_block": "block layer traced by bpftrace only", "file_naming": "dftracer fname",
            "started": t0_ns / 1e9, "unparsed_lines": bad, "dftracer_other_calls": other,
            "dftracer_files": len(files), "n_events": int(len(rows))}
    meta["mapped_files"] = mapped_files(mmaps(ev), rows)
    return Trace(rows, pd.DataFrame(), meta, None)
