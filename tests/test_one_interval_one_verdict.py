"""One interval, one verdict (issue 66, item 4): the interval a claims row shows is the one that
decided it, so a row never says ``inconclusive`` while that interval lies wholly on one side of
its rule and margin."""

import math

import pandas as pd
import pytest

from experiments.statistics import stats
from experiments.verdicts.verdict import claim, disagreements


def _finding(interval, value=0.43, rule="> 1"):
    return claim("lmdbio_like", "S", "F", "s", value, "x", rule, kind="finding", interval=interval)


def test_an_interval_short_of_its_level_is_not_shown_and_says_why():
    # the make decide case: a bootstrap of 6 runs a side at 97.5 % (a median covers at most 96.9 %)
    short = stats.Interval(0.299, 0.541, 6, "ratio of medians, bootstrap over runs", 0.975, 0.96875)
    c = _finding(short)
    assert c["verdict"] == "inconclusive"
    assert c["ci_low"] is None and c["ci_high"] is None
    assert "[0.299, 0.541] decides nothing" in c["note"] and "97.50%" in c["note"]
    assert disagreements([c]) == []


def test_an_interval_that_reaches_its_level_decides_what_it_shows():
    ok = stats.Interval(0.299, 0.541, 6, "Welch t", 0.975, None)
    c = _finding(ok)
    assert c["verdict"] == "fails" and (c["ci_low"], c["ci_high"]) == (0.299, 0.541)
    assert "interval at 97.50% (Bonferroni over 2 looks" in c["note"]
    assert disagreements([c]) == []


def test_a_value_outside_its_interval_is_a_contradiction_the_walk_reports():
    # a stage's bug (value and interval from different computations): shown, never decided on,
    # and reported by the walk as by tests/test_smoke_pipeline.py's own check
    c = _finding(stats.Interval(1.2, 1.4, 6, "m", 0.95), value=0.5)
    assert c["verdict"] == "inconclusive" and c["ci_low"] == 1.2 and "outside its own interval" in c["note"]
    assert [d["interval_decides"] for d in disagreements([c])] == ["holds"]


def test_the_walk_finds_a_planted_contradiction_in_a_tiny_table():
    t = pd.DataFrame([
        # lies wholly below '> 1': decided (fails), so 'inconclusive' contradicts it
        {"id": "a", "kind": "finding", "verdict": "inconclusive", "ci_low": 0.299, "ci_high": 0.541,
         "rule": "> 1", "margin": 0.05},
        # straddles: inconclusive is right
        {"id": "b", "kind": "finding", "verdict": "inconclusive", "ci_low": 0.9, "ci_high": 1.2,
         "rule": "> 1", "margin": 0.05},
        # holds on an interval that reaches into the margin: contradicts (it decides nothing)
        {"id": "c", "kind": "finding", "verdict": "holds", "ci_low": 1.01, "ci_high": 1.3,
         "rule": "> 1", "margin": 0.05},
        # direction only counts as holds on its interval
        {"id": "d", "kind": "finding", "verdict": "direction only", "ci_low": 1.2, "ci_high": 1.3,
         "rule": "> 1", "margin": 0.05},
        # no interval shown, a check, not measured: not walked
        {"id": "e", "kind": "finding", "verdict": "inconclusive", "ci_low": math.nan, "ci_high": math.nan,
         "rule": "> 1", "margin": 0.05},
        {"id": "f", "kind": "check", "verdict": "holds", "ci_low": 0.1, "ci_high": 0.2, "rule": "> 1",
         "margin": None},
        {"id": "g", "kind": "finding", "verdict": "fails", "ci_low": 0.96, "ci_high": 1.04,
         "rule": "> 1", "margin": 0.05},
    ])
    got = {d["id"]: d["interval_decides"] for d in disagreements(t)}
    assert got == {"a": "fails", "c": "inconclusive"}


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_a_ratio_lying_wholly_below_one_is_decided_at_every_count_and_a_corrected_level(n):
    # the row: LMDBIO at 0.3-0.5 x; with Welch t on the logs where the bootstrap of
    # medians cannot reach the level (few runs, or 97.5 % after a make decide purchase)
    a = [0.40, 0.45, 0.42, 0.47, 0.41, 0.44][:n]
    b = [1.00, 1.05, 0.98, 1.02, 1.01, 0.99][:n]
    for level in (0.95, 0.975, 0.9875):
        v, ci = stats.ratio_of_medians(a, b, level=level)
        c = _finding(ci, value=v)
        assert c["verdict"] == "fails", (n, level, ci)
        assert disagreements([c]) == []
