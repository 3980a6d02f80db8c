"""The purchases a ``make decide`` run made (``params.yaml``'s ``decide`` section) and which run
made a row (``made_by``): the side of :mod:`experiments.bought` that a measuring stage reads,
kept free of the statistics and the claims so that a stage importing it re-runs only when
this changes."""

from __future__ import annotations

import os
from typing import Sequence

import pandas as pd
from pydantic import Field

from .config import Section

ENV = "DLIO_DECIDE"   # measuring stages (or shared purchases) a decide run appends to, space-separated
FIRST = "repro"       # made_by of the rows of a stage's own loop
ALPHA = 0.05          # 1 - experiments.stats.LEVEL (not imported: see the docstring)
SCALARS = str | int | float | None   # None: a key the configuration lacks (the blog: threads of a DataLoader run)


class Purchase(Section):
    run: int = Field(ge=1, description="the decide run that made it (1, 2, ...)")
    configs: list[dict[str, SCALARS]] = Field(min_length=1, description="the configurations bought, "
                                              "by the columns that name one")
    runs: int = Field(ge=1, description="runs made: rounds over configs in the seeded order")


class DecideParams(Section):
    """``params.yaml``'s ``decide`` section: the purchases of each stage ``make decide`` buys for."""

    lmdbio: list[Purchase] = Field(default_factory=list)
    deepio: list[Purchase] = Field(default_factory=list)
    tfdata_read: list[Purchase] = Field(default_factory=list)
    alexnet_prefetch: list[Purchase] = Field(default_factory=list)
    alexnet_checkpoint: list[Purchase] = Field(default_factory=list)
    blog: list[Purchase] = Field(default_factory=list)
    # one purchase shared by the thesis's workload stages (unet3d, bert, dlrm, workload_sleep,
    # workload_random): configs name workloads, runs are rounds of each workload's runs in every
    # one of them (their findings compare the stages' runs: bought together or not at all)
    workloads: list[Purchase] = Field(default_factory=list)


def level_at(looks: int, purchase_index: int, alpha: float = ALPHA) -> float:
    """The level of the rows of the ``purchase_index``-th purchase (1, 2, ...) of a stage whose
    own rows were corrected for ``looks`` looks: Bonferroni over those and one per purchase."""
    return 1 - alpha / (looks + purchase_index)


def label(run: int) -> str:
    return f"decide {int(run)}"


def appending(stage: str) -> bool:
    """Whether a decide run is re-running ``stage`` to append (:data:`ENV` names it)."""
    return stage in os.environ.get(ENV, "").split()


def level_of(rows: pd.DataFrame | None, default: float = 1 - ALPHA) -> float:
    """The level rows were judged at (their ``level`` column: the highest, after the looks that
    made them); ``default`` (:data:`experiments.stats.LEVEL`) for rows without one."""
    if rows is None or "level" not in getattr(rows, "columns", ()) or not rows["level"].notna().any():
        return default
    return float(rows["level"].dropna().max())


def first_run(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of the stage's own loop (``made_by`` :data:`FIRST`; all rows without the column):
    what a stage's downstream inputs are computed from, so that a purchase leaves them as they were."""
    return rows[rows["made_by"] == FIRST] if "made_by" in rows.columns else rows


def shared_rounds(purchases: Sequence[Purchase], first: int, key: str, value, alpha: float = ALPHA
                  ) -> list[tuple[int, str, float]]:
    """The repeats that shared purchases (``decide.workloads``) add to the configurations whose
    ``key`` is ``value`` (a workload), after the stage's own ``first`` repeats: one
    (repeat, made_by, level) per round, each purchase's ``runs`` being rounds over its
    ``configs``. The level: Bonferroni over the stage's own look (a fixed count) and one look per
    purchase (:func:`level_at`)."""
    out, nxt = [], int(first)
    for k, p in enumerate(purchases, start=1):
        if value not in [c.get(key) for c in p.configs]:
            continue
        for _ in range(-(-p.runs // len(p.configs))):
            out.append((nxt, label(p.run), level_at(1, k, alpha)))
            nxt += 1
    return out
