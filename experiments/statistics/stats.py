"""Confidence intervals for the compared quantities of the claims table.

Timings on a shared box are rarely normal, so every interval here is nonparametric or says what
it assumes (Hoefler and Belli, *Scientific Benchmarking of Parallel Computing Systems*, SC15):

* :func:`median_ci`: the distribution-free interval of a median from binomial order statistics;
* :func:`ratio_of_medians` / :func:`speedup`: median(a) / median(b) with a percentile bootstrap
  that resamples each side independently (seeded, so a re-run gives the same bounds);
* :func:`paired_ratio`: the median of per-repeat ratios a_i / b_i with :func:`median_ci`, for
  two configurations measured in the same repeat;
* :func:`bootstrap`: any statistic of several independent samples (the helpers above use it);
* :func:`runs_bootstrap`: any statistic of samples made of runs, each run of units (steps,
  windows): runs drawn with replacement, then units within each drawn run (the run the unit);
* :func:`slope_ci`: an ordinary-least-squares slope with its t interval (statsmodels).

**A method decides only where it covers what it prints** (issue 64): the coverage of every
method at 3 to 10 runs a side, on normal, lognormal and two-level data, is simulated by
:mod:`experiments.statistics.coverage` into the shipped :mod:`experiments.statistics.coverage_table`, and a method
whose worst case there falls short of its level (less than 93 % at 95 %) is not used at that
count: :func:`ratio_of_medians` then takes Welch's t on the runs' logs (:func:`welch_ratio`),
:func:`runs_bootstrap` the jackknife t over runs, :func:`runs_ci` Student's t on the runs' logs,
and :func:`extreme` (the lowest or highest of several quantities) puts each at a Bonferroni
level. The method column says which method decided and its simulated coverage at that count.

Each interval says the coverage its method can reach with its samples (``Interval.coverage``,
:func:`reachable`: a median-type statistic needs 6 independent samples for 95 %; or the
simulated coverage, ``Interval.simulated_at``), and
:func:`bootstrap` resamples blocks of consecutive samples (``block``) for steps or intervals of
one run. :func:`corrected_level` sets the level of the intervals asked for without one (a
stage that looked at its intervals several times, :mod:`experiments.repeats`).

Every function returns ``(point, Interval)``; the interval is in the unit of the point (a ratio
is unitless; a slope is y-unit per x-unit). ``Interval.n`` is the number of samples it came from
(for two samples the smaller side). A side with fewer than 2 finite samples gives NaN bounds and
``n`` = that count: it never raises, so a stage with one repeat still writes its claims (which
then say ``inconclusive``, see :func:`experiments.verdicts.verdict.claim`).
"""

from __future__ import annotations

import dataclasses

import contextlib
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import stats as _sps

LEVEL = 0.95
N_BOOT = 2000
_DEFAULT = [LEVEL]   # the level a call without one gets (see corrected_level)


def number(x) -> float | None:
    """A table cell as a number: None when it is empty, NaN or not a number (a claims.csv
    read back, a claim dict)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


@contextlib.contextmanager
def corrected_level(level: float):
    """Inside the block, every interval asked for without a level is at ``level``: how a
    report computes its intervals at the level a runs-until-decided loop stopped on
    (:mod:`experiments.repeats.levels`: 1 - 0.05 / looks, Bonferroni over looks)."""
    _check_level(level)
    _DEFAULT.append(float(level))
    try:
        yield level
    finally:
        _DEFAULT.pop()


def _lv(level: float | None) -> float:
    level = _DEFAULT[-1] if level is None else level
    _check_level(level)
    return level


@dataclass(frozen=True)
class Interval:
    """A confidence interval [low, high] at ``level`` (0.95 unless stated), from ``n`` samples,
    computed by ``method`` (a short phrase for the claims table). NaN bounds: no interval."""

    low: float
    high: float
    n: int
    method: str
    level: float = LEVEL
    # the coverage the method can reach with these n samples (None: the nominal ``level``); a
    # finding whose interval covers less than its level is not decided on it (claims.claim)
    coverage: float | None = None
    # where ``coverage`` is simulated (experiments.statistics.coverage): the nominal level it was simulated
    # at; the method then reaches its level when it misses at most 1.4 x as often as nominal
    # (93 % at 95 %: the simulation's own Monte Carlo error)
    simulated_at: float | None = None
    # where the method falls short: the runs a side at which the simulation says it reaches its
    # level (None: no simulated count does, or not known)
    needs: int | None = None

    @property
    def ok(self) -> bool:
        """Whether it is an interval at all: finite bounds from at least 2 samples."""
        return self.n >= 2 and math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def enough(self) -> bool:
        """Whether the method reaches the stated ``level`` with these samples (see
        :func:`reachable`): an interval that cannot is shown but decides nothing."""
        if self.coverage is None:
            return True
        if self.simulated_at is not None:
            return _reaches_at(self.coverage, self.simulated_at)
        return self.coverage >= self.level - 1e-12

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in [low, high] (False without an interval)."""
        return self.ok and self.low - 1e-9 * abs(self.low) <= x <= self.high + 1e-9 * abs(self.high)

    def __str__(self) -> str:
        return f"[{self.low:.3g}, {self.high:.3g}] n={self.n}" if self.ok else f"no interval (n={self.n})"


def reachable(n: int) -> float:
    """The highest coverage an interval of a median-type statistic can have from ``n``
    independent samples: that of the sample range [min, max] for the median, 1 - 2^(1-n).
    A percentile bootstrap of a median (or of a ratio, sum, minimum of medians) never leaves
    the range of its samples, so it covers at most this: 50 % with 2 runs, 88 % with 5;
    95 % needs n >= 6."""
    return 1.0 - 2.0 ** (1 - n) if n >= 1 else 0.0


MIN_N = next(n for n in range(1, 100) if reachable(n) >= LEVEL)   # 6: samples for 95 %


def _clean(x) -> np.ndarray:
    """``x`` as a 1-D float array without NaN/inf (a failed repeat is NaN and is not a sample)."""
    a = np.asarray(x, dtype=float).ravel()
    return a[np.isfinite(a)]


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level = {level!r}; allowed: a confidence level strictly between 0 and 1")


def _none(n: int, method: str, level: float) -> Interval:
    return Interval(math.nan, math.nan, int(n), method, level)


# ---------------------------------------------------------------- simulated coverage (issue 64)

SLACK = 1.4   # experiments.statistics.coverage.SLACK: a method reaches L when it misses at most 1.4 x (1 - L)


def _reaches_at(coverage: float, at: float) -> bool:
    return 1 - coverage <= SLACK * (1 - at) + 1e-12


def simulated(method: str, n: int, level: float) -> tuple[float, float] | None:
    """The worst coverage over every simulated data shape of ``method`` (a key of
    :data:`experiments.statistics.coverage.METHODS`) from ``n`` runs a side at ``level``, and the nominal
    level it was simulated at, from the shipped table (:mod:`experiments.statistics.coverage_table`): the
    row of the largest simulated count <= ``n`` (coverage grows with the runs), at the lowest
    simulated level >= ``level`` (for a t method above the highest, the highest: a t interval's
    coverage tracks its level); None where nothing was simulated (fewer runs, a bootstrap above
    its highest simulated level)."""
    worst, lvs = _table(method, n)
    if worst is None:
        return None
    above = [lv for lv in lvs if lv >= level - 1e-9]
    if above:
        at = above[0]
    elif method.startswith(("bootstrap", "runs_bootstrap")):
        return None
    else:
        at = lvs[-1]
    return worst(at), at


def _table(method: str, n: int):
    """``method``'s cells in the shipped table at the largest simulated count <= ``n``: a function
    of a simulated level giving the worst coverage over the data shapes there (None where no
    count up to ``n`` was simulated), and the simulated levels, ascending."""
    from .coverage_table import ROWS

    mine = [r for r in ROWS if r[0] == method]
    ns = [r[1] for r in mine if r[1] <= n]
    lvs = sorted({r[3] for r in mine})
    if not ns:
        return None, lvs
    count = max(ns)
    return (lambda at: min(r[4] for r in mine if r[1] == count and abs(r[3] - at) < 1e-9)), lvs


def needs(method: str, level: float) -> int | None:
    """The fewest runs a side at which ``method`` reaches ``level`` in the simulation (None: no
    simulated count does)."""
    from .coverage_table import ROWS

    return next((n for n in sorted({r[1] for r in ROWS if r[0] == method}) if reaches(method, n, level)), None)


def reaches(method: str, n: int, level: float) -> bool:
    """Whether ``method`` reaches ``level`` from ``n`` runs a side in the simulation
    (:func:`simulated`: at least 93 % at 95 %)."""
    got = simulated(method, n, level)
    return got is not None and _reaches_at(*got)


def calibrated(method: str, n: int, level: float) -> tuple[float, float] | None:
    """The nominal level at which ``method`` from ``n`` runs a side covers enough for ``level``
    itself in the simulation (:func:`_reaches_at` against ``level``), and its coverage there: the
    lowest simulated nominal at or above ``level``; None where none does. Where the method
    reaches ``level`` at ``level``, that. Else a wider interval, at a higher nominal, that covers
    what ``level`` promises: a jackknife t of medians misses about 3.7 % at a nominal 97.5 % from
    10 runs a side on, short of the 3.5 % allowed (a second look, after ``make decide``, asks
    97.5 %), and 2.1 % at a nominal 98.75 %."""
    from .coverage_table import ROWS

    for nominal in sorted({r[3] for r in ROWS if r[0] == method and r[3] >= level - 1e-9}):
        got = simulated(method, n, nominal)
        if got is not None and _reaches_at(got[0], level):
            return nominal, got[0]
    return None


def simulated_below(method: str, n: int, level: float) -> tuple[float, float] | None:
    """For a percentile bootstrap asked above its highest simulated level (a fourth look asks
    98.75 %; the two-level bootstrap is simulated to 97.5 %): the worst coverage simulated from
    ``n`` runs a side at the highest simulated level below ``level``, and that level. On the same
    resamples a percentile interval at a higher level holds the one at a lower (its quantiles lie
    farther out), so it covers at least as often: a lower bound of its coverage at ``level``,
    judged against ``level`` itself. None where a level at or above ``level`` was simulated, or
    no count up to ``n``."""
    worst, lvs = _table(method, n)
    if worst is None or lvs[-1] >= level - 1e-9:
        return None
    return worst(lvs[-1]), lvs[-1]


def _bound_words(cov: float, level: float, below: float) -> str:
    words = (f", coverage at least {cov:.1%} at {level:.2%} (simulated at {below:.2%}: a wider percentile "
             "interval holds the narrower)")
    if not _reaches_at(cov, level):
        words += f": not shown to reach {level:.2%}, decides nothing"
    return words.replace(".00%", "%")


def bootstrap_decides(n: int, level: float) -> bool:
    """Whether a percentile bootstrap of medians over ``n`` runs a side decides at ``level``: its
    range's bound (:func:`reachable`) reaches the level and so does its simulated coverage."""
    return reachable(n) >= level - 1e-12 and reaches("bootstrap", n, level)


def _cov_words(method: str, n: int, level: float, count: str = "") -> tuple[str, float | None, float | None]:
    """", 3+3 runs, coverage 95.5% at 95% (simulated)" (``count``: the runs as the method says
    them, none when empty), and the simulated coverage and its level (None where not simulated)."""
    got = simulated(method, n, level)
    head = f", {count}" if count else ""
    if got is None:
        return head, None, None
    cov, at = got
    return f"{head}, coverage {cov:.1%} at {at:.2%} (simulated)".replace(".00%", "%"), cov, at


def _gmean_t(x: np.ndarray, level: float, what: str) -> tuple[float, Interval]:
    """The geometric mean of the per-run values ``x`` (positive) and Student's t interval on
    their logs (Kalibera and Jones's top level, on the log scale)."""
    n = len(x)
    lx = np.log(x)
    m, h = float(lx.mean()), float(_sps.t.ppf(0.5 + level / 2, n - 1) * lx.std(ddof=1) / math.sqrt(n))
    words, cov, at = _cov_words("t_log", n, level)
    return float(math.exp(m)), Interval(math.exp(m - h), math.exp(m + h), n, what + words, level, cov, at)


def gmean_t_with_fit(x: Sequence[float], v_fit: Sequence[float], df_fit: Sequence[float],
                     level: float | None = None, of: str = "rounds") -> tuple[float, Interval]:
    """The geometric mean of per-round ratios ``x`` (positive) that all share one estimate of a
    fitted line (the sleep row's compute throughput: every round sleeps for the same fit), and
    its Student t interval on the logs with the fit's own variance added: ``v_fit``, each
    configuration's delta-method share of the log ratio's variance over the fit's runs, with
    ``df_fit`` degrees of freedom each (:func:`experiments.statistics.coverage.fit_point_terms`),
    the degrees of freedom of the sum by Welch-Satterthwaite. Without the fit's terms the
    interval holds the rounds' spread only: conditional on the one fit the clone made. Its
    coverage is simulated (``t_log_fit``); fewer than 3 rounds, or a value <= 0: no interval."""
    from .coverage import t_log_fit

    level = _lv(level)
    a = _clean(x)
    n = len(a)
    what = f"geometric mean over {n} {of}, Student t on their logs with the fit's variance at the point added"
    point = float(np.exp(np.mean(np.log(a)))) if n and (a > 0).all() else math.nan
    if n < 3 or not math.isfinite(point):
        return point, _none(n, what, level)
    lo, hi = t_log_fit(np.log(a)[None, :], np.asarray(v_fit, float)[None, :], np.asarray(df_fit, float), level)
    words, cov, at = _cov_words("t_log_fit", n, level)
    return point, Interval(float(lo[0]), float(hi[0]), n, what + words, level, cov, at)


def runs_ci(x: Sequence[float], level: float | None = None, of: str = "runs") -> tuple[float, Interval]:
    """The typical value of one configuration from one value per run (its unit), by the method
    that reaches ``level`` with these runs (:func:`reaches`): the median and its binomial
    order statistics (:func:`median_ci`) where those reach it (6 runs for 95 %), else the
    geometric mean with Student's t on the runs' logs (positive values; 3 runs and more). With
    fewer runs, or values <= 0, :func:`median_ci` as it is (its method says its coverage)."""
    level = _lv(level)
    a = _clean(x)
    n = len(a)
    point, ci = median_ci(a, level, of=f"{n} {of}")
    if ci.enough or n < 3 or (a <= 0).any() or not reaches("t_log", n, level):
        return point, ci
    return _gmean_t(a, level, f"geometric mean over {n} {of}, Student t on their logs")


def _welch_half(a: np.ndarray, b: np.ndarray, level: float) -> float:
    """Half the width of Welch's t interval of mean(a) - mean(b) at ``level`` (their standard
    error and Welch-Satterthwaite degrees of freedom; 2 values a side at least)."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    den = va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)
    df = (va + vb) ** 2 / den if den > 0 else min(len(a), len(b)) - 1
    return float(_sps.t.ppf(0.5 + level / 2, df) * math.sqrt(va + vb))


def welch_ratio(a: Sequence[float], b: Sequence[float], level: float | None = None) -> tuple[float, Interval]:
    """The ratio of the geometric means of ``a`` and ``b`` (one positive value per run; unitless)
    with Welch's t interval on the runs' logs (unequal spreads allowed): exp of the difference of
    the log means, its standard error and Welch-Satterthwaite degrees of freedom. Fewer than 2
    runs a side, or a value <= 0, gives NaN bounds."""
    level = _lv(level)
    a, b = _clean(a), _clean(b)
    what = "ratio of geometric means over runs, Welch t on their logs"
    n = min(len(a), len(b))
    if n < 2 or (a <= 0).any() or (b <= 0).any():
        return math.nan, _none(n, what, level)
    la, lb = np.log(a), np.log(b)
    d = float(la.mean() - lb.mean())
    if simulated("welch_log", n, level) is None:   # fewer runs than the simulation starts at
        return math.exp(d), _none(n, f"{what}: needs at least {needs('welch_log', level)} runs a side, has {n}",
                                  level)
    h = _welch_half(la, lb, level)
    words, cov, at = _cov_words("welch_log", n, level, f"{len(a)}+{len(b)} runs")
    return math.exp(d), Interval(math.exp(d - h), math.exp(d + h), n, what + words, level, cov, at)


def welch_difference(a: Sequence[float], b: Sequence[float], level: float | None = None) -> tuple[float, Interval]:
    """The difference of the means of ``a`` and ``b`` (one value per run, in their unit; they may
    be 0 or negative) with Welch's t interval on the values (unequal spreads allowed): for a
    difference of per-run quantities such as two sides' similarities, where a ratio is not the
    statement's quantity and a median's jackknife or bootstrap reaches 95 % only at 3 or from 6
    runs a side (docs/statistics.md). Fewer than 2 runs a side gives NaN bounds."""
    level = _lv(level)
    a, b = _clean(a), _clean(b)
    what = "difference of means over runs, Welch t"
    n = min(len(a), len(b))
    if n < 2:
        return (float(a.mean() - b.mean()) if n else math.nan), _none(n, what, level)
    d = float(a.mean() - b.mean())
    if simulated("welch_diff", n, level) is None:
        return d, _none(n, f"{what}: needs at least {needs('welch_diff', level)} runs a side, has {n}", level)
    h = _welch_half(a, b, level)
    words, cov, at = _cov_words("welch_diff", n, level, f"{len(a)}+{len(b)} runs")
    return d, Interval(d - h, d + h, n, what + words, level, cov, at)


def extreme(parts: Sequence[Callable[[float], tuple[float, Interval]]], lowest: bool = True,
            level: float | None = None, method: str = "") -> tuple[float, Interval]:
    """The lowest (``lowest``) or highest of several quantities, each ``part(level)`` giving its
    point and interval at a level, and a simultaneous interval: every part at 1 - (1 - level) / k
    (Bonferroni over the k parts), the extreme's interval [lowest low, lowest high] (or the
    highest's). When every part's interval holds its quantity, which happens with at least
    ``level`` probability, the interval holds the extreme (a percentile bootstrap of the lowest
    of k equal ratios covers about half the time: experiments.statistics.coverage, ``bootstrap_lowest4``).
    ``n``: the fewest runs of a part; it reaches its level when every part reaches its own."""
    level = _lv(level)
    k = len(parts)
    if k == 0:
        return math.nan, _none(0, method, level)
    each = 1 - (1 - level) / k
    got = [p(each) for p in parts]
    pick = min if lowest else max
    point = pick(g[0] for g in got)
    cis = [g[1] for g in got]
    n = min(c.n for c in cis)
    first = cis[0].method
    what = (f"{method}: " if method else "") + (f"{'lowest' if lowest else 'highest'} of {k}, each "
                                                f"at {each:.2%} (Bonferroni), " + first)
    if not all(c.ok for c in cis):
        return point, _none(n, what, level)
    lo, hi = pick(c.low for c in cis), pick(c.high for c in cis)
    short = [c for c in cis if not c.enough]
    cov = None if not short else min(c.coverage for c in short)
    at = None if not short else short[0].simulated_at
    return point, Interval(float(lo), float(hi), n, what, level, cov, at)


def _jackknife_t(stat: Callable[..., float], runs: list[list[np.ndarray]], point: float,
                 level: float) -> tuple[float, float] | None:
    """The jackknife-t interval over runs of ``stat`` (on the log scale where the point and every
    leave-one-run-out value are positive): each sample's runs left out one at a time, the
    variance summed over the samples, Welch-Satterthwaite degrees of freedom. None when a
    leave-one-out value is not finite. Its width is 0 when no run left out moves the statistic
    (:func:`runs_bootstrap` then asks the bootstrap whether any resample does)."""
    loo = []
    for j, s in enumerate(runs):
        vals = []
        for i in range(len(s)):
            rest = [np.concatenate([r for m, r in enumerate(x) if not (k == j and m == i)]) for k, x in enumerate(runs)]
            vals.append(float(stat(*rest)))
        loo.append(np.asarray(vals))
    if not all(np.isfinite(v).all() for v in loo):
        return None
    log = point > 0 and all((v > 0).all() for v in loo)
    g = np.log if log else (lambda v: v)
    vs = [(len(v) - 1) / len(v) * float(((g(v) - g(v).mean()) ** 2).sum()) for v in loo]
    var = sum(vs)
    den = sum(v ** 2 / (len(x) - 1) for v, x in zip(vs, loo))
    df = var ** 2 / den if den > 0 else min(len(x) for x in loo) - 1
    h = float(_sps.t.ppf(0.5 + level / 2, max(df, 1.0)) * math.sqrt(var))
    c = float(g(np.asarray(point)))
    return (math.exp(c - h), math.exp(c + h)) if log else (c - h, c + h)


def _moved_by_runs(stat: Callable[..., float], runs: list[list[np.ndarray]], point: float, seed: int,
                   draws: int = 200) -> bool:
    """Whether drawing each sample's runs with replacement (each run's units kept whole) ever
    moves ``stat`` off ``point``: True for a step of the runs that no one run left out crosses."""
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        v = float(stat(*[np.concatenate([s[i] for i in rng.integers(0, len(s), len(s))]) for s in runs]))
        if np.isfinite(v) and not math.isclose(v, point, rel_tol=1e-12, abs_tol=0.0):
            return True
    return False


def median_ci(x: Sequence[float], level: float | None = None, of: str = "") -> tuple[float, Interval]:
    """The median of ``x`` (its unit) and its distribution-free confidence interval; ``of``
    names what the samples are (``"runs"``: the method then reads "median over runs, ...").

    The bounds are order statistics x_(l) and x_(n-l+1), with l the largest rank such that
    P(Binomial(n, 1/2) < l) <= (1 - level)/2: the interval covers the true median with at least
    ``level`` probability whatever the distribution. With fewer than 6 samples no pair of order
    statistics reaches 95 %; the interval is then [min, max] and its method states the coverage
    it actually has (1 - 2^(1-n))."""
    level = _lv(level)
    what = "median" + (f" over {of}" if of else "") + ", binomial order statistics"
    a = np.sort(_clean(x))
    n = len(a)
    if n == 0:
        return math.nan, _none(0, what, level)
    med = float(np.median(a))
    if n < 2:
        return med, _none(n, what, level)
    alpha = 1 - level
    l = int(_sps.binom.ppf(alpha / 2, n, 0.5))  # smallest k with cdf(k) >= alpha/2; cdf(l-1) < alpha/2
    l = max(l, 1)
    u = n - l + 1
    coverage = 1 - 2 * float(_sps.binom.cdf(l - 1, n, 0.5))
    method = what
    if coverage < level - 1e-12:
        method += f" (coverage {coverage:.0%}: too few samples for {level:.0%})"
    return med, Interval(float(a[l - 1]), float(a[u - 1]), n, method, level, coverage)


def _block_len(n: int, block) -> int:
    """Block length for :func:`bootstrap`: 1 (``None``: independent samples), ``block``, or
    ``"auto"``: round(n^(1/3)), the usual rate for a moving-block bootstrap."""
    if block is None:
        return 1
    if block == "auto":
        return max(1, int(round(n ** (1 / 3))))
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block = {block!r}; allowed: None, 'auto' or a block length >= 1")
    return min(block, max(n, 1))


def _resample(a: np.ndarray, rng, n_boot: int, b: int) -> np.ndarray:
    """``n_boot`` resamples of ``a`` (rows): single values (b = 1) or circular blocks of b
    consecutive values, cut to len(a)."""
    n = len(a)
    if b <= 1:
        return a[rng.integers(0, n, size=(n_boot, n))]
    k = -(-n // b)
    starts = rng.integers(0, n, size=(n_boot, k))
    idx = (starts[:, :, None] + np.arange(b)) % n
    return a[idx.reshape(n_boot, k * b)[:, :n]]


def bootstrap(stat: Callable[..., float], *samples, level: float | None = None, n_boot: int = N_BOOT,
              seed: int = 0, method: str = "bootstrap", block=None) -> tuple[float, Interval]:
    """``stat(*samples)`` and its percentile-bootstrap interval: each sample is resampled with
    replacement, independently of the others, ``n_boot`` times (seeded). ``n`` is the smallest
    sample's size; any sample with fewer than 2 finite values gives NaN bounds.

    ``block``: for samples that are consecutive steps or intervals of one run (correlated, not
    independent runs), resample circular blocks of that many consecutive values (``"auto"``:
    n^(1/3)); the coverage is then judged on the number of blocks. ``Interval.coverage`` is
    :func:`reachable` of the independent units (runs or blocks): a bootstrap of medians
    cannot cover more than their range does."""
    level = _lv(level)
    if n_boot < 100:
        raise ValueError(f"n_boot = {n_boot!r}; allowed: at least 100 resamples")
    arrs = [_clean(s) for s in samples]
    n = min(len(a) for a in arrs) if arrs else 0
    if n == 0:
        return math.nan, _none(0, method, level)
    point = float(stat(*arrs))
    if n < 2:
        return point, _none(n, method, level)
    rng = np.random.default_rng(seed)
    bs = [_block_len(len(a), block) for a in arrs]
    draws = [_resample(a, rng, n_boot, b) for a, b in zip(arrs, bs)]
    rows = getattr(stat, "rows", None)   # the statistic of every resample at once (:func:`by_rows`)
    boot = (np.asarray(rows(*draws), dtype=float) if rows is not None
            else np.array([stat(*(d[i] for d in draws)) for i in range(n_boot)], dtype=float))
    boot = boot[np.isfinite(boot)]
    if len(boot) < n_boot // 2:
        return point, _none(n, method + " (statistic undefined on most resamples)", level)
    alpha = 1 - level
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    if not lo <= point <= hi:
        # a biased statistic (an R², a minimum over configurations): the bias-corrected
        # percentile interval (Efron's BC), which moves the quantiles by the share of
        # resamples below the point; the point itself where even that leaves it outside
        z0 = _sps.norm.ppf(np.clip(np.mean(boot < point), 1 / (2 * len(boot)), 1 - 1 / (2 * len(boot))))
        za = _sps.norm.ppf([alpha / 2, 1 - alpha / 2])
        lo, hi = np.quantile(boot, _sps.norm.cdf(2 * z0 + za))
        lo, hi = min(lo, point), max(hi, point)
        method += ", bias-corrected (BC)"
    units = min(len(a) // b for a, b in zip(arrs, bs))
    if block is not None:
        method += f", blocks of {max(bs)} consecutive samples"
    cov, at = reachable(units), None
    if cov < level - 1e-12:
        method += (f" ({units} independent units: a bootstrap of medians covers at most {cov:.0%}, "
                   f"too few for {level:.0%})")
    elif block is None and (got := simulated("bootstrap", units, level)) is not None:
        # the simulated coverage of a percentile bootstrap of a ratio of medians at these runs
        # (experiments.statistics.coverage): below the range's bound at few runs
        cov, at = got
        method += f", {units} runs a side, coverage {cov:.1%} at {at:.2%} (simulated)".replace(".00%", "%")
        if not _reaches_at(cov, at):
            method += f": too few runs for {level:.2%}".replace(".00%", "%")
    elif block is None and (low := simulated_below("bootstrap", units, level)) is not None:
        cov, at = low[0], level
        method += f", {units} runs a side" + _bound_words(cov, level, low[1])
    need = needs("bootstrap", level) if at is not None and not _reaches_at(cov, at) else None
    return point, Interval(float(lo), float(hi), n, method, level, cov, at, need)


MIN_RUNS = 3   # runs of a configuration below which its interval would come from inside its runs


def runs_bootstrap(stat: Callable[..., float], *samples, level: float | None = None, n_boot: int = N_BOOT,
                   seed: int = 0, method: str = "bootstrap", units: str = "steps",
                   min_runs: int = MIN_RUNS) -> tuple[float, Interval]:
    """``stat(*arrays)`` and its two-level percentile-bootstrap interval, runs the unit.

    Each sample is a list of runs, each run an array of the units measured inside it (steps,
    windows, sampled seconds; an array of one value for a run measured once). A resample draws,
    for every sample independently, as many runs as it has with replacement, then, inside each
    drawn run, as many units as it has with replacement (Kalibera and Jones's hierarchical
    resampling), and concatenates them: ``stat`` sees one array per sample, as it would the
    pooled units. The point is ``stat`` on the runs as measured. So the interval holds what
    changes when a process starts again (placement, the page cache, the box's load), not only
    the noise inside one run.

    ``Interval.n`` is the number of runs (all samples together); the coverage the method can
    reach is :func:`reachable` of that count: for a statistic that grows or falls with each
    sample (a ratio of medians, a median over configurations), the resampled values stay between
    those of the most extreme runs, so it misses only when every run of every sample falls on
    the wrong side, with probability 2^(1 - runs). A sample with no run gives NaN bounds, and so
    does one with fewer than ``min_runs`` runs: its interval would be the noise inside its
    runs, not what a new run would give; the method then says how many runs it needs."""
    level = _lv(level)
    if n_boot < 100:
        raise ValueError(f"n_boot = {n_boot!r}; allowed: at least 100 resamples")
    runs = [[_clean(r) for r in s] for s in samples]
    runs = [[r for r in s if len(r)] for s in runs]
    n = sum(len(s) for s in runs)
    what = f"{method}, over {n} runs ({units} resampled inside each drawn run)"
    if not runs or any(len(s) == 0 for s in runs):
        return math.nan, _none(n, what, level)
    point = float(stat(*[np.concatenate(s) for s in runs]))
    few = min(len(s) for s in runs)
    if few < min_runs:
        return point, _none(n, f"{method}: needs at least {min_runs} runs of each configuration it compares, "
                               f"has {few} (an interval from inside fewer runs would hold only their own noise)",
                            level)
    if n < 2:
        return point, _none(n, what, level)
    # runs of one value each: a statistic of per-run values, simulated as such (a bootstrap or a
    # jackknife of medians of per-run values); else of units inside runs
    single = all(len(r) == 1 for s in runs for r in s)
    boot_key = "bootstrap" if single else "runs_bootstrap"
    if not (bootstrap_decides(few, level) if single else reaches("runs_bootstrap", few, level)):
        # the two-level percentile bootstrap covers too little at these runs (experiments.statistics.coverage:
        # 3 runs a side, most variance between runs: ~83 % at 95 %): the jackknife t over runs
        key = "jackknife" if single else "runs_jackknife_one" if len(runs) == 1 else "runs_jackknife"
        # (nominal, its coverage): the level itself where the method reaches it there
        cal = (level, None) if reaches(key, few, level) else calibrated(key, few, level)
        got = _jackknife_t(stat, runs, point, cal[0]) if cal is not None else None
        # no run left out moves the statistic: a quantity equal in every run has no spread, but a
        # step of the runs (a share of configurations inside a range) does, which leaving one run
        # out never shows (two fresh clones gave unet3d-random-vfs-within-real-spread [0, 0] and
        # [1, 1]); drawing the runs whole tells the two apart, and the second goes to the bootstrap
        if got is not None and got[1] - got[0] <= 1e-12 * max(1.0, abs(point)) \
                and _moved_by_runs(stat, runs, point, seed):
            got = None
        if got is not None:
            counts = "+".join(str(len(s)) for s in runs) if len(runs) <= 3 else f"{len(runs)} x {few}+"
            if cal[0] > level + 1e-9:   # wider, at the nominal that covers what level promises
                cov, at = cal[1], level
                words = (f", at a nominal {cal[0]:.2%}: coverage {cov:.1%}, enough for {level:.2%} "
                         "(simulated)").replace(".00%", "%")
            else:
                words, cov, at = _cov_words(key, few, level)
            proxy = " (simulated on a ratio of two)" if len(runs) > 2 else ""
            lead = "" if method == "bootstrap" else f"{method}, "   # the default names the old method
            return point, Interval(got[0], got[1], n, f"{lead}over {n} runs ({counts}): jackknife t, "
                                   f"each run left out in turn{words}{proxy}", level, cov, at)
    rng = np.random.default_rng(seed)
    # each sample's runs laid end to end: a resample picks runs (with replacement), then as many
    # units as each picked run has, uniformly within it, as indices into the flat array
    flat = [np.concatenate(s) for s in runs]
    lens = [np.array([len(r) for r in s]) for s in runs]
    starts = [np.concatenate([[0], np.cumsum(ln)[:-1]]) for ln in lens]
    drawn = []   # per sample: all its resamples at once where its runs have one length, else None
    for f, ln, st in zip(flat, lens, starts):
        if ln.min() == ln.max() and n_boot * int(ln.sum()) <= 20_000_000:   # at most ~160 MB of draws
            k, L = len(ln), int(ln[0])
            pick = rng.integers(0, k, size=(n_boot, k))
            idx = st[pick][:, :, None] + rng.integers(0, L, size=(n_boot, k, L))
            drawn.append(f[idx.reshape(n_boot, k * L)])
        else:
            drawn.append(None)

    def one(j: int, i: int) -> np.ndarray:
        if drawn[j] is not None:
            return drawn[j][i]
        ln, st = lens[j], starts[j]
        pick = rng.integers(0, len(ln), size=len(ln))
        pl = ln[pick]
        rep = np.repeat(pl, pl)
        return flat[j][np.repeat(st[pick], pl) + (rng.random(len(rep)) * rep).astype(np.int64)]

    boot = np.array([stat(*(one(j, i) for j in range(len(flat)))) for i in range(n_boot)], dtype=float)
    boot = boot[np.isfinite(boot)]
    if len(boot) < n_boot // 2:
        return point, _none(n, what + " (statistic undefined on most resamples)", level)
    alpha = 1 - level
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    if not lo <= point <= hi:   # a biased statistic: bias-corrected percentiles (as bootstrap)
        z0 = _sps.norm.ppf(np.clip(np.mean(boot < point), 1 / (2 * len(boot)), 1 - 1 / (2 * len(boot))))
        za = _sps.norm.ppf([alpha / 2, 1 - alpha / 2])
        lo, hi = np.quantile(boot, _sps.norm.cdf(2 * z0 + za))
        lo, hi = min(lo, point), max(hi, point)
        what += ", bias-corrected (BC)"
    cov, at = reachable(n), None
    if cov < level - 1e-12:
        what += f" ({n} runs: an interval of runs covers at most {cov:.0%}, too few for {level:.0%})"
    elif (got := simulated(boot_key, few, level)) is not None:
        cov, at = got
        what += f", coverage {cov:.1%} at {at:.2%} (simulated)".replace(".00%", "%")
        if not _reaches_at(cov, at):
            what += f": too few runs for {level:.2%}".replace(".00%", "%")
    elif (low := simulated_below(boot_key, few, level)) is not None:
        # not simulated at this level (before: the range's bound alone, which decided unsimulated)
        cov, at = low[0], level
        what += _bound_words(cov, level, low[1])
    need = needs(boot_key, level) if at is not None and not _reaches_at(cov, at) else None
    return point, Interval(float(lo), float(hi), n, what, level, cov, at, need)


def runs_of(df, col: str, by: str = "run", **eq) -> list[np.ndarray]:
    """The values of ``col`` in the rows of ``df`` whose columns equal ``eq`` (warm-ups left out,
    as :func:`samples`), one array per run (``by``): a sample of :func:`runs_bootstrap`."""
    bad = [k for k in (col, by, *eq) if k not in df.columns]
    if bad:
        raise ValueError(f"runs_of: column(s) {bad} not in the table; it has {list(df.columns)}")
    keep = np.ones(len(df), dtype=bool)
    if "warmup" in df.columns:
        keep &= ~df["warmup"].fillna(False).astype(bool).to_numpy()
    for k, v in eq.items():
        keep &= (df[k] == v).to_numpy()
    d = df.loc[keep]
    return [g[col].to_numpy(dtype=float) for _, g in d.groupby(by, sort=True)]


def by_rows(rows: Callable[..., np.ndarray]):
    """Give a statistic of 1-D samples its form over 2-D ones, ``rows(*arrays)`` -> one value
    per row (each row a resample), which :func:`bootstrap` then takes instead of calling the
    statistic once per resample (2,000 Python calls: 13 of the LMDBIO report's 32 s). ``rows``
    must compute, row by row, what the statistic computes, in the same order of operations, so
    that the interval is the same to the last bit (tests/test_stats.py checks the library's)."""
    def mark(stat):
        stat.rows = rows
        return stat
    return mark


def ratio_rows(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` row by row, NaN where ``den`` is 0 (a statistic's :func:`by_rows` form of a
    ratio that is NaN on a zero denominator)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)


def _ratio_med_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ratio_rows(np.median(a, axis=-1), np.median(b, axis=-1))


@by_rows(_ratio_med_rows)
def _ratio_med(a: np.ndarray, b: np.ndarray) -> float:
    mb = np.median(b)
    return float(np.median(a) / mb) if mb else math.nan


def ratio_of_medians(a: Sequence[float], b: Sequence[float], level: float | None = None,
                     n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, Interval]:
    """median(a) / median(b) (unitless) with a percentile-bootstrap interval over the samples of
    each side (independent resampling: a and b need not be paired). Each sample is one run's
    value (a run's steps go through :func:`runs_bootstrap`); n = min(len(a), len(b)) runs.

    Where the simulation says the percentile bootstrap does not reach ``level`` with these runs
    (:func:`reaches`; fewer than 6 a side at 95 %, or a corrected level), the ratio of the runs'
    geometric means with Welch's t on their logs (:func:`welch_ratio`) decides instead, which
    reaches it from 3 runs a side; the method says which it is and its simulated coverage."""
    level = _lv(level)
    ca, cb = _clean(a), _clean(b)
    n = min(len(ca), len(cb))
    if not bootstrap_decides(n, level) and n >= 3 and (ca > 0).all() and (cb > 0).all() \
            and reaches("welch_log", n, level):
        return welch_ratio(ca, cb, level)
    return bootstrap(_ratio_med, a, b, level=level, n_boot=n_boot, seed=seed,
                     method="ratio of medians, bootstrap over runs")


def ratio_of_run_medians(a_runs: Sequence[Sequence[float]], b_runs: Sequence[Sequence[float]],
                         level: float | None = None, what: str = "") -> tuple[float, Interval]:
    """:func:`ratio_of_medians` of each run's median (``a_runs``, ``b_runs``: one array of
    units per run, e.g. :func:`runs_of`; unitless), the run the unit: for a few units a run
    (checkpoints: 2 to 5), whose pooled median jumps between modes when a run is left out, so
    that :func:`runs_bootstrap`'s jackknife, simulated on 30 steps a run, does not describe it.
    The method says so (``what``: the units' name)."""
    med = lambda runs: [float(np.median(r)) for r in runs if len(r)]   # noqa: E731
    v, ci = ratio_of_medians(med(a_runs), med(b_runs), level=level)
    return v, dataclasses.replace(ci, method=f"ratio of the runs' median {what or 'values'}, {ci.method}")


def speedup(base_s: Sequence[float], other_s: Sequence[float], level: float | None = None,
            n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, Interval]:
    """Speed-up of ``other`` over ``base`` from times (s): median(base) / median(other); > 1 means
    ``other`` is faster. For rates (MB/s, images/s) use ``ratio_of_medians(other, base)``."""
    return ratio_of_medians(base_s, other_s, level=level, n_boot=n_boot, seed=seed)


def paired_ratio(a: Sequence[float], b: Sequence[float], level: float | None = None) -> tuple[float, Interval]:
    """The median of per-repeat ratios a_i / b_i (unitless) and its :func:`median_ci`: for two
    configurations measured side by side in each repeat, so that a slow repeat slows both."""
    level = _lv(level)
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if len(a) != len(b):
        raise ValueError(f"paired_ratio: len(a) = {len(a)}, len(b) = {len(b)}; allowed: the same "
                         "number of runs on both sides")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    point, ci = median_ci(r, level)
    return point, Interval(ci.low, ci.high, ci.n, "median of per-repeat ratios, " + ci.method, level,
                           ci.coverage)


def slope_ci(x: Sequence[float], y: Sequence[float], level: float | None = None) -> tuple[float, Interval]:
    """The OLS slope of y on x (y-unit per x-unit) and its t interval (statsmodels). n = number of
    finite (x, y) pairs; fewer than 3 pairs leave no residual degree of freedom: NaN bounds."""
    import statsmodels.api as sm

    level = _lv(level)
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if len(x) != len(y):
        raise ValueError(f"slope_ci: len(x) = {len(x)}, len(y) = {len(y)}; allowed: equal lengths")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(x)
    method = "OLS slope, t interval"
    if n < 2 or np.ptp(x) == 0:
        return math.nan, _none(n, method, level)
    if n < 3:
        return float((y[1] - y[0]) / (x[1] - x[0])), _none(n, method, level)
    fit = sm.OLS(y, sm.add_constant(x)).fit()
    lo, hi = fit.conf_int(alpha=1 - level)[1]
    return float(fit.params[1]), Interval(float(lo), float(hi), n, method, level)


def samples(df, col: str, **eq) -> np.ndarray:
    """The values of ``col`` in the rows of ``df`` (a stage's raw.parquet: one row per repeat,
    step or read) whose columns equal ``eq``, as floats; warm-up rows (a true ``warmup``
    column) are left out, as every stage's summary leaves them out. Unknown columns are an error
    naming them."""
    bad = [k for k in (col, *eq) if k not in df.columns]
    if bad:
        raise ValueError(f"samples: column(s) {bad} not in the table; it has {list(df.columns)}")
    keep = np.ones(len(df), dtype=bool)
    if "warmup" in df.columns:
        keep &= ~df["warmup"].fillna(False).astype(bool).to_numpy()
    for k, v in eq.items():
        keep &= (df[k] == v).to_numpy()
    return df.loc[keep, col].to_numpy(dtype=float)


def with_median_ci(summary, raw, col: str, by: list[str], level: float | None = None, as_: str | None = None):
    """``summary`` with ``{as_}_ci_low``, ``{as_}_ci_high`` and ``{as_}_n`` (``as_`` defaults to
    ``col``: the summary's column of the medians): the :func:`median_ci` of ``col`` (its unit)
    over the rows of ``raw`` (warm-ups left out) that share ``by`` with each summary row, the
    error bars of a figure that plots the summary's medians. A row without samples gets NaN."""
    import pandas as pd

    bad = [k for k in (col, *by) if k not in raw.columns]
    if bad:
        raise ValueError(f"with_median_ci: column(s) {bad} not in raw; it has {list(raw.columns)}")
    d = raw[~raw["warmup"].fillna(False).astype(bool)] if "warmup" in raw.columns else raw
    name = as_ or col
    rows = []
    for key, g in d.groupby(by, dropna=False, sort=False):
        _, ci = median_ci(g[col], level)
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))),
                     f"{name}_ci_low": ci.low, f"{name}_ci_high": ci.high, f"{name}_n": ci.n})
    cis = pd.DataFrame(rows, columns=[*by, f"{name}_ci_low", f"{name}_ci_high", f"{name}_n"])
    keep = [c for c in summary.columns if c not in cis.columns or c in by]
    return summary[keep].merge(cis, on=by, how="left")
