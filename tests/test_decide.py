"""make decide (experiments.review.decide, .purchases) on a tiny DVC project of two stages
(tests/fixtures/decide: a fake measuring stage with two configurations and a claims table of
two findings, one within reach and one forecast "never"): the purchase goes to the finding
within reach, its rows are appended and marked, DVC stays consistent; a Ctrl-C while the
stage measures puts everything back."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from experiments.review import decide
from experiments.repeats import purchases as P
from experiments.review.decide import pricing
from experiments.repeats.futility import Judged

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "decide"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, dict]:
    """The fixture project, its first run done (``dvc repro``); shared by the tests below, the
    Ctrl-C one first (it leaves the project as it found it)."""
    root = tmp_path_factory.mktemp("decide") / "project"
    shutil.copytree(FIXTURE, root)
    # kept as pipeline.yaml: a dvc.yaml in the fixture would join this project's own pipeline
    (root / "pipeline.yaml").rename(root / "dvc.yaml")
    (root / ".dvc").mkdir()
    (root / ".dvc" / "config").write_text("[core]\n    no_scm = True\n")   # `dvc init --no-scm`
    env = {**os.environ, "DLIO_ROOT": str(root), "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(["dvc", "repro", "-q"], cwd=root, env=env, check=True, capture_output=True)
    return root, env


def _status(root, env) -> str:
    return subprocess.run(["dvc", "status"], cwd=root, env=env, check=True, capture_output=True,
                          text=True).stdout


def test_a_ctrl_c_while_the_stage_measures_leaves_rows_and_lock_as_before(project, tmp_path):
    root, env = project
    raw0 = (root / "results/fake/raw.parquet").read_bytes()
    params0, lock0 = (root / "params.yaml").read_text(), (root / "dvc.lock").read_text()
    mark = tmp_path / "buying"
    p = subprocess.Popen([sys.executable, "-m", "experiments.review.decide", "--minutes", "10"], cwd=root,
                         env={**env, "FAKE_SLEEP": "30", "FAKE_MARK": str(mark)}, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.monotonic()
    while not mark.exists() and p.poll() is None and time.monotonic() - t0 < 120:
        time.sleep(0.2)
    assert mark.exists(), p.communicate()[0]
    os.killpg(p.pid, signal.SIGINT)   # as a terminal's Ctrl-C: decide's process group
    out = p.communicate(timeout=120)[0]
    assert p.returncode == 130, out
    assert "params.yaml put back" in out
    assert (root / "params.yaml").read_text() == params0 and (root / "dvc.lock").read_text() == lock0
    assert (root / "results/fake/raw.parquet").read_bytes() == raw0
    assert "up to date" in _status(root, env)


def test_decide_plans_for_the_finding_within_reach_and_refuses_a_changed_stage(project, monkeypatch):
    root, env = project
    before = pd.read_csv(root / "results/claims/claims.csv").set_index("id")
    assert set(before["verdict"]) == {"inconclusive"}
    monkeypatch.setenv("DLIO_ROOT", str(root))
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    p = decide.plan(before.reset_index(), 600, root)
    assert [o.findings for o in p.offers] == [["reach"]] and "never" in p.skipped["edge"]
    assert p.offers[0].configs == [{"config": "A"}, {"config": "B"}] and p.offers[0].runs % 2 == 0

    # buying itself (rows appended and marked, the first run's kept, params.yaml and dvc.lock
    # consistent) is tested on the real LMDBIO stage: tests/test_smoke_decide.py
    # a stage whose code changed since its rows were measured is not appended to
    with (root / "fake_stage.py").open("a") as f:
        f.write("# changed\n")
    with pytest.raises(SystemExit, match="decide: fake not up to date"):
        decide.run(10, root, finding="edge", rounds=1)


def test_bought_runs_stop_at_the_minutes_between_runs(monkeypatch):
    """experiments.repeats.purchases.buy: rounds over a purchase's configurations in a seeded
    order, runs going on after the rows', marked with the run; no run starts after the
    deadline (a run under way finishes: never mid-sample)."""
    raw = pd.DataFrame({"config": ["A", "B"] * 3, "repeat": [0, 0, 1, 1, 2, 2], "made_by": P.FIRST,
                        "level": 0.95})
    p = P.Purchase(run=1, configs=[{"config": "A"}, {"config": "B"}], runs=5)
    t = [0.0]
    configs = [{"config": "A"}, {"config": "B"}]

    def run_one(c, i):
        t[0] += 10.0
        return [{"config": c["config"]}]

    monkeypatch.setenv(P.DEADLINE_ENV, "1e12")
    rows = P.buy(configs, ["config"], run_one, [p], raw, 1, clock=lambda: t[0])
    assert len(rows) == 5 and list(rows["repeat"]) == [3, 3, 4, 4, 5] and set(rows["made_by"]) == {"decide 1"}
    assert sorted(rows["config"][:2]) == ["A", "B"] and rows["level"].iloc[0] == pytest.approx(1 - 0.05 / 2)
    # already bought: not run again
    assert len(P.buy(configs, ["config"], run_one, [p], pd.concat([raw, rows]), 1)) == 0
    t[0] = 0.0
    monkeypatch.setenv(P.DEADLINE_ENV, "25")   # runs start at 0, 10, 20; not at 30
    assert len(P.buy(configs, ["config"], run_one, [p], raw, 1, clock=lambda: t[0])) == 3
    with pytest.raises(ValueError, match="do not have"):
        P.buy(configs[:1], ["config"], run_one, [p], raw, 1)


def _stage(name, seconds, after=10.0):
    """A buying stage's rows for pricing: four configurations, 6 rounds each."""
    rows = pd.DataFrame([{"c": i, "repeat": r, "made_by": P.FIRST, "level": 0.95} for r in range(6) for i in range(4)])
    return pricing.StageRows(name, ["c"], [{"c": i} for i in range(4)], [seconds] * 4, rows, {}, after)


def test_the_minutes_go_to_the_cheapest_findings_across_stages():
    """decide's pricing: findings priced alone and taken cheapest first whatever their stage (the
    first stage in dvc.yaml does not spend the minutes before a cheaper one elsewhere);
    findings sharing a stage's configurations share their rounds; "never" is skipped."""
    stages = {"first": _stage("first", 10.0), "second": _stage("second", 1.0)}

    def priced(k, j, stage, idx):
        return pricing.Priced(k, j, pricing.rounds_needed(j, 6), {stage: idx})

    dear = priced("dear", Judged(False, 6, 60), "first", [0, 1])          # 54 rounds x 2 x 10 s
    edge = priced("edge", Judged(False, 6, None, never=True), "first", [0])
    cheap = priced("cheap", Judged(False, 6, 8), "second", [0, 1])        # 2 rounds
    cheap2 = priced("cheap2", Judged(False, 6, 12), "second", [1, 2])     # 6 rounds
    skipped = {}
    chosen = pricing.take([dear, edge, cheap, cheap2], stages, 300.0, 5.0, skipped)
    assert [p.finding for p in chosen] == ["cheap", "cheap2"]
    assert pricing.total(chosen, stages, 5.0) == 5.0 + 6 * 3 * 1.0 + 10.0   # cheap2's 6 rounds over {0, 1, 2}
    assert "never" in skipped["edge"] and "minutes hold 300 s" in skipped["dear"]
    (offer,) = pricing.offers(chosen, stages)
    assert offer.runs == 18 and offer.configs == [{"c": 0}, {"c": 1}, {"c": 2}]
    # with more minutes the dear one is bought too, beside the cheap ones
    chosen = pricing.take([dear, edge, cheap, cheap2], stages, 1200.0, 5.0, {})
    assert sorted(p.finding for p in chosen) == ["cheap", "cheap2", "dear"]


def test_a_finding_is_priced_in_the_stages_its_declaration_compares_and_nowhere_else():
    """AlexNet's report reads the prefetch sweep and the checkpoint runs: a checkpoint finding
    whose declaration compares two of the checkpoint stage's configurations is priced there
    alone; one without a declared comparison, in every buying stage its report reads."""
    from experiments.repeats.findings import Steering

    stages = {"sweep": _stage("sweep", 2.0), "ck": _stage("ck", 3.0)}
    rules = {"ck": [Steering("ck-row", "> 1", None, {"c": [1, 3]})], "sweep": []}
    claim = {"id": "ck-row", "kind": "finding", "verdict": "inconclusive", "our_value": 1.1, "ci_low": 0.9,
             "ci_high": 1.3, "n": 6, "n_to_decide": 12, "ci_coverage": None, "stage": "rep"}
    p = pricing.price(claim, stages, rules, ["sweep", "ck"])
    assert p.configs == {"ck": [1, 3]} and p.rounds and p.rounds >= 6
    q = pricing.price({**claim, "id": "other"}, stages, rules, ["sweep", "ck"])
    assert q.configs == {"sweep": [0, 1, 2, 3], "ck": [0, 1, 2, 3]}
    assert pricing.price({**claim, "id": "other"}, stages, rules, []) == pricing.NOT_MEASURED_HERE


def test_a_purchase_tops_up_the_configurations_that_share_a_finding_with_it():
    """issue 52: a finding comparing a bought configuration with one not bought is judged at the
    raised level (97.5 % after one purchase), which 6 runs cannot reach (96.9 % at most): the
    purchase adds a run to the other side, and on along the findings that side shares; a
    finding without a declared comparison here shares every configuration."""
    s = _stage("st", 2.0)
    s.findings = [{0, 1}, {1, 2}]
    assert pricing.top_up(s, {0}) == ([1, 2], 1)          # 1 shares with 0, then 2 with 1
    assert pricing.top_up(s, {3}) == ([], 0)              # 3 shares no finding
    s.findings = [{0, 1}, None]
    assert pricing.top_up(s, {0}) == ([1, 2, 3], 1)
    # a configuration already short of its level keeps its distance: 3 runs lack 3 at 95 %, 4 at 97.5 %
    few = s.rows[~((s.rows["c"] == 1) & (s.rows["repeat"] >= 3))].reset_index(drop=True)
    t = pricing.StageRows("st", ["c"], s.configs, s.seconds, few, {}, 10.0, [{0, 1}])
    assert t.runs == [6, 3, 6, 6] and pricing.top_up(t, {0}) == ([1], 1)
    # priced: the rounds, the top-up and the stages that read the results, once
    s.findings, s.readers = [{0, 1}], {"report": 30.0, "claims": 4.0}
    p = pricing.Priced("f", Judged(False, 6, 8), 2, {"st": [0]})
    assert pricing.total([p], {"st": s}, 5.0) == 5.0 + 2 * 2.0 + 1 * 2.0 + 10.0 + 34.0
    (o,) = pricing.offers([p], {"st": s})
    assert o.top_up == [{"c": 1}] and o.top_up_runs == 1 and o.planned == 3 and o.seconds == 6.0


def test_a_top_up_runs_after_the_bought_runs_at_their_level_and_is_recorded_as_made():
    from experiments.review.decide import params_edit

    raw = pd.DataFrame({"config": ["A", "B", "C"] * 6, "repeat": [r for r in range(6) for _ in range(3)],
                        "made_by": P.FIRST, "level": 0.95})
    configs = [{"config": c} for c in "ABC"]
    p = P.Purchase(run=1, configs=configs[:1], runs=2, top_up=configs[1:2], top_up_runs=1)
    rows = P.buy(configs, ["config"], lambda c, i: [{"config": c["config"]}], [p], raw, 1)
    assert list(rows["config"]) == ["A", "A", "B"] and list(rows["repeat"]) == [6, 7, 8]
    assert list(rows["level"]) == pytest.approx([1 - 0.05 / 2] * 3) and P.made(rows) == {"decide 1": 3}
    assert p.planned() == 3 and P.Purchase(run=1, configs=configs[:1], runs=2).record() == \
        {"run": 1, "configs": [{"config": "A"}], "runs": 2}   # written as before top-ups existed
    # cut short after the bought runs: recorded without its top-up
    text = params_edit.replace_section("x: 1\n", "decide", {"fake": [p.record()]})
    import yaml
    after = yaml.safe_load(params_edit.with_runs_made(text, yaml.safe_load(text), {"fake": 2}, 1))
    assert after["decide"]["fake"] == [{"run": 1, "configs": [{"config": "A"}], "runs": 2}]
    after = yaml.safe_load(params_edit.with_runs_made(text, yaml.safe_load(text), {"fake": 3}, 1))
    assert after["decide"]["fake"][0]["top_up_runs"] == 1


def test_a_run_of_two_rows_is_priced_at_its_whole_seconds(tmp_path, monkeypatch):
    """The blog writes a cold and a warm row per run, each with half the run's seconds: a
    configuration's price per run is the sum over its run's rows (median over runs)."""
    import json

    d = tmp_path / "results" / "st"
    d.mkdir(parents=True)
    rows = pd.DataFrame([{"c": c, "run": 2 * r + c, "repeat": r, "pass": p, "run_s": s, "made_by": P.FIRST,
                          "level": 0.95} for r in range(3) for c in (0, 1) for p, s in (("cold", 1.5), ("warm", 1.5))])
    rows.to_parquet(d / "raw.parquet", index=False)
    (d / "rounds.json").write_text(json.dumps({"keys": ["c"], "order": []}))
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    assert pricing.stage_rows("st", 0.0).seconds == [3.0, 3.0]


def test_a_stage_stops_its_bought_runs_at_its_share_of_the_minutes(monkeypatch):
    """A box slower than the prices: each stage's runs stop at its share (its priced seconds,
    stretched to the minutes), so the stage DVC runs last is not left without any."""
    raw = pd.DataFrame({"config": ["A", "B"] * 3, "repeat": [0, 0, 1, 1, 2, 2], "made_by": P.FIRST,
                        "level": 0.95})
    p = P.Purchase(run=1, configs=[{"config": "A"}, {"config": "B"}], runs=6)
    configs = [{"config": "A"}, {"config": "B"}]
    t = [100.0]

    def run_one(c, i):
        t[0] += 10.0
        return [{"config": c["config"]}]

    monkeypatch.setenv(P.DEADLINE_ENV, "1e12")
    # runs start at 100, 110, 120; the share of 25 s ends before the one at 130
    assert len(P.buy(configs, ["config"], run_one, [p], raw, 1, clock=lambda: t[0], share_s=25)) == 3
    # the shares: each offer's seconds stretched by the minutes over the plan (never shrunk)
    offers = [pricing.Offer("lmdbio", ["f"], configs, 6, 500.0),
              pricing.Offer("llm_checkpoint", ["g"], configs, 2, 100.0)]
    assert pricing.shares(offers, 1500.0, 1800.0) == {"lmdbio": 600.0, "llm_checkpoint": 120.0}
    assert pricing.shares(offers, 2000.0, 1800.0) == {"lmdbio": 500.0, "llm_checkpoint": 100.0}
    # runs priced at a few seconds keep half a minute: too coarse a price to cut on
    assert pricing.shares([pricing.Offer("fake", ["f"], configs, 2, 0.2)], 10.0, 600.0) == {"fake": 30.0}
    # the stage reads its own share from the environment decide sets
    monkeypatch.setenv(P.SHARES_ENV, json.dumps({"lmdbio": 600.0}))
    assert P.share_of("lmdbio") == 600.0 and P.share_of("deepio") is None
    monkeypatch.delenv(P.SHARES_ENV)
    assert P.share_of("lmdbio") is None


def test_decide_says_when_the_run_it_joins_is_hours_old(tmp_path):
    """Rounds bought hours after their run join its intervals across the box's two levels
    (G's decide run, 2 hours later, undid 5 findings): the plan says so."""
    from datetime import datetime, timezone

    assert decide.age_note(tmp_path) is None   # no plan: nothing to say
    (tmp_path / "results").mkdir()
    now = datetime(2026, 11, 30, 6, 0, tzinfo=timezone.utc).timestamp()

    def plan(**kw):
        (tmp_path / "results" / "plan.json").write_text(json.dumps(kw))

    plan(made_at="2026-11-30T03:00:00+00:00", after={"at": "2026-11-30T04:00:00+00:00"})
    note = decide.age_note(tmp_path, now=now)
    assert note is not None and "ended 2.0 h ago" in note and "widen" in note
    plan(made_at="2026-11-30T05:00:00+00:00", after={"at": "2026-11-30T05:30:00+00:00"})
    assert decide.age_note(tmp_path, now=now) is None
    plan(made_at="2026-11-30T01:00:00+00:00")   # a plan without the calibration after: its own time
    assert "ended 5.0 h ago" in decide.age_note(tmp_path, now=now)
