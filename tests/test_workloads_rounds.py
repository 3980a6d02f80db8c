"""The thesis's workload stages through the one measuring-stage interface: every (workload,
variant, ranks, batch size) once a round, run ids and side tables, a decide run that keeps the
runs of before (and their folders) and runs only what was bought, each workload's findings at
the level of its own rows, and the compute model the sleep runs use unmoved by a purchase."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments.settings import paths
from experiments.settings.config import ConfigError
from experiments.repeats import purchases as P
from experiments.workloads import launch, stage


def _fake_runs(monkeypatch, ran: list):
    """launch.run_config records the runs it is asked for (and writes run.json); collect reads
    one step per run from it."""
    def run_config(workload, section, b, g, seed, data_dir, d, repeat=0, compute=None, variant="real", parents=None):
        d.mkdir(parents=True, exist_ok=True)
        (d / "run.json").write_text(json.dumps({"repeat": repeat}))
        ran.append((g, b, repeat))
        return 1.5

    def collect(d):
        r = json.loads((d / "run.json").read_text())["repeat"]
        steps = pd.DataFrame({"workload": ["dlrm"], "repeat": [r], "compute_ns": [1e6]})
        return {"steps": steps, "loader": pd.DataFrame(), "phases": pd.DataFrame(), "app": [],
                "ranks": [{"rank": 0, "repeat": r}], "usage": {}, "compute": {"mode": "real"}}

    monkeypatch.setattr(launch, "run_config", run_config)
    monkeypatch.setattr(launch, "collect", collect)
    monkeypatch.setattr(stage, "check_data", lambda *a, **k: None)


def _job(tmp_path, runs=1):
    cfg = SimpleNamespace(sweep=SimpleNamespace(ranks=[1], batch_sizes=[8, 16], runs=runs),
                          train=SimpleNamespace(compute="real"), model_dump=lambda mode: {"train": {}})
    return stage.Job("dlrm", "real", cfg, ([1], [8, 16]), tmp_path)


def test_a_stage_runs_rounds_and_a_decide_run_keeps_its_runs_and_runs_only_the_bought(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    ran = []
    _fake_runs(monkeypatch, ran)
    first = stage.measure_jobs(None, "dlrm", [_job(tmp_path, runs=2)], 0)
    assert sorted(ran) == [(1, 8, 0), (1, 8, 1), (1, 16, 0), (1, 16, 1)]
    assert set(first["steps"]["made_by"]) == {"repro"} and first["runs"]["run"].is_unique
    assert set(first["steps"]["run"]) == set(first["runs"]["run"])        # every step knows its run
    assert list(first["runs"]["level"]) == [0.95] * 4
    # the stage writes its rows as runs.csv and its steps as raw.parquet (what downstream reads)
    d = paths.results_dir("dlrm")
    d.mkdir(parents=True)
    m = first["measurement"]
    m.write(SimpleNamespace(path=lambda n: d / n))
    assert (d / "runs.csv").exists() and (d / "raw.parquet").exists() and (d / "rounds.json").exists()

    ran.clear()
    monkeypatch.setenv(P.ENV, "lmdbio dlrm")
    buy = [P.Purchase(run=1, configs=[{"workload": "dlrm", "variant": "real", "ranks": 1, "batch_size": 16}], runs=2)]
    got = stage.measure_jobs(None, "dlrm", [_job(tmp_path, runs=2)], 0, buy)
    assert ran == [(1, 16, 2), (1, 16, 3)]                      # the bought runs only
    assert list(got["runs"]["made_by"]) == ["repro"] * 4 + ["decide 1"] * 2
    assert got["runs"]["wall_seconds"].tolist() == [1.5] * 6
    bought = got["runs"][got["runs"]["made_by"] == "decide 1"]
    assert bought["level"].tolist() == pytest.approx([1 - 0.05 / 2] * 2)
    assert [r["made_by"] for r in got["ranks"]].count("decide 1") == 2
    with pytest.raises(ValueError, match="do not have"):
        stage.measure_jobs(None, "dlrm", [_job(tmp_path)], 0, [P.Purchase(run=2, configs=[{"workload": "resnet",
                           "variant": "real", "ranks": 1, "batch_size": 8}], runs=1)])


def test_a_kept_run_whose_folder_is_gone_stops_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    ran = []
    _fake_runs(monkeypatch, ran)
    first = stage.measure_jobs(None, "dlrm", [_job(tmp_path)], 0)
    gone = first["runs"]["run_dir"].iloc[0]
    import shutil
    shutil.rmtree(gone)
    with pytest.raises(ConfigError, match="G1-B.*dvc repro --force dlrm"):
        stage.gathered(first["measurement"])


def test_a_workloads_findings_are_judged_at_its_own_rows_level():
    """A purchase of DLRM rounds is one more look at DLRM's findings, not at UNET3D's: each
    workload's intervals take the level of its own rows."""
    from experiments.workloads import intervals as iv

    rows = []
    for w, level in (("unet3d", 0.95), ("dlrm", 1 - 0.05 / 2)):
        for i in range(40):
            rows.append({"workload": w, "row": "real", "ranks": 1, "batch_size": 8, "steady": True,
                         "compute_ns": 1e6 + 1e4 * (i % 7), "level": level})
    steps = pd.DataFrame(rows)
    value = iv.secs("compute_ns")
    u, d = iv.config_samples(steps, "unet3d", ("real",), value), iv.config_samples(steps, "dlrm", ("real",), value)
    assert u.level == pytest.approx(0.95) and d.level == pytest.approx(0.975)
    _, ci_u = iv.configs_stat(u, lambda a: float(pd.Series(a).median()))
    _, ci_d = iv.configs_stat(d, lambda a: float(pd.Series(a).median()))
    assert ci_u.level == pytest.approx(0.95) and ci_d.level == pytest.approx(0.975)
    assert iv.joined(u, d).level == pytest.approx(0.975)


def test_the_emulations_compute_model_is_what_the_stages_own_runs_give_whatever_a_purchase_adds():
    """compute_model.json (the sleep runs' model, UNET3D's evaluation model with it) must not
    move when a decide run appends rounds: the sleep runs kept beside the bought ones slept by
    it, and the traced comparison reads it."""
    from experiments.workloads import fits

    rng = np.random.default_rng(1)

    def steps(made_by, scale, repeat):
        rows = []
        for B in (1, 2, 4):
            for i in range(30):
                c = scale * (0.1 * B + 0.05) + rng.normal(0, 0.001)
                rows.append({"workload": "bert", "ranks": 1, "batch_size": B, "repeat": repeat, "rank": 0,
                             "epoch": 0, "step": i, "samples": B, "data_ns": 1000, "compute_ns": int(c * 1e9),
                             "step_ns": int(c * 1e9) + 1000, "made_by": made_by})
        return rows

    def evals(made_by, scale):
        return [{"window_s": scale * (1.0 + 0.5 * i), "bytes": 1e6 * (1 + i), "made_by": made_by} for i in range(6)]

    own_steps, own_evals = pd.DataFrame(steps("repro", 1.0, 0)), pd.DataFrame(evals("repro", 1.0))
    before = fits.emulation_inputs(own_steps, own_evals)
    after = fits.emulation_inputs(pd.concat([own_steps, pd.DataFrame(steps("decide 1", 3.0, 1))]),
                                  pd.concat([own_evals, pd.DataFrame(evals("decide 1", 3.0))]))
    pd.testing.assert_frame_equal(before[0], after[0])
    assert before[1] == after[1] and before[2] == after[2]
    assert fits.emulation_inputs(own_steps, None)[2] == {}


def test_a_stages_runs_of_two_ranks_are_forked_from_its_warm_parents_too(tmp_path, monkeypatch):
    """The warm launch serves every run of a workload stage, one rank or two (docs/statistics.md,
    "Two forked ranks: the same load"); a fresh launch passes no parents."""
    from experiments.host import warm_launch

    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    served = []
    _fake_runs(monkeypatch, [])
    fake = launch.run_config

    def run_config(workload, section, b, g, *a, parents=None, **k):
        served.append((g, parents is not None and parents.serves(g)))
        return fake(workload, section, b, g, *a, **k)

    monkeypatch.setattr(launch, "run_config", run_config)
    monkeypatch.setattr(warm_launch.Parents, "start", lambda self, frameworks: self)   # no parent started
    job = _job(tmp_path)
    job.grid = ([1, 2], [8])
    stage.measure_jobs(None, "dlrm", [job], 0)
    assert sorted(served) == [(1, True), (2, True)]
    served.clear()
    stage.measure_jobs(None, "dlrm", [job], 0, launch_mode="fresh")
    assert sorted(served) == [(1, False), (2, False)]
