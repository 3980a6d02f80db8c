"""The emulation of one run: what :func:`from_params` builds and every other module reads.

An :class:`EmulatorConfig` says which workload, on which data folder, with how many emulated
accelerators (ranks, possibly over several nodes), which batch size, which compute model (how
long each step sleeps) and which checkpoint pattern (how checkpoints write). Everything else
(data layout, loader settings, epochs/steps, evaluation and checkpoint points) comes from the
workload's own ``params.yaml`` section (``unet3d``, ``bert`` or ``dlrm``), the same section the
real run reads, so "the emulation of this run" is one call::

    cfg = from_params("unet3d", params["unet3d"], batch_size=4, accelerators=2,
                      compute_model="thesis-v100")

Bad input stops here, before any process is started, with a :class:`ConfigError` naming the
parameter, the value and what is allowed: an unknown workload, zero accelerators, a data
folder that does not hold this workload's layout, a batch that does not fit the data set, a
compute model or checkpoint pattern without this workload, a checkpoint folder that cannot be
written.

Batch size: per accelerator for UNET3D and BERT, global for DLRM (as the real workloads and the
thesis's compute-time fits).

The ``emulator_patterns`` stage it declares (:data:`STAGE`, run by :mod:`.stage`) has **no
builder** (no ``measuring_stage``; ``builder=None`` in its entry): it traces one short real run
of each workload and derives that run's checkpoint pattern, then replays the pattern and checks
the replay's calls and sizes are the same. Its answers are a pattern and an exact match, not a
quantity with an interval over runs, so its runs are not the unit of any interval and rounds
would only repeat the same derivation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..settings import paths
from ..settings.config import ConfigError
from ..stages import Stage

WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")
TORCH_WORKLOADS = ("unet3d", "dlrm", "retinanet")
# The real run's checkpoint points, for the dry run's description.
SCHEDULE = {
    "unet3d": "train.epochs epochs; evaluation every train.eval_every epochs (0: after the last); "
              "one checkpoint at the end",
    "bert": "checkpoint at the start; train.steps steps; checkpoint at the end; train.eval_steps "
            "evaluation batches",
    "dlrm": "train.steps steps; every train.eval_every steps (and at the end) evaluation of "
            "train.eval_steps batches, then a checkpoint",
    "retinanet": "train.epochs epochs; evaluation of every evaluation file after the last; one checkpoint "
                 "at the end",
}


class EmulatorConfig(BaseModel):
    """One emulated run. ``section`` is the workload's validated params section (as a dict)."""

    model_config = ConfigDict(extra="forbid")

    workload: Literal["unet3d", "bert", "dlrm", "retinanet"]
    section: dict
    batch_size: int = Field(ge=1, description="per accelerator (unet3d, bert) or global (dlrm)")
    accelerators: int = Field(ge=1, description="emulated accelerators (ranks), all nodes")
    nodes: int = Field(1, ge=1, description="machines; accelerators are split evenly over them")
    data_dir: str
    checkpoint_dir: str
    compute_model: str = "fit"
    checkpoint_pattern: str = "traced"
    seed: int = 0
    sync_steps: bool = Field(True, description="a barrier per step, as the real step's all-reduce")
    threads_per_rank: int = 0
    timeout_s: int = 900

    @property
    def per_node(self) -> int:
        return self.accelerators // self.nodes

    @property
    def local_batch(self) -> float:
        """Samples one accelerator computes on per step (DLRM: the global batch split)."""
        return self.batch_size / self.accelerators if self.workload == "dlrm" else self.batch_size

    @property
    def global_batch(self) -> int:
        return self.batch_size if self.workload == "dlrm" else self.batch_size * self.accelerators

    def to_json(self) -> dict:
        return self.model_dump(mode="json")


def _require_workload(workload: str) -> None:
    if workload not in WORKLOADS:
        raise ConfigError(f"workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")


def validate_section(workload: str, section) -> dict:
    """The workload's params section (dict or model) validated by its settings model; as a dict."""
    from ..settings.config import validate

    _require_workload(workload)
    if section is None:
        from ..settings.config import read_params
        section = read_params().get(workload)
        if section is None:
            raise ConfigError(f"params: section {workload!r} is missing from {paths.params_file()}")
    if isinstance(section, BaseModel):
        section = section.model_dump(mode="json")
    return validate(workload, section).model_dump(mode="json")


# ----------------------------------------------------------------------------- data layout

def data_layout(workload: str, data_dir: str | os.PathLike) -> dict:
    """What the data folder holds for ``workload``: files, samples, bytes (training and
    evaluation). :class:`ConfigError` when the folder does not have this workload's layout (as
    ``dvc repro workload_data`` writes it), naming what is missing and what is expected."""
    _require_workload(workload)
    d = Path(data_dir)
    where = f"data_dir = {str(d)!r}"
    if not d.is_dir():
        raise ConfigError(f"{where}: no such folder; point it at a {workload} data set "
                          "(`dvc repro workload_data` writes data/<workload>)")
    if workload == "unet3d":
        from ..workloads.data_unet3d import MANIFEST, read_manifest
        if not (d / MANIFEST).exists():
            raise ConfigError(f"{where}: not a UNET3D data set: {MANIFEST} is missing (expected "
                              f"{MANIFEST} and train/case_NNNNN_x.npy, _y.npy pairs){_hint(d)}")
        m = read_manifest(d)
        _all_listed(d, list(m["path_x"]) + list(m["path_y"]), where, MANIFEST)
        tr, ev = m[m["split"] == "train"], m[m["split"] == "eval"]
        if not len(tr):
            raise ConfigError(f"{where}: {MANIFEST} lists no training case")
        return {"train_files": 2 * len(tr), "train_samples": len(tr),
                "train_bytes": int(tr["bytes_x"].sum() + tr["bytes_y"].sum()),
                "eval_samples": len(ev), "eval_bytes": int(ev["bytes_x"].sum() + ev["bytes_y"].sum()),
                "sample_bytes": float((tr["bytes_x"] + tr["bytes_y"]).mean())}
    if workload == "bert":
        files = sorted((d / "train").glob("part-*.tfrecord"))
        ev = d / "eval" / "eval.tfrecord"
        if not files or not ev.is_file():
            raise ConfigError(f"{where}: not a BERT data set: expected train/part-NNNNN-of-NNNNN."
                              f"tfrecord files and eval/eval.tfrecord; found "
                              f"{len(files)} training file(s), eval file {'present' if ev.is_file() else 'missing'}"
                              f"{_hint(d)}")
        nbytes = sum(f.stat().st_size for f in files)
        return {"train_files": len(files), "train_bytes": nbytes, "eval_bytes": ev.stat().st_size,
                "train_paths": [str(f) for f in files]}
    if workload == "retinanet":
        from ..workloads.data_retinanet import MANIFEST
        if not (d / MANIFEST).exists():
            raise ConfigError(f"{where}: not a RetinaNet data set: {MANIFEST} is missing (expected "
                              f"{MANIFEST}, boxes.csv and train/img_NNNNNNN.jpg){_hint(d)}")
        import pandas as pd
        m = pd.read_csv(d / MANIFEST)
        _all_listed(d, m["path"], where, MANIFEST)
        tr, ev = m[m["split"] == "train"], m[m["split"] == "eval"]
        if not len(tr):
            raise ConfigError(f"{where}: {MANIFEST} lists no training file")
        return {"train_files": len(tr), "train_samples": len(tr), "train_bytes": int(tr["bytes"].sum()),
                "eval_samples": len(ev), "eval_bytes": int(ev["bytes"].sum()),
                "sample_bytes": float(tr["bytes"].mean())}
    from ..workloads.data_dlrm import FILES, SAMPLE_BYTES
    tr, ev = d / FILES["train"], d / FILES["eval"]
    if not tr.is_file() or not ev.is_file():
        raise ConfigError(f"{where}: not a DLRM data set: expected {FILES['train']} and "
                          f"{FILES['eval']} (samples of {SAMPLE_BYTES} B){_hint(d)}")
    for f in (tr, ev):
        if f.stat().st_size % SAMPLE_BYTES or not f.stat().st_size:
            raise ConfigError(f"{where}: {f.name} is {f.stat().st_size} B, not a non-zero multiple "
                              f"of the {SAMPLE_BYTES} B DLRM sample")
    return {"train_files": 1, "train_samples": tr.stat().st_size // SAMPLE_BYTES,
            "train_bytes": tr.stat().st_size, "eval_samples": ev.stat().st_size // SAMPLE_BYTES,
            "eval_bytes": ev.stat().st_size, "sample_bytes": SAMPLE_BYTES}


def _all_listed(d: Path, listed, where: str, manifest: str) -> None:
    """Stop when a file the manifest lists is missing from ``d``."""
    missing = [p for p in listed if not (d / p).is_file()]
    if missing:
        raise ConfigError(f"{where}: {len(missing)} file(s) listed in {manifest} are missing, "
                          f"e.g. {missing[0]}; regenerate or copy the data set again")


def _hint(d: Path) -> str:
    """Which workload the folder looks like, if another one."""
    if (d / "boxes.csv").exists():
        return "; the folder looks like a RetinaNet data set"
    if (d / "filelist.csv").exists():
        return "; the folder looks like a UNET3D data set"
    if (d / "train").is_dir() and any((d / "train").glob("*.tfrecord")):
        return "; the folder looks like a BERT data set"
    if (d / "train_data.bin").exists():
        return "; the folder looks like a DLRM data set"
    return ""


def max_accelerators_for(workload: str, batch_size: int, layout: dict) -> int:
    """The most accelerators the data set allows at ``batch_size`` (each rank needs a batch of
    its own files / its own file shard; DLRM's global batch must cover every rank)."""
    if workload in ("unet3d", "retinanet"):
        return layout["train_samples"] // batch_size
    if workload == "bert":
        return layout["train_files"]
    return batch_size


def check_fits(workload: str, batch_size: int, accelerators: int, layout: dict, data_dir) -> None:
    if accelerators < 1:
        raise ConfigError(f"accelerators = {accelerators}; allowed: an integer >= 1")
    if batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}; allowed: an integer >= 1")
    hi = max_accelerators_for(workload, batch_size, layout)
    if accelerators > hi:
        why = {"unet3d": f"each accelerator needs a batch of {batch_size} of the "
                         f"{layout.get('train_samples')} training cases",
               "bert": f"the {layout['train_files']} training files are sharded per accelerator",
               "dlrm": f"the global batch {batch_size} is split over the accelerators",
               "retinanet": f"each accelerator needs a batch of {batch_size} of the "
                            f"{layout.get('train_samples')} training files"}[workload]
        raise ConfigError(f"accelerators = {accelerators} with batch_size = {batch_size} on "
                          f"data_dir = {str(data_dir)!r}: {why}; allowed: accelerators <= {hi}")
    if workload == "dlrm" and batch_size > layout["train_samples"]:
        raise ConfigError(f"batch_size = {batch_size}: larger than the {layout['train_samples']} "
                          f"samples in {data_dir}; DLRM's batch is global")


# ----------------------------------------------------------------------------- building

def from_params(workload: str, section=None, batch_size: int | None = None,
                accelerators: int | None = None, *, compute_model: str | os.PathLike = "fit",
                checkpoint_pattern: str | os.PathLike = "traced", data_dir=None,
                checkpoint_dir=None, seed: int | None = None, nodes: int = 1,
                sync_steps: bool = True, overrides: dict | None = None, check: bool = True,
                ranks: int | None = None) -> EmulatorConfig:
    """The emulation of the real run ``workload`` with ``section`` (its params section; None:
    as in ``params.yaml``), at ``batch_size`` (default: the sweep's smallest) and
    ``accelerators`` (alias ``ranks``; default: the sweep's largest).

    ``data_dir`` defaults to ``data/<workload>``; ``checkpoint_dir`` to the section's
    ``train.checkpoint_dir``/emulator/<workload>. ``overrides``: ``{"train": {"epochs": 2}}``
    laid over the section. ``check=False`` skips the checks that read the disk (data layout,
    compute model and pattern files), for a dry run on another machine.
    """
    from ..settings.config import merge

    _require_workload(workload)
    if ranks is not None:
        accelerators = ranks
    raw = section.model_dump(mode="json") if isinstance(section, BaseModel) else section
    if overrides:
        raw = merge(raw if raw is not None else _params_section(workload), overrides)
    sec = validate_section(workload, raw)
    if batch_size is None:
        batch_size = min(sec["sweep"]["batch_sizes"])
    if accelerators is None:
        accelerators = max(sec["sweep"]["ranks"])
    if accelerators < 1:
        raise ConfigError(f"accelerators = {accelerators}; allowed: an integer >= 1")
    if nodes < 1 or accelerators % nodes:
        raise ConfigError(f"nodes = {nodes}: must be >= 1 and divide accelerators = {accelerators} "
                          "(the same number of emulated accelerators on every node)")
    if seed is None:
        from ..settings.config import read_params
        seed = int(read_params().get("seed", 0))
    data_dir = paths.resolve(data_dir) if data_dir else paths.data_dir(workload)
    ck = paths.resolve(checkpoint_dir) if checkpoint_dir else \
        paths.resolve(sec["train"]["checkpoint_dir"]) / "emulator" / workload
    cfg = EmulatorConfig(workload=workload, section=sec, batch_size=int(batch_size),
                         accelerators=int(accelerators), nodes=nodes, data_dir=str(data_dir),
                         checkpoint_dir=str(ck), compute_model=str(compute_model),
                         checkpoint_pattern=str(checkpoint_pattern), seed=int(seed),
                         sync_steps=sync_steps,
                         threads_per_rank=int(sec["train"].get("threads_per_rank", 0)),
                         timeout_s=int(sec["train"].get("timeout_s", 900)))
    if check:
        check_config(cfg)
    return cfg


def _params_section(workload: str) -> dict:
    from ..settings.config import read_params
    return read_params().get(workload) or {}


def check_config(cfg: EmulatorConfig) -> dict:
    """Every check that reads the disk; returns the data layout. Raises :class:`ConfigError`."""
    from . import checkpoint

    layout = data_layout(cfg.workload, cfg.data_dir)
    check_fits(cfg.workload, cfg.batch_size, cfg.accelerators, layout, cfg.data_dir)
    from ..workloads import compute_model as cm

    cm.load(cfg.compute_model).require(cfg.workload)
    checkpoint.load(cfg.checkpoint_pattern).require(cfg.workload)
    ck = Path(cfg.checkpoint_dir)
    probe = ck
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK):
        raise ConfigError(f"checkpoint_dir = {str(ck)!r}: {probe} is not writable; "
                          "checkpoints need a writable folder")
    return layout


# ----------------------------------------------------------------------------- params section

class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")
    batch_size: int = Field(ge=1, description="per accelerator (unet3d, bert) or global (dlrm)")
    accelerators: int = Field(ge=1)


class EmulatorSection(BaseModel):
    """The ``emulator`` section of ``params.yaml``: what the emulator's stage and notebook run.

    The workloads' own settings (data layout, loader, schedule) come from their sections."""

    model_config = ConfigDict(extra="forbid")

    pattern_ranks: int = Field(2, ge=1, le=8, description="ranks of the traced short real runs "
                               "(2 shows which ranks write); emulator_patterns stage")
    tiers: list[str] = Field(["mem", "disk"], min_length=1, description="tiers the notebook runs on")
    compute_model: str = Field("thesis-v100", min_length=1, description="fit, thesis-v100, zero or a file")
    checkpoint_pattern: str = Field("traced", min_length=1, description="traced, thesis, none or a file")
    points: dict[Literal["unet3d", "bert", "dlrm", "retinanet"], Point] = Field(
        default_factory=lambda: {"unet3d": Point(batch_size=4, accelerators=2)},
        description="one (batch size, accelerators) per workload emulated")
    search_limit: int = Field(0, ge=0, le=1024, description="max-accelerators search up to this "
                              "many accelerators (0: no search)")


# ----------------------------------------------------------------------------- the registry's entry
# The stage's entry in the registry (experiments/stages.py finds it: docs/adding-a-stage.md).
STAGE = Stage("emulator_patterns", "notebooks/50-emulator-patterns.ipynb", "measuring",
              {"emulator": "EmulatorSection"},
              ("seed", *(f"{w}.{p}" for w in ("unet3d", "bert", "dlrm", "retinanet") for p in ("model", "train", "sweep")),
               "emulator.pattern_ranks"),
              report="emulator_patterns_report", inputs=("data/unet3d", "data/bert", "data/dlrm", "data/retinanet"),
              builder=None,   # a pattern derived once and checked exactly: no runs to repeat (the docstring)
              note="Ho-Von 2023 Sec 6.4: each real workload traced, its checkpoint writes become the emulator's "
                   "pattern (measures; draws nothing).")
