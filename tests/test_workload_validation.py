"""Unit tests of the sleep and generated-data rows on tiny inputs: the sleep strategy, the
random-content generators, the data sets' size checks, the plans' bad-input errors, accelerator
utilization and the validation claims (no launch)."""

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import math

import numpy as np
import pandas as pd
import pytest

from experiments import claims
from experiments.statistics import stats
from experiments.settings import config
from experiments.settings.config import ConfigError
from experiments.workloads import (compute_model as cm, data_bert, data_dlrm, data_unet3d, datasets, plots,
                                   intervals as iv, report, settings, step_compute, steptimer, validation)


def _model_file(path, workloads=("unet3d", "bert", "dlrm"), mean=(0.0, 0.01, 0.02), std=0.002, **extra):
    G, B, c = mean
    path.write_text(json.dumps({"schema": cm.SCHEMA, "host": "test", **extra, "workloads": {
        w: {"mean": {"coef": {"G": G, "B": B, "c": c}}, "std": {"coef": {"G": 0, "B": 0, "c": std}}}
        for w in workloads}}))
    return path


# ------------------------------------------------------------------ the sleep strategy

def test_sleep_step_sleeps_the_drawn_time_and_marks_it():
    s = step_compute.SleepStep(mean_s=0.02, std_s=0.0, seed=1, barrier=lambda: time.sleep(0.005))
    t = steptimer.StepTimer()
    t.start_wait()
    t.got_batch()
    drawn = s(t)
    row = t.end_step(step=0)
    assert drawn == 0.02
    assert 0.019e9 <= row["sleep_ns"] < 0.05e9 and 0.004e9 <= row["allreduce_ns"] < 0.05e9
    assert row["compute_ns"] >= row["sleep_ns"] + row["allreduce_ns"] and row["forward_ns"] == 0


def test_sleep_draws_follow_the_model_floored_at_zero():
    s = step_compute.SleepStep(mean_s=0.001, std_s=0.002, seed=3)
    x = np.array([s.draw() for _ in range(5000)])
    assert (x >= 0).all() and (x == 0).mean() > 0.2        # N(1 ms, 2 ms) is often negative
    s = step_compute.SleepStep(mean_s=0.5, std_s=0.05, seed=3, eval_mean_s=2.0, eval_std_s=0.0)
    x = np.array([s.draw() for _ in range(4000)])
    assert x.mean() == pytest.approx(0.5, rel=0.01) and x.std() == pytest.approx(0.05, rel=0.1)
    assert s.draw(evaluation=True) == 2.0


def test_sleep_does_not_burn_cpu():
    s = step_compute.SleepStep(mean_s=0.2, std_s=0.0, seed=0)
    c0, w0 = time.process_time(), time.perf_counter()
    s()
    assert time.perf_counter() - w0 >= 0.2 and time.process_time() - c0 < 0.05


def test_from_run_reads_run_json_and_refuses_unknown_modes():
    assert step_compute.from_run({"seed": 1}) is None
    assert step_compute.from_run({"seed": 1, "compute": {"mode": "real"}}) is None
    s = step_compute.from_run({"seed": 1, "compute": {"mode": "sleep", "mean_s": 0.3, "std_s": 0.0,
                                                      "eval_mean_s": 1.5, "eval_std_s": 0.0}}, seed_offset=1)
    assert s.draw() == 0.3 and s.draw(evaluation=True) == 1.5
    run = {"seed": 1, "compute": {"mode": "sleep", "mean_s": 1, "std_s": 1}}
    a, b = step_compute.from_run(run), step_compute.from_run(run)
    assert [a.draw() for _ in range(5)] == [b.draw() for _ in range(5)]   # ranks share their draws
    assert a.draw() != step_compute.from_run(run, seed_offset=1).draw()
    with pytest.raises(ValueError, match="compute.mode = 'gpu'"):
        step_compute.from_run({"seed": 1, "compute": {"mode": "gpu"}})


def test_app_log_adds_up_cpu_and_wall_per_phase(tmp_path):
    log = steptimer.AppLog(tmp_path / "a.jsonl", 0, "dlrm")
    with log.phase("train"):
        time.sleep(0.05)
    u = log.usage()["train"]
    assert u["wall_s"] >= 0.05 and u["cpu_s"] < 0.03


def test_run_facts_resolve_the_model_and_the_eval_step(tmp_path):
    m = cm.load(_model_file(tmp_path / "m.json", unet3d_eval={"mean_s": 1.7, "std_s": 0.6}))
    f = m.run_facts("unet3d", 2, 4)
    assert f["mode"] == "sleep" and f["mean_s"] == pytest.approx(0.06) and f["std_s"] == pytest.approx(0.002)
    assert (f["eval_mean_s"], f["eval_std_s"], f["eval_from"]) == (1.7, 0.6, "eval")
    assert m.run_facts("bert", 1, 1)["eval_from"] == "train"
    v = cm.load("thesis-v100").run_facts("unet3d", 8, 4)
    assert v["eval_mean_s"] == 8.403 and v["eval_std_s"] == 4.442
    assert "eval_s_per_MB" not in v and "eval_s_per_MB" not in f


def test_per_mb_and_zero_evaluation_reach_the_sleep_step(tmp_path):
    m = cm.load(_model_file(tmp_path / "m.json", unet3d_eval={"mean_s": 1.7, "std_s": 0.0,
                                                             "s_per_MB": 0.5, "intercept_s": 0.1}))
    f = m.run_facts("unet3d", 2, 4)
    assert (f["eval_s_per_MB"], f["eval_intercept_s"]) == (0.5, 0.1)
    s = step_compute.from_run({"seed": 1, "compute": f})
    assert s.draw(evaluation=True, mb=4.0) == pytest.approx(2.1)   # 0.1 + 0.5 x 4 MB
    assert s.draw(evaluation=True) == 1.7                          # no size: the mean
    z = step_compute.from_run({"seed": 1, "compute": cm.resolve("zero", "unet3d", 8, 4)})
    assert z.draw() == 0 and z.draw(evaluation=True, mb=100.0) == 0


def test_the_compute_model_file_is_read_by_one_function():
    """Every consumer gets the resolved numbers from run.json or through ``compute_model.load``."""
    import re
    root = Path(cm.__file__).parents[1]
    readers = []
    for f in root.rglob("*.py"):
        src = f.read_text()
        for m in re.finditer(r"(fit_file\(\)|compute_model\.json|unet3d_eval)", src):
            line = src[:m.start()].count("\n") + 1
            readers.append(f"{f.relative_to(root)}:{line}")
    # fit_file() is defined and used by load(); unet3d_eval is written by fits.py and read by the model;
    # the stage registry names the file as its stages' dvc.yaml input (a path, never opened there):
    # in stages.py and in a measuring module's own entry (STAGE = Stage(...))
    from experiments import stages

    allowed = {"workloads/compute_model.py", "workloads/fits.py", "stages.py",
               *(s.module.split(".", 1)[1].replace(".", "/") + ".py" for s in stages.STAGES if s.module)}
    assert {r.split(":")[0] for r in readers} <= allowed, readers


# ------------------------------------------------------------------ random content and sizes

def test_unet3d_random_content_same_sizes_other_bytes_no_structure(tmp_path):
    from scipy import ndimage
    cfg = settings.Unet3dData(train_cases=2, eval_cases=1, scale=0.1, workers=1)
    a = data_unet3d.generate(tmp_path / "u", cfg, 4)
    b = data_unet3d.generate(tmp_path / "r", cfg.model_copy(update={"content": "random"}), 4)
    assert datasets.file_sizes(tmp_path / "u") == datasets.file_sizes(tmp_path / "r")
    assert datasets.digest(tmp_path / "u") != datasets.digest(tmp_path / "r")
    assert a["bytes"] == b["bytes"] == a["planned_bytes"]
    for folder, most in (("u", 3), ("r", None)):
        m = data_unet3d.read_manifest(tmp_path / folder, "train")
        x, y = np.load(tmp_path / folder / m["path_x"][0]), np.load(tmp_path / folder / m["path_y"][0])
        assert x.dtype == np.float32 and y.dtype == np.uint8 and set(np.unique(y)) <= {0, 1, 2}
        assert data_unet3d.IMAGE_RANGE[0] <= x.min() and x.max() <= data_unet3d.IMAGE_RANGE[1]
        n = ndimage.label(y == 1)[1]
        assert (n <= most) if most else n > 100   # kidneys: a few objects; random: many


def test_dlrm_random_content_in_range(tmp_path):
    cfg = settings.DlrmData(train_samples=1000, eval_samples=10, workers=1, content="random")
    data_dlrm.generate(tmp_path / "r", cfg, 2)
    data_dlrm.generate(tmp_path / "u", cfg.model_copy(update={"content": "realistic"}), 2)
    assert datasets.file_sizes(tmp_path / "u") == datasets.file_sizes(tmp_path / "r")
    x = np.fromfile(tmp_path / "r" / "train_data.bin", dtype=np.int32).reshape(-1, 40)
    u = np.fromfile(tmp_path / "u" / "train_data.bin", dtype=np.int32).reshape(-1, 40)
    assert set(np.unique(x[:, 0])) == {0, 1} and (x[:, 1:14] >= 0).all()
    assert (x[:, 14:] < np.array(data_dlrm.CRITEO_CARDINALITIES)).all()
    assert 0.4 < x[:, 0].mean() < 0.6 and u[:, 0].mean() < 0.35      # no click skew
    assert np.median(x[:, 1:14]) > 1000 * np.median(u[:, 1:14])      # no log-normal counts


def test_bert_randomize_keeps_every_varint_length():
    rng, scr = np.random.default_rng(0), np.random.default_rng(1)
    for _ in range(50):
        a = data_bert.make_example_arrays(rng, 64, 8, 1024)
        b = data_bert.randomize(a, scr, 64, 1024)
        for k in data_bert.FIELD_RANGES:
            la, _ = data_bert._varint_bounds(a[k])
            lb, _ = data_bert._varint_bounds(b[k])
            assert (la == lb).all(), k
        assert (b["input_ids"] < 1024).all() and (b["masked_lm_positions"] < 64).all()
        assert set(np.unique(b["input_mask"])) <= {0, 1} and b["masked_lm_weights"].dtype == np.float32
    assert not np.array_equal(a["input_ids"], b["input_ids"])


def test_bert_random_files_have_the_realistic_sizes(tmp_path):
    pytest.importorskip("tensorflow")
    cfg = settings.BertData(files=1, samples_per_file=20, eval_samples=2, seq_len=64, max_predictions=8,
                            vocab_size=1024, workers=1)
    a = data_bert.generate(tmp_path / "u", cfg, 3)
    data_bert.generate(tmp_path / "r", cfg.model_copy(update={"content": "random"}), 3)
    assert datasets.file_sizes(tmp_path / "u") == datasets.file_sizes(tmp_path / "r")
    assert datasets.digest(tmp_path / "u") != datasets.digest(tmp_path / "r")
    assert a["bytes"] <= a["planned_bytes"] < 2 * a["bytes"]           # an upper bound, not far off


def test_generator_refuses_a_data_set_that_does_not_fit(tmp_path, monkeypatch):
    import experiments.host.tiers as tiers
    real = os.statvfs

    def small(p):
        s = real(p)
        return SimpleNamespace(f_bavail=1000, f_frsize=4096, f_blocks=s.f_blocks)
    monkeypatch.setattr(tiers.os, "statvfs", small)
    cfg = settings.DlrmData(train_samples=100_000, eval_samples=10, workers=1)
    with pytest.raises(ConfigError, match=r"dlrm data set.*needs 0.02 GB.*0.00 GB are free.*dlrm.data.train_samples"):
        data_dlrm.generate(tmp_path / "d", cfg, 1)
    assert not (tmp_path / "d").exists() and not (tmp_path / "d.partial").exists()


def test_a_dead_generation_leaves_only_its_partial_folder(tmp_path):
    (tmp_path / "d.partial").mkdir()
    (tmp_path / "d.partial" / "junk").write_bytes(b"x" * 10)
    data_dlrm.generate(tmp_path / "d", settings.DlrmData(train_samples=10, eval_samples=10, workers=1), 1)
    assert not (tmp_path / "d.partial").exists() and (tmp_path / "d" / "train_data.bin").stat().st_size == 1600


# ------------------------------------------------------------------ UNET3D loader variants

def test_balanced_crop_finds_the_foreground_and_keeps_the_patch():
    pytest.importorskip("scipy")
    from experiments.workloads import unet3d
    x, y = data_unet3d.make_case(1, 0, 0.15)
    rng = np.random.default_rng(0)
    fg = 0
    for _ in range(20):
        a, b = unet3d.balanced_crop(x, y, 16, rng, oversampling=1.0)
        assert a.shape == b.shape == (1, 16, 16, 16)
        fg += bool((b > 0).any())
    assert fg == 20                                       # every foreground crop holds foreground
    a, _ = unet3d.random_crop(x, y, 16, rng)
    assert a.shape == (1, 16, 16, 16)


def test_dataset_preprocessing_modes(tmp_path):
    pytest.importorskip("torch")
    from experiments.workloads import unet3d
    data_unet3d.generate(tmp_path / "u", settings.Unet3dData(train_cases=2, eval_cases=1, scale=0.1, workers=1), 1)
    for mode, lo in (("none", 0.0), ("sleep", 0.05)):
        run = tmp_path / mode
        run.mkdir()
        ds = unet3d.CaseDataset(tmp_path / "u", "train", 8, 1, run, 0, preprocessing=mode, prep_sleep_s=0.05)
        x, y = ds[0]
        assert tuple(x.shape) == (1, 8, 8, 8)
        rec = json.loads(next(run.glob("loader-r0-*.jsonl")).read_text().splitlines()[0])
        assert lo * 1e9 <= rec["prep_ns"] < lo * 1e9 + 0.05e9
    with pytest.raises(ValueError, match="preprocessing = 'fast'"):
        unet3d.CaseDataset(tmp_path / "u", "train", 8, 1, tmp_path, 0, preprocessing="fast")


# ------------------------------------------------------------------ plans: bad input before any run

def _cfg(tmp_path, model: str, **sleep):
    return SimpleNamespace(
        workload_sleep=settings.WorkloadSleepConfig(compute_model=model, **sleep),
        workload_random=settings.WorkloadRandomConfig(**{k: v for k, v in sleep.items() if k in ("ranks", "batch_sizes", "workloads")}),
        unet3d=settings.Unet3dConfig(), bert=settings.BertConfig(), dlrm=settings.DlrmConfig())


@pytest.fixture
def no_launch(monkeypatch):
    from experiments.workloads import launch
    monkeypatch.setattr(launch, "run_config", lambda *a, **k: pytest.fail("a run started"))


def test_sleep_plan_names_missing_file(tmp_path, no_launch):
    with pytest.raises(ConfigError, match=r"compute model .*nope\.json: no such file"):
        validation.sleep_plan(_cfg(tmp_path, str(tmp_path / "nope.json")))


def test_sleep_plan_names_wrong_schema(tmp_path, no_launch):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"schema": "compute-model/9", "workloads": {}}))
    with pytest.raises(ConfigError, match=r"m\.json: schema = 'compute-model/9'"):
        validation.sleep_plan(_cfg(tmp_path, str(f)))


def test_sleep_plan_names_the_missing_workload(tmp_path, no_launch):
    f = _model_file(tmp_path / "m.json", workloads=("unet3d", "dlrm"))
    with pytest.raises(ConfigError, match=r"m\.json: no entry for workload 'bert' under 'workloads'"):
        validation.sleep_plan(_cfg(tmp_path, str(f), fig_a3={"modes": []}))


def test_sleep_plan_subset_and_fig_a3(tmp_path, no_launch):
    f = _model_file(tmp_path / "m.json")
    jobs = validation.sleep_plan(_cfg(tmp_path, str(f), ranks=[2], batch_sizes="ends",
                                      fig_a3={"prep_sleep_s": 0.01}))
    # each sleep row with the real runs beside it, at its own grid (validation.BESIDE)
    assert [(j.workload, j.variant) for j in jobs] == [
        ("unet3d", "sleep"), ("unet3d", "real"), ("unet3d", "prep-none"), ("unet3d", "prep-sleep"),
        ("bert", "sleep"), ("bert", "real"), ("dlrm", "sleep"), ("dlrm", "real")]
    assert jobs[0].grid == jobs[1].grid == ([2], [1, 4]) and jobs[-1].grid == ([2], [512, 8192])
    slept = [j for j in jobs if j.variant != "real"]
    assert all(j.cfg.train.compute == "sleep" and j.cfg.train.compute_model == str(f) for j in slept)
    assert all(j.cfg.train.compute == "real" and j.compute_model is None and j.folder == slept[0].folder
               for j in jobs if j.variant == "real" and j.workload == "unet3d")
    assert jobs[3].cfg.train.preprocessing == "sleep" and jobs[3].cfg.train.prep_sleep_s == 0.01
    loader = pd.DataFrame({"split": "train", "epoch": [0, 1, 1, 1], "prep_ns": [9e9, 1e6, 2e6, 3e6]})
    prep = validation.prep_facts(loader)
    assert prep["prep_s"] == pytest.approx(0.002)                     # median, first epoch left out
    auto = validation.sleep_plan(_cfg(tmp_path, str(f)), prep["prep_s"])
    assert auto[3].cfg.train.prep_sleep_s == pytest.approx(0.002)
    assert validation.prep_facts(loader.assign(split="eval"))["prep_s"] is None   # no training samples
    with pytest.raises(ConfigError, match="fig_a3.prep_sleep_s = None"):
        validation.sleep_plan(_cfg(tmp_path, str(f)))
    one = validation.sleep_plan(_cfg(tmp_path, str(f), fig_a3={"ranks": [1], "modes": ["none"]}))
    assert [(j.variant, j.grid[0]) for j in one if j.workload == "unet3d"] == [("sleep", [1, 2]), ("real", [1, 2]),
                                                                            ("prep-none", [1])]
    with pytest.raises(ConfigError, match=r"fig_a3.ranks = \[4\]"):
        validation.sleep_plan(_cfg(tmp_path, str(f), fig_a3={"ranks": [4], "modes": ["none"]}))


def test_subset_must_be_inside_the_real_sweep(tmp_path, no_launch):
    f = _model_file(tmp_path / "m.json")
    with pytest.raises(ConfigError, match=r"workload_sleep.ranks = \[4\].*\[4\] not in the real sweep"):
        validation.sleep_plan(_cfg(tmp_path, str(f), ranks=[4], fig_a3={"modes": []}))
    with pytest.raises(ConfigError, match="workload_random.ranks"):
        validation.random_plan(_cfg(tmp_path, str(f), ranks=[3]))


def test_random_plan_refuses_sleep_compute(tmp_path):
    c = _cfg(tmp_path, "fit")
    c.dlrm = settings.DlrmConfig(train=settings.DlrmTrain(compute="sleep"))
    with pytest.raises(ConfigError, match="dlrm.train.compute = 'sleep'"):
        validation.random_plan(c)


def test_random_generation_refuses_a_missing_realistic_set(tmp_path, monkeypatch):
    """Nothing is generated when a realistic set to compare with is missing (it compared with
    nothing and failed its check when workload_random ran before workload_data)."""
    from experiments.workloads import stage

    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    monkeypatch.setattr(stage, "generate", lambda *a, **k: pytest.fail("a data set was generated"))
    with pytest.raises(ConfigError, match=r"unet3d's realistic data set .*data/unet3d is missing.*workload_data"):
        validation.generate_random(_cfg(tmp_path, "fit", workloads=["unet3d"]), 1)


def test_sections_validate_through_config():
    with pytest.raises(ConfigError, match="workload_sleep.batch_sizes"):
        config.validate("workload_sleep", {"batch_sizes": "middle"})
    with pytest.raises(ConfigError, match="unet3d.train.compute"):
        config.validate("unet3d", {"train": {"compute": "gpu"}})
    with pytest.raises(ConfigError, match="bert.data.content"):
        config.validate("bert", {"data": {"content": "zeros"}})


# ------------------------------------------------------------------ accelerator utilization

def test_utilization_eq_31_32_per_run(tmp_path):
    m = cm.load(_model_file(tmp_path / "m.json", mean=(0.0, 0.1, 0.0)))
    steps = pd.DataFrame([{"row": "sleep", "workload": w, "variant": "sleep", "ranks": 2, "batch_size": 4,
                           "repeat": 0, "rank": r, "step": i} for w in ("unet3d", "dlrm") for r in (0, 1)
                          for i in range(10)])
    phases = pd.DataFrame([{"workload": w, "variant": "sleep", "ranks": 2, "batch_size": 4, "repeat": 0,
                            "rank": r, "phase": ph, "seconds": s}
                           for w in ("unet3d", "dlrm") for r, s in ((0, 4.0), (1, 5.0))
                           for ph in ("train", "eval")])
    steps = steps.assign(epoch=0, data_ns=np.where(steps["step"] == 0, 10**9, 10**7), allreduce_ns=10**6)
    au = validation.utilization(steps, phases, m).set_index("workload")
    # 10 steps x 0.4 s (mean at B=4) over the slowest rank's 5 s of training; eval left out
    assert au.loc["unet3d", "ideal_s"] == pytest.approx(4.0) and au.loc["unet3d", "au"] == pytest.approx(0.8)
    assert au.loc["unet3d", "data_wait_s"] == pytest.approx(1.09) and au.loc["unet3d", "epoch_start_wait_s"] == 1.0
    assert au.loc["unet3d", "barrier_s"] == pytest.approx(0.01)
    assert au.loc["dlrm", "ideal_s"] == pytest.approx(4.0) and not au.loc["dlrm", "pass"]


# ------------------------------------------------------------------ claims

def _summary(rows):
    base = {"data_s": 0.01, "data_s_q1": 0.005, "data_s_q3": 0.02, "vfs_s": 0.002, "vfs_s_q1": 0.001,
            "vfs_s_q3": 0.003, "vfs_sps": 500.0, "vfs_sps_q1": 300.0, "vfs_sps_q3": 900.0, "prep_s": 0.01,
            "prep_s_q3": 0.02, "compute_s": 0.1, "compute_sps": 10.0, "data_share": 0.05, "step_s": 0.11}
    out = []
    for row, over in rows.items():
        for w in ("unet3d", "dlrm"):
            for G in (1, 2):
                out.append({**base, **over, "row": row, "workload": w, "ranks": G, "batch_size": 4, "variant": row})
    return pd.DataFrame(out)


def _spread(med, q1, q3, n=60):
    """n deterministic samples whose median and quartiles are about ``med``, ``q1``, ``q3``."""
    return np.interp(np.linspace(0.01, 0.99, n), [0, 0.25, 0.5, 0.75, 1],
                     [max(q1 - (med - q1), 0.0), q1, med, q3, q3 + (q3 - med)])


def _dealt(df: pd.DataFrame, runs: int = 3) -> pd.DataFrame:
    """``df`` (steps or loader reads) with each configuration's rows dealt over ``runs`` runs
    (``run``: the unit of every interval), as a stage's rounds would have measured them."""
    keys = [c for c in ("row", "workload", "variant", "ranks", "batch_size") if c in df]
    g = df.groupby(keys, sort=False)
    return df.assign(run=g.ngroup() * runs + g.cumcount() % runs)


def _samples_of(s, runs=3):
    """Steps and loader reads whose per-configuration statistics are the summary ``s``'s, each
    configuration's samples dealt over ``runs`` runs (``run``: the unit of every interval)."""
    steps, loader = [], []
    for k, r in enumerate(s.to_dict("records")):
        key = {c: r[c] for c in ("row", "workload", "variant", "ranks", "batch_size")}
        data = _spread(r["data_s"], r["data_s_q1"], r["data_s_q3"])
        comp = 1.0 / _spread(r["compute_sps"], r["compute_sps"] * 0.99, r["compute_sps"] * 1.01)
        steps += [{**key, "run": k * runs + i % runs, "steady": True, "samples": 1, "data_ns": d * 1e9,
                   "compute_ns": c * 1e9, "step_ns": (d + c) * 1e9} for i, (d, c) in enumerate(zip(data, comp))]
        vfs = _spread(r["vfs_s"], r["vfs_s_q1"], r["vfs_s_q3"])
        prep = _spread(r["prep_s"], r["prep_s"] * 0.5, r["prep_s_q3"])
        loader += [{**key, "run": k * runs + i % runs, "samples": 1, "vfs_ns": v * 1e9, "prep_ns": q * 1e9}
                   for i, (v, q) in enumerate(zip(vfs, prep))]
    return pd.DataFrame(steps), pd.DataFrame(loader)


def _each_value_inside_its_interval(got: dict) -> None:
    """Every finding with an interval has its value inside it (issue 28: point and interval
    from one computation), and none is left inconclusive for lying outside it."""
    with_ci = [c for c in got.values() if c["ci_low"] is not None and np.isfinite(c["ci_low"])]
    assert with_ci
    for c in with_ci:
        assert c["ci_low"] - 1e-12 <= c["our_value"] <= c["ci_high"] + 1e-12, c["id"]
        assert "outside its own interval" not in c["note"], c["id"]


def test_validation_claims_compute_their_verdicts(tmp_path):
    m = cm.load(_model_file(tmp_path / "m.json"))
    m.workloads["unet3d"]["mean"]["r2"] = None     # a fit with too few configurations writes null
    s = _summary({"real": {}, "sleep": {"data_s": 0.005, "data_s_q1": 0.004, "data_s_q3": 0.0055,
                                        "compute_sps": 10.5},
                  "random": {"prep_s_q3": 0.5, "data_s": 1.0, "data_s_q1": 0.9, "data_s_q3": 1.1, "step_s": 1.1},
                  "prep-none": {"data_s_q1": 0.009, "data_s_q3": 0.011},
                  "prep-sleep": {"data_s": 0.0101, "data_s_q1": 0.0091, "data_s_q3": 0.0111}})
    au = pd.DataFrame([{"row": "sleep", "workload": "unet3d", "ranks": 1, "batch_size": 4, "au": 0.95,
                        "steps": 10, "ideal_s": 1, "train_s": 1, "data_wait_s": 0, "epoch_start_wait_s": 0,
                        "barrier_s": 0}])
    usage = [{"compute": {"mode": "sleep"}, "phase_usage": {"train": {"cpu_s": 0.1, "wall_s": 10.0}}},
             {"compute": {"mode": "real"}, "phase_usage": {"train": {"cpu_s": 9.0, "wall_s": 10.0}}}]
    ds = pd.DataFrame({"same_names": [True], "same_sizes": [True], "digest_random": ["a"], "digest_realistic": ["b"]})
    steps, loader = _samples_of(s)
    point = {c["id"]: c for c in report.validation_claims(s, au, pd.DataFrame(), m, usage, ds)}
    got = {c["id"]: c for c in report.validation_claims(s, au, pd.DataFrame(), m, usage, ds,
                                                        steps=steps, loader=loader)}
    # without the samples a finding is a point: never holds, never fails (issue 19)
    assert {point[k]["verdict"] for k in point if point[k]["kind"] == "finding"} <= {"inconclusive", "not measured"}
    assert point["unet3d-sleep-data-latency-lower"]["n"] == 1
    assert got["unet3d-sleep-data-latency-lower"]["n"] == 2 * 2 * 3   # runs: 2 configurations x 2 rows x 3
    assert got["unet3d-sleep-compute-throughput"]["verdict"] == "holds"
    assert got["unet3d-sleep-compute-throughput"]["our_value"] == pytest.approx(1.05)
    assert got["unet3d-sleep-compute-throughput"]["rule"] == "between 0.9 and 1.1"
    # the value from the steps (their medians: about the summaries'), through the interval's function
    assert got["unet3d-sleep-data-latency-lower"]["our_value"] == pytest.approx(2.0, rel=0.02)
    _each_value_inside_its_interval(got)
    assert got["unet3d-sleep-data-latency-lower"]["verdict"] == "holds"
    # judged against the thesis's range, "between 1 to 3 times lower": 1 itself is no effect, and
    # "3" is printed in whole times, so the band ends at its rounding edge (issue 66)
    assert got["unet3d-sleep-data-latency-lower"]["paper_value"] == "1-3"
    assert got["unet3d-sleep-data-latency-lower"]["rule"] == "between 1.05 and 3.5"
    # 90 % AU is MLPerf Storage's pass condition (Eq 3.1), not a thesis result: our goal for the
    # sleep runs, an extension with no paper value and no quote (issue 66), one run deciding nothing
    assert got["unet3d-sleep-au-above-90pct"]["kind"] == "finding"
    assert got["unet3d-sleep-au-above-90pct"]["basis"] == "extension"
    assert got["unet3d-sleep-au-above-90pct"]["quote"] is None
    assert got["unet3d-sleep-au-above-90pct"]["paper_value"] is None
    # the thesis could neither sleep in BERT nor get its VFS throughput: our extensions
    for cid in ("bert-sleep-compute-throughput", "bert-random-vfs-within-real-spread"):
        assert got[cid]["basis"] == "extension" and got[cid]["paper_value"] is None
        assert "Fig 5.11" not in got[cid]["figure"]
    assert all(c["basis"] in claims.BASES for c in got.values() if c["kind"] == "finding")
    assert got["unet3d-sleep-data-iqr-narrower"]["verdict"] == "direction only"   # 10x, not ~200x
    assert got["unet3d-random-preprocessing-longer"]["verdict"] == "holds"
    assert got["unet3d-random-vfs-within-real-spread"]["our_value"] == 1.0
    assert got["unet3d-fig-a3-prep-sleep-no-change"]["verdict"] == "holds"
    # one band for "unchanged" (0.8-1.25); the thesis's texts stated in the notes
    assert got["unet3d-fig-a3-prep-sleep-no-change"]["rule"] == "between 0.8 and 1.25"
    # Fig A.3 is the benchmark's: DLIO's row carries the quote (not run here, with what it needs);
    # our sleep run beside it is our extension
    assert got["unet3d-fig-a3-prep-sleep-no-change"]["basis"] == "extension"
    a3 = got["unet3d-fig-a3-dlio-prep-sleep-no-change"]
    assert (a3["verdict"], a3["basis"]) == ("not measured", "stated") and "preprocess_time" in a3["note"]
    assert got["unet3d-random-vfs-within-real-spread"]["basis"] == "stated"
    assert "contained within the same ranges" in got["unet3d-random-vfs-within-real-spread"]["note"]
    assert "pixel values" in got["unet3d-random-preprocessing-longer"]["statement"]
    assert got["unet3d-sleep-au-above-90pct"]["verdict"] == "inconclusive"     # one run
    assert got["unet3d-sleep-au-above-90pct"]["n"] == 1
    assert got["random-content-same-sizes-other-bytes"]["verdict"] == "holds"
    # Sec 5.3.2 "virtually identical" compute on generated data; Sec 5.1.3's UNET3D drop is of
    # accelerators kept waiting for data: the same compute here, but a data wait of 1 s against
    # 0.01 s starves the steps, so DLRM's holds and UNET3D's drop (of whole steps) holds too
    assert got["dlrm-random-compute-throughput-same"]["verdict"] == "holds"
    u = got["unet3d-random-compute-throughput-lower"]
    assert u["verdict"] == "holds" and u["our_value"] == pytest.approx(0.11 / 1.1, rel=0.1)
    assert got["bert-random-data-throughput-same"]["verdict"] == "not measured"   # no BERT rows here
    # the benchmark's DLRM data-throughput gap begins at 16k: batch 4 does not measure it; the
    # thesis's 0.5 is DLIO's (traced_comparison_report), the emulator's row our extension
    gap = got["dlrm-emulator-data-throughput-from-16k"]
    assert gap["verdict"] == "not measured" and "16,384" in gap["note"]
    assert (gap["paper_value"], gap["basis"], gap["quote"]) == (None, "extension", None)
    assert got["sleep-ranks-do-not-burn-cpu"]["verdict"] == "not measured"   # usage without its steps
    # rows that did not run: the claims are there, not measured, with the reason
    for cid in ("bert-sleep-compute-throughput", "bert-random-vfs-within-real-spread",
                "bert-sleep-au-above-90pct", "sleep-follows-compute-model"):
        assert got[cid]["verdict"] == "not measured" and "not measured" in got[cid]["note"]
    assert all(c["kind"] in claims.KINDS for c in got.values())
    none = report.validation_claims(_summary({"real": {}}), au.iloc[:0].assign(row=[]), pd.DataFrame(), m, [], None)
    assert len(none) == len(got) and {c["verdict"] for c in none} == {"not measured"}


def test_dlrm_emulator_data_throughput_at_the_largest_batch(tmp_path):
    """Sec 5.3.2: the benchmark's DLRM data throughput fell to 2.5M against the real run's 5M
    samples/s at its largest batch (DLIO's row); our emulator's, emulator / real at the largest
    batch of 16k or more that both ran, is judged against the 10 % our emulator aims at."""
    m = cm.load(_model_file(tmp_path / "m.json"))
    s = pd.concat([_summary({"real": {}}), pd.DataFrame([
        {**_summary({"real": {}}).iloc[0].to_dict(), "workload": "dlrm", "row": r, "variant": r, "ranks": 1,
         "batch_size": 32768, "data_s": d, "data_s_q1": d * 0.9, "data_s_q3": d * 1.1}
        for r, d in (("real", 0.01), ("emulator", 0.02))])], ignore_index=True)
    steps, loader = _samples_of(s)
    au = pd.DataFrame(columns=["row", "workload", "ranks", "batch_size", "au"])
    got = {c["id"]: c for c in report.validation_claims(s, au, pd.DataFrame(), m, [], None, steps=steps,
                                                        loader=loader)}
    c = got["dlrm-emulator-data-throughput-from-16k"]
    assert c["our_value"] == pytest.approx(0.5, rel=0.02) and c["verdict"] == "fails", c["note"]
    assert "B=32768" in c["note"]


def _au_runs(first_wait: float, epochs: int = 4, per_epoch: int = 5, runs: int = 1):
    """UNET3D sleep runs at G = 1, 2 and B = 4 (the model: 0.4 s a step), ``runs`` of each: each
    epoch's first step waits ``first_wait`` s for its batch, the others about 0.01 s; each train
    phase ends 0.01 s after its last step (the loader winding down). Steps and phases as the
    stages write them (``end_wall``, phase ``start``/``end``, wall clock; ``run``, ``repeat``)."""
    steps, phases = [], []
    for G, rep in [(G, rep) for G in (1, 2) for rep in range(runs)]:
        key = {"row": "sleep", "workload": "unet3d", "variant": "sleep", "ranks": G, "batch_size": 4, "repeat": rep,
               "run": 10 * G + rep}
        t = 1000.0 * G + 100.0 * rep
        for e in range(epochs):
            begin = t
            for i in range(per_epoch):
                # each run waits a little differently (its AU is its own)
                wait = first_wait * (1 + 0.05 * rep) if i == 0 else 0.01 + 0.002 * ((7 * i + e + rep) % 3)
                t += wait + 0.4
                steps += [{**key, "rank": r, "epoch": e, "step": i, "data_ns": wait * 1e9, "sleep_ns": 0.4e9,
                           "allreduce_ns": 1e6, "end_wall": t} for r in range(G)]
            t += 0.01
            # rank 0 begins its phase 5 ms later: rank 1 is the slowest
            phases += [{**key, "rank": r, "phase": "train", "epoch": e, "start": begin + 0.005 * (r == 0) * (G > 1),
                        "end": t} for r in range(G)]
    ph = pd.DataFrame(phases)
    return pd.DataFrame(steps), ph.assign(seconds=ph["end"] - ph["start"])


def test_au_steps_add_up_to_the_train_phases(tmp_path):
    """Each step's share of its train phase (from the step before, or the phase's begin, to its
    end; the phase's end for its last): the slowest rank's steps add up to its train phases, so
    Eq 3.1 over the steps is the run's AU."""
    m = cm.load(_model_file(tmp_path / "m.json", mean=(0.0, 0.1, 0.0)))
    steps, phases = _au_runs(first_wait=1.0)
    au = validation.utilization(steps, phases, m).set_index("ranks")
    st = validation.au_steps(steps, phases, m)
    assert len(st) == 2 * 20 and set(st.loc[st["ranks"] == 2, "rank"]) == {1}
    by = st.groupby("ranks")
    assert by["wall_s"].sum().to_numpy() == pytest.approx(au["train_s"].to_numpy())
    assert (by["ideal_s"].sum() / by["wall_s"].sum()).to_numpy() == pytest.approx(au["au"].to_numpy())
    one = st[(st["ranks"] == 1) & (st["epoch"] == 0)]["wall_s"].to_numpy()
    assert one[0] == pytest.approx(1.4) and one[-1] == pytest.approx(0.4 + 0.012 + 0.01)   # the wind-down
    assert not len(validation.au_steps(steps.drop(columns="end_wall"), phases, m))


@pytest.mark.parametrize("first_wait,verdict", [(0.02, "holds"), (1.0, "fails")])
def test_sleep_au_is_decided_on_its_runs(tmp_path, first_wait, verdict):
    """Three runs per configuration decide the 90 % rule on the runs' own AUs (Eq 3.1 over each
    run; Student's t on their logs, the lowest configuration at its Bonferroni level): runs
    whose epochs begin with long data waits fail it, runs that wait little hold it. The value is
    the lowest configuration's geometric mean of its runs' AUs. One run per configuration gives
    no interval (it would hold only that run's noise)."""
    m = cm.load(_model_file(tmp_path / "m.json", mean=(0.0, 0.1, 0.0)))
    steps, phases = _au_runs(first_wait, runs=3)
    au = validation.utilization(steps, phases, m)
    assert au["au"].nunique() > 2   # the runs differ: the interval is not a point
    args = (_summary({"real": {}}), au, pd.DataFrame(), m, [], None)
    c = {x["id"]: x for x in report.validation_claims(*args, au_steps=validation.au_steps(steps, phases, m))}
    c = c["unet3d-sleep-au-above-90pct"]
    low = min(float(np.exp(np.log(g).mean())) for _, g in au.groupby("ranks")["au"])
    assert c["kind"] == "finding" and c["verdict"] == verdict and c["n"] == 3, c["note"]
    assert "Student t" in c["ci_method"] and "Bonferroni" in c["ci_method"], c["ci_method"]
    assert c["our_value"] == pytest.approx(low) and c["ci_low"] <= c["our_value"] <= c["ci_high"]
    assert (c["ci_high"] < 0.9) if verdict == "fails" else (c["ci_low"] >= 0.9)
    alone = {x["id"]: x for x in report.validation_claims(*args)}["unet3d-sleep-au-above-90pct"]
    assert alone["verdict"] == verdict and alone["our_value"] == pytest.approx(c["our_value"])
    one_s, one_p = _au_runs(first_wait)
    one = {x["id"]: x for x in report.validation_claims(
        _summary({"real": {}}), validation.utilization(one_s, one_p, m), pd.DataFrame(), m, [], None,
        au_steps=validation.au_steps(one_s, one_p, m))}["unet3d-sleep-au-above-90pct"]
    assert one["verdict"] == "inconclusive", one


def test_sleep_follows_model_check_can_fail(tmp_path):
    m = cm.load(_model_file(tmp_path / "m.json", mean=(0.0, 0.0, 0.1), std=0.0))
    def steps(slept):
        return pd.DataFrame([{"workload": "dlrm", "variant": "sleep", "ranks": 1, "batch_size": 64, "rank": 0,
                              "steady": True, "sleep_ns": int(slept * 1e9)} for _ in range(30)])
    s = _summary({"real": {}})
    au = pd.DataFrame(columns=["row", "workload", "ranks", "batch_size", "au"])
    ok = {c["id"]: c for c in report.validation_claims(s, au, steps(0.1005), m, [], None)}
    bad = {c["id"]: c for c in report.validation_claims(s, au, steps(0.12), m, [], None)}
    assert ok["sleep-follows-compute-model"]["verdict"] == "holds"
    assert bad["sleep-follows-compute-model"]["verdict"] == "fails"
    assert report.floored_normal_mean(0.0, 1.0) == pytest.approx(0.3989, abs=1e-4)


def test_fits_claims_have_kind_and_magnitude():
    summ = pd.DataFrame([{"workload": "dlrm", "ranks": 1, "batch_size": 512, "data_share": 0.02,
                          "data_s": 0.001, "compute_s": 0.05}])
    nf = pd.DataFrame([{"workload": "dlrm", "ranks": 1, "batch_size": b, "mean_s": m}
                       for b, m in ((512, 0.05), (1024, 0.02), (2048, 0.04))])
    models = {"dlrm": {"mean": {"r2": 0.5}}}
    # 40 steady steps per configuration in 4 runs, compute around each mean (1 %), data 2 % of the step
    steps = pd.DataFrame([{"workload": "dlrm", "ranks": 1, "batch_size": b, "repeat": i % 4, "run": 10 * b + i % 4,
                           "rank": 0, "epoch": 0, "step": i + 1, "steady": True, "samples": b, "compute_ns": c * 1e9,
                           "data_ns": 0.02 / 0.98 * c * 1e9, "step_ns": c / 0.98 * 1e9}
                          for b, m in ((512, 0.05), (1024, 0.02), (2048, 0.04))
                          for i, c in enumerate(_spread(m, m * 0.99, m * 1.01, 40))])
    assert {c["verdict"] for c in report.claims(summ, models, nf)
            if c["kind"] == "finding"} <= {"inconclusive", "not measured"}
    got = {c["id"]: c for c in report.claims(summ, models, nf, steps=steps)}
    d = got["dlrm-data-share-about-10pct"]
    assert d["kind"] == "finding" and d["magnitude"] == "within 2x" and d["paper_value"] == 0.1
    assert d["verdict"] == "fails" and "V100" in d["note"]
    r = got["dlrm-compute-linear-in-batch"]
    assert r["verdict"] == "fails" and "B=1024 faster than B=512" in r["note"] and "H100" not in r["note"]
    assert "onednn_bench" not in r["note"]      # the batch-1 convolution hint is UNET3D's alone
    assert r["n"] == 3 * 4 and r["ci_high"] < 0.9      # runs: 3 configurations x 4
    # the thesis's headline numbers have rows; V100 throughputs are not measured, with the reason
    for cid in ("unet3d-eval-longer-than-epoch", "bert-data-throughput-range",
                "bert-compute-throughput-range"):
        assert got[cid]["paper_value"] is not None and got[cid]["basis"] == "stated"
    # the 600,000 samples/s asymptote is the sleep runs' (workload_validation), not a fit's
    assert "dlrm-compute-asymptote" not in got
    # the rise with the batch size, which a band on one value could not test
    assert got["bert-data-throughput-range"]["paper_value"] == 5 and got["bert-data-throughput-range"]["rule"] == "> 1"


def test_eval_over_epoch_from_the_phases():
    ph = pd.DataFrame([{"workload": "unet3d", "rank": 0, "phase": p, "seconds": s}
                       for p, s in [("train", 1.0), ("train", 1.1), ("train", 0.9), ("eval", 8.0), ("eval", 8.4)]])
    v, ci, what = report.eval_over_epoch(ph)
    assert v == pytest.approx(8.2) and ci.n == 2 and "2 evaluations" in what
    v, ci, what = report.eval_over_epoch(ph[ph["phase"] == "train"])
    assert math.isnan(v) and ci is None and "no evaluation" in what
    # the setup beside Fig 5.1's (8 GPUs, batch 4, 50 epochs) goes into the statement
    runs = pd.concat([ph.assign(ranks=g, batch_size=2, repeat=0) for g in (1, 2)])
    assert report._eval_setup(runs) == "ours: 2 runs, G = 1, 2, batch 2, 3 epochs and 2 evaluations per run"
    assert report._eval_setup(ph) == ""          # no configuration columns: nothing to say


def test_eval_over_epoch_is_a_ratio_per_configuration():
    """Configurations whose evaluations differ threefold (G = 1: 3 s, G = 2: 1 s, each over
    epochs of 1 s and 0.5 s): each configuration's ratio (3 and 2), their median 2.5, with an
    interval over the runs that decides '> 1'. Pooled over configurations, the median
    evaluation sat between the two groups and a run left out moved it across."""
    rows = []
    for g, ev, ep in ((1, 3.0, 1.0), (2, 1.0, 0.5)):
        for rep in range(3):
            j = 1 + 0.01 * (rep - 1)
            rows += [{"workload": "unet3d", "rank": 0, "ranks": g, "batch_size": 2, "repeat": rep, "run": 10 * g + rep,
                      "phase": "train", "seconds": ep * j * (1 + 0.02 * e)} for e in range(4)]
            rows.append({"workload": "unet3d", "rank": 0, "ranks": g, "batch_size": 2, "repeat": rep, "run": 10 * g + rep,
                         "phase": "eval", "seconds": ev / j})
    v, ci, what = report.eval_over_epoch(pd.DataFrame(rows))
    assert v == pytest.approx(2.5, rel=0.03) and ci.n == 12 and "2 configurations" in what
    assert 1.05 < ci.low <= v <= ci.high < 4, ci


def test_unet3d_batch1_faster_at_batch2_names_the_cpu_convolution_path():
    nf = pd.DataFrame([{"workload": "unet3d", "ranks": 1, "batch_size": b, "mean_s": m}
                       for b, m in ((1, 0.19), (2, 0.11), (4, 0.24))])
    assert "oneDNN" in report._not_linear_reason(nf, "unet3d")
    linear = nf.assign(mean_s=[0.1, 0.2, 0.4])
    assert "oneDNN" not in report._not_linear_reason(linear, "unet3d")


def test_a_rank_count_has_one_color_in_every_row():
    """Row D ran only G=2: its line must be G=2's color in row A, and the legend must name it."""
    from experiments.workloads import validation

    s = _summary({"real": {}, "emulator": {}})
    s = s[~((s["row"] == "emulator") & (s["ranks"] == 1))]
    s = pd.concat([s, s.assign(batch_size=8)])
    fig = plots.plot_rows(s, validation.ROWS, "unet3d", "Fig X", [("compute_sps", "compute")],
                           "samples/s", "throughputs")
    try:
        axes = fig.axes
        color = {ln.get_label(): ln.get_color() for ln in axes[0].lines}
        (d_line,) = [ln for ln in axes[1].lines if ln.get_label().startswith("G=")]
        assert d_line.get_label() == "G=2" and d_line.get_color() == color["G=2"] != color["G=1"]
    finally:
        import matplotlib.pyplot as plt
        plt.close(fig)


def _sleep_steps(asleep_s: float, n: int = 10) -> pd.DataFrame:
    return pd.DataFrame([{"workload": "bert", "variant": "sleep", "ranks": 1, "batch_size": 2, "repeat": 0,
                          "rank": 0, "sleep_ns": int(asleep_s / n * 1e9)} for _ in range(n)])


@pytest.mark.parametrize("wall,cpu,asleep,want", [
    (10.0, 0.3, 9.5, 0.0),      # blocks in its sleeps: CPU only while awake
    (10.0, 10.0, 9.5, 1.0),     # spins through its sleeps
    (0.2, 0.1, 0.05, 0.0),      # a short smoke run, mostly start-up: CPU / wall would be 0.5
])
def test_sleep_cpu_excess_tells_blocking_from_spinning(wall, cpu, asleep, want):
    usage = [{"workload": "bert", "variant": "sleep", "ranks": 1, "batch_size": 2, "repeat": 0, "rank": 0,
              "compute": {"mode": "sleep"}, "phase_usage": {"train": {"cpu_s": cpu, "wall_s": wall}}},
             {"workload": "bert", "variant": "real", "ranks": 1, "batch_size": 2, "repeat": 0, "rank": 0,
              "compute": {"mode": "real"}, "phase_usage": {"train": {"cpu_s": 9.0, "wall_s": 10.0}}}]
    assert report.sleep_cpu_excess(usage, _sleep_steps(asleep)) == [pytest.approx(want, abs=1e-6)]
    assert report.sleep_cpu_excess(usage, _sleep_steps(asleep).iloc[:0]) == []


def test_sleep_cpu_table_shows_per_rank_what_the_claim_judges():
    usage = [{"workload": "bert", "variant": "sleep", "ranks": 1, "batch_size": 2, "repeat": 0, "rank": 0,
              "compute": {"mode": "sleep"}, "phase_usage": {"train": {"cpu_s": 1.5, "wall_s": 10.0}}}]
    t = report.sleep_cpu_table(usage, _sleep_steps(9.0))
    assert len(t) == 1 and t.iloc[0]["asleep_s"] == pytest.approx(9.0)
    assert t.iloc[0]["cpu_excess"] == pytest.approx(0.5 / 9.0)     # 1.5 CPU s - 1 s awake, per 9 s asleep
    assert list(t["cpu_excess"]) == report.sleep_cpu_excess(usage, _sleep_steps(9.0))
    assert report.sleep_cpu_table(usage, _sleep_steps(9.0).iloc[:0]).empty


def test_dlrm_forward_share_step_time_over_ranks_and_the_std_model_rows():
    """Sec 5.3.2: forward ~80 % of compute, step time growing with the GPU count (ranks here);
    Eq 5.2/5.4/5.6: the std model's R²; Sec 5.1.3's V100 figures are rows, not measured."""
    cfgs = [(1, 512, 0.05), (2, 512, 0.07), (1, 1024, 0.08), (2, 1024, 0.11)]
    summ = pd.DataFrame([{"workload": "dlrm", "ranks": g, "batch_size": b, "data_share": 0.02,
                          "data_s": 0.001, "compute_s": m} for g, b, m in cfgs])
    nf = pd.DataFrame([{"workload": "dlrm", "ranks": g, "batch_size": b, "mean_s": m} for g, b, m in cfgs])
    models = {"dlrm": {"mean": {"r2": 0.97}, "std": {"r2": 0.4}}}
    steps = pd.DataFrame([{"workload": "dlrm", "ranks": g, "batch_size": b, "repeat": 0, "rank": 0, "epoch": 0,
                           "step": i + 1, "steady": True, "samples": b, "compute_ns": c * 1e9,
                           "forward_ns": 0.7 * c * 1e9, "data_ns": 0.001e9, "step_ns": (c + 0.001) * 1e9}
                          for g, b, m in cfgs for i, c in enumerate(_spread(m, m * 0.98, m * 1.02, 40))])
    got = {c["id"]: c for c in report.claims(summ, models, nf, steps=_dealt(steps))}
    f = got["dlrm-forward-80pct-of-compute"]
    assert f["our_value"] == pytest.approx(0.7) and f["verdict"] == "holds" and f["paper_value"] == 0.8
    g = got["dlrm-step-time-grows-with-gpus"]
    assert g["our_value"] == pytest.approx(0.111 / 0.081, rel=0.02) and g["verdict"] == "holds"
    assert "B=512: G=1" in g["note"]
    s = got["dlrm-compute-std-model-r2"]
    # value and interval from the same steps through one function (not the fitted model's 0.4)
    assert s["ci_low"] <= s["our_value"] <= s["ci_high"] and s["our_value"] != 0.4
    assert s["paper_value"] == pytest.approx(0.71 - 0.95) and s["figure"] == "Eq 5.6"
    assert s["rule"] == "< 0" and s["ci_method"].startswith("the std model's R² minus the mean model's")
    for cid in ("unet3d-compute-0.6-1.6s", "unet3d-eval-time-normal-fit", "bert-data-throughput-range"):
        assert got[cid]["verdict"] == "not measured", cid


@pytest.mark.parametrize("means,stds,verdict", [
    ((1, 2, 2, 3), (0.1, 0.1, 0.1, 0.5), "holds"),    # mean linear in G and B, std not: less linear
    ((1, 1, 1, 5), (0.1, 0.2, 0.2, 0.3), "fails"),    # std linear, mean not: the statement fails
])
def test_std_model_row_compares_its_r2_with_the_mean_models(means, stds, verdict):
    """Issue 38 (6): "the std is less linear than its mean" is judged on R²(std) - R²(mean) of
    the same steps, so a std model that fits better than the mean's fails (the old '< 0.9' on
    the std model alone held then)."""
    cfgs = [(1, 1), (2, 1), (1, 2), (2, 2)]
    rng = np.random.default_rng(1)
    steps = pd.DataFrame([{"workload": "dlrm", "ranks": g, "batch_size": b, "repeat": 0, "rank": 0, "epoch": 0,
                           "step": i + 1, "steady": True, "samples": b, "compute_ns": c * 1e9,
                           "data_ns": 1e6, "step_ns": c * 1e9 + 1e6}
                          for (g, b), m, sd in zip(cfgs, means, stds) for i, c in enumerate(rng.normal(m, sd, 200))])
    summ = pd.DataFrame([{"workload": "dlrm", "ranks": g, "batch_size": b, "data_share": 0.01, "data_s": 0.001,
                          "compute_s": m} for (g, b), m in zip(cfgs, means)])
    nf = pd.DataFrame([{"workload": "dlrm", "ranks": g, "batch_size": b, "mean_s": m} for (g, b), m in zip(cfgs, means)])
    got = {c["id"]: c for c in report.claims(summ, {"dlrm": {"mean": {"r2": 0.9}, "std": {"r2": 0.5}}}, nf,
                                             steps=_dealt(steps))}
    c = got["dlrm-compute-std-model-r2"]
    assert c["verdict"] == verdict, c["note"]
    assert c["ci_low"] <= c["our_value"] <= c["ci_high"]
    assert abs(c["our_value"]) == pytest.approx(1 / 3, abs=0.1)


def test_the_data_share_rows_are_exclusive():
    """Issue 38 (6): a share is either negligible (UNET3D's and BERT's rows) or visible (DLRM's
    'about 10 %'), never both: the declared rules split at one share."""
    from experiments.claims import declared
    from experiments.verdicts import rules
    rule = {i: d.rule for i, (_, d) in declared.declared("workload_fits").items() if "data-share" in i}
    for v in np.linspace(0, 0.3, 301):
        small = rules.evaluate(rule["unet3d-data-share-small"], v)
        assert small == rules.evaluate(rule["bert-data-share-small"], v)
        assert small != rules.evaluate(rule["dlrm-data-share-about-10pct"], v), v


def test_data_share_forward_share_and_bert_throughput_take_value_and_interval_from_the_steps():
    """Issue 28, point 5: the configs' findings take their value from the steps through the
    function their interval bootstraps, not from the summary (whose share may be computed
    otherwise): here the summary says 2 % and the steps 30 %, and the value is the steps'."""
    cfgs = [(1, 2, 0.05), (2, 2, 0.07), (1, 4, 0.08)]
    summ = pd.DataFrame([{"workload": w, "ranks": g, "batch_size": b, "data_share": 0.02, "data_sps": 1.0,
                          "data_s": 0.001, "compute_s": m} for w in ("unet3d", "bert", "dlrm") for g, b, m in cfgs])
    nf = pd.DataFrame([{"workload": w, "ranks": g, "batch_size": b, "mean_s": m}
                       for w in ("unet3d", "bert", "dlrm") for g, b, m in cfgs])
    models = {w: {"mean": {"r2": 0.97}, "std": {"r2": 0.4}} for w in ("unet3d", "bert", "dlrm")}
    steps = pd.DataFrame([{"workload": w, "ranks": g, "batch_size": b, "repeat": 0, "rank": 0, "epoch": 0,
                           "step": i + 1, "steady": True, "samples": b, "compute_ns": c * 1e9,
                           "forward_ns": 0.7 * c * 1e9, "data_ns": 0.3 / 0.7 * c * 1e9, "step_ns": c / 0.7 * 1e9}
                          for w in ("unet3d", "bert", "dlrm") for g, b, m in cfgs
                          for i, c in enumerate(_spread(m, m * 0.98, m * 1.02, 40))])
    got = {c["id"]: c for c in report.claims(summ, models, nf, steps=_dealt(steps))}
    for cid in ("unet3d-data-share-small", "bert-data-share-small", "dlrm-data-share-about-10pct"):
        c = got[cid]
        assert c["our_value"] == pytest.approx(0.3) and c["ci_low"] <= c["our_value"] <= c["ci_high"], cid
        assert c["verdict"] != "inconclusive", cid      # decided: not left inconclusive for an outside point
    assert got["unet3d-data-share-small"]["verdict"] == "fails"
    assert got["dlrm-data-share-about-10pct"]["verdict"] == "direction only"   # 0.3: 3x the thesis's 10 %
    f = got["dlrm-forward-80pct-of-compute"]
    assert f["ci_low"] <= f["our_value"] <= f["ci_high"] and f["our_value"] == pytest.approx(0.7)
    # BERT's data throughput is shown from the steps (samples / data wait), not the summary's 1.0
    shown = got["bert-data-throughput-range"]["note"]
    rate = np.median([b / (0.3 / 0.7 * m) for _, b, m in cfgs])
    assert f"delivers {rate:,.0f} samples/s" in shown and "delivers 1 samples/s" not in shown
    _each_value_inside_its_interval(got)
    # without steps: the summary's value, no interval (inconclusive)
    point = {c["id"]: c for c in report.claims(summ, models, nf)}
    assert point["unet3d-data-share-small"]["our_value"] == 0.02
    assert point["unet3d-data-share-small"]["verdict"] == "inconclusive"


def test_unet3d_headlines_first_epoch_data_spread_and_evaluation_against_size():
    """Sec 5.1.2, 5.1.3 and Fig 5.3: each run's first epoch over its later ones (the median over
    the runs, an interval over the runs), the data wait's 3rd over 1st quartile (median over
    configurations) and the R² of the evaluated cases' window time against their size."""
    runs = [(g, b, r) for g in (1, 2) for b in (2, 4) for r in (0, 1)]
    phases = pd.DataFrame([{"workload": "unet3d", "phase": "train", "rank": 0, "variant": "real", "ranks": g,
                            "batch_size": b, "repeat": r, "epoch": e, "seconds": (3.0 if e == 1 else 2.0) + 0.01 * k}
                           for k, (g, b, r) in enumerate(runs) for e in (1, 2, 3, 4)])
    steps = pd.DataFrame([{"row": "real", "workload": "unet3d", "ranks": g, "batch_size": 4, "steady": True,
                           "repeat": r, "samples": 4, "data_ns": d * (1 + 0.01 * r) * 1e9, "compute_ns": 1e9,
                           "step_ns": (1 + d) * 1e9}
                          for g in (1, 2) for r in range(3) for d in np.geomspace(0.001, 0.1, 40)])
    rng = np.random.default_rng(0)
    mb = np.tile(np.linspace(10, 100, 4), 3)   # 4 case sizes evaluated in each of 3 runs
    evals = pd.DataFrame({"bytes": mb * 1e6, "window_s": 0.05 * mb + rng.normal(0, 0.05, len(mb)),
                          "run": np.repeat([0, 1, 2], 4)})
    got = {m.id: m for m in report.measure_unet3d_headlines(steps, phases, evals)}
    f = got["unet3d-first-epoch-longer"]
    assert f.value == pytest.approx(1.5, rel=0.01) and f.interval.n == len(runs) and f.interval.low > 1
    d = got["unet3d-data-latency-spans-order-of-magnitude"]
    assert d.value == pytest.approx(10 ** 1.0, rel=0.1) and d.interval.low <= d.value <= d.interval.high
    e = got["unet3d-eval-linear-in-image-size"]
    assert e.value > 0.99 and e.interval.n == 3 and "12 evaluated cases" in e.note and "3 run(s)" in e.note
    # the cases of one run give no interval (the run is the unit)
    one = {m.id: m for m in report.measure_unet3d_headlines(steps, phases, evals.assign(run=0))}
    assert not one["unet3d-eval-linear-in-image-size"].interval.ok
    # without the tables each row is there, not measured, with the reason
    none = {m.id: m for m in report.measure_unet3d_headlines(None, None, None)}
    assert all(np.isnan(m.value) if m.value is not None else True for m in none.values())
    assert "evals.csv" in none["unet3d-eval-linear-in-image-size"].why_not
    assert "phases.csv" in none["unet3d-first-epoch-longer"].why_not


def test_dlrm_sleep_compute_leaves_out_the_4_gpu_case_its_quote_excludes(tmp_path):
    """Sec 5.3.2: "Except for the 4 GPU case however, we see that the generated sleep times
    approximate the behaviour of the original": a sleep run far off at G = 4 does not decide
    DLRM's row (UNET3D's, whose sentence names no exception, keeps every configuration)."""
    m = cm.load(_model_file(tmp_path / "m.json"))
    rows = []
    for w in ("unet3d", "dlrm"):
        for G in (1, 2, 4):
            for row in ("real", "sleep"):
                off = 2.0 if (row == "sleep" and G == 4) else (1.05 if row == "sleep" else 1.0)
                rows.append({"row": row, "workload": w, "ranks": G, "batch_size": 4, "variant": row,
                             "compute_s": 0.1 / off, "compute_sps": 10.0 * off})
    s = pd.DataFrame(rows)
    got = {x.id: x for x in report.measure_sleep_compute(s, m, None, None)}
    assert got["dlrm-sleep-compute-throughput"].value == pytest.approx(1.05)
    assert "G = 4 left out" in got["dlrm-sleep-compute-throughput"].note
    assert got["unet3d-sleep-compute-throughput"].value == pytest.approx(2.0)


def test_the_sleep_compute_ratio_is_the_configuration_farthest_from_1_either_side():
    """Below 1 as above it: a sleep run computing 0.85 of the real run's throughput is further off
    than one at 1.1, and the row's value is that ratio, not its distance from 1."""
    assert report.farthest_from_1([1.02, 0.85, 1.1]) == pytest.approx(0.85)
    assert report.farthest_from_1([1.02, 0.95, 1.1]) == pytest.approx(1.1)
    assert np.isnan(report.farthest_from_1([np.nan]))


def test_a_row_is_set_against_the_real_runs_of_its_own_stage(tmp_path):
    """Where the sleep and random stages ran the real workload beside their rows (rows
    ``real@sleep``, ``real@random``: validation.BESIDE), the findings set each row against those,
    not against the workload stage's real runs of another hour; without them (a run made
    before), against the workload stage's, as before."""
    m = cm.load(_model_file(tmp_path / "m.json"))
    sleep = {"data_s": 0.005, "data_s_q1": 0.004, "data_s_q3": 0.0055}
    random = {"prep_s_q3": 0.5, "data_s": 1.0, "data_s_q1": 0.9, "data_s_q3": 1.1}
    s = _summary({"real": {}, "sleep": sleep, "random": random, "real@sleep": sleep, "real@random": random})
    s.loc[s["row"].str.startswith("real@"), "variant"] = "real"
    au = pd.DataFrame(columns=["row", "workload", "ranks", "batch_size", "au"])

    def judged(summary):
        steps, loader = _samples_of(summary)
        return {c["id"]: c for c in report.validation_claims(summary, au, pd.DataFrame(), m, [], None,
                                                            steps=steps, loader=loader)}

    beside, before = judged(s), judged(s[~s["row"].str.startswith("real@")])
    lat, prep = "unet3d-sleep-data-latency-lower", "unet3d-random-preprocessing-longer"
    assert before[lat]["our_value"] == pytest.approx(2.0, rel=0.02)          # the workload stage's real
    assert beside[lat]["our_value"] == pytest.approx(1.0, rel=0.02)          # the sleep stage's own
    assert before[prep]["our_value"] > 10 and beside[prep]["our_value"] == pytest.approx(1.0, rel=0.05)
    assert before[lat]["verdict"] == "holds" and beside[lat]["verdict"] != "holds"


def _round_steps(rows_speed: dict, rounds=(0, 1, 2), hour=(1.0, 1.4, 0.7), steps=20):
    """Steps of one configuration (G 1, B 4) of DLRM: each row's run of each round computing at
    ``rows_speed[row]`` x that round's ``hour`` (samples/s), the steps spread 5 % about it."""
    out, run = [], 0
    for k, f in zip(rounds, hour):
        for row, speed in rows_speed.items():
            sps = speed * f * (1 + 0.05 * np.linspace(-1, 1, steps))
            out.append(pd.DataFrame({"row": row, "workload": "dlrm", "variant": row.split("@")[0], "ranks": 1,
                                     "batch_size": 4, "samples": 4, "compute_ns": 4 / sps * 1e9,
                                     "steady": True, "run": run, "repeat": k}))
            run += 1
    return pd.concat(out, ignore_index=True)


def test_round_pairs_pair_the_runs_two_rows_made_in_the_same_round():
    st = _round_steps({"real@sleep": 10.0, "sleep": 10.3})
    st = st[~((st["row"] == "sleep") & (st["repeat"] == 2))]   # a round the sleep row did not run
    got = iv.round_pairs(st, "dlrm", ("real@sleep", "sleep"), iv.rate("compute_ns"))
    assert list(got) == [(1, 4)] and len(got[(1, 4)]) == 2
    (a, b), _ = got[(1, 4)]
    assert np.median(b) / np.median(a) == pytest.approx(1.03)
    assert iv.round_pairs(st.drop(columns="repeat"), "dlrm", ("real@sleep", "sleep"), iv.rate("compute_ns")) == {}


def test_the_sleep_compute_row_takes_one_ratio_a_round_where_the_runs_share_the_round(tmp_path):
    """At compute_level hour the sleeping run is given its round's speed, so a slow round slows
    both of its runs: the ratio round by round (0.03 off at every round) decides what resampling
    each row's runs apart (the rounds' speeds 0.7 to 1.4) leaves open. Against the workload
    stage's own real runs (another hour, no shared round) the row keeps the unpaired interval."""
    m = cm.load(_model_file(tmp_path / "m.json"))
    rows = []
    for row in ("real", "real@sleep", "sleep"):
        rows.append({"row": row, "workload": "dlrm", "ranks": 1, "batch_size": 4, "variant": row.split("@")[0],
                     "compute_s": 0.4, "compute_sps": 10.0})
    s = pd.DataFrame(rows)
    st = _round_steps({"real@sleep": 10.0, "sleep": 10.3, "real": 10.0})
    paired = {x.id: x for x in report.measure_sleep_compute(s, m, None, st)}["dlrm-sleep-compute-throughput"]
    assert paired.value == pytest.approx(1.03, rel=1e-3)
    ci = paired.interval
    assert "over the same round's real run" in ci.method and "3 rounds" in ci.method
    assert 0.99 < ci.low < 1.03 < ci.high < 1.07
    apart = st[st["row"] != "real@sleep"].assign(repeat=lambda d: d["run"])   # the workload stage's runs
    alone = {x.id: x for x in report.measure_sleep_compute(s[s["row"] != "real@sleep"], m, None, apart)}
    got = alone["dlrm-sleep-compute-throughput"]
    assert "round" not in got.interval.method and (got.interval.low < 0.9 or got.interval.high > 1.1)


def _fit_runs(spread_at_point: float, spread_else: float, runs=3, steps=10):
    """The fit's own runs (row ``real``, the workload stage's) of DLRM over G 1, 2 x B 1, 2, 4: a
    step computes 0.01 G + 0.02 B + 0.01 s (a line through every point), each run's steps at the
    point (1, 4) scaled by 1 + ``spread_at_point`` x (-1, 0, 1)[run], the others' by
    ``spread_else`` so."""
    out, run = [], 100
    for g in (1, 2):
        for b in (1, 2, 4):
            for j in range(runs):
                off = (j - 1) * (spread_at_point if (g, b) == (1, 4) else spread_else)
                out.append(pd.DataFrame({"row": "real", "workload": "dlrm", "variant": "real", "ranks": g,
                                         "batch_size": b, "samples": b, "steady": True, "run": run,
                                         "repeat": j, "made_by": "repro",
                                         "compute_ns": (0.01 * g + 0.02 * b + 0.01) * (1 + off) * 1e9
                                         * np.ones(steps)}))
                run += 1
    return pd.concat(out, ignore_index=True)


def test_the_sleep_row_round_by_round_holds_its_fits_own_spread(tmp_path):
    """Every round sleeps for one fit, so the fit's runs' spread moves every round alike and no
    interval over the rounds holds it: with the fit's runs beside the rows (its points measured)
    the interval adds the line's delta-method variance at the point. The same fit with runs
    that agree gives the rounds' own t interval back, and a fit with runs spread 10 % at the
    point widens it; rounds given the line scaled to their hour (``given_mean_s`` off the line)
    carry the point's measured mean as well, which enters the ratio on both sides (the line
    through it, and the mean it is divided by) and so widens it less where the spread is the
    point's own."""
    m = cm.load(_model_file(tmp_path / "m.json", workloads=("dlrm",), mean=(0.01, 0.02, 0.01)))
    m.workloads["dlrm"]["measured"] = [{"G": g, "B": b, "mean_s": 0.01 * g + 0.02 * b + 0.01}
                                       for g in (1, 2) for b in (1, 2, 4)]
    s = pd.DataFrame([{"row": r, "workload": "dlrm", "ranks": 1, "batch_size": 4, "variant": r.split("@")[0],
                       "compute_s": 0.4, "compute_sps": 10.0} for r in ("real", "real@sleep", "sleep")])
    rounds = _round_steps({"real@sleep": 10.0, "sleep": 10.3}, hour=(1.0, 1.02, 0.98))
    width = {}
    for name, spread, given in (("agree", 0.0, 0.1), ("spread", 0.1, 0.1), ("carried", 0.1, 0.108)):
        st = pd.concat([rounds.assign(given_mean_s=np.where(rounds["row"] == "sleep", given, np.nan)),
                        _fit_runs(spread, 0.01 if spread else 0.0)], ignore_index=True)
        got = {x.id: x for x in report.measure_sleep_compute(s, m, None, st)}["dlrm-sleep-compute-throughput"]
        assert got.value == pytest.approx(1.03, rel=1e-3)
        width[name] = np.log(got.interval.high / got.interval.low)
        assert "fit's variance at the point added" in got.interval.method and "3 rounds" in got.interval.method
    logs = np.log([10.3 / 10.0] * 3)   # every round's ratio 1.03: the rounds alone give a zero width
    assert width["agree"] == pytest.approx(0.0, abs=1e-6) and logs.std() == pytest.approx(0.0, abs=1e-12)
    assert 0 < width["carried"] < width["spread"]
    # the interval of a 10 % spread at the point covers more than the fit's 3 % error there
    assert width["spread"] > 2 * 0.03


def test_the_fits_share_is_the_delta_method_of_the_line_at_the_point():
    """fit_point_terms against a numerical derivative of log line(point) - log m(point), and the
    t with the fit's terms against Student's t where the fit adds nothing."""
    from experiments.statistics import coverage
    G, B = np.array([1, 1, 1, 2, 2, 2.]), np.array([1, 2, 4, 1, 2, 4.])
    X = np.column_stack([np.ones(6), G, B])
    m = np.array([0.07, 0.1, 0.18, 0.16, 0.2, 0.3])
    s2 = np.array([1e-5, 2e-5, 3e-5, 4e-5, 5e-5, 6e-5])
    log_c, v, df = coverage.fit_point_terms(m, s2, np.full(6, 3), X, 0, carried=True)
    f = lambda mm: np.log(X[0] @ np.linalg.lstsq(X, mm, rcond=None)[0]) - np.log(mm[0])  # noqa: E731
    grad = np.array([(f(m + 1e-7 * np.eye(6)[i]) - f(m - 1e-7 * np.eye(6)[i])) / 2e-7 for i in range(6)])
    assert log_c == pytest.approx(f(m)) and v == pytest.approx(grad ** 2 * s2 / 3, rel=1e-5)
    assert list(df) == [2] * 6
    x = np.array([1.0, 1.1, 0.95])
    _, plain = stats.runs_ci(x, of="rounds")
    _, with_fit = stats.gmean_t_with_fit(x, np.zeros(6), np.full(6, 2.0))
    assert (with_fit.low, with_fit.high) == pytest.approx((plain.low, plain.high))
    _, floor = stats.gmean_t_with_fit(x, v, df)   # the fit's share small: never narrower than the rounds'
    assert floor.low <= plain.low + 1e-12 and floor.high >= plain.high - 1e-12
    _, wider = stats.gmean_t_with_fit(x, 100 * v, df)
    assert wider.low < plain.low and wider.high > plain.high and wider.enough
