"""Storage-, client-bound or undetermined, from synthetic step, rank and thread records (nothing
is launched but the sampler on this process)."""

import json

import pandas as pd
import pytest

from experiments.emulator import bound, report, search
from test_emulator import _cfg, _fake_run, dlrm_data  # noqa: F401 - the fixture


def _records(G, data_ms, step_ms, cpu_s, wall_s=10.0, steps=10):
    st = pd.DataFrame([{"rank": r, "data_ns": int(data_ms * 1e6), "step_ns": int(step_ms * 1e6)}
                       for r in range(G) for _ in range(steps)])
    ranks = [{"rank": r, "pid": 100 + r, "cpu_s": cpu_s * 0.75, "cpu_children_s": cpu_s * 0.25} for r in range(G)]
    ph = pd.DataFrame([{"rank": r, "phase": "train", "start": 100.0, "end": 100.0 + wall_s} for r in range(G)])
    return st, ranks, ph


def _threads(busy: float, G=1, wall_s=10.0, wait=0.0):
    """Thread samples every second over the training phase (100 .. 100 + wall_s): per rank its
    main thread at ``busy`` of a core (plus ``wait`` of a core on the run queue), an idle thread
    of its own, a DataLoader worker process (a child) at 10 %, and the launcher's busy thread."""
    rows = []
    for t in range(int(wall_s) + 3):
        for r in range(G):
            pid = 100 + r
            for tid, ppid, name, rate in ((pid, 1, "python", busy), (pid + 50, 1, "gloo_tcp_loop", 0.0),
                                          (pid + 500, pid, "pt_data_worker", 0.1)):
                p_ = pid if tid != pid + 500 else pid + 500
                rows.append({"wall": 99.0 + t, "pid": p_, "ppid": ppid, "tid": tid, "proc": "python", "name": name,
                             "cpu_ns": int(rate * t * 1e9), "wait_ns": int(wait * t * 1e9) if tid == pid else 0,
                             "start_wall": 99.0})
        rows.append({"wall": 99.0 + t, "pid": 1, "ppid": 0, "tid": 1, "proc": "torchrun", "name": "pt_elastic",
                     "cpu_ns": int(t * 1e9), "wait_ns": 0, "start_wall": 99.0})
    return pd.DataFrame(rows)


def test_one_thread_at_a_full_core_on_a_two_core_host_is_client_bound():
    # one rank on 2 cores: the process uses half of them (the DLRM trap), but its main thread a
    # whole core; the client reads at 0.3 of fio on the same files
    st, ranks, ph = _records(1, 80, 100, 10.0)
    b = bound.classify(st, ranks, ph, cores=2, ranks_per_host=1, threads=_threads(1.0),
                       client_bps=30e6, ref={"bytes_per_s": 100e6, "how": "fio on the same files"})
    assert b["bound"] == "client" and b["cpu_share"] == pytest.approx(0.5)
    assert b["threads"]["busiest_group"] == "main thread"
    assert b["threads"]["busiest_demand"] == pytest.approx(1.0, abs=0.02)
    assert b["client_fraction_of_reference"] == pytest.approx(0.3)
    assert "near a full core" in b["why"] and "0.30 of the storage" in b["why"]
    assert "the rank's main thread" in b["where_time_went"]


def test_a_busy_collective_thread_is_not_the_data_path():
    st, ranks, ph = _records(1, 80, 100, 10.0)
    th = _threads(0.3)
    th.loc[th["name"] == "gloo_tcp_loop", "cpu_ns"] = ((th["wall"] - 99.0) * 1e9).astype(int)
    b = bound.classify(st, ranks, ph, cores=2, ranks_per_host=1, threads=th,
                       client_bps=30e6, ref={"bytes_per_s": 100e6, "how": "fio"})
    assert b["bound"] == "undetermined" and b["threads"]["busiest_group"] == "main thread"


def test_a_thread_waiting_for_a_core_counts_as_wanting_it():
    # on a shared box the thread ran 55 % of the time and waited on the run queue the rest
    st, ranks, ph = _records(1, 80, 100, 5.5)
    b = bound.classify(st, ranks, ph, cores=2, ranks_per_host=1, threads=_threads(0.55, wait=0.45),
                       client_bps=30e6, ref={"bytes_per_s": 100e6, "how": "fio"})
    assert b["bound"] == "client"
    assert b["threads"]["busiest_share"] == pytest.approx(0.55, abs=0.02)


def test_close_to_fio_with_idle_threads_is_storage_bound():
    st, ranks, ph = _records(2, 80, 100, 2.0)
    b = bound.classify(st, ranks, ph, cores=2, ranks_per_host=2, threads=_threads(0.1, G=2),
                       client_bps=90e6, ref={"bytes_per_s": 100e6, "how": "fio on the same files"})
    assert b["bound"] == "storage" and b["client_fraction_of_reference"] == pytest.approx(0.9)
    assert "storage-bound" in b["why"]


def test_far_from_fio_with_idle_threads_is_undetermined():
    st, ranks, ph = _records(2, 80, 100, 2.0)
    b = bound.classify(st, ranks, ph, cores=2, ranks_per_host=2, threads=_threads(0.1, G=2),
                       client_bps=30e6, ref={"bytes_per_s": 100e6, "how": "fio on the same files"})
    assert b["bound"] == "undetermined" and b["client_fraction_of_reference"] == pytest.approx(0.3)
    assert "0.30 of the storage" in b["why"] and "no thread near a full core" in b["why"]


def test_busy_process_without_a_reference_is_client_and_never_storage():
    # the old rule's case: 2 ranks on 4 cores at 95 % of them, the data wait 80 %: client
    b = bound.classify(*_records(2, 80, 100, 19.0), cores=4, ranks_per_host=2)
    assert b["bound"] == "client" and b["cpu_share"] == pytest.approx(0.95)
    assert b["data_wait_share"] == pytest.approx(0.8) and b["host"]["cpu_share"] == pytest.approx(0.95)
    assert b["cpu_by_rank"]["1"]["cpu_s"] == pytest.approx(19.0) and "no storage reference" in b["why"]
    # CPU to spare and no reference: nothing says storage
    b = bound.classify(*_records(2, 80, 100, 3.0), cores=4, ranks_per_host=2)
    assert b["bound"] == "undetermined" and "no storage reference was measured" in b["why"]


def test_busy_cpu_without_data_wait_is_not_client_bound():
    b = bound.classify(*_records(2, 5, 100, 19.0), cores=4, ranks_per_host=2)
    assert b["bound"] == "undetermined" and "did not set the pace" in b["why"]


def test_bad_core_count_is_refused():
    with pytest.raises(ValueError, match="cores = 0"):
        bound.classify(*_records(1, 1, 2, 1.0), cores=0, ranks_per_host=1)


def test_where_the_time_went_from_the_step_records():
    # DLRM: the read (vfs) and the preprocessing on the rank's thread, in the step records
    st = pd.DataFrame({"rank": 0, "data_ns": [100, 100], "step_ns": [110, 110], "vfs_ns": [12, 12],
                       "prep_ns": [81, 81]})
    w = bound.where_time_went(st, None, {"groups": []})
    assert w["parts"] == {"read syscalls": pytest.approx(0.12), "preprocessing": pytest.approx(0.81),
                          "other": pytest.approx(0.07)}
    assert w["text"] == "read syscalls 12 %, preprocessing 81 %, other 7 % (of the data wait)"
    # UNET3D: per sample in the workers, over the workers' wall time in the training phase
    lo = pd.DataFrame({"split": "train", "vfs_ns": [1e9, 1e9], "prep_ns": [3e9, 3e9]})
    th = {"groups": [{"group": "DataLoader workers", "cpu_s": 9.0, "wall_s": 10.0},
                     {"group": "main thread", "cpu_s": 1.0, "wall_s": 10.0}],
          "busiest_group": "DataLoader workers", "busiest_thread": "python/pt_data_worker",
          "busiest_share": 0.9, "busiest_demand": 0.95}
    w = bound.where_time_went(st.drop(columns=["vfs_ns", "prep_ns"]), lo, th)
    assert w["parts"]["read syscalls"] == pytest.approx(0.2) and w["parts"]["other"] == pytest.approx(0.2)
    assert "CPU: DataLoader workers 90 %, the rank's main thread 10 %" in w["text"]
    # BERT: no records; TensorFlow's pools named
    th = {"groups": [{"group": "tf_Compute", "cpu_s": 6.0}, {"group": "main thread", "cpu_s": 4.0}]}
    w = bound.where_time_went(st.drop(columns=["vfs_ns", "prep_ns"]), None, th)
    assert w["text"].startswith("CPU: tf.data's parse") and not w["parts"]


def test_thread_groups_from_samples():
    from experiments.emulator import threads

    sh = threads.shares(_threads(1.0), 100.0, 110.0)
    assert set(sh["tid"]) == {100, 150, 600, 1}
    main = sh.set_index("tid").loc[100]
    assert main["cpu_s"] == pytest.approx(10.0) and main["share"] == pytest.approx(1.0)
    g = threads.groups(sh, {100: 0}).set_index("group")
    assert set(g.index) == {"main thread", "gloo_tcp_loop", "DataLoader workers"}   # not the launcher
    assert not g.loc["gloo_tcp_loop", "data_path"] and g.loc["main thread", "data_path"]
    assert g.loc["DataLoader workers", "cpu_s"] == pytest.approx(1.0)


def test_the_sampler_reads_this_process_threads():
    import threading
    import time

    from experiments.emulator import threads

    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    s = threads.Sampler([__import__("os").getpid()], interval_s=0.05).start()
    time.sleep(0.2)
    s.stop()
    f = s.frame()
    stop.set()
    assert list(f.columns) == threads.COLUMNS and (f["tid"] == f["pid"]).any()
    assert t.native_id in set(f["tid"]) and (f["cpu_ns"] >= 0).all()


def test_every_summary_says_bound_with_its_cpu(tmp_path, dlrm_data):  # noqa: F811
    rd = _fake_run(tmp_path, dlrm_data)
    for r in range(2):  # 3.9 CPU s each over the 5 s run
        (rd / f"rank-r{r}.json").write_text(json.dumps({"rank": r, "pid": 1, "checkpoints": [], "evals": [],
                                                        "peak_rss_bytes": 1, "cpu_s": 3.9, "cpu_children_s": 0}))
    s = report.summarize(rd)
    assert s["bound"] in bound.VERDICTS and set(s["client_cpu"]["cpu_by_rank"]) == {"0", "1"}
    assert s["client_cpu"]["cpu_by_rank"]["0"]["cpu_s"] == pytest.approx(3.9)
    # the fake run's data wait is 1 ms of a 501 ms step: the data path did not set the pace
    assert s["bound"] == "undetermined" and "**Bound: undetermined.**" in report.markdown(s)
    assert "Where the client's time went" in report.markdown(s)


def test_rejudged_against_the_same_files_fio():
    s = {"client_cpu": {"data_wait_share": 0.9, "cpu_share": 0.3,
                        "threads": {"busiest_demand": None, "busiest_group": None}}}
    assert bound.rejudge(s, 95.0, {"bytes_per_s": 100.0, "how": "fio"})["bound"] == "storage"
    j = bound.rejudge(s, 30.0, {"bytes_per_s": 100.0, "how": "fio"})
    assert j["bound"] == "undetermined" and j["client_fraction_of_reference"] == pytest.approx(0.3)


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


def test_a_search_decided_by_a_cache_served_run_gives_no_verdict(tmp_path, dlrm_data):  # noqa: F811
    def stub(c, folder):   # G = 2 re-read what was in memory (its device audit says so), and failed
        g = c.accelerators
        return {"au": 0.99 if g == 1 else 0.5, "au_pass": g == 1, "throughput_samples_per_s": 1.0,
                "data_bytes_per_s": 1.0, "train_s": 1.0, "peak_rss_bytes_per_rank": 1,
                "bound": "storage" if g == 1 else "no verdict", "bound_why": "",
                "device_audit": {"read_from": "device" if g == 1 else "cache", "read_ratio": 1.1 if g == 1 else 0.02}}
    res = search.max_accelerators(_cfg(dlrm_data), tmp_path / "s", run=stub, say=lambda m: None)
    assert res["cache_served"] == [2] and [t["read_from"] for t in res["trials"]] == ["device", "cache"]
    r = search.row(res)
    assert r["bound"] == "no verdict" and r["read_from"] == "cache"
    md = search.markdown(res)
    assert "| cache (0.02) |" in md and "Served from the page cache (device audit): G = 2" in md


def test_report_audit_takes_the_verdict_from_a_cache_served_run(tmp_path, dlrm_data):  # noqa: F811
    from types import SimpleNamespace

    from experiments.host import device_audit as A

    s = report.summarize(_fake_run(tmp_path, dlrm_data))
    bound = s["bound"]
    # the ranks' own windows read the data through read calls, the device served none of it
    s["io_window"] = {"read_bytes": 0, "rchar": s["data_bytes"]}
    span = SimpleNamespace(device="vda", counts={"fstype": "ext4", "device": "vda", "device_read_bytes": 10**9})
    span.judge = lambda *a, **k: A.judge(span.counts, *a, **k)
    a = report.audit(s, span)["device_audit"]
    assert a["read_from"] == "cache" and a["read_measured_by"] == "processes"
    assert s["bound"] == "no verdict" and s["bound_unaudited"] == bound
    assert s["bound_why"].startswith("device audit: served from the page cache, no storage verdict")
    assert "| device | served from the page cache" in report.markdown(s)


def test_summary_has_au_per_rank_and_bytes_per_node(tmp_path, dlrm_data):  # noqa: F811
    rd = _fake_run(tmp_path, dlrm_data)
    s = report.summarize(rd)
    # each rank slept 4 x 0.5 s in its 2.5 s of training
    assert s["au_by_rank"] == {"0": pytest.approx(0.8), "1": pytest.approx(0.8)}
    assert s["data_bytes_by_node"] == {"0": 2 * 40960}
    assert report._by_node({0: 1, 1: 2, 2: 3, 3: 4}, 4, 2) == {"0": 3, "1": 7}


def test_storage_engineer_table_per_tier_and_workload():
    from experiments.emulator.bench import combined_bound, engineer_markdown, engineer_table

    res = {"compute_model": "thesis-v100", "max_accelerators": 2, "client_bound": True,
           "stopped_because": "client-bound at 4 accelerators",
           "trials": [{"accelerators": 1, "au": 0.99, "au_pass": True, "bound": "undetermined"},
                      {"accelerators": 2, "au": 0.95, "au_pass": True, "bound": "undetermined"},
                      {"accelerators": 4, "au": 0.5, "au_pass": False, "bound": "client",
                       "where_time_went": "read syscalls 10 %, preprocessing 85 %, other 5 % (of the data wait)"}]}
    found = pd.DataFrame([{"tier": "xfs", "workload": "unet3d", **search.row(res)},
                          {"tier": "xfs", "workload": "dlrm", **search.row(res | {
                              "client_bound": False, "trials": res["trials"][:2] + [
                                  res["trials"][2] | {"bound": "storage"}]})},
                          {"tier": "xfs", "workload": "bert", "compute_model": "fit", "max_accelerators": None,
                           "stopped_because": "not measured: no data"},
                          {"tier": "mem", "workload": "dlrm", **search.row(res | {
                              "client_bound": False, "trials": res["trials"][:2] + [
                                  res["trials"][2] | {"bound": "storage"}]})}])
    assert found.loc[0, "tried"] == "G=1: 99.0 %, G=2: 95.0 %, G=4: 50.0 %"
    assert found.loc[0, "where_time_went"].startswith("read syscalls 10 %")
    load = pd.DataFrame([{"tier": "xfs", "workload": "unet3d", "emulator_MBps": 434.0, "fio_MBps": 467.0,
                          "bound": "storage", "where_time_went": "CPU: DataLoader workers 90 %"},
                         {"tier": "xfs", "workload": "dlrm", "emulator_MBps": 10.0, "fio_MBps": 20.0,
                          "bound": "client", "where_time_went": "preprocessing 81 %"},
                         {"tier": "mem", "workload": "dlrm", "emulator_MBps": 450.0, "fio_MBps": 5711.0,
                          "bound": "undetermined", "where_time_went": "preprocessing 81 %"}])
    t = engineer_table(found, load).set_index(["tier", "workload"])
    assert t.loc[("xfs", "unet3d"), "bound"] == "client" and t.loc[("xfs", "unet3d"), "max_accelerators"] == 2
    assert t.loc[("xfs", "unet3d"), "limit_of"] == "client"
    assert t.loc[("xfs", "unet3d"), "client_fraction_of_fio_cold"] == pytest.approx(434 / 467)
    assert t.loc[("xfs", "dlrm"), "bound"] == "client"           # the load run was client-bound
    # the search's run said storage but one client drove 8 % of fio: never "storage"
    assert t.loc[("mem", "dlrm"), "bound"] == "undetermined"
    assert t.loc[("mem", "dlrm"), "where_time_went"] == "preprocessing 81 %"
    assert t.loc[("xfs", "bert"), "bound"] == "not measured" and pd.isna(t.loc[("xfs", "bert"), "client_cold_MBps"])
    st = t[t["bound"] == "storage"]
    assert (st["client_fraction_of_fio_cold"] >= bound.STORAGE_CLOSE).all()
    md = engineer_markdown(t.reset_index())
    assert "| xfs | unet3d | thesis-v100 | 2 (client's limit) | 434 | 467 | 0.93 | client | CPU: DataLoader" in md
    assert "| xfs | bert | fit | n/a | n/a | n/a | n/a | not measured | not measured |" in md
    assert combined_bound("storage", "storage") == "storage" and combined_bound(None, None) == "not measured"
    assert combined_bound("storage", None) == "undetermined" and combined_bound("undetermined", "client") == "client"
    assert combined_bound("no verdict", "storage") == "no verdict"   # the search's deciding run was cached


def test_cpu_from_the_training_phase_first_then_the_whole_process():
    st, ranks, ph = _records(1, 80, 100, 19.0)
    # the training phase: 9 CPU s of the process + 0 of children in 10 s on 1 core
    r = [ranks[0] | {"cpu_children_s": 0.0, "phase_usage": {"train": {"wall_s": 10.0, "cpu_s": 9.0}}}]
    b = bound.classify(st, r, ph, cores=1, ranks_per_host=1)
    assert b["cpu_share"] == pytest.approx(0.9) and b["cpu_measured_as"] == "training phase"
    # no phase usage: the whole process (start-up included) over its life
    r = [ranks[0] | {"life_s": 40.0}]
    b = bound.classify(st, r, ph, cores=1, ranks_per_host=1)
    assert b["cpu_share"] == pytest.approx(19.0 / 40) and b["bound"] == "undetermined"
    assert b["cpu_measured_as"] == "whole process"
