"""make decide's shared purchase of the thesis's workload stages (``decide.workloads``): rounds
numbered after the stages' own repeats at the Bonferroni level of one more look, a sweep that
reads its earlier runs back and runs only the bought ones, and decide pricing a finding of
real-against-sleep rows as one round of its workload in every stage that holds its samples."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments import bought, decide
from experiments.config import ConfigError
from experiments.workloads import launch, stage


def _p(run, workloads, rounds):
    return bought.Purchase(run=run, configs=[{"workload": w} for w in workloads], runs=rounds * len(workloads))


def test_shared_rounds_follow_the_stages_own_repeats_one_look_per_purchase():
    ps = [_p(1, ["dlrm"], 2), _p(2, ["unet3d", "dlrm"], 1)]
    assert bought.shared_rounds(ps, 1, "workload", "dlrm") == [
        (1, "decide 1", pytest.approx(1 - 0.05 / 2)), (2, "decide 1", pytest.approx(1 - 0.05 / 2)),
        (3, "decide 2", pytest.approx(1 - 0.05 / 3))]
    assert bought.shared_rounds(ps, 1, "workload", "unet3d") == [(1, "decide 2", pytest.approx(1 - 0.05 / 3))]
    assert bought.shared_rounds(ps, 1, "workload", "bert") == []
    with pytest.raises(ConfigError, match=r"decide.workloads.*\['resnet'\].*allowed: unet3d, bert, dlrm"):
        stage.measure("dlrm", None, 0, purchases=[_p(3, ["resnet"], 1)])   # before any work


def _fake_runs(monkeypatch, ran: list):
    """launch.run_config records the runs it is asked for (and writes run.json); collect reads
    one step per run from it."""
    def run_config(workload, section, b, g, seed, data_dir, d, repeat=0, compute=None, variant="real"):
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


def test_a_sweep_reads_its_kept_runs_back_and_runs_only_the_bought_rounds(tmp_path, monkeypatch):
    ran = []
    _fake_runs(monkeypatch, ran)
    cfg = SimpleNamespace(sweep=SimpleNamespace(ranks=[1], batch_sizes=[8, 16], repeats=1),
                          model_dump=lambda mode: {"train": {}})
    first = launch.sweep("dlrm", cfg, 0, tmp_path, tmp_path / "runs")
    assert ran == [(1, 8, 0), (1, 16, 0)] and set(first["steps"]["made_by"]) == {"repro"}
    assert list(first["runs"]["level"]) == [0.95, 0.95]

    ran.clear()
    keep = {r["run_dir"]: r for r in first["runs"].to_dict("records")}
    extra = bought.shared_rounds([_p(1, ["dlrm"], 1)], 1, "workload", "dlrm")
    got = launch.sweep("dlrm", cfg, 0, tmp_path, tmp_path / "runs", extra=extra, keep=keep)
    assert ran == [(1, 8, 1), (1, 16, 1)]                      # the bought round only
    assert list(got["runs"]["made_by"]) == ["repro", "repro", "decide 1", "decide 1"]
    assert list(got["steps"]["repeat"]) == [0, 0, 1, 1]         # the kept runs read back, then the new
    assert got["runs"]["wall_seconds"].tolist() == [1.5] * 4
    assert got["steps"]["level"].max() == pytest.approx(1 - 0.05 / 2)
    assert [r["made_by"] for r in got["ranks"]] == ["repro", "repro", "decide 1", "decide 1"]


def test_kept_runs_stop_naming_a_run_folder_that_is_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    d = tmp_path / "results" / "dlrm"
    d.mkdir(parents=True)
    there = tmp_path / "data" / "workload_runs" / "dlrm" / "G1-B8-r0"
    there.mkdir(parents=True)
    (there / "run.json").write_text("{}")
    pd.DataFrame({"run_dir": [str(there), str(there.parent / "G1-B16-r0")]}).to_csv(d / "runs.csv", index=False)
    assert stage.kept_runs("dlrm") is None                      # not a decide run: measure from scratch
    monkeypatch.setenv(bought.ENV, "lmdbio workloads")
    with pytest.raises(ConfigError, match="G1-B16-r0.*dvc repro --force dlrm"):
        stage.kept_runs("dlrm")
    (there.parent / "G1-B16-r0").mkdir()
    (there.parent / "G1-B16-r0" / "run.json").write_text("{}")
    assert sorted(stage.kept_runs("dlrm")) == sorted([str(there), str(there.parent / "G1-B16-r0")])


DVC = {"stages": {
    "unet3d": {"params": ["decide.workloads"], "deps": ["data/unet3d"]},
    "dlrm": {"params": ["decide.workloads"], "deps": ["data/dlrm"]},
    "workload_fits": {"deps": ["results/unet3d", "results/dlrm"]},
    "workload_validation": {"deps": ["results/unet3d", "results/dlrm", "results/workload_sleep"]},
    "workload_sleep": {"params": ["decide.workloads"], "deps": ["results/workload_fits/compute_model.json"]},
    "traced": {"deps": ["results/dlrm/checkpoint.json"]},
    "claims": {"deps": ["results/workload_fits", "results/workload_validation"]}}}


def test_a_shared_purchase_chains_its_stages_and_the_readers_of_their_rows_in_order():
    assert decide.shared(DVC) == {"workloads": ["unet3d", "dlrm", "workload_sleep"]}
    # the sleep stage reads the compute model: after the fits; the checkpoint-size reader is
    # not re-run (a purchase leaves that file as it was)
    assert decide.buyable(DVC)["workloads"] == ["unet3d", "dlrm", "workload_fits", "workload_sleep",
                                                "workload_validation"]
    assert decide.chain(["workloads"], DVC)[-1] == "claims"


def test_a_finding_of_real_against_sleep_rows_is_priced_as_its_workloads_round_in_every_stage(tmp_path, monkeypatch):
    monkeypatch.setattr(decide.paths, "results_dir", lambda s: tmp_path / s)
    for s, secs in (("unet3d", 100.0), ("dlrm", 20.0), ("workload_sleep", 30.0)):
        (tmp_path / s).mkdir()
        rows = [{"workload": w, "repeat": 0, "wall_seconds": secs if w == "dlrm" or s == "unet3d" else 40.0,
                 "made_by": "repro", "level": 0.95} for w in (["unet3d"] if s == "unet3d" else
                                                                   ["dlrm"] if s == "dlrm" else ["unet3d", "dlrm"])]
        pd.DataFrame(rows).to_csv(tmp_path / s / "runs.csv", index=False)
        (tmp_path / s / "env.json").write_text(json.dumps({"run": {"wall_s": 10.0 + sum(r["wall_seconds"] for r in rows)}}))
    for s in ("workload_fits", "workload_validation", "claims"):
        (tmp_path / s).mkdir()
        (tmp_path / s / "env.json").write_text(json.dumps({"run": {"wall_s": 5.0}}))
    table = pd.DataFrame([
        # one more round doubles its 120 steps: enough for 200 at the next look's level
        {"stage": "workload_validation", "id": "dlrm-sleep-au-above-90pct", "kind": "finding",
         "verdict": "inconclusive", "n": 120, "n_to_decide": 160},
        {"stage": "workload_fits", "id": "unet3d-compute-std-model-r2", "kind": "finding",
         "verdict": "inconclusive", "n": 44, "n_to_decide": 4000}])
    p = decide.plan(table, 300.0, DVC)
    assert [(o.stage, o.findings, o.configs, o.runs) for o in p.offers] == [
        ("workloads", ["dlrm-sleep-au-above-90pct"], [{"workload": "dlrm"}], 1)]
    # its round: dlrm's runs in the real stage (20 s) and the sleep stage (30 s)
    assert p.offers[0].seconds == pytest.approx(50.0)
    # the stages' own start-up (10 s each), the two reports and the claims table (5 s each)
    assert p.seconds == pytest.approx(50.0 + 30.0 + 15.0)
    assert "minutes hold 300 s" in p.skipped["unet3d-compute-std-model-r2"]
    assert stage.needs("bert-sleep-au", None, [("unet3d",), ("bert",)]) == [1]
    assert stage.needs("traced-similarity", None, [("unet3d",)]) is None


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
