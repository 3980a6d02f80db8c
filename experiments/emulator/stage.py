"""What the emulator's notebooks call.

``emulator_patterns`` (notebook 50): trace a short real run of each workload (the real program,
through :func:`experiments.workloads.launch.run_config`, so the framework's own checkpoint code
writes) and derive its checkpoint pattern from the VFS write rows to its checkpoint folder
(:func:`.checkpoint.derive`); write ``checkpoint_pattern.json`` (the file the emulator reads by
default), ``summary.csv`` (one row per traced checkpoint and writer), the traces and metrics.

``emulator`` (notebook 51, for storage engineers): the points to run (:func:`points`), their
emulator configurations on a tier (:func:`point_configs`), the emulation of each on each tier
with its accelerator utilization (:func:`run_grid`, drawn by :func:`experiments.emulator.figures.au_figure`), and the search
for the most accelerators each workload's storage feeds (:func:`search_all`).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pandas as pd

from ..settings import paths
from . import checkpoint
from .bench import stage_data  # noqa: F401 - the notebook stages data through here

# A short real run still writes every checkpoint the full run writes (same model, same code),
# and ranks = 2 shows who writes; these overrides keep it short.
SHORT = {"unet3d": {"train": {"epochs": 2, "eval_every": 0}},
         "bert": {"train": {"steps": 3, "eval_steps": 0}},
         "dlrm": {"train": {"steps": 4, "eval_every": 2, "eval_steps": 1}},
         "retinanet": {"train": {"epochs": 1}}}   # its one checkpoint comes after the last epoch


def trace_real_checkpoints(workload: str, section: dict, seed: int, data_dir, work_dir,
                           ranks: int = 2, batch_size: int | None = None, backend: str = "auto"):
    """Run a short real run of ``workload`` traced, and derive its checkpoint pattern.

    Returns ``(pattern, rows, trace)``; the run folder (application log) and the checkpoints
    stay under ``work_dir``."""
    return trace_runs([(workload, section, data_dir, work_dir, ranks, batch_size)], seed, backend)[workload]


def trace_runs(runs, seed: int, backend: str = "auto") -> dict:
    """Short real runs, each ``(workload, section, data_dir, work_dir, ranks, batch_size or None)``,
    traced in one tracer session (its probes attach once), one window per run; then each run's
    checkpoint pattern from its window: ``{workload: (pattern, rows, trace)}``."""
    from ..settings.config import merge
    from ..output.progress import progress
    from ..trace import Session
    from ..workloads import launch

    import torch.distributed  # noqa: F401 - loaded before tracing (libraries are not the pattern)
    done = {}
    roots = [Path(r[3]) for r in runs]
    for d in roots:
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    with Session(backend=backend, watch=roots, block=False, sample=False, quiet=True) as session:
        for workload, section, data_dir, work_dir, ranks, batch_size in progress(runs, desc="trace real checkpoints"):
            ck = Path(work_dir) / "checkpoints"
            (ck / workload).mkdir(parents=True)
            sec = merge(copy.deepcopy(section), SHORT[workload])
            sec["train"]["checkpoint_dir"] = str(ck)
            B = batch_size or min(sec["sweep"]["batch_sizes"])
            run_dir = Path(work_dir) / "run"
            with session.window(workload):
                launch.run_config(workload, sec, B, ranks, seed, Path(data_dir), run_dir)
            done[workload] = (ck, B, ranks, run_dir)
    out = {}
    for workload, (ck, B, ranks, run_dir) in done.items():
        trace = session.windows[workload].trace
        pattern, rows = checkpoint.derive(trace, [ck / workload], workload, ranks, app_log=run_dir)
        pattern.derived_from.update({"run": f"real {workload}, {ranks} ranks, batch {B}, short run "
                                            f"{SHORT[workload]}", "run_dir": str(run_dir)})
        out[workload] = (pattern, rows, trace)
    return out


def derive_all(cfgs: dict, seed: int, work_root=None, ranks: int = 2) -> dict:
    """Every workload of ``cfgs`` ({workload: validated section}): patterns, a table, traces."""
    work_root = Path(work_root or paths.data_dir("emulator_patterns"))
    runs = []
    for w, sec in cfgs.items():
        sec = sec.model_dump(mode="json") if hasattr(sec, "model_dump") else sec
        runs.append((w, sec, paths.data_dir(w), work_root / w, min(ranks, max(sec["sweep"]["ranks"])), None))
    got = trace_runs(runs, seed)
    pats = {w: p for w, (p, _, _) in got.items()}
    traces = {w: tr for w, (_, _, tr) in got.items()}
    rows = [{"workload": w, **x} for w, (_, r, _) in got.items() for x in r]
    return {"patterns": pats, "table": pd.DataFrame(rows), "traces": traces}


def pattern_summary(pats: dict) -> pd.DataFrame:
    """One row per workload: what the emulator will replay per checkpoint and writer."""
    rows = []
    for w, p in pats.items():
        s = p.summary
        rows.append({"workload": w, "writers": p.writers, "reuse": p.reuse,
                     **{k: s.get(k) for k in ("files", "writes", "bytes", "size_q1", "size_median",
                                              "size_q3", "size_min", "size_max")},
                     "ops": ", ".join(f"{k} {v}" for k, v in s.get("ops", {}).items()),
                     "files_named": ", ".join(f["name"] for f in p.files)})
    return pd.DataFrame(rows)


def points(cfg, workloads=None) -> list[dict]:
    """The points notebook 51 runs: for each of ``workloads`` (default: every workload of the
    ``emulator`` section's ``points``), ``{"workload", "section" (its validated params section),
    "batch_size", "accelerators"}`` from ``cfg`` (:func:`experiments.settings.config.load`'s result)."""
    from ..settings.config import ConfigError

    emu = cfg.emulator
    names = list(workloads) if workloads else list(emu.points)
    bad = [w for w in names if w not in emu.points]
    if bad:
        raise ConfigError(f"workloads = {bad}; allowed: {', '.join(emu.points)} (emulator.points)")
    return [{"workload": w, "section": getattr(cfg, w), **emu.points[w].model_dump()} for w in names]


def point_config(pt: dict, tier, compute_model: str, checkpoint_pattern: str, seed: int):
    """The emulator configuration of point ``pt`` (see :func:`points`) on ``tier``: its data set
    staged there (:func:`experiments.host.tiers.stage_copy`), checkpoints written there."""
    from .config import from_params

    w = pt["workload"]
    return from_params(w, pt["section"], pt["batch_size"], pt["accelerators"],
                       compute_model=compute_model, checkpoint_pattern=checkpoint_pattern,
                       data_dir=stage_data(w, tier), checkpoint_dir=tier.dir / "emulator-checkpoints" / w,
                       seed=seed)


def point_configs(pts: list[dict], tier, compute_model: str, checkpoint_pattern: str, seed: int) -> dict:
    """{workload: :func:`point_config`} for every point of ``pts``."""
    return {pt["workload"]: point_config(pt, tier, compute_model, checkpoint_pattern, seed) for pt in pts}


def run_grid(points: list[dict], tiers, out_root, compute_model: str, checkpoint_pattern: str,
             seed: int, evict: str = "auto") -> pd.DataFrame:
    """Each point ``{"workload", "section", "batch_size", "accelerators"}`` on each tier: the
    data set is staged on the tier (:func:`experiments.host.tiers.stage_copy`), evicted from the page
    cache, and emulated; checkpoints go to the tier too. One row per run (the summary)."""
    from ..host import cache
    from .runner import run

    rows = []
    for tier in tiers:
        for pt in points:
            cfg = point_config(pt, tier, compute_model, checkpoint_pattern, seed)
            method = cache.evict([Path(cfg.data_dir)], evict)
            s = run(cfg, Path(out_root) / f"{tier.name}-{pt['workload']}")
            rows.append({"tier": tier.name, "eviction": method, **_flat(s)})
    return pd.DataFrame(rows)


def search_all(cfgs: dict, out_root, limit: int) -> dict:
    """{workload: :func:`.search.max_accelerators` result} for each configuration of ``cfgs``
    ({workload: EmulatorConfig}): the most emulated accelerators its storage feeds at AU >= 90 %,
    up to ``limit``; each search writes under ``out_root / workload``. {} when ``limit`` is 0."""
    from .search import max_accelerators

    return {w: max_accelerators(c, Path(out_root) / w, limit=limit) for w, c in cfgs.items()} if limit else {}


def _flat(s: dict) -> dict:
    out = {}
    for k, v in s.items():
        if isinstance(v, dict):
            if k in ("data_bytes_by_rank",):
                continue
            out.update({f"{k}_{kk}": vv for kk, vv in v.items() if not isinstance(vv, (dict, list))})
        else:
            out[k] = v
    return out


def replay_check(pats: dict, work_root=None, backend: str = "auto") -> pd.DataFrame:
    """Replay every pattern (one checkpoint, rank 0; every writer's files for ``all``) under one
    tracer session (a window each) and derive the pattern again from that trace: one row per workload with the traced
    pattern's and the replay's files, writes, bytes and size quartiles, and ``match`` (the
    replay issued the same calls with the same sizes to the same number of files)."""
    from ..trace import Session

    work_root = Path(work_root or paths.data_dir("emulator_patterns")) / "replay"
    shutil.rmtree(work_root, ignore_errors=True)
    work_root.mkdir(parents=True)
    with Session(backend=backend, watch=[work_root], block=False, sample=False, quiet=True) as session:
        for w, p in pats.items():   # one window each; the probes attach once
            (work_root / w).mkdir()
            with session.window(w):
                checkpoint.replay(p, work_root / w, rank=0, tag="end")
    rows = []
    for w, p in pats.items():
        trace = session.windows[w].trace
        again, _ = checkpoint.derive(trace, [work_root / w], w, ranks=1)
        a, b = p.summary, again.summary
        want = [(checkpoint.file_name(n, "end", 0, p.writers), ws) for n, ws in p.plan(0)]
        # the names the replay wrote ({rank} found again by the derivation is rank 0 here)
        got = [(checkpoint.file_name(f["name"], "end", 0, "rank0"), checkpoint.unrle(f["writes"]))
               for f in again.files]
        same = want == got
        rows.append({"workload": w, "backend": trace.backend,
                     **{f"traced_{k}": a.get(k) for k in ("files", "writes", "bytes", "size_median")},
                     **{f"replayed_{k}": b.get(k) for k in ("files", "writes", "bytes", "size_median")},
                     "match": bool(same)})
    return pd.DataFrame(rows)


def pick_tier(tiers, tier: str):
    """The tier named ``tier`` in ``tiers``, or, for a directory path, a tier ``custom`` there
    (checked by :func:`experiments.host.tiers.prepare`: exists or can be made, writable); the
    lookup is :func:`experiments.host.tiers.tier_named`."""
    from ..host.tiers import tier_named
    return tier_named(tier, tiers, "tier", or_path=True)
