"""Claims: a paper's statement, our measured value, and a verdict computed by a written rule.

A rule is a short string kept next to the claim, evaluated on our value:

    "> 1.5"   ">= 0.9"   "< 1"   "<= 0.1"   "within 15% of 112"   "between 0.8 and 1.2"

A finding whose paper states a number also has a magnitude rule on ours / paper:

    "within 2x"   "within 25%"

Every claim has a ``kind``: ``finding`` (a paper's result, measured again here) or ``check``
(a property of our generators, metric or tools). A claim whose data is missing is still
written, with the verdict ``not measured`` and the reason; a rule that does not parse is an
error in the stage that writes it, with or without data. A failing finding's reason
(``why_not``) is computed from this host's measurements (:func:`cores`, :func:`fio_MBps`,
:func:`memory_gib`), and a claim measured after an eviction that left more than 5 % of the
data set in the page cache is marked as warm (:func:`cold_run`).

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
from .cache import COLD_LIMIT  # a run with more of its data set resident in the page cache is not cold

KINDS = ("finding", "check")
VERDICTS = ("holds", "direction only", "fails", "not measured")
COLUMNS = ["id", "kind", "source", "figure", "statement", "paper_value", "our_value", "unit",
           "ratio", "rule", "holds", "magnitude", "magnitude_holds", "verdict", "cold",
           "resident_fraction", "memory_backed", "note"]

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
          paper_value=None, note: str = "", why_not: str = "", *, kind: str,
          magnitude: str | None = None, resident_fraction: float | None = None,
          memory_backed: bool = False) -> dict:
    """One claim with its verdicts computed from ``our_value``.

    ``kind``: ``finding`` (a paper's result, reproduced here or not) or ``check`` (a property of
    our own generators, metric or tools, which the code was built to satisfy). ``rule`` decides
    the direction (the effect exists here); ``magnitude`` (for a finding whose paper states a
    number) decides whether ours / paper is within a stated tolerance. No value (None/NaN) gives
    the verdict ``not measured``, and ``why_not`` (or ``note``) must say why. ``why_not`` is added
    to the note when a verdict fails; it should say what on this host bounds the value, from a
    measurement. ``resident_fraction``: the page-cache residency measured after the cold-run
    eviction (:func:`cold_run`); over 5 % marks the claim as measured warm. ``memory_backed``:
    the data lay on a memory-backed tier (tmpfs), which cannot be evicted, so the claim is
    not a cold-cache measurement (``cold`` is left empty and the note says so).
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
    rf = None if resident_fraction is None or _missing(resident_fraction) else float(resident_fraction)
    cold = None if rf is None or memory_backed else bool(rf <= COLD_LIMIT)
    parts = [note] if note else []
    if value is None:
        parts.append("not measured on this run: " + (why_not or "(the stage gave no reason)"))
    else:
        if not holds:
            parts.append(f"our value {value:.4g} fails the rule '{rule}'")
        if mag is False:
            parts.append(f"ours / paper = {ratio:.3g}, outside '{magnitude}'")
        if (not holds or mag is False) and why_not:
            parts.append(why_not)
    if cold is False:
        parts.append(f"not a cold run: {rf:.0%} of the data set was in the page cache "
                     "after eviction")
    if memory_backed:
        parts.append("memory-backed tier (tmpfs): its data cannot be evicted, so this is not a "
                     "cold-cache measurement")
    return {"id": id, "kind": kind, "source": source, "figure": figure, "statement": statement,
            "paper_value": paper_value, "our_value": value, "unit": unit, "ratio": ratio,
            "rule": rule, "holds": holds, "magnitude": magnitude, "magnitude_holds": mag,
            "verdict": verdict, "cold": cold, "resident_fraction": rf,
            "memory_backed": bool(memory_backed), "note": "; ".join(parts)}


def show(claim_list: list[dict]) -> pd.DataFrame:
    """The claims of a stage as a table for its notebook: verdict first."""
    cols = ["verdict", "kind", "id", "statement", "paper_value", "our_value", "ratio", "rule",
            "magnitude", "resident_fraction", "note"]
    return pd.DataFrame(claim_list, columns=COLUMNS)[cols]


# ---------------------------------------------------------------- measured reasons (why_not)
# A failing finding's reason should come from a measurement of this host; these read the
# measurements other stages already made (env.json, the fio baseline).

def cores(env: dict) -> int:
    """CPUs this process could use when ``env`` (an env.json) was captured."""
    cpu = env.get("cpu") or {}
    return int(cpu.get("affinity") or cpu.get("count") or 0)


def memory_gib(env: dict) -> float:
    return float(env.get("memory_bytes") or 0) / 2**30


def fio_MBps(fio: pd.DataFrame, tier: str, job: str) -> float:
    """fio's median bandwidth (MB/s) of ``job`` (seqread, seqwrite, randread) on ``tier``, from
    ``results/fio_baseline/summary.csv``; NaN when it was not measured."""
    if fio is None or not len(fio):
        return float("nan")
    r = fio[(fio["tier"] == tier) & (fio["job"] == job)]
    return float(r["bw_MBps"].iloc[0]) if len(r) else float("nan")


def cold_run(env: dict, tier: str) -> dict:
    """The residency measured after the evictions of ``tier``'s runs, from a measuring stage's
    env.json (``cold_runs``, written by :mod:`experiments.cache`): keyword arguments for
    :func:`claim` (``resident_fraction``: the largest over the runs; ``memory_backed``)."""
    c = (env.get("cold_runs") or {}).get(tier)
    if not c:
        return {"resident_fraction": None, "memory_backed": False}
    return {"resident_fraction": c.get("resident_fraction_max"),
            "memory_backed": bool(c.get("memory_backed"))}


def gather(stages: list[str] | None = None) -> pd.DataFrame:
    """Every ``results/*/claims.json`` (or those of ``stages``) as one table, with the stage."""
    root = paths.results_dir()
    files = ([root / s / "claims.json" for s in stages] if stages
             else sorted(root.glob("*/claims.json")))
    rows = []
    for f in files:
        if f.parent.name == "claims":
            continue
        if not f.exists():
            if stages:
                raise FileNotFoundError(f"{f} is missing: run the stage {f.parent.name!r} first")
            continue
        for c in results.read_json(f):
            try:  # a claims file written by older code must still hold rules that parse
                _parse(c["rule"])
                if c.get("magnitude"):
                    _parse_magnitude(c["magnitude"])
                if c.get("kind") not in KINDS:
                    raise ValueError(f"kind = {c.get('kind')!r}; allowed: {', '.join(KINDS)}")
            except (KeyError, ValueError) as e:
                raise ValueError(f"{f}: claim {c.get('id')!r}: {e}; re-run the stage "
                                 f"{f.parent.name!r}") from None
            rows.append({"stage": f.parent.name, **{k: c.get(k) for k in COLUMNS}})
    return pd.DataFrame(rows, columns=["stage", *COLUMNS])


def _counts(df: pd.DataFrame) -> str:
    n = df["verdict"].value_counts()
    return ", ".join(f"{int(n.get(v, 0))} {v}" for v in VERDICTS if n.get(v, 0) or v != "direction only")


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _resident(r) -> str:
    """The residency column: measured fraction after eviction, or why there is none."""
    rf = getattr(r, "resident_fraction", None)
    if r.memory_backed is True:
        return "tmpfs (not evictable)"
    if rf is None or (isinstance(rf, float) and math.isnan(rf)):
        return "–"
    txt = f"{rf:.0%}"
    return txt if rf <= COLD_LIMIT else f"**{txt} (warm)**"


def to_markdown(df: pd.DataFrame) -> str:
    """The reviewer's table: findings first (with the paper's number, ours, the ratio and both
    verdicts, and the page-cache residency measured after the cold-run eviction), then
    checks; the header counts each kind by verdict."""
    df = df.copy()
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df = df.astype(object).where(df.notna(), None)
    df["verdict"] = df["verdict"].fillna("not measured")
    find, chk = df[df["kind"] != "check"], df[df["kind"] == "check"]
    lines = [f"# Claims: {len(find)} findings ({_counts(find)}); {len(chk)} checks ({_counts(chk)})", "",
             "A *finding* is a paper's result measured again here; a *check* is a property of our own "
             "generators, metric or tools (it could only fail through a bug). *direction*: the effect "
             "exists here (the rule); *magnitude*: ours / paper within the stated tolerance; "
             "*resident*: the share of the data set still in the page cache after the eviction before "
             f"the run (measured with mincore; over {COLD_LIMIT:.0%} the run was not cold). Verdicts are "
             "computed from this run's measurements; a claim whose data is missing stays as "
             "*not measured*, with the reason.", "",
             f"## Findings ({len(find)}: {_counts(find)})", "",
             "| verdict | source | figure | statement | paper | ours | unit | ours/paper | direction rule | "
             "direction | magnitude rule | magnitude | resident | note | stage |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {v: i for i, v in enumerate(["fails", "direction only", "not measured", "holds"])}
    find = find.assign(_o=find["verdict"].map(order)).sort_values(["_o", "stage"], kind="stable")
    for r in find.itertuples(index=False):
        v = r.verdict if r.verdict == "holds" else f"**{r.verdict}**"
        lines.append("| " + " | ".join([v] + [_fmt(x) for x in (
            r.source, r.figure, r.statement, r.paper_value, r.our_value, r.unit, r.ratio, r.rule,
            r.holds, r.magnitude, r.magnitude_holds)] + [_resident(r)] + [_fmt(x) for x in (
            r.note, r.stage)]) + " |")
    lines += ["", f"## Checks ({len(chk)}: {_counts(chk)})", "",
              "| verdict | figure | statement | ours | unit | rule | note | stage |",
              "|---|---|---|---|---|---|---|---|"]
    for r in chk.itertuples(index=False):
        v = r.verdict if r.verdict == "holds" else f"**{r.verdict}**"
        lines.append("| " + " | ".join([v] + [_fmt(x) for x in (
            r.figure, r.statement, r.our_value, r.unit, r.rule, r.note, r.stage)]) + " |")
    return "\n".join(lines) + "\n"
