"""The ``tracing_patterns`` stage: trace known patterns and check the tracer against them.

Three runs, each traced with the same back end (chosen automatically, recorded):

- ``fio_seq_rand``: fio, sequential ``seq_bs_kib`` KiB reads over ``seq_mib`` MiB of one file, then
  ``rand_ios`` random ``rand_bs_kib`` KiB reads (the issue's known pattern), run twice
  (``fio_seq_rand`` and ``fio_seq_rand_repeat``) to show run-to-run similarity;
- ``fio_rand``: only random ``rand_bs_kib`` KiB reads, ``rand_ios + seq reads`` of them (a
  different pattern with the same number of reads);
- ``loader``: a PyTorch DataLoader (``loader_workers`` worker processes) reading
  ``loader_files`` files of ``loader_file_kib`` KiB for ``loader_epochs`` epochs, then a
  checkpoint; it writes the phase log (:mod:`.phases`), traced in-process (workers are children).

The section's parameters are checked before any work (:class:`TracingPatternsConfig`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field, model_validator

from ..config import Section
from . import patterns, vector
from .phases import PhaseLog
from .schema import Trace
from .tracer import Tracer


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


def pick_tier(tiers, name: str):
    """The tier called ``name``; ConfigError naming the allowed ones otherwise."""
    from ..config import ConfigError
    for t in tiers:
        if t.name == name:
            return t
    raise ConfigError(f"tracing_patterns.tier = {name!r}; allowed: {', '.join(t.name for t in tiers)}")


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
    traces: dict[str, Trace] = {}
    for run in ("fio_seq_rand", "fio_seq_rand_repeat"):
        traces[run], rc = Tracer(**kw).run(p.command())
        if rc != 0:
            raise RuntimeError(f"fio exited with {rc} on {p.job_file}")
    q = patterns.fio_pattern(base / "fio_rand", cfg.file_mib, 0, cfg.seq_bs_kib, cfg.rand_bs_kib,
                             cfg.rand_ios + p.seq_reads, seed + 1, direct=p.direct)
    traces["fio_rand"], rc = Tracer(**kw).run(q.command())
    files = patterns.loader_files(base / "loader" / "data", cfg.loader_files, cfg.loader_file_kib, seed)
    log_path = base / "loader" / "phases.jsonl"
    log_path.unlink(missing_ok=True)
    ck_dir = base / "loader" / "checkpoints"
    from .. import cache
    import torch.utils.data  # noqa: F401 - imported before tracing: library loading is not the pattern
    cache.evict([base / "loader" / "data"])
    with Tracer(**kw) as t:
        info = patterns.run_loader(files, cfg.loader_workers, cfg.loader_batch, cfg.loader_epochs, ck_dir,
                                   PhaseLog(log_path), seed, cfg.checkpoint_kib)
    t.trace.meta["phase_log"] = str(log_path)
    traces["loader"] = t.trace
    filters = {"fio_seq_rand": ([str(p.data_file)], None, [p.data_file]),
               "fio_seq_rand_repeat": ([str(p.data_file)], None, [p.data_file]),
               "fio_rand": ([str(q.data_file)], None, [q.data_file]),
               "loader": ([str(base / "loader" / "data")], [str(ck_dir)], [*files, Path(info["checkpoint"])])}
    for run, (data, ck, bf) in filters.items():  # so a report can filter as the vectors did
        traces[run].meta.update(data_filter=data, checkpoint_filter=ck,
                                block_files=[str(f) for f in bf] if bf else None)
    return {"traces": traces, "pattern": p, "expected": patterns.expected(p), "loader": info,
            "phase_log": log_path, "eviction": cache.drop_caches_allowed(),
            "filters": filters}


def vectors(m: dict) -> pd.DataFrame:
    """One row per run: Table 4.2 components plus the extras of :func:`vector.describe`."""
    rows = []
    for run, tr in m["traces"].items():
        data, ck, bf = m["filters"][run]
        rows.append({"run": run, "backend": tr.backend, **vector.describe(tr, data, ck, None, bf)})
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
        rows.append({"quantity": "bio_reads", "expected": exp["vfs_reads"], "traced": vec["bio_reads"], "tolerance": 0})
        rows.append({"quantity": "bio_random_read_pct", "expected": 100 * exp["bio_random_reads"] / n,
                     "traced": vec["bio_random_read_pct"], "tolerance": 100 * 3 / n})
    df = pd.DataFrame(rows)
    df["match"] = (df["traced"] - df["expected"]).abs() <= df["tolerance"]
    return df
