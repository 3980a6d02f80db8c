"""The compute model carried to the hour (experiments.workloads.hour_level): a run that sleeps is
given the fit scaled by the real runs made just before it in its own stage, so that a fit made in
a slow hour (fresh clone K: BERT's fit 0.304 s a step, its real runs an hour later 0.223 s) does
not move the sleep row's and the traced comparison's ratios."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments.repeats.rounds import round_order
from experiments.workloads import compute_model as cm
from experiments.workloads import hour_level, launch, stage


def _model(mean_c=0.2, std_c=0.02, B=0.05):
    return cm._check({"schema": cm.SCHEMA, "host": "test",
                      "workloads": {"bert": {"mean": {"coef": {"G": 0.0, "B": B, "c": mean_c}},
                                             "std": {"coef": {"G": 0.0, "B": 0.0, "c": std_c}},
                                             "eval": {"mean_s": 1.0, "std_s": 0.1}},
                                    "dlrm": {"mean": {"coef": {"G": 0.0, "B": 0.0, "c": 0.1}},
                                             "std": {"coef": {"G": 0.0, "B": 0.0, "c": 0.0}}}}}, "test")


def _steps(means: dict, repeat=0, n=12, workload="bert"):
    """Steady-looking step records of one real run per (ranks, batch_size): ``n`` steps (the
    epoch's first is left out by fits.steady) around ``means[(G, B)]`` seconds."""
    rows = []
    for (g, b), mu in means.items():
        for i in range(n):
            rows.append({"workload": workload, "ranks": g, "batch_size": b, "repeat": repeat, "rank": 0,
                         "epoch": 0, "step": i, "compute_ns": mu * (1 + 0.01 * ((i % 3) - 1)) * 1e9})
    return pd.DataFrame(rows)


def test_scaled_multiplies_every_time_of_one_workload_and_says_so(tmp_path):
    m = _model()
    s = m.scaled("bert", 1.5, "round 0")
    assert s.mean_std("bert", 1, 2) == pytest.approx((1.5 * 0.3, 1.5 * 0.02))
    assert s.eval_mean_std("bert", 1, 2)[:2] == pytest.approx((1.5, 0.15))
    assert s.mean_std("dlrm", 1, 8) == m.mean_std("dlrm", 1, 8)          # another workload untouched
    assert m.mean_std("bert", 1, 2) == pytest.approx((0.3, 0.02))        # the base unchanged
    f = s.run_facts("bert", 1, 2)
    assert f["scale"] == 1.5 and f["scale_from"] == "round 0" and "scale" not in m.run_facts("bert", 1, 2)
    # the emulator reads a file: the scale survives the round trip
    p = tmp_path / "m.json"
    p.write_text(json.dumps(s.as_file()))
    back = cm.load(p).run_facts("bert", 1, 2)
    assert back["mean_s"] == pytest.approx(0.45) and back["scale"] == 1.5
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="scale factor"):
            m.scaled("bert", bad, "x")


def test_ratio_is_now_over_the_fits_own_runs_at_the_same_point_and_keeps_the_lines_error():
    """The factor is the box's speed now over when the fit was made, at the same (G, B): the
    fit's line may miss a point (L: BERT's sleep point 1.25x above its line), and a factor
    against the line would take that error away from what the sleep row tests."""
    from experiments.workloads import fits

    m = _model()                                    # line: 0.2 + 0.05 B: 0.25 at B=1, 0.3 at B=2
    # no measured points (a file written before they were kept): against the line
    r = hour_level.ratio(_steps({(1, 1): 0.25 * 1.3, (1, 2): 0.3 * 1.1}), m, "bert")
    assert sorted(r) == pytest.approx([1.1, 1.3], rel=1e-3)
    # the fit's own runs measured 0.3125 at B=1 (the line misses it by 1.25x): the box now 1.1x slower
    then = pd.DataFrame({"workload": ["bert"], "ranks": [1], "batch_size": [1], "mean_s": [0.3125],
                         "std_s": [0.02], "n": [40]})
    f = fits.model_file({"bert": m.workloads["bert"]}, "test", {}, None, measured=then)
    mm = cm._check(f, "fit")
    assert mm.measured_mean("bert", 1, 1) == 0.3125 and mm.measured_mean("bert", 1, 2) is None
    assert hour_level.ratio(_steps({(1, 1): 0.3125 * 1.1}), mm, "bert") == pytest.approx([1.1], rel=1e-3)
    carried = hour_level.carried(mm, "bert", [1.1], "x")
    assert carried.mean_std("bert", 1, 1)[0] == pytest.approx(0.25 * 1.1)     # the line, carried: its miss stays
    assert carried.measured_mean("bert", 1, 1) == pytest.approx(0.3125 * 1.1)
    assert hour_level.ratio(pd.DataFrame(), m, "bert") == []
    assert hour_level.carried(m, "bert", [], "none") is m               # nothing measured: the fit as it is
    assert hour_level.carried(m, "bert", [1.1, 1.3, 2.0], "x").mean_std("bert", 1, 1)[0] == pytest.approx(0.25 * 1.3)


def test_only_this_boxs_fit_is_carried_and_an_unknown_level_is_refused():
    assert hour_level.applies("hour", "fit") and hour_level.applies("hour", None)
    assert not hour_level.applies("hour", "thesis-v100")       # another accelerator's time: as it is
    assert not hour_level.applies("fit", "fit")
    with pytest.raises(ValueError, match="compute_level = 'minute'.*hour, fit"):
        hour_level.applies("minute", "fit")


def test_a_round_takes_its_own_real_runs_and_a_round_without_any_the_latest():
    m = _model()
    r = hour_level.Rounds(m)
    first = r.model("bert", 0).run_facts("bert", 1, 1)       # no real run yet: the fit, and it says so
    assert first["mean_s"] == m.mean_std("bert", 1, 1)[0] and first["scale"] == 1.0
    assert "no real run" in first["scale_from"]
    r.add("bert", 0, _steps({(1, 1): 0.25 * 1.2}, repeat=0))
    r.add("bert", 1, _steps({(1, 1): 0.25 * 0.8}, repeat=1))
    assert r.model("bert", 0).mean_std("bert", 1, 1)[0] == pytest.approx(0.30, rel=1e-3)
    assert r.model("bert", 1).mean_std("bert", 1, 1)[0] == pytest.approx(0.20, rel=1e-3)
    later = r.model("bert", 5).run_facts("bert", 1, 1)       # a focused round with no real run
    assert later["scale"] == pytest.approx(0.8, rel=1e-3) and "round 5 had none" in later["scale_from"]


def test_leads_open_every_round_in_the_seeded_order_and_no_leads_change_nothing():
    for rnd in range(5):
        plain = round_order(6, rnd, 7)
        led = round_order(6, rnd, 7, leads={1, 4})
        assert led[:2] == [i for i in plain if i in (1, 4)]
        assert led[2:] == [i for i in plain if i not in (1, 4)]
    assert round_order(6, 3, 7, ()) == round_order(6, 3, 7)


def test_a_sleep_run_is_given_the_fit_at_the_hour_of_its_rounds_real_runs(tmp_path, monkeypatch):
    """The sleep row's stage: the real runs beside the row open each round, and each sleep run of
    the round is given the fit times their median ratio; with level fit, the fit as it is."""
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    m = _model()
    slow = {0: 1.3, 1: 0.9}             # how much slower than the fit the box computes in each round
    ran = []

    def run_config(workload, section, b, g, seed, data_dir, d, repeat=0, compute=None, variant="real", parents=None):
        d.mkdir(parents=True, exist_ok=True)
        (d / "run.json").write_text(json.dumps({"repeat": repeat, "compute": compute or {"mode": "real"},
                                                "b": b}))
        ran.append((variant, b, repeat, (compute or {}).get("mean_s")))
        return 1.0

    def collect(d):
        r = json.loads((d / "run.json").read_text())
        b = r["b"]
        st = _steps({(1, b): m.mean_std("bert", 1, b)[0] * slow[r["repeat"]]}, repeat=r["repeat"])
        return {"steps": st, "loader": pd.DataFrame(), "phases": pd.DataFrame(), "app": [], "ranks": [],
                "usage": {}, "compute": r["compute"]}

    monkeypatch.setattr(launch, "run_config", run_config)
    monkeypatch.setattr(launch, "collect", collect)
    monkeypatch.setattr(stage, "check_data", lambda *a, **k: None)

    def cfg(compute):
        return SimpleNamespace(sweep=SimpleNamespace(ranks=[1], batch_sizes=[1, 2], runs=2),
                               train=SimpleNamespace(compute=compute),
                               model_dump=lambda mode: {"train": {"compute": compute}})

    grid = ([1], [1, 2])
    for level in ("hour", "fit"):
        ran.clear()
        jobs = [stage.Job("bert", "sleep", cfg("sleep"), grid, tmp_path, m, level),
                stage.Job("bert", "real", cfg("real"), grid, tmp_path)]
        got = stage.measure_jobs(None, f"workload_sleep_{level}", jobs, 3, launch_mode="fresh")
        for rnd in (0, 1):
            this = [x for x in ran if x[2] == rnd]
            if level == "hour":
                assert [x[0] for x in this] == ["real", "real", "sleep", "sleep"]   # the real runs open the round
            for v, b, _, given in this:
                if v == "sleep":
                    want = m.mean_std("bert", 1, b)[0] * (slow[rnd] if level == "hour" else 1.0)
                    assert given == pytest.approx(want, rel=1e-3)
        runs = got["runs"]
        sl = runs[runs["variant"] == "sleep"]
        want_scale = sl["repeat"].map(slow) if level == "hour" else pd.Series(1.0, index=sl.index)
        assert np.allclose(sl["compute_scale"], want_scale, rtol=1e-3)
        steps = got["steps"]
        assert steps.loc[steps["variant"] == "sleep", "given_mean_s"].notna().all()


def test_hour_level_without_real_runs_in_the_stage_is_refused(tmp_path):
    m = _model()
    cfg = SimpleNamespace(sweep=SimpleNamespace(ranks=[1], batch_sizes=[1], runs=1),
                          train=SimpleNamespace(compute="sleep"), model_dump=lambda mode: {})
    with pytest.raises(ValueError, match=r"compute_level hour for \['bert'\] needs real runs"):
        stage.measuring_stage(None, name="workload_sleep", seed=0,
                              jobs=[stage.Job("bert", "sleep", cfg, ([1], [1]), tmp_path, m, "hour")])


def test_utilization_uses_what_each_run_was_given():
    from experiments.workloads import validation

    m = _model()
    steps = _steps({(1, 1): 0.5}).assign(variant="sleep", run=0, sleep_ns=0.5e9, data_ns=0.0)
    phases = pd.DataFrame({"workload": ["bert"], "variant": ["sleep"], "ranks": [1], "batch_size": [1],
                           "repeat": [0], "run": [0], "rank": [0], "phase": ["train"], "seconds": [12 * 0.5]})
    au_fit = validation.utilization(steps, phases, m)["au"].iloc[0]
    au_given = validation.utilization(steps.assign(given_mean_s=0.5, given_std_s=0.0), phases, m)["au"].iloc[0]
    assert au_fit == pytest.approx(0.25 / 0.5) and au_given == pytest.approx(1.0)


def test_the_traced_comparisons_sides_after_real_are_given_its_pass_hour(tmp_path, monkeypatch):
    """sides.carried_model: the fit scaled by this pass's real side, written where the emulator
    reads it; level fit, or another model, leaves the source as it is."""
    from experiments.sidebyside import sides

    m, load = _model(), cm.load
    monkeypatch.setattr(cm, "load", lambda src=None: m if src in (None, "fit") else load(src))
    monkeypatch.setattr(launch, "collect", lambda d: {"steps": _steps({(2, 2): 0.3 * 1.25})})
    prep = {"workload": "bert", "point": SimpleNamespace(ranks=2, batch_size=2), "work_dir": tmp_path / "bert",
            "dlio_plan": "DLIO could not be prepared: not here"}
    real = {"status": "pending", "run_dir": str(tmp_path)}
    src, hour = sides.carried_model(real, prep, SimpleNamespace(compute_level="hour", compute_model="fit"))
    assert hour["scale"] == pytest.approx(1.25, rel=1e-3) and "real side" in hour["scale_from"]
    assert load(src).run_facts("bert", 2, 2)["mean_s"] == pytest.approx(0.3 * 1.25, rel=1e-3)
    assert sides.carried_model(real, prep, SimpleNamespace(compute_level="fit", compute_model="fit")) == ("fit", None)
    assert sides.carried_model(real, prep, SimpleNamespace(compute_level="hour", compute_model="thesis-v100")) \
        == ("thesis-v100", None)
    failed = {"status": "not measured", "run_dir": str(tmp_path)}
    src, hour = sides.carried_model(failed, prep, SimpleNamespace(compute_level="hour", compute_model="fit"))
    assert src == "fit" and hour["scale"] == 1.0 and "as it is" in hour["scale_from"]
