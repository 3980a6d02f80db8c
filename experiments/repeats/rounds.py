"""The rounds of a measuring stage: every configuration once a round, in a seeded order, with
looks that stop the rounds once the stage's findings are decided.

Hoefler and Belli (SC15) ask for as many runs as the question needs; a shared 2-core box
cannot afford that many for every configuration, and a fixed count leaves small effects
``inconclusive``. :func:`run_rounds` measures in *rounds*: each round runs every configuration
once, in an order drawn per round from a seeded generator (A B, B A, ...: drift on the box hits
every configuration alike; the order is recorded). After the first look's rounds, and then every
``step`` rounds, it *looks*: ``decide(rows, level)`` says which findings are decided on the rows
so far. It stops when every finding is decided, when the next round would overrun the time
budget (``budget_s``, estimated from the rounds so far), or at ``max_runs``.

**Looking more than once** at an interval makes a false verdict more likely. Every look and the
final verdict use intervals at the Bonferroni level over the planned looks
(:attr:`RoundsPlan.level`, :func:`experiments.repeats.levels.level`), so the chance that any
look decides falsely is at most 5 %. When the budget ends the rounds before the first look (a
slower box), the final judgement is the only look and is made at 95 %: the stop depended on the
clock, not on the data. A look at a higher level needs more samples
(:func:`experiments.statistics.stats.reachable`), so the first look waits for what the level needs
(:attr:`RoundsPlan.first_look`).

**The forecast steers the rounds**: ``decide`` may return
:class:`experiments.repeats.futility.Judged` values; at each look the futility stop
(:func:`experiments.repeats.futility.allot`) ends the findings out of reach and gives the rounds
to those within reach, cheapest first (``focus`` narrows the rounds to their configurations).

Each finding's outcome (:class:`Outcome`: runs it took, looks, why it stopped: ``decided``,
``futile``, ``budget`` or ``maximum``) goes into the stage's ``rounds.json``, which the claims
table adds to the finding's note.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, ClassVar, Collection, Sequence

import numpy as np
import pandas as pd
from pydantic import Field, ValidationInfo, field_validator

from ..settings.config import Section
from ..statistics import stats
from .futility import Judged, Reach, allot
from .levels import ALPHA, level as bonferroni

STOPS = ("decided", "futile", "budget", "maximum")


@dataclass(frozen=True)
class RoundsPlan:
    """How many runs (rounds of every configuration) a stage may run: at least
    ``min_runs``, at most ``max_runs``, within ``budget_s`` wall seconds for the loop
    (``math.inf``: no budget), looking every ``step`` rounds; ``alpha``: the chance of a false
    verdict over all looks."""

    min_runs: int
    max_runs: int
    budget_s: float = math.inf
    step: int = 1
    alpha: float = ALPHA

    def __post_init__(self):
        for name in ("min_runs", "max_runs", "step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"rounds plan: {name} = {v!r}; allowed: an integer >= 1")
        if self.max_runs < self.min_runs:
            raise ValueError(f"rounds plan: max_runs = {self.max_runs} < min_runs = "
                             f"{self.min_runs}; allowed: max_runs >= min_runs")
        if not (self.budget_s > 0):
            raise ValueError(f"rounds plan: budget_s = {self.budget_s!r}; allowed: seconds > 0 "
                             "(math.inf: no budget)")
        if not 0 < self.alpha < 1:
            raise ValueError(f"rounds plan: alpha = {self.alpha!r}; allowed: strictly between 0 and 1")

    @property
    def looks(self) -> int:
        """Looks planned: at the first look, then every ``step`` rounds up to the maximum."""
        return 1 + math.ceil((self.max_runs - self.first_look) / self.step) \
            if self.max_runs > self.first_look else 1

    @property
    def level(self) -> float:
        """The level of every look's interval: 1 - alpha / looks (Bonferroni over looks)."""
        return bonferroni(self.looks, self.alpha)

    @property
    def first_look(self) -> int:
        """Rounds before the first look: the smallest count from ``min_runs`` on at which a
        median's interval can reach the corrected level its looks need (it cannot decide
        before); ``max_runs`` where none can (one look, at the end)."""
        for n in range(self.min_runs, self.max_runs + 1):
            looks = 1 + math.ceil((self.max_runs - n) / self.step) if self.max_runs > n else 1
            if stats.reachable(n) >= bonferroni(looks, self.alpha) - 1e-12:
                return n
        return self.max_runs


@dataclass
class Outcome:
    """One finding's course: ``runs`` (rounds it was judged on), ``looks`` made for it,
    ``stopped`` (``decided``, ``futile``, ``budget`` or ``maximum``), ``level`` of its
    intervals; ``reach``: for a futile stop, why (its forecast against what was left)."""

    runs: int
    looks: int
    stopped: str
    level: float
    reach: str | None = None

    def note(self) -> str:
        """The claims table's words: "8 runs, 3 looks at 98.3 % (Bonferroni over 5 planned
        looks); stopped: decided"."""
        why = {"decided": "decided", "budget": "the stage's time budget was spent",
               "maximum": "the maximum of runs was reached",
               "futile": f"out of reach ({self.reach or 'its forecast exceeded what the loop could still buy'})"
               }[self.stopped]
        if self.looks == 0 and self.stopped == "budget":
            return (f"{self.runs} runs, judged once at the end at {self.level:.1%} (the budget "
                    f"ended the rounds before the first planned look: one look needs no correction); "
                    f"stopped: {why}")
        return (f"{self.runs} runs, {self.looks} look(s) at {self.level:.1%} (Bonferroni over the "
                f"planned looks); stopped: {why}")


@dataclass
class RoundsResult:
    """What :func:`run_rounds` measured: ``rows`` (one per run: ``repeat``, ``warmup``, ``round_order``
    (its place in its round), ``level``, and what ``run_one`` returned), ``outcomes``
    ({finding: :class:`Outcome`}), ``order`` ([(round, configuration index), ...] as run) and
    the ``plan``."""

    rows: pd.DataFrame
    outcomes: dict[str, Outcome]
    order: list[tuple[int, int]]
    plan: RoundsPlan
    seed: int
    elapsed_s: float = 0.0
    extra: dict = field(default_factory=dict)

    def notes(self) -> dict[str, str]:
        return {k: o.note() for k, o in self.outcomes.items()}


def round_order(n_configs: int, rnd: int, seed: int, leads: Collection[int] = ()) -> list[int]:
    """The order of the configurations in round ``rnd``: a permutation drawn from a generator
    seeded with (``seed``, ``rnd``), so a run's order is reproducible and recorded; the
    configurations ``leads`` open the round, in the permutation's order among themselves (the
    real runs whose hour the sleeping runs of the round are given: :mod:`experiments.workloads.hour_level`)."""
    perm = [int(i) for i in np.random.default_rng([int(seed), int(rnd)]).permutation(n_configs)]
    return [i for i in perm if i in leads] + [i for i in perm if i not in leads] if leads else perm


def run_rounds(configs: Sequence, run_one: Callable[[object, int], dict], decide: Callable[[pd.DataFrame, float], dict],
        plan: RoundsPlan, seed: int, warmup: int = 0, progress_desc: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        focus: Callable[[list[str], pd.DataFrame], Sequence[int] | None] | None = None,
        first: int = 0, runs: int | None = None, stop: Callable[[], bool] | None = None,
        leads: Collection[int] = ()) -> RoundsResult:
    """Run ``configs`` round by round (see the module docstring): ``run_one(config, repeat)``
    measures one run and returns its row (a dict); ``warmup`` rounds come first and are marked
    (``warmup`` True, never judged). ``decide(rows, level)`` (the rows so far, warm-ups
    included for the caller to leave out, as :func:`experiments.statistics.stats.samples` does) returns
    {finding: True when decided}; a finding decided at a look keeps the runs it was decided
    on. Stops when all are decided, when another round would overrun ``plan.budget_s``, or at
    ``plan.max_runs``.

    ``focus(pending, rows)``: after a look, the indices of the configurations the undecided
    findings need (None: all); the rounds that follow run only those, in the round's seeded
    order, so a few undecided findings get their runs at a fraction of a round's time. The
    rounds run are in ``order``; each narrowing is in ``extra["focus"]``.

    ``first``: the repeat index of the first round (its order drawn for that index: rounds that
    go on after earlier ones, as a purchase's do); ``runs``: at most this many runs (the last
    round cut short); ``stop()``: asked before each run, True ends the rounds there (a deadline:
    between runs, never within one). ``leads``: the configurations that open every round
    (:func:`round_order`)."""
    from ..output.progress import progress

    if not len(configs):
        raise ValueError("run_rounds: configs is empty; allowed: at least one configuration")
    rows, order = [], []
    outcomes: dict[str, Outcome] = {}
    looks = 0
    t0 = clock()
    round_s: list[float] = []
    round_n: list[int] = []   # runs in each round: a focused round runs fewer
    level = plan.level
    bar = progress(total=warmup + plan.max_runs, desc=progress_desc or "runs until decided")
    rnd = 0
    stopped = "maximum"
    active: set[int] | None = None   # None: every configuration (no focus yet)
    narrowed: list[dict] = []
    reaches: list[dict] = []
    out_of_reach: dict[str, str] = {}   # {finding: why}, at the last look that allotted
    try:
        while True:
            is_warm = rnd < warmup
            repeat = first + rnd   # the repeat index counts warm-ups, as the stages' raw tables do
            r0 = clock()
            this = [i for i in round_order(len(configs), repeat, seed, leads) if active is None or i in active]
            cut = _run_round(configs, this, run_one, rnd, repeat, is_warm, level, rows, order, runs, stop)
            round_s.append(clock() - r0)
            round_n.append(len(this))
            if cut:   # the runs asked for are made, or stop() said so: no look at a part of a round
                stopped = cut
                rnd += 1
                break
            rnd += 1
            bar.update(1)
            done = rnd - warmup
            if done < 1:
                continue
            if done >= plan.first_look and (done - plan.first_look) % plan.step == 0:
                looks += 1
                got = decide(pd.DataFrame(rows), level)
                for k, ok in got.items():
                    if k in outcomes:
                        continue
                    if ok:
                        outcomes[k] = Outcome(done, looks, "decided", level)
                pending = [k for k in got if k not in outcomes]
                if not pending:
                    stopped = "decided"
                    break
                if done < plan.max_runs and any(isinstance(got[k], Judged) and got[k].forecast
                                                   for k in pending):
                    reach = _reach(got, pending, configs, rows, order, warmup, focus, plan, done,
                                   clock() - t0, round_s, round_n)
                    out_of_reach = reach.futile
                    reaches.append({"after_round": done, "go": reach.go, "futile": reach.futile,
                                    "deferred": reach.deferred})
                    if not reach.go:
                        stopped = "futile"
                        break
                    pending = reach.go
                if focus is not None:
                    active = _narrow(focus, pending, rows, len(configs), active, narrowed, done)
            if done >= plan.max_runs:
                stopped = "maximum"
                break
            spent = clock() - t0
            # the next round's time: the recent rounds' seconds per run times the runs it will
            # have (after a focus far fewer than the full rounds before it)
            per_run = sum(round_s[-3:]) / max(1, sum(round_n[-3:]))
            nxt = per_run * (len(configs) if active is None else len(active))
            # the minimum is kept whatever the budget: a stage's fixed count is its floor
            if done >= plan.min_runs and spent + nxt > plan.budget_s:
                stopped = "budget"
                break
    finally:
        bar.close()
    df = _judge_the_rest(pd.DataFrame(rows), decide, plan, outcomes, out_of_reach, stopped, looks,
                         rnd - warmup, level)
    extra = {"focus": narrowed} if focus is not None else {}
    if reaches:
        extra["reach"] = reaches
    return RoundsResult(df, outcomes, order, plan, int(seed), clock() - t0, extra=extra)


def _run_round(configs: Sequence, this: list[int], run_one, rnd: int, repeat: int, is_warm: bool, level: float,
               rows: list[dict], order: list[tuple[int, int]], runs: int | None, stop) -> str | None:
    """One round of :func:`run_rounds`: the configurations ``this`` in turn, their rows appended
    to ``rows`` and each run to ``order``; the reason the round was cut short (``maximum``: the
    ``runs`` asked for are made; ``budget``: ``stop()`` said so), else None."""
    for pos, i in enumerate(this):
        if runs is not None and len(order) >= runs:
            return "maximum"
        if stop is not None and stop():
            return "budget"
        got = run_one(configs[i], repeat)
        for row in (got if isinstance(got, list) else [got or {}]):   # a run may give several rows
            rows.append({**row, "repeat": repeat, "warmup": is_warm, "round_order": pos, "level": level})
        order.append((rnd, i))
    return None


def _judge_the_rest(df: pd.DataFrame, decide, plan: RoundsPlan, outcomes: dict, out_of_reach: dict[str, str],
                    stopped: str, looks: int, done: int, level: float) -> pd.DataFrame:
    """After :func:`run_rounds`' last round: the findings no look decided get their
    :class:`Outcome` (in ``outcomes``) from a judgement on every round run; returns the rows,
    their level set to the single look's where the budget ended the rounds before any look."""
    if stopped == "budget" and looks == 0 and len(df):
        # the budget ended the rounds before the first planned look (a slower box): the
        # judgement below is the only look at the data, and the stop depended on the clock, not
        # on the data, so it needs no correction for looks (at the planned looks' level a
        # median of fewer rounds than the first look cannot decide anything at all)
        level = round(1 - plan.alpha, 12)
        df["level"] = level
    if stopped != "decided" and len(df):
        # the findings no look decided: judged (by the report) on every round run; when the
        # budget stopped the loop before the maximum, that judgement takes the place of the
        # looks not made, so the looks stay within the planned count
        for k in decide(df, level):
            if k not in outcomes:
                if k in out_of_reach:
                    outcomes[k] = Outcome(done, looks, "futile", level, out_of_reach[k])
                else:
                    outcomes[k] = Outcome(done, looks, stopped, level)
    return df


def _reach(got: dict, pending: list[str], configs: Sequence, rows: list[dict], order: list[tuple[int, int]],
           warmup: int, focus, plan: RoundsPlan, done: int, spent: float, round_s: list[float],
           round_n: list[int]) -> Reach:
    """:func:`allot` at a look of :func:`run_rounds`: each pending finding's configurations (``focus``
    asked for it alone; every configuration without a focus), the rounds that ran them, the
    rounds and seconds left, the recent seconds per run."""
    every = frozenset(range(len(configs)))
    configs_of = {}
    df = pd.DataFrame(rows) if focus is not None else None
    for k in pending:
        keep = focus([k], df) if focus is not None else None
        configs_of[k] = every if keep is None else frozenset(int(i) for i in keep)
    ran: dict[int, set[int]] = {}
    for rnd, i in order:
        if rnd >= warmup:
            ran.setdefault(rnd, set()).add(i)
    rounds_run = {k: sum(1 for s in ran.values() if s & configs_of[k]) for k in pending}
    per_run = sum(round_s[-3:]) / max(1, sum(round_n[-3:]))
    return allot({k: got[k] for k in pending}, rounds_run, configs_of, plan.max_runs - done,
                 plan.budget_s - spent, per_run)


def _narrow(focus, pending: list[str], rows: list[dict], n_configs: int, active: set[int] | None,
            narrowed: list[dict], done: int) -> set[int] | None:
    """The configurations the rounds after a look run: ``focus(pending, rows)``'s indices
    (None: all), checked; a change is recorded in ``narrowed``."""
    keep = focus(pending, pd.DataFrame(rows))
    if keep is not None:
        keep = {int(i) for i in keep}
        if not keep or any(not 0 <= i < n_configs for i in keep):
            raise ValueError(f"run_rounds: focus returned {sorted(keep)}; allowed: "
                             f"a non-empty set of indices in 0..{n_configs - 1}, or None")
    if keep != active:
        narrowed.append({"after_round": done, "of": n_configs, "pending": sorted(pending),
                         "configs": n_configs if keep is None else len(keep)})
    return keep


def to_json(result: RoundsResult) -> dict:
    return {"plan": {**asdict(result.plan), "looks": result.plan.looks, "level": result.plan.level,
                     "first_look": result.plan.first_look,
                     "budget_s": None if math.isinf(result.plan.budget_s) else result.plan.budget_s},
            "seed": result.seed, "elapsed_s": result.elapsed_s,
            "order": [list(o) for o in result.order],
            "findings": {k: {**asdict(o), "note": o.note()} for k, o in result.outcomes.items()},
            **result.extra}


def plan_for(runs: int, max_runs: int | None, budget_s: float | None, step: int = 1) -> RoundsPlan:
    """A stage's :class:`RoundsPlan` from its parameters: at least ``runs``; ``max_runs`` None
    (or not above ``runs``) is a fixed count of ``runs`` (one look, at the end);
    ``budget_s`` None is no budget; a look every ``step`` rounds."""
    if not max_runs or max_runs <= runs:
        return RoundsPlan(runs, runs)
    return RoundsPlan(runs, max_runs, math.inf if budget_s is None else float(budget_s), step)


class Rounds(Section):
    """The rounds' settings of a measuring stage that adds rounds while a finding is undecided,
    flat in its ``params.yaml`` section (the one model of them; a stage's settings inherit it):
    at least ``runs`` rounds, every configuration once a round; more, up to ``max_runs``
    within ``budget_s``; a look every :attr:`look_every` rounds (the stage's choice, a class
    attribute: few looks keep the Bonferroni level over looks low). A stage may give ``runs``
    another default (its field redeclared)."""

    look_every: ClassVar[int] = 1
    runs: int = Field(2, ge=1, le=50, description="rounds of every configuration, at least")
    max_runs: int | None = Field(None, ge=1, le=200, description="rounds the stage may reach while a "
                                    "finding its runs measure is undecided (experiments.repeats); "
                                    "null = runs")
    budget_s: float | None = Field(None, gt=0, description="wall seconds the rounds may take when "
                                   "adding rounds; null = no budget")

    @field_validator("max_runs")
    @classmethod
    def _not_below_repeats(cls, v, info: ValidationInfo):
        least = info.data.get("runs")
        if v is not None and least is not None and v < least:
            raise ValueError(f"max_runs = {v} is below runs = {least}; allowed: max_runs >= "
                             "runs (or null: runs)")
        return v

    def plan(self) -> RoundsPlan:
        """The stage's :class:`RoundsPlan` (:func:`plan_for`)."""
        return plan_for(self.runs, self.max_runs, self.budget_s, self.look_every)


