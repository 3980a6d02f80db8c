"""Intervals on synthetic samples with a known answer, and the verdicts they give (issue 19)."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments import claims
from experiments.statistics import stats


def _times(median_s, noise, n, seed):
    """n epoch times (s) around ``median_s`` with a relative log-normal spread ``noise``."""
    return median_s * np.exp(np.random.default_rng(seed).normal(0, noise, n))


def _verdict(base, other):
    point, ci = stats.speedup(base, other)
    return claims.claim("x", "S", "F", "other is faster", point, "x", "> 1", kind="finding",
                        interval=ci)["verdict"], point, ci


def test_a_true_ten_percent_speedup_with_little_noise_holds():
    v, point, ci = _verdict(_times(1.1, 0.03, 10, 1), _times(1.0, 0.03, 10, 2))
    assert v == "holds" and ci.low > 1 and ci.n == 10 and 1.05 < point < 1.15


def test_the_same_speedup_with_twice_the_noise_is_inconclusive():
    # noise twice as large as the difference it should resolve (20 % against 10 %)
    v, _, ci = _verdict(_times(1.1, 0.20, 5, 1), _times(1.0, 0.20, 5, 2))
    assert v == "inconclusive" and ci.low < 1 < ci.high


@pytest.mark.parametrize("seed", range(20))
def test_no_difference_never_holds(seed):
    v, _, _ = _verdict(_times(1.0, 0.05, 8, seed), _times(1.0, 0.05, 8, 100 + seed))
    assert v != "holds"


def test_no_difference_with_noise_is_inconclusive():
    v, _, ci = _verdict(_times(1.0, 0.05, 10, 3), _times(1.0, 0.05, 10, 4))
    assert v == "inconclusive" and ci.low < 1 < ci.high


@pytest.mark.parametrize("fn", [lambda x: stats.median_ci(x), lambda x: stats.ratio_of_medians(x, x),
                                lambda x: stats.speedup(x, [1.0, 2.0]), lambda x: stats.paired_ratio(x, x),
                                lambda x: stats.slope_ci(x, x)])
def test_one_sample_gives_no_interval_and_never_holds(fn):
    point, ci = fn([2.0])
    assert ci.n == 1 and math.isnan(ci.low) and math.isnan(ci.high) and not ci.ok
    c = claims.claim("x", "S", "F", "s", point, "x", "> 0", kind="finding", interval=ci)
    if math.isnan(point):        # a slope needs two points even for its value
        assert c["verdict"] == "not measured"
    else:
        assert c["verdict"] == "inconclusive" and "n = 1: no interval" in c["note"]


def test_failed_repeats_are_not_samples():
    _, ci = stats.median_ci([1.0, math.nan, 2.0, math.inf])
    assert ci.n == 2


def test_median_ci_covers_the_true_median_at_its_level():
    rng = np.random.default_rng(0)
    true_median = math.log(2)     # exponential(1): skewed, far from normal
    hits = [(lambda ci: ci.low <= true_median <= ci.high)(stats.median_ci(rng.exponential(1, 25))[1])
            for _ in range(1000)]
    assert 0.93 <= np.mean(hits) <= 0.995
    m, ci = stats.median_ci(np.arange(1.0, 26.0))
    assert m == 13 and ci.low < 13 < ci.high and ci.n == 25 and "coverage" not in ci.method


def test_median_ci_on_few_samples_says_its_coverage():
    _, ci = stats.median_ci([1.0, 2.0, 3.0])
    assert (ci.low, ci.high) == (1.0, 3.0) and "coverage 75%" in ci.method


def test_ratio_of_medians_is_seeded_and_bracketed():
    a, b = _times(2.0, 0.05, 12, 5), _times(1.0, 0.05, 12, 6)
    p1, c1 = stats.ratio_of_medians(a, b, seed=3)
    p2, c2 = stats.ratio_of_medians(a, b, seed=3)
    assert c1 == c2 and p1 == p2 and c1.low < p1 < c1.high and 1.8 < p1 < 2.2


def test_paired_ratio_and_slope():
    p, ci = stats.paired_ratio([2.0, 4.0, 6.0, 8.0, 10.0, 12.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert p == 2 and (ci.low, ci.high) == (2, 2) and ci.n == 6
    with pytest.raises(ValueError, match="len\\(a\\) = 2, len\\(b\\) = 1"):
        stats.paired_ratio([1.0, 2.0], [1.0])
    x = np.arange(10.0)
    s, ci = stats.slope_ci(x, 3 * x + np.random.default_rng(0).normal(0, 0.1, 10))
    assert ci.low < 3 < ci.high and abs(s - 3) < 0.1 and ci.n == 10
    s, ci = stats.slope_ci([1.0, 2.0], [1.0, 3.0])
    assert s == 2 and not ci.ok and ci.n == 2


def test_bad_parameters_name_themselves():
    with pytest.raises(ValueError, match="level = 1.5"):
        stats.median_ci([1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="n_boot = 10"):
        stats.ratio_of_medians([1.0, 2.0], [1.0, 2.0], n_boot=10)


def test_with_median_ci_gives_each_summary_row_its_interval():
    import pandas as pd

    raw = pd.DataFrame({"tier": ["a"] * 7 + ["b"], "warmup": [True] + [False] * 7,
                        "x": [100.0, 1, 2, 3, 4, 5, 6, 9]})
    summary = pd.DataFrame({"tier": ["a", "b", "c"], "x": [3.5, 9.0, 1.0]})
    s = stats.with_median_ci(summary, raw, "x", ["tier"]).set_index("tier")
    assert (s.loc["a", "x_ci_low"], s.loc["a", "x_ci_high"], s.loc["a", "x_n"]) == (1, 6, 6)  # warm-up left out
    assert s.loc["b", "x_n"] == 1 and math.isnan(s.loc["b", "x_ci_low"]) and math.isnan(s.loc["c", "x_n"])
    assert "y_ci_low" in stats.with_median_ci(summary, raw, "x", ["tier"], as_="y")
    with pytest.raises(ValueError, match=r"\['nope'\] not in raw"):
        stats.with_median_ci(summary, raw, "x", ["nope"])


def test_a_biased_statistic_keeps_its_point_inside_its_interval():
    """R² of means near 1: resampling only lowers it, so a percentile interval would lie below
    the point; the bias-corrected interval contains it."""
    rng = np.random.default_rng(0)
    xs = [1.0 * k + 0.05 * rng.standard_normal(20) for k in range(1, 5)]

    def r2(*arrs):
        y = np.array([a.mean() for a in arrs])
        x = np.arange(1, len(y) + 1)
        fit = np.polyfit(x, y, 1)
        return 1 - ((y - np.polyval(fit, x)) ** 2).sum() / ((y - y.mean()) ** 2).sum()

    point, ci = stats.bootstrap(r2, *xs)
    assert ci.ok and ci.low <= point <= ci.high


def test_block_bootstrap_counts_blocks_as_the_independent_units():
    x = np.cumsum(np.random.default_rng(0).standard_normal(27))   # a correlated walk
    _, iid = stats.bootstrap(np.median, x)
    _, blk = stats.bootstrap(np.median, x, block="auto")
    assert "blocks of 3" in blk.method and blk.n == 27
    # blocks: the range's bound of the blocks; independent samples: the simulated coverage
    assert blk.coverage == stats.reachable(9) and iid.simulated_at == 0.95 and iid.enough
    assert blk.high - blk.low > iid.high - iid.low     # correlation seen: a wider interval
    with pytest.raises(ValueError, match="block"):
        stats.bootstrap(np.median, x, block=0)


def test_runs_bootstrap_takes_its_interval_over_runs_not_steps():
    """Two sides of 4 runs each, 200 steps a run, the runs far apart: the interval over runs is
    wide (it holds the spread between runs), the one over the pooled steps is narrow and misses
    what another set of runs gives; n counts runs, and 2 runs a side give no interval."""
    rng = np.random.default_rng(0)

    def side(mu, runs):
        return [mu * (1 + 0.1 * rng.standard_normal()) + 0.01 * rng.standard_normal(200) for _ in range(runs)]

    a, b = side(2.0, 4), side(1.0, 4)
    ratio = lambda x, y: float(np.median(x) / np.median(y))   # noqa: E731
    v, ci = stats.runs_bootstrap(ratio, a, b, method="ratio of medians")
    _, flat = stats.bootstrap(ratio, np.concatenate(a), np.concatenate(b))
    assert ci.n == 8 and "over 8 runs" in ci.method and ci.enough
    assert ci.low <= v <= ci.high and (ci.high - ci.low) > 5 * (flat.high - flat.low)
    few = stats.runs_bootstrap(ratio, side(2.0, 2), side(1.0, 2))[1]
    assert few.n == 4 and not few.ok and "needs at least 3 runs" in few.method
    # 3 runs a side: the two-level bootstrap covers ~83 % there (experiments.statistics.coverage), so the
    # jackknife t over runs decides, at 95 % and at a corrected level alike
    three = stats.runs_bootstrap(ratio, side(2.0, 3), side(1.0, 3))[1]
    assert three.n == 6 and three.ok and three.enough and "jackknife t" in three.method
    hi = stats.runs_bootstrap(ratio, side(2.0, 3), side(1.0, 3), level=0.9875)[1]
    assert hi.enough and "jackknife t" in hi.method
    assert stats.runs_bootstrap(ratio, [], side(1.0, 3))[1].ok is False
    # a statistic no one run moves (a step: is one median above 1.5 x the other) has jackknife
    # variance 0: no zero-width interval decides from it; the bootstrap says what it covers
    # (runs at 1.45, 1.6 and 1.75 against 1: any two of them keep the median above 1.5, three
    # draws of the first do not); a statistic equal whichever runs are drawn keeps its interval
    step = lambda x, y: float(np.median(x) > 1.5 * np.median(y))   # noqa: E731
    near = [m + 0.001 * rng.standard_normal(200) for m in (1.45, 1.6, 1.75)]
    v, flat = stats.runs_bootstrap(step, near, side(1.0, 3))
    assert v == 1.0 and "jackknife" not in flat.method and not flat.enough
    v, same = stats.runs_bootstrap(step, side(2.0, 3), side(1.0, 3))
    assert v == 1.0 and "jackknife" in same.method and same.low == same.high == 1.0 and same.enough
    df = pd.DataFrame({"run": [0, 0, 1, 1, 2], "x": [1.0, 2.0, 3.0, 4.0, 5.0], "warmup": [False] * 4 + [True]})
    assert [list(r) for r in stats.runs_of(df, "x")] == [[1.0, 2.0], [3.0, 4.0]]


def test_ratio_of_run_medians_takes_one_value_a_run():
    """Each run's median, then ratio_of_medians over the runs: the run is the unit (n is the runs
    a side, not the units), and two-moded runs (each run mostly 0.11 or 0.27, three units a run)
    give the ratio of their medians' median, not the pooled median's."""
    slow = [[0.11, 0.10, 0.26], [0.27, 0.28, 0.11], [0.27, 0.26, 0.27], [0.11, 0.12, 0.11], [0.27, 0.28, 0.26],
            [0.27, 0.27, 0.11], [0.11, 0.11, 0.12]]
    fast = [[0.09, 0.088, 0.087], [0.088, 0.09, 0.089], [0.087, 0.089, 0.09], [0.088, 0.088, 0.089],
            [0.09, 0.087, 0.088], [0.089, 0.088, 0.088], [0.088, 0.089, 0.087]]
    v, ci = stats.ratio_of_run_medians(slow, fast, what="stalls")
    per = np.median([np.median(r) for r in slow]) / np.median([np.median(r) for r in fast])
    assert v == pytest.approx(per) and ci.n == 7 and ci.ok
    assert ci.method.startswith("ratio of the runs' median stalls, ") and ci.low <= v <= ci.high
    v3, ci3 = stats.ratio_of_run_medians(slow[:3], fast[:3])
    assert ci3.n == 3 and "Welch" in ci3.method and ci3.enough   # 3 runs a side: Welch on the logs reaches 95 %


@pytest.mark.parametrize("name", ["ratio", "summed", "spread", "gap"])
def test_a_statistic_by_rows_gives_the_same_interval_to_the_bit(name):
    # stats.bootstrap takes a statistic's by-rows form where it has one (13 of the LMDBIO
    # report's 32 s were 2,000 Python calls a ratio): it must draw the very same interval
    from experiments.chien import alexnet_findings as af
    from experiments.deepio import report as dr
    stat, k = {"ratio": (stats._ratio_med, 2), "summed": (af._sum_of_medians_ratio, 4),
               "spread": (af._spread, 3), "gap": (dr._mean_gap, 2)}[name]
    assert callable(getattr(stat, "rows", None))
    rng = np.random.default_rng(5)
    groups = [rng.lognormal(0, 0.3, n) for n in (7, 6, 9, 8)[:k]]
    if name == "ratio":   # a resample whose median is 0 gives no ratio, in both forms
        groups[1][:3] = 0.0
    loop = lambda *g: stat(*g)   # noqa: E731  the same statistic, without its rows form
    for level in (0.95, 0.9875):
        fast = stats.bootstrap(stat, *groups, level=level, seed=3)
        slow = stats.bootstrap(loop, *groups, level=level, seed=3)
        assert fast[0] == slow[0] and (fast[1].low, fast[1].high) == (slow[1].low, slow[1].high), name
        assert fast[1].method == slow[1].method
