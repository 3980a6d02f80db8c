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


def _with_start(raw: pd.DataFrame, per_run_s: dict[str, float], us: dict[str, float],
                start_cpu: float = 0.15, start_calls: int = 100) -> pd.DataFrame:
    """``raw`` with a start-up run per repeat and back end (job ``<job>_start``): the command's
    start-up CPU, plus each back end's cost per run (which it pays in the job's runs too) and
    its cost per call ``us`` on the start-up run's calls."""
    rows, job = [], raw["job"].iloc[0]
    for r in sorted(raw["repeat"].unique()):
        rows.append({"job": f"{job}_start", "backend": "none", "repeat": r, "command_s": 0.2,
                     "command_cpu_s": start_cpu + 0.01 * r, "calls": 0})
        for b, k in per_run_s.items():
            rows.append({"job": f"{job}_start", "backend": b, "repeat": r, "command_s": 0.2,
                         "command_cpu_s": start_cpu + 0.01 * r + k + us[b] * start_calls / 1e6,
                         "calls": start_calls, "exit_status": 0})
    full = raw.copy()
    for b, k in per_run_s.items():
        full.loc[full.backend == b, "command_cpu_s"] += k
    return pd.concat([full, pd.DataFrame(rows)], ignore_index=True)


def test_per_call_takes_out_what_a_run_costs_whatever_its_calls():
    # issue 70's quiet run: 0.22 s more CPU a traced run at 65,600 calls and at 16,500 alike;
    # divided by the calls that reads as microseconds a call that the calls do not cost
    calls = 65_637
    base = [0.34, 0.35, 0.33, 0.39, 0.34, 0.36, 0.34, 0.34]
    raw = _raw({"bpftrace_vector": [0.3] * 8, "bpftrace_floor": [0.05] * 8}, base, calls=calls)
    with_start = _with_start(raw, {"bpftrace_vector": 0.22, "bpftrace_floor": 0.0},
                             {"bpftrace_vector": 0.3, "bpftrace_floor": 0.05})
    lumped = bench.per_call(with_start[~with_start.job.str.endswith("_start")]).set_index("backend")
    assert lumped.loc["bpftrace_vector", "us_per_call"] == pytest.approx(0.3 + 0.22e6 / calls)  # 3.65
    assert not lumped["net_of_start"].any()
    pc = bench.per_call(with_start).set_index("backend")
    assert list(pc.index) == ["none", "bpftrace_vector", "bpftrace_floor"]   # the start-up job is no row
    assert pc["net_of_start"].all()
    assert pc.loc["bpftrace_vector", "us_per_call"] == pytest.approx(0.3)
    assert pc.loc["bpftrace_floor", "us_per_call"] == pytest.approx(0.05)
    assert pc.loc["bpftrace_vector", "per_run_ms"] == pytest.approx(220.0 + 0.3 * 100 / 1e3)
    assert pc.loc["bpftrace_floor", "per_run_ms"] == pytest.approx(0.05 * 100 / 1e3)
    # the untraced command's own CPU per call, its start-up taken out: (0.34 .. 0.39 - 0.15 - 0.01 r)
    own = sorted(1e6 * (c - 0.15 - 0.01 * r) / (calls - 100) for r, c in enumerate(base))
    assert pc.loc["none", "us_per_call"] == pytest.approx((own[3] + own[4]) / 2)


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
    a = argparse.Namespace(runs=2, py_runs=1, py_images=1, io_mib=1, epochs=1, jobs=["fio_4k"],
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
    """The bench's short mode end to end on the 4 KiB job (two runs: untraced, the floor,
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
    # each repeat ran the one-block start-up run too, and the per-call cost is net of it
    assert pc["net_of_start"].all() and pc.loc[["bpftrace_floor", "bpftrace_vector"], "per_run_ms"].notna().all()
    assert set(pd.read_csv(out / "raw.csv")["job"]) == {"fio_4k", "fio_4k_start"}
    env = json.loads((out / "env.json").read_text())
    assert env["short"] and env["tracer_programs"]["bpftrace_vector"] == ["tracepoint"]   # that row's program
    assert set(pd.read_csv(out / "per_call_goals.csv")["target"]) >= {"<= 0.4 µs per call", "<= +10 % CPU"}
