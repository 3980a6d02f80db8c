"""What the workload notebooks call: generate the three data sets, run a workload's sweep and
write its results folder (raw steps, summary, loader and phase tables, the application log,
metrics, and env.json with the peak RSS and CPU time of every rank and every run).

The same calls run the validation rows (thesis Sec 4.7, 5.1.3, 5.3.2): ``variant`` names the
row (``real``; ``random`` on ``data/<workload>-random``; ``sleep`` with ``train.compute:
sleep``; ``prep-none`` / ``prep-sleep`` for Fig A.3), and one stage may write several
workloads and variants into one folder (:func:`measure_jobs`, :func:`write`). A stage's runs
go through the one measuring-stage interface (:func:`measuring_stage`): rounds in a seeded
order, the runs ``make decide`` bought after them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..output import headline, results
from ..settings import paths
from ..settings.config import ConfigError
from ..repeats.purchases import FIRST, first_run
from . import fits, hour_level, launch

WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")


def data_dir(workload: str, content: str = "realistic"):
    """``data/<workload>`` (realistic content) or ``data/<workload>-random``."""
    return paths.data_dir(workload if content == "realistic" else f"{workload}-{content}")


def generate(workload: str, data_cfg, seed: int, content: str | None = None) -> dict:
    """Generate one workload's data set (atomically); returns facts.

    Without ``content``: ``data_cfg`` as given (its ``content`` included) into ``data/<workload>``,
    the data the workload stages read. With ``content``: that content into
    :func:`data_dir` ``(workload, content)`` (the random row's set lives beside the realistic one)."""
    if workload == "unet3d":
        from .data_unet3d import generate as g
    elif workload == "bert":
        from .data_bert import generate as g
    elif workload == "dlrm":
        from .data_dlrm import generate as g
    elif workload == "retinanet":
        from .data_retinanet import generate as g
    else:
        raise ValueError(f"workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")
    if content is None:
        return g(data_dir(workload), data_cfg, seed)
    return g(data_dir(workload, content), data_cfg.model_copy(update={"content": content}), seed)


def generate_fixed(data_cfg, seed: int) -> dict:
    """RetinaNet's fixed-size variant (:func:`.data_retinanet.fixed_variant`: every file the
    v3.0 config's one size) into ``data/retinanet-fixed``, beside ``data/retinanet``; its facts."""
    from .data_retinanet import FIXED, fixed_variant, generate as g

    return g(paths.data_dir(FIXED), fixed_variant(data_cfg), seed) | {"workload": FIXED}


def check_data(workload: str, cfg, folder=None) -> None:
    """Stop before launch when the data set on disk is smaller than the sweep needs."""
    from ..settings.config import ConfigError

    d = folder or data_dir(workload)
    if workload == "unet3d":
        from .data_unet3d import read_manifest
        n = len(read_manifest(d, "train"))
        if max(cfg.sweep.ranks) > n or max(cfg.sweep.batch_sizes) * max(cfg.sweep.ranks) > n:
            raise ConfigError(f"unet3d.sweep: {max(cfg.sweep.ranks)} ranks x batch "
                              f"{max(cfg.sweep.batch_sizes)} need more than the {n} training cases in "
                              f"{d}; regenerate the data (dvc repro workload_data)")
    elif workload == "dlrm":
        from .data_dlrm import open_reader
        import os
        fd, n = open_reader(d, "train")
        os.close(fd)
        if max(cfg.sweep.batch_sizes) > n:
            raise ConfigError(f"dlrm.sweep.batch_sizes = {cfg.sweep.batch_sizes}: larger than the "
                              f"{n} samples in {d}")
    elif workload == "retinanet":
        from .data_retinanet import read_manifest
        n = len(read_manifest(d, "train"))
        need = max(cfg.sweep.batch_sizes) * max(cfg.sweep.ranks)
        if need > n:
            raise ConfigError(f"retinanet.sweep: {max(cfg.sweep.ranks)} ranks x batch {max(cfg.sweep.batch_sizes)} "
                              f"need {need} training files, {d} has {n}; regenerate the data "
                              "(dvc repro workload_data)")
    elif workload == "bert":
        from .data_bert import train_files
        if max(cfg.sweep.ranks) > len(train_files(d)):
            raise ConfigError(f"bert.sweep.ranks = {cfg.sweep.ranks}: more than the "
                              f"{len(train_files(d))} files in {d}")


def compute_model_for(workload: str, cfg, source: str | None = None):
    """The compute model a ``compute: sleep`` run of ``cfg`` uses (``source`` overrides
    ``cfg.train.compute_model``), validated for ``workload``; None for ``compute: real``.
    Raises ConfigError naming the file and the key before any run starts."""
    if cfg.train.compute != "sleep":
        return None
    from .compute_model import load

    m = load(source or cfg.train.compute_model)
    m.require(workload)
    return m


@dataclass
class Job:
    """One sweep of a workload stage: the workload's validated section (with a row's overrides),
    the grid (ranks, batch sizes), the row (``variant``), the data folder and, for a row that
    sleeps, the compute model."""

    workload: str
    variant: str
    cfg: object
    grid: tuple[list[int], list[int]]
    folder: Path
    compute_model: object | None = None
    # hour: each run that sleeps is given the fit carried to its round's hour, measured by the
    # real runs of the same workload that open the round (:mod:`.hour_level`); fit: as it is
    compute_level: str = "fit"


KEYS = ("workload", "variant", "ranks", "batch_size")   # the columns that name a configuration
SIDE = ("steps", "loader", "phases")                   # what a run keeps beside its row (runs.csv)
FILES = {"rows": "runs.csv", "steps": "raw.parquet"}   # the steps are the stage's raw rows


def own_job(workload: str, cfg, *, variant: str = "real", grid=None, folder=None, compute_model=None) -> Job:
    """The job of ``workload``'s own stage from its section ``cfg``: its sweep (or ``grid``: ranks,
    batch sizes) on ``folder`` (default :func:`data_dir`), with the compute model a ``compute:
    sleep`` run needs (default :func:`compute_model_for`)."""
    if workload not in WORKLOADS:
        raise ValueError(f"workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")
    if compute_model is None:
        compute_model = compute_model_for(workload, cfg)
    return Job(workload, variant, cfg, grid or (cfg.sweep.ranks, cfg.sweep.batch_sizes),
               Path(folder or data_dir(workload)), compute_model)


def measuring_stage(cfg, *, name: str, seed: int, jobs: list[Job] | None = None, parents=None):
    """Stage ``name``'s sweeps as one measuring stage (:class:`experiments.repeats.MeasuringStage`),
    built, not run (the data sets checked: :func:`check_data`): ``cfg`` is the stage's settings,
    a workload's section (``unet3d``, ...: its own sweep is the stage's one job, :func:`own_job`,
    unless ``jobs`` are given) or a validation row's (``workload_sleep``, ``workload_random``:
    ``jobs`` made from it, :func:`.validation.sleep_plan`, :func:`.validation.random_plan`).
    Every (workload, variant, ranks, batch size) of the jobs once a round, in a seeded order,
    for ``sweep.runs`` rounds (the largest of the jobs' workloads'), each run a launch of its
    ranks (:func:`.launch.run_config`; ``parents``: the stage's warm parents,
    :class:`experiments.host.warm_launch.Parents`, or None for fresh interpreters) in a folder of its
    own (``data/workload_runs/``). Its row is the run's (wall and process-tree CPU seconds, load,
    the compute it ran, the launch and its start-up seconds); its steps,
    loader records and phases are its side tables; its ranks' facts and application log stay in
    the run folder (:func:`gathered`)."""
    if jobs is None:
        if name not in WORKLOADS:
            raise ValueError(f"stage {name}: jobs = None; allowed only for a workload's own stage "
                             f"({', '.join(WORKLOADS)}); a validation row gives its jobs")
        jobs = [own_job(name, cfg)]
    from .. import repeats

    # the workloads whose sleeping runs are given their round's hour (hour_level), and its factors
    hour = {j.workload: hour_level.Rounds(j.compute_model) for j in jobs
            if j.compute_model is not None and j.compute_level == "hour"}
    lacking = [w for w in hour if not any(j.workload == w and j.cfg.train.compute == "real" for j in jobs)]
    if lacking:
        raise ValueError(f"stage {name}: compute_level hour for {lacking} needs real runs of the workload in the "
                         "same stage (their hour is measured there); allowed: a job list with them, or level fit")

    for j in jobs:
        check_data(j.workload, j.cfg, j.folder)
        if j.cfg.train.compute == "sleep" and j.compute_model is None:
            raise ValueError(f"{j.workload}.train.compute = sleep needs a compute model (Job.compute_model)")

    def run_one(c: dict, repeat: int):
        j = c["job"]
        section = j.cfg.model_dump(mode="json")
        g, b = c["ranks"], c["batch_size"]
        d = run_folder(j) / f"G{g}-B{b}-r{repeat}"
        sleep = section["train"].get("compute", "real") == "sleep"
        model = hour[j.workload].model(j.workload, repeat) if sleep and j.workload in hour else j.compute_model
        compute = model.run_facts(j.workload, g, b) if sleep else None
        seconds = launch.run_config(j.workload, section, b, g, seed, j.folder, d, repeat=repeat, compute=compute,
                                    variant=j.variant, parents=parents)
        got = launch.collect(d)
        cm = got["compute"]
        if not sleep and j.workload in hour:
            hour[j.workload].add(j.workload, repeat, got["steps"])
        got["steps"] = launch.given_steps(got)   # what a sleeping run was given, beside its steps
        return repeats.Run({"wall_seconds": seconds, "cpu_seconds": got["usage"].get("cpu_s", float("nan")),
                            "load_1min": float(np.mean(got["usage"].get("load_1min", [np.nan]))),
                            "compute": cm.get("mode", "real"), "sleep_mean_s": cm.get("mean_s", float("nan")),
                            "sleep_std_s": cm.get("std_s", float("nan")),
                            "compute_scale": cm.get("scale", 1.0) if sleep else float("nan"), "run_dir": str(d),
                            "launch": got["usage"].get("launch", "fresh"), "startup_s": launch.startup_seconds(d)},
                           {k: got[k] for k in SIDE})

    configs = [{"workload": j.workload, "variant": j.variant, "ranks": g, "batch_size": b, "job": j}
               for j in jobs for g in j.grid[0] for b in j.grid[1]]
    # the real runs of a workload carried to the hour open each round: its sleeping runs follow them
    leads = tuple(i for i, c in enumerate(configs) if c["workload"] in hour and c["job"].cfg.train.compute == "real")
    n = max(j.cfg.sweep.runs for j in jobs)
    return repeats.MeasuringStage(name, KEYS, configs, run_one, repeats.RoundsPlan(n, n), seed, tables=SIDE, leads=leads,
                                  files=FILES, progress=f"{name} runs", quantities=("wall_seconds",),
                                  units="steps", unit_quantities=("compute_ns", "data_ns"), unit_seconds="step_ns")


def run_folder(j: Job) -> Path:
    """Where a job's run folders go: ``data/workload_runs/<workload>`` (``<workload>-<variant>``
    for another row), kept for inspection (the tracing toolkit reads their ``app-r*.jsonl``)."""
    return paths.data_dir("workload_runs") / (j.workload if j.variant == "real" else f"{j.workload}-{j.variant}")


LAUNCHES = ("warm", "fresh")


def measure_jobs(cfg, name: str, jobs: list[Job], seed: int, purchases=(), launch_mode: str = "warm") -> dict:
    """Run stage ``name``'s ``jobs`` (:func:`measuring_stage`; ``cfg`` its settings), then the runs ``make decide``
    bought (``purchases``: ``params.yaml``'s ``decide.<name>``); when a decide run appends, the
    runs of before are kept (their rows, tables and folders) and only the purchases run.
    ``launch_mode``: ``warm`` (every rank of every run forked from one warm parent per framework,
    started once: :mod:`experiments.host.warm_launch`; runs of several ranks too, with torchrun's
    environment, since a forked pair computes as fast as a fresh one under the same load:
    docs/statistics.md, "Two forked ranks: the same load") or ``fresh`` (a new interpreter per rank).
    Returns the records (:func:`gathered`), with ``launch`` (the mode and each warm parent's
    import seconds, paid once)."""
    from .. import repeats
    from ..host import warm_launch

    if launch_mode not in LAUNCHES:
        raise ValueError(f"launch_mode = {launch_mode!r}; allowed: {', '.join(LAUNCHES)}")
    if launch_mode == "fresh":
        return gathered(repeats.measure(measuring_stage(cfg, name=name, seed=seed, jobs=jobs), purchases)) | {
            "launch": {"mode": "fresh"}}
    with warm_launch.Parents(multi_rank=True) as parents:
        # started before the first run, so that no run's wall time carries an import
        parents.start(sorted({launch.framework(j.workload) for j in jobs if any(map(parents.serves, j.grid[0]))}))
        m = repeats.measure(measuring_stage(cfg, name=name, seed=seed, jobs=jobs, parents=parents), purchases)
        facts = {"mode": "warm", "parent_import_s": parents.import_s}
    return gathered(m) | {"launch": facts}


def measure(workload: str, cfg, seed: int, *, variant: str = "real", grid=None, folder=None,
            compute_model=None, purchases=(), name: str | None = None, launch_mode: str = "warm") -> dict:
    """One workload's sweep as stage ``name`` (default: the workload's own stage): ``grid``
    (ranks, batch sizes) instead of ``cfg.sweep``'s; ``compute_model`` for ``train.compute:
    sleep`` (default: :func:`compute_model_for`); ``purchases``: ``decide.<name>``;
    ``launch_mode``: :func:`measure_jobs`'s."""
    job = own_job(workload, cfg, variant=variant, grid=grid, folder=folder, compute_model=compute_model)
    return measure_jobs(cfg, name or workload, [job], seed, purchases, launch_mode)


def gathered(m) -> dict:
    """A workload stage's records from its :class:`experiments.repeats.Measurement`: ``runs``
    (its rows), ``steps``, ``loader``, ``phases`` (its side tables), and from each run's
    folder its ranks' facts (``ranks``, each with the run's ``run`` and ``made_by``) and
    application log (``app``); ``measurement`` itself (for ``rounds.json``). A run folder that
    is gone stops it, naming the folder (the stage must then run from scratch:
    ``dvc repro --force``)."""
    from ..settings.config import ConfigError

    runs = m.rows.drop(columns=["job"], errors="ignore")
    m.rows = runs
    out = {"runs": runs, **{k: m.tables.get(k, pd.DataFrame()) for k in SIDE}, "app": [], "ranks": [],
           "measurement": m}
    gone = [r for r in runs["run_dir"] if not (paths.resolve(r) / "run.json").exists()] if len(runs) else []
    if gone:
        raise ConfigError(f"{m.stage}'s run folder {gone[0]} (and {len(gone) - 1} more) is gone, so its runs "
                          f"cannot be kept; run the stage from scratch: dvc repro --force {m.stage}")
    for r in runs.itertuples():
        got = launch.collect(paths.resolve(r.run_dir))
        out["app"] += got["app"]
        out["ranks"] += [rank | {"made_by": r.made_by, "run": r.run} for rank in got["ranks"]]
    return out


def prep_sleep_auto(loader: pd.DataFrame) -> float:
    """The real UNET3D run's median per-sample preprocessing time, seconds (training samples,
    the first epoch left out as in the throughputs)."""
    loader = first_run(loader)   # a decide run's appended reads leave the sleep as it was
    lo = loader[loader.get("split", pd.Series("train", index=loader.index)).fillna("train") == "train"]
    if "epoch" in lo:
        lo = lo[lo["epoch"] > lo["epoch"].min()]
    if not len(lo):
        raise ConfigError("workload_sleep.fig_a3.prep_sleep_s = None needs the real UNET3D run's loader records "
                          "(results/unet3d/loader.csv has no training samples); run `dvc repro unet3d` "
                          "or give prep_sleep_s in seconds")
    return float(lo["prep_ns"].median() / 1e9)


PREP_FILE = "preprocessing.json"   # results/unet3d/: the real run's per-sample preprocessing time


def prep_facts(loader: pd.DataFrame) -> dict:
    """``results/unet3d/preprocessing.json``: :func:`prep_sleep_auto` of the stage's own runs
    (None without training samples), what the sleep stage's Fig A.3 sleeps per sample; a
    purchase leaves it as it was, so the sleep stage is not re-run by it."""
    try:
        s = prep_sleep_auto(loader) if len(loader) else None
    except ConfigError:
        s = None
    return {"prep_s": s, "what": "the real UNET3D runs' median per-sample preprocessing time, s (training "
                                 "samples, the first epoch left out; the stage's own runs)"}


def checkpoint_facts(ranks: list[dict]) -> dict:
    """``checkpoint.json``: the bytes of one checkpoint of the largest rank, from the stage's own
    runs' ranks (``made_by`` repro: a ``make decide`` purchase leaves the file, which the DLIO
    side of the traced comparison replays, as it was); ``bytes`` None without a checkpoint."""
    own = [int(c["bytes"]) for r in ranks if r.get("made_by", FIRST) == FIRST for c in r.get("checkpoints") or []
           if isinstance(c, dict) and c.get("bytes")]
    return {"bytes": max(own) if own else None, "what": "one checkpoint of the largest rank, bytes"}


def write(stage: str, got: dict, params: dict, **env) -> dict:
    """Write ``results/<stage>/`` (the stage is the workload for the real runs); returns the
    metrics. Extra keyword arguments go into env.json."""
    out = results.StageResults(stage)
    steps = got["steps"]
    st = fits.steady(steps)
    steps = steps.assign(steady=steps.index.isin(st.index))
    summary = fits.step_summary(got["steps"], got["loader"])
    out.raw(steps)
    out.summary(summary)
    if len(got["loader"]):
        out.table("loader", got["loader"])
    out.table("phases", got["phases"])
    out.table("runs", got["runs"])
    if "measurement" in got:   # the rounds run and what make decide bought
        from ..repeats.stage import ROUNDS_FILE, VARIANCE_FILE

        m = got["measurement"]
        results.write_json(out.path(ROUNDS_FILE), m.course)
        if m.variance is not None:   # between-run and within-run variance and costs (experiments.repeats.variance)
            results.atomic_write(out.path(VARIANCE_FILE), lambda p: m.variance.to_csv(p, index=False))
    results.atomic_write(out.path("app_log.jsonl"),
                         lambda p: p.write_text(launch.app_log_text(got["app"])))
    ranks = [{k: v for k, v in r.items() if k not in ("evals",)} for r in got["ranks"]]
    evals = [{"batch_size": r["batch_size"], "ranks": r["ranks"], "rank": r["rank"], "run": r.get("run"),
              "variant": r.get("variant", "real"), "made_by": r.get("made_by", FIRST), **e}
             for r in got["ranks"] for e in r.get("evals", [])]
    if evals:
        out.table("evals", pd.DataFrame(evals))
    if stage in WORKLOADS:   # a real workload's stage: what downstream measuring stages read, unmoved by purchases
        results.write_json(out.path("checkpoint.json"), checkpoint_facts(got["ranks"]))
    if stage == "unet3d":
        results.write_json(out.path(PREP_FILE), prep_facts(first_run(got["loader"]) if len(got["loader"]) else got["loader"]))
    runs = got["runs"]
    metrics = headline.workload_runs(runs, summary)
    out.metrics(metrics)
    run_usage = runs[[c for c in ("workload", "variant", "ranks", "batch_size", "repeat", "wall_seconds",
                                  "cpu_seconds", "load_1min", "launch", "startup_s") if c in runs]].to_dict("records")
    if "launch" in got:
        env = {"launch": got["launch"]} | env
    out.env(params=params, ranks=ranks, runs=run_usage,
            peak_rss_note="peak_rss_bytes: the rank process (ru_maxrss, includes the framework's "
                          "libraries); peak_rss_children_bytes: its largest child (DataLoader worker)",
            cpu_note="runs[].cpu_seconds: CPU time (user + system) of the run's whole process tree "
                     "(launcher, ranks, DataLoader workers) beside its wall_seconds; load_1min: the host's "
                     "1-minute load average (mean of before and after the run); "
                     "ranks[].phase_usage: per phase, the rank process's own CPU and wall seconds",
            **env)
    return metrics
