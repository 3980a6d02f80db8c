"""DeepIO's loader findings as they are measured (Zhu et al. 2018, Fig 10): opportunistic over
ordered read bandwidth per memory ratio R and at every P, values and intervals from the runs
(:class:`experiments.verdicts.measured.Measured`).

The one measure function both sides call: the ``deepio`` stage's rounds judge these findings at
each look by their declared rules alone (:mod:`experiments.repeats.findings`), the
``deepio_report`` stage joins them with the poster's side (:mod:`.report`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..verdicts import reasons
from ..statistics import stats
from ..verdicts.measured import Measured


# The poster, DeepIO's ordered mode: the condition under which ordered reads lose.
ORDERED_PENALTY = ("the poster: ordered reads cost 'a massive number of small random reads from "
                   "backend storage to the storage buffer when the entire dataset cannot fit in "
                   "the memory'")


def measure_loader(loader: pd.DataFrame, tier: str, env: dict | None = None,
                   fio: pd.DataFrame | None = None, raw: pd.DataFrame | None = None) -> list[Measured]:
    """Fig 10: opportunistic over ordered MB/s (ratio of medians) per R at the largest P on
    ``tier``, and the lowest ratio over every P and R < 1 on every tier; each ratio's interval
    bootstrapped over the runs of ``raw`` (at the level in force:
    :func:`experiments.statistics.stats.corrected_level`). ``loader``: :func:`summarize_loader` of ``raw``.
    Judged on the one-node runs (:func:`experiments.verdicts.reasons.one_node`)."""
    env = env or {}
    loader, raw = reasons.one_node(loader), reasons.one_node(raw)
    out = []
    for t in list(dict.fromkeys(loader["tier"])) or [tier]:
        lt = loader[loader["tier"] == t]
        piv = lt.pivot_table(index=["R", "P"], columns="mode", values="MBps")
        ratio = (piv["opportunistic"] / piv["ordered"]) if {"opportunistic", "ordered"} <= set(piv) \
            else pd.Series(dtype=float)
        bw = lambda m, r, p: (stats.samples(raw, "MBps", tier=t, mode=m, R=r, P=p)  # noqa: E731
                              if raw is not None else None)
        seq, rnd = reasons.fio_MBps(fio, t, "seqread"), reasons.fio_MBps(fio, t, "randread")
        dev = (f"fio on {t}: random read {rnd:,.0f} MB/s, sequential {seq:,.0f} MB/s "
               f"(sequential / random = {seq / rnd:.1f}): "
               + ("small random reads cost no more than large sequential ones here, so "
                  "opportunistic ordering has nothing to win" if seq / rnd <= 1 else
                  "small random reads cost little more than large sequential ones here, so "
                  "there is little for opportunistic ordering to win" if seq / rnd < 2 else
                  "random reads cost more, yet the opportunistic loader did not gain"))
        cold = reasons.cold_run(env, t)
        if t == tier:
            out += _fig10_rows(lt, sorted(set(loader["R"])), t, bw, dev, cold)
        # The poster's argument is of backend storage and a data set that does not fit in
        # memory: every P and every R < 1; on a memory-backed tier there is no backend storage.
        ratio = ratio[[r < 1 for r, _ in ratio.index]] if len(ratio) else ratio
        worst = ratio.idxmin() if len(ratio.dropna()) else None
        v, ci = (float(ratio.min()) if worst is not None else np.nan), None
        if raw is not None and worst is not None:
            keys = list(ratio.dropna().index)
            # each (R, P) ratio at a Bonferroni level, the lowest's interval from theirs (issue 64)
            v, ci = stats.extreme([lambda lv, r=r, p=p: stats.ratio_of_medians(
                bw("opportunistic", r, p), bw("ordered", r, p), level=lv) for r, p in keys],
                method="lowest ratio over R < 1 and P")
        mem = bool(cold.get("memory_backed"))
        out.append(Measured(
            f"deepio_opp_faster_every_p_{t}", v, ci,
            note="; ".join(x for x in (
                f"lowest at R = {worst[0]:g}, P = {worst[1]:g}; highest {ratio.max():.2f}"
                if worst is not None else "",
                "our extension: a memory-backed tier has no backend storage to read from" if mem else "",
                ORDERED_PENALTY) if x),
            why_not=dev if worst is not None else f"no loader runs of both modes with R < 1 on tier {t}",
            extension=mem, **cold))
    return out


def _fig10_rows(lt: pd.DataFrame, ratios: list[float], t: str, bw, dev: str, cold: dict) -> list[Measured]:
    """Fig 10 on tier ``t`` (``lt``: its loader summary): opportunistic over ordered MB/s per R
    at the largest P (``bw``: the raw samples of (mode, R, P)). The note says what the ratio is
    of, from the runs' request counts: our ordered loader keeps no buffer and reads every sample
    with its own read at a shuffled offset whatever R, the opportunistic one reads chunks of
    consecutive samples; so R enters only through the refill size, not through whether the data
    set fits in memory (the poster's condition)."""
    pmax = lt["P"].max() if len(lt) else np.nan
    at = lt[lt["P"] == pmax].set_index(["mode", "R"])
    point = {r: at["MBps"].get(("opportunistic", r), np.nan) / at["MBps"].get(("ordered", r), np.nan)
             for r in ratios}
    every_r = ", ".join(f"R = {r:g}: {v:.2f}x" for r, v in point.items() if np.isfinite(v))
    out = []
    for r in ratios:
        v, ci = point[r], None
        if bw("ordered", r, pmax) is not None and np.isfinite(v):
            v, ci = stats.ratio_of_medians(bw("opportunistic", r, pmax), bw("ordered", r, pmax))
        req = at["requests"] if "requests" in at else pd.Series(dtype=float)
        ro, rp = req.get(("ordered", r), np.nan), req.get(("opportunistic", r), np.nan)
        mech = (f"requests per epoch at P = {pmax:g}: ordered {ro:.0f} (one read per sample, at "
                f"shuffled offsets), opportunistic {rp:.0f} (sequential reads of up to "
                "deepio.chunk_samples consecutive samples); our ordered loader keeps no buffer and "
                "reads every sample from the tier at every R, so the ratio is the cost of many small "
                "random reads against few large sequential ones, not of the data set's fit in "
                f"memory; opportunistic / ordered at every R: {every_r}"
                if np.isfinite(ro) and np.isfinite(rp) else
                f"opportunistic / ordered at every R: {every_r}")
        out.append(Measured(f"deepio_fig10_opp_faster_R{r:g}", v, ci, context=f"P = {pmax:g}, tier {t}",
                            note=mech, why_not=dev, **cold))
    return out
