"""``make decide``'s prices: what more runs of each inconclusive finding would cost, and which
purchases fit the reviewer's minutes.

A finding is priced from its claim's forecast (``n_to_decide`` runs, scaled to the level its
next look needs), the runs per round it gained so far, and the configurations it compares in
each measuring stage (its declaration's ``compares``, :mod:`experiments.repeats.findings`;
without one, every configuration of every buying stage its report reads), at the seconds each
of those configurations' runs took (``run_s`` of its rows). :func:`take` then buys findings
cheapest first, across stages, while the purchases so far and it fit the minutes; findings
that share configurations share their rounds.

A purchase is a look at every finding whose configurations it adds to, bought for or not: such
a finding is judged at the raised level, which the runs of its configurations that were not
bought may not reach (a median's interval of 6 runs covers at most 96.9 %; 97.5 % needs 7).
Each purchase's price therefore includes its **top-up** (:func:`top_up`): the runs that leave
every finding sharing a bought configuration, and every finding without a declared comparison
in that stage, no further from its level's reach than it was.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pandas as pd

from ...settings import paths
from ...claims.steering import rules as declared_rules
from ...repeats.findings import compared, of
from ...repeats.futility import Judged, judged, rounds_needed
from ...repeats.levels import level as bonferroni
from ...repeats.levels import level_of
from ...repeats.purchases import FIRST, key_of, own_looks
from ...repeats.stage import ROUNDS_FILE

NOT_MEASURED_HERE = "its report reads no measuring stage that can buy runs"


@dataclass
class StageRows:
    """A buying stage's rows as decide prices them: ``keys``, its ``configs`` (dicts, first-run
    order), each configuration's seconds per run, its ``rows`` (warm-ups left out), the
    ``context`` its rounds recorded (named values of ``compares``) and ``after``: the seconds a
    purchase adds outside the runs (the stage's own start-up and writing)."""

    stage: str
    keys: list[str]
    configs: list[dict]
    seconds: list[float]
    rows: pd.DataFrame
    context: dict
    after: float
    # the configurations each finding read from these rows compares (indices; None: every one,
    # a finding without a declared comparison here): whose levels a purchase raises
    findings: list[set[int] | None] = field(default_factory=list)
    # the stages that read its results and re-run after a purchase: {stage: seconds it took last}
    readers: dict[str, float] = field(default_factory=dict)

    def __post_init__(self):
        # per configuration: its runs, the level its rows are judged at, the purchases that added to it
        own = own_looks(self.rows)
        by = self.rows.assign(_k=[key_of(r, self.keys) for r in self.rows[self.keys].itertuples(index=False)])
        groups = dict(tuple(by.groupby("_k", sort=False))) if len(by) else {}
        self.own = own
        self.runs, self.level_now, self.purchases = [], [], []
        for c in self.configs:
            g = groups.get(key_of(c, self.keys))
            if g is None:
                self.runs.append(0), self.level_now.append(bonferroni(own)), self.purchases.append(0)
                continue
            self.runs.append(int(g["repeat"].nunique()) if "repeat" in g else len(g))
            self.level_now.append(level_of(g))
            self.purchases.append(int(g.loc[g["made_by"] != FIRST, "made_by"].nunique()) if "made_by" in g else 0)

    def level_after(self, i: int) -> float:
        """The level configuration ``i``'s findings are judged at once one more purchase adds to it."""
        return bonferroni(self.own + self.purchases[i] + 1)


@dataclass
class Priced:
    """One finding's price: its forecast (``judged``, at the next look's level), the rounds it
    needs (None: never), and per stage the configurations it compares (indices into that
    stage's ``configs``)."""

    finding: str
    judged: Judged
    rounds: int | None
    configs: dict[str, list[int]]

    def words(self, stages: dict[str, StageRows]) -> str:
        n = sum(len(v) for v in self.configs.values())
        return (f"{self.judged.n} -> {self.judged.n_to_decide} runs: {self.rounds} round(s) of {n} "
                f"configuration(s), ~{runs_seconds(self, stages):.0f} s")


@dataclass
class Offer:
    """One stage's purchase: the findings it is for, the configurations (dicts of the stage's
    key columns), the runs, the top-up and the seconds they should take."""

    stage: str
    findings: list[str]
    configs: list[dict]
    runs: int
    seconds: float
    costs: dict[str, str] = field(default_factory=dict)   # finding: its forecast's price, in words
    top_up: list[dict] = field(default_factory=list)      # configurations sharing a finding (:func:`top_up`)
    top_up_runs: int = 0                                  # runs each of them gets

    @property
    def planned(self) -> int:
        """The runs this purchase makes: its rounds and its top-up."""
        return self.runs + self.top_up_runs * len(self.top_up)


@dataclass
class Shopping:
    """A decide run's plan: the ``offers``, every inconclusive finding not bought with why
    (``skipped``) and the seconds planned."""

    offers: list[Offer] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def stage_rows(stage: str, overhead: float) -> StageRows | None:
    """A buying stage's rows from its results folder (None when it has none, or no
    ``rounds.json``: it has not run through the measuring-stage interface)."""
    d = paths.results_dir(stage)
    f = d / ROUNDS_FILE
    if not f.exists():
        return None
    course = json.loads(f.read_text())
    keys, name = course.get("keys"), course.get("rows_file", "raw.parquet")
    if not keys or not (d / name).exists():
        return None
    rows = pd.read_parquet(d / name) if name.endswith(".parquet") else pd.read_csv(d / name)
    rows = rows[~rows["warmup"].astype(bool)] if "warmup" in rows else rows
    if not len(rows):
        return None
    cfgs = list(dict.fromkeys(key_of(r, keys) for r in rows[keys].itertuples(index=False)))
    per = rows.assign(_k=[key_of(r, keys) for r in rows[keys].itertuples(index=False)])
    fallback = float(course.get("elapsed_s") or 0) / max(1, len(course.get("order") or [])) or 1.0
    # a run's seconds: the sum over its rows (the blog's cold and warm pass share their run's
    # wall time out), the median over each configuration's runs
    sec = {}
    if "run_s" in per:
        runs_s = per.groupby(["_k", "run"], sort=False)["run_s"].sum() if "run" in per else per.set_index("_k")["run_s"]
        sec = runs_s.groupby(level=0, sort=False).median().to_dict()
    return StageRows(stage, list(keys), [dict(zip(keys, c)) for c in cfgs],
                     [float(sec.get(c, fallback)) for c in cfgs], rows, course.get("context") or {}, overhead)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def _least_n(level: float) -> int:
    """The fewest samples a median's interval needs to reach ``level``."""
    from ...statistics.stats import reachable

    return next(k for k in range(2, 10_000) if reachable(k) >= level - 1e-12)


def next_level(s: StageRows, idx: list[int]) -> tuple[float, float]:
    """(the level of the rows of configurations ``idx`` now, the level their next purchase is
    judged at): Bonferroni over the stage's own looks and one per purchase of them so far, plus one."""
    return max(s.level_now[i] for i in idx), max(s.level_after(i) for i in idx)


def _shortfall(runs: int, at: float) -> int:
    """The runs a configuration with ``runs`` lacks for a median's interval at level ``at``."""
    return max(0, _least_n(at) - runs)


def top_up(s: StageRows, union: set[int]) -> tuple[list[int], int]:
    """The configurations a purchase of ``union`` (indices) must also add runs to, and the runs
    each: a finding that compares a bought configuration (or every finding without a declared
    comparison here, :attr:`StageRows.findings` None) is judged at the raised level; each of its
    other configurations gets the runs that keep it as near that level's reach as it was at its
    own (6 runs at 95 % lack none; at 97.5 % they lack 1, so they get 1). A configuration so
    topped up is bought too and raises its own findings' level: repeated until none is added."""
    raised, extra = set(union), {}
    while True:
        at = max(s.level_after(i) for i in raised)
        new = {}
        for f in s.findings:
            f = set(range(len(s.configs))) if f is None else f
            if not f & raised:
                continue
            for y in f - raised:
                lack = _shortfall(s.runs[y], at) - _shortfall(s.runs[y], s.level_now[y])
                if lack > 0:
                    new[y] = max(new.get(y, 0), lack)
        if not new:
            break
        raised |= set(new)
        extra |= new
    return sorted(extra), max(extra.values(), default=0)


def price(claim: dict, stages: dict[str, StageRows], rules: dict[str, list], reads: list[str]) -> Priced | str:
    """``claim`` (a row of the claims table, inconclusive) priced, or why it cannot be: its
    configurations per stage (its ``compares`` in ``rules``; else every configuration of the
    buying ``reads``), its forecast scaled to the next look's level, the rounds that asks."""
    configs: dict[str, list[int]] = {}
    declared = [st for st in stages if of(claim["id"], rules.get(st, [])) is not None]
    for st in declared or [r for r in reads if r in stages]:
        s = stages[st]
        idx = compared(claim["id"], s.configs, rules.get(st, []), s.context)
        idx = list(range(len(s.configs))) if idx is None else idx
        if idx:
            configs[st] = idx
    if not configs:
        return NOT_MEASURED_HERE
    now, nxt = max((next_level(stages[st], i) for st, i in configs.items()), key=lambda x: x[1])
    j = judged([claim], now).get(claim["id"])
    if j is None or j.n is None:
        return "no runs to forecast from"
    grow = (_z(nxt) / _z(now)) ** 2   # the new look's wider intervals need more runs
    need = None if j.n_to_decide is None else math.ceil(j.n_to_decide * grow)
    if not j.forecast or need is None and not j.never:
        # no interval yet, or one too short for its level: at least what a median's interval needs
        need = max(j.n + 1, _least_n(nxt))
    j = Judged(False, j.n, need, j.never)
    ran = min(min(stages[st].runs[i] for i in idx) for st, idx in configs.items())
    return Priced(claim["id"], j, rounds_needed(j, max(1, ran)), configs)


def runs_seconds(p: Priced, stages: dict[str, StageRows]) -> float:
    """The runs' seconds of ``p`` alone: its rounds over its configurations in every stage, and
    their top-up."""
    return sum(_runs_s(stages[st], set(idx), p.rounds or 0) for st, idx in p.configs.items())


def _runs_s(s: StageRows, union: set[int], rounds: int, up: tuple[list[int], int] | None = None) -> float:
    """The seconds of ``rounds`` rounds over ``union`` in stage ``s`` and of its top-up (``up``:
    :func:`top_up` of ``union``, computed here when not given)."""
    idx, each = top_up(s, union) if up is None else up
    return rounds * sum(s.seconds[i] for i in union) + each * sum(s.seconds[i] for i in idx)


def total(chosen: list[Priced], stages: dict[str, StageRows], claims_s: float) -> float:
    """The seconds of buying ``chosen`` together: per stage, the most rounds any of them needs
    over the union of their configurations there, its top-up (:func:`top_up`), the stage's
    ``after``; once each, the stages that read theirs and re-run (a workload's fits, sleep and
    traced runs) and the claims table."""
    if not chosen:
        return 0.0
    bought = {st for p in chosen for st in p.configs}
    out = claims_s
    for st in bought:
        mine = [p for p in chosen if st in p.configs]
        out += _runs_s(stages[st], set().union(*(p.configs[st] for p in mine)), max(p.rounds for p in mine))
        out += stages[st].after
    again = {r: t for st in bought for r, t in stages[st].readers.items() if r not in bought}
    return out + sum(again.values())


def take(priced: list[Priced], stages: dict[str, StageRows], seconds: float, claims_s: float,
         skipped: dict) -> list[Priced]:
    """The findings bought within ``seconds``: each priced alone, taken cheapest first across
    stages while the purchase so far and it fit; the rest go to ``skipped`` with why."""
    chosen: list[Priced] = []
    alone = []
    for p in priced:
        if p.rounds is None:
            skipped[p.finding] = f"forecast: never, at {p.judged.n} runs the value sits at a rule's or margin's edge"
        else:
            alone.append((total([p], stages, claims_s), p.finding, p))
    for cost, _, p in sorted(alone, key=lambda x: (x[0], x[1])):
        if total(chosen + [p], stages, claims_s) <= seconds:
            chosen.append(p)
        elif cost > seconds:
            skipped[p.finding] = (f"forecast: {p.judged.n_to_decide} runs from {p.judged.n}, {p.rounds} more "
                                  f"rounds, about {cost:.0f} s with the reports; the minutes hold {seconds:.0f} s")
        else:
            skipped[p.finding] = "within reach alone, not beside the cheaper ones in these minutes"
    return chosen


def offers(chosen: list[Priced], stages: dict[str, StageRows]) -> list[Offer]:
    """The purchases of ``chosen``, one per stage: the union of their configurations there, the
    most rounds any of them needs."""
    out = []
    for st in dict.fromkeys(st for p in chosen for st in p.configs):
        mine = [p for p in chosen if st in p.configs]
        union = sorted(set().union(*(p.configs[st] for p in mine)))
        rounds = max(p.rounds for p in mine)
        s = stages[st]
        up = top_up(s, set(union))
        out.append(Offer(st, [p.finding for p in mine], [s.configs[i] for i in union], rounds * len(union),
                         _runs_s(s, set(union), rounds, up), {p.finding: p.words(stages) for p in mine},
                         [s.configs[i] for i in up[0]], up[1]))
    return out


def read_by(table: pd.DataFrame, stages: dict[str, StageRows], rules: dict[str, list],
            reads: dict[str, list[str]]) -> None:
    """Each stage's :attr:`StageRows.findings` from ``table`` (a claims table): the measured
    findings of the reports that read it, each as the configurations its declaration compares
    there, or None (every configuration) for one declared in no buying stage."""
    declared_anywhere = lambda i: any(of(i, rules.get(st, [])) is not None for st in stages)  # noqa: E731
    rows = table[(table["kind"] == "finding") & (table["verdict"] != "not measured")] if len(table) else table
    for st, s in stages.items():
        s.findings = []
        for c in rows.to_dict("records"):
            if st not in reads.get(c.get("stage"), []):
                continue
            if of(c["id"], rules.get(st, [])) is not None:
                idx = compared(c["id"], s.configs, rules[st], s.context)
                if idx:
                    s.findings.append(set(idx))
            elif not declared_anywhere(c["id"]):
                s.findings.append(None)


def rules_of(stages) -> dict[str, list]:
    """{stage: its findings' steering parts}, from the declarations as they are now
    (:func:`experiments.claims.steering.rules`: what the ``claim_rules`` stage writes)."""
    return {st: declared_rules(st) for st in stages}


MIN_SHARE_S = 30.0   # the least share a stage's bought runs get (:func:`shares`)


def shares(offers: list[Offer], planned_s: float, minutes_s: float) -> dict[str, float]:
    """{stage: the seconds its bought runs may take} (:data:`experiments.repeats.purchases.SHARES_ENV`):
    each offer's priced seconds stretched by the minutes over the plan's seconds (at least 1),
    so that a box slower than the prices cuts every stage's runs alike, and a stage that runs
    faster than priced leaves its seconds to none (the plan fits the minutes without them).
    A share is at least :data:`MIN_SHARE_S`: runs priced at a few seconds (a fast stage, or one
    whose rows lack ``run_s``) are priced too coarsely to be cut on them."""
    stretch = max(1.0, minutes_s / planned_s) if planned_s > 0 else 1.0
    return {o.stage: round(max(MIN_SHARE_S, o.seconds * stretch), 1) for o in offers}
