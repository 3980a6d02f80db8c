"""Traced LMDBIO runs (Pumma et al.'s readers), through :mod:`experiments.lmdbio.read`'s public API.

Two readers whose I/O the tracer must get right, and which the thesis's tracer could not:

- ``lmdb``: every process maps the database (``mmap``, shared, read-only) and walks it with a
  cursor: its reads are page faults, so the vector's VFS read components are "not measured"
  (block reads are real);
- ``dio_prov``: one reader per node ``preadv``s each record at its recorded offset straight into
  shared memory: ``records`` calls of ``record_bytes`` each on ``data.mdb``.

:func:`build` writes a small database (:func:`experiments.lmdbio.read.build`), :func:`traced_run`
evicts it and traces one :func:`experiments.lmdbio.read.run` from this process (its MPI
ranks are children of the ``mpiexec`` it starts, traced with it), :func:`expected` says what the VFS read components must be.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..host import cache
from ..lmdbio import read as lmdbio
from .schema import Trace
from .tracer import Tracer


def config(records: int, record_bytes: int, procs: int, batch: int, eviction: str = "auto"
           ) -> lmdbio.LMDBIOConfig:
    """An LMDBIO configuration of one data set (``trace``) read by ``procs`` processes on one
    node in batches of ``batch`` records."""
    need_mib = int(records * (record_bytes + 64) * 1.1 / 2**20) + 16
    return lmdbio.LMDBIOConfig(
        datasets=[{"name": "trace", "records": records, "record_bytes": record_bytes}],
        procs=[procs], ranks_per_node=procs, batch_size=batch, map_size_mib=max(need_mib, 16),
        strategies=["lmdb", "dio_prov"], eviction=eviction)


def build(directory: str | Path, cfg: lmdbio.LMDBIOConfig, seed: int) -> tuple[Path, pd.DataFrame]:
    """(database folder, provenance: offset and size of every record) under ``directory``."""
    d = cfg.datasets[0]
    dest = Path(directory) / f"lmdbio-{d.name}"
    return dest, lmdbio.build(dest, d.records, d.record_bytes, cfg.map_size_mib << 20, seed)


def traced_run(db: Path, prov: pd.DataFrame, cfg: lmdbio.LMDBIOConfig, strategy: str,
               **tracer_kw) -> tuple[Trace, dict]:
    """Evict the database, then trace one run of ``strategy``; (trace, what the run did:
    ``strategy``, ``procs``, ``seconds``, ``bytes`` delivered, ``eviction``)."""
    if strategy not in lmdbio.STRATEGIES:
        raise ValueError(f"strategy = {strategy!r}; allowed: {', '.join(lmdbio.STRATEGIES)}")
    size = cfg.datasets[0].record_bytes
    how = cache.evict([db], cfg.eviction)
    with Tracer(**tracer_kw) as t:
        per = lmdbio.run(db, prov, strategy, cfg.procs[0], cfg, size)
    t.trace.meta.update(data_filter=[str(Path(db) / "data.mdb")], checkpoint_filter=None,
                        block_files=[str(Path(db) / "data.mdb")])
    return t.trace, {"strategy": strategy, "procs": cfg.procs[0], "eviction": how,
                     "seconds": float(per["t1"].max() - per["t0"].min()),
                     "bytes": int(per["bytes"].sum())}


def expected(prov: pd.DataFrame, strategy: str) -> dict[str, float]:
    """The VFS read components the trace of ``strategy`` must show on ``data.mdb`` (NaN: "not
    measured", a mapped file)."""
    nan = float("nan")
    if strategy in ("lmdb", "lmm"):
        return {"vfs_reads": nan, "vfs_read_bytes": nan, "unique_files_read": nan,
                "vfs_read_size_median": nan}
    if strategy != "dio_prov":
        raise ValueError(f"no expectation for strategy {strategy!r}")
    return {"vfs_reads": float(len(prov)), "vfs_read_bytes": float(prov["bytes"].sum()),
            "unique_files_read": 1.0, "vfs_read_size_median": float(prov["bytes"].median())}
