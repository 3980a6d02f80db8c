"""The thesis's validation rows (Ch. 3, Sec 4.7, 5.1.3, 5.3.2, Fig A.3): what the
``workload_sleep``, ``workload_random`` and ``workload_validation`` stages run and compute.

Rows (:data:`ROWS`, data, so another row is one entry): ``real`` (the workload stages
``unet3d``, ``bert``, ``dlrm``: realistic data, real compute), ``random`` (the real workload on
``data/<workload>-random``: same files and sizes, no structure; the thesis's "generated
data"), ``sleep`` (realistic data, ``train.compute: sleep`` with the compute model of
``workload_sleep.compute_model``), ``emulator`` (:mod:`experiments.emulator` at the points of
the ``traced_comparison`` stage, which writes its runs in this layout). Fig A.3 adds UNET3D
sleep runs whose loader skips the preprocessing (``prep-none``) or sleeps in its place
(``prep-sleep``). The sleep and random stages also run the real workload at their own (G, B),
interleaved with their row (:data:`BESIDE`): what their findings compare against.

A plan (:func:`sleep_plan`, :func:`random_plan`) is checked whole before any run starts: the
compute model file (missing, another schema, no entry for a workload), the subset of the
sweep, the preprocessing sleep. Each row's results folder has the layout of the workload
stages (:func:`experiments.workloads.stage.write`) with a ``variant`` column.

Accelerator utilization (thesis Eq 3.1, 3.2; :func:`utilization`): per run, ideal compute
time = steps x the model's mean step time at (G, B) (Eq 3.2: samples / (B x G) x sleep time),
over the measured run time, here the wall time of the train phases of the slowest rank (init,
evaluation and checkpoints left out, as MLPerf Storage times the training).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..settings import paths
from ..settings.config import ConfigError
from . import compute_model as cm
from . import datasets, hour_level, launch, stage


@dataclass(frozen=True)
class Row:
    """One row of the multi-row figures: where its runs are and what to call it."""

    key: str      # short name (column ``row`` in the tables)
    label: str    # the row's title in a figure
    stage: str    # its results folder; ``{workload}`` is replaced by the workload's name
    variant: str  # the ``variant`` value of its runs in that folder


ROWS = [
    Row("real", "real workload (realistic data)", "{workload}", "real"),
    Row("random", "generated (random) data", "workload_random", "random"),
    Row("sleep", "sleep instead of compute", "workload_sleep", "sleep"),
    # the emulator (issue 12): the runs the traced_comparison stage made (one (B, G) per workload)
    Row("emulator", "emulator (no model, sleep)", "traced_comparison", "emulator"),
]
# the real runs the sleep and random stages make beside their own, at the same (G, B), interleaved
# in their rounds: what their findings set each row against (report._real_row). Against the
# workload stages' real runs, made 10-30 minutes earlier, a slow hour of the shared box in between
# flipped unet3d-sleep-data-latency-lower and unet3d-random-vfs-within-real-spread between two
# clones (docs/measured/2026-11-29-two-clones-815cb38; issue 64). Not drawn in the figures.
BESIDE = [Row("real@sleep", "real workload, beside the sleep row", "workload_sleep", "real"),
          Row("real@random", "real workload, beside the generated-data row", "workload_random", "real")]
FIG_A3 = {"sleep": "preprocessing (real)", "prep-none": "no preprocessing",
          "prep-sleep": "sleep standing in for preprocessing"}


Job = stage.Job   # one sweep to run (a workload, its row, its grid)


def _grid(sub, wcfg, section: str, workload: str):
    try:
        return sub.grid(wcfg.sweep, section)
    except ValueError as e:
        raise ConfigError(f"{e} (workload {workload})") from None


from .stage import PREP_FILE, prep_facts, prep_sleep_auto  # noqa: E402,F401 (the real run's preprocessing time)


def sleep_plan(cfg, prep_s: float | None = None) -> list[Job]:
    """The sleep row, the real runs beside it (:data:`BESIDE`) and Fig A.3 for ``cfg`` (sections
    ``workload_sleep`` and the workloads'), checked whole: raises ConfigError naming the compute
    model file and key, or the parameter, before any run. ``prep_s``: the real run's per-sample
    preprocessing time (:func:`prep_facts`),
    what Fig A.3's sleep stands in for when ``fig_a3.prep_sleep_s`` is None."""
    ws = cfg.workload_sleep
    model = cm.load(ws.compute_model)
    for w in ws.workloads:
        model.require(w)
    # the fit carried to each round's hour by the real runs beside the row (hour_level)
    level = "hour" if hour_level.applies(ws.compute_level, ws.compute_model) else "fit"
    jobs = []
    for w in ws.workloads:
        wcfg = getattr(cfg, w)
        grid = _grid(ws, wcfg, "workload_sleep", w)
        sleep_cfg = wcfg.model_copy(update={"train": wcfg.train.model_copy(
            update={"compute": "sleep", "compute_model": ws.compute_model})})
        jobs.append(Job(w, "sleep", sleep_cfg, grid, stage.data_dir(w), model, level))
        jobs.append(_beside(w, wcfg, grid, "workload_sleep"))
        a3 = ws.fig_a3
        if w == "unet3d" and a3.modes:
            s = a3.prep_sleep_s
            if s is None and "sleep" in a3.modes:
                if prep_s is None:
                    raise ConfigError("workload_sleep.fig_a3.prep_sleep_s = None: the real run's preprocessing "
                                      f"time is needed (results/unet3d/{PREP_FILE}: run `dvc repro unet3d`), "
                                      "or give prep_sleep_s in seconds")
                s = prep_s
            extra = sorted(set(a3.ranks or []) - set(grid[0]))
            if extra:
                raise ConfigError(f"workload_sleep.fig_a3.ranks = {a3.ranks}: {extra} not in the sleep row's "
                                  f"ranks {grid[0]}; allowed: a subset of them")
            a3_grid = (a3.ranks or grid[0], grid[1])
            for mode in a3.modes:
                t = sleep_cfg.train.model_copy(update={"preprocessing": mode, "prep_sleep_s": s or 0.0})
                jobs.append(Job(w, f"prep-{mode}", sleep_cfg.model_copy(update={"train": t}), a3_grid,
                                stage.data_dir(w), model, level))
    return jobs


def random_plan(cfg) -> list[Job]:
    """The generated-data row and the real runs beside it (:data:`BESIDE`) for ``cfg`` (sections
    ``workload_random`` and the workloads')."""
    wr = cfg.workload_random
    jobs = []
    for w in wr.workloads:
        wcfg = getattr(cfg, w)
        grid = _grid(wr, wcfg, "workload_random", w)
        beside = _beside(w, wcfg, grid, "workload_random")   # refuses a section that sleeps: the row runs it too
        jobs += [Job(w, "random", wcfg, grid, stage.data_dir(w, "random")), beside]
    return jobs


def _beside(w: str, wcfg, grid, section: str) -> Job:
    """The real runs of ``w`` at the row's own ``grid``, in the row's stage (:data:`BESIDE`): the
    workload's section as its own stage runs it (real compute, realistic data)."""
    if wcfg.train.compute != "real":
        raise ConfigError(f"{w}.train.compute = {wcfg.train.compute!r}: {section} runs the real workload beside "
                          "its row; allowed: real")
    return Job(w, "real", wcfg, grid, stage.data_dir(w))


def generate_random(cfg, seed: int) -> pd.DataFrame:
    """Generate ``data/<workload>-random`` for the workloads of ``cfg.workload_random`` and
    compare each with the realistic set beside it: files, bytes, whether every file has the
    same size, and both digests. A realistic set that is missing stops it before any generation."""
    for w in cfg.workload_random.workloads:
        real = stage.data_dir(w)
        if not real.is_dir() or not any(real.iterdir()):
            raise ConfigError(f"workload_random.workloads: {w}'s realistic data set {real} is missing or "
                              f"empty; the random set is compared with it: run `dvc repro workload_data` first")
    rows = []
    for w in cfg.workload_random.workloads:
        facts = stage.generate(w, getattr(cfg, w).data, seed, content="random")
        real, rand = stage.data_dir(w), stage.data_dir(w, "random")
        a, b = datasets.file_sizes(real), datasets.file_sizes(rand)
        a.pop("filelist.csv", None), b.pop("filelist.csv", None)
        rows.append({"workload": w, "files": len(b), "bytes_realistic": sum(a.values()),
                     "bytes_random": sum(b.values()), "same_names": set(a) == set(b),
                     "same_sizes": a == b, "digest_realistic": datasets.digest(real),
                     "digest_random": datasets.digest(rand), "planned_bytes": facts["planned_bytes"],
                     "seconds": facts["seconds"]})
    return pd.DataFrame(rows)


def run(cfg, name: str, jobs: list[Job], seed: int, purchases=()) -> dict:
    """Run every job's sweep as stage ``name``'s rounds (:func:`.stage.measure_jobs`; ``cfg``: the
    stage's settings, ``workload_sleep`` or ``workload_random``, that made ``jobs``); all records
    together (column ``variant``). ``purchases``: ``params.yaml``'s ``decide.<name>``."""
    return stage.measure_jobs(cfg, name, jobs, seed, purchases)


# ----------------------------------------------------------------------------- the report's inputs

def load_rows(rows: list[Row] = ROWS, workloads=stage.WORKLOADS, table: str = "summary.csv") -> pd.DataFrame:
    """``table`` of every row's results folder, with ``row``; rows whose folder or runs are
    missing are left out (the figure draws what exists, never an empty panel)."""
    out = []
    for r in rows:
        for w in workloads:
            p = paths.results_dir(r.stage.format(workload=w)) / table
            if not p.exists():
                continue
            d = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
            if "variant" not in d:
                d = d.assign(variant="real")
            d = d[(d["workload"] == w) & (d["variant"] == r.variant)]
            if len(d):
                out.append(d.assign(row=r.key))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def utilization(steps: pd.DataFrame, phases: pd.DataFrame, model) -> pd.DataFrame:
    """Accelerator utilization (Eq 3.1, 3.2) of every run in ``steps``/``phases`` (one row's
    tables, column ``row`` optional) under ``model``: one row per run with ``steps``,
    ``sleep_s`` (the model's mean at (G, B), floored at 0), ``ideal_s`` (Eq 3.2: for a run
    that slept, its steps times the model's mean; for a run with real compute, the compute its
    first rank's steps measured, so its AU stays within 100 %), ``ideal_from``, ``train_s`` (train
    phases of the slowest rank) and ``au`` (fraction); and where the rest of the train time
    went, summed over the first rank's steps: ``data_wait_s`` (of which ``epoch_start_wait_s``,
    the first batch of each epoch) and ``barrier_s`` (the per-step all-reduce), seconds."""
    keys = [k for k in ("row", "workload", "variant", "ranks", "batch_size", "repeat", "run") if k in steps]
    rows = []
    for key, g in steps.groupby(keys):
        r = dict(zip(keys, key))
        w, G, B = r["workload"], int(r["ranks"]), int(r["batch_size"])
        r0 = g[g["rank"] == g["rank"].min()]
        n = len(r0)                                               # steps of one rank
        first = r0["step"] == r0.groupby("epoch")["step"].transform("min") if "epoch" in r0 else r0["step"] == 0
        waits = {"data_wait_s": r0["data_ns"].sum() / 1e9 if "data_ns" in r0 else np.nan,
                 "epoch_start_wait_s": r0.loc[first, "data_ns"].sum() / 1e9 if "data_ns" in r0 else np.nan,
                 "barrier_s": r0["allreduce_ns"].sum() / 1e9 if "allreduce_ns" in r0 else np.nan}
        ph = phases
        for k in keys:
            if k in ph and k != "row":
                ph = ph[ph[k] == r[k]]
        train_s = float(ph[ph["phase"] == "train"].groupby("rank")["seconds"].sum().max()) if len(ph) else np.nan
        sleep_s = given_mean(r0, model, w, G, B)   # as resolved into the run's run.json
        slept = "sleep_ns" in r0 and bool((r0["sleep_ns"] > 0).any())
        if not slept and "compute_ns" in r0:
            # a run with real compute: its ideal compute is what its own steps computed (Eq 3.1
            # cannot exceed 100 % then); the model's mean is another host's or another fit's time
            ideal, basis = float(r0["compute_ns"].sum() / 1e9), "measured compute"
        elif w == "dlrm":   # the global batch: n steps of B samples over all accelerators
            ideal, basis = cm.ideal_compute_s(n * B, B, 1, sleep_s), "compute model"
        else:             # per-accelerator batch: n steps of B samples on each of G accelerators
            ideal, basis = cm.ideal_compute_s(n * B * G, B, G, sleep_s), "compute model"
        rows.append({**r, "steps": n, "sleep_s": sleep_s, "ideal_s": ideal, "ideal_from": basis, "train_s": train_s,
                     "au": cm.accelerator_utilization(ideal, train_s) if train_s == train_s else np.nan, **waits})
    out = pd.DataFrame(rows)
    if len(out):
        out["pass"] = out["au"] >= cm.MLPERF_AU_PASS
    return out


def given_mean(steps: pd.DataFrame, model, w: str, G: int, B: int) -> float:
    """The mean step compute time (s, floored at 0) one run's ``steps`` were given
    (:func:`.launch.given`)."""
    return max(0.0, launch.given(steps, model, w, G, B)[0])


def _step_walls(g: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Each of one rank's steps ``g`` (ordered by ``end_wall``) as its share of the wall time
    of the train phase it ran in (``train``: that rank's train phases), seconds: from the end of
    the step before (the phase's begin for its first step) to its end (the phase's end for its
    last step). A phase's steps add up to the phase; NaN for a step in no train phase."""
    e = g["end_wall"].to_numpy(dtype=float)
    tp = train.sort_values("start")
    starts, ends = tp["start"].to_numpy(dtype=float), tp["end"].to_numpy(dtype=float)
    i = np.searchsorted(starts, e, side="right") - 1          # the phase begun last before the step ended
    j = np.clip(i, 0, None)
    begin = np.maximum(np.r_[-np.inf, e[:-1]], starts[j]) if len(starts) else np.full(len(e), np.nan)
    last = np.r_[i[1:] != i[:-1], True]                        # the last step of its phase
    end = np.where(last, np.maximum(ends[j], e), e) if len(ends) else e
    return np.where(i >= 0, end - begin, np.nan)


def au_steps(steps: pd.DataFrame, phases: pd.DataFrame, model) -> pd.DataFrame:
    """The steps Eq 3.1 adds up, one row per step of every run's slowest rank (the rank whose
    train phases took longest, the one :func:`utilization` times): the run's keys, ``rank``,
    ``epoch``, ``step``, ``wall_s`` (the step's share of its train phase, :func:`_step_walls`:
    the rank's steps add up to its train phases, the loader's wind-down after a phase's last
    step included) and ``ideal_s`` (Eq 3.2 per step: the model's mean step time at (G, B), the
    same for every step of a run that slept; the step's own measured compute in a run with real
    compute), seconds. For a run that slept, sum(ideal_s) / sum(wall_s) over its rows is its
    ``au`` in :func:`utilization`. Empty without ``end_wall`` in the steps or phase begin/end
    times."""
    keys = [k for k in ("row", "workload", "variant", "ranks", "batch_size", "repeat", "run") if k in steps]
    if not len(steps) or "end_wall" not in steps or not {"start", "end"} <= set(phases.columns):
        return pd.DataFrame(columns=[*keys, "rank", "epoch", "step", "wall_s", "ideal_s"])
    out = []
    for key, g in steps.groupby(keys):
        r = dict(zip(keys, key))
        ph = phases[phases["phase"] == "train"]
        for k in keys:
            if k in ph and k != "row":
                ph = ph[ph[k] == r[k]]
        if not len(ph):
            continue
        slow = ph.groupby("rank")["seconds"].sum().idxmax()
        s = g[g["rank"] == slow].sort_values("end_wall")
        if not len(s):
            continue
        sleep_s = given_mean(s, model, r["workload"], int(r["ranks"]), int(r["batch_size"]))
        slept = "sleep_ns" in s and bool((s["sleep_ns"] > 0).any())
        ideal = s["compute_ns"].to_numpy(dtype=float) / 1e9 if not slept and "compute_ns" in s else sleep_s
        out.append(pd.DataFrame({**r, "rank": slow, "epoch": s["epoch"].to_numpy() if "epoch" in s else 0,
                                 "step": s["step"].to_numpy(), "wall_s": _step_walls(s, ph[ph["rank"] == slow]),
                                 "ideal_s": ideal, **({"level": s["level"].to_numpy()} if "level" in s else {})}))
    return pd.concat(out, ignore_index=True) if out else au_steps(steps.iloc[:0], phases, model)
