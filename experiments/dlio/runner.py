"""Run DLIO for one (workload, ranks, batch size): write its config, launch it, read it back.

    plan = prepare("unet3d", cfg, ranks=2, out_dir=d, compute_time_s=None)  # config, data view
    plan.command                     # [timeout, ..., mpiexec, -n, 2, dlio_benchmark, ...]
    result = execute(plan)           # or execute(plan, tracer=experiments.trace.Tracer(...))
    result["epochs"], result["steps"], result["row"]

or all three at once with :func:`run`. A run folder ``out_dir`` holds::

    config/workload/<workload>_artifact.yaml   the DLIO workload config written from params.yaml
    dataset/                                   the view DLIO reads (links to our data; UNET3D, DLRM)
    dlio/                                      DLIO's output: summary.json, per_epoch_stats.json,
                                               <rank>_output.json, dlio.log
    hydra/                                     Hydra's run folder (.hydra/config.yaml: DLIO's resolved config)
    output.txt                                 stdout and stderr of mpiexec and the ranks
    result.json, epochs.csv, steps.csv         what :func:`collect` read (tidy)

DLIO runs as ``mpiexec -n G dlio_benchmark --config-dir <out>/config workload=<name>`` from
``.venv-dlio`` (MPICH from PyPI), one process per emulated accelerator, under coreutils
``timeout`` so a hung rank cannot hold a pipeline. ``DFTRACER_ENABLE=0``: pydftracer (which
DLIO imports) otherwise intercepts every I/O call and logs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..settings import paths
from ..settings.config import ConfigError
from . import dataset, environment, outputs
from .workload_config import WORKLOADS, Built, build, compute_time

SHIM_BIN = Path(__file__).resolve().parent / "bin"
PLUGINS = Path(__file__).resolve().parent / "plugins"
DEFAULT_TIMEOUT_S = 900
# what DLIO 2.0's checkpointing writes (base_checkpointing.get_name; TF adds "checkpoint")
CHECKPOINT_NAMES = ("model-*", "optimizer-*", "layer-*", "checkpoint")
KILL_AFTER_S = 30


class DlioUnavailable(RuntimeError):
    """DLIO cannot run on this machine; the message is the reason (a 'not measured' reason)."""


@dataclass
class Plan:
    """A prepared DLIO run: the config is written and the data is in place; nothing ran yet."""

    workload: str
    ranks: int
    batch_size: int
    built: Built
    out_dir: Path
    config_file: Path
    data_folder: Path
    data_paths: list[Path]
    checkpoint_folder: Path
    command: list[str]
    env: dict
    env_set: dict
    timeout_s: int
    status: environment.Status
    data_facts: dataset.DataFacts
    generation: dict = field(default_factory=dict)

    @property
    def cwd(self) -> Path:
        return self.out_dir

    @property
    def dlio_out(self) -> Path:
        return self.out_dir / "dlio"

    def logged_command(self) -> list[str]:
        """:attr:`command` with its output appended to ``output.txt`` (bash execs into it, so the
        process tree a tracer follows is the same)."""
        return ["bash", "-c", 'exec "$@" >>"$0" 2>&1', str(self.out_dir / "output.txt"), *self.command]

    def facts(self) -> dict:
        return {**self.built.facts(), **self.status.facts(), "command": shlex.join(self.command),
                "env": self.env_set, "config_file": str(self.config_file),
                "data_folder": str(self.data_folder), "data_paths": [str(p) for p in self.data_paths],
                "checkpoint_folder": str(self.checkpoint_folder), "timeout_s": self.timeout_s,
                "data": self.data_facts.as_dict(), "generation": self.generation,
                "notes": self.built.notes}


def load_section(workload: str, cfg=None):
    """The validated ``params.yaml`` section of ``workload`` (``cfg`` overrides keys, or is the
    validated section itself)."""
    if workload not in WORKLOADS:
        raise ConfigError(f"DLIO workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")
    if cfg is not None and hasattr(cfg, "model_dump"):
        return cfg
    from ..settings import config

    return getattr(config.load(**{workload: cfg}), workload)


def real_checkpoint_bytes(workload: str) -> int | None:
    """Bytes of one checkpoint of the real run (largest per rank), from the workload stage's
    ``results/<workload>/checkpoint.json`` (its own runs': a ``make decide`` purchase leaves the
    file as it was); None when that stage has not run or wrote no checkpoint."""
    p = paths.results_dir(workload) / "checkpoint.json"
    try:
        return int(json.loads(p.read_text())["bytes"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _env(status: environment.Status, ranks: int, threads_per_rank: int | None) -> tuple[dict, dict]:
    threads = threads_per_rank or max(1, (os.cpu_count() or 1) // ranks)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    set_ = {"PATH": f"{status.bin}{os.pathsep}{SHIM_BIN}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(PLUGINS), "DFTRACER_ENABLE": "0", "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1",
            "HYDRA_FULL_ERROR": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
            "OMP_NUM_THREADS": str(threads), "TF_NUM_INTRAOP_THREADS": str(threads),
            "TF_NUM_INTEROP_THREADS": str(max(2, threads))}
    env.update(set_)
    return env, {k: v for k, v in set_.items() if k != "PATH"} | {"PATH": f"{status.bin}:{SHIM_BIN}:$PATH"}


def _command(status: environment.Status, ranks: int, config_dir: Path, name: str, hydra_dir: Path,
             timeout_s: int, overrides: list[str] = ()) -> list[str]:
    return [shutil.which("timeout") or "timeout", "-k", str(KILL_AFTER_S), str(timeout_s),
            str(status.mpiexec), "-n", str(ranks), str(status.dlio_benchmark),
            "--config-dir", str(config_dir), f"workload={name}", f"hydra.run.dir={hydra_dir}",
            *overrides]


def _clear_run_folder(out_dir: Path) -> None:
    """Empty ``out_dir`` for a new run: only a folder that is empty or holds an earlier DLIO run
    (its ``plan.json``); anything else is a mistyped path, never removed."""
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "plan.json").exists():
        raise ConfigError(f"DLIO out_dir = {str(out_dir)!r}: exists and is not a DLIO run folder "
                          "(no plan.json); allowed: a new or empty folder, or an earlier run's")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)


def _write_config(out_dir: Path, name: str, cfg: dict) -> tuple[Path, Path]:
    config_dir = out_dir / "config"
    f = config_dir / "workload" / f"{name}.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("# DLIO workload config written by experiments.dlio from params.yaml\n"
                 + yaml.safe_dump(cfg, sort_keys=False))
    return config_dir, f


def generated_folder(built: Built, root: Path) -> tuple[Path, str]:
    """Where DLIO's own data set for ``built`` goes under ``root`` (named by what sizes it: DLIO's
    generator is seeded with a constant, so equal sizes give equal files) and its key."""
    ds = built.config["dataset"]
    key = json.dumps({k: ds[k] for k in ("format", "num_files_train", "num_samples_per_file",
                                          "record_length", "record_length_stdev", "file_prefix")},
                     sort_keys=True)
    return Path(root) / (f"{built.workload}-" + hashlib.sha1(key.encode()).hexdigest()[:10]), key


def _generate(plan_env: dict, status: environment.Status, built: Built, root: Path,
              timeout_s: int) -> tuple[Path, dict]:
    """DLIO's own data set for ``built`` (BERT): generated once under ``root`` and reused; the
    folder is written as ``.partial`` and renamed when DLIO has finished."""
    ds = built.config["dataset"]
    folder, key = generated_folder(built, root)
    info = {"folder": str(folder), "key": json.loads(key), "reused": True}
    if not dataset.generated_ok(folder, key):
        need = int(ds["num_files_train"] * ds["num_samples_per_file"] * (ds["record_length"] + 64))
        from ..host.tiers import require_free

        require_free(folder.parent, need, f"DLIO's {built.workload} data set", f"{built.workload}.data")
        tmp = folder.with_name(folder.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        cfg = json.loads(json.dumps(built.config))
        cfg["workflow"] = {"generate_data": True, "train": False, "evaluation": False,
                           "checkpoint": False, "profiling": False}
        cfg["dataset"]["data_folder"] = str(tmp)
        cfg["output"] = {"folder": str(tmp / ".dlio-generate"), "log_file": "dlio.log"}
        gname = f"{built.workload}_artifact_generate"
        config_dir, _ = _write_config(tmp / ".dlio-generate", gname, cfg)
        cmd = _command(status, 1, config_dir, gname, tmp / ".dlio-generate" / "hydra", timeout_s)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=plan_env, cwd=tmp, capture_output=True, text=True)
        if p.returncode != 0:
            raise DlioUnavailable(f"DLIO's data generation failed (exit {p.returncode}): "
                               + "\n".join((p.stdout + p.stderr).splitlines()[-20:]))
        shutil.rmtree(tmp / ".dlio-generate", ignore_errors=True)
        (tmp / dataset.COMPLETE).write_text(key + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
        info.update(reused=False, seconds=time.perf_counter() - t0, command=shlex.join(cmd))
    n, nbytes = dataset.generated_bytes(folder, ds["format"])
    info.update(files=n, bytes=nbytes,
                bytes_per_sample=nbytes / max(1, n * ds["num_samples_per_file"]))
    return folder, info


def prepare(workload: str, cfg=None, ranks: int = 1, out_dir=None, *, batch_size: int | None = None,
            compute_time_s: float | None = None, compute_model=None, data_dir=None,
            checkpoint_bytes: int | None | str = "auto", checkpoint_dir=None, generated_root=None,
            timeout_s: int | None = None, seed: int | None = None,
            threads_per_rank: int | None = None, dry_run: bool = False) -> Plan:
    """Check everything, write DLIO's config and put its data in place; run nothing.

    workload: unet3d | bert | dlrm. cfg: the workload's ``params.yaml`` section (validated
    model, or a dict of overrides, or None for the file's). ranks: processes (emulated
    accelerators). batch_size: ours (per rank; global for DLRM); default the first of the
    section's ``sweep.batch_sizes``. compute_time_s: the sleep per step in seconds (0 for the
    throughput bench); None takes it from ``compute_model`` (a compute-model file, ``"fit"``
    (default) or ``"thesis-v100"``) at (G = ranks, B). data_dir: our data set (default
    ``data/<workload>``). checkpoint_bytes: one real checkpoint's size ("auto": from the
    workload stage's env.json; None: no checkpoint). generated_root: where DLIO's own data sets
    go (default ``data/dlio``). timeout_s: default the section's ``train.timeout_s``.

    dry_run: resolve everything and return the plan, writing nothing (no config file, no data
    view, no generation); :attr:`Plan.command` names the config file it would write.

    Raises :class:`ConfigError` on bad input (before any work) and :class:`DlioUnavailable`
    when DLIO's environment is missing (the reason; not raised for a dry run).
    """
    section = load_section(workload, cfg)
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ConfigError(f"DLIO ranks = {ranks!r}; allowed: an integer >= 1 (processes, one per "
                          "emulated accelerator)")
    if out_dir is None:
        raise ConfigError("DLIO out_dir = None; allowed: a folder for the run (it is emptied)")
    s = section.model_dump()
    B = batch_size if batch_size is not None else s["sweep"]["batch_sizes"][0]
    timeout_s = int(timeout_s or s["train"]["timeout_s"] or DEFAULT_TIMEOUT_S)
    if timeout_s < 1:
        raise ConfigError(f"DLIO timeout_s = {timeout_s}; allowed: seconds >= 1")
    if seed is None:
        from ..settings import config

        seed = config.load(seed=None).seed
    data_dir = paths.resolve(data_dir) if data_dir else paths.data_dir(workload)
    facts = dataset.facts(workload, data_dir)           # ConfigError when the data is missing
    compute = compute_time(workload, ranks, B, compute_time_s, compute_model)
    if checkpoint_bytes == "auto":
        checkpoint_bytes = real_checkpoint_bytes(workload)
    out_dir = paths.resolve(out_dir)
    ckpt = (paths.resolve(checkpoint_dir) if checkpoint_dir
            else paths.resolve(s["train"]["checkpoint_dir"]) / "dlio" / workload)
    view = out_dir / "dataset"
    built = build(workload, section, ranks, B, facts, compute, data_folder=str(view),
                  checkpoint_folder=str(ckpt), checkpoint_bytes=checkpoint_bytes, seed=seed,
                  output_folder=str(out_dir / "dlio"))   # ConfigError when DLIO could not run it
    status = environment.status()
    if not status.ok and not dry_run:
        raise DlioUnavailable(status.why)
    env, env_set = _env(status, ranks, threads_per_rank or s["train"].get("threads_per_rank") or None)
    name = f"{workload}_artifact"
    root = paths.resolve(generated_root) if generated_root else paths.data_dir("dlio")
    if dry_run:
        if built.needs_generation:
            folder = generated_folder(built, root)[0]
            built.config["dataset"]["data_folder"] = str(folder)
            data_folder, data_paths = folder, [folder]
        else:
            data_folder, data_paths = view, [view, facts.folder]
        config_dir = out_dir / "config"
        cmd = _command(status, ranks, config_dir, name, out_dir / "hydra", timeout_s)
        return Plan(workload, ranks, B, built, out_dir, config_dir / "workload" / f"{name}.yaml",
                    data_folder, data_paths, ckpt, cmd, env, env_set, timeout_s, status, facts)

    _clear_run_folder(out_dir)
    ckpt.mkdir(parents=True, exist_ok=True)
    for pattern in CHECKPOINT_NAMES:  # DLIO's names only: the folder may hold other files
        for p in ckpt.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    generation: dict = {}
    if built.needs_generation:
        folder, generation = _generate(env, status, built, root, timeout_s)
        built.config["dataset"]["data_folder"] = str(folder)
        built.bytes_per_dlio_sample = generation["bytes_per_sample"]
        data_folder, data_paths = folder, [folder]
    else:
        data_folder = dataset.make_view(facts, view)
        data_paths = [view, facts.folder]
    config_dir, config_file = _write_config(out_dir, name, built.config)
    cmd = _command(status, ranks, config_dir, name, out_dir / "hydra", timeout_s)
    plan = Plan(workload, ranks, B, built, out_dir, config_file, data_folder, data_paths, ckpt, cmd,
                env, env_set, timeout_s, status, facts, generation)
    _write_plan(plan)
    return plan


def _write_plan(plan: Plan) -> None:
    """``plan.json``: the plan's facts, beside its config (what marks the folder a DLIO run's)."""
    (plan.out_dir / "plan.json").write_text(json.dumps(plan.facts(), indent=1, default=str))


def with_compute(plan: Plan, compute_model) -> Plan:
    """``plan`` with DLIO's ``computation_time`` (and its stdev) taken again from ``compute_model``
    at the plan's (G, B) (:func:`.workload_config.compute_time`), its config file and
    ``plan.json`` written again: the traced comparison's DLIO side given its pass's hour
    (:mod:`experiments.workloads.hour_level`), once the real side has run. Its data stay as made."""
    from .workload_config import compute_time

    c = compute_time(plan.workload, plan.ranks, plan.batch_size, None, compute_model)
    plan.built.notes = [n for n in plan.built.notes if n not in plan.built.compute.notes] + list(c.notes)
    plan.built.compute = c
    plan.built.config["train"].update({"computation_time": max(0.0, c.mean_s), "computation_time_stdev": c.dlio_std_s})
    _write_config(plan.out_dir, plan.config_file.stem, plan.built.config)
    _write_plan(plan)
    return plan


def command(*args, **kw) -> list[str]:
    """The DLIO command line of :func:`prepare` (same arguments; the config is written)."""
    return prepare(*args, **kw).command


def not_measured(workload: str, ranks: int, why: str, **facts) -> dict:
    """The result of a DLIO run that could not be made: status 'not measured' and the reason."""
    import pandas as pd

    return {"workload": workload, "ranks": ranks, "status": "not measured", "why": why,
            "epochs": pd.DataFrame(), "steps": pd.DataFrame(), "summary": {}, "row": {
                "workload": workload, "ranks": ranks, "status": "not measured", "why": why}, **facts}


def collect(plan: Plan, returncode: int, wall_s: float) -> dict:
    """Read DLIO's output of a finished run into tidy tables and a flat ``row``.

    A failed or timed-out run gives status 'not measured' with the reason and the tail of its
    output; epochs/steps are then empty.
    """
    base = {"workload": plan.workload, "ranks": plan.ranks, "batch_size": plan.batch_size,
            "returncode": returncode, "wall_s": wall_s, "out_dir": str(plan.out_dir), **plan.facts(),
            "config": plan.built.config}
    if returncode != 0:
        why = (f"DLIO timed out after {plan.timeout_s} s" if returncode in (124, 137)
               else f"DLIO exited with status {returncode}")
        log = outputs.tail(plan.out_dir / "output.txt", 15)
        r = not_measured(plan.workload, plan.ranks, f"{why}; see {plan.out_dir / 'output.txt'}",
                         **{k: v for k, v in base.items() if k not in ("workload", "ranks")})
        r["output_tail"] = log
        _save(plan, r)
        return r
    b = plan.built
    ds, rd = b.config["dataset"], b.config["reader"]
    try:
        epochs = outputs.epochs_table(plan.dlio_out, rd["batch_size"], plan.ranks,
                                      b.dlio_samples_per_sample, b.bytes_per_dlio_sample,
                                      max(0.0, b.compute.mean_s), ds["record_length"])
        steps = outputs.steps_table(plan.dlio_out)
        summary = outputs.headline(outputs.read_json(plan.dlio_out, outputs.SUMMARY))
    except outputs.OutputError as e:
        r = not_measured(plan.workload, plan.ranks, str(e),
                         **{k: v for k, v in base.items() if k not in ("workload", "ranks")})
        _save(plan, r)
        return r
    steady = epochs.iloc[1:] if len(epochs) > 1 else epochs
    row = {"workload": plan.workload, "ranks": plan.ranks, "batch_size": plan.batch_size,
           "status": "measured", "why": "", "dlio_version": plan.status.version,
           "compute_s": max(0.0, b.compute.mean_s), "epochs": int(len(epochs)),
           "steps": int(epochs["steps"].sum()),
           "samples_per_s": float(steady["samples_per_s"].median()),
           "MBps": float(steady["MBps"].median()),
           "dlio_samples_per_s": float(steady["dlio_samples_per_s"].median()),
           "dlio_io_MiBps": float(steady["dlio_io_MiBps"].median()),
           "dlio_au_pct": float(steady["dlio_au_pct"].median()),
           "au_eq31": float(steady["au_eq31"].median()),
           "train_s": float(epochs["train_s"].sum()), "wall_s": wall_s,
           "checkpoints": int(epochs["checkpoints"].sum()),
           "checkpoint_bytes_written": _tree_bytes(plan.checkpoint_folder)}
    r = {**base, "status": "measured", "why": "", "epochs": epochs, "steps": steps,
         "summary": summary, "row": row}
    _save(plan, r)
    return r


def _tree_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (what DLIO's checkpoints wrote)."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def _save(plan: Plan, r: dict) -> None:
    from ..output.results import write_json

    if len(r.get("epochs", [])):
        r["epochs"].to_csv(plan.out_dir / "epochs.csv", index=False)
        r["steps"].to_csv(plan.out_dir / "steps.csv", index=False)
    write_json(plan.out_dir / "result.json",
               {k: v for k, v in r.items() if k not in ("epochs", "steps")})


def execute(plan: Plan, tracer=None) -> dict:
    """Run a prepared plan (traced when ``tracer``, an ``experiments.trace.Tracer``, is given:
    the result then has ``trace``); returns :func:`collect`'s result, with the run's device
    audit from outside DLIO's processes (:func:`audit`)."""
    from ..host import device_audit

    t0 = time.perf_counter()
    # the device under DLIO's data (the view's links point into the last of data_paths)
    with device_audit.Span(plan.data_paths[-1], f"dlio {plan.workload} G={plan.ranks}", sample_s=0.2) as span:
        if tracer is not None:
            trace, rc = tracer.run(plan.logged_command(), env=plan.env, cwd=plan.cwd)
        else:
            with open(plan.out_dir / "output.txt", "ab") as log:
                rc = subprocess.run(plan.command, env=plan.env, cwd=plan.cwd, stdout=log,
                                    stderr=subprocess.STDOUT).returncode
            trace = None
    r = audit(plan, collect(plan, rc, time.perf_counter() - t0), span)
    if trace is not None:
        r["trace"] = trace
    return r


def audit(plan: Plan, r: dict, span) -> dict:
    """The device audit of a measured run (``span``: the
    :class:`experiments.host.device_audit.Span` it ran in, sampled) into ``r``: ``device_audit``, and
    in its ``row`` the bytes DLIO's training read (``data_bytes``: the steps of every epoch x
    DLIO's batch x ranks x the bytes of a DLIO sample, the basis of its MB/s) and the audit's
    columns (:func:`experiments.host.device_audit.columns`). The reads are judged over the epochs
    the row's figures are the median of (those after the first, where there are several:
    ``audited_epochs``), against the device's and DLIO's processes' counts sampled over them
    (start-up left out); the checkpoint writes over the run. ``read_from`` cache: DLIO's figure
    was the page cache's, not the storage's."""
    from ..host import device_audit
    from ..host.device_audit import block_device

    if r.get("status") != "measured":
        return r
    b, ep = plan.built, r["epochs"]
    per_epoch = ep["steps"].astype(float) * b.config["reader"]["batch_size"] * plan.ranks * b.bytes_per_dlio_sample
    steady = ep.iloc[1:] if len(ep) > 1 else ep
    counts, judged = span.counts, ep
    if span.samples is not None and len(steady) and steady["start"].notna().all() and steady["end"].notna().all():
        w = span.window(float(steady["start"].min()), float(steady["end"].max()))
        counts = span.counts | {k: w[k] for k in ("device_read_bytes", "processes_read_bytes", "processes_rchar")
                                if k in w}
        judged = steady
    same = plan.checkpoint_folder.exists() and block_device(plan.checkpoint_folder)[1] == span.device
    a = span.judge(float(per_epoch[judged.index].sum()), r["row"].get("checkpoint_bytes_written") if same else None,
                   counts=counts, what=f"epochs {', '.join(map(str, judged['epoch']))}")
    r["device_audit"] = a
    r["row"].update(data_bytes=float(per_epoch.sum()), audited_epochs=", ".join(map(str, judged["epoch"])),
                    **device_audit.columns(a))
    _save(plan, r)
    return r


def run(workload: str, cfg=None, ranks: int = 1, out_dir=None, compute_time_s: float | None = None,
        *, tracer=None, **kw) -> dict:
    """Prepare, execute and collect one DLIO run (see :func:`prepare` for the arguments).

    Bad input raises :class:`ConfigError` before any work; when DLIO cannot run here the
    result has status 'not measured' and the reason (never a silent skip).
    """
    try:
        plan = prepare(workload, cfg, ranks, out_dir, compute_time_s=compute_time_s, **kw)
    except DlioUnavailable as e:
        return not_measured(workload, ranks, str(e), **environment.status().facts())
    return execute(plan, tracer=tracer)
