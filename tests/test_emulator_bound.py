"""Client- or storage-bound, from synthetic step and rank records (nothing is launched)."""

import json

import pandas as pd
import pytest

from experiments.emulator import bound, report, search
from test_emulator import _cfg, _fake_run, dlrm_data  # noqa: F401 - the fixture


def _records(G, data_ms, step_ms, cpu_s, wall_s=10.0, steps=10):
    st = pd.DataFrame([{"rank": r, "data_ns": int(data_ms * 1e6), "step_ns": int(step_ms * 1e6)}
                       for r in range(G) for _ in range(steps)])
    ranks = [{"rank": r, "cpu_s": cpu_s * 0.75, "cpu_children_s": cpu_s * 0.25} for r in range(G)]
    ph = pd.DataFrame([{"rank": r, "phase": "train", "start": 100.0, "end": 100.0 + wall_s} for r in range(G)])
    return st, ranks, ph


def test_waiting_for_data_with_no_cpu_left_is_client_bound():
    # 2 ranks on 4 cores: 2 cores each; 19 CPU s in 10 s = 95 % of them; data wait 80 % of the step
    b = bound.classify(*_records(2, 80, 100, 19.0), cores=4, ranks_per_host=2)
    assert b["bound"] == "client" and b["cpu_share"] == pytest.approx(0.95)
    assert b["data_wait_share"] == pytest.approx(0.8) and b["host"]["cpu_share"] == pytest.approx(0.95)
    assert b["cpu_by_rank"]["1"]["cpu_s"] == pytest.approx(19.0) and "client-bound" in b["why"]


def test_waiting_for_data_with_cpu_to_spare_is_storage_bound():
    b = bound.classify(*_records(2, 80, 100, 3.0), cores=4, ranks_per_host=2)
    assert b["bound"] == "storage" and b["cpu_share"] == pytest.approx(0.15)
    assert "with CPU to spare" in b["why"]


def test_busy_cpu_without_data_wait_is_not_client_bound():
    b = bound.classify(*_records(2, 5, 100, 19.0), cores=4, ranks_per_host=2)
    assert b["bound"] == "storage" and "did not dominate" in b["why"]


def test_bad_core_count_is_refused():
    with pytest.raises(ValueError, match="cores = 0"):
        bound.classify(*_records(1, 1, 2, 1.0), cores=0, ranks_per_host=1)


def test_every_summary_says_bound_with_its_cpu(tmp_path, dlrm_data):  # noqa: F811
    rd = _fake_run(tmp_path, dlrm_data)
    for r in range(2):  # 3.9 CPU s each over the 5 s run
        (rd / f"rank-r{r}.json").write_text(json.dumps({"rank": r, "pid": 1, "checkpoints": [], "evals": [],
                                                        "peak_rss_bytes": 1, "cpu_s": 3.9, "cpu_children_s": 0}))
    s = report.summarize(rd)
    assert s["bound"] in ("client", "storage") and set(s["client_cpu"]["cpu_by_rank"]) == {"0", "1"}
    assert s["client_cpu"]["cpu_by_rank"]["0"]["cpu_s"] == pytest.approx(3.9)
    # the fake run's data wait is 1 ms of a 501 ms step: not client-bound whatever the CPU
    assert s["bound"] == "storage" and "**Bound: storage.**" in report.markdown(s)


def test_search_stops_when_the_client_is_the_limit(tmp_path, dlrm_data):  # noqa: F811
    tried = []

    def stub(c, folder):
        tried.append(c.accelerators)
        client = c.accelerators >= 4
        return {"au": 0.5 if client else 0.99, "au_pass": not client, "throughput_samples_per_s": 1.0,
                "data_bytes_per_s": 1.0, "train_s": 1.0, "peak_rss_bytes_per_rank": 1,
                "bound": "client" if client else "storage", "bound_why": "client-bound: CPU 97 %"}
    res = search.max_accelerators(_cfg(dlrm_data), tmp_path / "s", run=stub, say=lambda m: None)
    assert tried == [1, 2, 4] and res["max_accelerators"] == 2 and res["client_bound"] is True
    assert res["stopped_because"].startswith("client-bound at 4 accelerators")
    assert "| client |" in search.markdown(res)


def test_summary_has_au_per_rank_and_bytes_per_node(tmp_path, dlrm_data):  # noqa: F811
    rd = _fake_run(tmp_path, dlrm_data)
    s = report.summarize(rd)
    # each rank slept 4 x 0.5 s in its 2.5 s of training
    assert s["au_by_rank"] == {"0": pytest.approx(0.8), "1": pytest.approx(0.8)}
    assert s["data_bytes_by_node"] == {"0": 2 * 40960}
    assert report._by_node({0: 1, 1: 2, 2: 3, 3: 4}, 4, 2) == {"0": 3, "1": 7}


def test_storage_engineer_table_per_tier_and_workload():
    from experiments.emulator.bench import engineer_markdown, engineer_table

    res = {"compute_model": "thesis-v100", "max_accelerators": 2, "client_bound": True,
           "stopped_because": "client-bound at 4 accelerators",
           "trials": [{"accelerators": 1, "au": 0.99, "au_pass": True, "bound": "storage"},
                      {"accelerators": 2, "au": 0.95, "au_pass": True, "bound": "storage"},
                      {"accelerators": 4, "au": 0.5, "au_pass": False, "bound": "client"}]}
    found = pd.DataFrame([{"tier": "xfs", "workload": "unet3d", **search.row(res)},
                          {"tier": "xfs", "workload": "dlrm", **search.row(res | {
                              "client_bound": False, "trials": res["trials"][:2] + [
                                  res["trials"][2] | {"bound": "storage"}]})},
                          {"tier": "xfs", "workload": "bert", "compute_model": "fit", "max_accelerators": None,
                           "stopped_because": "not measured: no data"}])
    assert found.loc[0, "tried"] == "G=1: 99.0 %, G=2: 95.0 %, G=4: 50.0 %"
    load = pd.DataFrame([{"tier": "xfs", "workload": "unet3d", "emulator_MBps": 434.0, "fio_MBps": 467.0,
                          "bound": "storage"},
                         {"tier": "xfs", "workload": "dlrm", "emulator_MBps": 10.0, "fio_MBps": 20.0,
                          "bound": "client"}])
    t = engineer_table(found, load).set_index("workload")
    assert t.loc["unet3d", "bound"] == "client" and t.loc["unet3d", "max_accelerators"] == 2
    assert t.loc["unet3d", "client_fraction_of_fio_cold"] == pytest.approx(434 / 467)
    assert t.loc["dlrm", "bound"] == "client"           # the load run was client-bound
    assert t.loc["bert", "bound"] == "not measured" and pd.isna(t.loc["bert", "client_cold_MBps"])
    md = engineer_markdown(t.reset_index())
    assert "| xfs | unet3d | thesis-v100 | 2 | 434 | 467 | 0.93 | client |" in md
    assert "| xfs | bert | fit | n/a | n/a | n/a | n/a | not measured |" in md


def test_cpu_from_the_training_phase_first_then_the_whole_process():
    st, ranks, ph = _records(1, 80, 100, 19.0)
    # the training phase: 9 CPU s of the process + 0 of children in 10 s on 1 core
    r = [ranks[0] | {"cpu_children_s": 0.0, "phase_usage": {"train": {"wall_s": 10.0, "cpu_s": 9.0}}}]
    b = bound.classify(st, r, ph, cores=1, ranks_per_host=1)
    assert b["cpu_share"] == pytest.approx(0.9) and b["cpu_measured_as"] == "training phase"
    # no phase usage: the whole process (start-up included) over its life
    r = [ranks[0] | {"life_s": 40.0}]
    b = bound.classify(st, r, ph, cores=1, ranks_per_host=1)
    assert b["cpu_share"] == pytest.approx(19.0 / 40) and b["bound"] == "storage"
    assert b["cpu_measured_as"] == "whole process"
