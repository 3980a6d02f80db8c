"""How often each interval method of :mod:`experiments.statistics.stats` covers the true value, by simulation
(issue 64, item 4: an interval covers what it prints).

Each method is simulated at the run counts the verdicts decide with, on data of known answer:

* per-run values (one value a run): ``normal`` (coefficient of variation 0.1), ``lognormal``
  (log sd 0.3), ``heavy`` (lognormal, log sd 1) and ``two-level`` (a run's value is the mean of
  its 30 steps, log sd 0.3 each, with a run effect giving the between-run share ``share`` of the
  variance of a run's mean, as ``variance.csv`` reports it);
* units inside runs (the two-level data of :func:`experiments.statistics.stats.runs_bootstrap`): 30 steps a
  run, normal or lognormal steps, between-run shares 0 to 0.99.

Both sides of a ratio have the same shape and scale, so the true ratio is 1 whatever the
statistic (a ratio of medians, of geometric means, of pooled medians, the lowest of four such
ratios); a one-sample method's truth is the population value of its own statistic (the median
for order statistics, exp(E log X) for a t on the logs), taken from 400,000 draws.

A method *reaches* a level L at a count when its worst coverage over every shape and share is at
least 1 - 1.4 (1 - L): 93 % at 95 % (the margin holds the Monte Carlo error of a few thousand
replicates). :func:`table` computes the whole table; ``python -m experiments.statistics.coverage --write``
writes it to :mod:`experiments.statistics.coverage_table` (what :mod:`experiments.statistics.stats` reads to choose
its method and say its coverage), and ``tests/test_coverage.py`` recomputes the cells that
decide and checks them against the shipped table.
"""

from __future__ import annotations

import argparse
import functools
import math
from pathlib import Path

import numpy as np
from scipy import stats as _sps

LEVELS = (0.95, 0.975, 0.9875)   # 95 %, and the Bonferroni levels of 2 and 4 looks
COUNTS = (3, 4, 5, 6, 8, 10)     # runs per side
STEPS = 30                       # units inside a run (two-level data)
SHARES = (0.0, 0.5, 0.9, 0.99)   # between-run share of the variance of a run's mean
VALUE_SHAPES = ("normal", "lognormal", "heavy", *(f"two-level {s}" for s in SHARES))
UNIT_SHAPES = (*(f"normal steps {s}" for s in SHARES), *(f"lognormal steps {s}" for s in SHARES))
# a ratio over rounds that shares one fitted line's value at a point (t_log_fit): the compute fit's
# design of the default profile (G 1, 2 x B 1, 2, 4; 3 runs each), each run's mean lognormal with
# log sd ``fit``, each round's ratio with log sd ``rounds``; ``curved``: the true means bend away
# from the line (the line misses the point); ``uneven``: the G = 2 runs twice as spread; ``line``:
# the rounds given the line alone (compute_level fit), not carried by the point's measured mean
FIT_G, FIT_B, FIT_RUNS = (1, 1, 1, 2, 2, 2), (1, 2, 4, 1, 2, 4), 3
FIT_SHAPES = ("fit 0.03 rounds 0.02", "fit 0.1 rounds 0.02", "fit 0.03 rounds 0.1", "fit 0.1 rounds 0.1",
              "fit 0.1 curved rounds 0.03", "fit 0.1 uneven rounds 0.03", "fit 0.1 line rounds 0.03")
SLACK = 1.4   # a method reaches L when its miss rate is at most 1.4 x the nominal 1 - L
MIN_REPS = 1000   # replicates a cell needs before it can show that a method reaches its level


def floor(level: float) -> float:
    """The least coverage that counts as reaching ``level`` (93 % for 95 %)."""
    return 1 - SLACK * (1 - level)


# ---------------------------------------------------------------- data of known answer

def _units(shape: str, reps: int, n: int, rng) -> np.ndarray:
    """(reps, n, STEPS) units of ``n`` runs (a ``* steps s`` shape), positive, median 1."""
    kind, share = shape.split(" steps ")
    share = float(share)
    # a run's mean has sd tau (log sd for lognormal); the share of it between runs is ``share``
    tau = 0.1 if kind == "normal" else 0.3
    sb, sw = math.sqrt(share) * tau, math.sqrt((1 - share) * STEPS) * tau
    z = sb * rng.standard_normal((reps, n, 1)) + sw * rng.standard_normal((reps, n, STEPS))
    if kind == "normal":
        return np.maximum(1 + z, 1e-3)   # sw up to 0.55: a few units clipped near 0 at share 0
    return np.exp(z)


def _values(shape: str, reps: int, n: int, rng) -> np.ndarray:
    """(reps, n) per-run values of a ``VALUE_SHAPES`` shape (positive)."""
    if shape == "normal":
        return np.maximum(1 + 0.1 * rng.standard_normal((reps, n)), 1e-3)
    if shape == "lognormal":
        return np.exp(0.3 * rng.standard_normal((reps, n)))
    if shape == "heavy":
        return np.exp(1.0 * rng.standard_normal((reps, n)))
    share = float(shape.split()[-1])
    sw = 0.3   # a step's log sd; the run effect makes ``share`` of the run mean's log variance
    sb = math.sqrt(share / (1 - share) * sw ** 2 / STEPS) if share < 1 else 0.0
    steps = np.exp(sb * rng.standard_normal((reps, n, 1)) + sw * rng.standard_normal((reps, n, STEPS)))
    return steps.mean(axis=-1)


@functools.cache
def _truth(shape: str, what: str) -> float:
    """The population value of a one-sample statistic (``median`` or ``geomean``) of per-run
    values of ``shape``, from 400,000 draws (seeded)."""
    x = _values(shape, 1, 400_000, np.random.default_rng(12345))[0]
    return float(np.median(x)) if what == "median" else float(np.exp(np.mean(np.log(x))))


# ---------------------------------------------------------------- the methods, vectorized

def _tq(level: float, df) -> np.ndarray:
    return _sps.t.ppf(0.5 + level / 2, df)


def welch_log(a: np.ndarray, b: np.ndarray, level: float):
    """Welch's t on the logs of per-run values, rows of ``a`` and ``b`` (reps, n): the interval
    of the ratio of geometric means, (low, high) arrays."""
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(-1, ddof=1) / la.shape[-1], lb.var(-1, ddof=1) / lb.shape[-1]
    d = la.mean(-1) - lb.mean(-1)
    se = np.sqrt(va + vb)
    df = _welch_df(va, vb, la.shape[-1], lb.shape[-1])
    h = _tq(level, df) * se
    return np.exp(d - h), np.exp(d + h)


def welch_diff(a: np.ndarray, b: np.ndarray, level: float):
    """Welch's t on per-run values themselves, rows of ``a`` and ``b`` (reps, n): the interval of
    the difference of their means (for quantities that may be 0 or negative: a difference of
    similarities), (low, high) arrays."""
    va, vb = a.var(-1, ddof=1) / a.shape[-1], b.var(-1, ddof=1) / b.shape[-1]
    d = a.mean(-1) - b.mean(-1)
    h = _tq(level, _welch_df(va, vb, a.shape[-1], b.shape[-1])) * np.sqrt(va + vb)
    return d - h, d + h


def _welch_df(va, vb, na, nb):
    num = (va + vb) ** 2
    den = va ** 2 / (na - 1) + vb ** 2 / (nb - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), min(na, nb) - 1)


def t_log(x: np.ndarray, level: float):
    """Student's t on the logs of per-run values (reps, n): the geometric mean's interval."""
    lx = np.log(x)
    n = lx.shape[-1]
    h = _tq(level, n - 1) * lx.std(-1, ddof=1) / math.sqrt(n)
    m = lx.mean(-1)
    return np.exp(m - h), np.exp(m + h)


def fit_point_terms(m: np.ndarray, s2: np.ndarray, n: np.ndarray, X: np.ndarray, point: int, carried: bool = True):
    """The fitted line's share of the variance of a ratio's log at one configuration, by the delta
    method: ``m`` and ``s2`` (..., configurations) the mean and variance of each configuration's
    per-run means, ``n`` (configurations,) its runs, ``X`` the design (configurations x
    coefficients, as :func:`experiments.workloads.fits.ols`: the line through the
    configurations' means), ``point`` the row of the ratio's configuration. The ratio's log holds
    log line(point) and, where ``carried`` (:mod:`experiments.workloads.hour_level`), minus the
    log of the point's own measured mean. Returns (that log, each configuration's variance term,
    gradient^2 x s2 / n, and its n - 1 degrees of freedom). NaN where the line at the point is
    not positive."""
    n = np.asarray(n, float)
    h = X[point] @ np.linalg.solve(X.T @ X, X.T)
    line = m @ h
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = line > 0
        g = h / np.where(ok, line, np.nan)[..., None]
        log_c = np.log(np.where(ok, line, np.nan))
        if carried:
            g[..., point] -= 1 / m[..., point]
            log_c = log_c - np.log(m[..., point])
    return log_c, g ** 2 * s2 / n, n - 1


def t_log_fit(logs: np.ndarray, v_fit: np.ndarray, df_fit: np.ndarray, level: float):
    """Student's t on per-round logs (reps, n) with the fit's variance terms added (``v_fit``
    (reps, k), each with ``df_fit`` (k,) degrees of freedom; :func:`fit_point_terms`), the
    degrees of freedom by Welch-Satterthwaite: the interval of the rounds' geometric mean where
    every round shares one estimate of the fitted line, (low, high) arrays. Never narrower than
    the rounds' own t interval: a small term of many degrees of freedom raises the sum's, and
    its t quantile would otherwise shrink the interval below what the rounds alone give."""
    n = logs.shape[-1]
    vr = logs.var(-1, ddof=1) / n
    V = vr + v_fit.sum(-1)
    den = vr ** 2 / (n - 1) + (v_fit ** 2 / df_fit).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(den > 0, V ** 2 / np.where(den > 0, den, 1), n - 1)
    h = np.maximum(_tq(level, df) * np.sqrt(V), _tq(level, n - 1) * np.sqrt(vr))
    m = logs.mean(-1)
    return np.exp(m - h), np.exp(m + h)


def _fit_data(shape: str, reps: int, n: int, rng):
    """A ``FIT_SHAPES`` shape: (per-round logs (reps, n), the fit's variance terms and their
    degrees of freedom, the true log ratio). Each round's log ratio is the fitted line's log
    ratio at (1, 1) (from this replicate's runs) plus the round's own error."""
    w = shape.split()
    sf, sr = float(w[1]), float(w[-1])
    G, B = np.array(FIT_G, float), np.array(FIT_B, float)
    mu = 0.05 * G + 0.04 * B - 0.03 + (0.02 * (B - 2) ** 2 if "curved" in w else 0.0)
    sd = sf * (np.where(G > 1, 2.0, 1.0) if "uneven" in w else np.ones(len(G)))
    X = np.column_stack([np.ones(len(G)), G, B])
    carried = "line" not in w
    runs = mu[:, None] * np.exp(sd[:, None] * rng.standard_normal((reps, len(G), FIT_RUNS)))
    n_runs = np.full(len(G), FIT_RUNS)
    log_c, v, df = fit_point_terms(runs.mean(-1), runs.var(-1, ddof=1), n_runs, X, 0, carried)
    truth = fit_point_terms(mu * np.exp(sd ** 2 / 2), np.zeros(len(G)), n_runs, X, 0, carried)[0]  # E of a run mean
    return log_c[:, None] + sr * rng.standard_normal((reps, n)), v, df, float(truth)


def binomial(x: np.ndarray, level: float):
    """The median's order-statistics interval (as :func:`experiments.statistics.stats.median_ci`)."""
    n = x.shape[-1]
    l = max(int(_sps.binom.ppf((1 - level) / 2, n, 0.5)), 1)
    s = np.sort(x, axis=-1)
    return s[..., l - 1], s[..., n - l]


def _pct(boot: np.ndarray, level: float):
    return tuple(np.quantile(boot, [0.5 - level / 2, 0.5 + level / 2], axis=1))


def _draw(x: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """(reps, n_boot, n): each row of ``x`` resampled with replacement ``n_boot`` times."""
    reps, n = x.shape
    idx = rng.integers(0, n, size=(reps, n_boot, n))
    return np.take_along_axis(np.broadcast_to(x[:, None, :], (reps, n_boot, n)), idx, axis=2)


def bootstrap_ratio(a, b, level: float, n_boot: int, rng, k: int = 1):
    """The percentile bootstrap of a ratio of medians over per-run values (as
    :func:`experiments.statistics.stats.ratio_of_medians`); ``k`` > 1: the lowest of ``k`` such ratios,
    ``a`` and ``b`` then (k, reps, n)."""
    a, b = (a[None], b[None]) if k == 1 else (a, b)
    boot = np.min([np.median(_draw(a[j], n_boot, rng), -1) / np.median(_draw(b[j], n_boot, rng), -1)
                   for j in range(k)], axis=0)
    return _pct(boot, level)


def _jack_t(point: np.ndarray, loo: list[np.ndarray], level: float):
    """The jackknife-t interval on the log scale: ``point`` (reps,), ``loo`` one (reps, n_j)
    array of leave-one-run-out values per sample; Welch-Satterthwaite degrees of freedom."""
    lp = np.log(point)
    vs, ns = [], []
    for v in loo:
        lv = np.log(v)
        n = lv.shape[-1]
        vs.append((n - 1) / n * ((lv - lv.mean(-1, keepdims=True)) ** 2).sum(-1))
        ns.append(n)
    var = np.sum(vs, axis=0)
    den = np.sum([v ** 2 / (n - 1) for v, n in zip(vs, ns)], axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(den > 0, var ** 2 / np.where(den > 0, den, 1), min(ns) - 1)
    h = _tq(level, np.maximum(df, 1)) * np.sqrt(var)
    return np.exp(lp - h), np.exp(lp + h)


def _loo(x: np.ndarray, stat) -> np.ndarray:
    """(reps, n): ``stat`` over the runs of ``x`` (reps, n, ...) leaving out each run in turn."""
    n = x.shape[1]
    return np.stack([stat(np.delete(x, i, axis=1)) for i in range(n)], axis=-1)


def _pooled_median(x: np.ndarray) -> np.ndarray:
    return np.median(x.reshape(x.shape[0], -1), axis=-1)


def jackknife_ratio(a, b, level: float, k: int = 1):
    """The jackknife-t over runs of a ratio of (pooled) medians: ``a``, ``b`` (reps, n) per-run
    values or (reps, n, steps) units; ``k`` > 1: the lowest of ``k`` ratios ((k, reps, n, ...))."""
    a, b = (a[None], b[None]) if k == 1 else (a, b)
    med = _pooled_median
    ratios = [med(a[j]) / med(b[j]) for j in range(k)]
    point = np.min(ratios, axis=0)
    loo = []
    for j in range(k):
        others = np.min([r for i, r in enumerate(ratios) if i != j], axis=0) if k > 1 else np.inf
        loo.append(np.minimum(_loo(a[j], med) / med(b[j])[:, None], np.asarray(others)[..., None]))
        loo.append(np.minimum(med(a[j])[:, None] / _loo(b[j], med), np.asarray(others)[..., None]))
    return _jack_t(point, loo, level)


def jackknife_one(x, level: float):
    """The jackknife-t over runs of one configuration's pooled median (``x`` (reps, n, steps))."""
    return _jack_t(_pooled_median(x), [_loo(x, _pooled_median)], level)


def runs_bootstrap_ratio(a, b, level: float, n_boot: int, rng):
    """The two-level percentile bootstrap of a ratio of pooled medians (as
    :func:`experiments.statistics.stats.runs_bootstrap`): runs with replacement, then units inside each."""
    def one(x):
        reps, n, L = x.shape
        pick = rng.integers(0, n, size=(reps, n_boot, n))
        unit = rng.integers(0, L, size=(reps, n_boot, n, L))
        flat = x.reshape(reps, n * L)
        idx = (pick[..., None] * L + unit).reshape(reps, n_boot, n * L)
        return np.median(np.take_along_axis(np.broadcast_to(flat[:, None, :], (reps, n_boot, n * L)), idx, 2), -1)
    return _pct(one(a) / one(b), level)


# ---------------------------------------------------------------- the table

# method key -> (what it is, the data it is simulated on, how many samples)
METHODS = {
    "binomial": "median of per-run values, binomial order statistics",
    "t_log": "geometric mean of per-run values, Student t on their logs",
    "bootstrap": "ratio of medians of per-run values, percentile bootstrap over runs",
    "bootstrap_lowest4": "lowest of 4 ratios of medians of per-run values, percentile bootstrap over runs",
    "welch_log": "ratio of geometric means of per-run values, Welch t on their logs",
    "welch_diff": "difference of means of per-run values, Welch t on the values",
    "welch_lowest4": "lowest of 4 ratios of geometric means of per-run values, each by Welch t on their logs at "
                     "1 - (1 - L) / 4 (Bonferroni), as experiments.statistics.stats.extreme",
    "jackknife": "ratio of medians of per-run values, jackknife t over runs (log scale)",
    "jackknife_lowest4": "lowest of 4 ratios of medians of per-run values, jackknife t over runs (log scale)",
    "runs_bootstrap": "ratio of pooled medians of units inside runs, two-level percentile bootstrap",
    "runs_jackknife": "ratio of pooled medians of units inside runs, jackknife t over runs (log scale)",
    "runs_jackknife_one": "pooled median of one configuration's units inside runs, jackknife t over runs (log scale)",
    "t_log_fit": "geometric mean over rounds of a ratio every round of which shares one fitted line's value at its "
                 "configuration, Student t on the logs with the line's delta-method variance over the fit's runs "
                 "added, Welch-Satterthwaite degrees of freedom (the count: rounds)",
}
BOOTSTRAPS = {"bootstrap", "bootstrap_lowest4", "runs_bootstrap"}
# each method's place in its cells' seeds: the methods in their order when the table was first
# written, a new one after them, so that adding a method leaves every shipped cell reproducible
SEED_ORDER = ("binomial", "bootstrap", "bootstrap_lowest4", "jackknife", "jackknife_lowest4", "runs_bootstrap",
              "runs_jackknife", "runs_jackknife_one", "t_log", "welch_diff", "welch_log", "welch_lowest4", "t_log_fit")


def shapes_of(method: str) -> tuple[str, ...]:
    return FIT_SHAPES if method == "t_log_fit" else UNIT_SHAPES if method.startswith("runs_") else VALUE_SHAPES


def cell(method: str, n: int, shape: str, level: float, reps: int, seed: int, n_boot: int = 1000) -> float:
    """The share of ``reps`` simulated data sets (seeded) whose ``method`` interval at ``level``
    from ``n`` runs a side holds the true value."""
    rng = np.random.default_rng([seed, n, SEED_ORDER.index(method), int(level * 1e4),
                                 shapes_of(method).index(shape)])
    draw = _units if method.startswith("runs_") else _values
    if method in ("binomial", "t_log"):
        x = draw(shape, reps, n, rng)
        lo, hi = (binomial if method == "binomial" else t_log)(x, level)
        truth = _truth(shape, "median" if method == "binomial" else "geomean")
    elif method == "runs_jackknife_one":
        lo, hi = jackknife_one(draw(shape, reps, n, rng), level)
        truth = 1.0
    elif method == "t_log_fit":
        logs, v, df, log_truth = _fit_data(shape, reps, n, rng)
        lo, hi = t_log_fit(logs, v, df, level)
        truth = math.exp(log_truth)
    else:
        k = 4 if method.endswith("lowest4") else 1  # four equal ratios: the lowest's hardest case
        size = (k,) if k > 1 else ()
        a = np.stack([draw(shape, reps, n, rng) for _ in range(k)]) if size else draw(shape, reps, n, rng)
        b = np.stack([draw(shape, reps, n, rng) for _ in range(k)]) if size else draw(shape, reps, n, rng)
        if method in ("bootstrap", "bootstrap_lowest4"):
            lo, hi = bootstrap_ratio(a, b, level, n_boot, rng, k)
        elif method == "welch_log":
            lo, hi = welch_log(a, b, level)
        elif method == "welch_diff":
            lo, hi = welch_diff(a, b, level)
        elif method == "welch_lowest4":
            each = [welch_log(a[j], b[j], 1 - (1 - level) / k) for j in range(k)]
            lo, hi = np.min([e[0] for e in each], axis=0), np.min([e[1] for e in each], axis=0)
        elif method in ("jackknife", "jackknife_lowest4", "runs_jackknife"):
            lo, hi = jackknife_ratio(a, b, level, k)
        elif method == "runs_bootstrap":
            lo, hi = runs_bootstrap_ratio(a, b, level, min(n_boot, 400), rng)
        else:
            raise ValueError(f"method = {method!r}; allowed: {sorted(METHODS)}")
        truth = 0.0 if method == "welch_diff" else 1.0   # same shape both sides: mean difference 0
    return float(np.mean((lo <= truth * (1 + 1e-12)) & (truth <= hi * (1 + 1e-12))))


def reps_for(method: str) -> int:
    """Replicates per cell of the shipped table: fewer for the bootstraps (each replicate is
    1,000 resamples, 400 for the two-level one); 200 for the bootstrap of the lowest, which is
    far short (about 45 %) and used nowhere. A method decides only on cells of at least
    :data:`MIN_REPS` replicates (:func:`experiments.statistics.stats.reaches`)."""
    return 200 if method == "bootstrap_lowest4" else 1000 if method in BOOTSTRAPS else 4000


def counts_for(method: str, counts=COUNTS) -> tuple[int, ...]:
    """The run counts simulated: every count, but only 3, 4 and 6 for the costly bootstraps
    (they decide at none of them, below)."""
    return tuple(n for n in counts if n in (3, 4, 6)) if method in ("runs_bootstrap", "bootstrap_lowest4") else counts


def levels_for(method: str, levels=LEVELS) -> tuple[float, ...]:
    return levels[:2] if method in ("runs_bootstrap", "bootstrap_lowest4") else levels


def table(methods=None, counts=COUNTS, levels=LEVELS, seed: int = 64, reps=None) -> list[dict]:
    """Every cell: {method, n, shape, level, coverage, reps}."""
    rows = []
    for m in methods or METHODS:
        for n in counts_for(m, counts):
            for lv in levels_for(m, levels):
                for s in shapes_of(m):
                    r = reps or reps_for(m)
                    rows.append({"method": m, "n": n, "shape": s, "level": lv,
                                 "coverage": round(cell(m, n, s, lv, r, seed), 4), "reps": r})
    return rows


def write(rows: list[dict], path: Path | None = None) -> Path:
    """The table as :mod:`experiments.statistics.coverage_table` (a Python module: measuring stages import
    :mod:`experiments.statistics.stats`, which reads it, so DVC tracks it as their dependency)."""
    path = path or Path(__file__).with_name("coverage_table.py")
    lines = ['"""The coverage table of experiments.statistics.stats\' interval methods, simulated by',
             '``python -m experiments.statistics.coverage --write`` (do not edit by hand; tests/test_coverage.py',
             'recomputes the cells that decide). Each row: method, runs a side, data shape, level,',
             'coverage, replicates."""', "", "ROWS = ["]
    lines += [f"    ({r['method']!r}, {r['n']}, {r['shape']!r}, {r['level']}, {r['coverage']}, {r['reps']}),"
              for r in rows]
    lines += ["]", ""]
    path.write_text("\n".join(lines))
    return path


def markdown(rows: list[dict], level: float = 0.95) -> str:
    """The table at ``level`` as docs/statistics.md shows it: a row per method and count, a column
    per data shape (the two-level shapes by their between-run share), and the worst."""
    out = []
    for m in METHODS:
        mine = [r for r in rows if r["method"] == m and abs(r["level"] - level) < 1e-9]
        if not mine:
            continue
        shapes = list(shapes_of(m))
        out += [f"**{m}**: {METHODS[m]} ({mine[0]['reps']} replicates a cell)", "",
                "| runs a side | " + " | ".join(shapes) + " | worst |",
                "|---|" + "---|" * (len(shapes) + 1)]
        for n in sorted({r["n"] for r in mine}):
            cov = {r["shape"]: r["coverage"] for r in mine if r["n"] == n}
            worst = min(cov.values())
            mark = "" if worst >= floor(level) - 1e-9 else " (short)"
            out.append(f"| {n} | " + " | ".join(f"{cov[s]:.1%}" for s in shapes) + f" | **{worst:.1%}**{mark} |")
        out.append("")
    return "\n".join(out).replace("%", " %")


def markdown_worst(rows: list[dict]) -> str:
    """The worst coverage over every shape, a row per method and level, a column per count, as
    docs/statistics.md shows it (in bold where it reaches the level)."""
    counts = sorted({r["n"] for r in rows})
    out = ["| method | level | " + " | ".join(f"{n} runs" for n in counts) + " |",
           "|---|---|" + "---|" * len(counts)]
    for m in METHODS:
        for lv in sorted({r["level"] for r in rows if r["method"] == m}):
            cells = []
            for n in counts:
                got = [r["coverage"] for r in rows if r["method"] == m and r["n"] == n and r["level"] == lv]
                if not got:
                    cells.append("")
                    continue
                w = min(got)
                cells.append(f"**{w:.1%}**" if w >= floor(lv) - 1e-9 else f"{w:.1%}")
            out.append(f"| {m} | {lv:.2%} | ".replace(".00%", "%") + " | ".join(cells) + " |")
    return "\n".join(out).replace("%", " %")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Simulate the coverage of every interval method (issue 64).")
    p.add_argument("--write", action="store_true", help="write experiments/statistics/coverage_table.py")
    p.add_argument("--methods", nargs="*", default=None, help=f"some of {sorted(METHODS)}")
    p.add_argument("--markdown", type=float, default=None, metavar="LEVEL",
                   help="print the shipped table at LEVEL as docs/statistics.md shows it, and stop")
    a = p.parse_args(argv)
    if a.markdown is not None:
        from .coverage_table import ROWS
        keys = ("method", "n", "shape", "level", "coverage", "reps")
        rows = [dict(zip(keys, r)) for r in ROWS]
        print(markdown_worst(rows) + "\n\n" + markdown(rows, a.markdown))
        return 0
    rows = table(a.methods)
    worst: dict = {}
    for r in rows:
        k = (r["method"], r["n"], r["level"])
        worst[k] = min(worst.get(k, 1.0), r["coverage"])
    for (m, n, lv), c in sorted(worst.items()):
        print(f"{m:20s} n={n:2d} level={lv:.4f} worst coverage {c:.3f} {'reaches' if c >= floor(lv) else 'short'}")
    if a.write:
        print(write(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
