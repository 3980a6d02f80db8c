"""Weighted cosine similarity of two characteristic vectors (the thesis's Eq 4.1 and 4.2).

    sim(u, v) = sum_i w_i ū_i v̄_i / ( sqrt(sum_i w_i ū_i²) sqrt(sum_i w_i v̄_i²) ),
    ū_i = u_i / max(u_i, v_i),  v̄_i = v_i / max(u_i, v_i)

with w_i = 2 for read components and 1 for write components (Table 4.2). Normalizing each
component to the larger of the two puts every component in [0, 1], so bytes do not drown counts.

Choices where Eq 4.2 is undefined (documented, tested):

- **zero maximum** (u_i = v_i = 0, e.g. neither run writes): 0/0. The component is *left out*
  of all three sums, exactly as if it were not in the vector. It neither rewards nor penalizes:
  two read-only runs are compared on their reads. (Counting it as agreement, ū = v̄ = 1, would
  lift every pair of read-only runs towards 1.)
- **zero on one side only** (u_i = 0 < v_i): ū_i = 0, v̄_i = 1, the full penalty the
  normalization implies.
- **not measured** (NaN or a key missing from a JSON vector, e.g. the block components of an
  strace trace): left out of the sums on both sides, and said so in the table's ``note``.
- if nothing is left, the similarity is 1 when the two vectors are equal and NaN otherwise;
  if one side is all zeros on the kept components, it is 0.

The per-component table (Tables 5.1 to 5.3) gives ``difference_pct = (B - A) / A * 100``.
"""

from __future__ import annotations

import math

import pandas as pd

from .vector import COMPONENTS, KEYS, WEIGHTS


def _isnan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def normalized(u: dict, v: dict) -> dict[str, tuple[float, float] | None]:
    """Per component: (ū, v̄) of Eq 4.2, or None when it is left out (see the module doc)."""
    out = {}
    for k in KEYS:
        a, b = u.get(k), v.get(k)
        if _isnan(a) or _isnan(b):
            out[k] = None
            continue
        m = max(a, b)
        out[k] = None if m == 0 else (a / m, b / m)
    return out


def weighted_cosine(u: dict, v: dict, weights: dict | None = None) -> float:
    """Eq 4.1 on the vectors ``u`` and ``v`` (mappings of :data:`vector.KEYS`); in [0, 1]."""
    w = weights or WEIGHTS
    num = nu = nv = 0.0
    kept = 0
    for k, pair in normalized(u, v).items():
        if pair is None:
            continue
        a, b = pair
        kept += 1
        num += w[k] * a * b
        nu += w[k] * a * a
        nv += w[k] * b * b
    if kept == 0:
        same = all((_isnan(u.get(k)) and _isnan(v.get(k))) or u.get(k) == v.get(k) for k in KEYS)
        return 1.0 if same else float("nan")
    if nu == 0 or nv == 0:
        return 0.0
    return min(num / (math.sqrt(nu) * math.sqrt(nv)), 1.0)


def component_table(u: dict, v: dict, names: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """Tables 5.1-5.3: component, weight, A, B, difference % ((B - A) / A * 100), and a note
    for components left out of the similarity."""
    a_name, b_name = names
    norm = normalized(u, v)
    rows = []
    for k, label, w in COMPONENTS:
        a, b = u.get(k, float("nan")), v.get(k, float("nan"))
        if _isnan(a) or _isnan(b):
            diff, note = float("nan"), "not measured on " + (
                "both" if _isnan(a) and _isnan(b) else a_name if _isnan(a) else b_name) + "; left out"
        elif a == 0:
            diff = 0.0 if b == 0 else float("inf")
            note = "zero on both; left out" if b == 0 else ""
        else:
            diff, note = (b - a) / a * 100.0, ""
        rows.append({"key": k, "component": label, "weight": w, a_name: a, b_name: b,
                     "difference_pct": diff, "used": norm[k] is not None, "note": note})
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame, names: tuple[str, str] = ("A", "B")) -> str:
    """The table as aligned text, numbers as in the thesis (thousands separators, 2-decimal %)."""
    def num(x) -> str:
        if _isnan(x):
            return "n/a"
        return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"

    def pct(x) -> str:
        if _isnan(x):
            return "n/a"
        return "inf" if math.isinf(x) else f"{x:.2f} %"
    cols = ["key", "component", "weight", names[0], names[1], "difference", "note"]
    body = [[r["key"], r["component"], str(r["weight"]), num(r[names[0]]), num(r[names[1]]),
             pct(r["difference_pct"]), r["note"]] for _, r in table.iterrows()]
    widths = [max(len(c), *(len(row[i]) for row in body)) for i, c in enumerate(cols)]
    fmt = lambda row: "  ".join(s.ljust(widths[i]) if i in (0, 1, 6) else s.rjust(widths[i])  # noqa: E731
                                for i, s in enumerate(row)).rstrip()
    return "\n".join([fmt(cols), fmt(["-" * x for x in widths]), *map(fmt, body)])
