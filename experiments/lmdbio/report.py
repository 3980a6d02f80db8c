"""Figures and claims for LMDBIO (Pumma et al., Fig 2): time, speed-up and context switches vs P."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..verdicts import reasons
from ..statistics import stats
from ..figures import style
from ..host.tiers import storage_tier_of as storage_tier  # noqa: F401 (the tier the claims judge)
from ..claims.declared import join
from .findings import (PAPER_DATASET, PUMMA_PROCS, STEPS, claim_p, measure_caffe, measure_steps,  # noqa: F401
                       switch_cols, switch_ps)

STAGE = "lmdbio_report"   # the papers' side of its claims: experiments/claims/papers/pumma-lmdbio.yaml
# the configurations each figure draws ({figure: {stage: selection}}, selections as in a finding's
# `compares`): Fig 2 once per tier (fig2_lmdbio on the storage tier, fig2_lmdbio_<tier> on each
# other), every data set, strategy and P (experiments.review.unread)
DRAWS = {"fig2_lmdbio": {"lmdbio": {}}}
LABELS = {"lmdb": "(a) LMDB, mmap per process", "lmm": "(b) LMM: one reader + shm",
          "dio_prov": "(c) + pread at provenance offsets", "coal": "(d) + coalesced reads",
          "stag": "(e) + staggered readers"}


def plot_fig2(summary: pd.DataFrame, tier: str):
    """Fig 2 style on one tier: per data set, (a) total read time, (b) speed-up over LMDB,
    (c) context switches per process, each against P, one line per strategy. Bars: 95 %
    intervals (``summary`` from :func:`with_intervals`)."""
    t = summary[summary["tier"] == tier]
    sets = list(dict.fromkeys(t["dataset"]))
    fig, axes = plt.subplots(len(sets), 3, figsize=(13, 3.4 * len(sets)), squeeze=False)
    for row, ds in zip(axes, sets):
        d = t[t["dataset"] == ds]
        for s in sorted(set(d["strategy"]), key=lambda x: list(LABELS).index(x) if x in LABELS else len(LABELS)):
            g = d[d["strategy"] == s].sort_values("P")   # (a) to (e): the legend in the paper's order
            # the strategy's own style, never the colour cycle's next: the data sets list their
            # strategies in different orders, and the one legend must name every row's lines
            st = style.category("strategy", s)
            kw = dict(marker=st["marker"], color=st["color"], ls=st["ls"], label=LABELS.get(s, s))
            row[0].errorbar(g["P"], g["seconds"], yerr=style.ci_yerr(g, "seconds"), capsize=2, **kw)
            row[1].errorbar(g["P"], g["speedup_vs_lmdb"], yerr=style.ci_yerr(g, "speedup_vs_lmdb"),
                            capsize=2, **kw)
            col = switch_cols(g)[0]
            row[2].plot(g["P"], g[col], **kw)   # the switches the claim judges
        cs_label = ("context switches outside\nMPI waits, per process"
                    if switch_cols(d)[0] == "cs_io_per_proc" else "context switches\nper process")
        for ax, yl in zip(row, ("total read time, s (median)", "speed-up over (a) LMDB, x", cs_label)):
            ax.set_xscale("log", base=2)
            ps = sorted(d["P"].unique())
            ax.set_xticks(ps, [str(p) for p in ps])
            ax.set_xlabel("processes P")
            ax.set_ylabel(yl)
        # short titles: one wider than its panel reaches over its neighbours' tick labels
        row[0].set_title(f"{ds}: (a) read time")
        row[1].set_title(f"{ds}: (b) speed-up")
        row[2].set_title(f"{ds}: (c) switches")   # voluntary + involuntary context switches
        row[1].axhline(1, color="0.4", lw=1, ls="--")
    style.legend_beside(axes[0][-1], axes=[r[0] for r in axes], fontsize=7)   # beside: never over the data
    fig.suptitle(f"LMDBIO read strategies on tier {tier} (cf. Fig 2)")
    fig.tight_layout()
    return fig


def with_intervals(summary: pd.DataFrame, raw: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the 95 % intervals Fig 2 draws: of the median seconds (median_ci over
    the runs) and of the speed-up over LMDB (ratio of medians, bootstrap over the runs:
    the computation the claims use)."""
    by = ["tier", "dataset", "strategy", "P"]
    s = stats.with_median_ci(summary, raw, "seconds", by)
    lo, hi = [], []
    for r in s.itertuples():
        _, ci = stats.ratio_of_medians(
            stats.samples(raw, "seconds", tier=r.tier, dataset=r.dataset, strategy="lmdb", P=r.P),
            stats.samples(raw, "seconds", tier=r.tier, dataset=r.dataset, strategy=r.strategy, P=r.P))
        lo.append(ci.low)
        hi.append(ci.high)
    return s.assign(speedup_vs_lmdb_ci_low=lo, speedup_vs_lmdb_ci_high=hi)


def claims(summary: pd.DataFrame, tier: str, env: dict | None = None,
           raw: pd.DataFrame | None = None) -> list[dict]:
    """Each step's direction as the paper states it, per data set, on ``tier``, at the largest P
    that fits the cores (:func:`claim_p`); the claims the paper makes of every P ("in all
    cases", fewer context switches) are judged on every measured P. Every claim is emitted,
    measured or not.

    ``env``: lmdbio's env.json (cores, cold-run residency, handover). ``raw``: lmdbio's
    raw.parquet (one row per run and repeat), from which each ratio's interval is computed
    (bootstrap over the runs, of the whole reduction over P where there is one), at the
    level of the looks at the configurations it compares (the ``level`` column of their rows:
    :func:`experiments.claims.report_levels.judged_at_their_levels`); without it
    the findings are ``inconclusive``. Context switches are all of them, voluntary (the process
    slept: waiting for I/O, or for the hand-over) and involuntary (preemptions), since the paper
    names no kind; the note gives both per P. The paper ran
    only CIFAR10-Large (:data:`PAPER_DATASET`); the rows of any other data set are our extension
    and carry no paper value. Judged on the one-node runs (:func:`experiments.verdicts.reasons.one_node`).
    The paper's headline numbers at 9,216 processes (660-fold from
    ideal strong scaling, read time ~90 % of training) are rows too, not measured here."""
    from ..claims.report_levels import judged_at_their_levels
    from .read import context

    env = env or {}
    steps = lambda: measure_steps(reasons.one_node(summary), tier, env, reasons.one_node(raw))   # noqa: E731
    return join(STAGE, [*(judged_at_their_levels("lmdbio", raw, steps, context(raw, env)) if raw is not None
                          else steps()), *measure_caffe(reasons.one_node(summary), tier, env)])


def switches_table(summary: pd.DataFrame, kind: str = "vol") -> pd.DataFrame:
    """Context switches per process (``kind``: ``vol``untary, ``invol``untary, both summed
    with ``all``, those outside MPI's waits, ``io``, inside them, ``wait``, or the ones the
    claim judges, ``claim``: :func:`switch_cols`), strategies as columns, per tier, data set and P."""
    cols = {"vol": "cs_vol_per_proc", "invol": "cs_invol_per_proc", "all": "cs_per_proc",
            "io": "cs_io_per_proc", "wait": "cs_wait_per_proc"}
    if kind == "claim":
        col = switch_cols(summary)[0]
    elif kind in cols:
        col = cols[kind]
    else:
        raise ValueError(f"switches_table: kind = {kind!r}; allowed: {', '.join(cols)}, claim")
    return summary.pivot_table(index=["tier", "dataset", "P"], columns="strategy",
                               values=col).round(1)


def handover_table(check: pd.DataFrame) -> pd.DataFrame:
    """The hand-over check as a table: per tier, P and strategy/hand-over, the mean voluntary
    and involuntary context switches of the reader (or of every process, for LMDB) and of the
    consumers, and the run's seconds."""
    if not len(check):
        return pd.DataFrame(columns=["tier", "P", "strategy", "handover", "role", "voluntary",
                                     "involuntary", "processes", "seconds"])
    c = check.assign(role=np.where(check["strategy"] == "lmdb", "every process",
                                   np.where(check["reader"], "reader", "consumer")))
    return (c.groupby(["tier", "P", "strategy", "handover", "role"], sort=False)
            .agg(voluntary=("cs_voluntary", "mean"), involuntary=("cs_involuntary", "mean"),
                 processes=("proc", "size"), seconds=("seconds", "first"))
            .reset_index().round({"voluntary": 1, "involuntary": 1, "seconds": 3}))


def speedup_table(summary: pd.DataFrame) -> pd.DataFrame:
    return summary.pivot_table(index=["tier", "dataset", "P"], columns="strategy",
                               values="speedup_vs_lmdb").round(2).replace([np.inf], np.nan)
