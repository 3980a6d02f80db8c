"""Unit tests of the MLPerf workloads package on tiny inputs (no launch)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.settings import config
from experiments.settings.config import ConfigError
from experiments.workloads import data_bert, data_dlrm, data_unet3d, fits, settings, steptimer

ROOT = Path(__file__).resolve().parents[1]


def _cfg(name, **over):
    return config.validate(name, over)


# ------------------------------------------------------------------ bad input before launch

def test_batch_larger_than_data_set_is_refused():
    with pytest.raises(ConfigError, match=r"unet3d.*batch_sizes.*larger than the data set"):
        _cfg("unet3d", data={"train_cases": 8}, sweep={"batch_sizes": [8], "ranks": [1, 2]})
    with pytest.raises(ConfigError, match=r"dlrm.*batch_sizes.*train_samples = 100"):
        _cfg("dlrm", data={"train_samples": 100, "eval_samples": 1000},
             sweep={"batch_sizes": [512], "ranks": [1]})


def test_more_ranks_than_unet3d_files_is_refused():
    with pytest.raises(ConfigError, match=r"sweep.ranks.*train_cases = 2"):
        _cfg("unet3d", data={"train_cases": 2}, sweep={"batch_sizes": [1], "ranks": [1, 4]})


def test_cardinality_cap_zero_and_budget():
    with pytest.raises(ConfigError, match=r"dlrm.model.max_cardinality = 0.*>= 1"):
        _cfg("dlrm", model={"max_cardinality": 0})
    with pytest.raises(ConfigError, match=r"embedding_budget_mib"):
        _cfg("dlrm", model={"max_cardinality": 10_000_000, "embedding_dim": 128})
    m = settings.DlrmModel(max_cardinality=100, embedding_dim=4)
    assert max(m.table_rows()) == 100 and m.embedding_bytes() == sum(m.table_rows()) * 16


def test_crop_must_fit_the_smallest_case():
    with pytest.raises(ConfigError, match="model.crop"):
        _cfg("unet3d", data={"scale": 0.1}, model={"crop": 64})


def test_profiles_validate():
    from experiments.pipeline import profile
    for name in ("default", "smoke", "paper"):
        p = profile.render(name)
        for w in ("unet3d", "bert", "dlrm"):
            assert w in p


# ------------------------------------------------------------------ data generators

def test_dlrm_data_deterministic_and_in_range(tmp_path, digest):
    a = data_dlrm.generate(tmp_path / "a", settings.DlrmData(train_samples=70_000, eval_samples=10, workers=1), 5)
    data_dlrm.generate(tmp_path / "b", settings.DlrmData(train_samples=70_000, eval_samples=10, workers=2), 5)
    assert digest(tmp_path / "a") == digest(tmp_path / "b") and a["bytes"] == 70_010 * 160
    x = np.fromfile(tmp_path / "a" / "train_data.bin", dtype=np.int32).reshape(-1, 40)
    assert set(np.unique(x[:, 0])) <= {0, 1} and (x[:, 1:14] >= 0).all()
    card = np.array(settings.CRITEO_CARDINALITIES)
    assert (x[:, 14:] >= 0).all() and (x[:, 14:] < card).all()
    assert not (tmp_path / "a.partial").exists()


def test_bert_data_identical_across_processes(tmp_path, digest):
    """Two generations in separate interpreters (different hash seeds, worker counts) write the
    same bytes: the TFRecord examples are serialized with a fixed map order."""
    code = ("import sys; from pathlib import Path; from experiments.workloads import data_bert, settings; "
            "data_bert.generate(Path(sys.argv[1]), settings.BertData(files=2, samples_per_file=8, eval_samples=4, "
            "seq_len=32, max_predictions=4, vocab_size=256, workers=int(sys.argv[2])), 3)")
    for name, hash_seed, workers in (("a", "1", "1"), ("b", "2", "2")):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / name), workers], check=True, cwd=ROOT,
                       env={**os.environ, "PYTHONHASHSEED": hash_seed, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert digest(tmp_path / "a") == digest(tmp_path / "b")


def test_unet3d_cases(tmp_path):
    cfg = settings.Unet3dData(train_cases=3, eval_cases=2, scale=0.1, workers=1)
    data_unet3d.generate(tmp_path / "u", cfg, 1)
    m = data_unet3d.read_manifest(tmp_path / "u")
    assert len(m) == 5 and set(m["split"]) == {"train", "eval"}
    names = [p.rsplit("/", 1)[1] for p in m["path_x"]]
    assert len(set(names)) == len(names)  # no clash between training and evaluation cases
    x = np.load(tmp_path / "u" / m["path_x"][0])
    y = np.load(tmp_path / "u" / m["path_y"][0])
    assert x.dtype == np.float32 and y.dtype == np.uint8 and x.shape == y.shape
    assert x.shape[0] == 1 and x.shape[2] == x.shape[3]
    assert x.min() >= data_unet3d.IMAGE_RANGE[0] and x.max() <= data_unet3d.IMAGE_RANGE[1]
    assert set(np.unique(y)) <= {0, 1, 2}
    x2, _ = data_unet3d.make_case(1, int(m["case"][0]), 0.1)
    assert np.array_equal(x, x2)


def test_unet3d_paper_scale_mean_size():
    sizes = [np.prod(data_unet3d.case_shape(0, i, 1.0)) * 4 / 1e6 for i in range(300)]
    assert 95 < np.mean(sizes) < 140  # the thesis: 117 MB on average


def test_bert_example_is_valid():
    rng = np.random.default_rng(0)
    for _ in range(20):
        e = data_bert.make_example_arrays(rng, 128, 20, 500)
        assert len(e) == 7 and e["input_ids"].shape == (128,) and e["masked_lm_ids"].shape == (20,)
        assert (e["input_ids"] >= 0).all() and (e["input_ids"] < 500).all()
        k = int(e["masked_lm_weights"].sum())
        pos = e["masked_lm_positions"][:k]
        assert k >= 1 and (np.diff(pos) > 0).all() and (pos < e["input_mask"].sum()).all()
        assert (e["masked_lm_ids"][:k] < 500).all() and e["next_sentence_labels"][0] in (0, 1)


# ------------------------------------------------------------------ instrumentation

def test_app_log_format_and_intervals(tmp_path):
    log = steptimer.AppLog(tmp_path / "app-r0.jsonl", 0, "dlrm")
    with log.phase("train", epoch=0):
        pass
    log.event("checkpoint", "begin")
    log.event("checkpoint", "end")
    log.close()
    lines = (tmp_path / "app-r0.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    assert [r["event"] for r in recs] == ["begin", "end", "begin", "end"]
    assert all(set(r) >= {"ts", "rank", "phase", "event"} and r["ts"] > 1.6e9 for r in recs)
    iv = steptimer.phase_intervals(recs)
    assert [i["phase"] for i in iv] == ["train", "checkpoint"] and all(i["seconds"] >= 0 for i in iv)
    with pytest.raises(ValueError):
        log2 = steptimer.AppLog(tmp_path / "x.jsonl", 0, "dlrm")
        log2.event("lunch", "begin")


def test_step_timer_parts_add_up():
    import time
    t = steptimer.StepTimer()
    t.start_wait()
    time.sleep(0.01)
    t.got_batch()
    time.sleep(0.005)
    t.mark("forward_ns")
    time.sleep(0.005)
    t.mark("backward_ns")
    r = t.end_step(epoch=0, step=0)
    assert r["data_ns"] >= 1e7 and r["step_ns"] == r["data_ns"] + r["compute_ns"]
    assert r["compute_ns"] >= r["forward_ns"] + r["backward_ns"] and r["loss_ns"] == 0


# ------------------------------------------------------------------ the one rank loop

def _run(tmp_path, **extra):
    return {"workload": "dlrm", "batch_size": 4, "seed": 7, "run_dir": str(tmp_path),
            "checkpoint_dir": str(tmp_path / "ck"), "config": {"train": {"threads_per_rank": 3}}, **extra}


def test_rank_loop_records_one_set_of_columns_for_real_and_sleep_steps(tmp_path):
    from experiments.workloads import loop, step_compute

    sleep = step_compute.SleepStep(mean_s=0.001, std_s=0.0, seed=1)
    cols = []
    for name, step in (("real", lambda b, t: {"loss": float(b)}), ("sleep", loop.slept(sleep))):
        d = tmp_path / name
        d.mkdir()
        lp = loop.RankLoop(_run(d), 0, 1)
        with lp.phase("train", epoch=0):
            lp.steps(((k, {"vfs_ns": 5}) for k in range(3)), step, first_step=2, epoch=0)
        lp.checkpoint(lambda **key: {"bytes": 1, "seconds": 0.0}, step=4)
        lp.checkpoint(lambda **key: None, step=5)          # this rank wrote nothing: no fact
        lp.finish()
        st = pd.read_csv(d / "steps-r0.csv")
        cols.append(list(st.columns))
        assert list(st["step"]) == [2, 3, 4] and (st["samples"] == 4).all() and (st["vfs_ns"] == 5).all()
        facts = json.loads((d / "rank-r0.json").read_text())
        assert facts["checkpoints"] == [{"step": 4, "bytes": 1, "seconds": 0.0}] and facts["pid"] == os.getpid()
        assert facts["compute"] == {"mode": "real"} and "train" in facts["phase_usage"]
        phases = [r["phase"] for r in steptimer.read_app_log(d / "app-r0.jsonl")]
        assert phases == ["train", "train", "checkpoint", "checkpoint", "checkpoint", "checkpoint"]
        if name == "real":
            assert st["sleep_drawn_ns"].isna().all() and list(st["loss"]) == [0.0, 1.0, 2.0]
        else:
            assert (st["sleep_drawn_ns"] == 1_000_000).all() and st["loss"].isna().all()
            assert (st["sleep_ns"] >= st["sleep_drawn_ns"]).all()
    assert cols[0] == cols[1]


def test_rank_loop_emulation_and_threads(tmp_path):
    from experiments.workloads import loop

    assert not loop.emulated(_run(tmp_path)) and loop.emulated(_run(tmp_path, emulator={"sync_steps": True}))
    assert loop.threads_per_rank(_run(tmp_path), 2) == 3
    c = {"mode": "sleep", "mean_s": 0.1, "std_s": 0.0}
    assert loop.sleep_step(_run(tmp_path, compute=c), barrier=print).barrier is print
    nosync = _run(tmp_path, compute=c, emulator={"sync_steps": False})
    assert loop.sleep_step(nosync, barrier=print).barrier is None
    assert loop.sleep_step(_run(tmp_path), barrier=print) is None          # compute: real
    save = lambda **key: {"saved": True}  # noqa: E731
    assert loop.checkpointer(_run(tmp_path), 0, save) is save
    (tmp_path / "p.json").write_text(json.dumps({"schema": "checkpoint-pattern/1", "workloads": {"dlrm": {
        "writers": "rank0", "reuse": "overwrite", "files": [{"name": "a.pt", "writes": [["write", 10, 2]]}]}}}))
    em = _run(tmp_path, emulator={"checkpoint_pattern": str(tmp_path / "p.json")})
    from experiments.emulator.checkpoint import replayer   # the emulator passes its replay in
    got = loop.checkpointer(em, 0, save, replayer)(step=3)
    assert got["writes"] == 2 and got["bytes"] == 20 and (tmp_path / "ck" / "a.pt").stat().st_size == 20
    assert loop.checkpointer(em, 1, save, replayer)(step=3) is None        # rank 1 does not write
    with pytest.raises(RuntimeError, match="no checkpoint replay was passed in"):
        loop.checkpointer(em, 0, save)


def test_the_emulator_runs_the_workloads_programs():
    from importlib import import_module

    from experiments.emulator import rank
    for w, mod in rank.PROGRAMS.items():
        assert callable(import_module(f"experiments.workloads.{mod}").main), w


# ------------------------------------------------------------------ fits

def _steps(workload, G, B, times, epochs=1):
    rows = []
    for e in range(epochs):
        for i, c in enumerate(times):
            rows.append({"workload": workload, "ranks": G, "batch_size": B, "repeat": 0, "rank": 0,
                         "epoch": e, "step": i, "samples": B, "data_ns": 1000, "compute_ns": int(c * 1e9),
                         "step_ns": int(c * 1e9) + 1000})
    return rows


def test_steady_drops_first_steps_and_unet3d_first_epoch():
    d = pd.DataFrame(_steps("unet3d", 1, 1, [1, 2, 3], epochs=2) + _steps("dlrm", 1, 1, [1, 2, 3], epochs=1))
    s = fits.steady(d)
    assert len(s[s["workload"] == "unet3d"]) == 2 and (s[s["workload"] == "unet3d"]["epoch"] == 1).all()
    assert list(s[s["workload"] == "dlrm"]["step"]) == [1, 2]


def test_ols_recovers_a_linear_model():
    rng = np.random.default_rng(0)
    rows = []
    for G in (1, 2, 4):
        for B in (1, 2, 4, 8):
            mu = 0.01 * G + 0.1 * B + 0.05
            rows += _steps("bert", G, B, [0] + list(rng.normal(mu, 0.001, 200)))
    nf = fits.normal_fits(pd.DataFrame(rows))
    m = fits.fit_models(nf)["bert"]["mean"]
    assert m["r2"] > 0.99 and abs(m["coef"]["B"] - 0.1) < 0.005 and abs(m["coef"]["G"] - 0.01) < 0.005
    lo, hi = m["ci95"]["B"]
    assert lo < 0.1 < hi
    single_g = fits.ols(nf[nf["ranks"] == 1], "mean_s")
    assert single_g["coef"]["G"] == 0 and single_g["regressors"] == ["B"]


# ------------------------------------------------------------------ models and loaders (torch)

def test_dlrm_model_and_reader(tmp_path):
    torch = pytest.importorskip("torch")
    from experiments.workloads import dlrm
    data_dlrm.generate(tmp_path / "d", settings.DlrmData(train_samples=1000, eval_samples=10, workers=1), 1)
    log = steptimer.LoaderLog()
    r = dlrm.BatchReader(tmp_path / "d", "train", 50, 1, log)
    dense, cat, y, vfs, prep = r.read(64, rank=1, world=2)
    assert dense.shape == (32, 13) and cat.shape == (32, 26) and int(cat.max()) < 50
    assert len(log.rows) == 1 and log.rows[0]["bytes"] == 64 * 160
    m = dlrm.build_model({"embedding_dim": 4, "bottom_mlp": [8], "top_mlp": [8], "max_cardinality": 50})
    out = m(dense, cat)
    assert out.shape == (32,) and torch.isfinite(out).all()


def test_unet3d_model_window_and_sampler_split(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler
    from experiments.workloads import unet3d
    net = unet3d.build_model(2, 2)
    x = torch.randn(2, 1, 8, 8, 8)
    y = (torch.rand(2, 1, 8, 8, 8) > 0.5).to(torch.uint8)
    out = net(x)
    assert out.shape == (2, unet3d.N_CLASSES, 8, 8, 8) and float(unet3d.dice_ce_loss(out, y)) > 0
    with torch.no_grad():
        w = unet3d.sliding_window(net, torch.randn(1, 1, 10, 13, 13), 8, 0.5)
    assert w.shape == (1, unet3d.N_CLASSES, 10, 13, 13)
    # The same seed on every rank: the ranks' files are disjoint and cover the data set.
    ds = list(range(10))
    parts = [list(DistributedSampler(ds, num_replicas=2, rank=r, shuffle=True, seed=7, drop_last=True))
             for r in range(2)]
    assert not set(parts[0]) & set(parts[1]) and len(set(parts[0]) | set(parts[1])) == 10


def test_unet3d_dataset_augments_and_logs(tmp_path):
    pytest.importorskip("torch")
    from experiments.workloads import unet3d
    data_unet3d.generate(tmp_path / "u", settings.Unet3dData(train_cases=2, eval_cases=1, scale=0.1, workers=1), 1)
    ds = unet3d.CaseDataset(tmp_path / "u", "train", 8, 1, tmp_path, 0)
    x, y = ds[0]
    assert tuple(x.shape) == (1, 8, 8, 8) and tuple(y.shape) == (1, 8, 8, 8)
    lines = [json.loads(l) for f in tmp_path.glob("loader-r0-*.jsonl") for l in f.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["vfs_ns"] > 0 and lines[0]["prep_ns"] > 0


def test_one_torch_rank_runs_without_the_torchrun_agent(tmp_path):
    """G = 1 starts the rank program itself (torchrun's agent imports torch first: ~3 s a
    start); G > 1 goes through torchrun. The program's process group comes from the same
    environment variables either way (experiments.workloads.rank.setup_torch)."""
    from experiments.workloads import launch

    one, two = launch.command("dlrm", 1, tmp_path), launch.command("dlrm", 2, tmp_path)
    assert one == [sys.executable, "-m", "experiments.workloads.dlrm", str(tmp_path)]
    assert two[1:3] == ["-m", "torch.distributed.run"] and "--nproc_per_node=2" in two
    assert two[-3:] == one[-3:]
