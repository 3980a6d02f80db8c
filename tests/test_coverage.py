"""Intervals that cover what they print (issue 64, item 4): every interval method a verdict
decides with reaches its level at the run counts it decides with, in a seeded simulation on
normal, lognormal and two-level data (runs with steps inside, between-run shares 0 to 0.99).

The shipped table (:mod:`experiments.statistics.coverage_table`, 4,000 replicates a cell for the t methods)
is what :mod:`experiments.statistics.stats` reads to choose its method; here the cells that decide are
simulated again with another seed and fewer replicates, and must agree with it within their
Monte Carlo error, and the library functions themselves are simulated at the smallest count.
"""

import math

import numpy as np
import pytest
from scipy.stats import binom

from experiments.statistics import coverage, stats
from experiments.statistics.coverage_table import ROWS

DECIDING = ("binomial", "t_log", "welch_log", "welch_diff", "welch_lowest4", "bootstrap", "runs_jackknife", "runs_jackknife_one",
            "t_log_fit")


def _sd(p: float, reps: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.01 * 0.99) / reps)


def _worst(method, n, level):
    return min(r[4] for r in ROWS if r[0] == method and r[1] == n and abs(r[3] - level) < 1e-9)


def _deciding_cells():
    cells = sorted({(r[0], r[1], r[3]) for r in ROWS if r[0] in DECIDING})
    return [c for c in cells if (stats.bootstrap_decides(c[1], c[2]) if c[0] == "bootstrap" else stats.reaches(*c))
            and not (c[0] == "bootstrap" and c[2] > 0.95)]


def test_the_shipped_table_covers_every_method_shape_count_and_level():
    methods = {r[0] for r in ROWS}
    assert set(coverage.METHODS) == methods
    for m in methods:
        shapes = {r[2] for r in ROWS if r[0] == m}
        assert shapes == set(coverage.shapes_of(m)), m
    assert {r[3] for r in ROWS} == set(coverage.LEVELS)


def test_every_method_stats_chooses_between_has_enough_replicates_a_cell():
    # 1,000 replicates at least: a coverage of 95 % then has a Monte Carlo sd of 0.7 %
    for m in ("binomial", "t_log", "bootstrap", "welch_log", "welch_diff", "welch_lowest4", "runs_bootstrap",
              "runs_jackknife", "runs_jackknife_one", "t_log_fit"):
        assert min(r[5] for r in ROWS if r[0] == m) >= coverage.MIN_REPS, m


def test_every_method_that_decides_reaches_its_level_in_the_shipped_table():
    # what stats decides with, at each count and level: at least 93 % at 95 % (1.4 x the misses)
    for m, n, lv in _deciding_cells():
        worst = _worst(m, n, lv)
        assert worst >= coverage.floor(lv) - 1e-9, (m, n, lv, worst)
    # the t methods decide from 3 runs a side at every simulated level
    for m in ("t_log", "welch_log", "welch_diff", "welch_lowest4", "runs_jackknife", "t_log_fit"):
        for lv in coverage.LEVELS:
            assert stats.reaches(m, 3, lv), (m, lv)


def test_the_methods_that_do_not_reach_are_not_used_where_they_fall_short():
    # the simulation: the two-level bootstrap with 3 runs a side covers well under 93 %
    assert _worst("runs_bootstrap", 3, 0.95) < 0.93 and not stats.reaches("runs_bootstrap", 3, 0.95)
    # a percentile bootstrap of the lowest of equal ratios covers about half the time
    assert _worst("bootstrap_lowest4", 6, 0.95) < 0.8
    # the median's order statistics from fewer than 6 runs: the range covers 1 - 2^(1-n)
    assert _worst("binomial", 3, 0.95) < 0.80 and not stats.reaches("binomial", 3, 0.95)
    _, ci = stats.runs_bootstrap(lambda x, y: float(np.median(x) / np.median(y)),
                                 [np.full(30, 1.0) * k for k in (1, 1.1, 0.9)],
                                 [np.full(30, 1.0) * k for k in (1, 1.05, 0.95)])
    assert "jackknife t" in ci.method and ci.enough


def test_the_deciding_cells_simulated_again_agree_with_the_shipped_table():
    cells = _deciding_cells()
    assert len(cells) > 50
    for m, n, lv in cells:
        reps = 150 if m == "bootstrap" else 400
        for shape in coverage.shapes_of(m):
            got = coverage.cell(m, n, shape, lv, reps, seed=7, n_boot=400)
            shipped = next(r for r in ROWS if r[:4] == (m, n, shape, lv))
            tol = 4 * math.hypot(_sd(lv, reps), _sd(lv, shipped[5]))
            assert abs(got - shipped[4]) <= tol, (m, n, shape, lv, got, shipped[4])
            # below the floor only by Monte Carlo chance: as many misses from a method at the
            # floor exactly would happen with probability at least 0.001
            misses = round((1 - got) * reps)
            assert binom.sf(misses - 1, reps, 1 - coverage.floor(lv)) >= 1e-3, (m, n, shape, lv, got)


def _hits(fn, reps):
    return np.mean([fn(i) for i in range(reps)])


@pytest.mark.parametrize("level", [0.95, 0.975])
def test_the_library_ratio_covers_at_three_runs_a_side(level):
    # stats.ratio_of_medians itself (Welch t on the logs at 3 runs), lognormal runs, true ratio 2
    rng = np.random.default_rng(11)

    def one(_):
        a, b = 2 * np.exp(0.3 * rng.standard_normal(3)), np.exp(0.3 * rng.standard_normal(3))
        _, ci = stats.ratio_of_medians(a, b, level=level)
        assert "Welch" in ci.method and ci.enough
        return ci.contains(2.0)
    reps = 400
    assert _hits(one, reps) >= coverage.floor(level) - 3 * _sd(level, reps)


@pytest.mark.parametrize("n", [3, 4])
def test_the_library_difference_covers_at_three_and_four_runs_a_side(n):
    # stats.welch_difference itself: two sides' similarities a run apart by 0.02, runs spread 0.01
    rng = np.random.default_rng(13 + n)

    def one(_):
        a, b = 0.97 + 0.01 * rng.standard_normal(n), 0.95 + 0.01 * rng.standard_normal(n)
        _, ci = stats.welch_difference(a, b)
        assert "Welch" in ci.method and ci.enough
        return ci.contains(0.02)
    reps = 400
    assert _hits(one, reps) >= coverage.floor(0.95) - 3 * _sd(0.95, reps)


def test_the_library_runs_interval_covers_at_three_runs_a_side_with_most_variance_between_runs():
    # stats.runs_bootstrap itself on the case: 3 runs a side, 30 steps, share 0.5
    rng = np.random.default_rng(12)
    med = lambda x, y: float(np.median(x) / np.median(y))  # noqa: E731

    def runs():
        return list(coverage._units("lognormal steps 0.5", 1, 3, rng)[0])

    def one(_):
        _, ci = stats.runs_bootstrap(med, runs(), runs())
        assert ci.enough and "jackknife" in ci.method
        return ci.contains(1.0)
    reps = 200
    assert _hits(one, reps) >= 0.93 - 3 * _sd(0.95, reps)


def test_the_library_one_sample_and_lowest_cover():
    rng = np.random.default_rng(13)

    def one_sample(_):
        _, ci = stats.runs_ci(np.exp(0.3 * rng.standard_normal(3)))
        assert "Student t" in ci.method
        return ci.contains(1.0)

    def part(a, b):
        return lambda lv: stats.ratio_of_medians(a, b, level=lv)

    def lowest(_):
        # four equal ratios (the lowest's hardest case), 6 runs a side
        parts = [part(np.exp(0.3 * rng.standard_normal(6)), np.exp(0.3 * rng.standard_normal(6))) for _ in range(4)]
        _, ci = stats.extreme(parts)
        assert ci.enough and "Bonferroni" in ci.method
        return ci.contains(1.0)
    assert _hits(one_sample, 400) >= 0.93 - 3 * _sd(0.95, 400)
    assert _hits(lowest, 150) >= 0.93 - 3 * _sd(0.95, 150)


def test_a_jackknife_short_of_its_level_decides_at_the_nominal_that_covers_it():
    # a second look (make decide) asks 97.5 %: the jackknife t of medians misses 3.7 % there
    # from 10 runs a side on, above the 3.5 % allowed; the interval at a nominal 98.75 % misses
    # 2.1 %, and is the one that decides, wider, with that coverage
    assert not stats.reaches("runs_jackknife", 12, 0.975)
    nominal, cov = stats.calibrated("runs_jackknife", 12, 0.975)
    assert nominal == 0.9875 and cov == _worst("runs_jackknife", 10, 0.9875) >= coverage.floor(0.975)
    assert stats.calibrated("runs_jackknife", 12, 0.9875) is None   # nothing above the highest
    rng = np.random.default_rng(5)
    a = [rng.normal(2, 0.2, 30) * rng.lognormal(0, 0.1) for _ in range(12)]
    b = [rng.normal(1, 0.1, 30) * rng.lognormal(0, 0.1) for _ in range(12)]
    f = lambda x, y: float(np.median(x) / np.median(y))   # noqa: E731
    _, at95 = stats.runs_bootstrap(f, a, b, level=0.95)
    _, ci = stats.runs_bootstrap(f, a, b, level=0.975)
    assert ci.enough and ci.level == 0.975 and "at a nominal 98.75%" in ci.method
    assert ci.low < at95.low and ci.high > at95.high
    # the cell it decides with, simulated again with another seed, still covers what 97.5 % asks
    for shape in coverage.shapes_of("runs_jackknife"):
        got = coverage.cell("runs_jackknife", 10, shape, 0.9875, 400, seed=7)
        misses = round((1 - got) * 400)
        assert binom.sf(misses - 1, 400, 1 - coverage.floor(0.975)) >= 1e-3, (shape, got)


def test_a_bootstrap_above_its_simulated_levels_is_judged_on_the_coverage_below():
    # a fourth look asks 98.75 %; the two-level bootstrap is simulated to 97.5 %. Its interval at
    # 98.75 % holds the one at 97.5 %, so it covers at least that, judged against 98.75 % (before:
    # the range's bound alone, 1 - 2^(1-n), which decided unsimulated)
    assert stats.simulated("runs_bootstrap", 12, 0.9875) is None
    cov, below = stats.simulated_below("runs_bootstrap", 12, 0.9875)
    assert below == 0.975 and cov == _worst("runs_bootstrap", 6, 0.975)
    assert stats.simulated_below("runs_bootstrap", 12, 0.975) is None   # simulated there
    assert stats.simulated_below("runs_bootstrap", 2, 0.9875) is None   # no count up to 2
    rng = np.random.default_rng(11)
    a = [rng.normal(2, 0.2, 30) * rng.lognormal(0, 0.1) for _ in range(12)]
    b = [rng.normal(1, 0.1, 30) * rng.lognormal(0, 0.1) for _ in range(12)]
    f = lambda x, y: float(np.median(x) / np.median(y))   # noqa: E731
    assert stats.calibrated("runs_jackknife", 12, 0.9875) is None   # no jackknife to fall back on
    _, ci = stats.runs_bootstrap(f, a, b, level=0.9875)
    assert ci.ok and ci.coverage == cov and ci.simulated_at == 0.9875
    assert not ci.enough and "not shown to reach 98.75%" in ci.method
    _, ci975 = stats.runs_bootstrap(f, a, b, level=0.975)   # the jackknife, calibrated, decides
    assert ci975.enough and "jackknife" in ci975.method
