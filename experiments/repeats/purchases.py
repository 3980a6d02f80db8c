"""The runs a reviewer bought with ``make decide`` after a ``make repro``: declared in
``params.yaml``'s ``decide`` section, run after the stage's own rounds, appended to its rows.

``decide`` holds, per measuring stage, the purchases made so far (:class:`Purchase`: ``run``,
the decide run that made it; ``configs``, the configurations it bought, by the columns that
name one; ``runs``, how many runs it made: rounds over those configurations in the seeded order
of :func:`experiments.repeats.rounds.round_order`, the last round possibly cut short by the
minutes). Every measuring stage lists ``decide.<stage>`` among its DVC params, so ``dvc params
diff`` shows what was bought and ``dvc repro`` of the stage from scratch runs its own rounds
and then every purchase again.

When ``make decide`` re-runs a stage (``dvc repro`` with :data:`ENV` naming it) the stage keeps
what it measured (its rows, side tables and ``rounds.json``, from its results folder, which its
``persist: true`` out keeps: :func:`experiments.repeats.stage.kept`) and runs only the purchases
its rows lack (:func:`buy`), never one after :data:`DEADLINE_ENV`. Every row says which run made
it (``made_by``: :data:`FIRST` for the stage's own rounds, ``decide N`` for a purchase).

**The level** (:func:`level_for`): a purchase is one more look at the findings whose
configurations it adds to, and at no other. A bought row's level is the Bonferroni level over
the stage's own looks plus one look per purchase that has bought *its configuration* so far, so
a purchase for the memory tier leaves the disk tier's findings at their level and verdict.
A finding that compares a bought configuration with one not bought is looked at again too, at
the raised level, which the other side's runs may not reach (a median's interval of 6 runs
covers at most 96.9 %): a purchase therefore also *tops up* those other configurations
(``top_up``, ``top_up_runs`` rounds over them after its runs), priced by
:mod:`experiments.review.decide.pricing`.

This module is the light side the measuring stages import (no statistics, no claims), so that a
change to a claim's rule re-runs a measuring stage only through the rules it reads itself.
"""

from __future__ import annotations

import json
import os
import time
from typing import Callable, Collection, Sequence

import pandas as pd
from pydantic import Field, create_model

from .. import stages
from ..settings.config import Section
from .levels import ALPHA, level, looks as looks_at

ENV = "DLIO_DECIDE"                      # measuring stages a decide run appends to, space-separated
DEADLINE_ENV = "DLIO_DECIDE_DEADLINE"    # seconds since the epoch: no bought run starts after it
# {stage: seconds}, JSON: a stage's bought runs stop at its share of the minutes (:func:`share_of`)
SHARES_ENV = "DLIO_DECIDE_SHARES"
FIRST = "repro"                          # made_by of the rows of a stage's own rounds
SCALARS = str | int | float | None       # None: a key the configuration lacks (the blog: threads of a DataLoader run)


class Purchase(Section):
    run: int = Field(ge=1, description="the decide run that made it (1, 2, ...)")
    configs: list[dict[str, SCALARS]] = Field(min_length=1, description="the configurations bought, "
                                              "by the columns that name one")
    runs: int = Field(ge=1, description="runs made: rounds over configs in the seeded order")
    top_up: list[dict[str, SCALARS]] = Field(default_factory=list, description="configurations not "
                                             "bought that share a finding with a bought one (issue 52)")
    top_up_runs: int = Field(0, ge=0, description="rounds over top_up after the runs: what keeps those "
                                                  "findings as near their raised level as they were")

    def bought(self) -> list[dict]:
        """Every configuration this purchase adds runs to (``configs``, then ``top_up``)."""
        return list(self.configs) + (list(self.top_up) if self.top_up_runs else [])

    def planned(self) -> int:
        """The runs it plans: ``runs`` plus ``top_up_runs`` rounds over ``top_up``."""
        return self.runs + self.top_up_runs * len(self.top_up)

    def record(self) -> dict:
        """As ``params.yaml`` holds it (a purchase without a top-up written as before one existed)."""
        return self.model_dump(exclude={"top_up", "top_up_runs"} if not (self.top_up and self.top_up_runs) else set())


BUYING = stages.buying()   # the measuring stages that can buy runs (the registry's)

DecideParams = create_model("DecideParams", __base__=Section, __module__=__name__,
                            **{s: (list[Purchase], Field(default_factory=list)) for s in BUYING})
DecideParams.__doc__ = ("``params.yaml``'s ``decide`` section: the purchases of every buying stage "
                        "(:data:`BUYING`; each listed, empty when nothing was bought: DVC reads "
                        "``decide.<stage>`` as the stage's param).")


def label(run: int) -> str:
    """``made_by`` of the rows of decide run ``run``."""
    return f"decide {int(run)}"


def appending(stage: str) -> bool:
    """Whether a decide run is re-running ``stage`` to append (:data:`ENV` names it)."""
    return stage in os.environ.get(ENV, "").split()


def first_run(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the stage's own rounds (``made_by`` :data:`FIRST`; all rows without the
    column): what a stage hands downstream is computed from these, so that a purchase leaves
    it as it was (the compute model, a checkpoint's size)."""
    return rows[rows["made_by"] == FIRST] if "made_by" in rows.columns else rows


def key_of(config, keys: Sequence[str]) -> tuple:
    """A configuration (a dict, or a tuple in ``keys`` order; a key a dict lacks, or a NaN a row
    holds for it, is None) as a tuple of plain values, so that a configuration, a row and a
    purchase in ``params.yaml`` compare equal."""
    vals = [config.get(k) for k in keys] if isinstance(config, dict) else list(config)
    out = []
    for v in vals:
        v = v.item() if hasattr(v, "item") else v
        if isinstance(v, float) and v.is_integer():
            v = int(v)   # a count in a column with NaN elsewhere (the blog's threads) reads as float
        out.append(None if isinstance(v, float) and v != v else v)
    return tuple(out)


def own_looks(rows: pd.DataFrame, alpha: float = ALPHA) -> int:
    """The looks the stage's own rounds took (from their rows' ``level``: 1 - alpha / looks)."""
    from .levels import level_of

    return looks_at(level_of(first_run(rows)), alpha)


def level_for(purchases: Sequence[Purchase], upto: int, config: tuple, keys: Sequence[str],
              own: int, alpha: float = ALPHA) -> float:
    """The level of the rows that purchase number ``upto`` (1, 2, ...) makes of ``config``:
    Bonferroni over the stage's ``own`` looks and one look per purchase, up to this one, that
    bought this configuration (a purchase of other configurations is no look at its findings)."""
    n = sum(1 for p in list(purchases)[:upto] if config in {key_of(c, keys) for c in p.bought()})
    return level(own + n, alpha)


def share_of(stage: str) -> float | None:
    """The seconds ``stage``'s bought runs may take in this decide run (:data:`SHARES_ENV`:
    ``make decide`` gives each stage its priced seconds, stretched to the minutes), None
    without one. A box slower than the prices stops every stage's runs at its share, instead of
    the stages DVC runs first taking the minutes and the last none (a decide run of G, slow box:
    LMDBIO took 745 s of its 575, and the LLM checkpoint's 55 runs were never made)."""
    raw = os.environ.get(SHARES_ENV)
    if not raw:
        return None
    got = json.loads(raw).get(stage)
    return float(got) if got is not None else None


def buy(configs: Sequence, keys: Sequence[str], run_one: Callable[[object, int], list[dict]],
        purchases: Sequence[Purchase], rows: pd.DataFrame, seed: int,
        clock: Callable[[], float] = time.time, share_s: float | None = None,
        leads: Collection[int] = ()) -> pd.DataFrame:
    """Run the purchases ``rows`` (the stage's rows so far, ``made_by`` marked) lack: each
    purchase's ``runs`` runs in rounds over its configurations (of ``configs``), each round in a
    seeded order (the one loop's rounds, :func:`experiments.repeats.rounds.run_rounds`);
    ``run_one(config, repeat)`` returns the run's rows. Repeats continue after the rows' last.
    Stops before a run that would start after :data:`DEADLINE_ENV`, or more than ``share_s``
    seconds after the first bought run began (:func:`share_of`). Returns the new rows (``made_by``, ``repeat``, ``warmup``, ``round_order``, ``level``: :func:`level_for`).
    A purchase naming a configuration ``configs`` lacks stops before any run, naming it.
    ``leads``: the indices of ``configs`` that open each round (:func:`experiments.repeats.rounds.round_order`)."""
    from .rounds import RoundsPlan, run_rounds

    bad = unknown_configs(configs, keys, purchases)
    if bad:
        raise ValueError(f"decide: a purchase names configuration(s) this stage's parameters do not have: "
                         f"{bad}; allowed: {[dict(zip(keys, key_of(c, keys))) for c in configs]}")
    deadline = float(os.environ.get(DEADLINE_ENV, "inf"))
    if share_s is not None:
        deadline = min(deadline, clock() + share_s)
    have = set(rows["made_by"]) if "made_by" in rows else {FIRST}
    own = own_looks(rows)
    out: list[pd.DataFrame] = []
    nxt = int(rows["repeat"].max()) + 1 if len(rows) else 0
    mine = [key_of(c, keys) for c in configs]

    def tagged(j: int, repeat: int) -> list[dict]:   # a run's rows, with its configuration's index
        return [{**r, "_config": j} for r in run_one(configs[j], repeat)]

    for k, p in enumerate(purchases, start=1):
        if label(p.run) in have:
            continue
        # the bought runs in rounds over configs, then whole rounds over the top-up: the one loop's
        # rounds (experiments.repeats.rounds.run_rounds), a fixed count, going on after the rows'
        for part, runs in ((p.configs, p.runs), (p.top_up, p.top_up_runs * len(p.top_up))):
            if not runs:
                continue
            idx = [mine.index(key_of(c, keys)) for c in part]
            n = -(-runs // len(idx))   # rounds, the last possibly cut short
            res = run_rounds(idx, tagged, lambda rows, level: {}, RoundsPlan(n, n), seed,
                             progress_desc=f"decide {p.run}: bought runs", first=nxt, runs=runs,
                             stop=lambda: clock() > deadline, leads={q for q, j in enumerate(idx) if j in leads})
            got = res.rows
            if len(got):
                lv = [level_for(purchases, k, mine[int(j)], keys, own) for j in got["_config"]]
                out.append(got.drop(columns="_config").assign(level=lv, made_by=label(p.run)))
            if len(res.order) < runs:   # the deadline came between runs
                return pd.concat(out, ignore_index=True) if out else pd.DataFrame()
            nxt += n
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def unknown_configs(configs: Sequence, keys: Sequence[str], purchases: Sequence[Purchase]) -> list[dict]:
    """The configurations ``purchases`` name that none of ``configs`` is (a purchase of
    parameters changed since): :func:`experiments.repeats.stage.measure` stops on them."""
    have = {key_of(c, keys) for c in configs}
    return [c for p in purchases for c in p.configs + p.top_up if key_of(c, keys) not in have]


def made(rows: pd.DataFrame) -> dict[str, int]:
    """{made_by: runs} of a stage's rows (one run per ``run`` id, else per repeat and place in
    its round), so that a run writing several rows (the blog's cold and warm pair) counts once."""
    if not len(rows) or "made_by" not in rows:
        return {}
    keys = ["run"] if "run" in rows else [k for k in ("repeat", "round_order") if k in rows]
    return {str(k): int(len(g[keys].drop_duplicates()) if keys else len(g)) for k, g in rows.groupby("made_by")}


def with_purchases(course: dict, purchases: Sequence[Purchase], rows: pd.DataFrame) -> dict:
    """A stage's ``rounds.json`` with what each purchase made (``decide``: run, runs made,
    planned, configurations)."""
    made_ = made(rows)
    return {**course, "decide": [{"run": p.run, "runs": made_.get(label(p.run), 0), "planned": p.planned(),
                                  "configs": p.configs, "top_up": p.top_up, "top_up_runs": p.top_up_runs}
                                 for p in purchases]}
