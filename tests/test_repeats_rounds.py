"""The rounds of a measuring stage (experiments.repeats.rounds, .futility): seeded interleaving,
stopping reasons, the futility stop, and the share of false verdicts when the level is
corrected for the looks."""

import math

import numpy as np
import pytest

from experiments import claims
from experiments.statistics import stats
from experiments.repeats import futility, levels, rounds
from experiments.repeats.futility import Judged
from experiments.repeats.rounds import RoundsPlan, run_rounds


def _sim(effect, noise, plan, seed, steer=False):
    """Two configurations, A (base) and B (``effect`` faster), one draw each per round; the
    finding: A / B > 1 (margin 5 %) on the median of per-round ratios."""
    rng = np.random.default_rng(seed)

    def run_one(c, repeat):
        return {"config": c, "seconds": (1.0 / (1 + effect) if c == "B" else 1.0) * (1 + noise * rng.standard_normal())}

    def verdict(rows, level):
        r = rows[~rows["warmup"]]
        a = r[r["config"] == "A"].sort_values("repeat")["seconds"].to_numpy()
        b = r[r["config"] == "B"].sort_values("repeat")["seconds"].to_numpy()
        v, ci = stats.paired_ratio(a, b, level=level)
        return claims.claim("f", "S", "F", "s", v, "x", "> 1", kind="finding", interval=ci)

    def decide(rows, lv):
        if steer:   # the claim's forecast steers the loop (the futility stop)
            return futility.judged([verdict(rows, lv)], lv)
        return {"f": verdict(rows, lv)["verdict"] != "inconclusive"}

    res = run_rounds(["A", "B"], run_one, decide, plan, seed)
    return res, verdict(res.rows, res.plan.level)


def test_no_effect_gives_false_holds_at_most_5_percent():
    """150 seeded simulations of a true ratio of 1 with 4 % noise a run (intervals near the
    margin, so looks decide often: about a third end as negligible)."""
    plan = RoundsPlan(min_runs=6, max_runs=20, step=2)
    assert plan.looks == math.ceil((20 - plan.first_look) / 2) + 1 and plan.level == 1 - 0.05 / plan.looks
    got = [_sim(0.0, 0.04, plan, s)[1] for s in range(150)]
    assert sum(bool(c["negligible"]) for c in got) > 20     # the looks did decide
    false_holds = sum(c["verdict"] == "holds" for c in got) / len(got)
    assert false_holds <= 0.05
    # and the opposite error: an opposite effect (the whole interval below 1). A "fails" whose
    # interval straddles 1 but ends short of 1.05 is right here: no 5 % effect exists
    assert sum(c["verdict"] == "fails" and c["ci_high"] < 1 for c in got) / len(got) <= 0.05


def test_the_futility_stop_keeps_false_verdicts_at_most_5_percent():
    """The same 150 simulations of no effect, the loop steered by the claim's forecast: the
    futility stop ends some loops early (a forecast beyond the rounds left) and the share of
    false holds stays within 5 %; it never decides anything itself."""
    plan = RoundsPlan(min_runs=6, max_runs=20, step=2)
    got = [_sim(0.0, 0.04, plan, s, steer=True) for s in range(150)]
    assert sum(r.outcomes["f"].stopped == "futile" for r, _ in got) > 5
    assert all(c["verdict"] == "inconclusive" for r, c in got if r.outcomes["f"].stopped == "futile")
    assert sum(c["verdict"] == "holds" for _, c in got) / len(got) <= 0.05
    steered = sum(len(r.rows) for r, _ in got)
    plain = sum(len(_sim(0.0, 0.04, plan, s)[0].rows) for s in range(150))
    assert steered < plain   # the rounds a forecast said could not decide were not run


def test_uncorrected_looks_would_inflate_false_verdicts():
    """The reason for the correction: the same loop judged at 95 % on every look stops on noise
    more often than one fixed look does."""
    fixed = RoundsPlan(min_runs=30, max_runs=30)
    many = RoundsPlan(min_runs=6, max_runs=30, step=1, alpha=0.05)
    assert fixed.looks == 1 and fixed.level == pytest.approx(0.95)
    assert many.level < 0.998 and many.first_look > 6   # a median needs more samples at that level


def test_a_real_effect_is_decided_early_and_the_note_says_so():
    plan = RoundsPlan(min_runs=6, max_runs=30, step=2)
    res, c = _sim(0.3, 0.05, plan, 0)
    o = res.outcomes["f"]
    assert c["verdict"] == "holds" and o.stopped == "decided" and o.runs == plan.first_look < 30
    assert "stopped: decided" in o.note() and f"{o.runs} runs" in o.note()
    assert set(res.rows["level"]) == {plan.level} and levels.level_of(res.rows) == plan.level


def test_rounds_are_interleaved_in_a_seeded_recorded_order():
    plan = RoundsPlan(min_runs=3, max_runs=3)
    seen = []
    res = run_rounds(["A", "B", "C"], lambda c, r: seen.append((r, c)) or {"config": c},
                         lambda rows, lv: {"f": False}, plan, seed=7, warmup=1)
    assert [r for r, _ in seen] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]   # round by round
    assert sorted(c for r, c in seen if r == 2) == ["A", "B", "C"]
    assert res.order == [(r, i) for r in range(4) for i in rounds.round_order(3, r, 7)]
    assert len({tuple(rounds.round_order(3, r, 7)) for r in range(6)}) > 1   # not always A B C
    assert res.rows["warmup"].tolist() == [True] * 3 + [False] * 9
    assert res.outcomes["f"].stopped == "maximum" and res.outcomes["f"].runs == 3


def test_the_budget_stops_before_the_maximum():
    t = [0.0]

    def clock():
        return t[0]

    def run_one(c, r):
        t[0] += 10.0   # every run takes 10 s
        return {"config": c}

    plan = RoundsPlan(min_runs=2, max_runs=50, budget_s=100)
    res = run_rounds(["A", "B"], run_one, lambda rows, lv: {"f": False}, plan, seed=0, clock=clock)
    assert res.outcomes["f"].stopped == "budget" and res.outcomes["f"].runs == 5   # 5 rounds of 20 s
    assert "time budget" in res.outcomes["f"].note()


def test_bad_plans_stop_with_the_parameter():
    with pytest.raises(ValueError, match="max_runs"):
        RoundsPlan(min_runs=5, max_runs=3)
    with pytest.raises(ValueError, match="budget_s"):
        RoundsPlan(min_runs=1, max_runs=3, budget_s=0)
    with pytest.raises(ValueError, match="configs is empty"):
        run_rounds([], lambda c, r: {}, lambda rows, lv: {}, RoundsPlan(1, 1), 0)


def test_a_report_judges_at_the_corrected_level():
    with stats.corrected_level(0.99):
        assert stats.median_ci(range(20))[1].level == 0.99
    assert stats.median_ci(range(20))[1].level == stats.LEVEL


def test_alexnet_prefetch_findings_steer_its_rounds():
    """The prefetch sweep's judging at a look (experiments.chien.alexnet.sweep_findings judged by
    the declared rules) on fake runs: a 20 % effect is decided, none with 20 % noise is not."""
    import pandas as pd

    from experiments.chien import alexnet as ax
    from experiments.claims import steering
    from experiments.verdicts import looks

    cfg = ax.AlexNetConfig(batch_tiers=["disk"], batch_sizes=[16, 64])
    judge = looks.judge("alexnet_prefetch", lambda r, t: ax.sweep_findings(r, t, cfg),
                        rules=steering.rules("alexnet_prefetch"))

    rng = np.random.default_rng(0)

    def runs(effect, noise, n=8):
        return pd.DataFrame([{"experiment": "prefetch", "tier": "disk", "threads": t, "prefetch": p,
                              "warmup": False, "repeat": i, "batch_size": 64, "images_per_s": 1.0,
                              "data_s": 1.0, "compute_s": 1.0, "iterations": 8,
                              "seconds": (1 + effect * (p == 0)) * (1 + noise * rng.standard_normal())}
                             for i in range(n) for t in (1, 2) for p in (0, 1)])

    k = "alexnet-prefetch-faster-disk"
    # at 98.75 % (4 looks), the highest level its bootstrap is simulated at (stats.simulated_below)
    clear, noise = judge(runs(0.2, 0.01), {}, 0.9875), judge(runs(0.0, 0.2), {}, 0.9875)
    assert k in clear and k in noise and clear[k] and not noise[k]
    # the undecided one carries its samples, for the forecast that steers the runs
    assert noise[k].n and noise[k].forecast


def test_plan_for_a_stage_fixed_count_or_rounds_until_decided():
    import math

    fixed = rounds.plan_for(6, None, 150)
    assert (fixed.min_runs, fixed.max_runs, fixed.looks, fixed.level) == (6, 6, 1, pytest.approx(0.95))
    assert rounds.plan_for(6, 4, None).max_runs == 6   # a maximum below the minimum: fixed
    p = rounds.plan_for(6, 18, 150, step=4)
    assert (p.max_runs, p.budget_s, p.step, p.first_look, p.looks) == (18, 150.0, 4, 8, 4)
    assert rounds.plan_for(6, 12, None, step=4).budget_s == math.inf


def test_a_budget_stop_before_the_first_look_judges_once_at_95_percent():
    """A slower box: the budget ends the rounds after 7, before the first planned look (8, at
    98.75 % over 4 looks), where a median of 7 cannot reach the corrected level and nothing
    could be decided. That end judgement is the only look, so it is made at 95 %; a stop after a
    look keeps the planned level."""
    t = [0.0]

    def run_one(c, r):
        t[0] += 10.0
        return {"config": c}

    plan = RoundsPlan(min_runs=6, max_runs=20, budget_s=145, step=4)
    assert (plan.first_look, plan.looks) == (8, 4) and stats.reachable(7) < plan.level
    seen = []
    res = run_rounds(["A", "B"], run_one, lambda rows, lv: seen.append(lv) or {"f": False}, plan,
                         seed=0, clock=lambda: t[0])
    o = res.outcomes["f"]
    assert (o.stopped, o.runs, o.looks) == ("budget", 7, 0) and seen == [pytest.approx(0.95)]
    assert o.level == pytest.approx(0.95) and levels.level_of(res.rows) == pytest.approx(0.95)
    assert stats.reachable(7) >= o.level and "judged once at the end at 95.0%" in o.note()
    plan = RoundsPlan(min_runs=6, max_runs=20, budget_s=185, step=4)   # 9 rounds: a look at 8
    seen = []
    res = run_rounds(["A", "B"], run_one, lambda rows, lv: seen.append(lv) or {"f": False}, plan,
                         seed=0, clock=lambda: t[0])
    assert res.outcomes["f"].looks == 1 and set(seen) == {plan.level} and set(res.rows["level"]) == {plan.level}


def test_the_budget_never_cuts_below_the_minimum():
    t = [0.0]

    def run_one(c, r):
        t[0] += 30.0   # one round (60 s) is already over the budget
        return {"config": c}

    plan = RoundsPlan(min_runs=3, max_runs=10, budget_s=50)
    res = run_rounds(["A", "B"], run_one, lambda rows, lv: {"f": False}, plan, seed=0, clock=lambda: t[0])
    assert res.outcomes["f"].stopped == "budget" and res.rows["repeat"].max() == 2   # 3 rounds


def test_focus_runs_only_what_the_undecided_findings_need():
    """After a look, the rounds run only the configurations ``focus`` names: finding x (A, B)
    is decided at the first look, y (C) needs 10 samples; A and B stop at the first look."""
    plan = RoundsPlan(min_runs=3, max_runs=20, step=1)
    seen = []

    def decide(rows, lv):
        c = rows[rows["config"] == "C"]
        return {"x": True, "y": len(c) >= 10}

    asked = []

    def focus(pending, rows):
        asked.append((list(pending), len(rows)))
        return [2] if pending == ["y"] else None

    res = run_rounds(["A", "B", "C"], lambda c, r: seen.append((r, c)) or {"config": c}, decide, plan,
                         seed=3, focus=focus)
    first = plan.first_look
    n = res.rows.groupby("config").size()
    assert n["A"] == n["B"] == first and n["C"] == 10
    assert all(c == "C" for r, c in seen if r >= first)
    assert res.outcomes["x"].runs == first and res.outcomes["y"].runs == 10
    assert res.outcomes["y"].stopped == "decided"
    assert res.extra["focus"] == [{"after_round": first, "of": 3, "pending": ["y"], "configs": 1}]
    assert rounds.to_json(res)["focus"] == res.extra["focus"]
    assert asked[0] == (["y"], 3 * first)


def test_the_budget_counts_a_focused_round_as_the_runs_it_has():
    """Eight configurations, a run 10 s: a full round is 80 s; after the first look the focus
    narrows the rounds to one configuration, 10 s a round. The budget holds the whole plan
    (the full rounds and the focused ones to the maximum, 12) but not one more full round, so
    an estimate from the last rounds' length alone stopped the loop at the first look (LMDBIO
    in a fresh clone: 8 of 20 rounds, "budget"); the runs a focused round has do not."""
    t = [0.0]

    def run_one(c, r):
        t[0] += 10.0
        return {"config": c}

    first = RoundsPlan(min_runs=3, max_runs=12).first_look
    budget = first * 80 + (12 - first) * 10 + 5
    assert first * 80 + 80 > budget                       # one more full round would not fit
    plan = RoundsPlan(min_runs=3, max_runs=12, budget_s=budget)
    res = run_rounds(list("ABCDEFGH"), run_one, lambda rows, lv: {"f": False}, plan, seed=0,
                         clock=lambda: t[0], focus=lambda pending, rows: [0])
    assert res.outcomes["f"].stopped == "maximum" and res.outcomes["f"].runs == 12
    assert (res.rows["config"] == "A").sum() == 12 and len(res.rows) == 8 * first + (12 - first)


def test_focus_must_name_configurations():
    plan = RoundsPlan(min_runs=3, max_runs=5)
    with pytest.raises(ValueError, match="focus returned"):
        run_rounds(["A", "B"], lambda c, r: {"config": c}, lambda rows, lv: {"f": False}, plan, 0,
                       focus=lambda pending, rows: [5])


def test_allot_stops_the_futile_and_gives_the_budget_to_the_cheapest():
    """One look's allotment (pure): "never" and a forecast beyond the rounds or the seconds
    left are futile; of the reachable, the cheapest go first while the union of their
    configurations fits the seconds left; a plain bool (no forecast) always goes on."""
    J = Judged
    cfg = {"never": frozenset({0}), "far": frozenset({0}), "dear": frozenset({0, 1, 2, 3}),
           "cheap": frozenset({1}), "mid": frozenset({2, 3}), "plain": frozenset({4})}
    pending = {"never": J(False, 8, None, never=True), "far": J(False, 8, 80), "dear": J(False, 8, 12),
               "cheap": J(False, 8, 10), "mid": J(False, 8, 12), "plain": False}
    r = futility.allot(pending, {k: 8 for k in cfg}, cfg, rounds_left=10, seconds_left=100, per_run_s=2.0,
                         slack=1)
    # far: 72 more rounds > 10; dear: 4 rounds x 4 runs x 2 s = 32 s fits alone; cheap: 2 x 1 x 2 =
    # 4 s; mid: 4 x 2 x 2 = 16 s
    assert set(r.futile) == {"never", "far"} and "never" in r.futile["never"]
    assert "10 left before the maximum" in r.futile["far"]
    # plain (no forecast) first; then by cost; with plain's configuration, all five for 4 rounds
    # are 40 s, within 100
    assert r.go == ["plain", "cheap", "mid", "dear"] and r.deferred == []
    tight = futility.allot({k: pending[k] for k in ("dear", "cheap", "mid")}, {k: 8 for k in cfg}, cfg,
                             rounds_left=10, seconds_left=20, per_run_s=2.0, slack=1)
    # dear alone (32 s) is beyond 20 s: futile; cheap (4 s) then mid (with cheap: 4 rounds x 3 runs
    # x 2 s = 24 s > 20): deferred
    assert "s of the budget left" in tight.futile["dear"]
    assert tight.go == ["cheap"] and tight.deferred == ["mid"]
    # the samples a round adds are measured: 16 samples in 8 rounds need half the rounds
    assert futility.rounds_needed(J(False, 16, 24), 8) == 4 and futility.rounds_needed(J(False, 8, 12), 8) == 4


def test_a_finding_that_cannot_decide_stops_the_loop_at_the_first_look():
    """The futility stop: the only finding's forecast is "never" (a value on its margin's
    edge); the loop stops at the first look instead of running to the maximum, and the note
    says why. With a plain False (no forecast) it runs to the maximum, as before."""
    plan = RoundsPlan(min_runs=3, max_runs=20, step=1)
    res = run_rounds(["A", "B"], lambda c, r: {"config": c},
                         lambda rows, lv: {"f": Judged(False, int(rows["repeat"].nunique()), never=True)},
                         plan, seed=0)
    o = res.outcomes["f"]
    assert (o.stopped, o.runs, o.looks) == ("futile", plan.first_look, 1)
    assert "out of reach" in o.note() and "never" in o.note()
    assert rounds.to_json(res)["reach"][0]["futile"] == {"f": o.reach}
    plain = run_rounds(["A", "B"], lambda c, r: {"config": c}, lambda rows, lv: {"f": False}, plan, seed=0)
    assert plain.outcomes["f"].stopped == "maximum" and plain.outcomes["f"].runs == 20


def test_the_budget_moves_to_the_finding_within_reach():
    """x (configuration A) cannot decide ("never"); y (B, C) decides at 12 samples, forecast
    within reach. After the first look the rounds run only B and C, until y is decided; x
    stops as futile on the samples it had. Its level stays the plan's (the looks are corrected
    for every planned look, whatever stops them)."""
    plan = RoundsPlan(min_runs=3, max_runs=30, step=1)
    seen = []

    def decide(rows, lv):
        n = {c: int((rows["config"] == c).sum()) for c in "ABC"}
        y = min(n["B"], n["C"])
        return {"x": Judged(False, n["A"], never=True),
                "y": Judged(y >= 12, y, None if y >= 12 else 12)}

    def focus(pending, rows):
        return sorted({0} if "x" in pending else set() | ({1, 2} if "y" in pending else set()))

    res = run_rounds(["A", "B", "C"], lambda c, r: seen.append((r, c)) or {"config": c}, decide, plan,
                         seed=1, focus=focus)
    first = plan.first_look
    n = res.rows.groupby("config").size()
    assert n["A"] == first and n["B"] == n["C"] == 12
    assert all(c != "A" for r, c in seen if r >= first)
    assert res.outcomes["y"].stopped == "decided" and res.outcomes["x"].stopped == "futile"
    assert res.outcomes["x"].level == plan.level and set(res.rows["level"]) == {plan.level}
    assert res.extra["reach"][0] == {"after_round": first, "go": ["y"], "futile": {"x": res.outcomes["x"].reach},
                                     "deferred": []}


def test_judged_reads_the_claims_forecast():
    from experiments.claims import claim
    from experiments.statistics.stats import Interval

    iv = lambda lo, hi: Interval(lo, hi, 8, "ratio of medians, bootstrap")  # noqa: E731
    cs = [claim("a", "", "", "", 2.0, "x", "> 1", kind="finding", interval=iv(1.5, 2.5)),
          claim("b", "", "", "", 1.2, "x", "> 1", kind="finding", interval=iv(0.95, 1.45)),
          claim("c", "", "", "", float("nan"), "x", "> 1", kind="finding", why_not="not here"),
          # on the edge: never; the same with too few samples for its level: no forecast yet
          claim("d", "", "", "", 1.05, "x", "> 1", kind="finding", interval=iv(0.5, 3.0)),
          claim("e", "", "", "", 1.05, "x", "> 1", kind="finding",
                interval=Interval(0.5, 3.0, 4, "median", stats.LEVEL, 0.875))]
    j = futility.judged(cs, stats.LEVEL)
    assert set(j) == {"a", "b", "d", "e"} and j["a"] and not j["b"]
    assert j["b"].n == 8 and j["b"].n_to_decide == cs[1]["n_to_decide"] and j["b"].n_to_decide > 8
    assert j["d"].never and j["d"].forecast and futility.rounds_needed(j["d"], 8) is None
    assert not j["e"].never and not j["e"].forecast   # keeps the loop going, as before
