"""experiments.dlio without running DLIO: config writing from params, data views, output
parsing (tiny fixtures shaped like DLIO 2.0.0's files), bad input, and 'not measured'."""

import json
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments import dlio
from experiments.settings.config import ConfigError
from types import SimpleNamespace

from experiments.dlio import bench, dataset, environment, outputs, runner
from experiments.dlio import workload_config as wc
from experiments.workloads import compute_model as cm
from experiments.workloads.settings import BertConfig, DlrmConfig, Unet3dConfig


# ------------------------------------------------------------------ fixtures: tiny data sets

def tfrecord(path: Path, sizes: list[int]) -> None:
    """A TFRecord file of records of the given payload sizes (CRCs zero: only framing counts)."""
    with open(path, "wb") as f:
        for n in sizes:
            f.write(struct.pack("<Q", n) + b"\0" * 4 + b"x" * n + b"\0" * 4)


@pytest.fixture
def unet3d_data(tmp_path):
    d = tmp_path / "unet3d"
    (d / "train").mkdir(parents=True)
    (d / "eval").mkdir()
    rows = []
    for split, idx in [("train", i) for i in range(4)] + [("eval", 10_000)]:
        x = np.zeros((1, 4, 4, 4 + idx % 3), np.float32)
        y = np.zeros(x.shape, np.uint8)
        base = d / split / f"case_{idx:05d}"
        np.save(f"{base}_x.npy", x)
        np.save(f"{base}_y.npy", y)
        rows.append({"split": split, "case": idx, "path_x": f"{split}/case_{idx:05d}_x.npy",
                     "path_y": f"{split}/case_{idx:05d}_y.npy", "d1": 4, "d2": 4,
                     "bytes_x": Path(f"{base}_x.npy").stat().st_size,
                     "bytes_y": Path(f"{base}_y.npy").stat().st_size})
    pd.DataFrame(rows).to_csv(d / "filelist.csv", index=False)
    return d


@pytest.fixture
def bert_data(tmp_path):
    d = tmp_path / "bert"
    (d / "train").mkdir(parents=True)
    (d / "eval").mkdir()
    for k in range(2):
        tfrecord(d / "train" / f"part-{k:05d}-of-00002.tfrecord", [460, 470, 480, 490] * 2)
    tfrecord(d / "eval" / "eval.tfrecord", [470, 470])
    return d


@pytest.fixture
def dlrm_data(tmp_path):
    d = tmp_path / "dlrm"
    d.mkdir()
    (d / "train_data.bin").write_bytes(np.arange(2000 * 40, dtype=np.int32).tobytes())
    (d / "test_data.bin").write_bytes(np.zeros(100 * 40, np.int32).tobytes())
    return d


SECTIONS = {
    "unet3d": Unet3dConfig.model_validate({"data": {"train_cases": 4, "eval_cases": 1, "scale": 0.15},
                                           "model": {"crop": 16, "depth": 2},
                                           "train": {"epochs": 3, "workers": 2},
                                           "sweep": {"batch_sizes": [1, 2], "ranks": [1, 2]}}),
    "bert": BertConfig.model_validate({"data": {"files": 2, "samples_per_file": 8, "seq_len": 64,
                                                "max_predictions": 8, "vocab_size": 1024},
                                       "train": {"steps": 3, "cycle_length": 8, "map_threads": 4,
                                                 "shuffle_buffer": 16},
                                       "sweep": {"batch_sizes": [2], "ranks": [1, 2]}}),
    "dlrm": DlrmConfig.model_validate({"data": {"train_samples": 2000, "eval_samples": 100},
                                       "model": {"max_cardinality": 100},
                                       "train": {"steps": 4, "eval_every": 2, "eval_steps": 0},
                                       "sweep": {"batch_sizes": [64, 256], "ranks": [1, 2]}}),
}


def built(workload, data_dir, G=1, B=2, compute=None, ckpt=1000):
    facts = dataset.facts(workload, data_dir)
    compute = compute or wc.Compute(0.5, 0.05, "given", 0.05)
    return wc.build(workload, SECTIONS[workload], G, B, facts, compute, data_folder="/v",
                    checkpoint_folder="/ck", checkpoint_bytes=ckpt, seed=7, output_folder="/o")


# ------------------------------------------------------------------ compute time

def test_compute_time_given_and_from_a_model():
    c = wc.compute_time("unet3d", 2, 4, compute_time_s=0.25)
    assert (c.mean_s, c.std_s, c.source) == (0.25, 0.0, "given")
    c = wc.compute_time("unet3d", 8, 4, compute_model="thesis-v100")
    assert (c.mean_s, c.std_s) == cm.load("thesis-v100").mean_std("unet3d", 8, 4)
    assert c.source == "thesis-v100" and c.dlio_std_s == c.std_s


def test_compute_std_is_kept_where_dlio_cannot_draw_a_negative_sleep(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"schema": cm.SCHEMA, "workloads": {"dlrm": {
        "mean": {"coef": {"G": 0, "B": 0, "c": 0.01}}, "std": {"coef": {"G": 0, "B": 0, "c": 0.01}}}}}))
    c = wc.compute_time("dlrm", 1, 64, compute_model=str(f))
    assert c.std_s == 0.01 and c.dlio_std_s == pytest.approx(0.01 / wc.STD_GUARD)
    assert any("negative draw" in n for n in c.notes)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "1"])
def test_bad_compute_time_stops(bad):
    with pytest.raises(ConfigError, match="compute_time_s"):
        wc.compute_time("bert", 1, 2, compute_time_s=bad)


# ------------------------------------------------------------------ config writing

def test_unet3d_config_reads_our_cases_two_files_per_sample(unet3d_data):
    b = built("unet3d", unet3d_data, G=2, B=2)
    c = b.config
    assert c["framework"] == "pytorch" and c["dataset"]["format"] == "npy"
    assert c["dataset"]["num_files_train"] == 8 and c["dataset"]["num_files_eval"] == 2
    assert c["reader"]["batch_size"] == 4 and c["reader"]["batch_size_eval"] == 2
    assert c["reader"]["read_threads"] == 2 and c["reader"]["prefetch_size"] == 4  # factor 2
    assert c["train"]["epochs"] == 3 and c["train"]["computation_time"] == 0.5
    assert c["workflow"]["evaluation"] and c["evaluation"]["eval_after_epoch"] == 3
    assert c["checkpoint"]["model_size"] == 1000 and c["checkpoint"]["layer_parameters"] == []
    assert c["checkpoint"]["checkpoint_after_epoch"] == 3 and c["checkpoint"]["type"] == "rank_zero"
    assert c["dataset"]["keep_files"] is True  # DLIO deletes the data set otherwise
    assert b.dlio_samples_per_sample == 2
    assert any("some ranks read none" in n for n in b.notes)  # 1 eval case, 2 ranks


def test_bert_config_generates_data_of_our_sizes(bert_data):
    b = built("bert", bert_data, G=2, B=2)
    c = b.config
    assert b.needs_generation and c["framework"] == "tensorflow" and c["dataset"]["format"] == "tfrecord"
    assert (c["dataset"]["num_files_train"], c["dataset"]["num_samples_per_file"]) == (2, 8)
    assert c["train"]["total_training_steps"] == 3
    assert c["reader"]["read_threads"] == 2  # cycle_length 8, but only 2 files
    assert c["reader"]["computation_threads"] == 4 and c["reader"]["shuffle_size"] == 16
    assert c["checkpoint"]["type"] == "all_ranks" and c["checkpoint"]["steps_between_checkpoints"] == 3
    L = c["dataset"]["record_length"]
    assert int(L ** 0.5) ** 2 == L  # DLIO writes int(sqrt(L))^2 bytes: L is a square
    ours = dataset.bert_facts(bert_data).bytes_per_sample
    assert abs(L + dataset.DLIO_TFEXAMPLE_OVERHEAD + 16 - ours) <= 2 * L ** 0.5 + 1


def test_dlrm_config_splits_the_global_batch_and_uses_the_quiet_reader(dlrm_data):
    b = built("dlrm", dlrm_data, G=2, B=256)
    c = b.config
    assert c["reader"]["batch_size"] == 128 and c["reader"]["read_threads"] == 0
    assert c["reader"]["reader_classname"] == wc.DLRM_READER
    assert c["dataset"]["num_samples_per_file"] == 2000 and c["dataset"]["record_length"] == 160
    assert c["train"]["total_training_steps"] == 4
    assert c["checkpoint"]["steps_between_checkpoints"] == 2
    assert not c["workflow"]["evaluation"] and any("num_samples_per_file" in n for n in b.notes)


def test_no_checkpoint_size_means_no_checkpoint_and_says_so(dlrm_data):
    b = built("dlrm", dlrm_data, B=64, ckpt=None)
    assert not b.config["workflow"]["checkpoint"] and any("no checkpoint" in n for n in b.notes)


@pytest.mark.parametrize("workload,G,B,match", [
    ("unet3d", 2, 4, "batch 4 x 2 ranks"),
    ("unet3d", 5, 1, "needs more than the 4"),
    ("bert", 3, 1, "3 ranks but 2 files"),
    ("bert", 1, 8, "more than one pass"),
    ("dlrm", 3, 64, "multiple of ranks"),
    ("dlrm", 1, 512, "more than one pass"),
    ("dlrm", 0, 64, "ranks = 0"),
    ("resnet", 1, 1, "workload = 'resnet'"),
])
def test_configs_dlio_cannot_run_stop_before_any_work(workload, G, B, match, request):
    data = request.getfixturevalue(f"{workload}_data") if workload != "resnet" else Path("/nonexistent")
    with pytest.raises(ConfigError, match=match):
        facts = dataset.facts(workload, data) if workload != "resnet" else None
        wc.build(workload, SECTIONS.get(workload, {}), G, B, facts, wc.Compute(0, 0, "given"),
                 data_folder="/v", checkpoint_folder="/c", checkpoint_bytes=None, seed=1,
                 output_folder="/o")


# ------------------------------------------------------------------ data views

def test_unet3d_view_links_train_and_eval(unet3d_data, tmp_path):
    f = dataset.facts("unet3d", unet3d_data)
    assert (f.train_files, f.eval_files, f.extra["cases"]) == (8, 2, 4)
    v = dataset.make_view(f, tmp_path / "view")
    assert (v / "train").resolve() == (unet3d_data / "train").resolve()
    assert (v / "valid").resolve() == (unet3d_data / "eval").resolve()
    assert len(list((v / "train").glob("*.npy"))) == 8


def test_dlrm_view_has_dlio_index_of_our_samples(dlrm_data, tmp_path):
    v = dataset.make_view(dataset.facts("dlrm", dlrm_data), tmp_path / "view")
    f = v / "train" / "train_data.indexed_binary"
    assert f.resolve() == (dlrm_data / "train_data.bin").resolve()
    off = np.frombuffer(Path(f"{f}.off.idx").read_bytes(), np.int64)
    sz = np.frombuffer(Path(f"{f}.sz.idx").read_bytes(), np.int64)
    assert len(off) == 2000 and off[3] == 3 * 160 and (sz == 160).all()
    assert (v / "valid" / "test_data.indexed_binary").exists()


def test_tfrecord_counting(tmp_path):
    tfrecord(tmp_path / "a.tfrecord", [10, 20, 30])
    assert dataset.count_tfrecords(tmp_path / "a.tfrecord") == (3, 60)
    (tmp_path / "b.tfrecord").write_bytes((tmp_path / "a.tfrecord").read_bytes()[:-20])
    assert dataset.count_tfrecords(tmp_path / "b.tfrecord")[0] == 3  # last one short: seek past


def test_missing_data_names_folder_and_command(tmp_path):
    for w in dlio.WORKLOADS:
        with pytest.raises(ConfigError, match="workload_data") as e:
            dataset.facts(w, tmp_path / "nothing")
        assert str(tmp_path / "nothing") in str(e.value)


# ------------------------------------------------------------------ output parsing

def write_dlio_output(d: Path) -> None:
    """What DLIO 2.0.0 wrote for 2 ranks, 2 epochs, a checkpoint after 2 steps in epoch 2."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "summary.json").write_text(json.dumps({
        "num_accelerators": 2, "epochs": 2, "start": "2026-01-01T00:00:00.000000",
        "end": "2026-01-01T00:00:09.000000",
        "metric": {"train_au_percentage": [80.0, 90.0], "train_au_mean_percentage": 85.0,
                   "train_au_meet_expectation": "fail",
                   "train_throughput_samples_per_second": [8.0, 12.0],
                   "train_throughput_mean_samples_per_second": 10.0,
                   "train_io_mean_MB_per_second": 1.0}}))
    (d / "per_epoch_stats.json").write_text(json.dumps({
        "1": {"start": "2026-01-01T00:00:00.000000",
              "block1": {"start": "2026-01-01T00:00:00.000000", "end": "2026-01-01T00:00:02.000000",
                         "duration": "2.00"},
              "end": "2026-01-01T00:00:02.100000", "duration": "2.10"},
        "2": {"start": "2026-01-01T00:00:03.000000",
              "block1": {"start": "2026-01-01T00:00:03.000000", "end": "2026-01-01T00:00:04.000000"},
              "ckpt1": {"start": "2026-01-01T00:00:04.000000", "end": "2026-01-01T00:00:04.500000"},
              "block2": {"start": "2026-01-01T00:00:04.500000", "end": "2026-01-01T00:00:05.500000"},
              "end": "2026-01-01T00:00:05.600000",
              "eval": {"start": "2026-01-01T00:00:05.600000", "end": "2026-01-01T00:00:06.000000"}}}))
    for r in (0, 1):
        (d / f"{r}_output.json").write_text(json.dumps({
            "host_memory_GB": 23.5, "hostname": "h",
            "1": {"load": {"block1": [0.5, 0.1, 0.1, 0.1]}, "proc": {"block1": [1.0, 0.6, 0.6, 0.6]},
                  "compute": {"block1": [0.5] * 4}, "au": {"block1": 80.0}, "throughput": {"block1": 4.0}},
            # block2's first load is lost by DLIO (recorded before start_block empties the list)
            "2": {"load": {"block1": [0.2, 0.1], "block2": [0.1], "eval": [0.3]},
                  "proc": {"block1": [0.7, 0.6], "block2": [0.6, 0.6], "eval": [0.3]},
                  "compute": {"block1": [0.5, 0.5], "block2": [0.5, 0.5], "eval": [0.0]},
                  "au": {"block1": 90.0}, "throughput": {"block1": 6.0}}}))


def test_steps_table_aligns_dlio_lost_loads(tmp_path):
    write_dlio_output(tmp_path)
    s = outputs.steps_table(tmp_path)
    assert len(s) == 2 * (4 + 2 + 2 + 1)
    b2 = s[(s["rank"] == 0) & (s["epoch"] == 2) & (s["block"] == 2)]
    assert np.isnan(b2["load_s"].iloc[0]) and b2["load_s"].iloc[1] == 0.1
    assert (s[s["phase"] == "eval"]["step"] == 1).all()


def test_epochs_table_converts_dlio_samples_and_times(tmp_path):
    write_dlio_output(tmp_path)
    e = outputs.epochs_table(tmp_path, batch_size=2, ranks=2, per_sample=2,
                             bytes_per_dlio_sample=1e6, compute_mean_s=0.5, record_length=2**20)
    e1, e2 = e.iloc[0], e.iloc[1]
    assert (e1["steps"], e2["steps"]) == (4, 4)
    assert e1["train_s"] == pytest.approx(2.0) and e2["train_s"] == pytest.approx(2.0)
    assert e2["checkpoint_s"] == pytest.approx(0.5) and e2["eval_s"] == pytest.approx(0.4)
    assert e1["dlio_samples_per_s"] == 8.0 and e1["samples_per_s"] == 4.0  # 2 files per case
    assert e2["MBps"] == pytest.approx(12.0) and e2["dlio_io_MiBps"] == pytest.approx(12.0)
    assert e1["au_eq31"] == pytest.approx(4 * 0.5 / 2.0)  # Eq 3.2 over Eq 3.1
    assert e2["dlio_au_pct"] == 90.0


def test_missing_output_is_an_error_naming_the_log(tmp_path):
    with pytest.raises(outputs.OutputError, match="dlio.log"):
        outputs.epochs_table(tmp_path, 1, 1)


# ------------------------------------------------------------------ environment, not measured

def test_status_says_why_when_dlio_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_VENV", str(tmp_path / environment.VENV))
    s = environment.status()
    assert not s.ok and "make setup" in s.why
    (tmp_path / environment.VENV).mkdir()
    (tmp_path / environment.VENV / "UNAVAILABLE").write_text("this machine has glibc 2.31\n")
    s = environment.status()
    assert not s.ok and "glibc 2.31" in s.why


def test_run_without_dlio_is_not_measured_with_the_reason(unet3d_data, tmp_path, monkeypatch):
    monkeypatch.setattr(environment, "status",
                        lambda: environment.Status(False, "no DLIO on this box", None, tmp_path))
    r = dlio.run("unet3d", SECTIONS["unet3d"], 1, tmp_path / "out", compute_time_s=0.0,
                 data_dir=unet3d_data, batch_size=1, checkpoint_bytes=None, seed=1)
    assert r["status"] == "not measured" and r["why"] == "no DLIO on this box"
    assert r["row"]["status"] == "not measured" and r["epochs"].empty
    assert not (tmp_path / "out").exists()  # nothing was started


def test_bad_input_stops_before_any_work(unet3d_data, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="ranks = 0"):
        dlio.run("unet3d", SECTIONS["unet3d"], 0, out, data_dir=unet3d_data)
    with pytest.raises(ConfigError, match="workload = 'vgg'"):
        dlio.run("vgg", None, 1, out)
    with pytest.raises(ConfigError, match="missing"):
        dlio.run("unet3d", SECTIONS["unet3d"], 1, out, data_dir=tmp_path / "none", compute_time_s=0)
    assert not out.exists()


def test_dry_run_plan_writes_nothing_and_names_the_command(unet3d_data, tmp_path):
    p = runner.prepare("unet3d", SECTIONS["unet3d"], 2, tmp_path / "out", batch_size=1,
                       compute_time_s=0.1, data_dir=unet3d_data, checkpoint_bytes=None, seed=1,
                       dry_run=True)
    assert not (tmp_path / "out").exists()
    i = p.command.index(str(p.status.mpiexec))
    assert p.command[i + 1:i + 3] == ["-n", "2"] and "workload=unet3d_artifact" in p.command
    assert p.command[0].endswith("timeout") and p.env["DFTRACER_ENABLE"] == "0"
    assert p.logged_command()[-len(p.command):] == p.command


# ------------------------------------------------------------------ the bench's matching fio job

def test_fio_job_reads_the_same_files_with_dlio_request_sizes(unet3d_data, dlrm_data, tmp_path):
    b = built("unet3d", unet3d_data, G=1, B=1)
    view = dataset.make_view(dataset.facts("unet3d", unet3d_data), tmp_path / "u")
    j = bench.fio_job("unet3d", SimpleNamespace(built=b, data_folder=view, ranks=1), {})
    assert len(j["files"]) == 8 and "--rw=read" in j["args"]
    smallest = min(p.stat().st_size for p in (unet3d_data / "train").glob("*.npy"))
    bs = int(next(a for a in j["args"] if a.startswith("--bs=")).split("=")[1])
    assert bs % 4096 == 0 and bs <= max(4096, smallest)
    b = built("dlrm", dlrm_data, G=2, B=256)
    view = dataset.make_view(dataset.facts("dlrm", dlrm_data), tmp_path / "d")
    j = bench.fio_job("dlrm", SimpleNamespace(built=b, data_folder=view, ranks=2), {"row": {"steps": 4}})
    assert j["files"] == [str((dlrm_data / "train_data.bin").resolve())]
    assert "--rw=randread" in j["args"] and "--bs=4k" in j["args"]
    assert "--number_ios=512" in j["args"]  # 4 steps x 128 per rank, per fio job (one per rank)


def test_a_folder_that_is_not_a_run_is_never_emptied(tmp_path, monkeypatch):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "thesis.tex").write_text("keep")
    with pytest.raises(ConfigError, match="not a DLIO run folder"):
        runner._clear_run_folder(d)
    assert (d / "thesis.tex").exists()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "plan.json").write_text("{}")
    runner._clear_run_folder(tmp_path / "run")
    assert list((tmp_path / "run").iterdir()) == []


def test_execute_hands_the_logged_command_to_a_tracer(unet3d_data, tmp_path):
    import subprocess

    p = runner.prepare("unet3d", SECTIONS["unet3d"], 1, tmp_path / "out", batch_size=1,
                       compute_time_s=0.0, data_dir=unet3d_data, checkpoint_bytes=None, seed=1,
                       dry_run=True)
    p.out_dir.mkdir(parents=True)
    p.command = ["python3", "-c", "print('rank output')"]  # stands in for mpiexec ... DLIO

    class FakeTracer:
        def run(self, cmd, env=None, cwd=None):
            self.cmd = cmd
            return "a trace", subprocess.run(cmd, env=env, cwd=cwd).returncode

    t = FakeTracer()
    r = runner.execute(p, tracer=t)
    assert t.cmd[:2] == ["bash", "-c"] and t.cmd[-3:] == p.command
    assert (p.out_dir / "output.txt").read_text() == "rank output\n"
    assert r["trace"] == "a trace"
    # the command ran but wrote no DLIO output: not measured, and the reason names the file
    assert r["status"] == "not measured" and "summary.json" in r["why"]
    assert json.loads((p.out_dir / "result.json").read_text())["status"] == "not measured"


def test_real_checkpoint_size_comes_from_the_workload_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    assert runner.real_checkpoint_bytes("bert") is None  # the stage has not run
    from experiments.workloads.stage import checkpoint_facts

    (tmp_path / "results" / "bert").mkdir(parents=True)
    facts = checkpoint_facts([
        {"rank": 0, "checkpoints": [{"tag": "start", "bytes": 900}, {"tag": "end", "bytes": 1000}]},
        {"rank": 1, "checkpoints": [{"tag": "start", "bytes": 950}]},
        # a make decide purchase's rank: not what the replay's size comes from
        {"rank": 0, "made_by": "decide 1", "checkpoints": [{"tag": "end", "bytes": 5000}]}])
    (tmp_path / "results" / "bert" / "checkpoint.json").write_text(json.dumps(facts))
    assert runner.real_checkpoint_bytes("bert") == 1000
    (tmp_path / "results" / "bert" / "checkpoint.json").write_text(json.dumps(checkpoint_facts([{"rank": 0}])))
    assert runner.real_checkpoint_bytes("bert") is None   # a run that wrote no checkpoint


@pytest.mark.skipif(not environment.status().ok, reason=f"DLIO cannot run here: {environment.status().why}")
def test_reference_numbers_are_those_of_the_installed_dlio_configs():
    """reference.DLIO_COMPUTATION_TIME_S came from DLIO 2.0's workload configs: check them
    against the ones dlio-benchmark 2.0.0 ships (a check of our table, not of a paper)."""
    import yaml

    from experiments.settings import reference

    site = next(environment.venv_dir().glob("lib/python3*/site-packages/dlio_benchmark/configs/workload"))
    got = {k: yaml.safe_load((site / f"{name}.yaml").read_text())["train"]["computation_time"]
           for k, name in (("unet3d_v100_b4", "unet3d_v100"), ("bert_v100_b48", "bert_v100"),
                           ("dlrm", "dlrm"))}
    assert got == reference.DLIO_COMPUTATION_TIME_S
    u = yaml.safe_load((site / "unet3d_v100.yaml").read_text())
    assert (u["reader"]["batch_size"], u["dataset"]["num_files_train"]) == (4, 168)


def test_a_copy_of_the_project_finds_the_checkout_environment(tmp_path, monkeypatch):
    """The smoke pipeline runs in a copy (DLIO_ROOT) without .venv-dlio: DLIO's environment
    is then the one of the checkout whose package (and Python) runs."""
    monkeypatch.delenv("DLIO_VENV", raising=False)
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    mine = Path(__file__).resolve().parents[1] / environment.VENV
    if not (mine / "bin" / "dlio_benchmark").exists():
        pytest.skip(f"no {mine} in this checkout")
    assert environment.venv_dir() == mine


@pytest.mark.skipif(not environment.status().ok, reason=f"DLIO cannot run here: {environment.status().why}")
def test_dlio_starts_without_tensorflow_until_its_tensorboard_profiler_is_asked_for():
    """plugins/sitecustomize.py, in the environment the runner gives DLIO: its main module and
    PyTorch framework load without TensorFlow (DLIO's profiler factory imported it at load, for a
    profiler our runs never use); the stand-in ``TFProfiler`` loads DLIO's own module, and
    TensorFlow, when asked for, in the stand-in's place."""
    import subprocess

    status = environment.status()
    env, _ = runner._env(status, 1, 1)
    code = ("import sys, dlio_benchmark.main, dlio_benchmark.framework.torch_framework\n"
            "from dlio_benchmark.profiler.tf_profiler import TFProfiler\n"
            "print('tensorflow' in sys.modules)\n"
            "m = sys.modules['sitecustomize']._dlio_module()\n"
            "print('tensorflow' in sys.modules, m.TFProfiler.__module__,\n"
            "      sys.modules['dlio_benchmark.profiler.tf_profiler'] is m, TFProfiler is not m.TFProfiler)\n")
    got = subprocess.run([str(status.bin / "python"), "-c", code], env=env, capture_output=True, text=True,
                         timeout=900)
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split() == ["False", "True", "dlio_benchmark.profiler.tf_profiler", "True", "True"]


def test_with_compute_rewrites_computation_time_and_keeps_the_data(unet3d_data, tmp_path):
    """The traced comparison's DLIO side is prepared before its pass and given the pass's hour once
    the real side has run (experiments.workloads.hour_level): the config file says the new time."""
    import yaml

    p = runner.prepare("unet3d", SECTIONS["unet3d"], 1, tmp_path / "out", batch_size=1,
                       compute_time_s=0.1, data_dir=unet3d_data, checkpoint_bytes=None, seed=1, dry_run=True)
    model = tmp_path / "m.json"
    base = cm.thesis_v100()
    model.write_text(json.dumps(base))
    folder = p.data_folder
    runner.with_compute(p, str(model))
    want = cm.load(str(model)).mean_std("unet3d", 1, 1)[0]
    cfg = yaml.safe_load(p.config_file.read_text())
    assert cfg["train"]["computation_time"] == pytest.approx(want) != 0.1
    assert json.loads((p.out_dir / "plan.json").read_text())["compute_mean_s"] == pytest.approx(want)
    assert p.data_folder == folder
