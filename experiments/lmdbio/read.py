"""LMDBIO (Pumma et al.): P processes reading one LMDB in batches, five read strategies.

The database holds N records of one size (CIFAR-like 3 KB, ImageNet-like ~110 KB), keys
``%010d``, written in key order with the ``lmdb`` package. Right after writing, the file offset
and size of every value is recorded ("provenance", kept beside the database as
``provenance.csv``): values larger than half a page live in contiguous overflow pages, so
(offset, size) is enough for a POSIX ``pread``.

Each run is an MPI program (:mod:`.mpi_rank`, started by :mod:`experiments.host.launcher`:
``mpiexec`` on one host, ``srun`` over ``nodes`` nodes of a Slurm allocation; the ranks of each
(P, nodes) start once and serve all its runs, sleeping between them). Ranks are
grouped into nodes: the ranks of one host (``COMM_WORLD.Split_type(COMM_TYPE_SHARED)``) in
groups of ``ranks_per_node`` (on one host the groups emulate nodes); node n owns a contiguous
slice of the records and, round by round, each of its ranks consumes one batch of
``batch_size`` records. Strategies (the paper's Fig 2 steps, each a real implementation):

- ``lmdb``      (a) every process maps the database and walks its batches with a cursor;
- ``lmm``       (b) one reader per node walks the node's batches with a cursor and shares them
  through an MPI-3 shared-memory window (``MPI.Win.Allocate_shared``); the others copy their
  batch out;
- ``dio_prov``  (c) as (b), but the reader ``pread``s each record at its recorded offset
  (``preadv`` straight into the window);
- ``coal``      (d) as (c), one ``preadv`` covering ``coalesce`` rounds of the node's records
  (split only where the 1,024-iovec limit falls), records into their slots, page headers
  between them into a scratch buffer;
- ``stag``      (e) as (d), with at most ``stagger_group`` readers in the file at a time.

The ranks of a node hand each round over at the window's synchronization. By default
(``handover: spin``) that is ``MPI.Win.Fence``: MPICH's waiters poll shared memory and yield
the CPU every ``MPIR_CVAR_POLLS_BEFORE_YIELD`` (1,000) polls, so waiting costs no sleep;
``handover: sleep`` uses ``MPI.Win.Sync`` around a barrier on pipes, where every wait sleeps
in the kernel (one voluntary context switch per process per barrier: 2 per round).
docs/lmdbio.md shows both.

Measured per run (cache evicted before it, residency measured after): total read time (first
start to last finish, ``time.perf_counter`` on each host, seconds), and the voluntary (the process slept:
waiting for I/O or for another process) and involuntary (it was preempted) context switches
of each process (``getrusage``), from which the figure's means per process come. One row per
process goes to ``facts["processes"]``.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from ..host import cache, launcher
from ..host.cache import EvictionMethod
from ..settings.common_config import check_counts
from ..host.envinfo import host_cores
from ..settings.config import ConfigError, Section
from .mpi_rank import node_plan
from ..output.progress import progress
from ..host.tiers import prepare, require_free
from ..repeats.rounds import Rounds
from ..stages import Stage, count, rounds, tier_names

STRATEGIES = ("lmdb", "lmm", "dio_prov", "coal", "stag")


class LMDBDataset(Section):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    records: int = Field(ge=1, le=100_000_000)
    record_bytes: int = Field(ge=1, le=1 << 30)


class LMDBIOConfig(Rounds):
    # a look every 4 rounds: few looks keep the corrected level (Bonferroni over looks) low, so
    # the first look comes early (default: 6 to 20 rounds, looks at 8, 12, 16, 20 at 98.75 %)
    look_every: ClassVar[int] = 4
    datasets: list[LMDBDataset] = Field(min_length=1)
    procs: list[int] = Field([1, 2, 4, 8], min_length=1, description="P: reading processes")
    ranks_per_node: int = Field(4, ge=1, le=1024)
    batch_size: int = Field(64, ge=1, le=1_000_000, description="records per process per round")
    coalesce: int = Field(4, ge=1, le=1024, description="rounds read per request in coal/stag")
    stagger_group: int = Field(1, ge=1, le=1024, description="readers in the file at a time")
    handover: Literal["spin", "sleep"] = Field(
        "spin", description="how a node's processes hand the shared window over between "
        "rounds: spin = MPI.Win.Fence (MPICH polls shared memory), sleep = MPI.Win.Sync around "
        "a barrier on pipes (each wait sleeps in the kernel: a voluntary context switch)")
    nodes: launcher.NodeCounts = Field(
        [1], min_length=1, description="node counts each run is spread over (srun inside a "
        "Slurm allocation; 'all' = the allocation's nodes, 1 off Slurm); a count larger than "
        "the allocation stops before any work")
    strategies: list[str] = Field(list(STRATEGIES), min_length=1)
    map_size_mib: int = Field(1024, ge=1, le=1 << 22)
    runs: int = Field(1, ge=1, le=50, description="rounds of every configuration, at least")
    eviction: EvictionMethod = "auto"
    handover_check: bool = Field(
        True, description="also run (b) LMM with both hand-overs (spin, sleep) at every P on the "
        "first data set of each tier that is not memory-backed: the evidence of what the "
        "context-switch claim measures")

    @field_validator("procs")
    @classmethod
    def _p(cls, v):
        return check_counts(v, "process count P", 1, 256)

    @field_validator("strategies")
    @classmethod
    def _s(cls, v):
        bad = [s for s in v if s not in STRATEGIES]
        if bad:
            raise ValueError(f"unknown strategies {bad}; allowed: {', '.join(STRATEGIES)}")
        return v

    @model_validator(mode="after")
    def _fits(self):
        cap = self.map_size_mib << 20
        for d in self.datasets:
            if d.record_bytes > cap:
                raise ValueError(f"datasets[{d.name}].record_bytes = {d.record_bytes} is larger "
                                 f"than the LMDB map size map_size_mib = {self.map_size_mib} "
                                 f"({cap} B); raise map_size_mib or lower record_bytes")
            need = d.records * (d.record_bytes + 64) * 1.1
            if need > cap:
                raise ValueError(f"datasets[{d.name}]: {d.records} records of {d.record_bytes} B "
                                 f"need about {need / 2**20:.0f} MiB, more than map_size_mib = "
                                 f"{self.map_size_mib}; raise map_size_mib")
        return self


# ---------------------------------------------------------------- building, with provenance

def _map_base(path: Path) -> tuple[int, int]:
    """(start address, file offset) of this process's mapping of ``path`` (/proc/self/maps)."""
    target = str(Path(path).resolve())
    best = None
    for line in Path("/proc/self/maps").read_text().splitlines():
        f = line.split(maxsplit=5)
        if len(f) == 6 and f[5] == target:
            lo = int(f[0].split("-")[0], 16)
            off = int(f[2], 16)
            if best is None or lo - off < best[0] - best[1]:
                best = (lo, off)
    if best is None:
        raise RuntimeError(f"{target} is not mapped in this process")
    return best


def _addr(buf) -> int:
    return np.frombuffer(buf, dtype=np.uint8).ctypes.data


def record_bytes(i: int, size: int, seed: int) -> bytes:
    """Record ``i``: ``size`` incompressible bytes that depend only on (seed, i)."""
    return np.random.default_rng([seed, i]).integers(0, 256, size, dtype=np.uint8).tobytes()


def estimated_bytes(records: int, size: int) -> int:
    """Bytes an LMDB of ``records`` values of ``size`` bytes takes: a value larger than half a
    4 KiB page lives on its own overflow pages; smaller ones share leaf pages (about 2/3 full)."""
    page = 4096
    per = math.ceil((size + 16) / page) * page + 64 if size > page // 2 - 32 else (size + 32) * 1.5
    return int(records * per * 1.05) + (1 << 20)


def _reusable(dest: Path, records: int, size: int, seed: int) -> pd.DataFrame | None:
    prov_path = dest / "provenance.csv"
    if prov_path.exists():
        prov = pd.read_csv(prov_path)
        if len(prov) == records and (prov["bytes"] == size).all() and \
                (dest / "data.mdb").exists() and (dest / f"seed-{seed}").exists():
            return prov
    return None


def require_room(dest: Path, records: int, size: int, seed: int, name: str, say: bool = True) -> None:
    """Stop before writing when the LMDB at ``dest`` must be (re)built and does not fit."""
    if _reusable(Path(dest), records, size, seed) is None:
        require_free(dest, estimated_bytes(records, size), f"lmdbio's {name} LMDB ({records} x {size} B)",
                     f"lmdbio.datasets[{name}].records or record_bytes", say=say)


def build(dest: Path, records: int, size: int, map_size: int, seed: int) -> pd.DataFrame:
    """Write the LMDB at ``dest`` (atomically) and its provenance; reuse one that matches.

    Stops before writing when it does not fit (:func:`require_room`); a build that dies half
    way leaves only ``<dest>.partial``, which the next build removes.
    Returns the provenance table: key index, file offset and size of every value in data.mdb.
    """
    import lmdb

    dest = Path(dest)
    prov = _reusable(dest, records, size, seed)
    if prov is not None:
        return prov
    if size > map_size:
        raise ConfigError(f"lmdbio: record_bytes = {size} is larger than the map size "
                          f"{map_size} B; raise map_size_mib")
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    require_room(dest, records, size, seed, dest.name.removeprefix("lmdbio-"), say=False)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = lmdb.open(str(tmp), map_size=map_size, subdir=True, lock=True, sync=False)
    batch = max(1, (64 << 20) // max(size, 1))
    for s in range(0, records, batch):
        with env.begin(write=True) as txn:
            for i in range(s, min(s + batch, records)):
                txn.put(b"%010d" % i, record_bytes(i, size, seed), append=True)
    env.sync(True)
    # Provenance: where each value lies in the file, read back once through the map.
    rows = []
    with env.begin(buffers=True) as txn:
        base, off0 = _map_base(tmp / "data.mdb")
        for i in range(records):
            v = txn.get(b"%010d" % i)
            rows.append((i, _addr(v) - base + off0, len(v)))
    env.close()
    prov = pd.DataFrame(rows, columns=["key", "offset", "bytes"])
    prov.to_csv(tmp / "provenance.csv", index=False)
    (tmp / f"seed-{seed}").write_text("")
    os.replace(tmp, dest)
    return prov


# ---------------------------------------------------------------- the work plan

def layout(records: int, procs: int, rpn: int, batch: int) -> list[dict]:
    """Per node: its processes and, per round, each process's first record (or None): the
    plan of ``procs`` ranks on one host in nodes of ``rpn`` (:func:`.mpi_rank.node_plan`, which
    the ranks follow)."""
    nodes = math.ceil(procs / rpn)
    return [{**node_plan(records, nodes, n, len(m), batch), "members": m}
            for n in range(nodes) for m in [list(range(n * rpn, min((n + 1) * rpn, procs)))]]


RANK_PROGRAM = "experiments.lmdbio.mpi_rank"


def run(path: Path, prov: pd.DataFrame, strategy: str, procs: int, cfg: LMDBIOConfig,
        size: int, nodes: int = 1, verify: bool = False,
        pool: launcher.RankPool | None = None) -> pd.DataFrame:
    """One run of ``strategy`` with ``procs`` MPI ranks over ``nodes`` nodes (:mod:`.mpi_rank`,
    in ``pool``, or in ranks started for this run alone: :class:`experiments.host.launcher.RankPool`);
    one row per process. With ``verify`` each row also holds a CRC-32 of the bytes its process
    consumed, in order."""
    run_id = uuid.uuid4().hex[:12]
    run_dir = Path(path).parent / f".lmdbio-run-{run_id}"
    run_dir.mkdir()
    try:
        np.save(run_dir / "offsets.npy", prov["offset"].to_numpy(np.int64))
        np.save(run_dir / "sizes.npy", prov["bytes"].to_numpy(np.int64))
        spec = {"path": str(Path(path).resolve()), "strategy": strategy, "batch": cfg.batch_size,
                "size": size, "coalesce": cfg.coalesce, "stagger_group": cfg.stagger_group,
                "ranks_per_node": cfg.ranks_per_node, "handover": cfg.handover,
                "offsets": str((run_dir / "offsets.npy").resolve()),
                "sizes": str((run_dir / "sizes.npy").resolve()),
                "pipes": tempfile.gettempdir(), "run_id": run_id, "verify": verify}
        try:
            rows = launcher.call(RANK_PROGRAM, spec, procs, nodes, pool)
        except RuntimeError as e:
            raise RuntimeError(f"lmdbio {strategy} P={procs} nodes={nodes}: {e}") from e
        return pd.DataFrame(rows)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def findings_of(rows: pd.DataFrame, env: dict | None) -> list:
    """LMDBIO's findings on the runs so far (:func:`experiments.lmdbio.findings.measure_steps` on
    the one-node runs of the tier they are judged on), at the level in force: the measure
    function the stage's rounds judge at each look (:func:`experiments.verdicts.looks.judge`).
    ``env``: what the findings read of env.json (:func:`judging_env`)."""
    from ..verdicts import reasons
    from ..host.tiers import storage_tier_of
    from .findings import measure_steps

    return measure_steps(reasons.one_node(summarize(rows)), storage_tier_of(rows), env or {}, reasons.one_node(rows))


def context(rows: pd.DataFrame, env: dict | None) -> dict:
    """The named values LMDBIO's findings' ``compares`` use (their declarations), on the runs so
    far: ``storage_tier`` (the tier the report judges), ``claim_p`` (the P of the step findings:
    :func:`experiments.lmdbio.findings.claim_p`) and ``switch_ps`` (the P of the context-switch
    finding: :func:`experiments.lmdbio.findings.switch_ps`)."""
    from ..verdicts import reasons
    from ..host.tiers import storage_tier_of
    from .findings import claim_p, switch_ps

    if not len(rows):
        return {}
    tier = storage_tier_of(rows)
    s = summarize(rows)
    d = s[s["tier"] == tier]
    cores = reasons.cores(env or {})
    return {"storage_tier": tier, "claim_p": claim_p(d, cores),
            "switch_ps": switch_ps(d.loc[d["strategy"].isin(["lmm", "lmdb"]), "P"], cores)}


def judging_env(cfg: LMDBIOConfig) -> dict:
    """The part of env.json the findings read, for :func:`findings_of` while measuring: this
    process's usable cores (as :func:`experiments.host.envinfo.capture` records them), the hand-over
    and the ranks per node."""
    return {"cpu": {"count": os.cpu_count(), "affinity": host_cores()},
            "handover": cfg.handover,
            "params": {"lmdbio": {"ranks_per_node": cfg.ranks_per_node, "handover": cfg.handover}}}


KEYS = ("tier", "dataset", "strategy", "P", "nodes")   # the columns that name a configuration


def databases(tiers, cfg: LMDBIOConfig, seed: int) -> tuple[dict, dict]:
    """Each data set's LMDB on each tier (every one that must be built fits, checked before the
    first is written): ({(tier, data set): (folder, provenance, record bytes)}, {tier: memory-backed})."""
    dbs = {}
    mem = {t.name: prepare(t).memory_backed for t in tiers}
    for t in tiers:   # every LMDB that must be built fits, before the first is written
        for d in cfg.datasets:
            require_room(t.dir / f"lmdbio-{d.name}", d.records, d.record_bytes, seed, d.name)
    for t in tiers:
        for d in cfg.datasets:
            dest = t.dir / f"lmdbio-{d.name}"
            dbs[(t.name, d.name)] = (dest, build(dest, d.records, d.record_bytes,
                                                 cfg.map_size_mib << 20, seed), d.record_bytes)
    return dbs, mem


def measuring_stage(cfg: LMDBIOConfig, tiers, dbs: dict, mem: dict, seed: int, pools, evictions: dict):
    """Every (tier, data set, strategy, P, node count of ``nodes`` (at most P)) as one measuring
    stage (:class:`experiments.repeats.MeasuringStage`), built, not run: a run per configuration
    and round over the LMDBs ``dbs`` (:func:`databases`), the cache evicted before each (its
    method kept in ``evictions``), the ranks from ``pools`` (:class:`experiments.host.launcher.Pools`);
    at least ``runs`` rounds, more while a finding is undecided (:func:`findings_of`, judged by
    the declared rules), up to ``max_runs`` within ``budget_s``."""
    from .. import repeats
    from ..verdicts import looks
    from ..repeats import findings

    node_counts = launcher.resolve_nodes(cfg.nodes)  # stops before any work when too many
    configs = [{"tier": t.name, "dataset": d.name, "strategy": s, "P": p, "nodes": n} for t in tiers
               for d in cfg.datasets for s in cfg.strategies for p in cfg.procs for n in node_counts if n <= p]

    def run_one(c, i):
        tier, strategy, p, n = c["tier"], c["strategy"], c["P"], c["nodes"]
        dest, prov, size = dbs[(tier, c["dataset"])]
        ev = evictions[tier] = cache.evict([dest], cfg.eviction, label=tier)
        per = run(dest, prov, strategy, p, cfg, size, nodes=n, pool=pools.get(p, n))
        seconds = per["t1"].max() - per["t0"].min()
        return repeats.Run(
            {"memory_backed": mem[tier], "record_bytes": size, "handover": cfg.handover,
             "seconds": seconds, "bytes": int(per["bytes"].sum()),
             "MBps": per["bytes"].sum() / 1e6 / seconds,
             "cs_per_proc": float(per["context_switches"].mean()),
             "cs_vol_per_proc": float(per["cs_voluntary"].mean()),
             "cs_invol_per_proc": float(per["cs_involuntary"].mean()),
             "cs_max": int(per["context_switches"].max()),
             **io_switches(per),
             "readers": int(per["reader"].sum()) if strategy != "lmdb" else p,
             "eviction": str(ev), "resident_fraction": ev.resident_fraction},
            {"processes": per.drop(columns=["t0", "t1"]).assign(seconds=per["t1"] - per["t0"])})

    env = judging_env(cfg)
    return repeats.MeasuringStage(
        "lmdbio", KEYS, configs, run_one, cfg.plan(), seed,
        tables=("processes",), judge=looks.judge("lmdbio", lambda rows, tables: findings_of(rows, env)),
        focus=findings.focus("lmdbio", configs, lambda rows: context(rows, env)),
        context=lambda rows: context(rows, env), progress="lmdbio rounds",
        quantities=("seconds", "cs_per_proc"))


def measure(tiers, cfg: LMDBIOConfig, seed: int, purchases=()):
    """The LMDBs built (:func:`databases`), :func:`measuring_stage` measured, then the runs ``make
    decide`` bought (``purchases``: ``params.yaml``'s ``decide.lmdbio``). Returns the
    :class:`experiments.repeats.Measurement` (one row per run: total seconds, MB/s, context
    switches; side table ``processes``, one row per process of every run) and facts: the launcher
    (env.json), the scale reached (``scale``: most processes and nodes of a run) and the
    hand-over check (run once, kept by a decide run that appends)."""
    from ..settings import paths
    from .. import repeats

    node_counts = launcher.resolve_nodes(cfg.nodes)  # stops before any work when too many
    dbs, mem = databases(tiers, cfg, seed)
    evictions = {}
    pools = launcher.Pools(RANK_PROGRAM)  # each (P, nodes)'s ranks start once, for all its runs
    try:
        stage = measuring_stage(cfg, tiers, dbs, mem, seed, pools, evictions)
        got = repeats.measure(stage, purchases)
        hand_f = paths.results_dir("lmdbio") / "handover_check.csv"
        if repeats.purchases.appending("lmdbio") and hand_f.exists():
            hand = pd.read_csv(hand_f)
        else:
            hand = handover_check(dbs, tiers, mem, cfg, pools) if cfg.handover_check else pd.DataFrame()
        facts = {"eviction": {k: str(v) for k, v in evictions.items()}, "handover": cfg.handover,
                 "launcher": launcher.record(node_counts, cfg.ranks_per_node),
                 "scale": {"procs_max": max(c["P"] for c in stage.configs),
                           "nodes_max": max(c["nodes"] for c in stage.configs),
                           "allocation_nodes": launcher.allocation_nodes()},
                 "handover_check": hand}
    finally:
        pools.close()
    return got, facts


def io_switches(per: pd.DataFrame) -> dict:
    """Per process (mean over a run's ranks), the context switches outside MPI's waits (the
    hand-over and the stagger tokens, where MPICH yields while it polls: switches of the box's
    P against its cores, not of I/O): ``cs_io_vol_per_proc``, ``cs_io_invol_per_proc``, their
    sum ``cs_io_per_proc``, and the waits' own ``cs_wait_per_proc``. The paper's switches are
    I/O wake-ups (Sec 1 (1)); a rank table without the wait columns counts none."""
    wv = per["cs_wait_voluntary"] if "cs_wait_voluntary" in per else 0
    wi = per["cs_wait_involuntary"] if "cs_wait_involuntary" in per else 0
    v, i = per["cs_voluntary"] - wv, per["cs_involuntary"] - wi
    return {"cs_io_per_proc": float((v + i).mean()), "cs_io_vol_per_proc": float(v.mean()),
            "cs_io_invol_per_proc": float(i.mean()),
            "cs_wait_per_proc": float((per["context_switches"] - v - i).mean())}


def handover_check(dbs: dict, tiers, mem: dict, cfg: LMDBIOConfig,
                   pools: launcher.Pools | None = None) -> pd.DataFrame:
    """(b) LMM with each hand-over (``spin``, ``sleep``) and (a) LMDB, at every P, once, cold,
    on the first data set of every tier that is not memory-backed. One row per process:
    voluntary and involuntary context switches, reader or consumer. This separates what the
    hand-over costs from what the box (P against its cores) costs (docs/lmdbio.md)."""
    ds = cfg.datasets[0]
    plan = [(t.name, s, h, p) for t in tiers if not mem[t.name] for p in cfg.procs
            for s, h in (("lmdb", cfg.handover), ("lmm", "spin"), ("lmm", "sleep"))]
    out = []
    for tier, strategy, handover, p in progress(plan, desc="lmdbio hand-over check"):
        dest, prov, size = dbs[(tier, ds.name)]
        ev = cache.evict([dest], cfg.eviction, label=tier)
        per = run(dest, prov, strategy, p, cfg.model_copy(update={"handover": handover}), size,
                  pool=pools.get(p) if pools else None)
        out.append(per.drop(columns=["t0", "t1"]).assign(
            tier=tier, dataset=ds.name, strategy=strategy, handover=handover if strategy != "lmdb"
            else "none", P=p, seconds=per["t1"].max() - per["t0"].min(),
            resident_fraction=ev.resident_fraction))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=[
        "proc", "node", "reader", "bytes", "context_switches", "cs_voluntary", "cs_involuntary",
        "cs_wait_voluntary", "cs_wait_involuntary", "records", "tier", "dataset", "strategy",
        "handover", "P", "seconds", "resident_fraction"])


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    """Median seconds and context switches per (tier, dataset, strategy, P, nodes); speed-up
    over (a) at the same P and node count. (Raw tables without ``nodes`` ran on one node.)"""
    raw = raw if "nodes" in raw else raw.assign(nodes=1)
    cs = [c for c in ("cs_per_proc", "cs_vol_per_proc", "cs_invol_per_proc", "cs_io_per_proc",
                      "cs_io_vol_per_proc", "cs_io_invol_per_proc", "cs_wait_per_proc") if c in raw]
    s = (raw.groupby(["tier", "dataset", "strategy", "P", "nodes"], sort=False).agg(
        seconds=("seconds", "median"), seconds_min=("seconds", "min"),
        seconds_max=("seconds", "max"), MBps=("MBps", "median"),
        **{c: (c, "median") for c in cs}, runs=("seconds", "size")).reset_index())
    base = s[s["strategy"] == "lmdb"].set_index(["tier", "dataset", "P", "nodes"])["seconds"]
    s["speedup_vs_lmdb"] = [base.get((r.tier, r.dataset, r.P, r.nodes), np.nan) / r.seconds
                            for r in s.itertuples()]
    return s


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): tiers x data sets x strategies x (P, nodes) x rounds."""
    lm = p["lmdbio"]
    return (len(tier_names(p)) * count(lm["datasets"]) * count(lm["strategies"])
            * launcher.ranked(lm["procs"], lm.get("nodes")) * rounds(lm))


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`); a node count ``all`` left out (the allocation's, unknown here)."""
    lm = p["lmdbio"]
    nodes = [n for n in lm.get("nodes", [1]) if n != "all"] or [1]
    return [{"tier": x, "dataset": ds["name"], "strategy": s, "P": q, "nodes": n} for x in tier_names(p)
            for ds in lm["datasets"] for s in lm["strategies"] for q in lm["procs"] for n in nodes]


STAGE = Stage("lmdbio", "notebooks/42-lmdbio.ipynb", "measuring", {"lmdbio": "LMDBIOConfig"},
              ("seed", "tiers", "lmdbio"), True, "lmdbio_report", size="size", configs="configurations")
