"""Unit tests of the emulator on tiny inputs: configuration and bad input, datasize, accelerator
utilization from a run folder, the max-accelerators search, checkpoint pattern derivation,
distributions and replay, launch commands, command-line errors. Nothing is launched."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from experiments.settings.config import ConfigError
from experiments.emulator import checkpoint, config as ecfg, datasize, launch, report, search
from experiments.trace import schema

DLRM_SECTION = {"data": {"train_samples": 4096, "eval_samples": 512}, "model": {"max_cardinality": 100},
                "train": {"steps": 4, "eval_every": 2, "eval_steps": 1}, "sweep": {"batch_sizes": [64], "ranks": [1]}}


@pytest.fixture
def dlrm_data(dlrm_zero_data):
    return dlrm_zero_data


def _cfg(dlrm_data, **kw):
    kw = {"compute_model": "zero", "checkpoint_pattern": "none", "data_dir": dlrm_data,
          "checkpoint_dir": dlrm_data.parent / "ck", "seed": 1} | kw
    return ecfg.from_params("dlrm", DLRM_SECTION, kw.pop("batch_size", 64), kw.pop("accelerators", 2), **kw)


# ------------------------------------------------------------------ configuration, bad input

def test_from_params_resolves_one_run(dlrm_data):
    c = _cfg(dlrm_data)
    assert (c.workload, c.batch_size, c.accelerators, c.per_node) == ("dlrm", 64, 2, 2)
    assert c.section["train"]["steps"] == 4 and c.local_batch == 32 and c.global_batch == 64
    assert c.data_dir == str(dlrm_data) and c.checkpoint_dir.endswith("ck")
    over = ecfg.from_params("dlrm", DLRM_SECTION, 64, 1, compute_model="zero", checkpoint_pattern="none",
                            data_dir=dlrm_data, seed=1, overrides={"train": {"steps": 9}})
    assert over.section["train"]["steps"] == 9


@pytest.mark.parametrize("kw,match", [
    ({"accelerators": 0}, r"accelerators = 0; allowed: an integer >= 1"),
    ({"accelerators": 65}, r"accelerators = 65 with batch_size = 64.*accelerators <= 64"),
    ({"nodes": 3, "accelerators": 2}, r"nodes = 3: must be >= 1 and divide accelerators = 2"),
    ({"compute_model": "no-such.json"}, r"compute model .*no-such.json: no such file"),
    ({"checkpoint_pattern": "nope.json"}, r"checkpoint pattern .*nope.json: no such file"),
])
def test_bad_input_stops_before_any_work(dlrm_data, kw, match):
    with pytest.raises(ConfigError, match=match):
        _cfg(dlrm_data, **kw)


def test_unknown_workload_is_named():
    with pytest.raises(ConfigError, match=r"workload = 'resnet'; allowed: unet3d, bert, dlrm"):
        ecfg.from_params("resnet", {}, 1, 1)


def test_data_folder_of_another_workload_is_refused(tmp_path, dlrm_data):
    b = tmp_path / "b"
    (b / "train").mkdir(parents=True)
    (b / "eval").mkdir()
    (b / "train" / "part-00000-of-00001.tfrecord").write_bytes(b"x")
    (b / "eval" / "eval.tfrecord").write_bytes(b"x")
    with pytest.raises(ConfigError, match=r"not a UNET3D data set: filelist.csv is missing.*looks like a BERT"):
        ecfg.data_layout("unet3d", b)
    with pytest.raises(ConfigError, match=r"not a BERT data set.*looks like a DLRM"):
        ecfg.data_layout("bert", dlrm_data)
    with pytest.raises(ConfigError, match=r"no such folder"):
        ecfg.data_layout("dlrm", tmp_path / "missing")
    (dlrm_data / "test_data.bin").write_bytes(b"\0" * 161)
    with pytest.raises(ConfigError, match=r"test_data.bin is 161 B, not a non-zero multiple of the 160 B"):
        ecfg.data_layout("dlrm", dlrm_data)
    assert ecfg.data_layout("bert", b)["train_files"] == 1


def test_model_or_pattern_without_the_workload(tmp_path, dlrm_data):
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"schema": "compute-model/1", "workloads": {"bert": {
        "mean": {"coef": {"G": 0, "B": 0, "c": 0.1}}, "std": {"coef": {"G": 0, "B": 0, "c": 0}}}}}))
    with pytest.raises(ConfigError, match=r"compute model .*m.json: no entry for workload 'dlrm'.*it has: bert"):
        _cfg(dlrm_data, compute_model=str(m))
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"schema": "checkpoint-pattern/1", "workloads": {"unet3d": {
        "writers": "rank0", "reuse": "overwrite", "files": [{"name": "a.pt", "writes": [["write", 10, 1]]}]}}}))
    with pytest.raises(ConfigError, match=r"checkpoint pattern .*p.json: no entry for workload 'dlrm'.*it has: unet3d"):
        _cfg(dlrm_data, checkpoint_pattern=str(p))


def test_zero_model_and_eval_models():
    from experiments.workloads import compute_model as cm

    m = cm.load("zero")
    assert m.mean_std("unet3d", 8, 4) == (0.0, 0.0)
    assert cm.resolve("thesis-v100", "unet3d", 8, 4)["eval_mean_s"] == 8.403
    assert cm.resolve("zero", "unet3d", 8, 4)["eval_mean_s"] == 0


def test_run_json_holds_the_resolved_compute_model_and_the_threads(tmp_path, dlrm_data):
    from experiments.workloads import compute_model as cm

    c = _cfg(dlrm_data, accelerators=2)
    r = launch.run_record(c, tmp_path)
    assert r["compute"] == cm.resolve(c.compute_model, "dlrm", 2, c.batch_size)
    assert r["compute"]["mode"] == "sleep" and r["compute"]["mean_s"] == cm.load(c.compute_model).mean_std("dlrm", 2, c.batch_size)[0]
    assert r["config"]["train"]["threads_per_rank"] == c.threads_per_rank


# ------------------------------------------------------------------ datasize (MLPerf Storage rule)

def test_datasize_takes_the_larger_of_memory_and_steps(tmp_path):
    d = datasize.datasize("dlrm", DLRM_SECTION, accelerators=4, batch_size=64, memory_bytes=1_000_000,
                          data_dir=tmp_path / "none", seed=1)
    assert d["samples_for_memory"] == 31250 and d["samples_for_steps"] == 500 * 64
    assert d["bound"] == "steps" and d["samples"] == 32000 and d["set"] == {"dlrm.data.train_samples": 32000}
    d = datasize.datasize("dlrm", DLRM_SECTION, accelerators=4, batch_size=64, memory_bytes=10**8, nodes=2,
                          data_dir=tmp_path / "none", seed=1)
    assert d["bound"] == "memory" and d["samples"] == int(np.ceil(5 * 2 * 10**8 / 160))
    assert "memory rule decides" in datasize.describe(d)


def test_datasize_bert_whole_files_at_least_one_per_accelerator(tmp_path):
    sec = {"data": {"files": 2, "samples_per_file": 100}, "sweep": {"batch_sizes": [2], "ranks": [1]}}
    b = tmp_path / "b"
    (b / "train").mkdir(parents=True)
    (b / "eval").mkdir()
    for k in range(2):
        (b / "train" / f"part-0000{k}-of-00002.tfrecord").write_bytes(b"x" * 2500 * 100)
    (b / "eval" / "eval.tfrecord").write_bytes(b"x")
    d = datasize.datasize("bert", sec, accelerators=8, batch_size=2, memory_bytes=10**6, data_dir=b, seed=1)
    assert d["sample_bytes"] == 2500 and d["files"] == max(8, int(np.ceil(max(2000, 8000) / 100)))
    assert d["samples"] == d["files"] * 100


# ------------------------------------------------------------------ AU from a run folder

def _fake_run(tmp_path, dlrm_data, G=2, steps=4, sleep_s=0.5, train_s=2.5):
    c = _cfg(dlrm_data, accelerators=G)
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "run.json").write_text(json.dumps(launch.run_record(c, rd)))
    t0 = 1000.0
    for r in range(G):
        rows = [{"epoch": 0, "step": s, "samples": 64, "data_ns": 1_000_000, "compute_ns": int(sleep_s * 1e9),
                 "step_ns": int(sleep_s * 1e9) + 1_000_000, "sleep_ns": int(sleep_s * 1e9),
                 "sleep_drawn_ns": int(sleep_s * 1e9), **{p: 0 for p in ("to_device_ns", "forward_ns", "loss_ns",
                                                                            "backward_ns", "optimizer_ns", "allreduce_ns")}}
                for s in range(steps)]
        pd.DataFrame(rows).to_csv(rd / f"steps-r{r}.csv", index=False)
        app = [("init", "begin", t0 - 1), ("init", "end", t0), ("train", "begin", t0),
               ("train", "end", t0 + 1.0), ("checkpoint", "begin", t0 + 1.0), ("checkpoint", "end", t0 + 1.5),
               ("train", "begin", t0 + 1.5), ("train", "end", t0 + train_s + 0.5)]
        (rd / f"app-r{r}.jsonl").write_text("".join(json.dumps(
            {"ts": ts, "rank": r, "workload": "dlrm", "phase": ph, "event": ev}) + "\n" for ph, ev, ts in app))
        (rd / f"rank-r{r}.json").write_text(json.dumps({"rank": r, "pid": 1, "checkpoints": [], "evals": [],
                                                         "peak_rss_bytes": 1}))
        (rd / f"loader-r{r}-p1.jsonl").write_text("".join(json.dumps({"bytes": 64 * 160, "vfs_ns": 1, "prep_ns": 1})
                                                           + "\n" for _ in range(steps)))
    return rd


def test_accelerator_utilization_eq31_eq32_from_the_records(tmp_path, dlrm_data):
    rd = _fake_run(tmp_path, dlrm_data)
    s = report.summarize(rd)
    # training 2.5 s (3.0 s span minus the 0.5 s checkpoint); ideal = samples / (B/G * G) * 0.5 s
    assert s["train_s"] == pytest.approx(2.5) and s["run_s"] == pytest.approx(4.0)
    assert s["samples"] == 4 * 64 and s["ideal_compute_s"] == pytest.approx(4 * 0.5)
    assert s["au"] == pytest.approx(2.0 / 2.5) and s["au_pass"] is False
    assert s["throughput_samples_per_s"] == pytest.approx(256 / 2.5)
    assert s["data_bytes"] == 2 * 4 * 64 * 160 and s["data_bytes_by_rank"] == {"0": 40960, "1": 40960}
    md = report.markdown(s)
    assert "80.0 % -> FAIL" in md and "throughput" in md


# ------------------------------------------------------------------ max-accelerators search

def test_max_accelerators_doubles_then_bisects(tmp_path, dlrm_data):
    tried = []

    def stub(c, folder):
        tried.append(c.accelerators)
        au = 0.99 if c.accelerators <= 5 else 0.5
        return {"au": au, "au_pass": au >= 0.9, "throughput_samples_per_s": 1.0, "data_bytes_per_s": 1.0,
                "train_s": 1.0, "peak_rss_bytes_per_rank": 1}
    res = search.max_accelerators(_cfg(dlrm_data), tmp_path / "s", run=stub, say=lambda m: None)
    assert res["max_accelerators"] == 5 and tried == [1, 2, 4, 8, 6, 5]
    assert [t["accelerators"] for t in res["trials"]] == [1, 2, 4, 5, 6, 8]
    assert "AU < 90 % at 6" in res["stopped_because"] and (tmp_path / "s" / "search.md").exists()


def test_max_accelerators_stops_at_the_data_limit(tmp_path, dlrm_data):
    ok = lambda c, f: {"au": 1.0, "au_pass": True, "throughput_samples_per_s": 1, "data_bytes_per_s": 1,  # noqa: E731
                       "train_s": 1, "peak_rss_bytes_per_rank": 1}
    res = search.max_accelerators(_cfg(dlrm_data, batch_size=8, accelerators=1), tmp_path / "s", run=ok,
                                  say=lambda m: None)
    assert res["max_accelerators"] == 8 and "data set's limit (8 accelerators" in res["stopped_because"]
    res = search.max_accelerators(_cfg(dlrm_data), tmp_path / "t", limit=3, run=ok, say=lambda m: None)
    assert res["max_accelerators"] == 3 and [t["accelerators"] for t in res["trials"]] == [1, 2, 3]


# ------------------------------------------------------------------ checkpoint patterns

def _events(rows):
    df = pd.DataFrame(rows)
    df["timestamp"] = pd.to_datetime(df.pop("ts"), unit="s", utc=True)
    df["layer"], df["error"] = "vfs", 0
    return schema.conform(df)


def test_derive_every_writer_new_files_per_checkpoint(tmp_path):
    root = tmp_path / "ck"
    rows, app = [], []
    for e, (tag, t) in enumerate((("start", 10.0), ("end", 20.0))):
        for r, pid in enumerate((100, 200)):
            d = f"{root}/worker-{r}"
            rows += [{"ts": t + 0.1 * r, "pid": pid, "op": "write", "size": 4096, "path": f"{d}/ckpt-{tag}.data"},
                     {"ts": t + 0.1 * r + 0.01, "pid": pid, "op": "write", "size": 4096, "path": f"{d}/ckpt-{tag}.data"},
                     {"ts": t + 0.1 * r + 0.02, "pid": pid, "op": "write", "size": 100, "path": f"{d}/ckpt-{tag}.data"},
                     {"ts": t + 0.1 * r + 0.03, "pid": pid, "op": "pwrite64", "size": 7, "path": f"{d}/ckpt-{tag}.index"}]
            app += [{"ts": t - 0.5, "rank": r, "phase": "checkpoint", "event": "begin", "tag": tag},
                    {"ts": t + 1, "rank": r, "phase": "checkpoint", "event": "end", "tag": tag}]
    rows.append({"ts": 15.0, "pid": 100, "op": "write", "size": 9, "path": f"{root}/worker-0/stray"})
    p, per = checkpoint.derive(_events(rows), [root], "bert", ranks=2, app_log=app)
    assert (p.writers, p.reuse) == ("all", "new")
    assert [f["name"] for f in p.files] == ["worker-{rank}/ckpt-{tag}.data", "worker-{rank}/ckpt-{tag}.index"]
    assert p.files[0]["writes"] == [["write", 4096, 2], ["write", 100, 1]]
    assert p.files[1]["writes"] == [["pwrite64", 7, 1]]
    assert p.summary["writes"] == 4 and p.summary["bytes"] == 8299 and p.summary["ops"] == {"pwrite64": 1, "write": 3}
    assert p.derived_from["writes_outside_checkpoint_phases"] == 1 and len(per) == 4


def test_derive_rank0_overwrites_the_same_file(tmp_path):
    root = tmp_path / "ck"
    rows = [{"ts": t + i * 0.01, "pid": 7, "op": "writev" if i else "write", "size": 64 if i == 0 else 1000,
             "path": f"{root}/dlrm.pt"} for t in (5.0, 9.0) for i in range(3)]
    app = [{"ts": t + dt, "rank": r, "phase": "checkpoint", "event": ev, "step": s}
           for s, t in ((1, 5.0), (3, 9.0)) for r in (0, 1) for ev, dt in (("begin", -0.1), ("end", 0.5))]
    p, _ = checkpoint.derive(_events(rows), root, "dlrm", ranks=2, app_log=app)
    assert (p.writers, p.reuse) == ("rank0", "overwrite") and p.files[0]["name"] == "dlrm.pt"
    assert p.files[0]["writes"] == [["write", 64, 1], ["writev", 1000, 2]]
    with pytest.raises(ConfigError, match="no VFS write to"):
        checkpoint.derive(_events(rows), tmp_path / "elsewhere", "dlrm")


def test_replay_issues_the_same_calls_and_sizes(tmp_path, monkeypatch):
    calls = []
    for name in ("write", "writev", "pwrite"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _n=name, _r=real: (calls.append(_n), _r(*a))[1])
    p = checkpoint.parse({"workloads": {"bert": {"writers": "all", "reuse": "new", "files": [
        {"name": "w{rank}/c-{tag}.data", "writes": [["write", 10, 2], ["writev", 5, 1]]},
        {"name": "w{rank}/c-{tag}.idx", "writes": [["pwrite64", 3, 1]]}]}}}, "t").require("bert")
    got = checkpoint.replay(p, tmp_path, rank=1, tag="end")
    assert calls == ["write", "write", "writev", "pwrite"]
    assert (tmp_path / "w1" / "c-end.data").stat().st_size == 25 and (tmp_path / "w1" / "c-end.idx").stat().st_size == 3
    assert (got["files"], got["writes"], got["bytes"]) == (2, 4, 28)
    r0 = checkpoint.parse({"workloads": {"dlrm": {"writers": "rank0", "reuse": "overwrite", "files": [
        {"name": "d.pt", "writes": [["write", 8, 1]]}]}}}, "t").require("dlrm")
    assert checkpoint.replay(r0, tmp_path, rank=1)["writes"] == 0 and not (tmp_path / "d.pt").exists()
    assert checkpoint.replay(r0, tmp_path, rank=0, scale=2.0)["bytes"] == 16


def test_distribution_only_pattern_has_exact_quartiles_and_total():
    s = checkpoint.quantile_sizes(230, 499153191, 1280, 3904, 1769472)
    assert len(s) == 230 and abs(int(s.sum()) - 499153191) < 230
    assert list(np.quantile(s, [0.25, 0.5, 0.75])) == [1280, 3904, 1769472]
    th = checkpoint.load("thesis")
    bert = th.require("bert")
    sizes = [x for _, w in bert.plan(0) for _, x in w]
    assert len(bert.plan(0)) == 3 and all("{tag}" in n for n, _ in bert.plan(0))
    assert len(sizes) == round(18624 / 16) and np.median(sizes) == 12288
    assert checkpoint.load("none").require("unet3d") is None


@pytest.mark.parametrize("obj,match", [
    ({"schema": "x/9", "workloads": {}}, r"schema = 'x/9'; allowed: 'checkpoint-pattern/1'"),
    ({"workloads": {"dlrm": {"writers": "some", "reuse": "new", "files": []}}}, r"writers = 'some'; allowed: rank0, all"),
    ({"workloads": {"dlrm": {"writers": "all", "reuse": "new", "files": [{"name": "/abs", "writes": []}]}}},
     r"files\[0\].name must be a relative file name"),
    ({"workloads": {"dlrm": {"writers": "all", "reuse": "new", "files": [{"name": "a", "writes": [["read", 1, 1]]}]}}},
     r"writes\[0\] = \['read', 1, 1\]; allowed: \[op, size >= 0, repeat >= 1\]"),
    ({"workloads": {"dlrm": {"writers": "all", "reuse": "new", "writes": 3}}}, r"workloads.dlrm.files = None"),
])
def test_bad_pattern_files_name_the_key(obj, match):
    with pytest.raises(ConfigError, match=match):
        checkpoint.parse(obj, "bad.json")


def test_pattern_file_round_trip(tmp_path):
    p = checkpoint.parse({"workloads": {"dlrm": {"writers": "rank0", "reuse": "overwrite", "files": [
        {"name": "d.pt", "writes": [["write", 8, 3]]}]}}}, "t").require("dlrm")
    f = checkpoint.write_file({"dlrm": p}, tmp_path / "p.json", host="test")
    back = checkpoint.load(str(f)).require("dlrm")
    assert back.files == p.files and back.summary["bytes"] == 24


# ------------------------------------------------------------------ launch commands, command line

def test_launch_commands(dlrm_data):
    c = _cfg(dlrm_data, accelerators=4)
    cmd = launch.command(c, "R")
    assert "--standalone" in cmd and "--nproc-per-node=4" in cmd and cmd[-2:] == ["experiments.emulator.rank", "R"]
    c2 = c.model_copy(update={"nodes": 2})
    cmd = launch.command(c2, "R", rdzv_endpoint="10.0.0.1:29500")
    assert "--nnodes=2" in cmd and "--rdzv-endpoint=10.0.0.1:29500" in cmd and "--nproc-per-node=2" in cmd
    b = c2.model_copy(update={"workload": "bert"})
    workers = launch.tf_workers(b, ["127.0.0.1", "127.0.0.1"], 4000)
    assert workers == ["127.0.0.1:4000", "127.0.0.1:4001", "127.0.0.1:4002", "127.0.0.1:4003"]
    envs = [json.loads(e["TF_CONFIG"])["task"]["index"] for e, _ in launch.tf_commands(b, "R", 1, workers)]
    assert envs == [2, 3]


def test_one_rank_forks_from_a_warm_parent_with_torchruns_environment(dlrm_data, tmp_path):
    """Given warm parents that serve its ranks, the emulator forks its rank from the parent of its
    framework (no torchrun agent) with the environment torchrun gives it; at two ranks (which
    these parents do not serve) nothing is forked and torchrun starts them."""
    from types import SimpleNamespace

    forked = []

    class Parents:
        def serves(self, ranks):
            return ranks == 1

        def get(self, fw):
            return SimpleNamespace(start=lambda module, argv, env, log: forked.append((fw, module, argv, env))
                                   or SimpleNamespace(pid=1))

    log = open(tmp_path / "out.txt", "w")
    procs = launch.start(_cfg(dlrm_data, accelerators=1), tmp_path / "run", log=log, parents=Parents())
    assert len(procs) == 1 and len(forked) == 1
    fw, module, argv, env = forked[0]
    assert (fw, module, argv) == ("torch", "experiments.emulator.rank", [str(tmp_path / "run")])
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["MASTER_ADDR"]) == ("0", "1", "0", "127.0.0.1")
    assert env["OMP_NUM_THREADS"] == launch.env(_cfg(dlrm_data, accelerators=1))["OMP_NUM_THREADS"]
    two = _cfg(dlrm_data, accelerators=2)
    started = []
    real_popen = subprocess.Popen
    try:
        subprocess.Popen = lambda cmd, **kw: started.append(cmd) or SimpleNamespace(pid=2)
        launch.start(two, tmp_path / "run2", log=log, parents=Parents())
    finally:
        subprocess.Popen = real_popen
        log.close()
    assert len(forked) == 1 and started == [launch.torchrun(two, tmp_path / "run2")]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "experiments.emulator", *args], capture_output=True, text=True)


def test_cli_bad_input_is_one_error_line(dlrm_data):
    p = _cli("run", "resnet")
    assert p.returncode == 2 and p.stderr.strip().startswith("error: workload = 'resnet'")
    p = _cli("run", "dlrm", "-G", "0", "--data", str(dlrm_data), "--compute-model", "zero",
             "--checkpoint-pattern", "none")
    assert p.returncode == 2 and "accelerators = 0" in p.stderr
    p = _cli("run", "unet3d", "--data", str(dlrm_data), "--compute-model", "zero", "--checkpoint-pattern", "none",
             "--dry-run")
    assert p.returncode == 2 and "not a UNET3D data set" in p.stderr and "looks like a DLRM" in p.stderr


def test_cli_dry_run_prints_config_and_command(dlrm_data):
    p = _cli("run", "dlrm", "-G", "2", "-B", "64", "--data", str(dlrm_data), "--compute-model", "thesis-v100",
             "--checkpoint-pattern", "thesis", "--dry-run", "--set", "train.steps=4")
    assert p.returncode == 0, p.stderr
    assert '"accelerators": 2' in p.stdout and "torch.distributed.run" in p.stdout
    assert "compute per step: Normal(" in p.stdout and "checkpoint per writer: 1 file(s), 53 writes" in p.stdout


def test_node0_waits_for_the_other_nodes_thread_samples(tmp_path):
    """Node 0 summarizes a shared folder only once every node's threads file is there (or the
    wait's end); a node's file appears whole or not at all (a half-written one stopped node
    0's summary on loopback)."""
    import threading

    from experiments.emulator.runner import _await_nodes

    (tmp_path / "threads-node0.csv").write_text("tid\n1\n")
    assert not _await_nodes(tmp_path, 2, timeout_s=0.3)
    write = lambda p: (__import__("time").sleep(0.4), p.write_text("tid\n2\n"))  # noqa: E731
    t = threading.Thread(target=launch.atomic_write, args=(tmp_path / "threads-node1.csv", write))
    t.start()
    assert _await_nodes(tmp_path, 2, timeout_s=10)
    t.join()
    assert (tmp_path / "threads-node1.csv").read_text() == "tid\n2\n"
    assert not list(tmp_path.glob("threads*.tmp")) and len(list(tmp_path.glob("threads*.csv"))) == 2
