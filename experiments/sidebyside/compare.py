"""Tables 5.1-5.3 with four sides and the similarities (pure: vectors in, tables out).

A *vector* is Table 4.2's characteristic vector of one traced run
(:func:`experiments.trace.vector.characteristic_vector`, keys :data:`~experiments.trace.vector.KEYS`);
a side that could not run has ``None`` and a reason. Every number comes from
:mod:`experiments.trace.similarity` (Eq 4.1, 4.2 and the per-component difference), here
laid out with one column per side:

- :func:`component_table`: per component (Table 4.2's order) its weight, each side's value and
  each side's difference from the real run, ``(side - real) / real * 100`` (%), and whether
  the component entered that side's similarity;
- :func:`similarity_table`: each side's weighted cosine similarity to the real run (the real
  run against itself is 1 by construction: the table's self-consistency check);
- :func:`checkpoint_distance`: how far a side's checkpoint components (VFS write count, write
  size quartiles) are from the real run's, the mean over them of ``1 - min/max`` (0 = equal,
  1 = one side writes nothing), the Eq 4.2 normalization;
- :func:`step_rates`: a side's per-step throughputs, the units inside a pass of the
  throughput findings' two-level intervals;
The claims on these tables are :mod:`.findings`' (the report's, not the measuring stage's:
nothing here reads what a paper says, so editing a declaration re-measures nothing).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..trace.similarity import component_table as pair_table
from ..trace.similarity import weighted_cosine
from ..trace.vector import KEYS
from .settings import SIDES

CHECKPOINT_KEYS = ("vfs_writes", "vfs_write_size_q1", "vfs_write_size_median", "vfs_write_size_q3")
# RetinaNet (MLPerf Storage v3.0, our extension) is the fourth workload: "Table 5.x" in the thesis's
# numbering, a table the thesis does not have
THESIS_TABLE = {"unet3d": "Table 5.1", "bert": "Table 5.2", "dlrm": "Table 5.3", "retinanet": "Table 5.x (ours)"}
THESIS_TIMELINE = {"unet3d": "Fig 5.7", "bert": "Fig 5.12", "dlrm": "Fig 5.18", "retinanet": "Fig 5.x (ours)"}
STAGE = "traced_comparison_report"


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def similarities(vectors: dict[str, dict | None]) -> dict[str, float]:
    """Each side's weighted cosine similarity (Eq 4.1) to ``vectors["real"]``; NaN for a side
    without a vector (and for every side when the real run has none)."""
    real = vectors.get("real")
    return {s: (float("nan") if real is None or v is None else weighted_cosine(real, v))
            for s, v in vectors.items()}


def component_table(workload: str, vectors: dict[str, dict | None]) -> pd.DataFrame:
    """Tables 5.1-5.3 with one value column per side in ``vectors`` (``real`` required), and per
    other side ``diff_<side>_pct`` and ``used_<side>``; NaN where a side was not measured."""
    real = vectors["real"]
    if real is None:
        raise ValueError(f"{workload}: the real run has no vector; nothing to compare with")
    base = pair_table(real, real, ("real", "real_again"))
    out = base[["key", "component", "weight", "real"]].copy()
    notes = {k: [] for k in out["key"]}
    for side, v in vectors.items():
        if side == "real":
            continue
        if v is None:
            out[side] = float("nan")
            out[f"diff_{side}_pct"] = float("nan")
            out[f"used_{side}"] = False
            continue
        t = pair_table(real, v, ("real", side)).set_index("key")
        out[side] = out["key"].map(t[side])
        out[f"diff_{side}_pct"] = out["key"].map(t["difference_pct"])
        out[f"used_{side}"] = out["key"].map(t["used"]).astype(bool)
        for k, n in t["note"].items():
            if n:
                notes[k].append(f"{side}: {n}")
    out["note"] = out["key"].map(lambda k: "; ".join(notes[k]))
    return out.assign(workload=workload)[["workload", *out.columns]]


def similarity_table(workload: str, vectors: dict[str, dict | None], why: dict[str, str] | None = None,
                     backends: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per side: its similarity to the real run, ``status`` (measured / not measured),
    the reason and the trace back end; the real run's row is its similarity to itself (1)."""
    why, backends = why or {}, backends or {}
    sims = similarities(vectors)
    rows = []
    for side in vectors:
        v = vectors[side]
        rows.append({"workload": workload, "side": side, "similarity": sims[side],
                     "status": "measured" if v is not None else "not measured",
                     "why": "" if v is not None else why.get(side, "(no reason recorded)"),
                     "backend": backends.get(side, ""),
                     "components_used": (sum(1 for k in KEYS if not _nan(v.get(k)) and not _nan(vectors["real"].get(k))
                                             and max(v[k], vectors["real"][k]) > 0)
                                         if v is not None and vectors["real"] is not None else 0)})
    return pd.DataFrame(rows)


def checkpoint_distance(real: dict | None, other: dict | None, keys=CHECKPOINT_KEYS) -> float:
    """Mean over ``keys`` of ``1 - min/max`` of the two values (0 when both are 0); NaN when a
    side is missing or no key was measured on both."""
    if real is None or other is None:
        return float("nan")
    d = []
    for k in keys:
        a, b = real.get(k), other.get(k)
        if _nan(a) or _nan(b):
            continue
        m = max(a, b)
        d.append(0.0 if m == 0 else 1.0 - min(a, b) / m)
    return float(sum(d) / len(d)) if d else float("nan")


def _last(g: pd.DataFrame, col: str) -> str:
    """The last row's ``col`` as text ("" where the table has no such column or it is empty)."""
    return str(g[col].fillna("").iloc[-1]) if col in g else ""


def per_side(rows: pd.DataFrame, cols=("similarity",)) -> pd.DataFrame:
    """One row per workload and side of ``rows`` (a row per pass and side): ``batch_size``,
    ``ranks``, ``passes`` (how many measured it), ``status`` (measured when any pass was),
    ``why`` (the last pass's reason, for a side no pass measured), ``backend``, and for each of
    ``cols`` the median over its measured passes with the lowest and highest pass in
    ``<col>_ci_low``/``_ci_high`` (the columns the figure style draws: the passes' range, not an
    interval; NaN for one pass)."""
    out = []
    for (w, side), g in rows.groupby(["workload", "side"], sort=False):
        ok = g[g["status"] == "measured"]
        r = {"workload": w, "side": side, "batch_size": g["batch_size"].iloc[0], "ranks": g["ranks"].iloc[0],
             "passes": len(ok), "status": "measured" if len(ok) else "not measured",
             "why": "" if len(ok) else _last(g, "why") or "(no reason recorded)",
             "backend": ", ".join(sorted(set(g["backend"].fillna("")) - {""})) if "backend" in g else ""}
        for col in cols:
            x = ok[col].dropna()
            r[col] = float(x.median()) if len(x) else float("nan")
            r[f"{col}_ci_low"] = float(x.min()) if len(x) > 1 else float("nan")
            r[f"{col}_ci_high"] = float(x.max()) if len(x) > 1 else float("nan")
        out.append(r)
    return pd.DataFrame(out)


def _fmt(x) -> str:
    if _nan(x):
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def markdown(table: pd.DataFrame, sims: pd.DataFrame, title: str) -> str:
    """One workload's table as Markdown: components, weight, every side's value and difference
    from the real run, then each side's similarity (or why it was not measured)."""
    sides = [s for s in SIDES if s in table.columns]
    head = ["component", "weight", *sides, *[f"{s} vs real" for s in sides if s != "real"]]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        diffs = []
        for s in sides[1:]:
            d = r[f"diff_{s}_pct"]
            diffs.append("n/a" if _nan(d) else "inf" if math.isinf(d) else f"{d:+.2f} %")
        lines.append("| " + " | ".join([r["component"], str(r["weight"]), *(_fmt(r[s]) for s in sides), *diffs]) + " |")
    lines += ["", "| side | weighted similarity to the real run | trace back end | note |", "|---|---|---|---|"]
    for _, r in sims.iterrows():
        val = "not measured" if r["status"] != "measured" else f"{float(r['similarity']):.4f}" \
            if not _nan(r["similarity"]) else "n/a"
        lines.append(f"| {r['side']} | {val} | {r['backend']} | {r['why']} |")
    return "\n".join(lines) + "\n"


def step_rates(steps: pd.DataFrame | None, workload: str, side: str, col: str):
    """The per-step samples of a side's throughput ``col`` (``data_sps`` or ``compute_sps``,
    samples/s): samples of the step over its data wait (``data_ns``) or its compute time
    (``compute_ns``), over the steady steps in ``steps`` (columns ``workload``, ``side``,
    ``samples``, ``data_ns``, ``compute_ns``; see :func:`.stage.tables`). Their median is the
    throughput of ``throughput.csv``; an empty array when the side has no steps."""

    if steps is None or not len(steps):
        return np.array([])
    d = steps[(steps["workload"] == workload) & (steps["side"] == side)]
    ns = d["data_ns"].clip(lower=1) if col == "data_sps" else d["compute_ns"]
    return (d["samples"] / (ns / 1e9)).to_numpy(dtype=float)


def headline_similarity(sims: pd.DataFrame) -> float | None:
    """The lowest emulator similarity over the workloads (the stage's headline), None if none."""
    e = sims[(sims["side"] == "emulator") & sims["similarity"].notna()]["similarity"]
    return float(e.min()) if len(e) else None
