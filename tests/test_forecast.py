"""The plan before the first stage (experiments.pipeline.forecast) and its check against the run
(experiments.pipeline.ae_table): tiny fake projects, a fake reference table, fake env.json files."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from experiments.pipeline import ae_table, forecast

PARAMS = {
    "tiers": [{"name": "mem", "path": "/dev/shm/x"}, {"name": "disk", "path": "data/tiers/disk"}],
    "tfdata_read": {"threads": [1, 2, 4, 8], "variants": ["full", "raw"], "runs": 3, "warmup": 1,
                    "image_size": 224, "max_runs": 3},
    "imagenet_like": {"n_images": 100},
}
STAGES = {
    "imagenet_like": {"cmd": "x", "deps": ["n/1.ipynb"], "outs": [{"results/imagenet_like": {"cache": False}},
                                                                 {"data/imagenet_like": {"cache": False}}]},
    "tfdata_read": {"cmd": "x", "deps": ["n/2.ipynb", "data/imagenet_like"], "params": ["seed", "tiers", "tfdata_read"],
                    "outs": [{"results/tfdata_read": {"cache": False}}]},
    "tfdata_read_report": {"cmd": "x", "deps": ["results/tfdata_read/raw.parquet"],
                           "outs": [{"results/tfdata_read_report": {"cache": False}}]},
    "claim_rules": {"cmd": "x", "deps": ["n/0.ipynb"], "outs": [{"results/claim_rules": {"cache": False}}]},
}


def reference() -> forecast.Reference:
    """tfdata_read at PARAMS: 2 tiers x 2 variants x 4 threads x (3 + 1) rounds = 64 runs of 2 s
    and 30 s outside them; the data stage 100 images in 50 s; the others fixed."""
    rows = {
        "imagenet_like": forecast.reference_row("imagenet_like", 50.0, 100, 50.0, 1000, 100.0, "t"),
        "tfdata_read": forecast.reference_row("tfdata_read", 158.0, 64, 128.0, 0, 64.0, "t"),
        "tfdata_read_report": forecast.reference_row("tfdata_read_report", 10.0, 0, 0.0, 5, None, "t"),
        "claim_rules": forecast.reference_row("claim_rules", 3.0, 0, 0.0, 5, None, "t"),
    }
    return forecast.Reference(rows, {"commit": "abc", "host": "ref", "cpu_s": 1.0, "io_s": 2.0}, PARAMS)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": STAGES}, sort_keys=False))
    (tmp_path / "params.yaml").write_text("# profile: default. generated\n" + yaml.safe_dump(PARAMS))
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    return tmp_path


def test_sizes_follow_the_stages_configurations():
    assert forecast.size_of("tfdata_read", PARAMS) == 2 * 2 * 4 * 4
    assert forecast.size_of("imagenet_like", PARAMS) == 100
    assert forecast.size_of("claims", PARAMS) is None
    with pytest.raises(SystemExit, match="tfdata_read"):
        forecast.size_of("tfdata_read", {"tiers": [], "tfdata_read": {}})


def test_at_the_references_params_and_speed_the_forecast_is_its_wall_time():
    ref = reference()
    for st, r in ref.rows.items():
        assert forecast.forecast(st, ref, PARAMS, 1.0).seconds == pytest.approx(r["wall_s"])
    assert forecast.reference_row("s", 100.0, 10, 120.0, 0, 10.0, "t")["fixed_s"] == 0   # runs never exceed the stage


def test_the_forecast_moves_with_the_params_and_the_box():
    ref = reference()
    half = {**PARAMS, "tfdata_read": {**PARAMS["tfdata_read"], "threads": [1, 2]}}
    x = forecast.forecast("tfdata_read", ref, half, 1.0)
    assert x.runs == 32 and x.seconds == pytest.approx(32 * 2 + 30) and "0.50" in x.note
    more = {**PARAMS, "tfdata_read": {**PARAMS["tfdata_read"], "runs": 7}}   # 8 rounds, not 4
    assert forecast.forecast("tfdata_read", ref, more, 1.0).runs == 128
    assert forecast.forecast("tfdata_read", ref, PARAMS, 1.5).seconds == pytest.approx(1.5 * 158)
    big = {**PARAMS, "imagenet_like": {"n_images": 300}}
    y = forecast.forecast("imagenet_like", ref, big, 1.0)
    assert y.seconds == pytest.approx(150) and y.bytes == 3000   # a data set's time and bytes follow its images
    assert forecast.forecast("tfdata_read_report", ref, half, 1.0).seconds == 10   # no runs: as measured
    assert forecast.forecast("unknown", ref, PARAMS, 1.0).note.startswith("not in the reference")


def test_a_change_to_what_a_run_does_is_named_not_hidden(project):
    """The size rule's own parameters move the runs; any other parameter of the stage that differs
    from the reference run's changes what a run does, which the reference's seconds do not know."""
    declared = ["seed", "tiers", "tfdata_read", {"params.yaml": ["decide.tfdata_read"]}]
    assert forecast.counted("tfdata_read", PARAMS) == {
        "tiers", "tfdata_read.threads", "tfdata_read.variants", "tfdata_read.runs", "tfdata_read.warmup"}
    counts = {**PARAMS, "seed": 7, "tfdata_read": {**PARAMS["tfdata_read"], "threads": [1], "max_runs": 9}}
    assert forecast.run_changes("tfdata_read", counts, PARAMS, declared) == []
    longer = {**PARAMS, "tfdata_read": {**PARAMS["tfdata_read"], "image_size": 512}}
    assert forecast.run_changes("tfdata_read", longer, PARAMS, declared) == ["tfdata_read.image_size"]
    assert forecast.run_changes("tfdata_read", longer, None, declared) == []   # no reference params: nothing to say
    x = forecast.forecast("tfdata_read", reference(), longer, 1.0, declared)
    assert "UNKNOWN run length: tfdata_read.image_size" in x.note
    p = forecast.plan(longer, reference(), ["tfdata_read"], {}, ae_table.stages())
    assert "1 stage(s) run differently from the reference run (other parameters or code: tfdata_read)" in forecast.words(p)


def test_a_change_to_a_stages_code_since_the_reference_is_named(project):
    deps = ["n/2.ipynb", "experiments/chien", "data/imagenet_like"]
    files = {"experiments/chien/tfdata_read.py", "experiments/chienx.py", "README.md"}
    assert forecast.code_changes(deps, files) == ["experiments/chien/tfdata_read.py"]
    assert forecast.code_changes(deps, None) == [] and forecast.code_changes(deps, set()) == []
    st = {**ae_table.stages()}
    st["tfdata_read"] = {**st["tfdata_read"], "deps": deps}
    p = forecast.plan(PARAMS, reference(), ["tfdata_read"], {}, st, files)
    assert "CODE CHANGED since the reference run: experiments/chien/tfdata_read.py" in p["stages"]["tfdata_read"]["note"]
    assert "run differently from the reference run (other parameters or code: tfdata_read)" in forecast.words(p)
    unknown = forecast.plan(PARAMS, reference(), ["tfdata_read"], {}, st, None)
    assert "not in this checkout's history" in forecast.words(unknown)
    assert forecast.changed_since("0" * 40, project) is None   # not a git checkout, or no such commit


def test_the_scale_is_the_geometric_mean_of_the_two_benchmarks_ratios():
    f, ratios = forecast.scale({"cpu_s": 2.0, "io_s": 8.0}, {"cpu_s": 1.0, "io_s": 2.0})
    assert ratios == {"cpu_s": 2.0, "io_s": 4.0} and f == pytest.approx(8 ** 0.5)
    assert forecast.scale({"cpu_s": 2.0, "io_s": 8.0}, {}) == (1.0, {})


def test_each_stage_weighs_the_two_ratios_by_its_cpu_share():
    r = {"cpu_s": 2.0, "io_s": 0.5}
    assert forecast.weighted(r, 1.0) == 2.0 and forecast.weighted(r, 0.0) == 0.5
    assert forecast.weighted(r, None) == pytest.approx(1.0) and forecast.weighted(r, 3.0) == 2.0
    assert forecast.weighted({"io_s": 0.5}, 1.0) == 0.5 and forecast.weighted({}, 0.3) == 1.0
    ref = reference()
    ref.rows["tfdata_read"]["cpu_share"] = 1.0   # CPU-bound on the reference box: the CPU ratio alone
    x = forecast.forecast("tfdata_read", ref, PARAMS, r)
    assert x.factor == 2.0 and x.seconds == pytest.approx(2 * 158)
    assert forecast.forecast("claim_rules", ref, PARAMS, r).factor == pytest.approx(1.0)
    assert forecast.reference_row("s", 100.0, 0, 0.0, 0, None, "t", cpu_s=150.0)["cpu_share"] == 1.0
    assert forecast.reference_row("s", 100.0, 0, 0.0, 0, None, "t", cpu_s=25.0)["cpu_share"] == 0.25


def test_only_the_stale_stages_and_their_downstream_run(project):
    st = ae_table.stages()
    assert forecast.to_run(["tfdata_read"], st) == ["tfdata_read", "tfdata_read_report"]
    assert forecast.to_run(["imagenet_like"], st) == ["imagenet_like", "tfdata_read", "tfdata_read_report"]
    assert forecast.to_run([], st) == []
    p = forecast.plan(PARAMS, reference(), ["tfdata_read"], {"cpu_s": 1.0, "io_s": 2.0}, st)
    assert p["total_s"] == pytest.approx(158 + 10)
    assert p["to_run"] == ["tfdata_read", "tfdata_read_report"]
    text = forecast.words(p)
    assert "up to date (not run, not counted): imagenet_like, claim_rules" in text
    assert "total: 2 min 48 s of stages for 2 stage(s)" in text and "x1.00" in text
    p["loadavg"] = 99.0
    assert "lengthens every stage beyond this forecast" in forecast.words(p)


def test_the_reference_table_round_trips(tmp_path):
    ref = reference()
    f = forecast.write_reference(ref, tmp_path / "ref.csv")
    back = forecast.read_reference(f)
    assert back.meta["commit"] == "abc" and back.meta["cpu_s"] == 1.0
    assert back.rows["tfdata_read"]["runs"] == 64 and back.rows["tfdata_read"]["fixed_s"] == 30
    assert back.rows["claim_rules"]["size"] is None and back.rows["claim_rules"]["cpu_share"] is None
    assert back.params == PARAMS   # the reference run's parameters travel beside the table
    with pytest.raises(SystemExit, match="record"):
        forecast.read_reference(tmp_path / "missing.csv")


def _env(root, stage, wall, started="2026-01-01T01:00:00+00:00"):
    d = root / "results" / stage
    d.mkdir(parents=True, exist_ok=True)
    (d / "env.json").write_text(json.dumps({"run": {
        "wall_s": wall, "cpu_s": wall / 2, "started_at": started, "host": "box", "loadavg_start": [1, 1, 1], "loadavg_end": [1, 1, 1],
        "outs_bytes": {f"results/{stage}": 100}, "tier_bytes_added": {"disk": 50}}}))
    return d


def test_record_takes_runs_and_their_seconds_from_the_rows(project, monkeypatch):
    monkeypatch.setattr(forecast, "calibrate", lambda *a, **k: {"cpu_s": 0.5, "io_s": 0.25})
    d = _env(project, "tfdata_read", 100.0)
    # 3 runs; the second has two passes sharing its seconds (as the blog's cold and warm)
    from experiments.repeats.purchases import FIRST

    pd.DataFrame({"run": [0, 1, 1, 2, 3], "run_s": [20.0, 10.0, 10.0, 20.0, 99.0],
                  "made_by": [FIRST] * 4 + ["decide-1"]}).to_parquet(d / "raw.parquet")   # run 3: bought later
    _env(project, "tfdata_read_report", 7.0)
    ref = forecast.record(project / "ref.csv")
    t = ref.rows["tfdata_read"]
    assert (t["runs"], t["run_s"], t["fixed_s"], t["size"], t["cpu_share"]) == (3, 20.0, 40.0, 64.0, 0.5)
    assert ref.rows["tfdata_read_report"]["fixed_s"] == 7.0 and ref.rows["tfdata_read_report"]["bytes"] == 150
    assert ref.meta["cpu_s"] == 0.5 and ref.meta["profile"] == "default"
    assert forecast.read_reference(project / "ref.csv").rows["tfdata_read"]["run_s"] == 20.0


def test_record_takes_the_calibration_its_runs_plan_measured_before_them(project, monkeypatch):
    ran = []
    monkeypatch.setattr(forecast, "calibrate", lambda *a, **k: ran.append(1) or {"cpu_s": 0.5, "io_s": 0.25})
    _env(project, "tfdata_read_report", 7.0, started="2026-01-01T01:00:00+00:00")
    plan = {"made_at": "2026-01-01T00:59:00+00:00", "calibration": {"here": {"cpu_s": 0.36, "io_s": 0.15}}}
    (project / "results" / "plan.json").write_text(json.dumps(plan))
    ref = forecast.record(project / "ref.csv")
    assert (ref.meta["cpu_s"], ref.meta["io_s"], ref.meta["calibrated_at"]) == (0.36, 0.15, plan["made_at"]) and not ran
    # a plan made after a recorded stage had started is another run's: this box's benchmark now
    _env(project, "claim_rules", 3.0, started="2026-01-01T00:58:00+00:00")
    ref = forecast.record(project / "ref.csv")
    assert (ref.meta["cpu_s"], ref.meta["io_s"]) == (0.5, 0.25) and ran == [1]


def test_a_measured_record_parses_its_times_and_bytes():
    assert forecast._seconds("3 min 7 s") == 187 and forecast._seconds("42 s") == 42
    assert forecast._bytes("231.9 MB") == 231_900_000 and forecast._bytes("none") == 0


def _plan(made="2026-01-01T00:00:00+00:00", **forecasts):
    return {"made_at": made, "to_run": list(forecasts), "total_s": sum(forecasts.values()),
            "calibration": {"factor": 1.0},
            "stages": {k: {"forecast_s": v} for k, v in forecasts.items()}}


def test_the_forecast_against_actual_judges_the_whole_and_stages_over_two_minutes(project):
    _env(project, "tfdata_read", 300.0)                 # forecast 240: -20 % of actual, within
    _env(project, "imagenet_like", 100.0)               # forecast 50: off by half, but under 2 min
    _env(project, "claim_rules", 3.0, started="2025-12-31T00:00:00+00:00")   # before the plan: not run since
    plan = _plan(tfdata_read=240.0, imagenet_like=50.0, claim_rules=3.0)
    cs = {c.stage: c for c in ae_table.checks(plan, ae_table.runs())}
    assert cs["tfdata_read"].ratio == pytest.approx(1.25) and cs["tfdata_read"].judged and cs["tfdata_read"].within
    assert not cs["imagenet_like"].judged and cs["imagenet_like"].within is False
    assert cs["claim_rules"].actual_s is None and cs["claim_rules"].within is None
    w = ae_table.whole(list(cs.values()))
    assert (w.forecast_s, w.actual_s) == (290.0, 400.0) and not w.within
    text = ae_table.forecast_summary(plan, list(cs.values()))
    assert "stages over 2 min within 20 %: 1 of 1" in text and "not run since the plan: claim_rules" in text
    assert text.endswith(": not judged: not every stage of the plan has run since.")
    table = ae_table.forecast_table(list(cs.values()))
    assert "| `tfdata_read` | 4 min 0 s | 5 min 0 s | 1.25 | yes |" in table
    assert "| `imagenet_like` | 50 s | 1 min 40 s | 2.00 |  |" in table
    assert "| **whole run** | 4 min 50 s | 6 min 40 s | 1.38 | **no** |" in table


def test_a_forecast_within_20_percent_everywhere_is_met(project):
    _env(project, "tfdata_read", 300.0)
    _env(project, "imagenet_like", 100.0)
    plan = _plan(tfdata_read=330.0, imagenet_like=90.0)
    cs = ae_table.checks(plan, ae_table.runs())
    assert ae_table.forecast_summary(plan, cs).endswith(": met.")
    off = _plan(tfdata_read=200.0, imagenet_like=100.0)   # the stage over 2 min off by a third
    assert ae_table.forecast_summary(off, ae_table.checks(off, ae_table.runs())).endswith(": not met.")
    assert ae_table.forecast_summary(None, []).startswith("No plan recorded")
    assert "nothing to run" in ae_table.forecast_summary(_plan(), [])


def test_the_calibration_after_the_run_says_whether_the_box_changed_speed(project, monkeypatch):
    """make repro's last step takes the calibration again: a box that slowed during the run (the
    shared box's slow hours, which the calibration before the first stage cannot see) is named."""
    _env(project, "tfdata_read", 300.0)
    plan = _plan(tfdata_read=330.0)
    plan["calibration"] = {"factor": 1.0, "reference": {"cpu_s": 1.0, "io_s": 1.0}}
    forecast.write_plan(plan)
    monkeypatch.setattr(forecast, "calibrate", lambda: {"cpu_s": 1.5, "io_s": 1.3})
    assert forecast.main(["after"]) == 0
    kept = ae_table.read_plan()
    assert kept["after"]["factor"] == pytest.approx((1.5 * 1.3) ** 0.5) and kept["after"]["here"]["cpu_s"] == 1.5
    text = ae_table.forecast_summary(kept, ae_table.checks(kept, ae_table.runs()))
    assert "after the run read x1.40" in text and "speed changed during the run" in text
    kept["after"] = forecast.recalibrate(kept, {"cpu_s": 1.05, "io_s": 1.0})
    assert "kept its speed" in ae_table.forecast_summary(kept, ae_table.checks(kept, ae_table.runs()))
    assert "after the run" not in ae_table.forecast_summary(plan, ae_table.checks(plan, ae_table.runs()))


def test_make_ae_table_shows_the_forecast_against_actual(project, capsys):
    (project / "docs").mkdir()
    (project / ae_table.GUIDE).write_text("<!-- ae:summary -->\n<!-- /ae:summary -->\n<!-- ae:table -->\n<!-- /ae:table -->\n")
    _env(project, "tfdata_read", 300.0)
    forecast.write_plan(_plan(tfdata_read=330.0))
    assert ae_table.main([]) == 0
    out = capsys.readouterr().out
    assert "| tfdata_read | 5 min 30 s | 5 min 0 s | 0.91 | yes |" in out and ": met." in out
    assert "| `tfdata_read` | 5 min 30 s | 5 min 0 s | 0.91 | yes |" in (project / "docs" / "ae-table.md").read_text()
    assert "Forecast against actual" in (project / ae_table.GUIDE).read_text()


def test_the_plan_is_written_atomically_and_read_back(project):
    p = _plan(tfdata_read=1.0)
    forecast.write_plan(p)
    assert ae_table.read_plan() == p
    assert not list((project / "results").glob(".*.tmp"))


@pytest.mark.parametrize("profile", ["default", "smoke", "paper"])
def test_every_size_rule_reads_every_profile(profile):
    """Each stage's size rule (its registry entry's) counts the runs of the shipped profiles (a
    renamed parameter fails here, not in a reviewer's make repro), and the shipped table has a
    size wherever it has runs."""
    from experiments import stages
    from experiments.pipeline.profile import render

    params = render(profile)
    sized = [s.name for s in stages.STAGES if s.size]
    for stage in sized:
        assert forecast.size_of(stage, params) > 0, stage
    ref = forecast.read_reference()
    assert all(ref.rows[s]["size"] for s in sized if s in ref.rows and ref.rows[s]["runs"])


def test_make_repro_stages_forces_them_and_their_downstream_after_the_stale_upstream(project):
    st = ae_table.stages()
    assert forecast.chosen(["tfdata_read"], st) == ["tfdata_read", "tfdata_read_report"]
    assert forecast.before(["tfdata_read"], st) == ["imagenet_like"]   # its data set, run by dvc when stale
    # the names in dvc.yaml's order; a stage between two named ones is forced, not run first
    assert forecast.repro_commands(["tfdata_read_report", "imagenet_like"], st) == [
        ["dvc", "repro", "--force", "--downstream", "imagenet_like", "tfdata_read_report"]]
    assert forecast.repro_commands(["tfdata_read"], st) == [
        ["dvc", "repro", "imagenet_like"], ["dvc", "repro", "--force", "--downstream", "tfdata_read"]]
    with pytest.raises(SystemExit, match=r"zzz not a stage of dvc.yaml; allowed: imagenet_like, tfdata_read, "
                                         r"tfdata_read_report, claim_rules"):
        forecast.repro_commands(["tfdata_read", "zzz"], st)
    # the plan counts the forced stages, and the stale ones upstream of them only
    p = forecast.plan(PARAMS, reference(), ["claim_rules"], {"cpu_s": 1.0, "io_s": 2.0}, st, names=["tfdata_read"])
    assert p["to_run"] == ["tfdata_read", "tfdata_read_report"] and p["total_s"] == pytest.approx(158 + 10)
    assert "STAGES=tfdata_read: those and every stage downstream of one forced" in forecast.words(p)
    assert "not run, not counted (neither named nor downstream of a named stage, or up to date upstream of one): " \
           "imagenet_like, claim_rules" in forecast.words(p)
    p = forecast.plan(PARAMS, reference(), ["imagenet_like"], {"cpu_s": 1.0, "io_s": 2.0}, st, names=["tfdata_read"])
    assert p["to_run"] == ["imagenet_like", "tfdata_read", "tfdata_read_report"]


def test_make_repro_stages_runs_the_other_inputs_of_what_it_forces_downstream():
    """A forced downstream stage that reads a second measuring stage gets it first when stale:
    STAGES=traced_comparison forces workload_validation, which reads workload_sleep too (a fresh
    clone of 9f702b6 failed there, workload_sleep never run)."""
    st = {"data": {"cmd": "x", "outs": ["data/d"]},
          "traced": {"cmd": "x", "deps": ["data/d"], "outs": ["results/traced"]},
          "sleep": {"cmd": "x", "deps": ["data/d"], "outs": ["results/sleep"]},
          "validation": {"cmd": "x", "deps": ["results/traced/raw.parquet", "results/sleep/raw.parquet"],
                         "outs": ["results/validation"]}}
    assert forecast.chosen(["traced"], st) == ["traced", "validation"]
    assert forecast.before(["traced"], st) == ["data", "sleep"]
    assert forecast.repro_commands(["traced"], st) == [
        ["dvc", "repro", "data", "sleep"], ["dvc", "repro", "--force", "--downstream", "traced"]]


def test_an_unknown_stage_stops_before_any_work(project, monkeypatch):
    ran = []
    monkeypatch.setattr(forecast, "calibrate", lambda *a, **k: ran.append("calibrate"))
    monkeypatch.setattr(forecast.subprocess, "run", lambda cmd, **k: ran.append(cmd))
    for cmd in ("plan", "repro"):
        with pytest.raises(SystemExit, match="zzz not a stage"):
            forecast.main([cmd, "--stages", "tfdata_read zzz"])
    assert ran == [] and not (project / ae_table.PLAN).exists()
    monkeypatch.setattr(forecast.subprocess, "run", lambda cmd, **k: ran.append(cmd) or type("R", (), {"returncode": 0}))
    assert forecast.main(["repro", "--stages", "tfdata_read"]) == 0
    assert ran == [["dvc", "repro", "imagenet_like"], ["dvc", "repro", "--force", "--downstream", "tfdata_read"]]


def test_a_claims_cost_is_the_reference_seconds_of_what_its_stages_re_run(project):
    """tfdata_read_report's claims: STAGES=tfdata_read (the measuring stage upstream), which
    re-runs it and its report (158 + 10 s), the data set apart (50 s); a stage with no measuring
    stage upstream names itself; a stage the reference lacks is named, not hidden."""
    st, ref = ae_table.stages(), reference()
    c = forecast.cost("tfdata_read_report", st, ref)
    assert (c.stages, c.runs, c.seconds, c.data_s, c.unknown) == (
        ["tfdata_read"], ["tfdata_read", "tfdata_read_report"], 168.0, 50.0, [])
    assert c.command == 'make repro STAGES="tfdata_read"' and c.minutes == pytest.approx(2.8)
    c = forecast.cost("imagenet_like", st, ref)
    assert c.stages == ["imagenet_like"] and c.seconds == 50 + 158 + 10 and c.data_s == 0
    del ref.rows["tfdata_read_report"]
    assert forecast.cost("tfdata_read_report", st, ref).unknown == ["tfdata_read_report"]
