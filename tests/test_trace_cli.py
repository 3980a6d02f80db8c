"""The command line and the context manager: bad input exits 2 and writes nothing; compare's
last line; a Python block with a child process; phases, timeline and Chrome export."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from experiments import trace
from experiments.trace import chrome, phases, schema, similarity, timeline, vector
from experiments.trace.tracer import backend_status

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATUS = backend_status()
EVENT_BACKENDS = [b for b in ("bpftrace", "strace") if STATUS[b]["ok"]]


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "experiments.trace", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})


def fake_trace(n_reads=5, size=4096.0, path="/data/a.bin"):
    rows = [{"timestamp": pd.Timestamp(1e9 + i, unit="s", tz="UTC"), "t_s": float(i), "pid": 1, "tid": 1,
             "comm": "x", "layer": "vfs", "op": "read", "path": path, "fd": 3, "offset": i * size,
             "size": size, "latency_s": 1e-5, "error": 0} for i in range(n_reads)]
    rows.append({"timestamp": pd.Timestamp(1e9, unit="s", tz="UTC"), "t_s": 0.0, "pid": 1, "tid": 1,
                 "comm": "x", "layer": "block", "op": "read", "size": 8192.0, "latency_s": 1e-4,
                 "device": "vda", "sector": 0.0})
    return schema.Trace(schema.conform(pd.DataFrame(rows)), pd.DataFrame(),
                        {"backend": "bpftrace", "block_traced": True, "started": 1e9})


def test_compare_vectors_last_line_and_help(tmp_path):
    a = {k: 10.0 for k in vector.KEYS}
    (tmp_path / "a.json").write_text(json.dumps(a))
    r = cli("compare", tmp_path / "a.json", json.dumps(dict(a, vfs_reads=20.0)))
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("similarity: 0.") and len(last.split()[-1]) == 6
    u, v = a, dict(a, vfs_reads=20.0)
    assert float(last.split()[-1]) == pytest.approx(similarity.weighted_cosine(u, v), abs=1e-4)
    h = cli("compare", "--help")
    assert all(k in h.stdout for k in vector.KEYS)


def test_compare_trace_with_itself_is_one(tmp_path):
    p = fake_trace().save(tmp_path / "t.parquet")
    r = cli("compare", p, p)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "similarity: 1.0000"


@pytest.mark.parametrize("bad", ["wrong_schema", "unknown_component", "not_json", "missing_file"])
def test_compare_bad_input_exit_2_nothing_written(tmp_path, bad):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"vfs_reads": 1}))
    if bad == "wrong_schema":
        other = tmp_path / "other.parquet"
        pd.DataFrame({"x": [1]}).to_parquet(other)
    elif bad == "unknown_component":
        other = tmp_path / "other.json"
        other.write_text(json.dumps({"vfs_reads": 1, "nonsense": 3}))
    elif bad == "not_json":
        other = tmp_path / "other.json"
        other.write_text("{vfs_reads: 1")
    else:
        other = tmp_path / "missing.parquet"
    before = set(tmp_path.iterdir())
    r = cli("compare", good, other, "--csv", tmp_path / "table.csv")
    assert r.returncode == 2
    assert r.stderr.startswith("error:") and len(r.stderr.strip().splitlines()) == 1
    assert "similarity" not in r.stdout
    assert set(tmp_path.iterdir()) == before


def test_run_missing_command_exit_2_nothing_written(tmp_path):
    r = cli("run", "-o", tmp_path / "t.parquet", "--", "no-such-command-xyz")
    assert r.returncode == 2 and "not found" in r.stderr
    assert list(tmp_path.iterdir()) == []
    r = cli("run", "-o", tmp_path / "nodir" / "t.parquet", "--", "true")
    assert r.returncode == 2 and list(tmp_path.iterdir()) == []
    r = cli("run", "-o", tmp_path / "t.parquet", "--backend", "nonsense", "--", "true")
    assert r.returncode == 2 and list(tmp_path.iterdir()) == []


def test_wrong_schema_is_an_error(tmp_path):
    p = tmp_path / "x.parquet"
    pd.DataFrame({"timestamp": [1], "pid": [2]}).to_parquet(p)
    with pytest.raises(trace.TraceError, match="missing column"):
        schema.load(p)


def test_run_cli_writes_a_trace_with_children(tmp_path):
    f = tmp_path / "data.txt"
    f.write_bytes(b"x" * 10000)
    out = tmp_path / "t.parquet"
    r = cli("run", "-o", out, "--interval", "0.1", "--", "sh", "-c", f"cat {f} > /dev/null; cat {f} > /dev/null")
    assert r.returncode == 0, r.stderr
    tr = schema.load(out)
    assert tr.meta["backend"] in ("bpftrace", "strace", "proc")
    if tr.backend != "proc":
        reads = vector.vfs_reads(tr.events, [str(f)])
        assert reads["size"].sum() == 20000 and reads["pid"].nunique() == 2  # two child processes
        assert set(reads["comm"]) == {"cat"}


@pytest.mark.parametrize("backend", EVENT_BACKENDS)
def test_context_manager_traces_this_process_and_children(tmp_path, backend):
    f = tmp_path / "data.bin"
    f.write_bytes(os.urandom(1 << 16))
    with trace.Tracer(backend=backend, watch=[tmp_path], interval_s=0.1, quiet=True) as t:
        with open(f, "rb") as fh:
            fh.read(4096)
            fh.seek(32768)
            fh.read(4096)
        subprocess.run(["cat", str(f)], stdout=subprocess.DEVNULL, check=True)
    tr = t.trace
    assert tr.backend == backend
    reads = vector.vfs_reads(tr.events, [str(f)])
    mine = reads[reads["pid"] == os.getpid()]
    assert list(mine["size"][:2]) == [4096, 4096] and list(mine["offset"][:2]) == [0, 32768]
    child = reads[reads["pid"] != os.getpid()]
    assert child["size"].sum() == 1 << 16


def test_phase_log_roundtrip_and_timeline_and_chrome(tmp_path):
    log = phases.PhaseLog(tmp_path / "phases.jsonl")
    with log.phase("init"):
        pass
    for epoch in (1, 2):
        with log.phase("train", epoch=epoch):
            pass
    with log.phase("checkpoint"):
        pass
    ph = phases.read(tmp_path / "phases.jsonl")
    assert list(ph["phase"]) == ["init", "train", "train", "checkpoint"]
    assert (ph["end"] >= ph["start"]).all()
    (tmp_path / "bad.jsonl").write_text('{"ts": 1, "event": "started", "phase": "x"}\n')
    with pytest.raises(trace.TraceError, match="bad.jsonl:1"):
        phases.read(tmp_path / "bad.jsonl")
    tr = fake_trace()
    tr.meta["started"] = float(ph["start"].min())
    fig = timeline.plot(tr, ph)
    assert len(fig.axes) == 3
    out = chrome.export(tr, tmp_path / "t.json", ph)
    doc = json.loads(out.read_text())
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    assert sum(e["cat"] == "vfs" for e in xs) == 5 and sum(e["cat"] == "phase" for e in xs) == 4
    assert all(e["ts"] >= 0 for e in xs if e["cat"] != "phase")


def test_io_series_bytes_add_up():
    tr = fake_trace(n_reads=10)
    io = timeline.io_series(tr, bin_s=1.0)
    assert (io["vfs_read"].sum() * 1e6) == pytest.approx(10 * 4096)
    assert io["t_s"].iloc[-1] > io["t_s"].iloc[-2] and io.iloc[-1, 1:].sum() == 0  # closing row
    assert timeline.auto_bin(tr) in (0.05, 0.1, 0.2)


def test_phase_reader_takes_the_workloads_app_log(tmp_path):
    """The thesis workloads' AppLog lines (``begin``/``end``, one file per rank) read as phases."""
    d = tmp_path / "logs"
    d.mkdir()
    for rank in (0, 1):
        (d / f"app-r{rank}.jsonl").write_text(
            json.dumps({"ts": 10.0 + rank, "rank": rank, "workload": "unet3d", "phase": "train",
                        "event": "begin", "epoch": 1}) + "\n"
            + json.dumps({"ts": 20.0 + rank, "rank": rank, "workload": "unet3d", "phase": "train",
                          "event": "end", "epoch": 1}) + "\n")
    ph = phases.read(d)
    assert list(ph["rank"]) == [0, 1] and list(ph["end"] - ph["start"]) == [10.0, 10.0]


def test_stage_config_rejects_bad_input_before_work():
    from experiments.settings import config
    from experiments.trace.stage import pick_tier
    for bad, word in [({"seq_mib": 64, "file_mib": 32}, "seq_mib"), ({"backend": "dtrace"}, "backend"),
                      ({"loader_batch": 100, "loader_files": 10}, "loader_batch"), ({"rand_ios": 0}, "rand_ios"),
                      ({"seq_bs_kib": 300}, "seq_bs_kib")]:
        with pytest.raises(config.ConfigError, match=word):
            config.validate("tracing_patterns", bad)
    tiers = config.validate("tiers", [{"name": "disk", "path": "/tmp"}])
    with pytest.raises(config.ConfigError, match="tracing_patterns.tier = 'ssd': no such tier; allowed: disk"):
        pick_tier(tiers, "ssd")


def test_auto_falls_back_with_one_line_reasons(monkeypatch, capsys):
    from experiments.trace import bpftrace_backend as bt
    from experiments.trace import strace_backend as st
    from experiments.trace import tracer as T
    monkeypatch.setattr(bt, "available", lambda: (False, "bpftrace needs root (test)", False))
    name, why = T.choose_backend("auto")
    assert name == ("strace" if STATUS["strace"]["ok"] else "proc")
    assert why == ["bpftrace unavailable: bpftrace needs root (test)"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trace: bpftrace unavailable")
    monkeypatch.setattr(st, "available", lambda: (False, "strace is not installed"))
    assert T.choose_backend("auto")[0] == "proc"
    with pytest.raises(trace.TraceError, match="cannot run here: strace is not installed"):
        T.choose_backend("strace")


@pytest.mark.skipif(not (STATUS["bpftrace"]["ok"] and STATUS["strace"]["ok"]), reason="needs bpftrace and strace")
def test_a_backend_that_fails_to_start_falls_back(monkeypatch, tmp_path):
    from experiments.trace import bpftrace_backend as bt

    def broken(self, root_pid, timeout_s=60.0):
        raise RuntimeError("BPF stack limit exceeded (test)")
    monkeypatch.setattr(bt.BpftraceSession, "start", broken)
    f = tmp_path / "x"
    f.write_bytes(b"y" * 1000)
    # dd, not cat: cat copies to a regular-file stdout with copy_file_range, which is not traced
    tr, rc = trace.run(["dd", f"if={f}", "of=/dev/null", "bs=4096"], quiet=True, sample=False)
    assert rc == 0 and tr.backend == "strace"
    assert tr.meta["fallbacks"] == ["bpftrace failed to start: BPF stack limit exceeded (test)"]
    assert "clock_offset_ns" in tr.meta
    assert vector.vfs_reads(tr.events, [str(f)])["size"].sum() == 1000, tr.events[["pid", "op", "path", "size"]].to_string()
    with pytest.raises(trace.TraceError, match="failed to start"):
        trace.run(["cat", str(f)], backend="bpftrace", quiet=True, sample=False)


def test_the_loader_timeline_finds_its_phase_log_where_a_shipped_run_keeps_it(tmp_path):
    """The tracing report reads the loader's phase log from the stage's results folder
    (phases.LOADER_LOG); else where its trace recorded it, if that still exists; a shipped run
    recorded on another box has neither (its data tier is not shipped): no phases, and the
    figure says why instead of failing (the fresh-clone CI of faa27f2: 'phase log /tmp/repC/...
    does not exist')."""
    from types import SimpleNamespace

    from experiments.trace import phases, report

    written = tmp_path / "data" / "phases.jsonl"
    written.parent.mkdir()
    log = phases.PhaseLog(written)
    log.start("train", epoch=0)
    log.end("train", epoch=0)
    results = tmp_path / "results"
    results.mkdir()
    trace = SimpleNamespace(meta={"phase_log": str(written)})
    ph, why = report.loader_phases(trace, results)                     # where the trace recorded it
    assert list(ph["phase"]) == ["train"] and why == ""
    (results / phases.LOADER_LOG).write_text(written.read_text())
    written.unlink()
    ph, why = report.loader_phases(trace, results)                     # kept with the results
    assert list(ph["phase"]) == ["train"] and why == ""
    (results / phases.LOADER_LOG).unlink()
    ph, why = report.loader_phases(trace, results)                     # neither: the shipped run
    assert ph is None and "no phase bands" in why
