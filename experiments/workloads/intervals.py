"""Values and 95 % intervals of the workload findings from their samples (steps or the
loader's reads, grouped by the run that measured them), as the claims of :mod:`.report` use them.

A claim over several configurations (G, B) is a statistic of per-configuration statistics (the
median over configurations of a ratio of medians, say). Its interval takes the run as its unit
(:func:`experiments.statistics.stats.runs_bootstrap`): for every configuration and row independently, it
draws runs with replacement, then the steps (or reads) inside each drawn run, and recomputes the
whole statistic; so the interval holds what changes when a run starts again, not only the noise
inside one, and the value is the same function on the samples themselves. A configuration
measured by fewer than :data:`experiments.statistics.stats.MIN_RUNS` runs gives no interval (the row says
how many runs it needs).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..statistics import stats
from ..repeats.levels import level_of as _level_of
from . import fits


def level_of(rows: pd.DataFrame) -> float | None:
    """The level of these rows' findings (a ``make decide`` purchase's rows carry a higher one);
    None for rows without a ``level`` (the default level then)."""
    return _level_of(rows, None) if len(rows) else None

def steady_rows(tab: pd.DataFrame) -> pd.DataFrame:
    """The samples a summary is computed from: for steps, the steady ones (the ``steady``
    column where the stage wrote it, else :func:`.fits.steady`); for the loader's reads
    (``vfs_ns``), the training reads, UNET3D's first epoch left out, as
    :func:`.fits.step_summary` keeps them."""
    if tab is None or not len(tab):
        return pd.DataFrame()
    if "vfs_ns" in tab.columns:
        d = tab[tab["split"].fillna("train") == "train"] if "split" in tab.columns else tab
        if "epoch" in d.columns:
            keys = [k for k in ("row", "workload", "variant", "ranks", "batch_size", "repeat") if k in d.columns]
            first = d.groupby(keys)["epoch"].transform("min")
            d = d[~((d["workload"] == "unet3d") & (d["epoch"] == first))]
        return d
    if "steady" in tab.columns:
        return tab[tab["steady"].fillna(False).astype(bool)]
    return fits.steady(tab)


class Samples(dict):
    """:func:`config_samples`' {(G, B): [runs of row r for r in rows]}, each row's runs a list of
    arrays (one per run), with ``level``: the level their rows were judged at (a ``make decide``
    purchase of the configurations adds a look; one of other configurations does not)."""

    level: float | None = None


def config_samples(tab: pd.DataFrame, w: str, rows: tuple[str, ...], value) -> Samples:
    """{(G, B): [row r's runs for r in ``rows``]} for every configuration of workload ``w`` that
    every row ran, a row's runs being ``value(d)`` of each run's samples (``tab``: steps or loader
    reads with column ``row``, see :func:`steady_rows`, and ``run`` (else ``repeat``) naming the
    run; ``value``: DataFrame -> array, in the claim's unit)."""
    d = steady_rows(tab)
    if not len(d) or "row" not in d.columns:
        return Samples()
    d = d[d["workload"] == w]
    out = Samples()
    out.level = level_of(d[d["row"].isin(rows)])
    for (g, b), x in d.groupby(["ranks", "batch_size"]):
        got = [runs_of(x[x["row"] == r], value) for r in rows]
        if all(len(v) for v in got):
            out[(int(g), int(b))] = got
    return out


def runs_of(d: pd.DataFrame, value) -> list[np.ndarray]:
    """``value`` of each run's rows of ``d`` (one array per run: ``run``, else ``repeat``, else
    one run), runs without a sample left out."""
    key = "run" if "run" in d.columns else "repeat" if "repeat" in d.columns else None
    parts = [d] if key is None else [g for _, g in d.groupby(key, sort=True)]
    out = [np.asarray(value(g), dtype=float) for g in parts]
    return [a for a in out if len(a)]


def configs_stat(groups: dict, per_config, reduce=np.median, what: str = "") -> tuple[float, stats.Interval | None]:
    """``reduce([per_config(*samples of (G, B)) for each (G, B)])`` (``groups``:
    :func:`config_samples`) and its interval over runs, every configuration's and row's runs
    resampled independently, then the samples inside each drawn run: the point and the interval
    from the same samples through the same function (:func:`experiments.statistics.stats.runs_bootstrap`).
    (NaN, None) when there is no configuration. ``n``: the runs."""
    if not groups:
        return float("nan"), None
    k = len(next(iter(groups.values())))
    flat = [runs for v in groups.values() for runs in v]

    def stat(*arrs):
        return float(reduce([per_config(*arrs[i:i + k]) for i in range(0, len(arrs), k)]))

    return stats.runs_bootstrap(stat, *flat, method=f"{len(groups)} configurations" + (f" ({what})" if what else ""),
                                level=getattr(groups, "level", None))


def round_pairs(tab: pd.DataFrame, w: str, rows: tuple[str, str], value) -> Samples:
    """{(G, B): [(row a's run, row b's run) for every round both ran]} of workload ``w`` (``tab``
    as :func:`config_samples` reads it, with ``repeat``: the round; ``value``: DataFrame -> array,
    in the claim's unit): the runs two rows made side by side in one stage's rounds, paired by
    round. Empty without a ``repeat`` column."""
    d = steady_rows(tab)
    if not len(d) or "row" not in d.columns or "repeat" not in d.columns:
        return Samples()
    d = d[(d["workload"] == w) & d["row"].isin(rows)]
    out = Samples()
    out.level = level_of(d)
    for (g, b), x in d.groupby(["ranks", "batch_size"]):
        per = {r: {k: np.asarray(value(y), dtype=float) for k, y in x[x["row"] == r].groupby("repeat")} for r in rows}
        got = [(per[rows[0]][k], per[rows[1]][k]) for k in sorted(set(per[rows[0]]) & set(per[rows[1]]))
               if len(per[rows[0]][k]) and len(per[rows[1]][k])]
        if got:
            out[(int(g), int(b))] = got
    return out


def paired_stat(pairs: Samples, per_pair, what: str = "", fit=None) -> tuple[float, stats.Interval | None]:
    """One configuration's ``per_pair(a, b)`` round by round (``pairs``: :func:`round_pairs`) and
    its interval over the rounds, the round the unit (:func:`experiments.statistics.stats.runs_ci`:
    Student t on the logs from 3 rounds, the median's order statistics from 6): for two rows whose
    runs in a round share that round's hour by construction, as a sleeping run and the real run
    whose speed it was given (:mod:`.hour_level`), where resampling each row's runs apart counts
    the shared move twice. ``fit``: (G, B) -> the compute fit's variance terms at that
    configuration (:func:`fit_spread`) or None, for a ratio every round of which sleeps for one
    fit: the interval then holds the fit's own runs' spread too
    (:func:`experiments.statistics.stats.gmean_t_with_fit`), not only the rounds' (without it, it is
    conditional on the one fit the clone made: two fresh clones' BERT rows, 1.40 [1.31, 1.49] and
    1.14 [1.10, 1.19], did not overlap). (NaN, None) unless there is exactly one configuration:
    over several, the statistic across configurations keeps :func:`configs_stat`."""
    if len(pairs) != 1:
        return float("nan"), None
    (point, got), = pairs.items()
    r = [float(per_pair(a, b)) for a, b in got]
    terms = fit(point) if fit is not None else None
    v, ci = (stats.gmean_t_with_fit(r, *terms, level=pairs.level) if terms is not None
             else stats.runs_ci(r, level=pairs.level, of="rounds"))
    return v, dataclasses.replace(ci, method=f"{what}, {ci.method}" if what else ci.method)


def fit_spread(tab: pd.DataFrame, w: str, point: tuple[int, int], carried: bool,
               fit_row: str = "real") -> tuple[np.ndarray, np.ndarray] | None:
    """What the compute fit's own runs leave uncertain in a ratio of runs that slept for it, at
    configuration ``point`` (G, B) of workload ``w``: per configuration of the fit (the steady
    steps of row ``fit_row`` of ``tab``, the workload stage's runs of its own rounds,
    ``made_by: repro``, the runs the fit was made from), each run's mean compute time (s, the
    statistic the fit models), and the delta-method variance terms of the log ratio and their
    degrees of freedom (:func:`experiments.statistics.coverage.fit_point_terms`: the OLS line over the
    configurations' means at ``point`` and, ``carried`` (the hour level), over the point's own
    measured mean). None where the fit's runs cannot give them: fewer than 2 runs of a
    configuration, too few configurations for the line, ``point`` not among them, a line not
    positive there."""
    from ..statistics.coverage import fit_point_terms

    if tab is None or not len(tab) or "row" not in tab.columns:
        return None
    d = steady_rows(tab[(tab["workload"] == w) & (tab["row"] == fit_row)])
    if "made_by" in d.columns:
        d = d[d["made_by"].fillna("repro") == "repro"]
    per = {(int(g), int(b)): np.array([a.mean() for a in runs_of(x, secs("compute_ns"))])
           for (g, b), x in d.groupby(["ranks", "batch_size"])} if len(d) else {}
    keys = sorted(per)
    regs = [j for j in range(2) if len({k[j] for k in keys}) > 1]
    if tuple(point) not in per or any(len(per[k]) < 2 for k in keys) or len(keys) < len(regs) + 2:
        return None
    X = np.column_stack([np.ones(len(keys))] + [[float(k[j]) for k in keys] for j in regs])
    m = np.array([per[k].mean() for k in keys])
    s2 = np.array([per[k].var(ddof=1) for k in keys])
    log_c, v, df = fit_point_terms(m, s2, np.array([len(per[k]) for k in keys]), X, keys.index(tuple(point)), carried)
    return (v, df) if np.isfinite(log_c) else None


def from_steps(fallback: float, got: tuple[float, stats.Interval | None]) -> tuple[float, stats.Interval | None]:
    """A finding's (value, interval): :func:`configs_stat`'s, both from the steps; without steps
    (no interval) the summary's ``fallback`` value, with no interval (inconclusive)."""
    v, ci = got
    return (fallback, None) if ci is None else (v, ci)


def joined(*groups: dict) -> dict:
    """The configurations in every one of ``groups`` (:func:`config_samples`), each with its
    samples of every group in turn: one statistic of several quantities of the same runs."""
    keys = [k for k in groups[0] if all(k in g for g in groups)]
    out = Samples({k: [a for g in groups for a in g[k]] for k in keys})
    out.level = max((g.level for g in groups if getattr(g, "level", None) is not None), default=None)
    return out


def inside_iqr(x, ref) -> bool:
    """Whether the median of ``x`` lies inside the inter-quartile range of ``ref``."""
    return bool(np.quantile(ref, .25) <= np.median(x) <= np.quantile(ref, .75))


def med_ratio(a, b) -> float:
    mb = np.median(b)
    return float(np.median(a) / mb) if mb else np.nan


def iqr(x) -> float:
    q1, q3 = np.quantile(x, [0.25, 0.75])
    return float(q3 - q1)


def secs(col: str):
    return lambda d: d[col].to_numpy(dtype=float) / 1e9


def rate(col: str):
    """Per-step throughput, samples/s, as :func:`.fits.step_summary` computes it."""
    return lambda d: (d["samples"] / (d[col].clip(lower=1) / 1e9)).to_numpy(dtype=float)


def vfs_rate(d):
    per = d["samples"] if "samples" in d.columns and d["samples"].notna().all() else 1
    return (per / (d["vfs_ns"].clip(lower=1) / 1e9)).to_numpy(dtype=float)


def r2_interval(steps: pd.DataFrame | None, w: str, moment: str = "mean") -> tuple[float, stats.Interval | None]:
    """The R² of workload ``w``'s ``moment`` compute-time model (OLS of the per-configuration
    mean, or standard deviation, of the compute time, s, on G and B, as :func:`.fits.ols` of
    :func:`.fits.normal_fits`) and its interval over runs, both from one selection of steps
    (:func:`steady_rows`, the real variant) through one function: the point is that function on
    the steps, the interval resamples each configuration's runs, then the steps inside each
    drawn run (:func:`experiments.statistics.stats.runs_bootstrap`). ``moment``: ``mean``, ``std``, or
    ``std - mean`` (the std model's R² minus the mean model's, both on the same resampled
    steps). (NaN, None) without steps or with fewer than 3 configurations."""
    if moment not in ("mean", "std", "std - mean"):
        raise ValueError(f"r2_interval: moment = {moment!r}; allowed: mean, std, std - mean")
    if steps is None or not len(steps):
        return float("nan"), None
    st = steady_rows(steps[steps["workload"] == w])
    if "variant" in st.columns:
        st = st[st["variant"] == "real"]
    g = [(int(k[0]), int(k[1]), runs_of(x, secs("compute_ns"))) for k, x in st.groupby(["ranks", "batch_size"])]
    if len(g) < 3:
        return float("nan"), None
    X = np.array([[G, B] for G, B, _ in g], dtype=float)
    X = np.column_stack([np.ones(len(X))] + [X[:, j] for j in range(2) if np.ptp(X[:, j]) > 0])

    def fit(y):
        beta = np.linalg.lstsq(X, y, rcond=None)[0]
        tot = ((y - y.mean()) ** 2).sum()
        return float(1 - ((y - X @ beta) ** 2).sum() / tot) if tot > 0 else np.nan

    def r2(*arrs):
        mean = fit(np.array([a.mean() for a in arrs])) if moment != "std" else 0.0
        std = fit(np.array([a.std() for a in arrs])) if moment != "mean" else 0.0   # norm.fit: ddof 0
        return {"mean": mean, "std": std}.get(moment, std - mean)

    what = "the std model's R² minus the mean model's" if moment == "std - mean" else f"R² of the {moment} model"
    return stats.runs_bootstrap(r2, *(a for *_, a in g), level=level_of(st), method=f"{what}, {len(g)} configurations")
