"""A measuring stage's findings as its rounds see them: the rules and margins that judge them at
each look, and the configurations each compares.

A finding is declared once, with its paper's side, in ``experiments/claims/papers/<source>.yaml``;
the part of a declaration that steers measuring (its ``rule``, ``margin`` and ``compares``: the
configurations it compares, per measuring stage) is extracted by the ``claim_rules`` stage into
``results/claim_rules/<stage>.json`` (:mod:`experiments.claims.steering`). A measuring stage
reads that file alone, so DVC re-runs it when a rule, a margin or the configurations change,
never when a quote, a statement or a figure does.

Its values come from the stage's **measure function** (the same function its report calls, in
``<source>/findings.py``): rows so far -> :class:`experiments.verdicts.measured.Measured` values
and intervals. :func:`experiments.verdicts.looks.judge` turns that into the loop's ``judge`` (each
finding's verdict by its rule at the look's level, and its forecast: the verdicts are the claims',
so that part sits above this package); :func:`focus` into the loop's ``focus`` (the
configurations the undecided findings compare). Adding a finding to a buying stage is therefore
its declaration and its measure function; nothing here names a finding.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pandas as pd

from ..settings import paths

RULES_STAGE = "claim_rules"   # the stage that writes results/claim_rules/<stage>.json
RULES_ENV = "DLIO_CLAIM_RULES"   # another folder of them, outside a pipeline run (the unit tests')


@dataclass(frozen=True)
class Steering:
    """One finding's steering part: ``id`` (may hold ``{field}`` templates), its ``rule`` and
    ``margin``, and ``compares`` ({key: value or list of values} over the measuring stage's
    configuration keys; a string value may hold ``{field}``: the id's template fields, or a
    name of the stage's context, e.g. ``{storage_tier}``)."""

    id: str
    rule: str
    margin: float | None = None
    compares: dict[str, Any] = field(default_factory=dict)

    @property
    def pattern(self) -> re.Pattern:
        parts = re.split(r"\{(\w+)\}", self.id)
        return re.compile("".join(re.escape(x) if i % 2 == 0 else f"(?P<{x}>.+?)"
                                  for i, x in enumerate(parts)) + "$")

    def fields(self, finding: str) -> dict[str, str] | None:
        """The template fields ``finding`` fills (``{}`` for a plain id), None when it is not this."""
        m = self.pattern.match(finding)
        return None if m is None else m.groupdict()


def rules_file(stage: str):
    """``results/claim_rules/<stage>.json``; outside a pipeline run, in :data:`RULES_ENV`'s folder
    when it names one (the unit tests write the declarations' rules there once)."""
    import os
    from pathlib import Path

    from ..output.results import PIPELINE_ENV

    if os.environ.get(RULES_ENV) and not os.environ.get(PIPELINE_ENV):
        return Path(os.environ[RULES_ENV]) / f"{stage}.json"
    return paths.results_dir(RULES_STAGE) / f"{stage}.json"


def steering(stage: str) -> list[Steering]:
    """The steering parts of the findings whose ``compares`` names ``stage``, from the file the
    ``claim_rules`` stage wrote (the stage's one dependency on the declarations)."""
    f = rules_file(stage)
    if not f.exists():
        raise FileNotFoundError(f"{f} is missing: it holds the rules, margins and configurations of the "
                                f"findings that steer {stage}'s rounds; run `dvc repro {RULES_STAGE}` first")
    rows = json.loads(f.read_text())
    return [Steering(r["id"], r["rule"], r.get("margin"), r.get("compares") or {}) for r in rows]


def of(finding: str, rules: Iterable[Steering]) -> tuple[Steering, dict[str, str]] | None:
    """The steering of ``finding`` (a measured id) among ``rules``, with its template fields."""
    for s in rules:
        got = s.fields(finding)
        if got is not None:
            return s, got
    return None


def selects(s: Steering, fields: dict[str, str], context: dict[str, Any]) -> dict[str, list]:
    """``s.compares`` with its ``{field}`` values filled from the id's ``fields`` and the stage's
    ``context``: {key: the values it allows}. A value naming a field neither gives is an error."""
    out = {}
    names = {**context, **fields}
    for k, v in s.compares.items():
        vals = v if isinstance(v, list) else [v]
        filled = []
        for x in vals:
            if isinstance(x, str) and (m := re.fullmatch(r"\{(\w+)\}", x)):
                if m.group(1) not in names:
                    raise ValueError(f"finding {s.id}: compares.{k} = {x!r} names {m.group(1)!r}, which "
                                     f"neither its id nor the stage's context gives; allowed: {sorted(names)}")
                got = names[m.group(1)]
                filled += got if isinstance(got, list) else [got]
            elif isinstance(x, str) and "{" in x:
                filled.append(x.format(**names))
            else:
                filled.append(x)
        out[k] = filled
    return out


def matching(configs: list[dict], sel: dict[str, list]) -> list[int]:
    """Indices of the ``configs`` whose keys take one of the allowed values of ``sel``."""
    def same(a, b) -> bool:
        try:
            return a == b or (a is not None and b is not None and float(a) == float(b))
        except (TypeError, ValueError):
            return False
    return [i for i, c in enumerate(configs) if all(any(same(c.get(k), v) for v in vs) for k, vs in sel.items())]


def compared(finding: str, configs: list[dict], rules: list[Steering], context: dict[str, Any]) -> list[int] | None:
    """The configurations (indices into ``configs``) ``finding`` compares; None when its
    steering names none (every configuration)."""
    got = of(finding, rules)
    if got is None:
        return None
    s, fields = got
    return matching(configs, selects(s, fields, context)) if s.compares else None


def focus(stage: str, configs: list[dict], context: Callable[[pd.DataFrame], dict] | None = None,
          rules: list[Steering] | None = None) -> Callable[[list[str], pd.DataFrame], list[int] | None]:
    """The loop's ``focus`` for ``stage``: the configurations the pending findings compare
    (their declared ``compares``, filled from their ids and ``context(rows)``); None (every
    configuration) when one of them declares none."""
    rules = steering(stage) if rules is None else rules

    def _focus(pending: list[str], rows: pd.DataFrame) -> list[int] | None:
        ctx = context(rows) if context else {}
        keep: set[int] = set()
        for k in pending:
            idx = compared(k, configs, rules, ctx)
            if idx is None:
                return None
            keep |= set(idx)
        return sorted(keep) or None

    return _focus


def rows_matching(rows: pd.DataFrame, sel: dict[str, list]) -> pd.DataFrame:
    """The rows (a stage's rows, one per run) whose keys take one of the values of ``sel``
    (:func:`selects`); every row for an empty selection."""
    keep = pd.Series(True, index=rows.index)
    for k, vals in sel.items():
        if k not in rows:
            continue
        col = rows[k]
        ok = pd.Series(False, index=rows.index)
        for v in vals:
            try:
                ok |= (col == v) | (pd.to_numeric(col, errors="coerce") == float(v))
            except (TypeError, ValueError):
                ok |= col == v
        keep &= ok
    return rows[keep]


def level_of_finding(finding: str, rows: pd.DataFrame, rules: list[Steering], context: dict) -> float:
    """The level ``finding`` is judged at: the highest level of the rows of the configurations it
    compares (:func:`rows_matching` of its ``compares``): one look per purchase of *its* data,
    whatever else was bought; the level of all the rows for a finding that declares none."""
    from .levels import level_of

    got = of(finding, rules)
    if got is None or not got[0].compares:
        return level_of(rows)
    mine = rows_matching(rows, selects(got[0], got[1], context))
    return level_of(mine if len(mine) else rows)
