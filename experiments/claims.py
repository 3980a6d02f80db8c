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

A finding's direction is judged on the 95 % confidence interval of our value
(:mod:`experiments.stats`, from the stage's repeats or per-step/per-read samples): it holds when
the whole interval satisfies the rule, fails when the whole interval violates it, and is
``inconclusive`` when the interval straddles the rule's threshold. Each direction rule carries a
margin of no material effect (:func:`default_margin`: 5 % for a ratio against 1): an interval
inside it ``fails`` as ``negligible`` (shown and counted as ``fails (negligible)``); an interval
that straddles the threshold but ends short of the margin's edge on the side the statement
claims (``> 1`` with its high end at most 1.05) ``fails`` too: the effect the statement means is
ruled out (:func:`_short_of_margin`). A finding
with a value but no interval (one sample), with too few samples for its interval's level, or
whose value lies outside its own interval is ``inconclusive``: a point value alone never holds
or fails. A check
keeps its verdict on the point value. Each finding says whether its paper states it, only
implies it, or is our extension (``basis``).

``holds`` (direction), ``magnitude_holds`` and ``verdict`` (``holds``, ``direction only``,
``inconclusive``, ``fails``, ``not measured``) are never typed in; :func:`claim` computes them. The final
``claims`` stage gathers every stage's ``claims.json`` into ``results/claims/claims.md`` and
``claims.csv``.
"""

from __future__ import annotations

import math
import operator
import re

import pandas as pd

from . import paths, results
from .stats import Interval
from .cache import COLD_LIMIT  # a run with more of its data set resident in the page cache is not cold

KINDS = ("finding", "check")
VERDICTS = ("holds", "direction only", "inconclusive", "fails", "not measured")
# stated: the paper says it in words or numbers; implied: we read it from the paper's figures or
# argument; extension: a configuration the paper did not run (no paper value).
BASES = ("stated", "implied", "extension")
COLUMNS = ["id", "kind", "basis", "source", "figure", "statement", "paper_value", "our_value",
           "ci_low", "ci_high", "n", "n_to_decide", "ci_method", "ci_coverage", "unit", "ratio", "rule", "margin", "negligible",
           "holds", "magnitude",
           "magnitude_holds", "verdict", "cold", "resident_fraction", "memory_backed", "note"]
NO_INTERVAL = "no interval; a point value alone does not decide"

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_NUM = r"(-?[\d.]+(?:[eE][+-]?\d+)?)"
_CMP = re.compile(rf"^\s*(>=|<=|>|<)\s*{_NUM}\s*$")
_WITHIN = re.compile(rf"^\s*within\s+([\d.]+)\s*%\s+of\s+{_NUM}\s*$")
_BETWEEN = re.compile(rf"^\s*between\s+{_NUM}\s+and\s+{_NUM}\s*$")
_MAG_X = re.compile(r"^\s*within\s+([\d.]+)\s*x\s*$")
_MAG_PCT = re.compile(r"^\s*within\s+([\d.]+)\s*%\s*$")


class _Rule:
    """A parsed direction rule: ``test(v)`` on a point, ``on_interval(lo, hi)`` on an interval
    (True: every value satisfies it; False: none does; None: it straddles). Every rule accepts a
    convex set [lower, upper] (open or closed ends), so the ends of an interval decide.
    ``threshold``: the one number a comparison rule (``> X`` ...) compares with (None for
    ``between`` and ``within``, which are bands themselves)."""

    def __init__(self, test, lower: float, upper: float, threshold: float | None = None):
        self.test, self.lower, self.upper, self.threshold = test, lower, upper, threshold

    def __call__(self, v: float) -> bool:
        return bool(self.test(v))

    def on_interval(self, lo: float, hi: float) -> bool | None:
        if self.test(lo) and self.test(hi):
            return True
        if hi < self.lower or lo > self.upper or (not self.test(lo) and not self.test(hi)
                                                   and (hi <= self.lower or lo >= self.upper)):
            return False
        return None

    def band(self, margin: float | None) -> tuple[float, float] | None:
        """The values of no material effect, [X - d, X + d] around the threshold X with
        d = ``margin`` x |X| (a share of the threshold; absolute, in the value's unit, when
        X = 0); None without a margin."""
        if not margin or self.threshold is None:
            return None
        d = margin * abs(self.threshold) if self.threshold else margin
        return self.threshold - d, self.threshold + d


def _short_of_margin(test: _Rule, band: tuple[float, float], lo: float, hi: float) -> bool:
    """Whether an interval that straddles a one-sided rule (``> X``: upper end open; ``< X``:
    lower end open) stays short of the margin's far edge, on the side the statement claims: for
    ``> X`` its high end at most X + d, for ``< X`` its low end at least X - d. The one-sided
    test of "an effect of at least the margin, as claimed" then rejects it at the interval's
    level (two one-sided tests: the material half), whatever the interval's other end."""
    if math.isinf(test.upper) and not math.isinf(test.lower):
        return hi <= band[1]
    if math.isinf(test.lower) and not math.isinf(test.upper):
        return lo >= band[0]
    return False


DEFAULT_MARGIN = 0.05   # the smallest effect a ratio's "faster", "more", "fewer" means (see default_margin)


def default_margin(rule: str) -> float | None:
    """The margin a finding's rule gets when its call names none: 5 % for a ratio compared
    with 1 (``> 1``, ``>= 1``, ``< 1``, ``<= 1``: an effect against no effect; MLPerf asks
    that results replicate within 5 %); None (no band) for any other rule: a threshold that is
    a level (``>= 0.95``, ``> 2``, ``< 10``) is the smallest value the statement means
    already, a difference compared with 0 has a unit only its call knows, and ``between`` and
    ``within`` rules are bands themselves."""
    r = _parse(rule)
    return DEFAULT_MARGIN if r.threshold == 1 else None


def _parse(rule: str) -> _Rule:
    """The test a rule stands for, as a function of the value; ValueError if not understood."""
    if m := _CMP.match(rule):
        sym, x = m.group(1), float(m.group(2))
        op = _OPS[sym]
        lower, upper = (x, math.inf) if sym.startswith(">") else (-math.inf, x)
        return _Rule(lambda v: bool(op(v, x)), lower, upper, x)
    if m := _WITHIN.match(rule):
        pct, ref = float(m.group(1)), float(m.group(2))
        d = abs(ref) * pct / 100
        return _Rule(lambda v: abs(v - ref) <= d, ref - d, ref + d)
    if m := _BETWEEN.match(rule):
        lo, hi = float(m.group(1)), float(m.group(2))
        return _Rule(lambda v: lo <= v <= hi, lo, hi)
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
          memory_backed: bool = False, interval: Interval | None = None,
          basis: str | None = None, margin: float | None = None, margin_why: str = "") -> dict:
    """One claim with its verdicts computed from ``our_value`` and its ``interval``.

    ``kind``: ``finding`` (a paper's result, reproduced here or not) or ``check`` (a property of
    our own generators, metric or tools, which the code was built to satisfy). ``rule`` decides
    the direction (the effect exists here); for a finding it is judged on ``interval`` (a
    :class:`experiments.stats.Interval` of our value, same unit): ``holds`` when the whole
    interval satisfies the rule, ``fails`` when none of it does, ``inconclusive`` when it
    straddles; with no interval (or one sample, or NaN bounds) a measured finding is
    ``inconclusive``. A check is judged on the point (an interval given is shown).
    ``magnitude`` (for a finding whose paper states a number) decides, on the point ratio and
    only when the direction holds, whether ours / paper is within a stated tolerance
    (``direction only`` when not). No value (None/NaN) gives the verdict ``not measured``, and
    ``why_not`` (or ``note``) must say why. ``why_not`` is added to the note when a verdict
    fails; it should say what on this host bounds the value, from a measurement.
    ``resident_fraction``: the page-cache residency measured after the cold-run eviction
    (:func:`cold_run`); over 5 % marks the claim as measured warm. ``memory_backed``: the data
    lay on a memory-backed tier (tmpfs), which cannot be evicted, so the claim is not a
    cold-cache measurement (``cold`` is left empty and the note says so). ``basis`` (findings):
    ``stated`` (the paper says it), ``implied`` (we infer it from the paper's figures or
    argument) or ``extension`` (a configuration the paper did not run; no paper value).

    ``margin`` (findings): the smallest effect the statement means, as a share of the rule's
    threshold (absolute, in the value's unit, for a threshold of 0); None takes
    :func:`default_margin` (5 % for a ratio against 1, else no band). A margin other than the
    default needs ``margin_why`` (one line, shown in the note). When the whole interval lies
    in [X - d, X + d] around the threshold X the verdict is ``fails`` with
    ``negligible`` = True and the note "no effect beyond ... here" (the statement claims an
    effect; this box shows none that matters), even when the interval straddles X.
    An interval whose method cannot reach its level with its samples
    (:attr:`experiments.stats.Interval.enough`: e.g. a bootstrap of 4 repeats) decides
    nothing: ``inconclusive``, and the note says how many samples it needs.
    """
    if kind not in KINDS:
        raise ValueError(f"claim {id!r}: kind = {kind!r}; allowed: {', '.join(KINDS)}")
    if basis is not None and basis not in BASES:
        raise ValueError(f"claim {id!r}: basis = {basis!r}; allowed: {', '.join(BASES)} (or None)")
    if basis == "extension" and paper_value is not None:
        raise ValueError(f"claim {id!r}: basis = 'extension' with paper_value = {paper_value!r}; "
                         "allowed: no paper value for a configuration the paper did not run")
    if interval is not None and not isinstance(interval, Interval):
        raise ValueError(f"claim {id!r}: interval = {interval!r}; allowed: an "
                         "experiments.stats.Interval or None")
    test = _parse(rule)
    dflt = default_margin(rule)
    if margin is not None:
        if kind == "check":
            raise ValueError(f"claim {id!r}: margin = {margin!r} on a check; allowed: a margin only "
                             "on a finding (a check is judged on its point)")
        if not (isinstance(margin, (int, float)) and not isinstance(margin, bool)
                and math.isfinite(margin) and margin >= 0):
            raise ValueError(f"claim {id!r}: margin = {margin!r}; allowed: a number >= 0 (a share "
                             "of the rule's threshold, e.g. 0.05) or None for the default")
        if margin and test.threshold is None:
            raise ValueError(f"claim {id!r}: margin = {margin!r} with the rule {rule!r}; allowed: a "
                             "margin only on a comparison rule ('> X', '<= X', ...): a 'between' or "
                             "'within' rule is a band itself")
        if margin != dflt and not margin_why.strip():
            raise ValueError(f"claim {id!r}: margin = {margin!r} differs from the default "
                             f"({dflt!r} for the rule {rule!r}); allowed: with margin_why = one line "
                             "saying why")
    m = (dflt if margin is None else float(margin)) if kind == "finding" else None
    band = test.band(m)
    mag_test = _parse_magnitude(magnitude) if magnitude else None
    numeric_paper = isinstance(paper_value, (int, float)) and not isinstance(paper_value, bool) \
        and not _missing(paper_value)
    if mag_test and not numeric_paper:
        raise ValueError(f"claim {id!r}: magnitude {magnitude!r} needs a numeric paper_value")
    value = None if _missing(our_value) else float(our_value)
    ratio = value / paper_value if value is not None and numeric_paper and paper_value else None
    has_ci = interval is not None and interval.ok
    too_few = has_ci and kind == "finding" and not interval.enough
    # a value outside its own interval: the two came from different computations (a stage's
    # bug); shown, never decided on
    outside = has_ci and kind == "finding" and value is not None and not interval.contains(value)
    n = interval.n if interval is not None else (1 if value is not None and kind == "finding" else None)
    negligible = None
    short = False
    to_decide = None
    if value is None:
        holds = None
    elif kind == "check":
        holds = test(value)
    elif not has_ci or too_few or outside:
        holds = None
    else:
        holds, negligible, short = _decide(test, band, interval.low, interval.high)
        if holds is None:
            to_decide = samples_to_decide(test, band, value, interval)
    mag = None if value is None or mag_test is None or ratio is None else mag_test(ratio)
    if value is None:
        verdict = "not measured"
    elif holds is None:
        verdict = "inconclusive"
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
        if verdict == "inconclusive" and not has_ci:
            parts.append(f"n = {n or 1}: {NO_INTERVAL}")
        elif verdict == "inconclusive" and outside:
            parts.append(f"our value {value:.4g} lies outside its own interval [{interval.low:.4g}, "
                         f"{interval.high:.4g}]: they come from different computations, so neither "
                         "decides")
        elif verdict == "inconclusive" and too_few:
            parts.append(f"n = {n}: {interval.method} covers at most {interval.coverage:.0%}, below "
                         f"{interval.level:.0%}; it decides nothing (at least {_min_n(interval)} "
                         "independent samples are needed)")
        elif verdict == "inconclusive":
            reach = (f", reaching beyond the margin [{band[0]:.4g}, {band[1]:.4g}]" if band else "")
            parts.append(f"the interval [{interval.low:.4g}, {interval.high:.4g}] straddles the "
                         f"rule '{rule}'{reach}")
            parts.append(_to_decide_words(to_decide, n))
        if negligible:
            parts.append(f"no effect beyond {_margin_words(test, m)} here: the whole interval "
                         f"[{interval.low:.4g}, {interval.high:.4g}] lies within [{band[0]:.4g}, "
                         f"{band[1]:.4g}] of the rule's threshold")
        elif short:
            edge = band[1] if math.isinf(test.upper) else band[0]
            parts.append(f"no effect beyond {_margin_words(test, m)} in the statement's direction here: "
                         f"the interval [{interval.low:.4g}, {interval.high:.4g}] ends short of "
                         f"{edge:.4g}, the margin's edge, so the effect the rule '{rule}' means is "
                         "ruled out")
        elif holds is False:
            where = (f"the whole interval [{interval.low:.4g}, {interval.high:.4g}]"
                     if has_ci and kind == "finding" else f"our value {value:.4g}")
            parts.append(f"{where} fails the rule '{rule}'")
        if holds and mag is False:
            parts.append(f"ours / paper = {ratio:.3g}, outside '{magnitude}'")
        if verdict in ("fails", "direction only", "inconclusive") and why_not and not negligible:
            parts.append(why_not)
        if margin is not None and m != dflt:
            parts.append(f"margin {_margin_words(test, m)}: {margin_why.strip()}")
    if cold is False:
        parts.append(f"not a cold run: {rf:.0%} of the data set was in the page cache "
                     "after eviction")
    if memory_backed:
        parts.append("memory-backed tier (tmpfs): its data cannot be evicted, so this is not a "
                     "cold-cache measurement")
    ci = interval if interval is not None else None
    return {"id": id, "kind": kind, "basis": basis, "source": source, "figure": figure,
            "statement": statement, "paper_value": paper_value, "our_value": value,
            "ci_low": ci.low if ci and ci.ok else None, "ci_high": ci.high if ci and ci.ok else None,
            "n": n, "n_to_decide": to_decide, "ci_method": ci.method if ci else None,
            "ci_coverage": ci.coverage if ci and ci.ok else None, "unit": unit, "ratio": ratio,
            "rule": rule, "margin": m, "negligible": negligible,
            "holds": holds, "magnitude": magnitude, "magnitude_holds": mag,
            "verdict": verdict, "cold": cold, "resident_fraction": rf,
            "memory_backed": bool(memory_backed), "note": "; ".join(parts)}


def _decide(test: _Rule, band: tuple[float, float] | None, lo: float,
            hi: float) -> tuple[bool | None, bool, bool]:
    """(holds, negligible, short) of a finding's interval [lo, hi]: ``negligible`` when the
    whole interval lies in the margin's ``band`` (fails); else the rule on the interval
    (None: it straddles), and ``short`` when a straddling interval ends short of the margin's
    edge on the statement's side (fails: the effect the statement means is ruled out)."""
    negligible = bool(band and band[0] <= lo and hi <= band[1])
    holds = False if negligible else test.on_interval(lo, hi)
    short = False
    if holds is None and band and _short_of_margin(test, band, lo, hi):
        holds, short = False, True
    return holds, negligible, short


MAX_TO_DECIDE = 100   # times the samples taken: beyond it the value sits on a rule's edge
NEVER_DECIDES = "more samples would not decide it"


def samples_to_decide(test: _Rule, band: tuple[float, float] | None, value: float,
                      interval: Interval) -> int | None:
    """A forecast for a straddling interval: how many samples (of the kind ``interval.n``
    counts) would decide the finding if the value and the spread stayed as they are, an
    interval's width shrinking as 1/sqrt(n) (each side of the value in proportion). The
    smallest n whose narrowed interval :func:`_decide` decides, at most
    :data:`MAX_TO_DECIDE` x n; None beyond (the value sits at the edge of a rule or margin:
    more samples of this kind would not decide it). A forecast, never a verdict."""
    n, lo, hi = interval.n, interval.low, interval.high
    if not n or not (lo <= value <= hi):
        return None

    def decides(m: int) -> bool:
        s = math.sqrt(n / m)
        return _decide(test, band, value - s * (value - lo), value + s * (hi - value))[0] is not None

    # a narrower interval around the same value stays decided (every rule and band is convex),
    # so the smallest such m is found by bisection
    a, b = n, MAX_TO_DECIDE * n
    if not decides(b):
        return None
    while b - a > 1:
        mid = (a + b) // 2
        a, b = (a, mid) if decides(mid) else (mid, b)
    return b


def _to_decide_words(m: int | None, n: int) -> str:
    """The forecast of :func:`samples_to_decide` as the note says it."""
    if m is None:
        return (f"{NEVER_DECIDES}: the value sits at the rule's (or margin's) edge, "
                f"and even {MAX_TO_DECIDE} x the {n} samples, at this spread, would leave the "
                "interval straddling")
    return (f"at this spread, about {m} samples ({m / n:.1f} x the {n} taken) would decide it "
            "(a forecast: the width shrinking as 1/sqrt(n))")


def _min_n(interval: Interval) -> int:
    """Samples an interval's method needs to reach its level (the median-type bound,
    :func:`experiments.stats.reachable`)."""
    from .stats import reachable

    return next(k for k in range(2, 1000) if reachable(k) >= interval.level - 1e-12)


def _margin_words(rule: _Rule, m: float) -> str:
    """A margin as the table says it: "5 %" of a non-zero threshold, "±0.01" around 0."""
    return f"{m * 100:.3g} %" if rule.threshold else f"±{m:.3g}"


def rule_text(rule: str, margin) -> str:
    """A direction rule with its margin beside it, as the claims table shows it:
    "> 1 (margin 5 %)"; the rule alone when it has none."""
    if margin is None or (isinstance(margin, float) and math.isnan(margin)) or not margin:
        return rule
    return f"{rule} (margin {_margin_words(_parse(rule), float(margin))})"


def outside_own_interval(df: pd.DataFrame) -> pd.DataFrame:
    """The claims (rows of :func:`gather` or a claims.json as a table) whose value lies outside
    their own interval: a value and an interval from different computations."""
    d = df[df["our_value"].notna() & df["ci_low"].notna() & df["ci_high"].notna()]
    v, lo, hi = (d[c].astype(float) for c in ("our_value", "ci_low", "ci_high"))
    tol = 1e-9 * (v.abs() + 1)
    return d[(v < lo - tol) | (v > hi + tol)]


def show(claim_list: list[dict]) -> pd.DataFrame:
    """The claims of a stage as a table for its notebook: verdict first."""
    cols = ["verdict", "kind", "basis", "id", "statement", "paper_value", "our_value", "ci_low",
            "ci_high", "n", "ratio", "rule", "magnitude", "resident_fraction", "note"]
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


def scale_had(env: dict) -> str:
    """What a multi-process stage's run reached, from its env.json's ``scale`` (``procs_max``,
    ``nodes_max``, ``allocation_nodes``): the words a scale claim's ``why_not`` gives beside
    the processes it needs."""
    s = env.get("scale") or {}
    if not s:
        return "this run recorded no scale (env.json has no 'scale')"
    return (f"this run had at most {s.get('procs_max', '?')} processes over {s.get('nodes_max', '?')} "
            f"node(s), in an allocation of {s.get('allocation_nodes', '?')} node(s)")


def gather(stages: list[str] | None = None) -> pd.DataFrame:
    """Every ``results/*/claims.json`` (or those of ``stages``) as one table, with the stage."""
    root = paths.results_dir()
    files = ([root / s / "claims.json" for s in stages] if stages
             else sorted(root.glob("*/claims.json")))
    rows = []
    # repeats-until-decided outcomes of the measuring stages (sequential.json), by finding
    seq = {k: v for d in sorted(root.glob("*/")) for k, v in sequential_notes(d).items()}
    for f in files:
        if f.parent.name == "claims":
            continue
        if not f.exists():
            if stages:
                raise FileNotFoundError(f"{f} is missing: run the stage {f.parent.name!r} first")
            continue
        for c in results.read_json(f):
            if c.get("id") in seq and seq[c["id"]] not in (c.get("note") or ""):
                c = {**c, "note": "; ".join(x for x in (c.get("note"), seq[c["id"]]) if x)}
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


def _is_negligible(x) -> bool:
    return x is True or (isinstance(x, str) and x.lower() == "true") or (
        not isinstance(x, (bool, str)) and x is not None and x == x and bool(x))


def shown_verdict(verdict, negligible) -> str:
    """The verdict as the table and its header count it: a ``fails`` whose interval lies within
    the margin of no effect is ``fails (negligible)``."""
    return "fails (negligible)" if verdict == "fails" and _is_negligible(negligible) else verdict


SEQUENTIAL_FILE = "sequential.json"   # written by experiments.sequential.write


def sequential_notes(folder) -> dict[str, str]:
    """{finding: how many repeats it took and why they stopped} from a measuring stage's
    ``sequential.json`` (:mod:`experiments.sequential`); {} without one."""
    import json
    from pathlib import Path

    f = Path(folder) / SEQUENTIAL_FILE
    if not f.exists():
        return {}
    return {k: v.get("note", "") for k, v in json.loads(f.read_text()).get("findings", {}).items()}


def _counts(df: pd.DataFrame) -> str:
    """Each verdict counted separately, in the order of :data:`VERDICTS`, with the ``fails``
    whose interval lies within the margin counted apart as ``fails (negligible)``."""
    neg = df["negligible"] if "negligible" in df else pd.Series([None] * len(df), index=df.index)
    shown = [shown_verdict(v, g) for v, g in zip(df["verdict"], neg)]
    order = [*VERDICTS[:4], "fails (negligible)", *VERDICTS[4:]]
    return ", ".join(f"{shown.count(v)} {v}" for v in order)


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _ours(r) -> str:
    """Our value with its interval and sample count: "1.2 [1.1, 1.3] n=5"."""
    txt = _fmt(r.our_value)
    if r.our_value is None or (isinstance(r.our_value, float) and math.isnan(r.our_value)):
        return txt
    n = r.n
    n = None if n is None or (isinstance(n, float) and math.isnan(n)) else int(n)
    if r.ci_low is not None and r.ci_high is not None and not (
            isinstance(r.ci_low, float) and math.isnan(r.ci_low)):
        return f"{txt} [{float(r.ci_low):.3g}, {float(r.ci_high):.3g}] n={n}"
    return txt if n is None else f"{txt} n={n}"


def _resident(r) -> str:
    """The residency column: measured fraction after eviction, or why there is none."""
    rf = getattr(r, "resident_fraction", None)
    if r.memory_backed is True:
        return "tmpfs (not evictable)"
    if rf is None or (isinstance(rf, float) and math.isnan(rf)):
        return "–"
    txt = f"{rf:.0%}"
    return txt if rf <= COLD_LIMIT else f"**{txt} (warm)**"


def previous_table() -> pd.DataFrame | None:
    """The claims table of the run before (``results/claims/claims.csv``, kept by ``persist`` in
    dvc.yaml until this run overwrites it), or None when there is none. Read it before
    ``results.StageResults("claims")`` cleans the folder."""
    f = paths.results_dir("claims") / "claims.csv"
    return pd.read_csv(f) if f.exists() else None


def changes(previous: pd.DataFrame | None, current: pd.DataFrame) -> pd.DataFrame:
    """Claims whose verdict differs from the run before (``previous``, a claims.csv; None: no
    run before), with this run's value and interval: one row per changed, new or dropped claim
    (``before``/``after`` ``–`` when absent)."""
    cols = ["stage", "id", "before", "after", "our_value", "ci_low", "ci_high", "n"]
    if previous is None or not len(previous):
        return pd.DataFrame(columns=cols)
    prev = previous.set_index("id")["verdict"].to_dict()
    rows = []
    for r in current.itertuples(index=False):
        before = prev.pop(r.id, "–")
        if before != r.verdict:
            rows.append({"stage": r.stage, "id": r.id, "before": before, "after": r.verdict,
                         "our_value": r.our_value, "ci_low": getattr(r, "ci_low", None),
                         "ci_high": getattr(r, "ci_high", None), "n": getattr(r, "n", None)})
    stage_of = previous.set_index("id")["stage"].to_dict() if "stage" in previous else {}
    rows += [{"stage": stage_of.get(i), "id": i, "before": v, "after": "–"} for i, v in prev.items()]
    return pd.DataFrame(rows, columns=cols)


def to_markdown(df: pd.DataFrame, changed: pd.DataFrame | None = None) -> str:
    """The reviewer's table: findings first (with the paper's number, ours, the ratio and both
    verdicts, and the page-cache residency measured after the cold-run eviction), then
    checks; the header counts each kind by verdict. ``changed`` (:func:`changes`): a closing
    section lists the verdicts that changed against the run before, with their intervals."""
    df = df.copy()
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df = df.astype(object).where(df.notna(), None)
    df["verdict"] = df["verdict"].fillna("not measured")
    find, chk = df[df["kind"] != "check"], df[df["kind"] == "check"]
    lines = [f"# Claims: {len(find)} findings ({_counts(find)}); {len(chk)} checks ({_counts(chk)})", "",
             "A *finding* is a paper's result measured again here; a *check* is a property of our own "
             "generators, metric or tools (it could only fail through a bug). *basis*: whether the paper "
             "*states* the finding, only *implies* it (we read it from its figures or argument), or it is "
             "our *extension* (a configuration the paper did not run, no paper value). *ours*: our value "
             "with its 95 % confidence interval and the number of samples it came from (repeats, steps "
             "or reads; docs/statistics.md). *direction*: the effect exists here (the rule), judged on "
             "the interval: *holds* when the whole interval satisfies the rule, *fails* when none of it "
             "does, *fails (negligible)* when the whole interval lies within the rule's margin of no "
             "effect (the smallest effect the statement means, beside the rule: 5 % for a ratio against "
             "1), and *fails* also when it straddles the threshold but ends short of the margin's edge on "
             "the side the statement claims (the effect it means is ruled out), *inconclusive* when it "
             "straddles the threshold reaching beyond the margin on both sides, when there "
             "is no interval (n = 1: a point value alone never decides) or when its method cannot reach "
             "95 % with so few samples; *magnitude*: ours / paper within the stated tolerance "
             "(on the point, when the direction holds); *resident*: the share of the data set still in "
             "the page cache after the eviction before "
             f"the run (measured with mincore; over {COLD_LIMIT:.0%} the run was not cold). Verdicts are "
             "computed from this run's measurements; a claim whose data is missing stays as "
             "*not measured*, with the reason. A check is judged on its point value.", "",
             f"## Findings ({len(find)}: {_counts(find)})", "",
             "| verdict | basis | source | figure | statement | paper | ours [95 % CI] n | unit | ours/paper | "
             "direction rule | direction | magnitude rule | magnitude | resident | note | stage |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {v: i for i, v in enumerate(["fails", "direction only", "inconclusive", "not measured", "holds"])}
    find = find.assign(_o=find["verdict"].map(order)).sort_values(["_o", "stage"], kind="stable")
    for r in find.itertuples(index=False):
        sv = shown_verdict(r.verdict, r.negligible)
        v = sv if sv == "holds" else f"**{sv}**"
        lines.append("| " + " | ".join([v] + [_fmt(x) for x in (
            r.basis, r.source, r.figure, r.statement, r.paper_value)] + [_ours(r)] + [_fmt(x) for x in (
            r.unit, r.ratio, rule_text(r.rule, r.margin), r.holds, r.magnitude, r.magnitude_holds)] + [_resident(r)] + [
            _fmt(x) for x in (r.note, r.stage)]) + " |")
    lines += ["", f"## Checks ({len(chk)}: {_counts(chk)})", "",
              "| verdict | figure | statement | ours | unit | rule | note | stage |",
              "|---|---|---|---|---|---|---|---|"]
    for r in chk.itertuples(index=False):
        v = r.verdict if r.verdict == "holds" else f"**{r.verdict}**"
        lines.append("| " + " | ".join([v] + [_fmt(x) for x in (r.figure, r.statement)] + [_ours(r)] + [
            _fmt(x) for x in (r.unit, r.rule, r.note, r.stage)]) + " |")
    lines += _forecast_lines(find)
    if changed is not None:
        lines += ["", f"## Changed since the run before ({len(changed)})", ""]
        if len(changed):
            lines += ["| claim | stage | before | now | ours [95 % CI] n |", "|---|---|---|---|---|"]
            c = changed.astype(object).where(changed.notna(), None)
            lines += [f"| {r.id} | {_fmt(r.stage)} | {r.before} | {r.after} | {_ours(r)} |"
                      for r in c.itertuples(index=False)]
        else:
            lines.append("No verdict changed.")
    return "\n".join(lines) + "\n"


def _forecast_lines(find: pd.DataFrame) -> list[str]:
    """The inconclusive findings with the samples that would decide each
    (:func:`samples_to_decide`), fewest first: which repeats a longer run should buy."""
    inc = find[find["verdict"] == "inconclusive"]
    if not len(inc):
        return []
    m = pd.to_numeric(inc["n_to_decide"], errors="coerce")
    n = pd.to_numeric(inc["n"], errors="coerce")
    inc = inc.assign(times=(m / n).where(m.notna(), math.inf)).sort_values(["times", "stage"], kind="stable")
    near = int((inc["times"] <= 2).sum())
    lines = ["", f"## What would decide the inconclusive findings ({len(inc)}; {near} within twice "
             "their samples)", "",
             "A forecast, not a verdict: the samples (of the kind *n* counts) at which the interval, "
             "around the same value with its width shrinking as 1/sqrt(n), would no longer straddle "
             "the rule or its margin; *never*: the value sits at the rule's edge (more than "
             f"{MAX_TO_DECIDE} x the samples would not decide it); *–*: the interval could not decide "
             "as it is (too few samples for its method, or no interval).", "",
             "| claim | stage | ours [95 % CI] n | rule | samples to decide | x taken |", "|---|---|---|---|---|---|"]
    for r in inc.itertuples(index=False):
        # no count: "never" where the forecast ran and found none (its note says so), "–" where
        # the finding could not be forecast (too few samples, no interval)
        k = f"{int(r.n_to_decide)}" if not _missing(r.n_to_decide) else \
            ("never" if NEVER_DECIDES in str(r.note) else "–")
        x = f"{r.times:.1f}" if math.isfinite(r.times) else "–"
        lines.append(f"| {r.id} | {_fmt(r.stage)} | {_ours(r)} | {rule_text(r.rule, r.margin)} | {k} | {x} |")
    return lines


def one_node(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of ``frame`` measured on one node (``nodes`` == 1; every row of a table without
    that column). The step and bandwidth findings compare strategies at the same P on one
    node, as the default profile measures them; runs spread over the nodes of an allocation
    (``nodes`` > 1, the paper profile's ``[1, all]``) stay in summary.csv and the figures,
    never mixed into a one-node interval."""
    if frame is None or "nodes" not in frame:
        return frame
    return frame[frame["nodes"] == 1]

