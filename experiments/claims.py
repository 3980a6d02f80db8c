"""Claims: a paper's statement, our measured value, and a verdict computed by a written rule.

A rule is a short string kept next to the claim, evaluated on our value:

    "> 1.5"   ">= 0.9"   "< 1"   "<= 0.1"   "within 15% of 112"   "between 0.8 and 1.2"

A finding whose paper states a number also has a magnitude rule on ours / paper:

    "within 2x"   "within 25%"

``holds`` (direction), ``magnitude_holds`` and ``verdict`` (``holds``, ``direction only``,
``fails``, ``not measured``) are never typed in; :func:`claim` computes them. The final
``claims`` stage gathers every stage's ``claims.json`` into ``results/claims/claims.md`` and
``claims.csv``.
"""

from __future__ import annotations

import math
import operator
import re

import pandas as pd

from . import paths, results

KINDS = ("finding", "check")
VERDICTS = ("holds", "direction only", "fails", "not measured")
COLUMNS = ["id", "kind", "source", "figure", "statement", "paper_value", "our_value", "unit",
           "ratio", "rule", "holds", "magnitude", "magnitude_holds", "verdict", "cold", "note"]
COLD_LIMIT = 0.05  # a run with more of its data set resident in the page cache is not cold

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_NUM = r"(-?[\d.]+(?:[eE][+-]?\d+)?)"
_CMP = re.compile(rf"^\s*(>=|<=|>|<)\s*{_NUM}\s*$")
_WITHIN = re.compile(rf"^\s*within\s+([\d.]+)\s*%\s+of\s+{_NUM}\s*$")
_BETWEEN = re.compile(rf"^\s*between\s+{_NUM}\s+and\s+{_NUM}\s*$")
_MAG_X = re.compile(r"^\s*within\s+([\d.]+)\s*x\s*$")
_MAG_PCT = re.compile(r"^\s*within\s+([\d.]+)\s*%\s*$")


def _parse(rule: str):
    """The test a rule stands for, as a function of the value; ValueError if not understood."""
    if m := _CMP.match(rule):
        op, x = _OPS[m.group(1)], float(m.group(2))
        return lambda v: bool(op(v, x))
    if m := _WITHIN.match(rule):
        pct, ref = float(m.group(1)), float(m.group(2))
        return lambda v: abs(v - ref) <= abs(ref) * pct / 100
    if m := _BETWEEN.match(rule):
        lo, hi = float(m.group(1)), float(m.group(2))
        return lambda v: lo <= v <= hi
    raise ValueError(
        f"claim rule {rule!r} not understood; allowed forms: '> X', '>= X', '< X', '<= X', "
        "'within P% of X', 'between A and B'"
    )


def _parse_magnitude(rule: str):
    """A magnitude rule tests our/paper: 'within Nx' (1/N <= ratio <= N) or 'within P%'."""
    if m := _MAG_X.match(rule):
        n = float(m.group(1))
        if n < 1:
            raise ValueError(f"magnitude rule {rule!r}: N must be >= 1")
        return lambda r: 1 / n <= r <= n
    if m := _MAG_PCT.match(rule):
        p = float(m.group(1)) / 100
        return lambda r: abs(r - 1) <= p
    raise ValueError(f"magnitude rule {rule!r} not understood; allowed forms: 'within Nx' "
                     "(ours/paper between 1/N and N), 'within P%' (ours/paper within P% of 1)")


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def evaluate(rule: str, value: float) -> bool | None:
    """Whether ``value`` satisfies ``rule`` (see the module docstring for the forms); None when
    there is no value. The rule is parsed first, so a mistyped rule fails with or without data."""
    test = _parse(rule)
    return None if _missing(value) else test(float(value))


def claim(id: str, source: str, figure: str, statement: str, our_value, unit: str, rule: str,
          paper_value=None, note: str = "", why_not: str = "", *, kind: str = "finding",
          magnitude: str | None = None, resident_fraction: float | None = None) -> dict:
    """One claim with its verdicts computed from ``our_value``.

    ``kind``: ``finding`` (a paper's result, reproduced here or not) or ``check`` (a property of
    our own generators, metric or tools, which the code was built to satisfy). ``rule`` decides
    the direction (the effect exists here); ``magnitude`` (for a finding whose paper states a
    number) decides whether ours / paper is within a stated tolerance. No value (None/NaN) gives
    the verdict ``not measured``, and ``why_not`` (or ``note``) must say why. ``why_not`` is added
    to the note when a verdict fails; it should say what on this host bounds the value, from a
    measurement. ``resident_fraction``: the page-cache residency measured after the cold-run
    eviction; over 5 % marks the claim as measured warm.
    """
    if kind not in KINDS:
        raise ValueError(f"claim {id!r}: kind = {kind!r}; allowed: {', '.join(KINDS)}")
    test = _parse(rule)
    mag_test = _parse_magnitude(magnitude) if magnitude else None
    numeric_paper = isinstance(paper_value, (int, float)) and not isinstance(paper_value, bool) \
        and not _missing(paper_value)
    if mag_test and not numeric_paper:
        raise ValueError(f"claim {id!r}: magnitude {magnitude!r} needs a numeric paper_value")
    value = None if _missing(our_value) else float(our_value)
    ratio = value / paper_value if value is not None and numeric_paper and paper_value else None
    holds = None if value is None else test(value)
    mag = None if value is None or mag_test is None or ratio is None else mag_test(ratio)
    if value is None:
        verdict = "not measured"
    elif not holds:
        verdict = "fails"
    elif mag is False:
        verdict = "direction only"
    else:
        verdict = "holds"
    cold = None if resident_fraction is None or _missing(resident_fraction) \
        else bool(resident_fraction <= COLD_LIMIT)
    parts = [note] if note else []
    if value is None:
        parts.append("not measured on this run" + (f": {why_not}" if why_not else ""))
    else:
        if not holds:
            parts.append(f"our value {value:.4g} fails the rule '{rule}'")
        if mag is False:
            parts.append(f"ours / paper = {ratio:.3g}, outside '{magnitude}'")
        if (not holds or mag is False) and why_not:
            parts.append(why_not)
    if cold is False:
        parts.append(f"not a cold run: {resident_fraction:.0%} of the data set was in the page cache "
                     "after eviction")
    return {"id": id, "kind": kind, "source": source, "figure": figure, "statement": statement,
            "paper_value": paper_value, "our_value": value, "unit": unit, "ratio": ratio,
            "rule": rule, "holds": holds, "magnitude": magnitude, "magnitude_holds": mag,
            "verdict": verdict, "cold": cold, "note": "; ".join(parts)}


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


def _counts(df: pd.DataFrame) -> str:
    n = df["verdict"].value_counts()
    return ", ".join(f"{int(n.get(v, 0))} {v}" for v in VERDICTS if n.get(v, 0) or v != "direction only")


def to_markdown(df: pd.DataFrame) -> str:
    """The reviewer's table: findings first (with the paper's number, ours, the ratio and both
    verdicts), then checks; the header counts each kind by verdict."""
    def fmt(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        if isinstance(v, bool):
            return "yes" if v else "**no**"
        if isinstance(v, float):
            return f"{v:.3g}"
        return str(v).replace("|", "\\|")

    df = df.copy()
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df["verdict"] = df["verdict"].fillna("not measured")
    find, chk = df[df["kind"] != "check"], df[df["kind"] == "check"]
    lines = [f"# Claims: {len(find)} findings ({_counts(find)}); {len(chk)} checks ({_counts(chk)})", "",
             "A *finding* is a paper's result measured again here; a *check* is a property of our own "
             "generators, metric or tools (it could only fail through a bug). *direction*: the effect "
             "exists here (the rule); *magnitude*: ours / paper within the stated tolerance. "
             "Verdicts are computed from this run's measurements.", "",
             f"## Findings ({len(find)})", "",
             "| verdict | source | figure | statement | paper | ours | unit | ours/paper | direction rule | "
             "direction | magnitude rule | magnitude | cold | note | stage |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {v: i for i, v in enumerate(["fails", "direction only", "not measured", "holds"])}
    find = find.assign(_o=find["verdict"].map(order)).sort_values(["_o", "stage"], kind="stable")
    for r in find.itertuples(index=False):
        v = r.verdict if r.verdict == "holds" else f"**{r.verdict}**"
        lines.append("| " + " | ".join([v] + [fmt(x) for x in (
            r.source, r.figure, r.statement, r.paper_value, r.our_value, r.unit, r.ratio, r.rule,
            r.holds, r.magnitude, r.magnitude_holds, r.cold, r.note, r.stage)]) + " |")
    lines += ["", f"## Checks ({len(chk)})", "",
              "| verdict | figure | statement | ours | unit | rule | note | stage |",
              "|---|---|---|---|---|---|---|---|"]
    for r in chk.itertuples(index=False):
        v = r.verdict if r.verdict == "holds" else f"**{r.verdict}**"
        lines.append("| " + " | ".join([v] + [fmt(x) for x in (
            r.figure, r.statement, r.our_value, r.unit, r.rule, r.note, r.stage)]) + " |")
    return "\n".join(lines) + "\n"
