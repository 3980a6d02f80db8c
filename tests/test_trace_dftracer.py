"""DFTracer as a back end (issue 42): its trace turned into our rows, on a stored trace and, where
its preload library can run, on a tiny traced job."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from experiments.trace import dftracer_backend as dft
from experiments.trace import timeline, tracer, vector
from experiments.trace.schema import TraceError

FIXTURE = Path(__file__).parent / "fixtures" / "dftracer"   # README.md there says what it did
FIXTURE2 = Path(__file__).parent / "fixtures" / "dftracer2"  # the same program under DFTracer 2.x
A, B = "/fixture/data/a.bin", "/fixture/data/b.out"
OK, WHY = dft.available()


def test_stored_trace_becomes_rows_with_files_bytes_and_errors():
    t = dft.load_trace(FIXTURE)
    ev = t.events
    assert t.meta["dftracer_files"] == 2 and t.meta["unparsed_lines"] == 1   # the cut-off line
    reads = ev[ev["op"].isin(["read", "pread64"]) & (ev["path"] == A)]
    # 4096 + 4096 + 1808 + 0 (end of file), 100 at 5000, and the child's (gzip'd file) 555;
    # the duplicated line is dropped
    assert sorted(reads["size"]) == [0, 100, 555, 1808, 4096, 4096]
    assert reads.loc[reads["op"] == "pread64", "offset"].tolist() == [5000.0]
    assert set(ev["pid"]) == {11357, 11358}
    failed = ev[ev["path"] == "/fixture/data/missing"]
    assert failed["op"].tolist() == ["openat"] and failed["error"].tolist() == [-1]
    assert t.meta["mapped_files"] == {A: {"mmaps": 1, "shared": True, "shared_write": False, "exec": False}}
    assert ev["timestamp"].is_monotonic_increasing and ev["t_s"].min() == 0.0


def test_stored_2x_trace_names_files_through_hashes_and_reads_a_cut_stream():
    t = dft.load_trace(FIXTURE2)
    ev = t.events
    assert t.meta["dftracer_files"] == 2 and t.meta["unparsed_lines"] == 0
    reads = ev[ev["op"].isin(["read", "pread64"]) & (ev["path"] == A)]
    # the parent's 4096 + 4096 + 1808 + 0 and 100 at 5000; the child's 555 from its cut-off stream
    assert sorted(reads["size"]) == [0, 100, 555, 1808, 4096, 4096]
    assert reads.loc[reads["op"] == "pread64", "offset"].tolist() == [5000.0]
    assert set(ev.loc[ev["path"] == A, "comm"]) == {"k.py", "DEFAULT"}   # the start event's exec_hash
    v = vector.characteristic_vector(t, data=[A], checkpoint=[B])
    assert (v["vfs_writes"], v["vfs_write_bytes"]) == (2.0, 3010.0)
    assert t.meta["mapped_files"][A]["mmaps"] == 1


def test_stored_trace_gives_our_vector_and_timeline():
    t = dft.load_trace(FIXTURE)
    v = vector.characteristic_vector(t, data=[A], checkpoint=[B])
    assert (v["vfs_writes"], v["vfs_write_bytes"], v["unique_files_written"]) == (2.0, 3010.0, 1.0)
    why = vector.not_measured(t, data=[A], checkpoint=[B])
    assert "memory-mapped" in why["vfs_read_bytes"]          # a.bin was mapped: reads not all calls
    assert "not the block layer" in why["bio_read_bytes"]
    c = vector.counts_of(t)
    r = c[(c["path"] == A) & c["op"].isin(["read", "pread64"])]
    assert float((r["size"] * r["calls"]).sum()) == 10655.0
    s = timeline.io_series(t, bin_s=0.01, data=[A], checkpoint=[B])
    assert s["vfs_read"].sum() * 0.01 * 1e6 == pytest.approx(10655.0)   # MB/s x bin = bytes
    assert s["vfs_write"].sum() * 0.01 * 1e6 == pytest.approx(3010.0)


@pytest.mark.parametrize("release", list(dft.RELEASES))
def test_backend_traces_a_tiny_job_and_its_child(tmp_path, release):
    ok, why = dft.available(release)
    if not ok:
        pytest.skip(f"dftracer ({release}) cannot run here: {why}")
    data = tmp_path / "d.bin"
    data.write_bytes(b"x" * 10000)
    out = tmp_path / "o.out"
    child = f"import os; os.read(os.open({str(data)!r}, 0), 333)"
    prog = (f"import os, subprocess, sys\nf = os.open({str(data)!r}, os.O_RDONLY)\n"
            f"while os.read(f, 4096): pass\nos.close(f)\n"
            f"w = os.open({str(out)!r}, os.O_WRONLY | os.O_CREAT); os.write(w, b'y' * 700); os.close(w)\n"
            f"subprocess.run([sys.executable, '-S', '-c', {child!r}])\n")
    tr, rc = tracer.run([sys.executable, "-S", "-c", prog], backend="dftracer", sample=False, quiet=True,
                        dftracer_release=release)
    assert rc == 0 and tr.backend == "dftracer" and tr.meta["dftracer_files"] >= 2
    assert tr.meta["dftracer_version"].split()[0] == dft.RELEASES[release][1]
    v = vector.characteristic_vector(tr, data=[data], checkpoint=[out])
    assert (v["vfs_reads"], v["vfs_read_bytes"]) == (5.0, 10333.0)   # 3 + 1 short + end, child's 333
    assert (v["vfs_writes"], v["vfs_write_bytes"]) == (1.0, 700.0)


@pytest.mark.skipif(not OK, reason=f"dftracer cannot run here: {WHY}")
def test_backend_refuses_the_python_block_it_cannot_preload():
    with pytest.raises(TraceError, match="command only"):
        tracer.Tracer(backend="dftracer", sample=False, quiet=True).start()


def test_coverage_verdicts_and_summary():
    from experiments.trace import coverage
    k = {"known_calls": 5, "known_bytes": 13288, "mapped": False}
    assert coverage.verdict(k, 5, 13288, False) == "exact"
    assert coverage.verdict(k, 4, 13288, False) == "partial"     # a call lost
    assert coverage.verdict(k, 5, 9192, False) == "partial"
    assert coverage.verdict(k, 0, 0, False) == "missed"
    assert coverage.verdict({**k, "known_calls": None}, 2, 13288, False) == "exact"  # count unknown
    m = {"known_calls": 0, "known_bytes": 13288, "mapped": True}
    assert (coverage.verdict(m, 0, 0, True), coverage.verdict(m, 0, 0, False)) == ("partial", "missed")
    import pandas as pd
    cov = pd.DataFrame({"backend": ["a", "a", "b", "b"], "case": ["c", "c", "c", "c"],
                        "verdict": ["exact", "missed", "exact", "exact"]})
    assert coverage.summary(cov).loc["c"].to_dict() == {"a": "missed", "b": "exact"}
    cov = cov.assign(file=["d", "o", "d", "o"], known_bytes=[10, 5, 10, 5], bytes=[10, 0, 10, 5])
    pf = coverage.per_file(cov)
    assert pf.loc[("c", "o", 5)].to_dict() == {"a": "0 missed", "b": "5 exact"}


def test_missing_library_says_why_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("DFTRACER_PRELOAD", str(tmp_path / "nope.so"))
    lib, why = dft.preload_library()
    assert lib is None and "nope.so: no such file" in why
    monkeypatch.delenv("DFTRACER_PRELOAD")
    (tmp_path / "UNAVAILABLE").write_text("glibc 2.31 is older than 2.34\n")
    monkeypatch.setenv("DLIO_VENV", str(tmp_path))
    lib, why = dft.preload_library()
    assert lib is None and "glibc 2.31" in why and "\n" not in why
    with pytest.raises(ValueError, match="allowed: dlio, current"):
        dft.preload_library("newest")
    with pytest.raises(TraceError, match="dftracer_release = 'newest'"):
        tracer.Tracer(backend="dftracer", dftracer_release="newest")
