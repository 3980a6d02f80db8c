"""Two runs' claims tables compared, finding by finding: one comparison for every use (``make
compare-claims`` of two fresh clones, ``make replicate``, ``make decide``'s before and after).

:func:`compare` gives, per finding measured in both tables (checks left out): both values,
intervals and verdicts; ``change`` (a holds/fails ``flip``, ``to inconclusive``, ``from
inconclusive``, ``measured in one``, ``same side``; None when unchanged); for a flip, ``edge``, a
verdict-changing value both intervals touch (the flip is then explained by intervals at a
margin's edge); ``covers`` (the first run's interval holds the second run's value), ``disjoint``
(the two intervals do not overlap) and ``same`` (the same value and interval in both: nothing
was measured again, left out of the shares). :func:`summary` counts them: for honest 95 %
intervals of the same quantity from independent runs, about 83 % of first-run intervals hold the
second run's value and disjoint pairs are rare. ``python -m experiments.review.compare A.csv
B.csv`` prints :func:`markdown`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from ..statistics import stats
from ..verdicts.rules import _parse, rule_text
from ..claims.table import shown_verdict
from ..verdicts.verdict import VERDICTS
from ..output.results import atomic_write

EDGE_REACH = 0.25   # how far from an interval an edge may lie and still count as touched, share of its width
COLUMNS = ["stage", "id", "change", "verdict_1", "value_1", "low_1", "high_1", "verdict_2", "value_2", "low_2",
           "high_2", "rule", "edge", "covers", "disjoint", "same"]


def _shown(verdict, negligible) -> str:
    return shown_verdict("not measured" if pd.isna(verdict) else verdict, negligible)


def _side(verdict) -> str | None:
    """holds / fails / None (undecided or not measured): what a flip compares."""
    if verdict in ("holds", "direction only"):
        return "holds"
    return "fails" if verdict == "fails" else None


def _change(v1, v2) -> str | None:
    if v1 == v2:
        return None
    s1, s2 = _side(v1), _side(v2)
    if s1 and s2:
        return "flip" if s1 != s2 else "same side"
    if "not measured" in (v1, v2):
        return "measured in one"
    if "not comparable" in (v1, v2):
        return "comparable in one"   # the sides read from the same place in one run only
    return "to inconclusive" if v2 == "inconclusive" else "from inconclusive"


def edges(rule, margin) -> list[float]:
    """The values where a finding's verdict changes: a comparison's threshold X and its margin's
    edges X -+ d; a ``within`` or ``between`` rule's ends; [] for a rule not understood."""
    try:
        r = _parse(str(rule or ""))
    except ValueError:
        return []
    if r.threshold is None:
        return [r.lower, r.upper]
    band = r.band(stats.number(margin) or 0.0)
    return sorted({r.threshold, *(band or ())})


def _touches(e: float, lo, hi) -> bool:
    if lo is None or hi is None:
        return False
    w = EDGE_REACH * (hi - lo)
    return lo - w <= e <= hi + w


def compare(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """One row per finding of both claims tables (module docstring for the columns)."""
    a = first[first["kind"] != "check"].set_index("id")
    b = second[second["kind"] != "check"].set_index("id")
    rows = []
    for i in [x for x in a.index if x in b.index]:
        r1, r2 = a.loc[i], b.loc[i]
        v1 = "not measured" if pd.isna(r1["verdict"]) else r1["verdict"]
        v2 = "not measured" if pd.isna(r2["verdict"]) else r2["verdict"]
        x1, x2 = stats.number(r1.get("our_value")), stats.number(r2.get("our_value"))
        lo1, hi1, lo2, hi2 = (stats.number(r1.get("ci_low")), stats.number(r1.get("ci_high")),
                              stats.number(r2.get("ci_low")), stats.number(r2.get("ci_high")))
        ci1, ci2 = None not in (lo1, hi1), None not in (lo2, hi2)
        s1, s2 = _shown(v1, r1.get("negligible")), _shown(v2, r2.get("negligible"))
        ch = _change(v1, v2) or ("same side" if s1 != s2 else None)
        same = bool(ci1 and ci2 and x1 is not None and (x1, lo1, hi1) == (x2, lo2, hi2))
        edge = None
        if ch == "flip":
            edge = next((e for e in edges(r1.get("rule"), r1.get("margin"))
                         if _touches(e, lo1, hi1) and _touches(e, lo2, hi2)), None)
        rows.append({"stage": r1.get("stage"), "id": i, "change": ch, "verdict_1": s1, "value_1": x1,
                     "low_1": lo1, "high_1": hi1, "verdict_2": s2, "value_2": x2, "low_2": lo2, "high_2": hi2,
                     "rule": rule_text(r1.get("rule"), r1.get("margin")) if isinstance(r1.get("rule"), str) else None,
                     "edge": edge,
                     "covers": (lo1 <= x2 <= hi1) if ci1 and x2 is not None and not same else None,
                     "disjoint": (hi1 < lo2 or hi2 < lo1) if ci1 and ci2 and not same else None,
                     "same": same})
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(t: pd.DataFrame) -> dict:
    """Counts of a :func:`compare` table: findings; ``flips`` (``far``: not at a margin's edge);
    moves to and from inconclusive; intervals ``compared``, how many of the first run's hold the
    second value (``covered``, ``share``); ``disjoint`` pairs; ``same`` (not measured again)."""
    cov = t["covers"].dropna()
    flips = t[t["change"] == "flip"]
    return {"findings": int(len(t)), "flips": int(len(flips)), "far": int(flips["edge"].isna().sum()),
            "to_inconclusive": int((t["change"] == "to inconclusive").sum()),
            "from_inconclusive": int((t["change"] == "from inconclusive").sum()),
            "compared": int(len(cov)), "covered": int(cov.astype(bool).sum()),
            "share": float(cov.astype(bool).mean()) if len(cov) else float("nan"),
            "disjoint": int(t["disjoint"].dropna().astype(bool).sum()), "same": int(t["same"].astype(bool).sum())}


def _ci(v, lo, hi) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3g} [{lo:.3g}, {hi:.3g}]" if lo is not None and not pd.isna(lo) else f"{v:.3g}"


def _counts(df: pd.DataFrame) -> dict[str, int]:
    f = df[df["kind"] != "check"]
    shown = [_shown(v, n) for v, n in zip(f["verdict"], f.get("negligible", [None] * len(f)))]
    return pd.Series(shown, dtype=object).value_counts().to_dict()


def markdown(t: pd.DataFrame, first: pd.DataFrame | None = None, second: pd.DataFrame | None = None,
             names: tuple[str, str] = ("A", "B"), every: bool = False) -> str:
    """The comparison for a reader: each table's count by verdict (when given), the summary
    (flips, named at a margin's edge or not; moves; the share of first-run intervals holding the
    second value; disjoint pairs), then the rows that changed, are disjoint or not covered
    (``every``: all rows), flips first."""
    s = summary(t)
    share = "n/a" if math.isnan(s["share"]) else f"{s['share']:.0%}"
    lines = [f"# Two runs compared: {names[0]} and {names[1]}", ""]
    if first is not None and second is not None:
        c1, c2 = _counts(first), _counts(second)
        lines += ["| verdict | " + " | ".join(names) + " |", "|---|---|---|"]
        for v in sorted(set(c1) | set(c2), key=lambda v: (v not in VERDICTS, v)):
            lines.append(f"| {v} | {c1.get(v, 0)} | {c2.get(v, 0)} |")
        lines.append("")
    lines += [f"{s['findings']} findings in both. **{s['flips']} holds/fails flip(s)**, {s['flips'] - s['far']} of "
              f"them with both intervals at a margin's edge (within {EDGE_REACH:.0%} of their width), "
              f"**{s['far']} not**; {s['to_inconclusive']} moved to and {s['from_inconclusive']} from "
              f"inconclusive. {s['covered']} of {s['compared']} first-run intervals hold the second run's value "
              f"({share}; about 83 % for honest 95 % intervals); **{s['disjoint']} disjoint pair(s)**"
              + (f"; {s['same']} with the same value and interval in both (not measured again), left out of the "
                 "share" if s["same"] else "") + ".", ""]
    order = {"flip": 0, "to inconclusive": 1, "from inconclusive": 2, "measured in one": 3,
             "comparable in one": 4, "same side": 5}
    shown = t if every else t[t["change"].notna() | (t["disjoint"] == True) | (t["covers"] == False)]  # noqa: E712
    yn = {True: "yes", False: "**no**", None: "–"}
    lines += [f"| stage | finding | change | {names[0]} [CI] | verdict | {names[1]} [CI] | verdict | rule | "
              "edge both touch | 1st CI holds 2nd value | disjoint |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in shown.sort_values("change", key=lambda x: x.map(order).fillna(9), kind="stable").itertuples(index=False):
        edge = "" if r.change != "flip" else ("**none**" if pd.isna(r.edge) else f"{r.edge:.4g}")
        cov = "same samples" if r.same else yn[None if pd.isna(r.covers) else bool(r.covers)]
        lines.append(f"| {r.stage} | {r.id} | {r.change or ''} | {_ci(r.value_1, r.low_1, r.high_1)} | {r.verdict_1} | "
                     f"{_ci(r.value_2, r.low_2, r.high_2)} | {r.verdict_2} | {r.rule or ''} | {edge} | {cov} | "
                     f"{yn[None if pd.isna(r.disjoint) else bool(r.disjoint)]} |")
    return "\n".join(lines) + "\n"


def read_table(f: str) -> pd.DataFrame:
    """A claims table from a file; stops naming the file when it is missing or not one."""
    p = Path(f)
    if not p.is_file():
        raise SystemExit(f"compare: {f}: no such file; allowed: a claims table (results/claims/claims.csv of a run)")
    d = pd.read_csv(p)
    miss = {"id", "kind", "verdict"} - set(d.columns)
    if miss:
        raise SystemExit(f"compare: {f} lacks the column(s) {', '.join(sorted(miss))}; allowed: a claims table "
                         "(results/claims/claims.csv)")
    return d


def main(argv=None) -> int:
    """``python -m experiments.review.compare A.csv B.csv [--out F.md] [--every]``."""
    ap = argparse.ArgumentParser(prog="python -m experiments.review.compare",
                                 description="two runs' claims tables compared finding by finding")
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--out", default=None, help="also write the comparison here (markdown)")
    ap.add_argument("--every", action="store_true", help="list every finding, not only those that moved")
    a = ap.parse_args(argv)
    one, two = read_table(a.first), read_table(a.second)
    md = markdown(compare(one, two), one, two, names=(a.first, a.second), every=a.every)
    if a.out:
        atomic_write(Path(a.out), lambda tmp: tmp.write_text(md))
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
