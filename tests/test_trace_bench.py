"""The trace bench's tables on tiny made-up runs (issue 70): the cost per call pairs each repeat's
traced run with the same repeat's untraced run, its interval is over runs, the targets'
verdicts are computed; the floor programs for each probe kind; bad arguments stop first."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from experiments.trace import bench


def _raw(extra_us: dict[str, list[float]], base_cpu: list[float], calls: int = 1_000_000,
         job: str = "fio_4k") -> pd.DataFrame:
    rows = []
    for r, cpu in enumerate(base_cpu):
        rows.append({"job": job, "backend": "none", "repeat": r, "command_s": 1.0, "command_cpu_s": cpu,
                     "calls": 0, "block_kib": 4, "io_mib": 1, "loadavg_1m": 0.0})
        for b, us in extra_us.items():
            rows.append({"job": job, "backend": b, "repeat": r, "command_s": 1.0,
                         "command_cpu_s": cpu + us[r] * calls / 1e6, "calls": calls, "block_kib": 4,
                         "io_mib": 1, "loadavg_1m": 0.0, "exit_status": 0})
    return pd.DataFrame(rows)


def test_per_call_pairs_each_repeat_with_its_own_untraced_run():
    # a slow repeat slows both sides: paired, the extra cost per call is the same in every repeat
    base = [4.0, 4.1, 8.0, 4.05, 3.9, 4.2, 4.0, 6.0]
    raw = _raw({"bpftrace_vector": [1.5] * 8, "bpftrace_floor": [1.0, 1.1, 0.9, 1.0, 1.0, 1.05, 0.95, 1.0]}, base)
    pc = bench.per_call(raw).set_index("backend")
    assert pc.loc["bpftrace_vector", "us_per_call"] == pytest.approx(1.5)
    assert pc.loc["bpftrace_vector", "us_lo"] == pytest.approx(1.5)
    assert pc.loc["bpftrace_vector", "us_hi"] == pytest.approx(1.5)
    assert pc.loc["bpftrace_floor", "us_per_call"] == pytest.approx(1.0)
    assert pc.loc["bpftrace_floor", "us_lo"] < 1.0 < pc.loc["bpftrace_floor", "us_hi"]
    assert pc.loc["bpftrace_vector", "runs"] == 8 and pc.loc["bpftrace_vector", "us_coverage"] >= 0.95
    # the untraced command's own CPU per call: its median over runs
    assert pc.loc["none", "us_per_call"] == pytest.approx(1e6 * 4.075 / 1_000_000)


def test_per_call_interval_says_what_two_runs_cover():
    pc = bench.per_call(_raw({"bpftrace_vector": [1.0, 2.0]}, [4.0, 4.0])).set_index("backend")
    assert pc.loc["bpftrace_vector", "us_coverage"] == pytest.approx(0.5)
    assert (pc.loc["bpftrace_vector", "us_lo"], pc.loc["bpftrace_vector", "us_hi"]) == pytest.approx((1.0, 2.0))


def test_targets_get_computed_verdicts():
    raw = pd.concat([_raw({"bpftrace_vector": [0.2] * 8, "bpftrace_vector_kfunc": [0.9] * 8}, [4.0] * 8),
                     _raw({"bpftrace_vector": [0.0] * 8, "bpftrace_vector_kfunc": [20.0] * 8},
                          [3.9, 4.0, 4.1, 4.0, 4.0, 4.0, 4.0, 4.0], calls=10_000, job="fio_128k")])
    t = bench.table(raw)
    g = bench.per_call_goals(t, bench.per_call(raw), raw).set_index(["backend", "target"])
    us = "<= 0.4 µs per call"
    assert g.loc[("bpftrace_vector", us), "verdict"] == "met"
    assert g.loc[("bpftrace_vector_kfunc", us), "verdict"] == "not met"
    cpu = "<= +10 % CPU"
    assert g.loc[("bpftrace_vector", cpu), "value"] == pytest.approx(5.0)    # 0.2 s on 4 s
    assert g.loc[("bpftrace_vector", cpu), "verdict"] == "met"
    assert g.loc[("bpftrace_vector_kfunc", cpu), "verdict"] == "not met"     # +22.5 %
    spread = "CPU within the untraced runs' range"
    assert g.loc[("bpftrace_vector", spread), "verdict"] == "met"            # +0.0 % in [-2.5, +2.5]
    assert g.loc[("bpftrace_vector_kfunc", spread), "verdict"] == "not met"  # 0.2 s on 4 s: +5 % > +2.5 %
    assert g.loc[("bpftrace_vector_kfunc", spread), "value"] == pytest.approx(5.0)
    assert g.loc[("bpftrace_vector_kfunc", spread), "hi"] == pytest.approx(2.5)


def test_floor_program_for_each_probe_kind():
    tp = bench.probe_program("fio", "tracepoint")
    kf = bench.probe_program("fio", "kfunc")
    assert "tracepoint:syscalls:sys_exit_read," in tp and "kretfunc" not in tp
    assert "kretfunc:__x64_sys_read," in kf and "tracepoint:syscalls" not in kf
    for p in (tp, kf):
        assert '/comm == "fio"/ { @n = count(); }' in p
    with pytest.raises(ValueError, match="kind = 'kprobe'"):
        bench.probe_program("fio", "kprobe")


def test_unknown_backend_is_refused_before_any_work():
    a = argparse.Namespace(repeats=2, py_repeats=1, py_images=1, io_mib=1, epochs=1, jobs=["fio_4k"],
                           backends=["bpftrace_vector", "ltrace"])
    assert bench.check_args(a).startswith("error: --backends ltrace: unknown; allowed: bpftrace_timeline")
    a.backends = ["bpftrace_vector", "dftracer_2.2.0"]
    assert bench.check_args(a) == ""


def test_report_prints_each_row_or_why_it_is_missing(tmp_path):
    import json
    raw = pd.concat([_raw({"bpftrace_vector": [1.5] * 8, "bpftrace_floor": [1.0] * 8}, [4.0] * 8),
                     _raw({"bpftrace_vector": [2.0] * 8}, [4.0] * 8, calls=10_000, job="fio_128k")])
    bench.table(raw).to_csv(tmp_path / "overhead.csv", index=False)
    bench.per_call(raw).to_csv(tmp_path / "per_call.csv", index=False)
    (tmp_path / "env.json").write_text(json.dumps({"not_measured": {"bpftrace_vector_kfunc": "no kfunc here"}}))
    md = bench.report(tmp_path)
    assert "| `bpftrace_vector` | 1.50 [1.50, 1.50] | +38 [+38, +38] | 2.00 [2.00, 2.00] | +0 [+0, +0] |" in md
    assert "| `bpftrace_vector_kfunc` | not measured (no kfunc here) |" in md
    assert "| cloudflare/ebpf_exporter benchmark | empty probe, fentry | 24 |" in md
    assert bench.main(["--report", str(tmp_path / "nothing")]) == 2


def test_short_mode_writes_the_per_call_table_with_what_ran(tmp_path):
    """The bench's short mode end to end on the 4 KiB job (two repeats: untraced, the floor,
    the vector program): every row counts the job's calls and env.json says which program ran."""
    import json
    import shutil

    from experiments.trace import bpftrace_backend as bt
    if not shutil.which("fio"):
        pytest.skip("fio is not installed")
    ok, why, _ = bt.available()
    if not ok or not bt.kernel_files_available()[0]:
        pytest.skip(f"bpftrace vector mode cannot run here: {why or bt.kernel_files_available()[1]}")
    out = tmp_path / "out"
    assert bench.main(["--short", "--jobs", "fio_4k", "--backends", "bpftrace_vector", "--out", str(out)]) == 0
    pc = pd.read_csv(out / "per_call.csv").set_index("backend")
    assert {"none", "bpftrace_floor", "bpftrace_vector"} <= set(pc.index)
    assert (pc.loc[["bpftrace_floor", "bpftrace_vector"], "calls"] >= 4096).all()   # 16 MiB in 4 KiB reads
    assert (pc["runs"] == 2).all() and (pc["us_coverage"] == 0.5).all()
    env = json.loads((out / "env.json").read_text())
    assert env["short"] and env["tracer_programs"]["bpftrace_vector"] == ["tracepoint"]   # that row's program
    assert set(pd.read_csv(out / "per_call_goals.csv")["target"]) >= {"<= 0.4 µs per call", "<= +10 % CPU"}
