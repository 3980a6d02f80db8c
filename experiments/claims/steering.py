"""The part of the declarations that steers measuring: each finding's rule, margin and the
configurations it compares, per measuring stage (``results/claim_rules/<stage>.json``).

A measuring stage's rounds stop when its findings are decided, and ``make decide`` buys the
configurations a finding compares, so a measuring stage depends on these three fields of its
findings' declarations, and on nothing else in them: the ``claim_rules`` stage writes them out,
one file per measuring stage, and each measuring stage lists its file among its DVC deps. When
a quote, a statement or a paper value changes, ``claim_rules`` runs again and writes the same
bytes, so DVC re-runs no measuring stage; when a rule, a margin or ``compares`` changes, the
file of the stage it steers changes and that stage runs again.
"""

from __future__ import annotations

from pathlib import Path

from ..repeats.findings import Steering
from .declared import sources


def extract(stage: str) -> list[dict]:
    """The steering part of every finding whose ``compares`` names measuring stage ``stage``, in
    declaration order: ``id``, ``rule``, ``margin``, ``compares`` (that stage's selection)."""
    return [{"id": d.id, "rule": d.rule, "margin": d.margin, "compares": d.compares[stage]}
            for s in sources() for d in s.claims
            if d.kind == "finding" and d.compares and stage in d.compares]


def rules(stage: str) -> list:
    """:func:`extract` of ``stage`` as :class:`experiments.repeats.findings.Steering` (what the
    stage's steering file holds; for tests and exploring without the ``claim_rules`` stage)."""
    return [Steering(r["id"], r["rule"], r.get("margin"), r.get("compares") or {}) for r in extract(stage)]


def write_all(folder: Path, stages) -> dict[str, int]:
    """One ``<stage>.json`` per measuring stage of ``stages`` into ``folder`` (an empty list for a
    stage no finding steers), atomically; returns {stage: findings}."""
    from ..output.results import write_json

    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for st in stages:
        rows = extract(st)
        write_json(folder / f"{st}.json", rows)
        out[st] = len(rows)
    return out
