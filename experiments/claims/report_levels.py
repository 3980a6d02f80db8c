"""A report's findings, each judged at the level of the looks at its own data (issue 57).

The level of a look (one alpha, Bonferroni) is :mod:`experiments.repeats.levels`; a finding
judged at a look of its stage's rounds is :mod:`.looks`. This module is the report's side: a
finding's rows are looked at once by its stage's rounds (Bonferroni over the planned looks) and
once more for each ``make decide`` purchase of the configurations it compares. A report therefore
computes each finding's interval at the highest level of *the rows of its configurations*
(:func:`experiments.repeats.findings.level_of_finding`), not of all the stage's rows: a purchase
for the memory tier leaves the disk tier's findings, their intervals and verdicts as they were.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from ..statistics import stats
from ..repeats.findings import Steering, level_of_finding, of
from ..repeats.levels import level_of
from .steering import rules as declared_rules


def at_their_levels(measure: Callable[[], list], level_of_id: Callable[[str], float], default: float) -> list:
    """``measure()`` (a stage's measure function: Measured values and intervals at the level in
    force) with each finding's interval at its own level (``level_of_id``): a first pass at
    ``default`` (the level of all the rows), then one pass per other level wanted, each finding
    taken from the pass at its level."""
    with stats.corrected_level(default):
        first = measure()
    want = {m.id: level_of_id(m.id) for m in first}
    others = sorted({lv for lv in want.values() if abs(lv - default) > 1e-12})
    by_level = {}
    for lv in others:
        with stats.corrected_level(lv):
            by_level[lv] = {m.id: m for m in measure()}
    return [by_level[want[m.id]].get(m.id, m) if want[m.id] in by_level else m for m in first]


def judged_at_their_levels(stage: str, rows: pd.DataFrame, measure: Callable[[], list],
                           context: dict | None = None, rules: list[Steering] | None = None) -> list:
    """A report's measured findings of ``stage``'s ``rows``, each at its own level
    (:func:`level_of_finding`): a purchase for some configurations widens the intervals of the
    findings that compare them, and of no other (so a decided finding it did not buy for keeps
    its verdict). ``rules``: the stage's steering parts (default: from the declarations, as a
    report reads them)."""
    rules = declared_rules(stage) if rules is None else rules
    ctx = context or {}
    default = level_of(rows)
    return at_their_levels(measure, lambda i: level_of_finding(i, rows, rules, ctx) if of(i, rules) else default,
                           default)
