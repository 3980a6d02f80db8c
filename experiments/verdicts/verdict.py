"""A claim's verdict, computed from our value, its interval and the declared rule
(:func:`claim`); never typed in."""

from __future__ import annotations

import math

from ..host.cache import COLD_LIMIT  # a run with more of its data set resident in the page cache is not cold
from ..statistics.stats import LEVEL, MIN_N, Interval
from .rules import (_decide, _margin_words, _min_n, _missing, _parse, _parse_magnitude,
                    _to_decide_words, default_margin, samples_to_decide)

KINDS = ("finding", "check")
VERDICTS = ("holds", "direction only", "inconclusive", "fails", "not measured", "not comparable")
# a comparison of two sides whose reads came from different places (the device audit: one from
# the device, the other from the page cache): shown with its value, never judged
NOT_COMPARABLE = "not comparable"
# stated: the paper says it in words or numbers; implied: we read it from the paper's figures or
# argument; extension: a configuration the paper did not run (no paper value).
BASES = ("stated", "implied", "extension")
COLUMNS = ["id", "kind", "basis", "source", "figure", "statement", "paper_value", "our_value",
           "ci_low", "ci_high", "n", "n_to_decide", "ci_method", "ci_coverage", "unit", "ratio", "rule", "margin", "negligible",
           "holds", "magnitude",
           "magnitude_holds", "verdict", "cold", "resident_fraction", "memory_backed", "note"]
NO_INTERVAL = "no interval; a point value alone does not decide"


def claim(id: str, source: str, figure: str, statement: str, our_value, unit: str, rule: str,
          paper_value=None, note: str = "", why_not: str = "", *, kind: str,
          magnitude: str | None = None, resident_fraction: float | None = None,
          memory_backed: bool = False, interval: Interval | None = None,
          basis: str | None = None, margin: float | None = None, margin_why: str = "",
          not_comparable: str = "") -> dict:
    """One claim with its verdicts computed from ``our_value`` and its ``interval``.

    ``kind``: ``finding`` (a paper's result, reproduced here or not) or ``check`` (a property of
    our own generators, metric or tools, which the code was built to satisfy). ``rule`` decides
    the direction (the effect exists here); for a finding it is judged on ``interval`` (a
    :class:`experiments.statistics.stats.Interval` of our value, same unit): ``holds`` when the whole
    interval satisfies the rule (past the margin's edge, below), ``fails`` when none of it
    does, ``inconclusive`` when it straddles (or reaches into the margin); with no interval
    (or one sample, or NaN bounds) a measured finding is ``inconclusive``. A check is judged on the point (an interval given is shown).
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
    (:attr:`experiments.statistics.stats.Interval.enough`: e.g. a bootstrap of 4 runs) decides
    nothing: ``inconclusive``, and the note says how many samples it needs.

    ``not_comparable`` (a finding comparing two sides' throughputs or latencies): where each
    side read from when they differ ("real read from the page cache in 3 passes, DLIO from the
    device in 3"): the two figures are not of the same thing (one the storage's, one the
    memory's), so a measured value is shown but not judged: the verdict is ``not comparable``
    and the note starts with those words.
    """
    test, dflt = _validated(id, kind, basis, paper_value, interval, rule, margin, margin_why)
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
    unlike = bool(not_comparable) and kind == "finding" and value is not None
    if unlike:
        holds, negligible, short, to_decide = None, None, False, None
    if value is None:
        verdict = "not measured"
    elif unlike:
        verdict = NOT_COMPARABLE
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
    parts = _note_parts(note, why_not, kind, verdict, value, interval, has_ci, outside, too_few, n, rule,
                        band, to_decide, negligible, short, holds, test, m, mag, ratio, magnitude,
                        margin, dflt, margin_why)
    if unlike:
        parts.insert(0, f"{NOT_COMPARABLE}: {not_comparable}: one side's figure is the storage's, the "
                        "other's the page cache's, so their ratio is not judged")
    if cold is False:
        parts.append(f"not a cold run: {rf:.0%} of the data set was in the page cache "
                     "after eviction")
    if memory_backed:
        parts.append("memory-backed tier (tmpfs): its data cannot be evicted, so this is not a "
                     "cold-cache measurement")
    if kind == "finding" and has_ci and abs(interval.level - LEVEL) > 1e-9:
        parts.append(f"interval at {interval.level:.2%} (Bonferroni over {max(1, round((1 - LEVEL) / (1 - interval.level)))} looks at its "
                     "runs: its stage's rounds and any make decide purchases of its configurations)")
    ci = interval if interval is not None else None
    # one interval, one verdict (issue 66): the interval shown is the one that decided; one whose
    # method falls short of its level decided nothing and is only in the note (a value outside
    # its own interval stays shown: a stage's bug, which the smoke tests look for)
    shown = ci is not None and ci.ok and not (kind == "finding" and too_few)
    return {"id": id, "kind": kind, "basis": basis, "source": source, "figure": figure,
            "statement": statement, "paper_value": paper_value, "our_value": value,
            "ci_low": ci.low if shown else None, "ci_high": ci.high if shown else None,
            "n": n, "n_to_decide": to_decide, "ci_method": ci.method if ci else None,
            "ci_coverage": ci.coverage if ci and ci.ok else None, "unit": unit, "ratio": ratio,
            "rule": rule, "margin": m, "negligible": negligible,
            "holds": holds, "magnitude": magnitude, "magnitude_holds": None if unlike else mag,
            "verdict": verdict, "cold": cold, "resident_fraction": rf,
            "memory_backed": bool(memory_backed), "note": "; ".join(parts)}


def _validated(id, kind, basis, paper_value, interval, rule, margin, margin_why):
    """The parsed rule and its default margin, after checking :func:`claim`'s arguments (a
    ValueError names the claim, the argument, its value and what is allowed)."""
    if kind not in KINDS:
        raise ValueError(f"claim {id!r}: kind = {kind!r}; allowed: {', '.join(KINDS)}")
    if basis is not None and basis not in BASES:
        raise ValueError(f"claim {id!r}: basis = {basis!r}; allowed: {', '.join(BASES)} (or None)")
    if basis == "extension" and paper_value is not None:
        raise ValueError(f"claim {id!r}: basis = 'extension' with paper_value = {paper_value!r}; "
                         "allowed: no paper value for a configuration the paper did not run")
    if interval is not None and not isinstance(interval, Interval):
        raise ValueError(f"claim {id!r}: interval = {interval!r}; allowed: an "
                         "experiments.statistics.stats.Interval or None")
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
    return test, dflt


def _note_parts(note, why_not, kind, verdict, value, interval, has_ci, outside, too_few, n, rule, band,
                to_decide, negligible, short, holds, test, m, mag, ratio, magnitude, margin, dflt,
                margin_why) -> list[str]:
    """The note of a claim: the stage's own, then why the verdict is what it is (no interval,
    too few samples, a straddle and its forecast, a negligible effect, a failed rule, a
    magnitude outside its tolerance, the host's reason, a margin other than the default)."""
    parts = [note] if note else []
    if value is None:
        parts.append("not measured on this run: " + (why_not or "(the stage gave no reason)"))
    else:
        if verdict == "inconclusive" and not has_ci:
            # why, in runs (issue 64: every inconclusive row says what would decide it)
            parts.append(f"n = {n or 1}: {NO_INTERVAL}: an interval needs at least 2 independent samples, "
                         f"a median's 95 % interval {MIN_N}")
        elif verdict == "inconclusive" and outside:
            parts.append(f"our value {value:.4g} lies outside its own interval [{interval.low:.4g}, "
                         f"{interval.high:.4g}]: they come from different computations, so neither "
                         "decides")
        elif verdict == "inconclusive" and too_few:
            need = _min_n(interval)
            parts.append(f"n = {n}: {interval.method} covers at most {interval.coverage:.1%}, short of "
                         f"{interval.level:.2%}; its interval [{interval.low:.4g}, {interval.high:.4g}] "
                         "decides nothing and is not shown as the finding's ("
                         + (f"at least {need} independent samples are needed)" if need else
                            "no simulated count of runs reaches it)"))
        elif verdict == "inconclusive" and band and test.on_interval(interval.low, interval.high):
            parts.append(f"the interval [{interval.low:.4g}, {interval.high:.4g}] satisfies the rule "
                         f"'{rule}' but reaches into the margin [{band[0]:.4g}, {band[1]:.4g}]: the "
                         f"direction is shown, an effect of at least {_margin_words(test, m)} is not "
                         "(a narrower interval could still show it negligible)")
            parts.append(_to_decide_words(to_decide, n))
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
    return parts


def disagreements(rows) -> list[dict]:
    """The findings of a claims table (``claims.csv`` rows, or :func:`claim` dicts) whose verdict is
    not what their shown interval decides (issue 66, one interval, one verdict): e.g. one that
    says ``inconclusive`` while [ci_low, ci_high] lies wholly on one side of its rule and margin,
    or one that holds on an interval that straddles. Each: id, verdict, the interval, and what it
    decides. Findings without an interval shown, checks and ``not measured`` rows are left out."""
    out = []
    for r in (rows.to_dict("records") if hasattr(rows, "to_dict") else rows):
        lo, hi = r.get("ci_low"), r.get("ci_high")
        if r.get("kind") != "finding" or r.get("verdict") == "not measured" or _missing(lo) or _missing(hi):
            continue
        test = _parse(r["rule"])
        m = r.get("margin")
        holds, _, _ = _decide(test, test.band(None if _missing(m) else float(m)), float(lo), float(hi))
        says = "inconclusive" if holds is None else ("holds" if holds else "fails")
        shown = "holds" if r["verdict"] == "direction only" else r["verdict"]
        if says != shown:
            out.append({"id": r.get("id"), "verdict": r["verdict"], "ci_low": float(lo), "ci_high": float(hi),
                        "rule": r["rule"], "margin": m, "interval_decides": says})
    return out
