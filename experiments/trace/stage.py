"""The ``tracing_patterns`` stage: trace known patterns and check the tracer against them.

Three runs, each traced with the same back end (chosen automatically, recorded); the fio runs
and the loader are windows of one tracer session (:class:`.session.Session`), LMDBIO's readers
a tracer each (their vector mode counts in the kernel, which a session cannot split by time):

- ``fio_seq_rand``: fio, sequential ``seq_bs_kib`` KiB reads over ``seq_mib`` MiB of one file, then
  ``rand_ios`` random ``rand_bs_kib`` KiB reads (the issue's known pattern), run twice
  (``fio_seq_rand`` and ``fio_seq_rand_repeat``) to show run-to-run similarity;
- ``fio_rand``: only random ``rand_bs_kib`` KiB reads, ``rand_ios + seq reads`` of them (a
  different pattern with the same number of reads);
- ``loader``: a PyTorch DataLoader (``loader_workers`` worker processes) reading
  ``loader_files`` files of ``loader_file_kib`` KiB for ``loader_epochs`` epochs, then a
  checkpoint; it writes the phase log (:mod:`.phases`), traced in-process (workers are children);
- ``lmdb_mmap`` and ``lmdb_dio_prov``: LMDBIO's readers (:mod:`.lmdb_runs`) over a database of
  ``lmdb_records`` records of ``lmdb_record_bytes`` B with ``lmdb_procs`` processes, traced in
  ``lmdb_mode`` (default ``vector``, counted in the kernel): every process mapping the database
  (its VFS reads "not measured", block reads real), and one reader per node ``preadv``-ing each
  record at its recorded offset (``lmdb_records`` calls, all the records' bytes).

The stage has **no builder** (no ``measuring_stage``; ``builder=None`` in its entry): each run
traces a known pattern once and is checked exactly against what the pattern issued (calls,
bytes, block requests within a stated tolerance) or against another run (the similarity of the
repeated fio run); no quantity it reports is an interval over runs, so its runs are not the
unit of an interval and rounds would only repeat the same check.

The section's parameters are checked before any work (:class:`TracingPatternsConfig`). The
notebook only calls :func:`need_bytes`, :func:`measure`, :func:`vectors`, :func:`pattern_check`,
:func:`fio_check`, :func:`lmdb_check` and :func:`save`, and shows what they return.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field, model_validator

from ..settings.config import Section
from . import lmdb_runs, patterns, vector
from ..stages import Stage
from .phases import LOADER_LOG, PhaseLog
from .schema import Trace
from .session import Session

LMDB_RUNS = {"lmdb_mmap": "lmdb", "lmdb_dio_prov": "dio_prov"}  # run -> LMDBIO strategy


class TracingPatternsConfig(Section):
    backend: Literal["auto", "bpftrace", "strace", "proc"] = "auto"
    tier: str = Field("disk", description="tier holding the pattern files (a block device for BIO)")
    file_mib: int = Field(32, ge=1, le=65536)
    seq_mib: int = Field(16, ge=1)
    seq_bs_kib: int = Field(256, ge=4, le=65536)
    rand_bs_kib: int = Field(4, ge=4, le=65536)
    rand_ios: int = Field(200, ge=1, le=10_000_000)
    loader_files: int = Field(64, ge=1)
    loader_file_kib: int = Field(128, ge=1)
    loader_workers: int = Field(2, ge=0, le=64)
    loader_batch: int = Field(8, ge=1)
    loader_epochs: int = Field(2, ge=1)
    checkpoint_kib: int = Field(1024, ge=4)
    interval_s: float = Field(0.5, gt=0, le=60)
    lmdb_records: int = Field(4096, ge=1, le=10_000_000, description="records in the traced LMDB")
    lmdb_record_bytes: int = Field(3072, ge=1, le=1 << 24)
    lmdb_procs: int = Field(2, ge=1, le=64, description="LMDBIO processes (one node)")
    lmdb_batch: int = Field(64, ge=1, le=1_000_000, description="records per process per round")
    lmdb_mode: Literal["timeline", "vector"] = "vector"

    @model_validator(mode="after")
    def _sizes(self):
        if self.seq_mib > self.file_mib:
            raise ValueError(f"seq_mib = {self.seq_mib} must be <= file_mib = {self.file_mib}")
        if (self.seq_mib << 10) % self.seq_bs_kib:
            raise ValueError(f"seq_bs_kib = {self.seq_bs_kib} must divide seq_mib*1024 = {self.seq_mib << 10}")
        if self.rand_bs_kib * 1 > self.file_mib << 10:
            raise ValueError(f"rand_bs_kib = {self.rand_bs_kib} must be <= file_mib*1024")
        if self.loader_batch > self.loader_files:
            raise ValueError(f"loader_batch = {self.loader_batch} must be <= loader_files = {self.loader_files}")
        return self


def need_bytes(cfg: TracingPatternsConfig) -> int:
    """Bytes the stage writes on its tier: two fio files, the loader's files and checkpoint,
    the LMDB (records with their page headers, 10 % slack)."""
    return (((2 * cfg.file_mib) << 20) + cfg.loader_files * (cfg.loader_file_kib << 10)
            + (cfg.checkpoint_kib << 10) + int(cfg.lmdb_records * (cfg.lmdb_record_bytes + 64) * 1.1))


def pick_tier(tiers, name: str):
    """The tier ``tracing_patterns.tier`` names (:func:`experiments.host.tiers.tier_named`)."""
    from ..host.tiers import tier_named
    return tier_named(name, tiers, "tracing_patterns.tier")


def measure(cfg: TracingPatternsConfig, tier_dir: Path, seed: int) -> dict:
    """Run and trace the three patterns under ``tier_dir/tracing_patterns``. Returns
    ``{"traces": {run: Trace}, "expected": {...}, "pattern": FioPattern, "loader": {...},
    "phase_log": Path, "data_dirs": {...}}``."""
    base = Path(tier_dir) / "tracing_patterns"
    base.mkdir(parents=True, exist_ok=True)
    # every request on the device (write-back by kernel threads included, as the thesis), kept
    # to the files' extents when the vectors are built (other jobs share the disk)
    kw = dict(backend=cfg.backend, watch=[base], interval_s=cfg.interval_s, block_scope="device")
    p = patterns.fio_pattern(base / "fio", cfg.file_mib, cfg.seq_mib, cfg.seq_bs_kib, cfg.rand_bs_kib,
                             cfg.rand_ios, seed)
    q = patterns.fio_pattern(base / "fio_rand", cfg.file_mib, 0, cfg.seq_bs_kib, cfg.rand_bs_kib,
                             cfg.rand_ios + p.seq_reads, seed + 1, direct=p.direct)
    files = patterns.loader_files(base / "loader" / "data", cfg.loader_files, cfg.loader_file_kib, seed)
    log_path = base / "loader" / "phases.jsonl"
    log_path.unlink(missing_ok=True)
    ck_dir = base / "loader" / "checkpoints"
    from ..host import cache
    import torch.utils.data  # noqa: F401 - imported before tracing: library loading is not the pattern
    # the three fio runs and the loader in one tracer session, a window each (the probes attach once)
    fio = {"fio_seq_rand": p, "fio_seq_rand_repeat": p, "fio_rand": q}
    with Session(**kw) as session:
        for run, job in fio.items():
            with session.window(run):
                rc = subprocess.run(job.command()).returncode
            if rc != 0:
                raise RuntimeError(f"fio exited with {rc} on {job.job_file}")
        cache.evict([base / "loader" / "data"])
        with session.window("loader"):
            info = patterns.run_loader(files, cfg.loader_workers, cfg.loader_batch, cfg.loader_epochs, ck_dir,
                                       PhaseLog(log_path), seed, cfg.checkpoint_kib)
    traces: dict[str, Trace] = {run: w.trace for run, w in session.windows.items()}
    for run, job in fio.items():
        traces[run].meta["command"] = job.command()
    traces["loader"].meta["phase_log"] = str(log_path)
    filters = {"fio_seq_rand": ([str(p.data_file)], None, [p.data_file]),
               "fio_seq_rand_repeat": ([str(p.data_file)], None, [p.data_file]),
               "fio_rand": ([str(q.data_file)], None, [q.data_file]),
               "loader": ([str(base / "loader" / "data")], [str(ck_dir)], [*files, Path(info["checkpoint"])])}
    # LMDBIO's readers: an mmap reader and a preadv reader (vector mode: counted in the kernel)
    lcfg = lmdb_runs.config(cfg.lmdb_records, cfg.lmdb_record_bytes, cfg.lmdb_procs, cfg.lmdb_batch)
    db, prov = lmdb_runs.build(base / "lmdb", lcfg, seed)
    lmdb = {}
    for run, strategy in LMDB_RUNS.items():
        traces[run], lmdb[run] = lmdb_runs.traced_run(db, prov, lcfg, strategy, mode=cfg.lmdb_mode, **kw)
        filters[run] = ([str(db / "data.mdb")], None, [db / "data.mdb"])
    for run, (data, ck, bf) in filters.items():  # so a report can filter as the vectors did
        traces[run].meta.update(data_filter=data, checkpoint_filter=ck,
                                block_files=[str(f) for f in bf] if bf else None)
    return {"traces": traces, "pattern": p, "expected": patterns.expected(p), "loader": info,
            "phase_log": log_path, "eviction": cache.drop_caches_allowed(),
            "filters": filters, "lmdb": lmdb, "lmdb_provenance": prov,
            "lmdb_memory_backed": not bool(traces["lmdb_mmap"].meta.get("devices"))}


def vectors(m: dict) -> pd.DataFrame:
    """One row per run: Table 4.2 components plus the extras of :func:`vector.describe`, the
    trace's mode, and ``not_measured``: ``component: reason`` for each component left NaN."""
    rows = []
    for run, tr in m["traces"].items():
        data, ck, bf = m["filters"][run]
        why = vector.not_measured(tr, data, ck, None, bf)
        reasons = {}
        for k, r in why.items():  # one line per reason, naming its components
            reasons.setdefault(r, []).append(k)
        rows.append({"run": run, "backend": tr.backend, "mode": tr.mode,
                     **vector.describe(tr, data, ck, None, bf),
                     "not_measured": " | ".join(f"{', '.join(ks)}: {r}" for r, ks in reasons.items())})
    return pd.DataFrame(rows)


def pattern_check(vec: pd.Series, exp: dict, block: bool) -> pd.DataFrame:
    """Expected vs traced for the fio pattern: one row per quantity, ``match`` True/False."""
    rows = []
    for k in ("vfs_reads", "vfs_read_bytes", "unique_files_read", "vfs_read_size_q1",
              "vfs_read_size_median", "vfs_read_size_q3"):
        rows.append({"quantity": k, "expected": exp[k], "traced": vec[k], "tolerance": 0})
    n = exp["vfs_random_reads"] + exp["vfs_sequential_reads"]
    rows.append({"quantity": "vfs_random_read_pct", "expected": 100 * exp["vfs_random_reads"] / n,
                 "traced": vec["vfs_random_read_pct"], "tolerance": 100 * 2 / n})
    if block:
        # direct reads map one to one onto block requests, except where the block layer splits a
        # read that crosses a boundary of the file's extents (a fragmented file): one more each,
        # as many as the file has boundaries (3 in 66 reads in a CI run); allow 5 % of the
        # reads (at least one). The bytes cannot split, but a cold open can make the file system
        # read its own metadata (an extent-tree block, 4 KiB, for the same process): at most one
        # such block per allowed extra request (a CI run of 2026-11-29 traced 4,096 B more than
        # fio's 4,399,104).
        extra = max(1, round(0.05 * exp["vfs_reads"]))
        rows.append({"quantity": "bio_reads", "expected": exp["vfs_reads"], "traced": vec["bio_reads"],
                     "tolerance": extra})
        rows.append({"quantity": "bio_read_bytes", "expected": exp["vfs_read_bytes"],
                     "traced": vec["bio_read_bytes"], "tolerance": 4096 * extra})
        rows.append({"quantity": "bio_random_read_pct", "expected": 100 * exp["bio_random_reads"] / n,
                     "traced": vec["bio_random_read_pct"], "tolerance": 100 * 3 / n})
    df = pd.DataFrame(rows)
    df["match"] = (df["traced"] - df["expected"]).abs() <= df["tolerance"]
    return df


def fio_check(vec: pd.DataFrame, m: dict) -> pd.DataFrame:
    """:func:`pattern_check` of the ``fio_seq_rand`` run (block rows where the block layer was
    traced and fio read with direct I/O, so that one read is one request)."""
    tr = m["traces"]["fio_seq_rand"]
    return pattern_check(vec.set_index("run").loc["fio_seq_rand"], m["expected"],
                         block=bool(tr.meta.get("block_traced")) and m["pattern"].direct)


def lmdb_check(vec: pd.DataFrame, m: dict) -> pd.DataFrame:
    """Expected vs traced for the LMDBIO runs: the preadv reader's calls, bytes, one file and
    record-sized reads; "not measured" for the mmap reader's VFS reads (``expected`` NaN: the
    trace must say not measured, ``match`` True when it does) and, where the database is on a
    block device, block reads that really happened (``bio_read_bytes`` > 0)."""
    rows = []
    v = vec.set_index("run")
    prov = m["lmdb_provenance"]
    for run, strategy in LMDB_RUNS.items():
        exp = lmdb_runs.expected(prov, strategy)
        for k, x in exp.items():
            got = float(v.loc[run, k])
            rows.append({"run": run, "quantity": k, "expected": x, "traced": got,
                         "match": (got != got) if x != x else got == x})
        tr = m["traces"][run]
        if strategy == "lmdb" and tr.meta.get("block_traced") and not m["lmdb_memory_backed"]:
            got = float(v.loc[run, "bio_read_bytes"])
            rows.append({"run": run, "quantity": "bio_read_bytes > 0", "expected": 1.0,
                         "traced": got, "match": got > 0})
    return pd.DataFrame(rows)


def save(out, m: dict, vec: pd.DataFrame, check: pd.DataFrame, lcheck: pd.DataFrame, cfg, tier_info) -> dict:
    """Write the stage's results through ``out`` (:class:`experiments.output.results.StageResults`):
    every event (``raw.parquet``), each trace (``trace_<run>.parquet``, with its counts and
    samples beside it), the loader's phase log (:data:`.phases.LOADER_LOG`), the vectors
    (``summary.csv``), ``pattern_check.csv``, ``lmdb_check.csv``, the metrics and ``env.json``.
    Returns the metrics."""
    from ..output.results import atomic_write
    from ..settings import config
    tr0 = m["traces"]["fio_seq_rand"]
    raw = pd.concat([tr.events.assign(run=run) for run, tr in m["traces"].items()], ignore_index=True)
    out.raw(raw)
    for run, tr in m["traces"].items():
        tr.save(out.path(f"trace_{run}.parquet"))
    # the loader's phase log beside its trace: it was written in the data tier (data/, not a
    # result), which a shipped run does not carry, so its report could not draw the phases
    log = Path(m["phase_log"])
    if log.is_file():
        text = log.read_text()
        atomic_write(out.path(LOADER_LOG), lambda p: p.write_text(text))
    out.summary(vec)
    out.table("pattern_check", check)
    out.table("lmdb_check", lcheck)
    # headline metrics in the one vocabulary (experiments/output/headline.py); the rest is in env.json
    metrics = {"match": float(check["match"].mean())}
    out.metrics(metrics)
    out.env(params=config.as_dict(cfg), tracer=tr0.backend, tracer_fallbacks=tr0.meta.get("fallbacks"),
            block_traced=tr0.meta.get("block_traced"), why_no_block=tr0.meta.get("why_no_block"),
            file_naming=tr0.meta.get("file_naming"),
            modes={run: tr.mode for run, tr in m["traces"].items()},
            tracer_probes={run: tr.meta.get("probes") for run, tr in m["traces"].items()},
            unparsed_lines={run: tr.meta.get("unparsed_lines") for run, tr in m["traces"].items()},
            lost_events={run: tr.meta.get("lost_events") for run, tr in m["traces"].items()},
            direct_io=m["pattern"].direct, drop_caches_allowed=m["eviction"],
            loader=m["loader"], lmdb=m["lmdb"], tier=tier_info.__dict__, events=int(len(raw)),
            lmdb_match_fraction=float(lcheck["match"].mean()) if len(lcheck) else None)
    return metrics


# ----------------------------------------------------------------------------- the registry's entry
# The stage's entry in the registry (experiments/stages.py finds it: docs/adding-a-stage.md).
STAGE = Stage("tracing_patterns", "notebooks/20-tracing-patterns.ipynb", "measuring",
              {"tracing_patterns": "TracingPatternsConfig"}, ("seed", "tiers", "tracing_patterns"),
              report="tracing_report",
              builder=None)   # each run checked exactly against its known pattern: no intervals (the docstring)
