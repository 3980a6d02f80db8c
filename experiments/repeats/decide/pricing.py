"""``make decide``'s prices: what more runs of each inconclusive finding would cost, and which
purchases fit the reviewer's minutes.

A finding is priced from its claim's forecast (``n_to_decide`` runs, scaled to the level its
next look needs), the runs per round it gained so far, and the configurations it compares in
each measuring stage (its declaration's ``compares``, :mod:`experiments.repeats.findings`;
without one, every configuration of every buying stage its report reads), at the seconds each
of those configurations' runs took (``run_s`` of its rows). :func:`take` then buys findings
cheapest first, across stages, while the purchases so far and it fit the minutes; findings
that share configurations share their rounds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pandas as pd

from ... import paths
from ..findings import compared, of
from ..futility import Judged, judged, rounds_needed
from ..levels import level as bonferroni
from ..levels import level_of
from ..purchases import FIRST, key_of, own_looks
from ..stage import ROUNDS_FILE

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
    key columns), the runs and the seconds they should take."""

    stage: str
    findings: list[str]
    configs: list[dict]
    runs: int
    seconds: float
    costs: dict[str, str] = field(default_factory=dict)   # finding: its forecast's price, in words


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
    sec = (per.groupby("_k")["run_s"].median() if "run_s" in per else pd.Series(dtype=float)).to_dict()
    return StageRows(stage, list(keys), [dict(zip(keys, c)) for c in cfgs],
                     [float(sec.get(c, fallback)) for c in cfgs], rows, course.get("context") or {}, overhead)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def _least_n(level: float) -> int:
    """The fewest samples a median's interval needs to reach ``level``."""
    from ...stats import reachable

    return next(k for k in range(2, 10_000) if reachable(k) >= level - 1e-12)


def next_level(s: StageRows, idx: list[int]) -> tuple[float, float]:
    """(the level of the rows of configurations ``idx`` now, the level their next purchase is
    judged at): Bonferroni over the stage's own looks and one per purchase of them so far, plus one."""
    want = {key_of(s.configs[i], s.keys) for i in idx}
    sel = s.rows[[key_of(r, s.keys) in want for r in s.rows[s.keys].itertuples(index=False)]]
    now = level_of(sel)
    bought = int(sel.loc[sel["made_by"] != FIRST, "made_by"].nunique()) if "made_by" in sel else 0
    return now, bonferroni(own_looks(s.rows) + bought + 1)


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
    ran = min(int(stages[st].rows.loc[[key_of(r, stages[st].keys) in {key_of(stages[st].configs[i], stages[st].keys)
                                                                      for i in idx} for r in
                                       stages[st].rows[stages[st].keys].itertuples(index=False)], "repeat"].nunique())
              for st, idx in configs.items())
    return Priced(claim["id"], j, rounds_needed(j, max(1, ran)), configs)


def runs_seconds(p: Priced, stages: dict[str, StageRows]) -> float:
    """The runs' seconds of ``p`` alone: its rounds over its configurations in every stage."""
    return (p.rounds or 0) * sum(stages[st].seconds[i] for st, idx in p.configs.items() for i in idx)


def total(chosen: list[Priced], stages: dict[str, StageRows], claims_s: float) -> float:
    """The seconds of buying ``chosen`` together: per stage, the most rounds any of them needs
    over the union of their configurations there, the stage's ``after``; the claims table once."""
    if not chosen:
        return 0.0
    out = claims_s
    for st in {st for p in chosen for st in p.configs}:
        mine = [p for p in chosen if st in p.configs]
        union = set().union(*(p.configs[st] for p in mine))
        out += max(p.rounds for p in mine) * sum(stages[st].seconds[i] for i in union) + stages[st].after
    return out


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
        out.append(Offer(st, [p.finding for p in mine], [s.configs[i] for i in union], rounds * len(union),
                         rounds * sum(s.seconds[i] for i in union), {p.finding: p.words(stages) for p in mine}))
    return out


def rules_of(stages) -> dict[str, list]:
    """{stage: its findings' steering parts}, from the declarations as they are now
    (:func:`experiments.claims.steering.rules`: what the ``claim_rules`` stage writes)."""
    from ...claims.steering import rules

    return {st: rules(st) for st in stages}
