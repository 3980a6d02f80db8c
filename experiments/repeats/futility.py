"""The forecast that steers the rounds, and the futility stop.

At each look the findings' claims (judged on the rows so far) say whether each is decided and,
where not, how many samples its forecast says would decide it (:class:`Judged`, from
:func:`judged`). :func:`allot` stops the findings whose forecast lies far beyond the rounds and
seconds left (a futility stop: it ends looks early and so never makes a false verdict more
likely) and gives the rounds to those within reach, cheapest first. ``make decide`` prices its
purchases with the same forecast (:mod:`experiments.review.decide.pricing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..statistics import stats


@dataclass(frozen=True)
class Judged:
    """One finding at a look: ``decided``; ``n``, the samples (runs) its interval stands on;
    ``n_to_decide``, the claim's forecast of the samples that would decide it; ``never``: the
    forecast is that no count would (the value sits at a rule's or margin's edge). True when
    decided, so ``if judged:`` reads as a bool."""

    decided: bool
    n: int | None = None
    n_to_decide: int | None = None
    never: bool = False

    def __bool__(self) -> bool:
        return bool(self.decided)

    @property
    def forecast(self) -> bool:
        """Whether a forecast was made: an undecided finding with samples and a count or "never"
        (none where its interval cannot decide yet: too few samples for its level)."""
        return not self.decided and bool(self.n) and (self.n_to_decide is not None or self.never)


def judged(claim_list: list[dict], level: float) -> dict[str, Judged]:
    """{finding id: :class:`Judged`} for the findings of ``claim_list`` (claims judged on the rows
    so far at ``level``) that have a value: decided when the verdict is not ``inconclusive``,
    with the claim's ``n`` and forecast ``n_to_decide``. No count is "never" only where the
    interval could have decided (it holds the value and its method reaches ``level``); with
    too few samples for the level there is no forecast yet."""
    out = {}
    for c in claim_list:
        if c.get("kind") != "finding" or c.get("verdict") == "not measured":
            continue
        n, m = _count(c.get("n")), _count(c.get("n_to_decide"))
        lo, hi, v, cov = (stats.number(c.get(k)) for k in ("ci_low", "ci_high", "our_value", "ci_coverage"))
        could = (None not in (lo, hi, v) and lo - 1e-9 * abs(lo) <= v <= hi + 1e-9 * abs(hi)
                 and (cov is None or cov >= level - 1e-12))
        undecided = c["verdict"] == "inconclusive"
        out[c["id"]] = Judged(not undecided, n, m, never=bool(undecided and n and m is None and could))
    return out


def _count(x) -> int | None:
    x = stats.number(x)
    return None if x is None or x <= 0 else int(x)


def rounds_needed(j: Judged, rounds_run: int) -> int | None:
    """Rounds more that ``j``'s forecast asks for: its missing samples (``n_to_decide - n``)
    at the samples per round it gained so far (``n / rounds_run``); None for "never"."""
    if j.never or j.n_to_decide is None:
        return None
    rate = j.n / max(1, rounds_run)
    return max(1, math.ceil((j.n_to_decide - j.n) / rate - 1e-9))


# How far beyond what is left a forecast must be before a finding counts as out of reach. The
# forecast (the claim's, an interval narrowing as 1/sqrt(n)) is pessimistic for the median-type
# intervals of few samples at a Bonferroni level: they start at extreme order statistics and
# narrow faster than that. On 150 simulated loops (tests/test_repeats_rounds.py's, 6 to 20
# rounds, 4 % noise) a futility stop at 1x what is left cut the decided loops from 77 to 35 (no
# effect), 36 to 12 (a 3 % effect) and 150 to 129 (10 %); at 10x they are 72, 28 and 150, with
# 10 to 20 % fewer runs.
FUTILITY_SLACK = 10.0


@dataclass
class Reach:
    """What one look allots (:func:`allot`): ``go``, the undecided findings the next rounds run
    for, cheapest first; ``futile``, {finding: why} for those whose forecast is beyond what is
    left; ``deferred``, those within reach alone but not beside the cheaper ones."""

    go: list[str]
    futile: dict[str, str]
    deferred: list[str]


def allot(pending: dict, rounds_run: dict[str, int], configs_of: dict[str, frozenset],
          rounds_left: int, seconds_left: float, per_run_s: float, slack: float = FUTILITY_SLACK) -> Reach:
    """The futility stop and the budget's share at one look. ``pending``: {finding:
    :class:`Judged` or bool} undecided; ``rounds_run``: rounds that ran its configurations;
    ``configs_of``: the configurations it needs; ``rounds_left`` before the maximum,
    ``seconds_left`` of the budget, ``per_run_s`` seconds a run takes.

    A finding without a forecast (a plain bool) stays a reason to go on. One whose forecast is
    "never", or needs more than ``slack`` x the rounds left, or more than ``slack`` x the
    seconds the budget has left (rounds x runs of its configurations x seconds a run), is
    futile: it no longer keeps the loop going (it is still judged at the end, at the same
    level). The rest are taken cheapest first (seconds), each while the rounds that the
    findings taken so far need, over the union of their configurations, fit in ``slack`` x the
    seconds left; the others wait (deferred)."""
    go, futile, costed = [], {}, []
    union: set = set()
    for k, j in pending.items():
        if not (isinstance(j, Judged) and j.forecast):
            go.append(k)
            union |= set(configs_of[k])
            continue
        need = rounds_needed(j, rounds_run.get(k, 0))
        if need is None:
            futile[k] = (f"forecast: never, at {j.n} samples the value sits at a rule's or margin's "
                         "edge")
            continue
        cost = need * per_run_s * len(configs_of[k])
        beyond = f" (more than {slack:g} x)" if slack != 1 else ""
        if need > slack * rounds_left:
            futile[k] = (f"forecast: {j.n_to_decide} samples from {j.n}, {need} more rounds; "
                         f"{rounds_left} left before the maximum{beyond}")
        elif cost > slack * seconds_left:
            futile[k] = (f"forecast: {j.n_to_decide} samples from {j.n}, {need} more rounds, about "
                         f"{cost:.0f} s; {seconds_left:.0f} s of the budget left{beyond}")
        else:
            costed.append((cost, k, need))
    deferred, most = [], 0
    for cost, k, need in sorted(costed):
        u, m = union | set(configs_of[k]), max(most, need)
        if m * per_run_s * len(u) <= slack * seconds_left:
            go.append(k)
            union, most = u, m
        else:
            deferred.append(k)
    return Reach(go, futile, deferred)
