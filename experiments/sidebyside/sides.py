"""Run each side of one workload at one (B, G) under the tracer, and measure its throughputs.

The four sides read the same data set (staged on the comparison's tier by
:func:`experiments.emulator.bench.stage_data`, evicted from the page cache before each side by
:func:`experiments.host.cache.evict`) and write their checkpoints to their own folder on that tier:

- ``real``: the workload's program (:func:`experiments.workloads.launch.run_config`, compute real);
- ``sleep``: the same program with ``compute: sleep``, the compute model at (G, B);
- ``emulator``: :func:`experiments.emulator.run` (no model; the compute model's sleep; the
  checkpoint pattern traced from the real run, ``results/emulator_patterns``);
- ``dlio``: :func:`experiments.dlio.prepare` + :func:`experiments.dlio.execute` (DLIO 2.0's
  config written from the same section; ``computation_time`` from the compute model). When DLIO
  cannot run here its side is ``not measured`` with DLIO's own reason;
- ``fixed``: the emulator as its side, on the workload's fixed-size variant of the data (every
  file one size, the v3.0 config's ``record_length_bytes``, as DLIO writes them:
  :data:`.settings.FIXED_DATA`, RetinaNet's ``data/retinanet-fixed``), staged on the same tier;
  a workload without such a variant does not run it (no row).

Each side runs inside one window of its pass's :class:`experiments.trace.Session` (one tracer,
the same back end and options for every side, attached once a pass: it follows every child: torchrun,
TF workers, ``mpiexec`` and its ranks; each side's trace is its window, cut out by time), and
ends with ``sync`` inside its window so that each side's checkpoint writeback lands in its own
trace. Its vector (:func:`experiments.trace.vector.characteristic_vector`) counts reads of
the data files, writes to its checkpoint folder, and block requests touching those files'
extents (``block_files``: the box is shared, other programs' requests are left out).

Throughputs (one row per side, :func:`throughput_row`):

- ``samples_per_s`` (compute throughput): training samples of all accelerators / training
  seconds (train phases, evaluation and checkpoints between them left out:
  :func:`experiments.emulator.report._train_seconds`); DLIO: its own per-epoch figure (median
  of the epochs after the first, converted to our samples by :mod:`experiments.dlio.outputs`);
- ``MBps``: bytes the loaders read for training / training seconds, 10^6 B/s
  (:func:`experiments.emulator.report.data_bytes`: the same measurement for the three sides
  that run our loaders; NaN where the records hold no byte count: the real and sleep BERT
  ranks do not log ``/proc/self/io``); DLIO: its samples/s x bytes per sample;
- ``data_sps`` / ``compute_sps``: **the thesis's data and compute throughputs** (Sec 4.4,
  Fig 5.6, 5.11, 5.17): samples per step (per rank; DLRM: the global batch, as our step
  records count it) / median data wait, and / median compute time, of the steady steps (:func:`experiments.workloads.fits.step_summary`); DLIO: the same
  from its per-step ``load`` and ``compute`` times (each epoch's first step left out);
- ``vfs_read_MB``: the trace's bytes read from data files over the whole run (init and
  evaluation included), the same for every side;
- the device audit (:func:`audit`, :mod:`experiments.host.device_audit`): ``device_read_MB`` beside
  ``job_read_MB`` (the bytes behind ``MBps``; DLIO: of the epochs its figure is the median of),
  their ``device_read_ratio`` and ``read_from`` (``cache``: the side's figure was the page
  cache's), the same columns for the writes.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import time
from pathlib import Path

import pandas as pd

from ..host import cache, device_audit
from ..settings.config import ConfigError, merge


def _files(folders) -> list[Path]:
    out = []
    for f in folders:
        f = Path(f)
        if f.is_file():
            out.append(f.resolve())
        elif f.is_dir():
            out += [p.resolve() for p in f.rglob("*") if p.is_file()]
    return sorted(set(out))


def _empty(folder: Path) -> Path:
    """``folder``, emptied (made where missing): a side's checkpoints start from nothing."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def section_for(workload: str, section: dict, overrides: dict | None, checkpoint_dir: Path) -> dict:
    """The workload's section as every side runs it: ``overrides`` laid over, checkpoints to
    ``checkpoint_dir``."""
    sec = merge(copy.deepcopy(section), copy.deepcopy(overrides or {}))
    sec["train"]["checkpoint_dir"] = str(checkpoint_dir)
    return sec


def prepare_dlio(workload: str, section: dict, batch_size: int, ranks: int, *, seed: int, data_dir: Path,
                 work_dir: Path, checkpoint_root: Path, compute_model: str, dlio_timeout_s: int = 600):
    """DLIO's plan for the ``dlio`` side (:func:`experiments.dlio.prepare`: its config, and its
    own data set generated where it needs one), or why it could not be made (a string). Made
    before the tracer session: the generation renames its folder, and a session names a file
    by the folder names it saw first."""
    from .. import dlio

    run_dir = Path(work_dir) / "dlio"
    ck = _empty(Path(checkpoint_root) / "dlio")
    try:
        shutil.rmtree(run_dir, ignore_errors=True)
        return dlio.prepare(workload, section_for(workload, section, None, ck), ranks, run_dir,
                            batch_size=batch_size, compute_model=compute_model, data_dir=data_dir,
                            checkpoint_dir=ck / workload, timeout_s=dlio_timeout_s, seed=seed)
    except (dlio.DlioUnavailable, ConfigError, RuntimeError, OSError) as e:
        # DLIO's own limits (its environment, what its config can express): recorded, never skipped
        return f"DLIO could not be prepared: {e}"


def run_side(side: str, workload: str, section: dict, batch_size: int, ranks: int, *, seed: int,
             data_dir: Path, work_dir: Path, checkpoint_root: Path, compute_model: str, session,
             plan=None, checkpoint_pattern: str = "traced", eviction: str = "auto", fixed_data=None,
             parents=None) -> dict:
    """Run ``side`` of ``workload`` at (``batch_size``, ``ranks``) in a window of ``session``
    (an :class:`experiments.trace.Session`); ``plan``: the ``dlio`` side's
    :func:`prepare_dlio`; ``fixed_data``: the ``fixed`` side's data (the staged fixed-size variant);
    ``parents``: the pass's warm parents (:class:`experiments.host.warm_launch.Parents`, started
    inside ``session`` so that it follows their forks), from which the sides that run our
    programs fork their ranks where the parents serve them (``Parents.serves``), or None (fresh processes).
    Returns a dict: ``side``, ``workload``, ``status`` (``pending`` until
    :func:`finish_side`, or not measured), ``why``, ``window``, ``run_dir``, ``data`` and
    ``checkpoint`` (the vector's filters), ``block_files``, ``eviction``, ``wall_s`` (the side
    alone, s), and ``dlio`` (DLIO's result) for that side."""
    work_dir = Path(work_dir)
    run_dir = work_dir / side
    if side == "fixed":   # the emulator on the fixed-size variant (prepare_workload staged it)
        data_dir = fixed_data
    ck = Path(checkpoint_root) / side
    if side != "dlio":   # DLIO's folder was made with its plan
        _empty(ck)
    sec = section_for(workload, section, None, ck)
    base = {"side": side, "workload": workload, "batch_size": batch_size, "ranks": ranks,
            "run_dir": str(run_dir), "trace": None, "vector": None, "dlio": None}
    data = [Path(data_dir)]
    if side == "dlio":
        if plan is None or isinstance(plan, str):
            return {**base, "status": "not measured", "why": plan or "DLIO was not prepared"}
        data = [Path(p) for p in plan.data_paths]
    method = cache.evict(data, eviction)
    t0 = time.perf_counter()
    # the device audit of the side, from outside its processes (:func:`audit` judges it)
    with session.window(f"{workload}/{side}") as win, \
            device_audit.Span(data[-1], f"traced_comparison {workload}/{side}") as span:
        if side in ("real", "sleep"):
            from ..workloads import compute_model as cm
            from ..workloads import launch

            compute = cm.resolve(compute_model, workload, ranks, batch_size) if side == "sleep" else None
            launch.run_config(workload, sec, batch_size, ranks, seed, Path(data_dir), run_dir,
                              compute=compute, variant=side, parents=parents)
            dres = None
        elif side in ("emulator", "fixed"):
            from .. import emulator

            cfg = emulator.from_params(workload, sec, batch_size, ranks, compute_model=compute_model,
                                       checkpoint_pattern=checkpoint_pattern, data_dir=data_dir,
                                       checkpoint_dir=ck / workload, seed=seed)
            emulator.run(cfg, run_dir, parents=parents)
            dres = None
        elif side == "dlio":
            from .. import dlio

            dres = dlio.execute(plan)
        else:
            raise ConfigError(f"traced_comparison.sides: {side!r}; allowed: real, sleep, emulator, dlio, fixed")
        os.sync()   # this side's checkpoint writeback inside its own trace
    wall = time.perf_counter() - t0
    block_files = _files([*data, ck])   # listed now: a later side's clean-up may remove them
    out = {**base, "window": win, "data": [str(p) for p in data], "checkpoint": [str(ck)],
           "block_files": [str(p) for p in block_files], "eviction": str(method), "wall_s": wall,
           "dlio": dres, "device_span": span,
           "launch": "warm" if side != "dlio" and parents is not None and parents.serves(ranks) else "fresh"}
    if dres is not None and dres.get("status") != "measured":
        return {**out, "status": "not measured", "why": dres.get("why", "DLIO did not finish")}
    return {**out, "status": "pending", "why": ""}


def finish_side(res: dict) -> dict:
    """A side of :func:`run_side` once its session has ended: its ``trace`` (the window),
    ``backend`` and, when it ran, its ``vector`` and status ``measured``."""
    from ..trace.vector import characteristic_vector

    if "window" not in res:   # it stopped before its window (DLIO could not be prepared)
        return res
    out = {k: v for k, v in res.items() if k != "window"}
    trace = res["window"].trace
    out.update(trace=trace, backend=trace.backend)
    if res["status"] != "pending":
        return out
    out["vector"] = characteristic_vector(trace, data=[Path(p) for p in res["data"]],
                                          checkpoint=[Path(p) for p in res["checkpoint"]],
                                          block_files=[Path(p) for p in res["block_files"]])
    return {**out, "status": "measured"}


def records(res: dict) -> dict:
    """The step, loader and phase records of a side that ran our programs (variant = the side):
    what :func:`experiments.workloads.launch.collect` reads; empty tables for DLIO."""
    from ..workloads import launch

    empty = {"steps": pd.DataFrame(), "loader": pd.DataFrame(), "phases": pd.DataFrame(), "app": [],
             "ranks": [], "usage": {}}
    if res["side"] == "dlio" or res["status"] != "measured" and res.get("trace") is None:
        return empty
    got = launch.collect(Path(res["run_dir"]))
    for k in ("steps", "loader", "phases"):
        if len(got[k]):
            got[k] = got[k].assign(variant=res["side"])
    got["steps"] = launch.given_steps(got)   # what a sleeping side was given, beside its steps
    got["app"] = [r | {"variant": res["side"]} for r in got["app"]]
    return got


def throughput_row(res: dict, got: dict) -> dict:
    """One row of ``throughput.csv`` for a side (see the module docstring for the columns)."""
    from ..emulator.report import _train_seconds, data_bytes
    from ..workloads.fits import step_summary

    w, B, G = res["workload"], res["batch_size"], res["ranks"]
    row = {"workload": w, "side": res["side"], "batch_size": B, "ranks": G, "status": res["status"],
           "why": res["why"], "backend": res.get("backend", ""), "wall_s": res.get("wall_s", float("nan")),
           "train_s": float("nan"), "samples": float("nan"), "samples_per_s": float("nan"),
           "data_MB": float("nan"), "MBps": float("nan"), "data_sps": float("nan"),
           "compute_sps": float("nan"),
           "vfs_read_MB": (res["vector"] or {}).get("vfs_read_bytes", float("nan")) / 1e6
           if res.get("vector") else float("nan")}
    if res["status"] != "measured":
        return row
    per_step = B   # samples per step as our step records count them (DLRM: the global batch)
    if res["side"] == "dlio":
        d = res["dlio"]["row"]
        row.update(train_s=d["train_s"], samples_per_s=d["samples_per_s"], MBps=d["MBps"],
                   samples=d["samples_per_s"] * d["train_s"], data_MB=d["MBps"] * d["train_s"])
        row.update(audit(res, d.get("data_bytes"), None))
        st = res["dlio"]["steps"]
        st = st[st["phase"] == "train"] if len(st) else st
        if len(st):
            # as step_summary: each epoch's first step left out (the loader starting)
            st = st[st["step"] > st.groupby(["rank", "epoch"])["step"].transform("min")] \
                if (st.groupby(["rank", "epoch"]).size() > 1).all() else st
            load, comp = st["load_s"].dropna(), st["compute_s"].dropna()
            row.update(data_sps=per_step / max(float(load.median()), 1e-9) if len(load) else float("nan"),
                       compute_sps=per_step / float(comp.median()) if len(comp) and comp.median() > 0
                       else float("nan"))
        return row
    steps = got["steps"]
    train_s, _ = _train_seconds(got["phases"])
    n = int(steps.groupby("rank").size().max()) if len(steps) else 0
    samples = n * B if w == "dlrm" else int(steps["samples"].sum())
    run = json.loads((Path(res["run_dir"]) / "run.json").read_text())
    by_rank, _ = data_bytes(run, got)
    # 0: the run's records hold no byte count (the real BERT ranks do not log /proc/self/io)
    nbytes = float(sum(by_rank.values())) or float("nan")
    st = step_summary(steps, None)
    row.update(train_s=train_s, samples=samples, samples_per_s=samples / train_s if train_s > 0 else float("nan"),
               data_MB=nbytes / 1e6, MBps=nbytes / 1e6 / train_s if train_s > 0 else float("nan"),
               data_sps=float(st["data_sps"].iloc[0]) if len(st) else float("nan"),
               compute_sps=float(st["compute_sps"].iloc[0]) if len(st) else float("nan"))
    own = {k: sum(r.get("io", {}).get(k, 0) for r in got["ranks"]) for k in ("read_bytes", "rchar")}
    row.update(audit(res, nbytes, own))
    return row


def audit(res: dict, read_bytes, own: dict | None) -> dict:
    """A measured side's device audit as throughput columns (:func:`experiments.host.device_audit.columns`):
    the bytes the side read for training (``read_bytes``, the basis of its ``MBps``) against the
    device's over its window, its ranks' own block reads (``own``: their ``/proc/self/io`` over
    their measured windows) and, where the block layer was traced, the requests on its data
    files' extents (the vector's ``bio_read_bytes``); writes: the trace's bytes written to its
    checkpoint folder against the device's (each window ends with ``sync``). ``read_from``
    cache: the side's figure was the page cache's, not the storage's. DLIO's side takes DLIO's
    own audit (:func:`experiments.dlio.runner.audit`: over the epochs its figure is the median of)."""
    span, v = res.get("device_span"), res.get("vector") or {}
    if (res.get("dlio") or {}).get("device_audit"):
        return device_audit.columns(res["dlio"]["device_audit"])
    if span is None:
        return device_audit.columns(None)
    from ..trace.vector import file_sectors

    bio = v.get("bio_read_bytes") if res.get("trace") is not None and res["trace"].meta.get("block_traced") else None
    if bio is not None and not file_sectors(_files(res["data"])[:4]):
        bio = None   # no extents (FIEMAP unsupported): no request could be matched to the files
    return device_audit.columns(span.judge(read_bytes, v.get("vfs_write_bytes"), own, bio))


def prepare_workload(workload: str, section: dict, point, cfg, seed: int, tier, work_root: Path) -> dict:
    """What the sides of ``workload`` need before the tracer session starts: the data staged on
    ``tier`` (the staging renames its folder), the section with ``cfg.overrides`` laid over and,
    when ``dlio`` is a side, DLIO's plan (:func:`prepare_dlio`)."""
    from ..emulator.bench import stage_data
    from .settings import FIXED_DATA

    sec = section_for(workload, section, cfg.overrides.get(workload), Path("."))
    data = stage_data(workload, tier)
    work = Path(work_root) / workload
    ck_root = tier.dir / "traced_comparison-checkpoints" / workload
    # the fixed side only where the workload has a fixed-size variant of its data
    sides = ["real", *[s for s in cfg.sides if s != "real" and (s != "fixed" or workload in FIXED_DATA)]]
    fixed = stage_data(FIXED_DATA[workload], tier) if "fixed" in sides else None
    plan = (prepare_dlio(workload, sec, point.batch_size, point.ranks, seed=seed, data_dir=data, work_dir=work,
                         checkpoint_root=ck_root, compute_model=cfg.compute_model,
                         dlio_timeout_s=cfg.dlio_timeout_s) if "dlio" in sides else None)
    return {"workload": workload, "section": sec, "point": point, "data_dir": data, "work_dir": work,
            "checkpoint_root": ck_root, "sides": sides, "dlio_plan": plan, "fixed_data": fixed}


def run_workload(prep: dict, cfg, seed: int, session, progress_desc: str | None = None, parents=None) -> dict:
    """Every side of a :func:`prepare_workload` at its point (``batch_size``, ``ranks``), each
    in a window of ``session`` (``parents``: :func:`run_side`'s): ``{"results": {side: run_side(...)}, "data_dir": staged data,
    "checkpoint_root": ...}``; :func:`finish_workload` completes it once the session has
    ended. The real run goes first; the others follow in ``cfg.sides`` order."""
    from ..output.progress import progress

    w, point = prep["workload"], prep["point"]
    res = {}
    model, hour = cfg.compute_model, None
    for side in progress(prep["sides"], desc=progress_desc or f"{w} sides"):
        res[side] = run_side(side, w, prep["section"], point.batch_size, point.ranks, seed=seed,
                             data_dir=prep["data_dir"], work_dir=prep["work_dir"],
                             checkpoint_root=prep["checkpoint_root"], compute_model=model,
                             session=session, plan=prep["dlio_plan"],
                             checkpoint_pattern=cfg.checkpoint_pattern, eviction=cfg.eviction,
                             fixed_data=prep.get("fixed_data"), parents=parents)
        if side == "real":
            model, hour = carried_model(res[side], prep, cfg)
    return {"results": res, "data_dir": str(prep["data_dir"]), "checkpoint_root": str(prep["checkpoint_root"]),
            "compute": hour}


def carried_model(real: dict, prep: dict, cfg) -> tuple:
    """What the sides after ``real`` (this pass's real side, :func:`run_side`) sleep for: with
    ``cfg.compute_level`` hour and the model ``fit``, the fit carried to this pass's hour by the
    real side's steady mean compute time (:mod:`experiments.workloads.hour_level`), written into
    the pass's folder (the emulator reads a file) and given to DLIO's plan
    (:func:`experiments.dlio.with_compute`); else ``cfg.compute_model`` as it is. Returns (the
    model's source, ``{"scale", "scale_from"}`` or None)."""
    from ..workloads import compute_model as cm
    from ..workloads import hour_level
    from ..workloads import launch

    if not hour_level.applies(cfg.compute_level, cfg.compute_model):
        return cfg.compute_model, None
    w = prep["workload"]
    base = cm.load(cfg.compute_model)
    steps = launch.collect(Path(real["run_dir"]))["steps"] if real.get("status") == "pending" else pd.DataFrame()
    model = hour_level.carried(base, w, hour_level.ratio(steps, base, w),
                               "this pass's real side, over the fit's runs at its (G, B)")
    if model is base:
        return cfg.compute_model, {"scale": 1.0, "scale_from": "the fit as it is: the real side measured no steady step"}
    f = Path(prep["work_dir"]) / "compute_model-hour.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(model.as_file(), indent=1))
    if prep.get("dlio_plan") is not None and not isinstance(prep["dlio_plan"], str):
        from .. import dlio

        dlio.with_compute(prep["dlio_plan"], str(f))
    factor, basis = model.scale[w]
    return str(f), {"scale": factor, "scale_from": basis}


def finish_workload(got: dict) -> dict:
    """:func:`run_workload`'s result once its session has ended, with each side's trace and
    vector (:func:`finish_side`), ``records`` ({side: :func:`records`}) and ``throughput``
    (a DataFrame of :func:`throughput_row`)."""
    res = {side: finish_side(r) for side, r in got["results"].items()}
    recs = {side: records(r) for side, r in res.items()}
    rows = [throughput_row(r, recs[side]) for side, r in res.items()]
    return {**got, "results": res, "records": recs, "throughput": pd.DataFrame(rows)}


def check_points(cfg, sections: dict) -> None:
    """Bad input stops before any run: a workload without its section, a list of sides without
    the real run (every side is compared with it). The emulator's and DLIO's own checks run
    per side."""
    for w in cfg.points:
        if w not in sections:
            raise ConfigError(f"traced_comparison.points.{w}: no `{w}` section in params.yaml")
    if "real" not in cfg.sides:
        raise ConfigError(f"traced_comparison.sides = {cfg.sides}; allowed: a list that includes real "
                          "(every side is compared with it)")
    ma = cfg.max_accelerators
    off = [w for w in ma.workloads if w not in cfg.points]
    if off:   # a search runs at the workload's point (its batch size and overrides)
        raise ConfigError(f"traced_comparison.max_accelerators.workloads = {ma.workloads}: {off} not in "
                          f"points; allowed: workloads of points ({', '.join(cfg.points)})")
    if ma.workloads and not ma.tiers:
        raise ConfigError("traced_comparison.max_accelerators.tiers = []; allowed: one or more tier names "
                          "(the search runs on each)")


def pick_tier(tiers, name: str, what: str = "traced_comparison.tier"):
    """The tier ``what`` names (:func:`experiments.host.tiers.tier_named`)."""
    from ..host.tiers import tier_named
    return tier_named(name, tiers, what)


def clean(done: dict) -> None:
    """Remove the checkpoints the sides wrote ({workload: run_workload(...)}); the traces and
    tables keep what was measured."""
    for got in done.values():
        shutil.rmtree(got["checkpoint_root"], ignore_errors=True)
