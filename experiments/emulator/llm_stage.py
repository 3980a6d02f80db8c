"""What the ``llm_checkpoint`` stage measures (notebook 55): the LLM checkpoint workload on each
tier in its variants (:data:`VARIANTS`), run after run through the one measuring-stage interface
(:func:`measure`), and the burst buffer in front (:func:`burst_buffer`); the per-checkpoint and
per-phase metrics and the bound verdict of each phase (:func:`summarize`, :func:`bounds`). The
claims and figures are :mod:`.llm_report`'s.

Variants per tier, each run a :func:`.llm_checkpoint.run_variant`:

- ``fsync``: writes with fsync of files and folder; the cache evicted before the reads
  (``cold`` reads; a memory-backed tier cannot be evicted and is flagged ``cache-served``);
- ``no-fsync``: writes without fsync (what a benchmark that forgets it measures); the reads
  right after, cache not dropped (``cache-served``, as DLIO's issue 277 found);
- ``direct`` (``read_direct``, tiers that are not memory-backed): as ``fsync``, reads with
  O_DIRECT.

Units: GiB/s = 2^30 B/s, s.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import llm_burst_buffer as B, llm_checkpoint as C, llm_layout as L

VARIANTS = {"fsync": dict(fsync=True, evict="auto", direct=False),
            "no-fsync": dict(fsync=False, evict="none", direct=False),
            "direct": dict(fsync=True, evict="auto", direct=True)}


def check(cfg, tiers: dict[str, Path]) -> None:
    """Stop before any work (ConfigError, one line) when a tier of the stage cannot take its
    checkpoints (:func:`.llm_checkpoint.check`: writable, disk, memory) or the burst buffer's
    fast tier one checkpoint and its slow tier all of them."""
    lo = L.layout(cfg.model, cfg.ranks, cfg.scale)
    for t in cfg.tiers:
        C.check(lo, tiers[t] / "llm_checkpoint", cfg.checkpoints, direct=cfg.read_direct)
    b = cfg.burst_buffer
    blo = L.layout(cfg.model, cfg.ranks, b.scale or cfg.scale)
    from ..chien.burst_buffer import CheckpointManager
    CheckpointManager(tiers[b.fast], tiers[b.slow], run="llm-bb-check", keep=max(b.keeps)).check(
        blo.total_bytes + sum(map(len, blo.files)) * C.HEADER_BYTES, b.checkpoints)


KEYS = ("tier", "variant")   # the columns that name a configuration
FILES = {"rows": "evictions.csv", "files": "raw.parquet", "steps": "ranks.csv", "device": "device.csv"}


def measuring_stage(cfg, tiers: dict[str, Path], seed: int, pool):
    """The stage as the loop runs it (:class:`experiments.repeats.MeasuringStage`), built, not
    run: every variant on every tier of ``cfg.tiers`` (``tiers``: name -> folder; ``direct``
    only on a tier not memory-backed), ``cfg.runs`` rounds in a seeded order, each run's
    ranks from ``pool`` (a :class:`experiments.host.launcher.RankPool` of the layout's ranks). A
    run writes ``cfg.checkpoints`` checkpoints and reads them back: its row is its eviction
    (method, residency before the reads, the read mode), its side tables its ``files``, its
    ranks' ``steps`` and each phase's ``device`` audit."""
    from .. import repeats
    from ..host import cache, device_audit
    from ..host.tiers import storage_tier_of

    lo = L.layout(cfg.model, cfg.ranks, cfg.scale)
    configs = [{"tier": t, "variant": v} for t in cfg.tiers for v in VARIANTS
               if not (v == "direct" and (cache.memory_backed(tiers[t]) or not cfg.read_direct))]

    def run_one(c: dict, repeat: int):
        t, v = c["tier"], c["variant"]
        r = C.run_variant(lo, tiers[t] / "llm_checkpoint", checkpoints=cfg.checkpoints,
                          pause_s=cfg.pause_s, seed=seed, pool=pool, label=t, tier=t,
                          variant=v, **VARIANTS[v])
        ev = {k: v for k, v in r["eviction"].items() if k not in ("missing", "unreadable")}   # lists of paths
        rd, wr = (device_audit.columns(r["device"][op]) for op in ("read", "write"))
        audit = {"device_read_ratio": rd["device_read_ratio"], "read_from": rd["read_from"],
                 "device_write_ratio": wr["device_write_ratio"], "written_to": wr["written_to"]}
        device = pd.DataFrame([{"op": op, **device_audit.columns(a)} for op, a in r["device"].items()])
        return repeats.Run({"read": r["read"], **ev, **audit},
                           {"files": r["files"].drop(columns=["tier", "variant"], errors="ignore"),
                            "steps": r["steps"].drop(columns=["tier", "variant"], errors="ignore"),
                            "device": device})

    return repeats.MeasuringStage("llm_checkpoint", KEYS, configs, run_one,
                                  repeats.RoundsPlan(cfg.runs, cfg.runs), seed,
                                  tables=("files", "steps", "device"), files=FILES, progress="llm_checkpoint runs",
                                  context=lambda rows: {"storage_tier": storage_tier_of(rows)},
                                  units="steps", unit_quantities=("io_s",), unit_seconds="io_s")


def measure(cfg, tiers: dict[str, Path], seed: int = 0, purchases=()):
    """:func:`measuring_stage` measured with one pool of ranks for all its runs (the tiers
    checked first, :func:`check`), then the runs ``make decide`` bought (``purchases``:
    ``decide.llm_checkpoint``). Returns the :class:`experiments.repeats.Measurement`."""
    from .. import repeats
    from ..host import launcher

    check(cfg, tiers)
    with launcher.RankPool(L.layout(cfg.model, cfg.ranks, cfg.scale).ranks, C.RANK_PROGRAM) as pool:
        return repeats.measure(measuring_stage(cfg, tiers, seed, pool), purchases)


def summarize(steps: pd.DataFrame, device: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per checkpoint and per run (tier, variant, phase) metrics (:func:`.llm_checkpoint.metrics`),
    with the read mode, each phase's device audit (``device``: the measurement's ``device`` table,
    one row per run and op; its ratios the median over runs, where the bytes came from the most
    frequent answer) and the phase's verdict: none for reads served from the page cache and for
    writes the page cache still held when the phase ended (``written_to`` cache: no fsync)."""
    per, run = C.metrics(steps, ["tier", "variant", "read"])
    if device is not None and len(device):
        keys = ["tier", "variant", "op"]
        num = [c for c in device.columns if c not in keys and pd.api.types.is_numeric_dtype(device[c]) and c != "run"]
        txt = [c for c in device.columns if c not in keys + num + ["run"]]
        g = device.groupby(keys)
        dev = pd.concat([g[num].median(), g[txt].agg(lambda x: x.mode().iloc[0] if x.notna().any() else None)],
                        axis=1).reset_index()
        run = run.merge(dev, on=keys, how="left")
    held = run["written_to"].eq("cache") if "written_to" in run else pd.Series(False, index=run.index)
    run["verdict"] = [C.verdict(r) if op == "read" else WRITES_HELD if h else "storage"
                      for r, op, h in zip(run["read"], run["op"], held)]
    return per, run


WRITES_HELD = "no storage verdict: the page cache held the writes when the phase ended (device audit)"


JOB = {"write": "seqwrite", "read": "seqread"}   # the fio_baseline job a phase is judged against


def bounds(run: pd.DataFrame, steps: pd.DataFrame, fio: pd.DataFrame | None) -> pd.DataFrame:
    """``run`` with the emulator's bound verdict (:func:`experiments.emulator.bound.verdict`) of
    each phase that reached the storage: its run throughput against fio's sequential write or
    read on the same tier (``fio_MBps``, ``client_fraction_of_fio``), a rank's busiest demand
    (its thread's on-CPU and run-queue seconds over its I/O seconds: torch.save and torch.load
    run on the rank's one thread; the median over checkpoints of the largest over ranks) and the
    ranks' CPU share of the host's cores. The timed part of a rank does nothing but I/O, so its data wait is all of it.
    A phase whose reads or writes were the page cache's gets no verdict."""
    from ..verdicts.reasons import fio_MBps
    from .bound import host_cores, verdict

    s = steps.assign(demand=steps["demand_s"] / steps["io_s"])
    keys = ["tier", "variant", "read", "op"]
    g = s.groupby(keys + ["step"])
    per = pd.DataFrame({"busiest": g["demand"].max(),
                        "share": g["cpu_s"].sum() / (g["io_s"].max() * host_cores())}).reset_index()
    med = per.groupby(keys)[["busiest", "share"]].median()
    rows = []
    for _, r in run.iterrows():
        mb = fio_MBps(fio, r["tier"], JOB[r["op"]])
        ref = {"bytes_per_s": mb * 1e6, "how": f"fio_baseline {JOB[r['op']]} on tier {r['tier']}"}
        m = med.loc[tuple(r[k] for k in keys)]
        b, why, frac = (("no verdict", r["verdict"], float("nan")) if r["verdict"] != "storage" else
                        verdict(r["run_throughput_GiBps"] * C.GiB, ref, 1.0, m["busiest"], m["share"],
                                "main thread"))
        rows.append({"fio_MBps": mb, "client_fraction_of_fio": frac, "bound": b, "bound_why": why,
                     "busiest_demand": m["busiest"], "cpu_share": m["share"]})
    return pd.concat([run.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


BB_KEYS = ("mode", "keep")   # the columns that name a burst buffer configuration (keep None: direct)


def burst_buffer_stage(cfg, tiers: dict[str, Path], seed: int = 0):
    """The burst buffer's runs (:mod:`.llm_burst_buffer`) as a measuring stage
    (:class:`experiments.repeats.MeasuringStage`), built, not run (its tiers checked): writing
    direct to the slow tier and through the burst buffer at each keep, ``cfg.runs`` rounds in
    a seeded order (a fixed count, looked at once); a run writes ``burst_buffer.checkpoints``
    checkpoints of the stage's layout (at ``burst_buffer.scale``), its rows one per checkpoint
    (its stalls). The state a checkpoint saves is generated at the first run and kept (the
    training state is in memory already: no part of a stall). When ``make decide`` appends
    to the stage (it buys variant runs), the burst buffer's runs of before are kept as they are
    (``burst_buffer.csv``: :func:`experiments.repeats.stage.kept`)."""
    from .. import repeats

    b = cfg.burst_buffer
    lo = L.layout(cfg.model, cfg.ranks, b.scale or cfg.scale)
    fast, slow = tiers[b.fast], tiers[b.slow]
    B.check(lo, fast, slow, b.keeps, b.checkpoints)
    state: list = []

    def run_one(c: dict, repeat: int) -> list[dict]:
        if not state:
            state.extend(B.states(lo))
        rows = B.run_mode(state, fast, slow, c["keep"], b.interval_s, b.checkpoints, b.slow_MBps)
        return [{k: v for k, v in r.items() if k not in BB_KEYS} for r in rows]

    configs = [{"mode": "direct", "keep": None}, *({"mode": "burst buffer", "keep": k} for k in b.keeps)]
    return repeats.MeasuringStage("llm_checkpoint", BB_KEYS, configs, run_one,
                                  repeats.RoundsPlan(cfg.runs, cfg.runs), seed,
                                  files={"rows": "burst_buffer.csv"}, progress="llm_checkpoint burst buffer runs")


def burst_buffer(cfg, tiers: dict[str, Path], seed: int = 0) -> pd.DataFrame:
    """The burst buffer's stalls (:func:`burst_buffer_stage` measured): one row per checkpoint
    (``run``: the unit of the stalls' intervals), direct first, then each keep."""
    from .. import repeats

    rows = repeats.measure(burst_buffer_stage(cfg, tiers, seed)).rows
    order = [-1 if pd.isna(k) else k for k in rows["keep"]]   # direct (keep NaN) first
    by = ["_order", *(c for c in ("repeat", "step") if c in rows)]   # a file kept from before the rounds lacks repeat
    return (rows.assign(_order=order).sort_values(by, kind="stable")
            .drop(columns="_order").reset_index(drop=True))
