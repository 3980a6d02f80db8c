"""The ``traced_comparison_report`` stage (notebook 53): figures and claims from what the
``traced_comparison`` stage measured (:mod:`.stage`), re-measuring nothing.

- :func:`load`: the measuring stage's tables (one row per pass and side), and the steps of the
  runs the compute fit was made from (:func:`fit_steps`);
- :func:`timelines`: the Fig 5.7/5.12/5.18 timelines from each side's saved trace (the
  workload's first pass), I/O series and phases;
- :func:`throughput_figure`: the four sides' data and compute throughputs at each workload's
  one measured point, the median over the passes with their range;
- :func:`claims`: the side-by-side claims (:func:`.findings.claims`).
"""

from __future__ import annotations

import json

import pandas as pd

from ..settings import paths
from . import compare, findings
from .settings import SIDES

STAGE = "traced_comparison"


def _dir(stage_dir=None):
    return paths.results_dir(STAGE) if stage_dir is None else stage_dir


def load(stage_dir=None) -> dict:
    """What the report reads of the measuring stage: ``rows`` (``throughput.csv``, one row per
    pass and side), ``steps`` (``side_steps.csv``), ``vectors`` (each side's median vector) and
    ``search`` (``search.csv``, or None)."""
    d = _dir(stage_dir)
    # text columns read as text: an all-empty column is not a float column to fill with ""
    rows = pd.read_csv(d / "throughput.csv", dtype={"why": str, "backend": str, "status": str})
    rows[["why", "backend"]] = rows[["why", "backend"]].fillna("")
    # search.csv: the max-accelerators search; a run without one (the shipped reference run) has none
    search = pd.read_csv(d / "search.csv") if (d / "search.csv").exists() else None
    return {"rows": rows, "steps": pd.read_csv(d / "side_steps.csv"),
            "vectors": _vectors(json.loads((d / "vectors.json").read_text())), "search": search,
            "fit_steps": fit_steps(d, sorted(set(rows["workload"])))}


def fit_steps(stage_dir, workloads) -> pd.DataFrame | None:
    """The steps of the runs this box's compute fit was made from (each workload stage's
    ``raw.parquet``, as row ``real``), where the stage's sides slept for that fit (its
    ``compute_model`` ``fit``, from its ``env.json``): their spread is part of what a sleeping
    side's compute throughput says (:func:`experiments.workloads.intervals.fit_spread`). None
    where the sides slept for another model (a file, the thesis's V100) or no workload stage's
    steps are at hand."""
    try:
        params = json.loads((stage_dir / "env.json").read_text())["params"][STAGE]
    except (OSError, KeyError, ValueError, TypeError):
        return None
    if params.get("compute_model", "fit") not in (None, "fit"):
        return None
    parts = [pd.read_parquet(f).assign(row="real", workload=w) for w in workloads
             for f in [paths.results_dir(w) / "raw.parquet"] if f.exists()]
    return pd.concat(parts, ignore_index=True) if parts else None


def _vectors(obj: dict) -> dict:
    """``vectors.json`` as :func:`.stage.tables` held it: a component JSON wrote as null (NaN)
    is NaN again; a side not measured stays None."""
    return {w: {s: None if v is None else {k: float("nan") if x is None else x for k, x in v.items()}
                for s, v in sides.items()} for w, sides in obj.items()}


def timelines(stage_dir=None):
    """(name, figure) for every traced side (``timelines.json``), phases marked: its ``trace`` is
    the timeline file the stage wrote beside the full trace (:func:`.stage.timeline_trace`; a
    folder written before names the full trace there)."""
    from ..trace import schema, timeline

    d = _dir(stage_dir)
    for t in json.loads((d / "timelines.json").read_text()):
        tr = schema.load(d / t["trace"])
        ph = pd.read_csv(d / t["phases"]) if t.get("phases") else None
        yield t["name"], timeline.plot(tr, ph, bin_s=t["bin_s"], io=pd.read_csv(d / t["io"]), title=t["title"])


def per_side(rows: pd.DataFrame) -> pd.DataFrame:
    """Each side's data and compute throughputs (samples/s), the median over its passes with
    their range (:func:`.compare.per_side`)."""
    return compare.per_side(rows, ("data_sps", "compute_sps"))


def throughput_figure(rows: pd.DataFrame):
    """The thesis's data and compute throughputs (samples/s, Sec 4.4) of the four sides at the
    one (batch, ranks) point each workload ran: one column of panels per workload, the sides
    side by side on the x axis in one colour each (:func:`experiments.figures.style.category`), each
    side's median over its passes with the range of the passes (:func:`per_side`; one pass: no
    bar). A side not measured is named on its axis with no point."""
    import matplotlib.pyplot as plt
    import numpy as np

    from ..figures import style

    tp = per_side(rows)
    ws = list(dict.fromkeys(tp["workload"]))
    fig, axes = plt.subplots(2, len(ws), figsize=(3.6 * len(ws) + 0.8, 6.2), squeeze=False)
    for j, w in enumerate(ws):
        d = tp[tp["workload"] == w]
        order = [s for s in SIDES if s in set(d["side"])] + [s for s in d["side"] if s not in SIDES]
        for i, (col, label) in enumerate((("data_sps", "data throughput\n(samples/s)"),
                                          ("compute_sps", "compute throughput\n(samples/s)"))):
            ax = axes[i][j]
            for x, side in enumerate(order):
                g = d[(d["side"] == side) & d[col].notna()]
                if len(g):
                    st = style.category("side", side)
                    ax.errorbar([x], g[col], yerr=style.ci_yerr(g, col), capsize=4, ls="none",
                                marker=st["marker"], color=st["color"], ms=7)
            ax.set_xticks(range(len(order)), order)
            ax.set_xlim(-0.6, len(order) - 0.4)
            vals = d[col][d[col] > 0]
            if len(vals) and vals.max() / vals.min() > 20:
                style.log_axis(ax, "y")   # the sides can differ by orders of magnitude (DLIO's DLRM)
            elif len(vals):
                ax.set_ylim(0, float(np.nanmax(d[f"{col}_ci_high"].fillna(d[col]).to_numpy())) * 1.15)
            ax.set(ylabel=label if j == 0 else "", xlabel="side" if i == 1 else "")
            if i == 0:
                unit = "global" if w == "dlrm" else "per rank"
                # a line each for the workload, its point and its passes: four panels' titles side by side
                ax.set_title(f"{w.upper()}\nbatch {int(d['batch_size'].iloc[0])} ({unit}), "
                             f"{int(d['ranks'].iloc[0])} rank(s)\n{int(d['passes'].max())} pass(es)",
                             fontsize="medium")
    fig.suptitle("Each side at one point per workload: the median over the passes, bars the lowest and "
                 "highest pass (their range, not an interval)", fontsize="medium")
    fig.tight_layout()
    return fig


def claims(tabs: dict, note: str = "") -> list[dict]:
    """The side-by-side claims of :func:`load`'s tables (:func:`.findings.claims`)."""
    return findings.claims(tabs["rows"], tabs["steps"], tabs["vectors"], note, tabs.get("search"),
                           tabs.get("fit_steps"))
