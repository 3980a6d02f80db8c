"""A measuring stage's side of ``make decide`` (:mod:`experiments.decide`): the runs a reviewer
bought after a ``make repro``, declared in ``params.yaml`` and appended to the stage's rows.

``params.yaml``'s ``decide`` section holds, per measuring stage, the purchases made so far
(:class:`Purchase`: ``run``, the decide run that made it; ``configs``, the configurations it
bought, by the columns that name one; ``runs``, how many runs it made: rounds over those
configurations, in the seeded order of :func:`experiments.sequential.round_order`, the last
round possibly cut short by the minutes). The stage lists ``decide.<stage>`` among its DVC
params, so ``dvc params diff`` shows what was bought and ``dvc repro`` of the stage from
scratch runs its own loop and then every purchase again.

When ``make decide`` re-runs the stage (``dvc repro``, with :data:`ENV` naming it) the stage
keeps what it measured (:func:`kept`: its rows, its loop's course and its side tables, from its
results folder, which the stage's ``persist: true`` out keeps) and runs only the purchases its
rows do not have yet (:func:`buy`), never one after :data:`DEADLINE_ENV`. Every row says which
run made it (``made_by``: ``repro`` for the stage's own loop, ``decide N`` for a purchase).

The level: a purchase is one more look at the findings it was bought for, so the rows it adds
carry the Bonferroni level over the loop's planned looks plus one per purchase
(:func:`level_after`), and the report, which judges at the highest level of the rows
(:func:`experiments.sequential.level_of`), widens every interval of the stage accordingly.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import pandas as pd

# the stages' side, kept light (no claims, no statistics): what a measuring stage imports
from .purchases import (ENV, FIRST, DecideParams, Purchase, appending, first_run, label,  # noqa: F401
                        level_at, shared_rounds)

DEADLINE_ENV = "DLIO_DECIDE_DEADLINE"  # seconds since the epoch: no bought run starts after it


@dataclass
class Kept:
    """What a stage measured before (its results folder): ``raw`` rows, its loop's ``course``
    (sequential.json) and side ``tables`` ({name: DataFrame} of its ``name.csv``)."""

    raw: pd.DataFrame
    course: dict
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def appended(self, name: str, new: pd.DataFrame) -> pd.DataFrame:
        """Side table ``name`` as kept, then the ``new`` rows a decide run's purchases made."""
        parts = [x for x in (self.tables.get(name), new) if x is not None and len(x)]
        return pd.concat(parts, ignore_index=True) if parts else new


def kept(stage: str, tables: Sequence[str] = ()) -> Kept | None:
    """The stage's earlier rows when a decide run appends to it (None otherwise, or when its
    results folder lacks rows or sequential.json: the stage then measures from scratch)."""
    from . import paths

    if not appending(stage):
        return None
    d = paths.results_dir(stage)
    if not (d / "raw.parquet").exists() or not (d / "sequential.json").exists():
        return None
    raw = pd.read_parquet(d / "raw.parquet")
    if "made_by" not in raw:
        raw = raw.assign(made_by=FIRST)
    return Kept(raw, json.loads((d / "sequential.json").read_text()),
                {t: pd.read_csv(d / f"{t}.csv") for t in tables if (d / f"{t}.csv").exists()})


def looks_of(raw: pd.DataFrame, alpha: float = 0.05) -> int:
    """The looks the stage's own rows were corrected for (from their ``level``: 1 - alpha / L)."""
    from .sequential import level_of

    own = raw[raw["made_by"] == FIRST] if "made_by" in raw else raw
    return max(1, round(alpha / max(1e-12, 1 - level_of(own))))


def level_after(raw: pd.DataFrame, purchase_index: int, alpha: float = 0.05) -> float:
    """The level of the rows of the ``purchase_index``-th purchase (1, 2, ...): Bonferroni over
    the loop's looks plus one look per purchase."""
    return level_at(looks_of(raw, alpha), purchase_index, alpha)


def key_of(config, keys: Sequence[str]) -> tuple:
    """A configuration (a tuple in ``keys`` order, or a dict; a key a dict lacks, or a NaN a
    row holds for it, is None) as a tuple of plain values, so that a configuration, a row of
    the stage's rows and a purchase in ``params.yaml`` compare equal."""
    vals = [config.get(k) for k in keys] if isinstance(config, dict) else list(config)
    out = []
    for v in vals:
        v = v.item() if hasattr(v, "item") else v
        if isinstance(v, float) and v.is_integer():
            v = int(v)   # a count in a column with NaN elsewhere (the blog's threads) reads as float
        out.append(None if isinstance(v, float) and v != v else v)
    return tuple(out)


def buy(configs: Sequence, keys: Sequence[str], run_one: Callable[[object, int], dict],
        purchases: Sequence[Purchase], raw: pd.DataFrame, seed: int,
        clock: Callable[[], float] = time.time) -> pd.DataFrame:
    """Run the purchases ``raw`` (the stage's rows so far, ``made_by`` marked) lacks: each
    ``runs`` runs, in rounds over its configurations (those of ``configs``, tuples in ``keys``
    order or dicts, whose ``keys`` match: :func:`key_of`), each round in a seeded order; ``run_one(config, repeat)`` as the stage's
    loop calls it. Repeats continue after the rows' last. Stops before a run that would start
    after :data:`DEADLINE_ENV`. Returns the new rows (``made_by``, ``repeat``, ``warmup``,
    ``round_order``, ``level``)."""
    from .sequential import round_order

    deadline = float(os.environ.get(DEADLINE_ENV, "inf"))
    have = set(raw["made_by"]) if "made_by" in raw else {FIRST}
    rows: list[dict] = []
    nxt = int(raw["repeat"].max()) + 1 if len(raw) else 0
    have_keys = [key_of(c, keys) for c in configs]
    for k, p in enumerate(purchases, start=1):
        if label(p.run) in have:
            continue
        wanted = [key_of(want, keys) for want in p.configs]
        idx = [next((i for i, c in enumerate(have_keys) if c == w), None) for w in wanted]
        if None in idx:
            raise ValueError(f"decide: a purchase of run {p.run} names configuration(s) this stage's "
                             f"parameters do not have: {[w for w, i in zip(p.configs, idx) if i is None]}; "
                             f"allowed: {[dict(zip(keys, c)) for c in have_keys]}")
        level = level_after(raw, k)
        for made in range(p.runs):
            pos = made % len(idx)
            if clock() > deadline:   # between runs, never within one
                return pd.DataFrame(rows)
            j = round_order(len(idx), nxt, seed)[pos]
            row = dict(run_one(configs[idx[j]], nxt) or {})
            rows.append({**row, "repeat": nxt, "warmup": False, "round_order": pos, "level": level,
                         "made_by": label(p.run)})
            if pos == len(idx) - 1:
                nxt += 1
        nxt += 1 if p.runs % len(idx) else 0
    return pd.DataFrame(rows)


def made(rows: pd.DataFrame) -> dict[str, int]:
    """{made_by: runs} of a stage's rows: one run per (``repeat``, ``round_order``), so that a
    stage writing several rows per run (the blog's cold and warm pair) counts it once."""
    if not len(rows) or "made_by" not in rows:
        return {}
    keys = [k for k in ("repeat", "round_order") if k in rows]
    return {str(k): int(len(g[keys].drop_duplicates()) if keys else len(g)) for k, g in rows.groupby("made_by")}


def course(before: dict, purchases: Sequence[Purchase], rows: pd.DataFrame) -> dict:
    """The stage's sequential.json with what each purchase made (``decide``: run, runs made,
    configurations, level)."""
    made_ = made(rows)
    lv = rows.groupby("made_by")["level"].max().to_dict() if len(rows) and "made_by" in rows else {}
    return {**before, "decide": [{"run": p.run, "runs": made_.get(label(p.run), 0), "planned": p.runs,
                                  "configs": p.configs, "level": lv.get(label(p.run))} for p in purchases]}


def rounds(before: Kept | None, configs: Sequence, keys: Sequence[str], run_one: Callable[[object, int], dict],
           loop: Callable[[], object], purchases: Sequence[Purchase], seed: int) -> pd.DataFrame:
    """A buying stage's rows: its own loop's (``loop()``: an :class:`experiments.sequential.Result`
    of ``configs`` through ``run_one``), or, when a decide run appends to the stage, the rows it
    measured before (``before``: :func:`kept`, read once by the stage, which also needs its side
    tables); then the purchases those rows lack (:func:`buy`). Returns the rows, ``made_by``
    marked, with ``attrs["sequential"]``: the loop's course, ``keys`` and what each purchase made."""
    from .sequential import to_json

    if before is None:
        res = loop()
        raw, crs = res.rows.assign(made_by=FIRST), {**to_json(res), "keys": list(keys)}
    else:
        raw, crs = before.raw, before.course
    extra = buy(configs, keys, run_one, list(purchases), raw, seed)
    raw = pd.concat([raw, extra], ignore_index=True) if len(extra) else raw
    raw.attrs["sequential"] = course(crs, purchases, raw) if purchases else crs
    return raw
