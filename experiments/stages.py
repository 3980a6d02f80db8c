"""The one registry of the pipeline's stages: what each runs, reads, writes and is set by.

Every list of stages is made from :data:`STAGES` (a test fails on a list of stage names written
by hand elsewhere in the package, ``tests/test_stages.py``):

- ``config.SECTIONS``: each stage's settings sections (``"module:Model"`` strings, imported
  lazily: reading one stage's configuration never imports TensorFlow or PyTorch), and
  :data:`SHARED`, the sections no one stage owns;
- the buying stages (:func:`buying`): ``DecideParams``'s fields, ``params.yaml``'s ``decide:``
  (:func:`experiments.profile.render` fills it), the ``claim_rules`` files;
- the measuring stages (:func:`measuring`): ``make replicate`` and a claim's ``make repro STAGES=``;
- ``dvc.yaml``, written whole by ``python -m experiments.depcheck --write``
  (:func:`experiments.depcheck.dvc_yaml`): each stage's ``results/`` and ``data/`` inputs first,
  then its notebook and its code by package folder, from the imports its notebook reaches.

This module imports nothing of the package: ``config`` reads it, and the generator reads both.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

KINDS = ("rules", "data", "measuring", "report", "claims")


@dataclass(frozen=True)
class Stage:
    """One stage: ``kind`` is ``rules`` (the findings' rules), ``data`` (generates a data set),
    ``measuring`` (measures; ``make replicate`` re-measures it), ``report`` (judges and draws
    from results) or ``claims`` (gathers every verdict)."""

    name: str
    notebook: str                                  # notebooks/NN-name.ipynb
    kind: str
    settings: dict[str, str] = field(default_factory=dict)   # the sections it owns: section -> "module:Model"
    params: tuple[str, ...] = ()                   # its params.yaml paths (decide.<name> added when it buys)
    buys: bool = False                             # make decide can buy it runs (decide.<name>, persist)
    report: str | None = None                      # the stage that judges its findings
    inputs: tuple[str, ...] = ()                   # results/ and data/ paths it reads
    outs: tuple[str, ...] = ()                     # data/ folders it writes (beside results/<name>)
    plots: tuple = ()                              # figures of results/<name>/ for `dvc plots`
    items: bool = False                            # its work is its items (forecast: seconds and bytes scale with them)
    keep: bool = False                             # its results folder persists (a buying stage's always does)
    note: str = ""                                 # the comment above it in dvc.yaml
    size: str | None = None                        # "module:function": its size rule (:func:`size_of`)
    configs: str | None = None                     # "module:function": its configurations (:func:`configs_of`)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"stage {self.name}: kind = {self.kind!r}; allowed: {', '.join(KINDS)}")
        if self.buys and self.kind != "measuring":
            raise ValueError(f"stage {self.name}: buys = True; allowed only for a measuring stage")


# Sections read by many stages, owned by none.
SHARED: dict[str, str] = {
    "seed": "experiments.common_config:Seed",
    "tiers": "experiments.tiers:TierList",
    "imagenet_size_mix": "experiments.common_config:SizeMix",
    "figures": "experiments.common_config:FigureConfig",
    "decide": "experiments.repeats.purchases:DecideParams",
}

_FIG = ("figures",)
_WORKLOADS = tuple(f"{w}.{p}" for w in ("unet3d", "bert", "dlrm") for p in ("model", "train", "sweep"))
_WDATA = ("data/unet3d", "data/bert", "data/dlrm")
_RETINA = tuple(f"retinanet.{p}" for p in ("model", "train", "sweep"))   # MLPerf Storage v3.0's, our extension
_WS = "experiments.workloads.settings"


def _report(name, notebook, inputs, plots=(), note=""):
    return Stage(name, notebook, "report", params=_FIG, inputs=inputs,
                 plots=tuple(f"results/{name}/{p}.png" for p in plots), note=note)


STAGES: tuple[Stage, ...] = (
    Stage("claim_rules", "notebooks/00-claim-rules.ipynb", "rules",
          note="The part of the papers' declarations that steers measuring: each finding's rule, margin and "
               "the configurations it compares, one file per buying stage (which depends on its file "
               "alone). A changed quote re-runs this stage, which writes the same bytes: nothing re-measures."),
    Stage("fio_baseline", "notebooks/01-device-baseline.ipynb", "measuring",
          {"fio_baseline": "experiments.chien.fio_baseline:FioConfig"},
          ("tiers", "fio_baseline", "imagenet_size_mix"), report="tfdata_read_report",
          size="experiments.chien.fio_baseline:size"),
    Stage("imagenet_like", "notebooks/02-imagenet-like-data.ipynb", "data",
          {"imagenet_like": "experiments.datasets.imagenet_like:ImageNetLikeConfig"},
          ("seed", "imagenet_like", "imagenet_size_mix"), outs=("data/imagenet_like",), items=True,
          size="experiments.datasets.imagenet_like:size"),
    Stage("tfdata_read", "notebooks/03-tfdata-read.ipynb", "measuring",
          {"tfdata_read": "experiments.chien.tfdata_read:TFDataReadConfig"},
          ("seed", "tiers", "tfdata_read"), True, "tfdata_read_report", ("data/imagenet_like",),
          plots=({"tfdata thread scaling": {"template": "simple", "x": "threads",
                                            "y": {"results/tfdata_read/summary.csv": "images_per_s"}}},),
          size="experiments.chien.tfdata_read:size", configs="experiments.chien.tfdata_read:configurations"),
    _report("tfdata_read_report", "notebooks/04-tfdata-read-report.ipynb",
            ("results/fio_baseline", "results/imagenet_like", "results/tfdata_read"),
            ("fig4_tfdata_full", "fig5_tfdata_read_only", "table1_fio_baseline", "imagenet_like_sizes")),
    Stage("deepio", "notebooks/40-deepio.ipynb", "measuring", {"deepio": "experiments.deepio.experiment:DeepIOConfig"},
          ("seed", "tiers", "deepio"), True, "deepio_report", ("data/imagenet_like",),
          size="experiments.deepio.experiment:size", configs="experiments.deepio.experiment:configurations"),
    _report("deepio_report", "notebooks/41-deepio-report.ipynb", ("results/deepio", "results/fio_baseline"),
            ("rl_blocks", "fig7_accuracy_rl", "fig8_accuracy_opportunistic", "fig10_bandwidth")),
    Stage("lmdbio", "notebooks/42-lmdbio.ipynb", "measuring", {"lmdbio": "experiments.lmdbio.read:LMDBIOConfig"},
          ("seed", "tiers", "lmdbio"), True, "lmdbio_report",
          size="experiments.lmdbio.read:size", configs="experiments.lmdbio.read:configurations"),
    _report("lmdbio_report", "notebooks/43-lmdbio-report.ipynb", ("results/lmdbio",), ("fig2_lmdbio",)),
    Stage("blog", "notebooks/44-blog-tfrecord-vs-jpeg.ipynb", "measuring",
          {"blog": "experiments.blog.tfrecord:BlogConfig"},
          ("seed", "tiers", "imagenet_size_mix", "blog"), True, "blog_report", ("data/imagenet_like",),
          size="experiments.blog.tfrecord:size", configs="experiments.blog.tfrecord:configurations"),
    _report("blog_report", "notebooks/45-blog-report.ipynb", ("results/blog", "results/fio_baseline"),
            ("size_histogram", "tfdata_threads", "torch_workers", "warm_vs_cold")),
    Stage("caltech_like", "notebooks/10-caltech-like-data.ipynb", "data",
          {"caltech_like": "experiments.datasets.caltech_like:CaltechLikeConfig"},
          ("seed", "caltech_like"), outs=("data/caltech_like",), items=True,
          size="experiments.datasets.caltech_like:size"),
    Stage("alexnet_prefetch", "notebooks/11-alexnet-prefetch.ipynb", "measuring",
          {"alexnet": "experiments.chien.alexnet:AlexNetConfig"},
          ("seed", "tiers", "caltech_like.n_classes", "alexnet"), True, "alexnet_report", ("data/caltech_like",),
          size="experiments.chien.alexnet:size", configs="experiments.chien.alexnet:configurations"),
    Stage("alexnet_checkpoint", "notebooks/12-alexnet-checkpoint.ipynb", "measuring",
          {"alexnet_checkpoint": "experiments.chien.alexnet_checkpoint:CheckpointConfig"},
          ("seed", "tiers", "caltech_like.n_classes", "alexnet.image_size", "alexnet.width", "alexnet.dense_width",
           "alexnet.learning_rate", "alexnet_checkpoint"), True, "alexnet_report", ("data/caltech_like",),
          size="experiments.chien.alexnet_checkpoint:size", configs="experiments.chien.alexnet_checkpoint:configurations"),
    _report("alexnet_report", "notebooks/13-alexnet-report.ipynb",
            ("results/caltech_like", "results/alexnet_prefetch", "results/alexnet_checkpoint", "results/fio_baseline"),
            ("caltech_like_sizes", "fig6_alexnet_prefetch_threads", "fig7_alexnet_batch_size", "fig8_alexnet_dstat",
             "fig9_checkpoint_runtime", "fig10_checkpoint_dstat")),
    Stage("workload_data", "notebooks/30-workload-data.ipynb", "data", {},
          ("seed", "unet3d.data", "bert.data", "dlrm.data", "retinanet.data"), outs=(*_WDATA, "data/retinanet"),
          note="Ho-Von 2023: the three MLPerf workloads (experiments/workloads/, docs/workloads.md)."),
    *(Stage(w, f"notebooks/3{i}-{w}.ipynb", "measuring", {w: f"{_WS}:{w.capitalize()}Config"},
            ("seed", f"{w}.model", f"{w}.train", f"{w}.sweep"), True, "workload_fits", (f"data/{w}",),
            size=f"{_WS}:sweep_size", configs=f"{_WS}:real_configurations")
      for i, w in ((1, "unet3d"), (2, "bert"), (3, "dlrm"))),
    Stage("retinanet", "notebooks/38-retinanet.ipynb", "measuring", {"retinanet": f"{_WS}:RetinanetConfig"},
          ("seed", *_RETINA), True, "workload_fits", ("data/retinanet",),
          note="MLPerf Storage v3.0's RetinaNet (our extension; docs/workloads.md \"RetinaNet\").",
          size=f"{_WS}:sweep_size"),
    _report("workload_fits", "notebooks/34-workload-fits.ipynb",
            ("results/unet3d", "results/bert", "results/dlrm", "results/retinanet"),
            tuple(f"{w}_{p}" for p in ("step_breakdown", "throughputs") for w in ("unet3d", "bert", "dlrm"))),
    Stage("workload_sleep", "notebooks/35-workload-sleep.ipynb", "measuring",
          {"workload_sleep": f"{_WS}:WorkloadSleepConfig"}, ("seed", *_WORKLOADS, *_RETINA, "workload_sleep"), True,
          "workload_validation", (*_WDATA, "data/retinanet", "results/workload_fits/compute_model.json", "results/unet3d/loader.csv"),
          note="Ho-Von 2023 Ch. 3, Sec 4.7, 5.x.3: the sleep and generated-data rows, Fig A.3, accelerator "
               "utilization.",
          size=f"{_WS}:sleep_size", configs=f"{_WS}:sleep_configurations"),
    Stage("workload_random", "notebooks/36-workload-random.ipynb", "measuring",
          {"workload_random": f"{_WS}:WorkloadRandomConfig"}, ("seed", "unet3d", "bert", "dlrm", "workload_random"),
          True, "workload_validation", _WDATA, ("data/unet3d-random", "data/bert-random", "data/dlrm-random"),
          size=f"{_WS}:random_size", configs=f"{_WS}:random_configurations"),
    _report("workload_validation", "notebooks/37-workload-validation.ipynb",
            ("results/unet3d", "results/bert", "results/dlrm", "results/retinanet", "results/workload_random",
             "results/workload_sleep",
             "results/traced_comparison")),
    Stage("tracing_patterns", "notebooks/20-tracing-patterns.ipynb", "measuring",
          {"tracing_patterns": "experiments.trace.stage:TracingPatternsConfig"}, ("seed", "tiers", "tracing_patterns"),
          report="tracing_report"),
    _report("tracing_report", "notebooks/21-tracing-report.ipynb", ("results/tracing_patterns",),
            ("similarity_matrix", "timeline_loader", "timeline_fio_seq_rand")),
    Stage("emulator_patterns", "notebooks/50-emulator-patterns.ipynb", "measuring",
          {"emulator": "experiments.emulator.config:EmulatorSection"}, ("seed", *_WORKLOADS, "emulator.pattern_ranks"),
          report="emulator_patterns_report", inputs=_WDATA,
          note="Ho-Von 2023 Sec 6.4: each real workload traced, its checkpoint writes become the emulator's "
               "pattern (measures; draws nothing)."),
    _report("emulator_patterns_report", "notebooks/54-emulator-patterns-report.ipynb", ("results/emulator_patterns",),
            ("checkpoint_write_sizes",),
            "Its figure and the replay check's claim, from what emulator_patterns wrote: a figure setting "
            "re-runs only this."),
    Stage("traced_comparison", "notebooks/52-traced-comparison.ipynb", "measuring",
          {"traced_comparison": "experiments.sidebyside.settings:TracedComparisonConfig"},
          ("seed", "tiers", "unet3d", "bert", "dlrm", "traced_comparison"), True, "traced_comparison_report",
          (*_WDATA, "results/workload_fits/compute_model.json", "results/emulator_patterns/checkpoint_pattern.json",
           *(f"results/{w}/checkpoint.json" for w in ("unet3d", "bert", "dlrm"))),
          note="Ho-Von 2023 Tables 5.1-5.3, Fig 5.7/5.12/5.18: real, sleep, emulator and DLIO traced side by side "
               "(measures; draws nothing).",
          size="experiments.sidebyside.settings:size", configs="experiments.sidebyside.settings:configurations"),
    _report("traced_comparison_report", "notebooks/53-traced-comparison-report.ipynb", ("results/traced_comparison",),
            ("throughput_by_side",),
            "Its timelines, throughputs and claims, from what traced_comparison wrote: a figure setting "
            "re-runs only this."),
    Stage("llm_checkpoint", "notebooks/55-llm-checkpoint.ipynb", "measuring",
          {"llm_checkpoint": "experiments.emulator.llm_checkpoint:LLMCheckpointConfig"},
          ("seed", "tiers", "llm_checkpoint"), True, "llm_checkpoint_report", ("results/fio_baseline/summary.csv",),
          note="LLM checkpointing as MLPerf Storage defines it (measures; draws nothing).",
          size="experiments.emulator.llm_checkpoint:size", configs="experiments.emulator.llm_checkpoint:configurations"),
    _report("llm_checkpoint_report", "notebooks/56-llm-checkpoint-report.ipynb", ("results/llm_checkpoint",),
            ("llm_checkpoint_throughput", "llm_checkpoint_burst_buffer"),
            "Its figures and extension claims, from what llm_checkpoint wrote: a figure setting re-runs only this."),
    Stage("claims", "notebooks/99-claims.ipynb", "claims", inputs=("env/reference-times.csv",), keep=True,
          note="Every stage's claims.json in one table: the reviewer's first read (results/claims/claims.md); "
               "the claims files only (and each data stage's measured.json), so a figure change upstream does "
               "not re-run it; its folder persists: the run before's claims.csv stays until this run reads it."),
)

BY_NAME: dict[str, Stage] = {s.name: s for s in STAGES}


def named(kind: str | None = None, buys: bool | None = None) -> tuple[str, ...]:
    """The names of the stages of ``kind`` (any when None) that buy runs or not (either when
    None), in the pipeline's order."""
    return tuple(s.name for s in STAGES if (kind is None or s.kind == kind) and (buys is None or s.buys == buys))


def measuring() -> tuple[str, ...]:
    """The stages that measure: what ``make replicate`` re-measures, what a claim's ``make repro
    STAGES=...`` names."""
    return named("measuring")


def buying() -> tuple[str, ...]:
    """The measuring stages ``make decide`` can buy runs of (``decide.<stage>`` in their params)."""
    return named("measuring", buys=True)


def sections() -> dict[str, str]:
    """``params.yaml``'s sections: section -> ``"module:Model"`` (``config.SECTIONS``)."""
    out = dict(SHARED)
    for s in STAGES:
        clash = set(s.settings) & set(out)
        if clash:
            raise ValueError(f"stage {s.name}: sections {sorted(clash)} are owned elsewhere")
        out |= s.settings
    return out


# ----------------------------------------------------------------------------- a stage's rules
# A stage's size rule and its configurations are functions of the rendered profile (a
# ``params.yaml`` as a dict) and the stage's name, in the module that owns its settings; the
# registry names them as "module:function" and imports them only when asked (the forecast, the
# profile's unread configurations), so that this module imports nothing of the package.

def rule(ref: str):
    """The function ``"module:function"`` names."""
    mod, _, fn = ref.partition(":")
    return getattr(importlib.import_module(mod), fn)


def size_of(name: str, params: dict) -> float | None:
    """Stage ``name``'s *size* under ``params``: a number proportional to the seconds its runs
    take (configurations x rounds, as its own code builds them; a data stage's items); None
    for a stage without a size rule (its work does not scale with a count of runs)."""
    s = BY_NAME[name]
    return None if s.size is None else float(rule(s.size)(params, name))


def configs_of(name: str, params: dict) -> list[dict] | None:
    """Stage ``name``'s configurations under ``params`` (the dicts over its keys that its rounds
    run once each); None for a stage that declares none."""
    s = BY_NAME[name]
    return None if s.configs is None else rule(s.configs)(params, name)


def count(x) -> int:
    """A sweep's length: a list's, a dict's; 1 for a single value."""
    return len(x) if isinstance(x, (list, tuple, dict)) else 1


def tier_names(params: dict, names=None) -> list[str]:
    """The profile's tier names (those of ``names`` among them, in ``names``' order, when given)."""
    every = [t["name"] for t in params.get("tiers") or []]
    return every if names is None else [t for t in names if t in every]


def rounds(section: dict) -> int:
    """The rounds a stage runs at least: its ``repeats`` and its warm-up rounds."""
    return int(section.get("repeats", 1)) + int(section.get("warmup", 0) or 0)
