"""The rule language of a claim: a direction rule on our value, a magnitude rule on ours / paper,
the margin of no material effect, and the forecast of the samples that would decide a finding.

    "> 1.5"   ">= 0.9"   "< 1"   "<= 0.1"   "within 15% of 112"   "between 0.8 and 1.2"
    "within 2x"   "within 25%"     (magnitude: ours / paper)

:func:`_decide` judges an interval against a rule and its margin; :mod:`.verdict` turns that
into a claim's verdict.
"""

from __future__ import annotations

import math
import operator
import re

from ..statistics.stats import Interval

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



def _decide(test: _Rule, band: tuple[float, float] | None, lo: float,
            hi: float) -> tuple[bool | None, bool, bool]:
    """(holds, negligible, short) of a finding's interval [lo, hi]: ``negligible`` when the
    whole interval lies in the margin's ``band`` (fails); else the rule on the interval
    (None: it straddles), and ``short`` when a straddling interval ends short of the margin's
    edge on the statement's side (fails: the effect the statement means is ruled out). With a
    band, holds needs the whole interval past the band's far edge on the statement's side; one
    on that side of the threshold that still reaches into the band is None (undecided), so
    that no narrower interval can turn a holds into a fails."""
    negligible = bool(band and band[0] <= lo and hi <= band[1])
    holds = False if negligible else test.on_interval(lo, hi)
    short = False
    if holds is None and band and _short_of_margin(test, band, lo, hi):
        holds, short = False, True
    if holds and band and _reaches_into_band(test, band, lo, hi):
        # on the claimed side of X but not past the band's far edge: a narrower interval
        # around a value in the band would be negligible (a fail), so this one is not a
        # decision yet; holds never turns into fails as samples are added
        holds = None
    return holds, negligible, short


def _reaches_into_band(test: _Rule, band: tuple[float, float], lo: float, hi: float) -> bool:
    """Whether an interval that satisfies a one-sided rule still reaches into the margin's
    band (``> X``: its low end at most X + d; ``< X``: its high end at least X - d): the
    effect is in the statement's direction, but whether it is as large as the margin is open."""
    if math.isinf(test.upper) and not math.isinf(test.lower):
        return lo <= band[1]
    if math.isinf(test.lower) and not math.isinf(test.upper):
        return hi >= band[0]
    return False


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


def _min_n(interval: Interval) -> int | None:
    """Samples an interval's method needs to reach its level: what its method says
    (``Interval.needs``, from the simulated coverage table; None: no simulated count reaches
    it), else the median-type bound (:func:`experiments.statistics.stats.reachable`)."""
    from ..statistics.stats import reachable

    if interval.simulated_at is not None:
        return interval.needs
    return next(k for k in range(2, 1000) if reachable(k) >= interval.level - 1e-12)


def _margin_words(rule: _Rule, m: float) -> str:
    """A margin as the table says it: "5 %" of a non-zero threshold, "±0.01" around 0."""
    return f"{m * 100:.3g} %" if rule.threshold else f"±{m:.3g}"


def rule_text(rule: str, margin) -> str:
    """A direction rule with its margin beside it, as the claims table shows it:
    "> 1 (margin 5 %)"; the rule alone when it has none."""
    if _missing(margin) or not margin:
        return rule
    return f"{rule} (margin {_margin_words(_parse(rule), float(margin))})"

