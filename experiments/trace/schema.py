"""The one trace schema every back end writes, and the trace file (parquet) that holds it.

One row per traced event:

=========== ===================== ==============================================================
column      type                  meaning
=========== ===================== ==============================================================
timestamp   datetime64[ns, UTC]   wall-clock start of the call / block request issue
t_s         float64               seconds since the trace started (same clock)
pid         int64                 process id (thread-group id)
tid         int64                 thread id
comm        string                process (thread) name, 15 characters at most for bpftrace
layer       string                ``vfs`` (system calls) or ``block`` (block-layer requests)
op          string                vfs: read, pread64, readv, preadv, preadv2, write, pwrite64,
                                  writev, pwritev, pwritev2; sendfile_in/_out,
                                  copy_file_range_in/_out, splice_in/_out (a copy is two rows:
                                  source and destination, each with the bytes moved); mmap
                                  (size = mapping length, offset = its file offset); openat,
                                  close, lseek (and dup, dup2, dup3, fcntl where a back end
                                  needs them to follow descriptors); block: read, write, other
path        string                file the descriptor refers to (vfs), None when unknown
fd          int64                 file descriptor (vfs; -1 for block)
offset      float64               file offset in bytes (vfs reads/writes), NaN when unknown
size        float64               bytes transferred (vfs: the return value; block: request bytes)
latency_s   float64               call duration (vfs) or issue-to-completion time (block), s
device      string                block device name (block rows), e.g. ``vda``
sector      float64               first 512-byte sector of the request (block rows)
error       int64                 0, or the negative errno the call returned (vfs)
=========== ===================== ==============================================================

A trace file is one parquet file of these rows. Its key-value metadata (key ``dlio_trace``) is a
JSON object: the back end that ran, why the others did not, the mode, the command, the clock
mapping, the sampler rate, lost events and bpftrace lines that did not parse. The ``/proc``
sampler's time series (one row per interval and source, see :mod:`experiments.host.dstat`) goes
beside it as ``<name>.samples.parquet``.

A ``vector``-mode trace (bpftrace aggregating in the kernel) has no per-call VFS rows; its calls
are in :attr:`Trace.counts`, beside it as ``<name>.counts.parquet``, one row per distinct
(operation, file, bytes returned, error, sequential or not):

=========== ======= =====================================================================
op          string  as ``op`` above
path        string  the file
size        float64 bytes the call returned (NaN for a failed call)
error       int64   0, or the negative errno
calls       int64   how many calls
sequential  int64   of those, how many started where the same process's previous call of
                    the same kind (read or write) on that file ended (Listing A.1 on offsets)
=========== ======= =====================================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

META_KEY = b"dlio_trace"
SCHEMA_VERSION = 2  # 2: vector-mode counts, copies, mmap, preadv/pwritev (1 still loads)

COLUMNS: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]", "t_s": "float64", "pid": "int64", "tid": "int64",
    "comm": "string", "layer": "string", "op": "string", "path": "string", "fd": "int64",
    "offset": "float64", "size": "float64", "latency_s": "float64", "device": "string",
    "sector": "float64", "error": "int64",
}
LAYERS = ("vfs", "block")
VFS_READS = ("read", "pread64", "readv", "preadv", "preadv2")
VFS_WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
COPY_IN = ("sendfile_in", "copy_file_range_in", "splice_in")    # the source of a copy
COPY_OUT = ("sendfile_out", "copy_file_range_out", "splice_out")  # its destination
COUNT_COLUMNS: dict[str, str] = {"op": "string", "path": "string", "size": "float64", "error": "int64",
                                 "calls": "int64", "sequential": "int64"}


class TraceError(ValueError):
    """Bad input to the tracing toolkit: the message says what is wrong and what is allowed."""


def empty() -> pd.DataFrame:
    return conform(pd.DataFrame({c: [] for c in COLUMNS}))


def conform(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with exactly the schema's columns, in order and with their dtypes (missing
    optional columns are filled with nulls)."""
    out = pd.DataFrame(index=df.index)
    for col, dtype in COLUMNS.items():
        if col in df:
            s = df[col]
        elif col in ("fd",):
            s = pd.Series(-1, index=df.index)
        elif col == "error":
            s = pd.Series(0, index=df.index)
        else:
            s = pd.Series(None, index=df.index, dtype="object")
        if dtype.startswith("datetime"):
            s = pd.to_datetime(s, utc=True)
        elif dtype == "string":
            s = s.astype("string")
        else:
            s = pd.to_numeric(s, errors="coerce").astype(dtype) if dtype == "float64" \
                else pd.to_numeric(s, errors="coerce").fillna(-1 if col == "fd" else 0).astype(dtype)
        out[col] = s
    return out.reset_index(drop=True)


def conform_counts(df: pd.DataFrame | None) -> pd.DataFrame:
    """``df`` with exactly the columns of :data:`COUNT_COLUMNS` (empty frame for None)."""
    df = pd.DataFrame(columns=list(COUNT_COLUMNS)) if df is None else df
    out = pd.DataFrame(index=df.index)
    for col, dtype in COUNT_COLUMNS.items():
        s = df[col] if col in df else pd.Series(None, index=df.index, dtype="object")
        if dtype == "string":
            out[col] = s.astype("string")
        elif dtype == "float64":
            out[col] = pd.to_numeric(s, errors="coerce").astype(dtype)
        else:
            out[col] = pd.to_numeric(s, errors="coerce").fillna(0).astype(dtype)
    return out.reset_index(drop=True)


def check(df: pd.DataFrame, source: str = "trace") -> None:
    """Raise :class:`TraceError` unless ``df`` has the schema's columns and layers."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise TraceError(f"{source}: not a trace of the dlio schema; missing column(s) "
                         f"{', '.join(missing)}; expected columns: {', '.join(COLUMNS)}")
    bad = sorted(set(df["layer"].dropna().unique()) - set(LAYERS))
    if bad:
        raise TraceError(f"{source}: unknown layer(s) {bad}; allowed: {', '.join(LAYERS)}")


@dataclass
class Trace:
    """A trace: the event rows, the sampler's time series, what produced them and, for a
    ``vector``-mode trace, the calls counted in the kernel (``counts``)."""

    events: pd.DataFrame = field(default_factory=empty)
    samples: pd.DataFrame = field(default_factory=pd.DataFrame)
    meta: dict = field(default_factory=dict)
    counts: pd.DataFrame | None = None

    @property
    def backend(self) -> str:
        return self.meta.get("backend", "unknown")

    @property
    def mode(self) -> str:
        """``timeline`` (one row per call) or ``vector`` (calls counted in :attr:`counts`)."""
        return self.meta.get("mode", "timeline")

    def vfs(self) -> pd.DataFrame:
        return self.events[self.events["layer"] == "vfs"]

    def block(self) -> pd.DataFrame:
        return self.events[self.events["layer"] == "block"]

    def save(self, path: str | Path) -> Path:
        """Write the trace to ``path`` (parquet; samples beside it), atomically."""
        from ..output.results import atomic_write

        path = Path(path)
        table = pa.Table.from_pandas(conform(self.events), preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[META_KEY] = json.dumps({"schema_version": SCHEMA_VERSION, **self.meta},
                                    default=str).encode()
        table = table.replace_schema_metadata(meta)
        atomic_write(path, lambda p: pq.write_table(table, p))
        sp = samples_path(path)
        if len(self.samples):
            atomic_write(sp, lambda p: self.samples.to_parquet(p, index=False))
        elif sp.exists():
            sp.unlink()
        cp = counts_path(path)
        if self.counts is not None:
            counts = conform_counts(self.counts)
            atomic_write(cp, lambda p: counts.to_parquet(p, index=False))
        elif cp.exists():
            cp.unlink()
        return path


def samples_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name.removesuffix(".parquet") + ".samples.parquet")


def counts_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name.removesuffix(".parquet") + ".counts.parquet")


def load(path: str | Path) -> Trace:
    """Read a trace file; :class:`TraceError` when it is missing or not of this schema."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"trace file {path} does not exist")
    try:
        table = pq.read_table(path)
    except Exception as e:  # noqa: BLE001 - any parquet failure is bad input here
        raise TraceError(f"{path}: not a parquet trace file ({e.__class__.__name__}: {e})") from None
    df = table.to_pandas()
    check(df, str(path))
    raw = (table.schema.metadata or {}).get(META_KEY)
    meta = json.loads(raw) if raw else {}
    sp = samples_path(path)
    samples = pd.read_parquet(sp) if sp.exists() else pd.DataFrame()
    cp = counts_path(path)
    counts = conform_counts(pd.read_parquet(cp)) if cp.exists() else None
    return Trace(conform(df), samples, meta, counts)
