"""What each tracing back end sees: per back end, per case of the known I/O job and per file, the
calls and bytes it attributed against what the job logged it did (issue 42).

The job is :mod:`experiments.trace.known_io` with every case (plain reads, ``dup2``/``dup3``/
``fcntl`` duplicates, a shell redirection, ``fork``/``exec`` inheritance, ``readv``/``preadv``/
``preadv2``, the copies, an ``mmap``) plus :data:`~experiments.trace.known_io.EXTRA_CASES`
(``pread``, a raw ``syscall``, a PyTorch DataLoader worker's read, tf.data's read in
TensorFlow's C++ threads). Each case has its own data file (read) and output file (written).

``verdict``: ``exact`` (bytes equal, and calls equal where the job knows its call count),
``partial`` (some of it: fewer bytes or calls; for the mapped file, the mapping seen but its
page reads are no calls), ``missed`` (nothing attributed to the file), ``not run`` (the back
end cannot run here; ``note`` says why). Bytes are the read family plus copies out of the data
file, and the write family plus copies into the output file (``vector.counts_of``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

from . import dftracer_backend, known_io, vector
from .schema import COPY_IN, COPY_OUT, VFS_READS, VFS_WRITES
from .tracer import Tracer, backend_status

def all_configs() -> dict[str, dict]:
    """Name -> Tracer keywords of each configuration: both bpftrace modes, strace, each DFTracer
    release (:data:`.dftracer_backend.RELEASES`, named by its version: ``dftracer_1.0.2``), proc."""
    return {"bpftrace_timeline": {"backend": "bpftrace", "mode": "timeline"},
            "bpftrace_vector": {"backend": "bpftrace", "mode": "vector", "vfs_sequential": True},
            "strace": {"backend": "strace"},
            **{dftracer_backend.label(r): {"backend": "dftracer", "dftracer_release": r}
               for r in dftracer_backend.RELEASES},
            "proc": {"backend": "proc", "interval_s": 0.1}}


def why_not(kw: dict) -> str:
    """Why the configuration ``kw`` cannot run here ("" where it can)."""
    if kw["backend"] == "dftracer":
        return dftracer_backend.available(kw.get("dftracer_release", "dlio"))[1]
    return backend_status()[kw["backend"]]["why"]


ALL_CASES = known_io.CASES + known_io.EXTRA_CASES
# why DFTracer 1.0.2 misses a case, where the table shows it does: what its interception is
# built on (libc symbols, descriptors it saw opened), not a measured fact
_DUP = "descriptor not opened by a traced open* of this process (dup, redirection, exec)"
WHY_MISSED = {"dftracer_1.0.2": {
    "dup2": _DUP, "dup3": _DUP, "fcntl_dupfd": _DUP, "redirect": _DUP, "exec_inherit": _DUP,
    "readv": "readv/writev not wrapped", "preadv": "preadv/pwritev not wrapped",
    "preadv2": "preadv2/pwritev2 not wrapped", "sendfile": "sendfile not wrapped",
    "copy_file_range": "copy_file_range not wrapped", "splice": "splice not wrapped",
    "raw_syscall": "syscall(2) bypasses libc's wrappers"}}


def known(directory: Path, cases=ALL_CASES) -> list[dict]:
    """Per case and file (data, output): what the job did (calls, bytes; calls None where the
    job cannot count them) from its log."""
    exp = known_io.expected(directory, cases)
    import json
    log = json.loads((Path(directory) / "log.json").read_text())
    out = []
    for c, e in exp.items():
        exact_calls = all(x.get("calls_known", True) for x in log if x["case"] == c)
        crashed = [x["child_exit"] for x in log if x["case"] == c and x.get("child_exit")]
        rb, wb = e["read_bytes"] + e["copy_read_bytes"], e["write_bytes"] + e["copy_write_bytes"]
        rc, wc = e["reads"] + e["copy_reads"], e["writes"] + e["copy_writes"]
        if e["mapped"]:
            rb = known_io.FILE_BYTES  # every page touched through the mapping
        out.append({"case": c, "file": e["data"], "role": "read", "known_calls": rc if exact_calls else None,
                    "known_bytes": rb, "mapped": e["mapped"],
                    "child_exit": crashed[0] if crashed else 0})
        if wb or wc:
            out.append({"case": c, "file": e["out"], "role": "written", "known_calls": wc,
                        "known_bytes": wb, "mapped": False, "child_exit": 0})
    return out


def attributed(trace, file: str, role: str) -> tuple[int, int]:
    """(calls, bytes) ``trace`` attributed to ``file`` (reads or writes, copies included)."""
    c = vector.counts_of(trace) if trace.backend != "proc" else pd.DataFrame(columns=["op", "path"])
    ops = VFS_READS + COPY_IN if role == "read" else VFS_WRITES + COPY_OUT
    s = c[(c["path"] == file) & c["op"].isin(ops)] if len(c) else c
    if not len(s):
        return 0, 0
    ok = s["error"] == 0
    return int(s.loc[ok, "calls"].sum()), int((s.loc[ok, "size"] * s.loc[ok, "calls"]).sum())


def verdict(k: dict, calls: int, nbytes: int, mapped_seen: bool) -> str:
    if k["mapped"]:
        return "partial" if mapped_seen else "missed"
    if calls == 0 and nbytes == 0:
        return "missed" if k["known_bytes"] or k["known_calls"] else "exact"
    same_calls = k["known_calls"] is None or calls == k["known_calls"]
    return "exact" if nbytes == k["known_bytes"] and same_calls else "partial"


def measure(configs=None, directory: Path | None = None, quiet: bool = True) -> pd.DataFrame:
    """Run the job once under each back end configuration; one row per (back end, case, file)."""
    configs = configs or all_configs()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dlio-trace-coverage-", dir=directory) as tmp:
        for name, kw in configs.items():
            d = known_io.prepare(Path(tmp) / name, ALL_CASES)
            why = why_not(kw)
            if not why:
                cmd = [sys.executable, "-S", known_io.__file__, "run", str(d), "--hold-s", "0.4",
                       "--cases", *ALL_CASES]
                tr, rc = Tracer(watch=[d], quiet=quiet, sample=kw["backend"] == "proc", **kw).run(cmd)
                if rc != 0:
                    why = f"the job exited with {rc} under {name}"
            if why:
                known_io.run(d, ALL_CASES)  # for the known side only
            for k in known(d):
                if why:
                    rows.append({"backend": name, **k, "calls": None, "bytes": None,
                                 "verdict": "not run", "note": why})
                    continue
                calls, nbytes = attributed(tr, k["file"], k["role"])
                seen = k["file"] in (tr.meta.get("mapped_files") or {})
                note = ("mapping seen; its page reads are no calls" if k["mapped"] and seen else
                        "per-process totals only, no files" if kw["backend"] == "proc" else "")
                v = verdict(k, calls, nbytes, seen)
                if v == "missed" and not note:
                    note = WHY_MISSED.get(name, {}).get(k["case"], "")
                if k["child_exit"]:
                    note = f"the case's child process exited with {k['child_exit']} under {name}"
                if tr.mode != kw.get("mode", tr.mode):
                    note = (note + "; " if note else "") + f"ran in {tr.mode} mode"
                rows.append({"backend": name, **k, "calls": calls, "bytes": nbytes,
                             "verdict": v, "note": note})
    df = pd.DataFrame(rows)
    df["file"] = df["file"].map(lambda p: str(Path(p).relative_to(Path(p).parents[1])))
    return df


def summary(cov: pd.DataFrame) -> pd.DataFrame:
    """Verdict per case (rows) and back end (columns): ``exact``, ``partial``, ``missed`` (the
    worse of a case's two files)."""
    rank = {"exact": 0, "partial": 1, "missed": 2, "not run": 3}
    w = cov.assign(r=cov["verdict"].map(rank)).groupby(["case", "backend"], sort=False)["r"].max()
    inv = {v: k for k, v in rank.items()}
    return w.map(inv).unstack("backend").reindex(list(dict.fromkeys(cov["case"])))


def per_file(cov: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, file, known bytes), one column per back end: the bytes it attributed
    and its verdict (``13288 exact``; ``-`` where it did not run)."""
    cell = [f"{int(b)} {v}" if v != "not run" else "- not run" for b, v in zip(cov["bytes"].fillna(0), cov["verdict"])]
    w = cov.assign(cell=cell).pivot_table(index=["case", "file", "known_bytes"], columns="backend",
                                          values="cell", aggfunc="first", sort=False)
    return w[list(dict.fromkeys(cov["backend"]))]
