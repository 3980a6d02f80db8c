"""A measuring stage's findings judged at each look of its rounds: the loop's ``judge``.

The measuring loop (:mod:`experiments.repeats`) knows no rule and no verdict: a stage hands it a
``judge``, made here from the stage's measure function and its findings' steering parts (each
finding's rule and margin, from the ``claim_rules`` stage's file:
:func:`experiments.repeats.findings.steering`), and the loop calls it at each look with the
look's level. This module reads no declaration (no :mod:`.declared`, no :mod:`.steering`), so a
measuring stage depends on the rules and verdicts' code and on its steering file, never on a
quote or a statement; a report judges the same measure function at each finding's own level
(:mod:`.report_levels`).
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from ..statistics import stats
from ..repeats.findings import Steering, of, steering
from ..repeats.futility import judged
from .verdict import claim


def judge(stage: str, measure: Callable[[pd.DataFrame, dict], list], context: Callable[[pd.DataFrame], dict] | None = None,
          rules: list[Steering] | None = None) -> Callable[[pd.DataFrame, dict, float], dict]:
    """The loop's ``judge`` for ``stage``: ``measure(rows, tables)`` (the stage's measure function:
    :class:`experiments.verdicts.measured.Measured` values and intervals, computed at the level in
    force) run at the look's level; each measured finding with a steering part judged by its
    rule and margin (:func:`experiments.verdicts.verdict.claim`); {finding: Judged}. ``rules``: the
    stage's steering parts (default: the ``claim_rules`` stage's file of ``stage``,
    :func:`experiments.repeats.findings.steering`)."""
    rules = steering(stage) if rules is None else rules

    def _judge(rows: pd.DataFrame, tables: dict, level: float) -> dict:
        with stats.corrected_level(level):
            got = measure(rows, tables)
        out = []
        for m in got:
            found = of(m.id, rules)
            if found is None:
                continue
            s = found[0]
            out.append(claim(m.id, "", "", "", m.value, "", s.rule, kind="finding", interval=m.interval,
                             margin=s.margin, margin_why="as declared" if s.margin is not None else "",
                             resident_fraction=m.resident_fraction, memory_backed=m.memory_backed))
        return judged([c for c in out if c.get("our_value") is not None], level)

    return _judge
