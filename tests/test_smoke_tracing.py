"""Smoke run of the tracing stages: what the notebooks wrote."""

import json

import pandas as pd
import pytest

from experiments.trace import schema, vector

pytestmark = pytest.mark.smoke


def test_tracing_patterns_wrote_traces_and_vectors(stage_results):
    d = stage_results("tracing_patterns")
    vec = pd.read_csv(d / "summary.csv")
    assert set(vec["run"]) == {"fio_seq_rand", "fio_seq_rand_repeat", "fio_rand", "loader",
                               "lmdb_mmap", "lmdb_dio_prov"}
    assert set(vector.KEYS) <= set(vec.columns)
    env = json.loads((d / "env.json").read_text())
    assert env["tracer"] in ("bpftrace", "strace", "proc")
    for run in vec["run"]:
        tr = schema.load(d / f"trace_{run}.parquet")
        assert tr.backend == env["tracer"]
    raw = pd.read_parquet(d / "raw.parquet")
    assert set(schema.COLUMNS) <= set(raw.columns)
    check = pd.read_csv(d / "pattern_check.csv")
    if env["tracer"] != "proc":
        assert check["match"].all(), check
        loader = vec.set_index("run").loc["loader"]
        assert loader["unique_files_read"] > 1 and loader["unique_files_written"] == 1
        # LMDBIO: the preadv reader's bytes are seen; the mmap reader's VFS reads are "not measured"
        lcheck = pd.read_csv(d / "lmdb_check.csv")
        assert lcheck["match"].all(), lcheck
        v = vec.set_index("run")
        assert v.loc["lmdb_dio_prov", "vfs_read_bytes"] > 0
        assert pd.isna(v.loc["lmdb_mmap", "vfs_reads"]) and "memory-mapped" in v.loc["lmdb_mmap", "not_measured"]
    assert sum((env.get("unparsed_lines") or {}).get(r) or 0 for r in vec["run"]) == 0


def test_tracing_report_claims_and_figures(stage_results):
    d = stage_results("tracing_report")
    claims = {c["id"]: c for c in json.loads((d / "claims.json").read_text())}
    assert claims["trace_self_similarity"]["holds"]
    assert claims["trace_similarity_symmetric"]["holds"]
    env = json.loads((stage_results("tracing_patterns") / "env.json").read_text())
    if env["tracer"] != "proc":
        assert claims["trace_fio_pattern_match"]["holds"], claims["trace_fio_pattern_match"]
    for f in ("similarity_matrix.png", "timeline_loader.png", "timeline_fio_seq_rand.png"):
        assert (d / f).stat().st_size > 0
    doc = json.loads((d / "loader.perfetto.json").read_text())
    assert any(e.get("cat") == "phase" for e in doc["traceEvents"])
