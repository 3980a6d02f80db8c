"""Figures and claims for DeepIO (Zhu et al. 2018): RL table, Fig 7, Fig 8, Fig 10/11 style. The
poster's side of the claims: ``experiments/claims/papers/zhu2018-deepio-poster.yaml``; this module
measures (``measure_*``) and joins."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..verdicts import reasons
from ..settings import reference
from ..statistics import stats
from ..figures import style
from ..repeats import level_of
from ..claims.declared import Measured, join
from .findings import ORDERED_PENALTY, measure_loader  # noqa: F401

# The poster's BeeGFS nodes (Problem Statement panel: 512 MB per node, 8 GB in total).
BEEGFS_NODES = 16
# the configurations each figure draws ({figure: {stage: selection}}, selections as in a finding's
# `compares`): a panel per tier, a line per (mode, R) against P (experiments.review.unread)
DRAWS = {"fig10_bandwidth": {"deepio": {}}}


def storage_tier(loader: pd.DataFrame, memory_tiers: set[str]) -> str:
    """The tier the bandwidth claims use: the first that is not memory-backed, else the first."""
    tiers = list(dict.fromkeys(loader["tier"]))
    disk = [t for t in tiers if t not in memory_tiers]
    return (disk or tiers)[0]


def plot_rl(rl: pd.DataFrame):
    """Our RL (exact) of k-sample constant-order blocks beside the poster's, percent."""
    fig, ax = plt.subplots(figsize=(6.8, 3.4))
    x = np.arange(len(rl))
    ax.bar(x - 0.2, rl["RL_percent"], 0.4, label=f"ours (N = {int(rl['n'].iloc[0])})",
           edgecolor="0.2", color=style.category("source", "ours")["color"])
    ax.bar(x + 0.2, rl["paper_value"].fillna(0), 0.4, label="poster", edgecolor="0.2",
           color=style.category("source", "paper")["color"])
    ax.set_xticks(x, [str(k) for k in rl["k"]])
    ax.set_xlabel("k: samples kept in constant order")
    ax.set_ylabel("randomization level RL, %")
    ax.set_title("Randomization level of partially shuffled orders")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig


def _mean_curve(d: pd.DataFrame) -> pd.DataFrame:
    return d.groupby("epoch")["val_accuracy"].mean().reset_index()


def plot_fig7(curves: pd.DataFrame):
    """Validation accuracy per epoch for each block size k (labelled by its RL)."""
    d = curves[curves["figure"] == "fig7"]
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for k, g in d.groupby("k"):
        c = _mean_curve(g)
        ax.plot(c["epoch"], c["val_accuracy"], color=style.category("block", int(k))["color"],
                label=f"k = {int(k)} (RL = {g['RL_percent'].iloc[0]:.0f}%)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation accuracy (fraction, mean of seeds)")
    ax.set_title("Fig 7: accuracy with different randomization levels")
    style.legend_beside(ax)
    fig.tight_layout()
    return fig


def plot_fig8(curves: pd.DataFrame):
    """One panel per process count: accuracy per epoch for each memory ratio R, and a full
    shuffle (k = 1) for reference."""
    d = curves[curves["figure"] == "fig8"]
    full = curves[(curves["figure"] == "fig7") & (curves["k"] == 1)]
    ps = sorted(d["P"].unique())
    # one row per process count; one colour per R in every panel (one legend), each panel's
    # own randomization levels in its title
    fig, axes = plt.subplots(len(ps), 1, figsize=(8, 2.7 * len(ps)), squeeze=False, sharex=True, sharey=True)
    for ax, p in zip(axes[:, 0], ps):
        if len(full):
            c = _mean_curve(full)
            ax.plot(c["epoch"], c["val_accuracy"], color="0.4", ls="--", label="full shuffle")
        rls = []
        for r, g in d[d["P"] == p].groupby("R"):
            c = _mean_curve(g)
            ax.plot(c["epoch"], c["val_accuracy"], color=style.category("ratio", r)["color"], label=f"R = {r:g}")
            rls.append(f"R {r:g}: {g['RL_percent'].iloc[0]:.0f} %")
        ax.set_title(f"{int(p)} process(es); RL: {', '.join(rls)}", fontsize=10)
        ax.set_ylabel("val. accuracy (fraction)")
    style.legend_beside(axes[0][0], axes=list(axes[:, 0]), fontsize=7)
    axes[-1][0].set_xlabel("epoch")
    fig.suptitle("Fig 8: accuracy with opportunistic ordering")
    fig.tight_layout()
    return fig


def plot_bandwidth(loader: pd.DataFrame, fio: pd.DataFrame):
    """Fig 10/11 style: aggregate read MB/s against processes, ordered vs opportunistic, one
    panel per tier and a line per R; fio's sequential and random read on the tier, dashed.
    ``loader``: deepio's summary with the medians' intervals (:func:`experiments.statistics.stats.with_median_ci`)."""
    tiers = list(dict.fromkeys(loader["tier"]))
    fig, axes = plt.subplots(1, len(tiers), figsize=(4.2 * len(tiers) + 2.2, 3.8), squeeze=False)
    for k, (ax, tier) in enumerate(zip(axes[0], tiers)):
        t = loader[loader["tier"] == tier]
        for (mode, r), g in t.groupby(["mode", "R"]):
            g = g.sort_values("P")
            # colour: R; marker and line: the mode (one look per (mode, R) in every panel)
            ax.errorbar(g["P"], g["MBps"], yerr=style.ci_yerr(g, "MBps"), color=style.category("ratio", r)["color"],
                        marker="o" if mode == "opportunistic" else "s", capsize=2,
                        ls="-" if mode == "opportunistic" else ":", label=f"{mode}, R = {r:g}")
        for job, ls in (("seqread", "--"), ("randread", "-.")):
            f = fio[(fio["tier"] == tier) & (fio["job"] == job)]
            if len(f) and f["bw_MBps"].iloc[0] < 3 * t["MBps_max"].max():
                ax.axhline(f["bw_MBps"].iloc[0], color="0.3", ls=ls, lw=1, label=f"fio {job}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(t["P"].unique()), [str(p) for p in sorted(t["P"].unique())])
        ax.set_xlabel("loader processes P")
        if k == 0:   # one unit for every panel; each keeps its own scale
            ax.set_ylabel(f"aggregate read bandwidth, MB/s\n({style.CI_LABEL})")
        ax.set_title(f"tier {tier}")
    style.legend_beside(axes[0][-1], axes[0])
    fig.suptitle("Ordered vs opportunistic batches (cf. Fig 10, 11)")
    fig.tight_layout()
    return fig


def final_accuracy(curves: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of the last epoch's accuracy per order, with its RL."""
    last = curves[curves["epoch"] == curves["epoch"].max()]
    return (last.groupby(["figure", "k", "R", "P"], dropna=False)
            .agg(val_accuracy=("val_accuracy", "mean"), RL_percent=("RL_percent", "first"))
            .reset_index())


@stats.by_rows(lambda a, b: np.mean(a, axis=-1) - np.mean(b, axis=-1))
def _mean_gap(a, b) -> float:
    return float(np.mean(a) - np.mean(b))


STAGE = "deepio_report"


def loader_claims(loader: pd.DataFrame, tier: str, env: dict | None = None,
                  fio: pd.DataFrame | None = None, raw: pd.DataFrame | None = None) -> list[dict]:
    """The loader's bandwidth findings (Fig 10) as claims, and only those
    (:func:`experiments.deepio.findings.measure_loader` joined with the poster's declarations)."""
    measured = measure_loader(loader, tier, env, fio, raw)
    ids = {m.id for m in measured}
    return [c for c in join(STAGE, measured) if c["id"] in ids]


def measure_nodes(loader: pd.DataFrame, env: dict, raw: pd.DataFrame | None) -> Measured:
    """Fig 10 against the node count: the opportunistic loader's aggregate MB/s at the largest
    node count over one node (x, ratio of medians over the runs), each at the smallest R and
    at the largest P run on that node count, on the storage tier of the first row."""
    nodes = sorted(set(loader["nodes"])) if "nodes" in loader else [1]
    o = loader[loader["mode"] == "opportunistic"] if len(loader) else loader
    if len(nodes) < 2 or 1 not in nodes or not len(o):
        return Measured("deepio_bandwidth_grows_with_nodes", why_not=(
            f"deepio.nodes ran {nodes}: needs the loader on one node and on several, inside a Slurm "
            f"allocation (salloc -N 4 make paper, deepio.nodes [1, all]); {reasons.scale_had(env)}"))
    t, r = o["tier"].iloc[0], o["R"].min()
    o = o[(o["tier"] == t) & (o["R"] == r)]
    one, most = o[o["nodes"] == 1], o[o["nodes"] == nodes[-1]]
    p1, pn = one["P"].max(), most["P"].max()
    v = float(most.loc[most["P"] == pn, "MBps"].iloc[0] / one.loc[one["P"] == p1, "MBps"].iloc[0])
    ci = None
    if raw is not None:
        s = lambda n, p: stats.samples(raw, "MBps", tier=t, mode="opportunistic", R=r, P=p, nodes=n)  # noqa: E731
        v, ci = stats.ratio_of_medians(s(nodes[-1], pn), s(1, p1))
    return Measured("deepio_bandwidth_grows_with_nodes", v, ci,
                    context=f"{nodes[-1]} nodes (P = {pn:g}) over 1 node (P = {p1:g}), R = {r:g}, tier {t}")


def claims(rl: pd.DataFrame, curves: pd.DataFrame, loader: pd.DataFrame, tier: str,
           env: dict | None = None, fio: pd.DataFrame | None = None,
           raw: pd.DataFrame | None = None) -> list[dict]:
    """The poster's claims against our measurements, each emitted whether or not it was
    measured (the poster's side: ``experiments/claims/papers/zhu2018-deepio-poster.yaml``).
    ``tier``: the storage tier of the Fig 10 claims (:func:`storage_tier`); the
    ordered-vs-opportunistic claim over every P is made on every tier. ``env``: deepio's
    env.json (cold-run residency); ``fio``: the device baseline (a failing claim's reason).
    ``raw``: deepio's raw.parquet (one loader run per row and repeat), from which the bandwidth
    ratios' intervals come (bootstrap over runs, at the level of the loader's looks:
    :func:`experiments.repeats.level_of`); the accuracy findings' intervals come
    from ``curves`` (one training per seed: bootstrap over seeds)."""
    env = env or {}
    # the loader's runs went in rounds until its findings were decided (experiments.repeats):
    # their intervals at the level its looks used (Bonferroni over looks; 95 % for a fixed
    # count); the accuracy findings rest on a fixed count of seeds, at 95 %
    from ..claims.report_levels import judged_at_their_levels

    # each bandwidth finding at the level of the looks at the configurations it compares
    loader_m = (judged_at_their_levels("deepio", raw, lambda: measure_loader(loader, tier, env, fio, raw),
                                       {"storage_tier": tier}) if raw is not None
                else measure_loader(loader, tier, env, fio, raw))
    with stats.corrected_level(level_of(raw)):
        nodes_m = measure_nodes(loader, env, raw)
    return join(STAGE, [*measure_rl(rl), *measure_accuracy(curves), *loader_m, nodes_m,
                        measure_opp_rl(loader, tier), *measure_beegfs(env)])


def measure_rl(rl: pd.DataFrame) -> list[Measured]:
    """The randomization level (%) of k-sample constant-order blocks, per k the poster states."""
    out = []
    for k in reference.ZHU_DEEPIO_RL_PERCENT:
        r = rl[rl["k"] == k]
        out.append(Measured(
            f"deepio_rl_k{k}", float(r["RL_percent"].iloc[0]) if len(r) else None,
            note=f"RL = mean log2 candidates per draw / log2(N!)/N, N = {int(r['n'].iloc[0])}" if len(r) else "",
            why_not="the poster does not state N nor the exact estimator of H" if len(r)
            else f"deepio.block_sizes = {sorted(set(rl['k']))} has no k = {k}"))
    return out


def measure_accuracy(curves: pd.DataFrame) -> list[Measured]:
    """Fig 7: full shuffle's last-epoch accuracy minus the largest k's (accuracy points, a
    fraction); Fig 8: the worst opportunistic (R, P) accuracy over the full shuffle's (ratio);
    intervals bootstrapped over the training seeds."""
    fa = final_accuracy(curves)
    last = curves[curves["epoch"] == curves["epoch"].max()] if len(curves) else curves
    per_seed = lambda **eq: stats.samples(last, "val_accuracy", **eq)  # noqa: E731  one per seed
    f7 = fa[fa["figure"] == "fig7"].set_index("k")["val_accuracy"]
    kmax = f7.index.max() if len(f7) else np.nan
    gap = f7.get(1, np.nan) - f7.get(kmax, np.nan) if len(f7) > 1 else np.nan
    gci = None
    if np.isfinite(gap):
        gap, gci = stats.bootstrap(_mean_gap, per_seed(figure="fig7", k=1), per_seed(figure="fig7", k=kmax),
                                   method="difference of means over training seeds, bootstrap")
    out = [Measured(
        "deepio_fig7_low_rl_hurts", gap, gci,
        note=(f"k = {kmax:g}; " if np.isfinite(kmax) else "")
        + "the poster plots Fig 7 without stating the accuracies in its text",
        why_not=(f"full shuffle {f7.get(1, np.nan):.3f}, k = {kmax:g} "
                 f"{f7.get(kmax, np.nan):.3f}: the classifier learns the digits even "
                 "from long constant runs" if np.isfinite(gap)
                 else "deepio.block_sizes needs 1 and a larger k"))]
    f8 = fa[fa["figure"] == "fig8"]
    worst = f8["val_accuracy"].min() / f7.get(1, np.nan) if len(f8) else np.nan
    wci = None
    if np.isfinite(worst):
        keys = f8[["R", "P"]].drop_duplicates().itertuples(index=False)
        # each (R, P) over the full shuffle by Welch t on the seeds' logs at a Bonferroni level,
        # the lowest's interval from theirs (stats.extreme; issue 64)
        base = per_seed(figure="fig7", k=1)
        worst, wci = stats.extreme(
            [lambda lv, r=r, p=p: stats.welch_ratio(per_seed(figure="fig8", R=r, P=p), base, level=lv)
             for r, p in keys], method="lowest ratio of accuracies over training seeds")
    out.append(Measured(
        "deepio_fig8_opportunistic_keeps_accuracy", worst, wci,
        why_not=(f"worst opportunistic accuracy {f8['val_accuracy'].min():.3f} "
                 f"against {f7.get(1, np.nan):.3f} with a full shuffle" if len(f8)
                 else "no Fig 8 training run (deepio.train_procs, ratios)")))
    return out


def measure_opp_rl(loader: pd.DataFrame, tier: str) -> Measured:
    """The lowest RL (%) of the opportunistic loader's orders over R, at the smallest P."""
    t = loader[loader["tier"] == tier]
    o = t[(t["mode"] == "opportunistic") & (t["P"] == t["P"].min())] if len(t) else t
    low = o.loc[o["RL_percent"].idxmin()] if len(o) else None
    return Measured(
        "deepio_opp_rl_high", float(low["RL_percent"]) if low is not None else None,
        note="compared with the poster's RL for k = 4, which trained like a full shuffle",
        why_not=(f"at R = {low['R']:g}, P = {low['P']:g} each process draws among at most "
                 f"{low['R'] * low['samples'] / low['P']:.0f} samples in memory"
                 + (f" of {low['samples']:.0f}" if "samples" in low else ""))
        if low is not None and "samples" in low else
        f"no opportunistic loader run on tier {tier}")


def measure_beegfs(env: dict) -> list[Measured]:
    """The poster's BeeGFS bandwidths (MB/s): not measured on one box, with what this run had.

    16 nodes reading a parallel file system, whose client and server caches hold the small
    set. The row says what it needs (16 nodes: 8 GB / 512 MB per node) and what this run had
    (env.json's scale), and what would make it measurable."""
    why = (f"needs {BEEGFS_NODES} nodes reading BeeGFS (the poster's cluster; it does not state the "
           f"processes per node, so at least {BEEGFS_NODES}, one a "
           f"node); {reasons.scale_had(env)}, and no tier here is a parallel file system. To measure "
           f"it: the paper profile inside an allocation of {BEEGFS_NODES} nodes (salloc -N "
           f"{BEEGFS_NODES} make paper) spreads deepio.procs up to {BEEGFS_NODES} over every "
           "node (nodes: [1, all]); it also needs a tier on the BeeGFS mount and a loader "
           "data set of 512 MB (small) or 10 GB (large) per node. The cache effect behind the "
           "gap is what blog_warm_faster measures on this box")
    # Fig 2 (the Dataset API against raw reads) is measured by tfdata_read (variant raw).
    return [Measured(f"deepio_beegfs_{size}_dataset_MBps", why_not=why) for size in ("small", "large")]
