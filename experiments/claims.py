"""Claims: a paper's statement, our measured value, and a verdict computed by a written rule.

A rule is a short string kept next to the claim, evaluated on our value:

    "> 1.5"   ">= 0.9"   "< 1"   "<= 0.1"   "within 15% of 112"   "between 0.8 and 1.2"

``holds`` is never typed in; :func:`claim` computes it. The final ``claims`` stage gathers
every stage's ``claims.json`` into ``results/claims/claims.md`` and ``claims.csv``.
"""

from __future__ import annotations

import math
import operator
import re

import pandas as pd

from . import paths, results

COLUMNS = ["id", "source", "figure", "statement", "paper_value", "our_value", "unit",
           "rule", "holds", "note"]

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_CMP = re.compile(r"^\s*(>=|<=|>|<)\s*(-?[\d.eE+-]+)\s*$")
_WITHIN = re.compile(r"^\s*within\s+([\d.]+)\s*%\s+of\s+(-?[\d.eE+-]+)\s*$")
_BETWEEN = re.compile(r"^\s*between\s+(-?[\d.eE+-]+)\s+and\s+(-?[\d.eE+-]+)\s*$")


def evaluate(rule: str, value: float) -> bool:
    """Whether ``value`` satisfies ``rule`` (see the module docstring for the forms)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if m := _CMP.match(rule):
        return bool(_OPS[m.group(1)](float(value), float(m.group(2))))
    if m := _WITHIN.match(rule):
        pct, ref = float(m.group(1)), float(m.group(2))
        return abs(float(value) - ref) <= abs(ref) * pct / 100
    if m := _BETWEEN.match(rule):
        return float(m.group(1)) <= float(value) <= float(m.group(2))
    raise ValueError(
        f"claim rule {rule!r} not understood; allowed forms: '> X', '>= X', '< X', '<= X', "
        "'within P% of X', 'between A and B'"
    )


def claim(id: str, source: str, figure: str, statement: str, our_value, unit: str, rule: str,
          paper_value=None, note: str = "", why_not: str = "") -> dict:
    """One claim with its verdict computed from ``our_value`` by ``rule``.

    ``why_not`` is added to the note when the claim does not hold (for example what on this
    machine bounds the value); it must describe the host, not the verdict.
    """
    value = None if our_value is None else float(our_value)
    holds = evaluate(rule, value) if value is not None else False
    parts = [note] if note else []
    if value is None or math.isnan(value):
        parts.append("not measured on this run")
    elif not holds:
        parts.append(f"our value {value:.4g} fails the rule '{rule}'")
        if why_not:
            parts.append(why_not)
    return {"id": id, "source": source, "figure": figure, "statement": statement,
            "paper_value": paper_value, "our_value": value, "unit": unit, "rule": rule,
            "holds": bool(holds), "note": "; ".join(parts)}


def gather(stages: list[str] | None = None) -> pd.DataFrame:
    """Every ``results/*/claims.json`` (or those of ``stages``) as one table, with the stage."""
    root = paths.results_dir()
    files = ([root / s / "claims.json" for s in stages] if stages
             else sorted(root.glob("*/claims.json")))
    rows = []
    for f in files:
        if f.parent.name == "claims" or not f.exists():
            continue
        for c in results.read_json(f):
            rows.append({"stage": f.parent.name, **{k: c.get(k) for k in COLUMNS}})
    return pd.DataFrame(rows, columns=["stage", *COLUMNS])


def to_markdown(df: pd.DataFrame) -> str:
    """The reviewer's table: one line per claim, verdict first."""
    def fmt(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        if isinstance(v, float):
            return f"{v:.3g}"
        return str(v).replace("|", "\\|")

    held = int(df["holds"].sum()) if len(df) else 0
    lines = [f"# Claims: {held} of {len(df)} hold on this run", "",
             "| holds | source | figure | statement | paper | ours | unit | rule | note | stage |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples(index=False):
        lines.append("| " + " | ".join([
            "yes" if r.holds else "**no**", fmt(r.source), fmt(r.figure), fmt(r.statement),
            fmt(r.paper_value), fmt(r.our_value), fmt(r.unit), fmt(r.rule), fmt(r.note),
            fmt(r.stage)]) + " |")
    return "\n".join(lines) + "\n"
