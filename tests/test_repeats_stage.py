"""The one measuring-stage interface (experiments.repeats.stage): rounds, run ids and side tables,
purchases after the rounds, a decide run appending to the kept rows, and the per-configuration
level of a purchase."""

import json

import pandas as pd
import pytest

from experiments.settings import paths
from experiments import repeats
from experiments.repeats import purchases as P
from experiments.repeats.stage import ROUNDS_FILE, MeasuringStage, Run


def _stage(calls, tables=("steps",), judge=None, rounds=None):
    configs = [{"tier": t, "threads": n} for t in ("mem", "disk") for n in (1, 2)]

    def run_one(c, repeat):
        calls.append((c["tier"], c["threads"], repeat))
        steps = pd.DataFrame({"step": range(3), "s": [0.1 * c["threads"]] * 3})
        return Run({"seconds": 1.0 / c["threads"] + 0.01 * repeat}, {"steps": steps})

    return MeasuringStage("tfdata_read", ("tier", "threads"), configs, run_one,
                          rounds or repeats.RoundsPlan(3, 3), seed=7, warmup=1, tables=tables, judge=judge)


def test_rounds_give_every_run_an_id_its_tags_and_its_side_rows():
    calls = []
    m = repeats.measure(_stage(calls))
    assert len(m.rows) == 4 * 4 and len(calls) == 16          # a warm-up round, then 3
    assert m.rows["run"].is_unique and set(m.rows["made_by"]) == {"repro"}
    assert m.rows["warmup"].sum() == 4 and (m.rows["run_s"] >= 0).all()
    steps = m.tables["steps"]
    assert len(steps) == 16 * 3 and set(steps["run"]) == set(m.rows["run"])
    # every side row carries its run's tags and configuration keys
    j = steps.merge(m.rows[["run", "tier", "threads", "repeat", "made_by"]], on="run", suffixes=("", "_r"))
    assert (j["tier"] == j["tier_r"]).all() and (j["repeat"] == j["repeat_r"]).all()
    # rounds in a seeded order: the same seed, the same order
    calls2 = []
    repeats.measure(_stage(calls2))
    assert calls == calls2 and m.course["keys"] == ["tier", "threads"]


def test_a_purchase_runs_after_the_rounds_and_raises_only_its_configurations_level():
    calls = []
    buy = [P.Purchase(run=1, configs=[{"tier": "mem", "threads": 1}, {"tier": "mem", "threads": 2}], runs=4)]
    m = repeats.measure(_stage(calls), buy)
    bought = m.rows[m.rows["made_by"] == "decide 1"]
    assert len(bought) == 4 and set(bought["tier"]) == {"mem"}
    assert bought["repeat"].min() > m.rows.loc[m.rows["made_by"] == "repro", "repeat"].max()
    own = m.rows[m.rows["made_by"] == "repro"]
    assert set(own["level"]) == {0.95} and bought["level"].tolist() == pytest.approx([1 - 0.05 / 2] * 4)
    # the disk tier's rows were not bought: the level of its findings stays the rounds' own
    assert repeats.level_of(m.rows[m.rows["tier"] == "disk"]) == 0.95
    assert m.course["decide"][0]["runs"] == 4


def test_a_second_purchase_of_the_same_configuration_is_one_more_look_at_it_alone():
    cfg = {"tier": "mem", "threads": 1}
    buys = [P.Purchase(run=1, configs=[cfg], runs=1), P.Purchase(run=2, configs=[{"tier": "disk", "threads": 1}], runs=1),
            P.Purchase(run=3, configs=[cfg], runs=1)]
    m = repeats.measure(_stage([]), buys)
    lv = m.rows.groupby("made_by")["level"].max()
    assert lv["decide 1"] == pytest.approx(1 - 0.05 / 2)
    assert lv["decide 2"] == pytest.approx(1 - 0.05 / 2)      # disk's first purchase
    assert lv["decide 3"] == pytest.approx(1 - 0.05 / 3)      # mem's second


def test_a_decide_run_keeps_the_rows_of_before_and_runs_only_the_new_purchase(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    (tmp_path / "params.yaml").write_text("seed: 1\n")
    first = repeats.measure(_stage([]), [P.Purchase(run=1, configs=[{"tier": "mem", "threads": 1}], runs=2)])
    d = paths.results_dir("tfdata_read")
    d.mkdir(parents=True)
    first.rows.to_parquet(d / "raw.parquet")
    first.tables["steps"].to_csv(d / "steps.csv", index=False)
    (d / ROUNDS_FILE).write_text(json.dumps(first.course))
    monkeypatch.setenv(P.ENV, "tfdata_read")
    calls = []
    buys = [P.Purchase(run=1, configs=[{"tier": "mem", "threads": 1}], runs=2),
            P.Purchase(run=2, configs=[{"tier": "disk", "threads": 2}], runs=3)]
    m = repeats.measure(_stage(calls), buys)
    assert calls and all(c[:2] == ("disk", 2) for c in calls) and len(calls) == 3
    assert len(m.rows) == len(first.rows) + 3 and m.rows["run"].is_unique
    assert len(m.tables["steps"]) == len(first.tables["steps"]) + 9
    assert pd.Series(P.made(m.rows)).to_dict() == {"repro": 16, "decide 1": 2, "decide 2": 3}


def test_a_purchase_of_a_configuration_the_stage_lacks_stops_before_any_run():
    calls = []
    with pytest.raises(ValueError, match="configuration.*do not have.*'tier': 'nfs'"):
        repeats.measure(_stage(calls), [P.Purchase(run=1, configs=[{"tier": "nfs", "threads": 1}], runs=1)])


def test_a_stage_must_name_each_configuration_once_by_its_keys():
    with pytest.raises(ValueError, match="lack the key"):
        MeasuringStage("x", ("tier", "threads"), [{"tier": "a"}], lambda c, r: {}, repeats.RoundsPlan(1, 1), 0)
    with pytest.raises(ValueError, match="share the keys"):
        MeasuringStage("x", ("tier",), [{"tier": "a"}, {"tier": "a"}], lambda c, r: {}, repeats.RoundsPlan(1, 1), 0)


def test_a_side_table_the_stage_does_not_keep_is_refused():
    with pytest.raises(ValueError, match="does not keep"):
        repeats.measure(_stage([], tables=()))
