"""What the workload notebooks call: generate the three data sets, run a workload's sweep and
write its results folder (raw steps, summary, loader and phase tables, the application log,
metrics, and env.json with the peak RSS and CPU time of every rank and every run).

The same calls run the validation rows (thesis Sec 4.7, 5.1.3, 5.3.2): ``variant`` names the
row (``real``; ``random`` on ``data/<workload>-random``; ``sleep`` with ``train.compute:
sleep``; ``prep-none`` / ``prep-sleep`` for Fig A.3), and one stage may write several
workloads and variants into one folder (:func:`combine`, :func:`write`).
"""

from __future__ import annotations

import pandas as pd

from .. import headline, paths, results
from ..purchases import FIRST
from . import fits, launch

WORKLOADS = ("unet3d", "bert", "dlrm")


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
    else:
        raise ValueError(f"workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")
    if content is None:
        return g(data_dir(workload), data_cfg, seed)
    return g(data_dir(workload, content), data_cfg.model_copy(update={"content": content}), seed)


def check_data(workload: str, cfg, folder=None) -> None:
    """Stop before launch when the data set on disk is smaller than the sweep needs."""
    from ..config import ConfigError

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


def measure(workload: str, cfg, seed: int, *, variant: str = "real", grid=None, folder=None,
            compute_model=None, purchases=(), keep: dict | None = None) -> dict:
    """Run the sweep of ``cfg`` (the validated section) on ``folder`` (default ``data/<workload>``).

    ``grid``: (ranks, batch sizes) to run instead of ``cfg.sweep``'s; ``compute_model``: for
    ``train.compute: sleep`` (default: :func:`compute_model_for`); ``purchases``:
    ``decide.workloads`` (the rounds a ``make decide`` run bought of this workload follow the
    sweep's own); ``keep``: the runs a decide run keeps (:func:`kept_runs`)."""
    from ..config import ConfigError
    from ..purchases import shared_rounds

    bad = sorted({str(c.get("workload")) for p in purchases for c in p.configs} - set(WORKLOADS))
    if bad:
        raise ConfigError(f"decide.workloads: a purchase names workload(s) {bad}; allowed: {', '.join(WORKLOADS)}")
    folder = folder or data_dir(workload)
    check_data(workload, cfg, folder)
    if compute_model is None:
        compute_model = compute_model_for(workload, cfg)
    return launch.sweep(workload, cfg, seed, folder, variant=variant, grid=grid,
                        compute_model=compute_model, keep=keep,
                        extra=shared_rounds(purchases, cfg.sweep.repeats, "workload", workload))


BUYS = "workloads"   # the decide purchase these stages share (experiments.purchases.DecideParams.workloads)


def kept_runs(stage: str) -> dict | None:
    """{run folder: its row of ``results/<stage>/runs.csv``} when a ``make decide`` run re-runs
    ``stage`` to append (:func:`experiments.purchases.appending`), so that its earlier runs are
    read back from their folders (``data/workload_runs/``) and only the bought ones run; None
    otherwise. Stops, naming the folder, when one of them is gone (the stage must then run
    from scratch: ``dvc repro --force <stage>``)."""
    from .. import purchases
    from ..config import ConfigError

    f = paths.results_dir(stage) / "runs.csv"
    if not purchases.appending(BUYS) or not f.exists():
        return None
    rows = pd.read_csv(f).to_dict("records")
    gone = [r["run_dir"] for r in rows if not (paths.resolve(r["run_dir"]) / "run.json").exists()]
    if gone:
        raise ConfigError(f"decide: {stage}'s run folder {gone[0]} (and {len(gone) - 1} more) is gone, so "
                          f"its rows cannot be kept; run the stage from scratch: dvc repro --force {stage}")
    return {str(r["run_dir"]): r for r in rows}


def combine(gots: list[dict]) -> dict:
    """Several :func:`measure` results (workloads, variants) as one."""
    out = {}
    for k in ("steps", "loader", "phases", "runs"):
        parts = [g[k] for g in gots if len(g[k])]
        out[k] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    for k in ("app", "ranks"):
        out[k] = [x for g in gots for x in g[k]]
    return out


def needs(finding: str, runs: pd.DataFrame, configs: list[tuple]) -> list[int] | None:
    """``make decide``'s hook (:data:`experiments.decide.NEEDS`): the workload a thesis finding
    compares, by its id's first word (``dlrm-sleep-au-above-90pct``), as indices into
    ``configs`` ((workload,) tuples); None (every workload) for an id naming none."""
    head = finding.split("-", 1)[0]
    idx = [i for i, c in enumerate(configs) if c[0] == head]
    return idx or None


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
    results.atomic_write(out.path("app_log.jsonl"),
                         lambda p: p.write_text(launch.app_log_text(got["app"])))
    ranks = [{k: v for k, v in r.items() if k not in ("evals",)} for r in got["ranks"]]
    evals = [{"batch_size": r["batch_size"], "ranks": r["ranks"], "rank": r["rank"],
              "variant": r.get("variant", "real"), "made_by": r.get("made_by", FIRST), **e}
             for r in got["ranks"] for e in r.get("evals", [])]
    if evals:
        out.table("evals", pd.DataFrame(evals))
    if stage in WORKLOADS:   # a real workload's stage
        results.write_json(out.path("checkpoint.json"), checkpoint_facts(got["ranks"]))
    runs = got["runs"]
    metrics = headline.workload_runs(runs, summary)
    out.metrics(metrics)
    run_usage = runs[[c for c in ("workload", "variant", "ranks", "batch_size", "repeat", "wall_seconds",
                                  "cpu_seconds", "load_1min") if c in runs]].to_dict("records")
    out.env(params=params, ranks=ranks, runs=run_usage,
            peak_rss_note="peak_rss_bytes: the rank process (ru_maxrss, includes the framework's "
                          "libraries); peak_rss_children_bytes: its largest child (DataLoader worker)",
            cpu_note="runs[].cpu_seconds: CPU time (user + system) of the run's whole process tree "
                     "(launcher, ranks, DataLoader workers) beside its wall_seconds; load_1min: the host's "
                     "1-minute load average (mean of before and after the run); "
                     "ranks[].phase_usage: per phase, the rank process's own CPU and wall seconds",
            **env)
    return metrics
