"""One tracer session, several windows (experiments.trace.session): each window's trace holds its
own calls and no one else's, timed from its own start."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from experiments.trace import Session, TraceError
from experiments.trace.schema import Trace, conform
from experiments.trace.session import cut
from experiments.trace.tracer import backend_status

STATUS = backend_status()


def _events(rows):
    df = pd.DataFrame(rows)
    df["timestamp"] = pd.to_datetime(df.pop("ns"), unit="ns", utc=True)
    return conform(df)


def test_cut_keeps_calls_inside_block_requests_with_margin_and_retimes():
    s = 1_000_000_000_000
    ev = _events([
        {"ns": s + 0, "layer": "vfs", "op": "read", "path": "/a", "size": 1.0, "error": 0},
        {"ns": s + 2_000_000_000, "layer": "vfs", "op": "read", "path": "/b", "size": 2.0, "error": 0},
        {"ns": s + 2_999_000_000, "layer": "vfs", "op": "read", "path": None, "size": 3.0, "error": 0},
        {"ns": s + 3_005_000_000, "layer": "block", "op": "read", "size": 4096.0, "error": 0},
        {"ns": s + 3_500_000_000, "layer": "vfs", "op": "read", "path": "/c", "size": 5.0, "error": 0},
    ])
    samples = pd.DataFrame({"wall": [s / 1e9 + x for x in (0.5, 1.5, 2.5, 3.5)], "cpu": [1, 2, 3, 4]})
    whole = Trace(ev, samples, {"backend": "bpftrace", "unnamed_calls": 1, "tracer_cpu_s": 2.0,
                                "started": s / 1e9 - 1, "ended": s / 1e9 + 9})
    got = cut(whole, s / 1e9 + 1.0, s / 1e9 + 3.0, windows=2)
    assert list(got.events["size"]) == [2.0, 3.0, 4096.0]   # the block request 5 ms after the end too
    assert got.events["t_s"].round(3).tolist() == [1.0, 1.999, 2.005]
    assert list(got.samples["cpu"]) == [2, 3] and got.samples["t_s"].round(3).tolist() == [0.5, 1.5]
    assert got.meta["n_events"] == 3 and got.meta["unnamed_calls"] == 1
    assert got.meta["session"] == {"windows": 2, "started": s / 1e9 - 1, "ended": s / 1e9 + 9,
                                   "tracer_cpu_s": 2.0}
    assert "tracer_cpu_s" not in got.meta   # the tracer's CPU belongs to the session, not a window


def test_session_refuses_vector_mode_and_a_window_named_twice(tmp_path):
    with pytest.raises(TraceError, match="mode = 'vector'; allowed: timeline"):
        Session(mode="vector")
    s = Session(backend="proc", sample=False, quiet=True)
    with s:
        with s.window("a"):
            pass
        with pytest.raises(TraceError, match="window 'a' twice"):
            with s.window("a"):
                pass
    with pytest.raises(TraceError, match="after the session ended"):
        with s.window("b"):
            pass


@pytest.mark.parametrize("backend", ["bpftrace", "strace"])
def test_each_window_sees_its_own_children_reads_only(tmp_path, backend):
    if not STATUS[backend]["ok"]:
        pytest.skip(f"{backend}: {STATUS[backend]['why']}")
    files = {}
    for name, n in (("a", 3000), ("gap", 5000), ("b", 7000)):
        files[name] = tmp_path / f"{name}.bin"
        files[name].write_bytes(b"x" * n)

    def child_reads(f):   # a child process, as the stage's sides are
        subprocess.run([sys.executable, "-S", "-c", f"open({str(f)!r}, 'rb').read()"], check=True)

    with Session(backend=backend, watch=[tmp_path], sample=False, quiet=True) as s:
        with s.window("a"):
            child_reads(files["a"])
        child_reads(files["gap"])   # between the windows: in neither
        with s.window("b"):
            child_reads(files["b"])
    for name, other in (("a", "b"), ("b", "a")):
        tr = s.windows[name].trace
        reads = tr.vfs()[tr.vfs()["op"] == "read"]
        by_path = reads.groupby("path")["size"].sum()
        assert by_path.get(str(files[name])) == files[name].stat().st_size, by_path
        assert str(files[other]) not in by_path and str(files["gap"]) not in by_path
        assert tr.vfs()["t_s"].min() >= 0 and tr.meta["ended"] > tr.meta["started"]
        assert tr.backend == backend and tr.meta["session"]["windows"] == 2


FORKER = ("import os, sys\n"
          "for line in sys.stdin:\n"
          "    pid = os.fork()\n"
          "    if pid == 0:\n"
          "        open(line.strip(), 'rb').read()\n"
          "        os._exit(0)\n"
          "    os.waitpid(pid, 0)\n"
          "    print('done', flush=True)\n")


@pytest.mark.parametrize("backend", ["bpftrace", "strace"])
def test_a_session_follows_the_forks_of_a_process_started_before_it(tmp_path, backend):
    """``follow``: a process started before the session (a warm parent) is traced with its
    children from the start, so a run it forks inside a window is in that window; a process
    started before the session and not followed stays out of it (the tree is this process's)."""
    if not STATUS[backend]["ok"]:
        pytest.skip(f"{backend}: {STATUS[backend]['why']}")
    files = {k: tmp_path / f"{k}.bin" for k in ("followed", "other")}
    for i, f in enumerate(files.values()):
        f.write_bytes(b"y" * (4000 + 1000 * i))
    forkers = {k: subprocess.Popen([sys.executable, "-S", "-c", FORKER], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True) for k in files}

    def fork_read(k):
        forkers[k].stdin.write(f"{files[k]}\n")
        forkers[k].stdin.flush()
        assert forkers[k].stdout.readline().strip() == "done"

    try:
        with Session(backend=backend, watch=[tmp_path], sample=False, quiet=True,
                     follow=[forkers["followed"].pid]) as s:
            with s.window("w"):
                fork_read("followed")
                fork_read("other")
    finally:
        for p in forkers.values():
            p.stdin.close()
            p.wait()
    tr = s.windows["w"].trace
    by_path = tr.vfs()[tr.vfs()["op"] == "read"].groupby("path")["size"].sum()
    assert by_path.get(str(files["followed"])) == files["followed"].stat().st_size, by_path
    assert str(files["other"]) not in by_path
    assert tr.meta["follow"] == [forkers["followed"].pid]
