"""DeepIO (Zhu et al. 2018): randomization level, accuracy against it, ordered vs opportunistic reads.

Three measurements:

1. :func:`rl_table` - RL (see :mod:`experiments.deepio.randomization`) of orders kept in constant order
   in blocks of k samples, exact and from generated orders, beside the poster's 73/49/16 %.
2. :func:`train_curves` - validation accuracy per epoch of a small real classifier (a one-hidden-
   layer MLP in numpy, plain mini-batch SGD) on scikit-learn's digits (1,797 8x8 images, stored
   in class order: the "constant order"), fed in each order (Fig 7) and in the orders of the
   opportunistic loader for each memory ratio R and process count (Fig 8).
3. :func:`measure_loader` - read bandwidth of a loader over the ImageNet-like JPEGs packed into
   one file per tier, P MPI ranks (:mod:`.loader_rank`, started by :mod:`experiments.host.launcher`:
   ``mpiexec`` on one host, ``srun`` over ``nodes`` nodes of a Slurm allocation; started once
   per (P, nodes), sleeping between runs), each owning
   a contiguous share and a buffer of R of it:
   ``ordered`` follows a global shuffled order and reads every sample with its own ``pread``;
   ``opportunistic`` serves what is in memory and refills with ``chunk``-sample sequential
   ``pread``s. Bandwidth is MB/s (10^6 B/s) of sample bytes, cold cache (Fig 10, 11 style).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from typing import ClassVar

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from ..host import cache, launcher
from . import randomization as rz
from ..host.cache import EvictionMethod
from ..settings.common_config import check_counts
from ..output.progress import progress
from ..host.tiers import prepare, require_free, storage_tier_of
from ..repeats.rounds import Rounds
from ..stages import Stage, count, rounds, tier_names


class DeepIOConfig(Rounds):
    # a look every 4 rounds: few looks keep the corrected level (Bonferroni over looks) low, so
    # the first look comes early (default: 6 to 18 rounds, looks at 8, 12, 16, 18 at 98.75 %)
    look_every: ClassVar[int] = 4
    block_sizes: list[int] = Field([1, 4, 16, 256], min_length=1,
                                   description="k: samples kept in constant order")
    ratios: list[float] = Field([1.0, 0.5, 0.25], min_length=1, description="R: memory / data set")
    procs: list[int] = Field([1, 2, 4], min_length=1, description="P: loader processes")
    train_procs: list[int] = Field([1, 4], min_length=1, description="P for the Fig 8 orders")
    epochs: int = Field(30, ge=1, le=1000)
    batch_size: int = Field(32, ge=1, le=1797)
    hidden: int = Field(32, ge=1, le=4096)
    learning_rate: float = Field(0.05, gt=0, le=10)
    train_runs: int = Field(2, ge=1, le=20, description="training runs (seeds) per order")
    chunk_samples: int = Field(64, ge=1, le=1_000_000, description="samples per sequential refill")
    loader_samples: int = Field(1024, ge=1, le=10_000_000, description="JPEGs used by the loader")
    eviction: EvictionMethod = "auto"
    nodes: launcher.NodeCounts = Field(
        [1], min_length=1, description="node counts each loader run is spread over (srun "
        "inside a Slurm allocation; 'all' = the allocation's nodes, 1 off Slurm); a count "
        "larger than the allocation stops before any work")

    @field_validator("ratios")
    @classmethod
    def _ratios(cls, v):
        bad = [r for r in v if not 0 < r <= 1]
        if bad:
            raise ValueError(f"every memory ratio R must be in (0, 1]; got {bad}")
        return v

    @field_validator("block_sizes")
    @classmethod
    def _k(cls, v):
        bad = [k for k in v if k < 1]
        if bad:
            raise ValueError(f"every block size k must be >= 1; got {bad}")
        return v

    @field_validator("procs", "train_procs")
    @classmethod
    def _p(cls, v):
        return check_counts(v, "process count P", 1, 256)


# ---------------------------------------------------------------- 1. RL of blocked orders

def rl_table(n: int, block_sizes: list[int], seed: int, paper: dict[int, float]) -> pd.DataFrame:
    """RL (percent) of orders of ``n`` samples in constant-order blocks of k, exact and measured
    on a generated order, with the poster's value where it gives one."""
    rows = []
    for k in block_sizes:
        order, choices = rz.blocked_order(n, k, np.random.default_rng([seed, k]))
        m = rz.rl_from_choices(choices, n)
        rows.append({"k": k, "n": n, "RL_percent": 100 * rz.rl_blocked(n, k),
                     "RL_measured_percent": 100 * m["RL"], "RL_total_percent": 100 * m["RL_total"],
                     "H_bits": m["H_bits"], "H_fully_bits": m["H_fully_bits"],
                     "paper_value": paper.get(k)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- 2. accuracy against order

def digits_data(seed: int):
    """scikit-learn's digits, split 75/25 (stratified, seeded); the training set sorted by class
    (the constant order). Features scaled to [0, 1]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.25, random_state=seed % (2**32),
                                          stratify=y)
    idx = np.argsort(ytr, kind="stable")
    return Xtr[idx].astype(np.float32), ytr[idx], Xva.astype(np.float32), yva


def train(order_fn, X, y, Xva, yva, cfg: DeepIOConfig, seed: int) -> list[float]:
    """Validation accuracy (fraction) after each epoch of an MLP trained with plain SGD on
    mini-batches taken, in turn, from ``order_fn(epoch)`` (an order of training indices)."""
    rng = np.random.default_rng(seed)
    d, h, c = X.shape[1], cfg.hidden, int(y.max()) + 1
    W1 = rng.normal(0, 1 / np.sqrt(d), (d, h)).astype(np.float32)
    b1 = np.zeros(h, np.float32)
    W2 = rng.normal(0, 1 / np.sqrt(h), (h, c)).astype(np.float32)
    b2 = np.zeros(c, np.float32)
    Y = np.eye(c, dtype=np.float32)[y]
    acc = []
    for epoch in range(cfg.epochs):
        order = order_fn(epoch)
        for s in range(0, len(order), cfg.batch_size):
            i = order[s:s + cfg.batch_size]
            a = np.maximum(X[i] @ W1 + b1, 0)
            z = a @ W2 + b2
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            g = (p - Y[i]) / len(i)
            ga = (g @ W2.T) * (a > 0)
            W2 -= cfg.learning_rate * a.T @ g
            b2 -= cfg.learning_rate * g.sum(0)
            W1 -= cfg.learning_rate * X[i].T @ ga
            b1 -= cfg.learning_rate * ga.sum(0)
        pred = (np.maximum(Xva @ W1 + b1, 0) @ W2 + b2).argmax(1)
        acc.append(float((pred == yva).mean()))
    return acc


def order_makers(n: int, cfg: DeepIOConfig, seed: int) -> list[tuple[str, dict, callable]]:
    """(figure, labels, epoch -> (order, choices)) for every order trained on."""
    out = []
    for k in cfg.block_sizes:
        out.append(("fig7", {"k": k, "R": None, "P": None},
                    lambda e, k=k: rz.blocked_order(n, k, np.random.default_rng([seed, k, e]))))
    for p in cfg.train_procs:
        for r in cfg.ratios:
            out.append(("fig8", {"k": None, "R": r, "P": p},
                        lambda e, r=r, p=p: rz.opportunistic_order(n, r, p, cfg.chunk_samples,
                                                                   seed, e)))
    return out


def train_curves(cfg: DeepIOConfig, seed: int) -> pd.DataFrame:
    """Validation accuracy per epoch for each order (Fig 7: block size k; Fig 8: loader R, P),
    ``train_runs`` runs each; also the RL of the epoch-0 order."""
    X, y, Xva, yva = digits_data(seed)
    n = len(X)
    rows = []
    makers = order_makers(n, cfg, seed)
    for fig, lab, make in progress(makers, desc="deepio: training"):
        rl = rz.rl_from_choices(make(0)[1], n)["RL"]
        for s in range(cfg.train_runs):
            acc = train(lambda e: make(e)[0], X, y, Xva, yva, cfg, seed + 1000 * s)
            rows += [{"figure": fig, **lab, "train_seed": s, "epoch": e + 1, "val_accuracy": a,
                      "RL_percent": 100 * rl, "n_train": n} for e, a in enumerate(acc)]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- 3. the loader's reads

def pack(manifest: pd.DataFrame, dest: Path) -> pd.DataFrame:
    """Concatenate the files of ``manifest`` (in its order) into ``dest/samples.bin`` with an
    index (offset, bytes); reused when the index matches. Written atomically, after checking
    that it fits (:func:`experiments.host.tiers.require_free`)."""
    dest.mkdir(parents=True, exist_ok=True)
    index_path = dest / "index.csv"
    sizes = manifest["bytes"].to_numpy()
    index = pd.DataFrame({"offset": np.concatenate([[0], np.cumsum(sizes)[:-1]]), "bytes": sizes})
    if index_path.exists():
        old = pd.read_csv(index_path)
        if old.equals(index) and (dest / "samples.bin").stat().st_size == sizes.sum():
            return index
    tmp = dest / "samples.bin.partial"
    tmp.unlink(missing_ok=True)
    require_free(dest, int(sizes.sum()), f"deepio's packed samples ({len(sizes)} files)",
                 "deepio.loader_samples", say=True)
    (dest / "samples.bin").unlink(missing_ok=True)
    with open(tmp, "wb") as out:
        for p in manifest["abspath"]:
            out.write(Path(p).read_bytes())
    os.replace(tmp, dest / "samples.bin")
    index.to_csv(dest / "index.csv.partial", index=False)
    os.replace(dest / "index.csv.partial", index_path)
    return index


RANK_PROGRAM = "experiments.deepio.loader_rank"


def run_loader(path: Path, index: pd.DataFrame, mode: str, procs: int, ratio: float, chunk: int,
               seed: int, nodes: int = 1, pool: launcher.RankPool | None = None) -> dict:
    """One cold-or-warm epoch of the loader with ``procs`` MPI ranks over ``nodes`` nodes
    (:mod:`.loader_rank`, in ``pool``, or in ranks started for this run alone:
    :class:`experiments.host.launcher.RankPool`); aggregate MB/s and RL."""
    path = Path(path).resolve()
    run_dir = path.parent / f".deepio-run-{uuid.uuid4().hex[:12]}"
    run_dir.mkdir()
    try:
        np.save(run_dir / "offsets.npy", index["offset"].to_numpy(np.int64))
        np.save(run_dir / "sizes.npy", index["bytes"].to_numpy(np.int64))
        spec = {"path": str(path), "mode": mode, "ratio": ratio, "chunk": chunk, "seed": seed,
                "offsets": str(run_dir / "offsets.npy"), "sizes": str(run_dir / "sizes.npy")}
        try:
            parts = launcher.call(RANK_PROGRAM, spec, procs, nodes, pool)
        except RuntimeError as e:
            raise RuntimeError(f"deepio loader {mode} P={procs} nodes={nodes}: {e}") from e
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    seconds = max(x["t1"] for x in parts) - min(x["t0"] for x in parts)
    nbytes = sum(x["bytes"] for x in parts)
    n = len(index)
    if mode == "ordered":
        rl = 1.0  # a global full shuffle: candidates n, n-1, ..., 1
    else:
        rl = rz.rl_from_choices(np.concatenate([x["choices"] for x in parts]), n)["RL"]
    return {"seconds": seconds, "bytes": nbytes, "requests": sum(x["requests"] for x in parts),
            "MBps": nbytes / 1e6 / seconds, "RL_percent": 100 * rl,
            "served": sum(len(x["order"]) for x in parts)}


def loader_findings(rows: pd.DataFrame, tables: dict | None = None) -> list:
    """The loader's bandwidth findings on the runs so far (:func:`experiments.deepio.findings.measure_loader`
    on :func:`summarize_loader` of the rows, on the tier they are judged on), at the level in
    force: the measure function the stage's rounds judge at each look."""
    from .findings import measure_loader

    return measure_loader(summarize_loader(rows), storage_tier_of(rows), raw=rows)


KEYS = ("tier", "mode", "R", "P", "nodes")   # the columns that name a loader configuration



def accuracy_curves(cfg: DeepIOConfig, seed: int) -> pd.DataFrame:
    """:func:`train_curves`, or, when ``make decide`` re-runs the stage to append loader runs,
    the curves the stage trained before (decide buys loader runs only; the accuracy findings
    rest on training seeds)."""
    from ..settings import paths
    from ..repeats.purchases import appending

    f = paths.results_dir("deepio") / "accuracy.csv"
    if appending("deepio") and f.exists():
        return pd.read_csv(f)
    return train_curves(cfg, seed)


def pack_tiers(cfg: DeepIOConfig, staged: dict[str, pd.DataFrame], tiers) -> dict[str, tuple]:
    """Each tier's first ``loader_samples`` samples of ``staged`` (tier name -> manifest of the
    JPEG copy on that tier) packed into one file there (:func:`pack`), outside the runs: {tier:
    (file, index)}."""
    packs = {}
    for t in tiers:
        prepare(t)   # the tier checked (exists or made, writable) before its pack is written
        m = staged[t.name].iloc[:cfg.loader_samples]
        dest = t.dir / "deepio-pack"
        packs[t.name] = (dest / "samples.bin", pack(m, dest))
    return packs


def measuring_stage(cfg: DeepIOConfig, packs: dict[str, tuple], tiers, seed: int, pools, evictions: dict):
    """Ordered vs opportunistic read bandwidth for each tier, R, P and node count of ``nodes``
    (at most P) as one measuring stage (:class:`experiments.repeats.MeasuringStage`), built, not
    run: a run per configuration and round over each tier's packed samples (``packs``:
    :func:`pack_tiers`), the cache evicted before each (its method kept in ``evictions``), the
    ranks from ``pools`` (:class:`experiments.host.launcher.Pools`). At least ``runs`` rounds,
    more while a bandwidth finding is undecided (:func:`loader_findings`, judged by the declared
    rules)."""
    from .. import repeats
    from ..verdicts import looks
    from ..repeats import findings

    node_counts = launcher.resolve_nodes(cfg.nodes)  # stops before any work when too many
    mem = {t.name: prepare(t).memory_backed for t in tiers}
    configs = [{"tier": t.name, "mode": mode, "R": r, "P": p, "nodes": n} for t in tiers
               for mode in ("ordered", "opportunistic") for r in cfg.ratios for p in cfg.procs
               for n in node_counts if n <= p]

    def run_one(c, i):
        path, index = packs[c["tier"]]
        evictions[c["tier"]] = cache.evict([path], cfg.eviction, label=c["tier"])
        res = run_loader(path, index, c["mode"], c["P"], c["R"], cfg.chunk_samples, seed, nodes=c["nodes"],
                         pool=pools.get(c["P"], c["nodes"]))
        return {"memory_backed": mem[c["tier"]], "samples": len(index), "eviction": evictions[c["tier"]], **res}

    return repeats.MeasuringStage(
        "deepio", KEYS, configs, run_one, cfg.plan(), seed,
        judge=looks.judge("deepio", loader_findings), progress="deepio: loader rounds", quantities=("MBps",),
        focus=findings.focus("deepio", configs, lambda rows: {"storage_tier": storage_tier_of(rows)}),
        context=lambda rows: {"storage_tier": storage_tier_of(rows)})   # the tier the report judges


def measure_loader(staged: dict[str, pd.DataFrame], tiers, cfg: DeepIOConfig,
                   seed: int, purchases=()):
    """:func:`measuring_stage` measured, then the runs ``make decide`` bought (``purchases``:
    ``params.yaml``'s ``decide.deepio``). Returns the :class:`experiments.repeats.Measurement`
    (one row per run) and facts: eviction, the launcher (env.json) and the scale reached
    (``scale``: most ranks and nodes of a run)."""
    from .. import repeats

    node_counts = launcher.resolve_nodes(cfg.nodes)  # stops before any work when too many
    evictions = {}
    pools = launcher.Pools(RANK_PROGRAM)  # each (P, nodes)'s ranks start once, for all its runs
    try:
        stage = measuring_stage(cfg, pack_tiers(cfg, staged, tiers), tiers, seed, pools, evictions)
        got = repeats.measure(stage, purchases)
    finally:
        pools.close()
    return got, {"eviction": evictions,
                 "launcher": launcher.record(node_counts),
                 "scale": {"procs_max": max(c["P"] for c in stage.configs),
                           "nodes_max": max(c["nodes"] for c in stage.configs),
                           "allocation_nodes": launcher.allocation_nodes()}}


def summarize_loader(raw: pd.DataFrame) -> pd.DataFrame:
    """Median MB/s (min, max) per tier, mode, R, P and node count; opportunistic over ordered
    speed-up. (Raw tables without ``nodes`` ran on one node.)"""
    raw = raw if "nodes" in raw else raw.assign(nodes=1)
    s = (raw.groupby(["tier", "mode", "R", "P", "nodes"]).agg(
        MBps=("MBps", "median"), MBps_min=("MBps", "min"), MBps_max=("MBps", "max"),
        requests=("requests", "median"), RL_percent=("RL_percent", "median"),
        runs=("MBps", "size")).reset_index())
    base = s[s["mode"] == "ordered"].set_index(["tier", "R", "P", "nodes"])["MBps"]
    s["speedup_vs_ordered"] = [r.MBps / base[(r.tier, r.R, r.P, r.nodes)] for r in s.itertuples()]
    return s


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): tiers x both assemblies x ratios x (P, nodes) x rounds."""
    d = p["deepio"]
    return len(tier_names(p)) * 2 * count(d["ratios"]) * launcher.ranked(d["procs"], d.get("nodes")) * rounds(d)


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`); a node count ``all`` left out (the allocation's, unknown here)."""
    d = p["deepio"]
    nodes = [n for n in d.get("nodes", [1]) if n != "all"] or [1]
    return [{"tier": x, "mode": m, "R": r, "P": q, "nodes": n} for x in tier_names(p)
            for m in ("ordered", "opportunistic") for r in d["ratios"] for q in d["procs"] for n in nodes if n <= q]


STAGE = Stage("deepio", "notebooks/40-deepio.ipynb", "measuring", {"deepio": "DeepIOConfig"},
              ("seed", "tiers", "deepio"), True, "deepio_report", ("data/imagenet_like",),
              size="size", configs="configurations")
