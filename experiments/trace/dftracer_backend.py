"""DFTracer back end: the field's user-space tracer (``LD_PRELOAD``), its trace turned into our rows.

DFTracer (``pydftracer`` on PyPI, LLNL; DLIO turns it on by default) intercepts libc's POSIX
calls in every library of a process (GOTCHA rewrites their symbol tables) and writes one
Chrome trace event per call, per process, to ``<prefix>-<name>-<pid>-preload.pfw`` (JSON
lines, ``.pfw.gz`` when compressed). It runs as the command's ``LD_PRELOAD`` with::

    DFTRACER_ENABLE=1 DFTRACER_INIT=PRELOAD DFTRACER_LOG_FILE=<prefix>
    DFTRACER_DATA_DIR=all DFTRACER_INC_METADATA=1 (file names in each event)

so it traces a command only (the preload must be there when it starts), not the Python block
of :class:`~experiments.trace.tracer.Tracer` used as a context manager. Two releases
(:data:`RELEASES`): ``dlio``, the ``pydftracer`` 1.0.2 that DLIO 2.0.0 pins, from DLIO's
environment (``.venv-dlio``, ``env/dlio.lock``), and ``current``, the ``dftracer`` 2.x release
(``.venv-dftracer``, ``env/dftracer.lock``, issue 56); their wheels are manylinux_2_34 only, so
the main lock is left alone. ``$DFTRACER_PRELOAD`` names another ``libdftracer_preload.so``
(for the ``dlio`` release). :func:`version` says which release a library is, from the
environment's package metadata.

The two write different traces, both read here (:func:`read_events`): 1.0.2 one JSON event per
call with ``"ph": "X"`` and the file name in ``args.fname``, one file per process named
``<prefix>-<name>-<pid>-preload.pfw``; 2.x ``"ph": 1`` events whose ``args.fhash`` points to a
file-name event (``"name": "FH"``), the program's name in the ``start`` event (``exec_hash`` ->
an ``SH`` event), files ``<prefix>-<hash>-{preload,fork}.pfw.gz``, gzip streams that a process
ending without DFTracer's exit handler (``_exit``, ``exec``) leaves unfinished (read up to
where they stop).

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


# release -> (environment folder beside the project, the package carrying the preload library)
RELEASES = {"dlio": (None, "pydftracer"), "current": (".venv-dftracer", "dftracer")}


def _check_release(release: str) -> None:
    if release not in RELEASES:
        raise ValueError(f"dftracer release = {release!r}; allowed: {', '.join(RELEASES)}")


def release_venv(release: str = "dlio") -> Path:
    """The environment holding ``release``'s library (``dlio``: DLIO's, :func:`paths.dlio_venv`)."""
    from ..settings import paths
    _check_release(release)
    folder = RELEASES[release][0]
    return paths.dlio_venv() if folder is None else paths.root() / folder


def preload_library(release: str = "dlio") -> tuple[Path | None, str]:
    """(``libdftracer_preload.so``, why not found): for ``dlio``, ``$DFTRACER_PRELOAD`` or the
    one the ``pydftracer`` 1.0.2 wheel put in DLIO's environment; for ``current``, the one the
    ``dftracer`` wheel put in ``.venv-dftracer``."""
    _check_release(release)
    if release == "dlio" and os.environ.get("DFTRACER_PRELOAD"):
        p = Path(os.environ["DFTRACER_PRELOAD"])
        return (p, "") if p.is_file() else (None, f"DFTRACER_PRELOAD={p}: no such file")
    v = release_venv(release)
    lock = "env/dlio.lock" if release == "dlio" else "env/dftracer.lock"
    if (v / "UNAVAILABLE").exists():
        return None, (f"DFTracer ({release}) is installed only in {v.name}, which could not be "
                      f"installed here: {(v / 'UNAVAILABLE').read_text().strip()}")
    libs = sorted(v.glob("lib/python3*/site-packages/dftracer/lib*/libdftracer_preload.so"))
    if not libs:
        return None, (f"no libdftracer_preload.so in {v.name} ({RELEASES[release][1]} from {lock}); "
                      f"run `make setup` (or `bash env/setup-dlio.sh`)")
    return libs[0], ""


def version(release: str = "dlio") -> str:
    """``<package> <version>`` of ``release``'s library, from its environment's package metadata
    (``DFTRACER_PRELOAD``: ``unknown``)."""
    lib, _ = preload_library(release)
    if lib is None or (release == "dlio" and os.environ.get("DFTRACER_PRELOAD")):
        return "unknown"
    pkg = RELEASES[release][1]
    found = sorted(lib.parents[2].glob(f"{pkg}-*.dist-info"))  # site-packages
    return f"{pkg} {found[0].name[len(pkg) + 1:-len('.dist-info')]}" if found else "unknown"


def label(release: str = "dlio") -> str:
    """The bench's and coverage table's name for ``release``: ``dftracer_<version>``
    (``dftracer_<release>`` where the version is not known)."""
    v = version(release)
    return f"dftracer_{v.split()[1]}" if v != "unknown" else f"dftracer_{release}"


@lru_cache(maxsize=None)
def available(release: str = "dlio") -> tuple[bool, str]:
    """(usable, why not): the preload library exists and loads into ``true`` without error."""
    import subprocess
    lib, why = preload_library(release)
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


def environment(prefix: Path, data_dir: str = "all", release: str = "dlio") -> dict[str, str]:
    """The variables that make a command write its DFTracer trace to ``<prefix>-*.pfw``
    (``.pfw.gz`` for 2.x, which compresses by default)."""
    lib, why = preload_library(release)
    if lib is None:
        raise RuntimeError(why)
    pre = os.environ.get("LD_PRELOAD", "")
    return {"LD_PRELOAD": f"{lib}:{pre}" if pre else str(lib), "DFTRACER_ENABLE": "1",
            "DFTRACER_INIT": "PRELOAD", "DFTRACER_LOG_FILE": str(prefix),
            "DFTRACER_DATA_DIR": data_dir, "DFTRACER_INC_METADATA": "1"}


def trace_files(prefix: Path) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(f"{glob.escape(str(prefix))}-*.pfw*"))


def read_events(files) -> tuple[pd.DataFrame, int]:
    """Every complete event of DFTracer's trace files (1.0.2's ``"ph": "X"``, 2.x's ``"ph": 1``),
    one row each, with the process name as ``comm`` (from the file name, 1.0.2, or from the
    ``start`` event, 2.x) and the file name as ``fname`` (2.x: through ``fhash``); (rows, lines
    that did not parse). Exact duplicate lines are dropped (a ``fork``-ed child may flush a copy
    of its parent's buffer); a gzip stream that stops unfinished is read up to where it stops."""
    rows, bad, seen = [], 0, set()
    names: dict[str, str] = {}   # 2.x: hash -> file name (FH) or string (SH), from any process's file
    for f in files:
        f = Path(f)
        m = _FILE.search(f.name)
        comm = m.group("name")[:15] if m else None   # None: 2.x, the start event's exec_hash
        first = len(rows)
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", errors="replace") as fh:
            try:
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
                    a = e.get("args") or {}
                    if e.get("name") in ("FH", "SH") and e.get("ph") == 4:
                        names[str(a.get("value"))] = str(a.get("name"))
                        continue
                    if e.get("ph") not in ("X", 1) or "ts" not in e:
                        continue
                    if e.get("name") == "start" and comm is None:
                        comm = ("hash", a.get("exec_hash"))
                    rows.append({"name": e.get("name"), "cat": e.get("cat"), "pid": e.get("pid"),
                                 "tid": e.get("tid"), "ts_us": e.get("ts"), "dur_us": e.get("dur"),
                                 "fname": a.get("fname", ("hash", a.get("fhash"))), "ret": a.get("ret"),
                                 "fd": a.get("fd"), "offset": a.get("offset"), "length": a.get("length"),
                                 "flags": a.get("flags"), "comm": comm})
            except (EOFError, gzip.BadGzipFile, OSError):   # an unfinished stream: what it had
                pass
        for r in rows[first:]:   # 2.x names the program in its first event
            r["comm"] = comm
    for r in rows:   # 2.x's hashes, once every file's names are known
        if isinstance(r["fname"], tuple):
            r["fname"] = names.get(r["fname"][1])
        if isinstance(r["comm"], tuple) or r["comm"] is None:
            r["comm"] = os.path.basename(names.get(r["comm"][1], ""))[:15] if r["comm"] else ""
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
