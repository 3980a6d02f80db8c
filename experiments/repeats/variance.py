"""The variance at each level of a measuring stage, and what each level costs: how many runs, and
how many steps per run, its findings should get (Kalibera and Jones, *Rigorous Benchmarking in
Reasonable Time*, ISMM 2013).

A compared quantity is measured at two levels: runs (a new process or pass, with its own set-up
and cold-cache eviction) and, where a run is made of units (steps, windows, checkpoints, sampled
seconds), the units inside a run. Runs are the independent unit of every interval (a two-level
bootstrap where a quantity is made of units: :func:`experiments.statistics.stats.runs_bootstrap`); this
table says how much of the spread is between runs and how much within, per configuration:

- ``runs``, ``units`` (per run, median), ``mean``;
- ``within_var``: the mean over runs of the units' variance (S_2^2);
- ``between_var``: the variance of the run means less what their units' spread alone gives
  (T_1^2 = S_1^2 - S_2^2 / units; 0 when negative: no variation between runs beyond it);
- ``run_s``: a run's wall seconds (median); ``unit_s``: a unit's seconds, from the unit's own
  timing column when the stage gives one, else the run's seconds over its units; ``setup_s``: a
  run's seconds outside its units;
- ``units_kj``: the units per run that minimise the interval's width for a given time
  (K&J Sec 4: sqrt(setup_s x within_var / (unit_s x between_var))), None where the runs do not
  vary between each other beyond their units (then fewer, longer runs cost least) or a run has
  no units.

``results/<stage>/variance.csv`` holds it (:func:`table`); docs/statistics.md reads it.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

COLUMNS = ["quantity", "configuration", "runs", "units", "mean", "between_var", "within_var",
           "between_share", "run_s", "unit_s", "setup_s", "units_kj"]


def _config_name(keys: Sequence[str], values) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(keys, values if isinstance(values, tuple) else (values,)))


def table(rows: pd.DataFrame, keys: Sequence[str], quantities: Sequence[str],
          units: pd.DataFrame | None = None, unit_quantities: Sequence[str] = (),
          unit_seconds: str | None = None) -> pd.DataFrame:
    """The variance table of a stage (module docstring): ``rows`` (one per run: ``run``,
    ``run_s``, warm-ups marked) for ``quantities`` measured once a run; ``units`` (a side table
    with ``run``) for ``unit_quantities`` measured per unit, ``unit_seconds`` its timing column
    (seconds, or nanoseconds when it ends in ``_ns``)."""
    rows = rows[~rows["warmup"].astype(bool)] if "warmup" in rows else rows
    out = []
    keys = [k for k in keys if k in rows]
    for key, g in rows.groupby(keys, dropna=False, sort=False):
        name = _config_name(keys, key)
        run_s = float(g["run_s"].median()) if "run_s" in g else math.nan
        for q in quantities:
            if q not in g:
                continue
            x = g[q].to_numpy(dtype=float)
            x = x[np.isfinite(x)]
            out.append({"quantity": q, "configuration": name, "runs": len(x), "units": 1,
                        "mean": float(np.mean(x)) if len(x) else math.nan,
                        "between_var": float(np.var(x, ddof=1)) if len(x) > 1 else math.nan,
                        "within_var": math.nan, "run_s": run_s, "unit_s": math.nan, "setup_s": run_s})
        if units is None or not len(units) or "run" not in units:
            continue
        u = units[units["run"].isin(g["run"])]
        # a run with a row per part (the traced comparison's sides) has its units per part too:
        # those of this configuration, where the side table names it (NaN keys alike)
        for k, v in zip(keys, key if isinstance(key, tuple) else (key,)):
            if k in u:
                u = u[(u[k] == v) | (u[k].isna() & pd.isna(v))]
        for q in unit_quantities:
            if q not in u:
                continue
            per = [(r, x[q].to_numpy(dtype=float)) for r, x in u.groupby("run")]
            per = [(r, a[np.isfinite(a)]) for r, a in per if np.isfinite(a).any()]
            if not per:
                continue
            means = np.array([a.mean() for _, a in per])
            n_units = float(np.median([len(a) for _, a in per]))
            within = float(np.mean([a.var(ddof=1) for _, a in per if len(a) > 1])) if any(len(a) > 1 for _, a in per) \
                else math.nan
            s1 = float(np.var(means, ddof=1)) if len(means) > 1 else math.nan
            between = max(0.0, s1 - within / n_units) if np.isfinite(s1) and np.isfinite(within) else s1
            unit_s = math.nan
            if unit_seconds and unit_seconds in u:
                t = u.loc[u["run"].isin([r for r, _ in per]), unit_seconds].to_numpy(dtype=float)
                unit_s = float(np.nanmedian(t)) / (1e9 if unit_seconds.endswith("_ns") else 1.0)
            elif np.isfinite(run_s) and n_units:
                unit_s = run_s / n_units
            setup = max(0.0, run_s - n_units * unit_s) if np.isfinite(run_s) and np.isfinite(unit_s) else math.nan
            out.append({"quantity": q, "configuration": name, "runs": len(per), "units": n_units,
                        "mean": float(means.mean()), "between_var": between, "within_var": within,
                        "run_s": run_s, "unit_s": unit_s, "setup_s": setup})
    t = pd.DataFrame(out, columns=COLUMNS)
    if len(t):
        tot = t["between_var"] + t["within_var"].fillna(0) / t["units"].clip(lower=1)
        t["between_share"] = np.where(tot > 0, t["between_var"] / tot, np.nan)
        t["units_kj"] = [units_kj(r.setup_s, r.unit_s, r.within_var, r.between_var) for r in t.itertuples()]
    return t


def units_kj(setup_s: float, unit_s: float, within_var: float, between_var: float) -> float | None:
    """Kalibera and Jones's optimal units per run: the count that minimises the variance of the
    grand mean for a fixed time, sqrt(setup_s x within_var / (unit_s x between_var)); None where
    it is undefined (no units, no variation between runs, unknown costs)."""
    vals = (setup_s, unit_s, within_var, between_var)
    if any(v is None or not np.isfinite(v) for v in vals) or between_var <= 0 or unit_s <= 0:
        return None
    return float(max(1.0, math.sqrt(setup_s * within_var / (unit_s * between_var))))


def summary(root=None) -> pd.DataFrame:
    """One row per measuring stage and quantity, from every ``results/<stage>/variance.csv``
    under ``root`` (the results folder): the configurations, runs per configuration (median),
    units per run (median), the median share of the variance that is between runs, and the
    median of Kalibera and Jones's units per run (where defined) against the units run."""
    from ..settings import paths

    root = paths.results_dir() if root is None else root
    rows = []
    for f in sorted(root.glob("*/variance.csv")):
        try:
            v = pd.read_csv(f)
        except pd.errors.EmptyDataError:
            continue
        for q, g in v.groupby("quantity", sort=False):
            kj = pd.to_numeric(g["units_kj"], errors="coerce").dropna()
            rows.append({"stage": f.parent.name, "quantity": q, "configurations": len(g),
                         "runs": float(g["runs"].median()), "units": float(g["units"].median()),
                         "between_share": float(pd.to_numeric(g["between_share"], errors="coerce").median()),
                         "run_s": float(g["run_s"].median()),
                         "units_kj": float(kj.median()) if len(kj) else float("nan"),
                         "kj_defined": f"{len(kj)} of {len(g)}"})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    """Print :func:`summary` as a Markdown table (``python -m experiments.repeats.variance``)."""
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="python -m experiments.repeats.variance",
                                 description="every measuring stage's variance.csv, one row per quantity")
    ap.add_argument("--results", type=Path, default=None, help="a results folder (default: this checkout's)")
    a = ap.parse_args(argv)
    if a.results is not None and not a.results.is_dir():
        ap.error(f"--results = {str(a.results)!r}: not a folder; allowed: a results folder a pipeline run wrote")
    s = summary(a.results)
    if not len(s):
        print("no results/*/variance.csv: run the measuring stages first (make repro)")
        return 1
    print(s.to_markdown(index=False, floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
