"""make decide (experiments.decide, experiments.bought) on a tiny DVC project of two stages
(tests/fixtures/decide: a fake measuring stage with two configurations and a claims table of
two findings, one within reach and one forecast "never"): the purchase goes to the finding
within reach, its rows are appended and marked, DVC stays consistent; a Ctrl-C while the
stage measures puts everything back."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from experiments import bought, decide, sequential

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
    p = subprocess.Popen([sys.executable, "-m", "experiments.decide", "--minutes", "10"], cwd=root,
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
    p = decide.plan(before.reset_index(), 600, yaml.safe_load((root / "dvc.yaml").read_text()))
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
    """experiments.bought.buy: rounds over a purchase's configurations in a seeded order,
    repeats going on after the rows', marked with the run; no run starts after the deadline
    (a run under way finishes: never mid-sample)."""
    raw = pd.DataFrame({"config": ["A", "B"] * 3, "repeat": [0, 0, 1, 1, 2, 2], "made_by": bought.FIRST,
                        "level": 0.95})
    p = bought.Purchase(run=1, configs=[{"config": "A"}, {"config": "B"}], runs=5)
    t = [0.0]

    def run_one(c, i):
        t[0] += 10.0
        return {"config": c[0]}

    monkeypatch.setenv(bought.DEADLINE_ENV, "1e12")
    rows = bought.buy([("A",), ("B",)], ["config"], run_one, [p], raw, 1, clock=lambda: t[0])
    assert len(rows) == 5 and list(rows["repeat"]) == [3, 3, 4, 4, 5] and set(rows["made_by"]) == {"decide 1"}
    assert sorted(rows["config"][:2]) == ["A", "B"] and rows["level"].iloc[0] == pytest.approx(1 - 0.05 / 2)
    # already bought: not run again
    assert len(bought.buy([("A",), ("B",)], ["config"], run_one, [p], pd.concat([raw, rows]), 1)) == 0
    t[0] = 0.0
    monkeypatch.setenv(bought.DEADLINE_ENV, "25")   # runs start at 0, 10, 20; not at 30
    assert len(bought.buy([("A",), ("B",)], ["config"], run_one, [p], raw, 1, clock=lambda: t[0])) == 3
    with pytest.raises(ValueError, match="do not have"):
        bought.buy([("A",)], ["config"], run_one, [p], raw, 1)


def test_the_minutes_go_to_the_cheapest_findings_across_stages():
    """decide.take: findings priced alone and taken cheapest first whatever their stage (the
    first stage in dvc.yaml does not spend the minutes before a cheaper one elsewhere);
    findings of one stage share the rounds of their configurations; "never" is skipped."""
    J = sequential.Judged

    def stage(name, pending, configs_of, per_run, after=10.0):
        return decide._Stage(name, ["c"], [(i,) for i in range(4)], pending, {k: 6 for k in pending},
                             configs_of, per_run, after)

    first = stage("first", {"dear": J(False, 6, 60), "edge": J(False, 6, None, never=True)},
                  {"dear": frozenset({0, 1}), "edge": frozenset({0})}, per_run=10.0)   # 54 rounds x 2 x 10 s
    second = stage("second", {"cheap": J(False, 6, 8), "cheap2": J(False, 6, 12)},
                   {"cheap": frozenset({0, 1}), "cheap2": frozenset({1, 2})}, per_run=1.0)
    skipped = {}
    chosen, secs = decide.take({"first": first, "second": second}, 300.0, 5.0, skipped)
    assert chosen == {"second": ["cheap", "cheap2"]}
    assert secs == 5.0 + 6 * 3 * 1.0 + 10.0                    # cheap2's 6 rounds over the union {0, 1, 2}
    assert "never" in skipped["edge"] and "minutes hold 300 s" in skipped["dear"]
    offer = second.offer(chosen["second"])
    assert offer.runs == 18 and offer.configs == [{"c": 0}, {"c": 1}, {"c": 2}]
    # with more minutes the dear one is bought too, beside the cheap ones
    chosen, _ = decide.take({"first": first, "second": second}, 1200.0, 5.0, {})
    assert chosen == {"second": ["cheap", "cheap2"], "first": ["dear"]}


def test_a_finding_of_a_report_reading_two_buying_stages_is_bought_from_the_one_whose_runs_it_compares(
        monkeypatch, tmp_path):
    """AlexNet's report reads the prefetch sweep and the checkpoint runs: the checkpoint finding
    is named "not this stage's rounds" by the prefetch stage's hook, and bought from the checkpoint
    stage's all the same (not listed as skipped)."""
    table = pd.DataFrame([{"stage": "rep", "id": "ck-row", "kind": "finding", "verdict": "inconclusive"}])
    monkeypatch.setattr(decide, "buyable", lambda dvc_yaml: {"sweep": ["sweep", "rep"], "ck": ["ck", "rep"]})
    monkeypatch.setattr(decide.paths, "results_dir", lambda s: tmp_path)
    (tmp_path / "sequential.json").write_text("{}")

    def candidates(stage, reports, tab, skipped):
        pending = {}
        if stage == "sweep":
            skipped["ck-row"] = decide.NOT_ITS_ROUNDS.format(stage=stage)
        else:
            pending = {"ck-row": sequential.Judged(False, 6, 12)}
        return decide._Stage(stage, ["mode"], [("a",), ("b",)], pending, {k: 6 for k in pending},
                             {k: frozenset({0, 1}) for k in pending}, 2.0, 5.0)

    monkeypatch.setattr(decide, "_candidates", candidates)
    p = decide.plan(table, 600, {"stages": {}})
    assert [(o.stage, o.findings) for o in p.offers] == [("ck", ["ck-row"])] and "ck-row" not in p.skipped
    assert p.offers[0].runs == 6 * 2   # 6 more rounds of its two modes
