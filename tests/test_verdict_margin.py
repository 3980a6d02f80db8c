"""The margin of no material effect and the coverage a method reaches (experiments.claims.claim)."""

import numpy as np
import pytest

from experiments import claims
from experiments.statistics import stats
from experiments.statistics.stats import Interval
from experiments.claims import table as claims_table


def find(rule, lo, hi, n=8, value=None, **kw):
    v = (lo + hi) / 2 if value is None else value
    return claims.claim("x", "S", "F", "s", v, "u", rule, kind="finding",
                        interval=Interval(lo, hi, n, "test"), **kw)


@pytest.mark.parametrize("rule,lo,hi,verdict,negligible", [
    ("> 1", 0.99, 1.02, "fails", True),       # straddles 1, inside 5 %: no material effect
    ("> 1", 1.01, 1.04, "fails", True),       # a real but immaterial effect
    ("> 1", 0.97, 0.99, "fails", True),
    ("< 1", 0.96, 1.03, "fails", True),
    ("> 1", 0.9, 1.1, "inconclusive", False),   # beyond the margin on both sides
    ("> 1", 0.98, 1.1, "inconclusive", False),  # straddles and reaches beyond on the claimed side
    ("> 1", 0.7, 1.03, "fails", False),         # beyond only away from the claim: ruled out
    ("> 1", 0.7, 1.05, "fails", False),         # up to the margin's edge itself
    ("> 1", 0.7, 1.06, "inconclusive", False),  # just past it
    ("< 1", 0.97, 1.3, "fails", False),         # the same for a claim of "less"
    ("<= 1", 0.94, 1.3, "inconclusive", False),
    ("> 1", 1.06, 1.2, "holds", False),         # past the margin's edge (the magnitude rule is apart)
    ("> 1", 1.02, 1.2, "inconclusive", False),  # in the claimed direction, but reaching into the band
    ("< 1", 0.8, 0.97, "inconclusive", False),  # the same for a claim of "less"
    ("> 1", 0.7, 0.9, "fails", False),          # the opposite effect
    (">= 0.95", 0.94, 0.96, "inconclusive", None),   # a level: no band by default
    ("between 0.9 and 1.1", 0.95, 1.05, "holds", None),
])
def test_margin_of_no_effect(rule, lo, hi, verdict, negligible):
    c = find(rule, lo, hi)
    assert c["verdict"] == verdict
    assert bool(c["negligible"]) == bool(negligible)
    if negligible:
        assert "no effect beyond 5 % here" in c["note"]
        assert claims_table.shown_verdict(c["verdict"], c["negligible"]) == "fails (negligible)"
    elif verdict == "fails" and lo < 1 < hi:
        assert "no effect beyond 5 % in the statement's direction here" in c["note"]
        assert claims_table.shown_verdict(c["verdict"], c["negligible"]) == "fails"
    assert c["margin"] == (0.05 if rule in ("> 1", "< 1", "<= 1") else None)


@pytest.mark.parametrize("rule", ["> 1", "< 1", ">= 1", "> 0", "between 0.9 and 1.1", ">= 0.95"])
def test_a_narrower_interval_never_turns_holds_into_fails(rule):
    """More samples narrow an interval: whatever a wider interval decided, an interval inside
    it decides the same or nothing, never the other side (so ``make decide`` moves a verdict
    between holds and fails only through inconclusive)."""
    rng = np.random.default_rng(7)
    kw = dict(margin=0.01, margin_why="t") if rule == "> 0" else {}
    side = {"holds": "holds", "fails": "fails", "inconclusive": None}
    for _ in range(3000):
        lo, hi = np.sort(rng.uniform(0.85, 1.15, 2) - (1.0 if rule == "> 0" else 0.0))
        a, b = np.sort(rng.uniform(lo, hi, 2))
        wide = find(rule, lo, hi, **kw)["verdict"]
        narrow = find(rule, a, b, **kw)["verdict"]
        if side[wide] and side[narrow]:
            assert side[wide] == side[narrow], (rule, (lo, hi), wide, (a, b), narrow)


def test_other_margins_need_a_reason_and_a_comparison_rule():
    with pytest.raises(ValueError, match="margin_why"):
        find("> 1", 1.0, 1.1, margin=0.02)
    c = find("> 1", 1.03, 1.1, margin=0.02, margin_why="the paper's 3 % gain is its effect")
    assert c["verdict"] == "holds" and "margin 2 %: the paper's 3 % gain" in c["note"]
    with pytest.raises(ValueError, match="band itself"):
        find("between 0.9 and 1.1", 0.95, 1.05, margin=0.05, margin_why="w")
    with pytest.raises(ValueError, match="only on a finding"):
        claims.claim("c", "S", "F", "s", 1.0, "u", "> 1", kind="check", margin=0.05)
    # against 0 the margin is absolute, in the value's unit
    d = find("> 0", -0.004, 0.006, margin=0.01, margin_why="similarity differences below 0.01 are noise")
    assert d["verdict"] == "fails" and d["negligible"] and "no effect beyond ±0.01 here" in d["note"]
    assert claims.rule_text("> 0", 0.01) == "> 0 (margin ±0.01)" and claims.rule_text("> 2", None) == "> 2"


def test_too_few_samples_for_the_level_decide_nothing():
    rng = np.random.default_rng(1)
    a, b = 2 + 0.01 * rng.standard_normal(4), 1 + 0.01 * rng.standard_normal(4)
    # a median of 4 runs cannot reach 95 % (its range covers 88 %): it decides nothing ...
    _, mci = stats.median_ci(a)
    assert mci.ok and not mci.enough and mci.coverage == pytest.approx(1 - 2 ** -3)
    c = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", kind="finding", interval=mci)
    assert c["verdict"] == "inconclusive" and "at least 6 independent samples" in c["note"]
    assert c["ci_low"] is None   # and is not shown as the finding's interval (issue 66)
    # ... while a ratio of 4 runs a side decides with the method that reaches 95 % there (issue 64)
    v, ci = stats.ratio_of_medians(a, b)
    assert "Welch t" in ci.method and ci.enough and ci.simulated_at == 0.95
    assert claims.claim("x", "S", "F", "s", v, "u", "> 1", kind="finding", interval=ci)["verdict"] == "holds"
    v, ci = stats.ratio_of_medians(2 + 0.01 * rng.standard_normal(6), 1 + 0.01 * rng.standard_normal(6))
    assert ci.enough and claims.claim("x", "S", "F", "s", v, "u", "> 1", kind="finding",
                                      interval=ci)["verdict"] == "holds"
    assert not stats.median_ci([1, 2, 3, 4, 5])[1].enough and stats.median_ci(range(6))[1].enough
    assert stats.MIN_N == 6


def _verdict(effect, noise, seed, n=6):
    """The shown verdict of '> 1' on median(a) / median(b), n samples a side, a true ratio of
    1 + effect and a relative noise (sd) on each sample."""
    rng = np.random.default_rng(seed)
    a = (1 + effect) * (1 + noise * rng.standard_normal(n))
    b = 1 + noise * rng.standard_normal(n)
    v, ci = stats.ratio_of_medians(a, b, seed=seed)
    c = claims.claim("x", "S", "F", "s", v, "u", "> 1", kind="finding", interval=ci)
    return claims_table.shown_verdict(c["verdict"], c["negligible"])


def test_equivalence_verdicts_on_synthetic_samples():
    """Over 40 seeded draws of 6 samples a side: a true 0 % effect with 0.5 % noise is always
    ``fails (negligible)``; a 15 % effect with 2 % noise always holds, a 10 % one mostly (its
    interval must clear 1.05, the margin's edge, not just 1) and never fails; with noise five
    times larger (10 %) it is mostly inconclusive, never called negligible, and fails (its
    interval ending short of 1.05) in at most 5 % of the draws, the one-sided test's error."""
    seeds = range(40)
    assert {_verdict(0.0, 0.005, s) for s in seeds} == {"fails (negligible)"}
    assert {_verdict(0.15, 0.02, s) for s in seeds} == {"holds"}
    ten = [_verdict(0.10, 0.02, s) for s in seeds]
    assert set(ten) <= {"holds", "inconclusive"} and ten.count("holds") >= 0.75 * len(ten)
    noisy = [_verdict(0.10, 0.10, s) for s in seeds]
    assert set(noisy) <= {"inconclusive", "holds", "fails"} and noisy.count("inconclusive") >= 0.6 * len(noisy)
    assert noisy.count("fails") <= 0.05 * len(noisy)


def test_a_value_outside_its_own_interval_decides_nothing():
    c = find("> 1", 1.2, 1.5, value=1.9)
    assert c["verdict"] == "inconclusive" and "outside its own interval" in c["note"]
    import pandas as pd
    t = pd.DataFrame([c, find("> 1", 1.2, 1.5)])
    assert list(claims_table.outside_own_interval(t)["our_value"]) == [1.9]


@pytest.mark.parametrize("rule,value,lo,hi,n,expected", [
    ("> 1", 1.10, 0.98, 1.22, 6, 35),      # lo' = 1.10 - s 0.12 > 1.05 (past the margin) needs s < 0.42: n >= 6 / 0.42^2
    ("> 1", 1.00, 0.90, 1.10, 6, 24),      # no effect: inside [0.95, 1.05] needs half the width
    ("between 0.9 and 1.1", 0.80, 0.70, 0.95, 6, 14),  # below the band once hi' = 0.8 + s 0.15 < 0.9
    (">= 0.9", 0.90, 0.80, 1.00, 6, None),  # on the threshold, no margin: never decided
])
def test_an_inconclusive_finding_forecasts_the_samples_that_would_decide_it(rule, value, lo, hi, n, expected):
    c = claims.claim("x", "S", "F", "s", value, "u", rule, kind="finding", interval=Interval(lo, hi, n, "t"))
    assert c["verdict"] == "inconclusive" and c["n_to_decide"] == expected
    if expected is None:
        assert "more samples would not decide it" in c["note"]
    else:
        assert f"about {expected} samples ({expected / n:.1f} x the {n} taken)" in c["note"]


def test_a_decided_finding_has_no_forecast():
    c = claims.claim("x", "S", "F", "s", 1.5, "u", "> 1", kind="finding", interval=Interval(1.2, 1.8, 6, "t"))
    assert c["verdict"] == "holds" and c["n_to_decide"] is None and "would decide" not in c["note"]


def test_the_table_lists_what_would_decide_each_inconclusive_finding_fewest_first():
    import pandas as pd

    rows = [claims.claim("far", "S", "F", "s", 0.9, "u", ">= 0.9", kind="finding", interval=Interval(0.8, 1.0, 6, "t")),
            claims.claim("near", "S", "F", "s", 2.2, "u", "> 2", kind="finding", interval=Interval(1.96, 2.44, 6, "t")),
            claims.claim("done", "S", "F", "s", 1.5, "u", "> 1", kind="finding", interval=Interval(1.2, 1.8, 6, "t"))]
    md = claims_table.to_markdown(pd.DataFrame(rows).assign(stage="st"))
    sec = md.split("## What would decide the inconclusive findings (2; 1 within twice their samples)")[1]
    lines = [x for x in sec.splitlines() if x.startswith("| near") or x.startswith("| far")]
    assert lines[0].startswith("| near") and lines[0].endswith("| 9 | 1.5 |")
    assert lines[1].startswith("| far") and lines[1].endswith("| never | – |")
    assert "| done" not in sec


def test_a_comparison_of_unlike_sides_is_not_comparable_and_the_table_counts_it():
    """A throughput ratio of a cache-served side over a device-served one (issue 66): its value and
    interval are shown, no direction, magnitude or forecast is given, and the verdict is
    ``not comparable``, counted apart in the table's header and listed before the not measured."""
    import pandas as pd

    words = "the real run read from the page cache (3 passes), DLIO from the device (3 passes)"
    c = find("< 1", 0.1, 0.3, paper_value=0.2, magnitude="within 2x", not_comparable=words)
    assert c["verdict"] == "not comparable" and c["holds"] is None and c["magnitude_holds"] is None
    assert c["our_value"] == pytest.approx(0.2) and c["ci_low"] == 0.1 and c["n_to_decide"] is None
    assert c["note"].startswith(f"not comparable: {words}")
    assert "not comparable" in claims.VERDICTS
    assert find("< 1", 0.1, 0.3, not_comparable="")["verdict"] == "holds"
    # no value: still not measured
    assert claims.claim("x", "S", "F", "s", None, "u", "< 1", kind="finding", not_comparable=words,
                        why_not="no pass")["verdict"] == "not measured"
    md = claims_table.to_markdown(pd.DataFrame([c, find("< 1", 0.1, 0.3)]).assign(stage="st"))
    assert "0 not measured, 1 not comparable" in md.splitlines()[0]
    assert "| **not comparable** |" in md
