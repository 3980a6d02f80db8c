"""What the workload notebooks call: generate the three data sets, run a workload's sweep and
write its results folder (raw steps, summary, loader and phase tables, the application log,
metrics, and env.json with the peak RSS of every rank)."""

from __future__ import annotations

import pandas as pd

from .. import paths, results
from . import fits, launch

WORKLOADS = ("unet3d", "bert", "dlrm")


def data_dir(workload: str):
    return paths.data_dir(workload)


def generate(workload: str, data_cfg, seed: int) -> dict:
    """Generate one workload's data set into ``data/<workload>`` (atomically); returns facts."""
    if workload == "unet3d":
        from .data_unet3d import generate as g
    elif workload == "bert":
        from .data_bert import generate as g
    elif workload == "dlrm":
        from .data_dlrm import generate as g
    else:
        raise ValueError(f"workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")
    return g(data_dir(workload), data_cfg, seed)


def check_data(workload: str, cfg) -> None:
    """Stop before launch when the data set on disk is smaller than the sweep needs."""
    from ..config import ConfigError

    d = data_dir(workload)
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
    elif workload == "bert":
        from .data_bert import train_files
        if max(cfg.sweep.ranks) > len(train_files(d)):
            raise ConfigError(f"bert.sweep.ranks = {cfg.sweep.ranks}: more than the "
                              f"{len(train_files(d))} files in {d}")


def measure(workload: str, cfg, seed: int) -> dict:
    """Run the sweep of ``cfg`` (the validated section) on ``data/<workload>``."""
    check_data(workload, cfg)
    return launch.sweep(workload, cfg, seed, data_dir(workload))


def write(workload: str, got: dict, params: dict) -> dict:
    """Write the stage's results folder; returns the metrics."""
    out = results.StageResults(workload)
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
    results.atomic_write(out.path("app_log.jsonl"),
                         lambda p: p.write_text(launch.app_log_text(got["app"])))
    ranks = [{k: v for k, v in r.items() if k not in ("evals",)} for r in got["ranks"]]
    evals = [{"batch_size": r["batch_size"], "ranks": r["ranks"], "rank": r["rank"], **e}
             for r in got["ranks"] for e in r.get("evals", [])]
    if evals:
        out.table("evals", pd.DataFrame(evals))
    peak = max(r["peak_rss_bytes"] for r in got["ranks"])
    metrics = {"configurations": int(len(got["runs"])), "steady_steps": int(len(st)),
               "wall_seconds": float(got["runs"]["wall_seconds"].sum()),
               "median_data_share": float(summary["data_share"].median()),
               "max_peak_rss_MB_per_rank": peak / 1e6}
    for r in summary.itertuples():
        metrics[f"compute_s_G{r.ranks}_B{r.batch_size}"] = r.compute_s
    out.metrics(metrics)
    out.env(params=params, ranks=ranks,
            peak_rss_note="peak_rss_bytes: the rank process (ru_maxrss, includes the framework's "
                          "libraries); peak_rss_children_bytes: its largest child (DataLoader worker)")
    return metrics
