"""One interface for every measuring stage, and the one loop that runs it.

A measuring stage says three things (:class:`MeasuringStage`): its **configurations** (dicts
over its ``keys``, the columns that name one), **how to run one configuration once**
(``run_one(config, repeat)``, returning a :class:`Run`: its row or rows, and rows of any side
tables such as steps or device samples), and **what it keeps** (the names of those side
tables). Everything else is written once, here and in the modules beside this one: the rounds
in a seeded order with looks, the forecast and the futility stop (:mod:`.rounds`,
:mod:`.futility`), the runs ``make decide`` bought (:mod:`.purchases`), what a decide run keeps
of the rows of before (:func:`kept`), and ``rounds.json`` (the course of the rounds).

:func:`measure` returns a :class:`Measurement`: one row per run (``run``: the run's id, the unit
of every interval; ``repeat``, ``warmup``, ``round_order``, ``level``, ``made_by``, ``run_s``:
its wall seconds) and each side table, every side row carrying its run's id and tags, so that
an interval can resample runs and then the units inside each drawn run
(:func:`experiments.statistics.stats.runs_bootstrap`).

The judging at looks (``judge``) is the stage's findings, as
:mod:`experiments.repeats.findings` builds it from their measure functions and the rules and
margins of their declarations: a measuring stage never reads a quote, a statement or a figure.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import pandas as pd

from ..settings import paths
from .purchases import FIRST, Purchase, appending, buy, key_of, share_of, with_purchases
from .rounds import RoundsPlan, run_rounds, to_json

ROUNDS_FILE = "rounds.json"   # the course of a stage's rounds and purchases, in its results folder
VARIANCE_FILE = "variance.csv"   # between-run and within-run variance and costs (experiments.repeats.variance)
TAGS = ("run", "repeat", "warmup", "round_order", "level", "made_by")   # what the loop writes on every row


@dataclass
class Run:
    """What one run of one configuration measured: ``row`` (a dict, or a list of dicts for a
    run measured twice over, as the blog's cold then warm pass) and ``tables`` ({side table:
    rows of this run}, e.g. its steps)."""

    row: dict | list[dict]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


@dataclass
class MeasuringStage:
    """A measuring stage as the loop sees it.

    ``name``: the DVC stage (its results folder, ``decide.<name>``); ``keys``: the columns that
    name a configuration; ``configs``: every configuration (dicts over ``keys``, plus anything
    ``run_one`` needs); ``run_one(config, repeat)``: one run, a :class:`Run` (or a plain row);
    ``rounds``: at least, at most, the budget and how often to look; ``seed``: the rounds'
    order; ``warmup``: rounds run first and never judged; ``tables``: the side tables a run
    returns; ``judge(rows, tables, level)``: {finding: Judged} on the rows so far (None: a fixed
    count, looked at once); ``focus(pending, rows)``: the indices of the configurations the
    undecided findings compare (None: all); ``context(rows)``: the named values the findings'
    ``compares`` use ({storage_tier}, ...), written into ``rounds.json`` for ``make decide``."""

    name: str
    keys: tuple[str, ...]
    configs: list[dict]
    run_one: Callable[[dict, int], Run | dict]
    rounds: RoundsPlan
    seed: int
    warmup: int = 0
    tables: tuple[str, ...] = ()
    judge: Callable[[pd.DataFrame, dict, float], dict] | None = None
    focus: Callable[[list[str], pd.DataFrame], Sequence[int] | None] | None = None
    # the named values its findings' compares use ({storage_tier}, {claim_p}, ...) on rows
    context: Callable[[pd.DataFrame], dict] | None = None
    progress: str | None = None
    # the configurations (indices) that open every round, its own and a purchase's (rounds.round_order)
    leads: tuple[int, ...] = ()
    # the files of its results folder that hold the rows and each side table (default
    # raw.parquet and <table>.csv), as the stage's downstream stages read them
    files: dict[str, str] = field(default_factory=dict)
    # what its findings compare, for the variance table (experiments.repeats.variance): columns
    # of its rows measured once a run, and of a side table measured per unit inside a run (with
    # that table's timing column)
    quantities: tuple[str, ...] = ()
    units: str | None = None
    unit_quantities: tuple[str, ...] = ()
    unit_seconds: str | None = None

    def file(self, what: str) -> str:
        """The results file holding ``what`` (``rows`` or a side table's name)."""
        return self.files.get(what, "raw.parquet" if what == "rows" else f"{what}.csv")

    def __post_init__(self):
        if not self.configs:
            raise ValueError(f"{self.name}: no configurations to measure; allowed: at least one")
        missing = [k for k in self.keys if any(k not in c for c in self.configs)]
        if missing:
            raise ValueError(f"{self.name}: configurations lack the key(s) {missing}; every "
                             f"configuration must give each of {list(self.keys)}")
        seen = [key_of(c, self.keys) for c in self.configs]
        if len(set(seen)) != len(seen):
            raise ValueError(f"{self.name}: two configurations share the keys {list(self.keys)}; "
                             "allowed: each configuration named once")


@dataclass
class Kept:
    """What a stage measured before (its results folder): ``rows``, side ``tables`` and its
    rounds' ``course`` (``rounds.json``)."""

    rows: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    course: dict


@dataclass
class Measurement:
    """What :func:`measure` returns: ``rows`` (one per run, tagged), ``tables`` (side tables,
    each row with its run's tags) and ``course`` (``rounds.json``)."""

    stage: str
    rows: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    course: dict
    files: dict[str, str] = field(default_factory=dict)
    variance: pd.DataFrame | None = None

    def write(self, out) -> None:
        """The rows, each side table and ``rounds.json`` into ``out``
        (:class:`experiments.output.results.StageResults`), each in its file (:meth:`MeasuringStage.file`:
        ``raw.parquet`` and ``<table>.csv`` unless the stage names others)."""
        from ..output.results import atomic_write, write_json

        for what, df in [("rows", self.rows), *self.tables.items()]:
            name = self.files.get(what, "raw.parquet" if what == "rows" else f"{what}.csv")
            if name.endswith(".parquet"):
                atomic_write(out.path(name), lambda p, df=df: df.to_parquet(p, index=False))
            else:
                atomic_write(out.path(name), lambda p, df=df: df.to_csv(p, index=False))
        write_json(out.path(ROUNDS_FILE), self.course)
        if self.variance is not None:
            atomic_write(out.path(VARIANCE_FILE), lambda p: self.variance.to_csv(p, index=False))


def kept(stage: MeasuringStage) -> Kept | None:
    """The stage's earlier rows when a decide run appends to it (None otherwise, or when its
    results folder lacks its rows or ``rounds.json``: the stage then measures from scratch)."""
    if not appending(stage.name):
        return None
    d = paths.results_dir(stage.name)
    if not (d / stage.file("rows")).exists() or not (d / ROUNDS_FILE).exists():
        return None

    def read(name: str) -> pd.DataFrame:
        if name.endswith(".parquet"):
            return pd.read_parquet(d / name)
        try:
            return pd.read_csv(d / name)
        except pd.errors.EmptyDataError:   # a side table no run wrote a row of
            return pd.DataFrame()

    rows = read(stage.file("rows"))
    if "made_by" not in rows:
        rows = rows.assign(made_by=FIRST)
    tables = {t: read(stage.file(t)) for t in stage.tables if (d / stage.file(t)).exists()}
    return Kept(rows, tables, json.loads((d / ROUNDS_FILE).read_text()))


def measure(stage: MeasuringStage, purchases: Sequence[Purchase] = ()) -> Measurement:
    """Run ``stage``: its own rounds (:func:`experiments.repeats.rounds.run_rounds`), or, when a
    decide run appends to it, the rows it measured before (:func:`kept`); then the purchases
    those rows lack (:func:`experiments.repeats.purchases.buy`). Every run gets a ``run`` id
    (after the kept rows' last) and its wall seconds (``run_s``); each side table's rows get their
    run's tags (:data:`TAGS`) and configuration keys."""
    before = kept(stage)
    nxt = [int(before.rows["run"].max()) + 1 if before is not None and "run" in before.rows and len(before.rows) else 0]
    side: dict[str, list[pd.DataFrame]] = {t: [] for t in stage.tables}

    def one(config: dict, repeat: int) -> list[dict]:
        run_id = nxt[0]
        nxt[0] += 1
        t0 = time.perf_counter()
        got = stage.run_one(config, repeat)
        seconds = time.perf_counter() - t0
        got = got if isinstance(got, Run) else Run(got)
        rows = got.row if isinstance(got.row, list) else [got.row]
        keys = {k: config[k] for k in stage.keys}
        for name, df in got.tables.items():
            if name not in side:
                raise ValueError(f"{stage.name}: a run returned the side table {name!r}, which the stage "
                                 f"does not keep; allowed: {list(stage.tables)}")
            if df is not None and len(df):
                side[name].append(df.drop(columns=[c for c in TAGS if c in df]).assign(run=run_id, **{
                    k: v for k, v in keys.items() if k not in df}))
        return [{**keys, **r, "run": run_id, "run_s": seconds / len(rows)} for r in rows]

    def tables_now() -> dict[str, pd.DataFrame]:
        return {t: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for t, v in side.items()}

    decide = None
    if stage.judge is not None:
        def decide(rows, level):
            d = rows[~rows["warmup"].astype(bool)] if "warmup" in rows else rows
            return stage.judge(d, _tagged(tables_now(), rows), level) if len(d) else {}

    if before is None:
        res = run_rounds(stage.configs, one, decide or (lambda rows, level: {}), stage.rounds, stage.seed,
                         warmup=stage.warmup, progress_desc=stage.progress or f"{stage.name} rounds",
                         focus=stage.focus, leads=stage.leads)
        rows, course = res.rows.assign(made_by=FIRST), {**to_json(res), "keys": list(stage.keys),
                                                        "rows_file": stage.file("rows")}
    else:
        rows, course = before.rows, before.course
    extra = buy(stage.configs, stage.keys, one, list(purchases), rows, stage.seed, share_s=share_of(stage.name),
                leads=stage.leads)
    rows = pd.concat([rows, extra], ignore_index=True) if len(extra) else rows
    course = with_purchases(course, purchases, rows) if purchases else course
    if stage.context is not None:   # the named values its findings' compares use, for make decide
        course = {**course, "context": stage.context(rows[~rows["warmup"].astype(bool)] if "warmup" in rows else rows)}
    new = _tagged(tables_now(), rows)
    tables = {t: _concat(before.tables.get(t) if before is not None else None, new.get(t)) for t in stage.tables}
    from .variance import table as variance_table

    var = variance_table(rows, stage.keys, stage.quantities, tables.get(stage.units) if stage.units else None,
                         stage.unit_quantities, stage.unit_seconds) if stage.quantities or stage.units else None
    return Measurement(stage.name, rows, tables, course, dict(stage.files), var)


def _tagged(tables: dict[str, pd.DataFrame], rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Each side table with its runs' tags (:data:`TAGS`) from ``rows``."""
    tags = [c for c in TAGS if c in rows and c != "run"]
    by_run = rows.drop_duplicates("run").set_index("run")[tags] if len(rows) and "run" in rows else None
    out = {}
    for t, df in tables.items():
        out[t] = df.join(by_run, on="run") if by_run is not None and len(df) else df
    return out


def _concat(a: pd.DataFrame | None, b: pd.DataFrame | None) -> pd.DataFrame:
    parts = [x for x in (a, b) if x is not None and len(x)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def rows_of(m: Measurement, made_by: str | None = None) -> pd.DataFrame:
    """``m``'s rows, those ``made_by`` alone when given."""
    return m.rows if made_by is None else m.rows[m.rows["made_by"] == made_by]
