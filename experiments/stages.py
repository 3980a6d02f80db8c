"""The one registry of the pipeline's stages: what each runs, reads, writes and is set by.

A measuring stage declares its own entry in its module, beside its settings model (``STAGE =
Stage(...)``, found by :func:`discover` without importing the module); the stages no one module
owns (the findings' rules, the data sets, the reports, the claims) are listed here (``_HERE``).
:data:`STAGES` is both, in the pipeline's order (:func:`in_order`).

Every list of stages is made from :data:`STAGES` (a test fails on a list of stage names written
by hand elsewhere in the package, ``tests/test_stages.py``):

- ``config.SECTIONS``: each stage's settings sections (``"module:Model"`` strings, imported
  lazily: reading one stage's configuration never imports TensorFlow or PyTorch), and
  :data:`SHARED`, the sections no one stage owns;
- the buying stages (:func:`buying`): ``DecideParams``'s fields, ``params.yaml``'s ``decide:``
  (:func:`experiments.pipeline.profile.render` fills it), the ``claim_rules`` files;
- the measuring stages (:func:`measuring`): ``make replicate`` and a claim's ``make repro STAGES=``;
- ``dvc.yaml``, written whole by ``python -m experiments.pipeline.depcheck --write``
  (:func:`experiments.pipeline.depcheck.dvc_yaml`): each stage's ``results/`` and ``data/`` inputs first,
  then its notebook and its code by package folder, from the imports its notebook reaches;
- the forecast's size of each stage and the profile's configurations of each (:func:`size_of`,
  :func:`configs_of`: functions of the stage's module its entry names).
- each measuring stage's builder (:func:`builder_of`: ``measuring_stage(cfg, ...) ->
  MeasuringStage``, its settings first; ``tests/test_measuring_builders.py`` builds every one and
  checks that building runs nothing), or none where its runs are not the unit of an interval.

This module imports nothing of the package: ``config`` reads it, and the generator reads both.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field, replace
from pathlib import Path

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
    unread: tuple[str, ...] = ()                   # globs of results/<name>/ files no stage downstream reads
                                                   # (the reference run leaves them out: refrun.record)
    note: str = ""                                 # the comment above it in dvc.yaml
    size: str | None = None                        # "module:function": its size rule (:func:`size_of`)
    configs: str | None = None                     # "module:function": its configurations (:func:`configs_of`)
    length: str | None = None                      # "module:function": its run length rule (:func:`length_of`)
    # a measuring stage's builder, "module:function" (:func:`builder_of`): ``measuring_stage(cfg,
    # ...) -> MeasuringStage``, cfg its settings; building runs nothing. A bare name is the
    # declaring module's, or, declared in a package's ``settings`` module (which imports no
    # framework), its package's ``stage`` module's. None: its runs are not the unit of an
    # interval (its module's docstring says why); other kinds have none.
    builder: str | None = "measuring_stage"
    module: str | None = None                      # the module that declares it (:func:`discover`)

    def __post_init__(self):
        if self.module:   # a module's own names ("Settings", "size") are that module's
            here = lambda ref: ref if ref is None or ":" in ref else f"{self.module}:{ref}"   # noqa: E731
            object.__setattr__(self, "settings", {k: here(v) for k, v in self.settings.items()})
            object.__setattr__(self, "size", here(self.size))
            object.__setattr__(self, "configs", here(self.configs))
            object.__setattr__(self, "length", here(self.length))
            home = self.module.rsplit(".", 1)[0] + ".stage" if self.module.endswith(".settings") else self.module
            if self.builder and ":" not in self.builder:
                object.__setattr__(self, "builder", f"{home}:{self.builder}")
        if self.kind != "measuring":
            if self.builder not in (None, "measuring_stage"):
                raise ValueError(f"stage {self.name}: builder = {self.builder!r}; allowed only for a measuring stage")
            object.__setattr__(self, "builder", None)
        if self.kind not in KINDS:
            raise ValueError(f"stage {self.name}: kind = {self.kind!r}; allowed: {', '.join(KINDS)}")
        if self.buys and self.kind != "measuring":
            raise ValueError(f"stage {self.name}: buys = True; allowed only for a measuring stage")


# Sections read by many stages, owned by none.
SHARED: dict[str, str] = {
    "seed": "experiments.settings.common_config:Seed",
    "tiers": "experiments.host.tiers:TierList",
    "imagenet_size_mix": "experiments.settings.common_config:SizeMix",
    "figures": "experiments.settings.common_config:FigureConfig",
    "decide": "experiments.repeats.purchases:DecideParams",
}

_FIG = ("figures",)
_WDATA = ("data/unet3d", "data/bert", "data/dlrm")


def _report(name, notebook, inputs, plots=(), note=""):
    return Stage(name, notebook, "report", params=_FIG, inputs=inputs,
                 plots=tuple(f"results/{name}/{p}.png" for p in plots), note=note)


# The stages no one module owns: the findings' rules, the data sets, the reports and the claims.
# A measuring stage declares its own entry in its module (``STAGE = Stage(...)``, :func:`discover`).
_HERE: tuple[Stage, ...] = (
    Stage("claim_rules", "notebooks/00-claim-rules.ipynb", "rules",
          note="The part of the papers' declarations that steers measuring: each finding's rule, margin and "
               "the configurations it compares, one file per buying stage (which depends on its file "
               "alone). A changed quote re-runs this stage, which writes the same bytes: nothing re-measures."),
    Stage("imagenet_like", "notebooks/02-imagenet-like-data.ipynb", "data",
          {"imagenet_like": "experiments.datasets.imagenet_like:ImageNetLikeConfig"},
          ("seed", "imagenet_like", "imagenet_size_mix"), outs=("data/imagenet_like",), items=True,
          size="experiments.datasets.imagenet_like:size"),
    _report("tfdata_read_report", "notebooks/04-tfdata-read-report.ipynb",
            ("results/fio_baseline", "results/imagenet_like", "results/tfdata_read"),
            ("fig4_tfdata_full", "fig5_tfdata_read_only", "table1_fio_baseline", "imagenet_like_sizes")),
    _report("deepio_report", "notebooks/41-deepio-report.ipynb", ("results/deepio", "results/fio_baseline"),
            ("rl_blocks", "fig7_accuracy_rl", "fig8_accuracy_opportunistic", "fig10_bandwidth")),
    _report("lmdbio_report", "notebooks/43-lmdbio-report.ipynb", ("results/lmdbio",), ("fig2_lmdbio",)),
    _report("blog_report", "notebooks/45-blog-report.ipynb", ("results/blog", "results/fio_baseline"),
            ("size_histogram", "tfdata_threads", "torch_workers", "warm_vs_cold")),
    Stage("caltech_like", "notebooks/10-caltech-like-data.ipynb", "data",
          {"caltech_like": "experiments.datasets.caltech_like:CaltechLikeConfig"},
          ("seed", "caltech_like"), outs=("data/caltech_like",), items=True,
          size="experiments.datasets.caltech_like:size"),
    _report("alexnet_report", "notebooks/13-alexnet-report.ipynb",
            ("results/caltech_like", "results/alexnet_prefetch", "results/alexnet_checkpoint", "results/fio_baseline"),
            ("caltech_like_sizes", "fig6_alexnet_prefetch_threads", "fig7_alexnet_batch_size", "fig8_alexnet_dstat",
             "fig9_checkpoint_runtime", "fig10_checkpoint_dstat")),
    Stage("workload_data", "notebooks/30-workload-data.ipynb", "data", {},
          ("seed", "unet3d.data", "bert.data", "dlrm.data", "retinanet.data"), outs=(*_WDATA, "data/retinanet", "data/retinanet-fixed"),
          note="Ho-Von 2023: the three MLPerf workloads (experiments/workloads/, docs/workloads.md)."),
    _report("workload_fits", "notebooks/34-workload-fits.ipynb",
            ("results/unet3d", "results/bert", "results/dlrm", "results/retinanet"),
            tuple(f"{w}_{p}" for p in ("step_breakdown", "throughputs") for w in ("unet3d", "bert", "dlrm"))),
    _report("workload_validation", "notebooks/37-workload-validation.ipynb",
            ("results/unet3d", "results/bert", "results/dlrm", "results/retinanet", "results/workload_random",
             "results/workload_sleep",
             "results/traced_comparison")),
    _report("tracing_report", "notebooks/21-tracing-report.ipynb", ("results/tracing_patterns",),
            ("similarity_matrix", "timeline_loader", "timeline_fio_seq_rand")),
    _report("emulator_patterns_report", "notebooks/54-emulator-patterns-report.ipynb", ("results/emulator_patterns",),
            ("checkpoint_write_sizes",),
            "Its figure and the replay check's claim, from what emulator_patterns wrote: a figure setting "
            "re-runs only this."),
    _report("traced_comparison_report", "notebooks/53-traced-comparison-report.ipynb",
            ("results/traced_comparison", "results/unet3d", "results/bert", "results/dlrm", "results/retinanet"),
            ("throughput_by_side",),
            "Its timelines, throughputs and claims, from what traced_comparison wrote (and the workload "
            "stages' runs the compute fit was made from, whose spread the sleeping sides' compute "
            "intervals hold): a figure setting re-runs only this."),
    _report("llm_checkpoint_report", "notebooks/56-llm-checkpoint-report.ipynb", ("results/llm_checkpoint",),
            ("llm_checkpoint_throughput", "llm_checkpoint_burst_buffer"),
            "Its figures and extension claims, from what llm_checkpoint wrote: a figure setting re-runs only this."),
    Stage("claims", "notebooks/99-claims.ipynb", "claims", inputs=("env/reference-times.csv",), keep=True,
          note="Every stage's claims.json in one table: the reviewer's first read (results/claims/claims.md); "
               "the claims files only (and each data stage's measured.json), so a figure change upstream does "
               "not re-run it; its folder persists: the run before's claims.csv stays until this run reads it."),
)


# ----------------------------------------------------------------------------- the modules' entries
# As DLIO's factories find a reader by its type, the registry finds a measuring stage in the
# module that declares it: a module-level ``STAGE = Stage(...)`` (or a tuple of them), beside
# its settings model. It is read with ``ast``, never imported: every module imports this one, and
# a measuring module may import TensorFlow. A declaration is made of literals, ``Stage(...)`` and
# the module's own constants; its ``settings``, ``size`` and ``configs`` name the module's own
# names ("Settings", "size") or another module's ("module:Name").

_BUILTINS = {"tuple": tuple, "dict": dict, "list": list, "range": range, "enumerate": enumerate, "zip": zip}


def _module_name(f: Path, package: Path) -> str:
    parts = f.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _evaluate(node: ast.expr, consts: dict[str, ast.expr], env: dict, where: str, seen=()) -> object:
    """``node`` evaluated with ``Stage``, a few builtins and the module constants it names."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id not in env and n.id in consts and n.id not in seen:
            env[n.id] = _evaluate(consts[n.id], consts, env, where, (*seen, n.id))
    try:
        return eval(compile(ast.Expression(node), where, "eval"), env)   # noqa: S307 - literals and Stage only
    except Exception as e:   # a name the declaration cannot see, a bad field
        raise ValueError(f"{where}: STAGE: {e}; a declaration is made of literals, Stage(...) and the "
                         "module's own constants made of those") from None


def discover(package: Path | None = None) -> tuple[Stage, ...]:
    """The stages the modules of ``package`` (``experiments/``) declare (``STAGE = ...``), in
    the order of their files."""
    package = package or Path(__file__).resolve().parent
    out: list[Stage] = []
    for f in sorted(package.rglob("*.py")):
        text = f.read_text()
        if "\nSTAGE = " not in "\n" + text:   # most modules: no parse
            continue
        tree = ast.parse(text, str(f))
        consts = {n.targets[0].id: n.value for n in tree.body
                  if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
        decl = consts.get("STAGE")
        if not (isinstance(decl, (ast.Tuple, ast.List)) or (isinstance(decl, ast.Call)
                                                             and getattr(decl.func, "id", None) == "Stage")):
            continue   # a report module's STAGE = "its name"
        where = str(f.relative_to(package.parent))
        got = _evaluate(decl, consts, {"__builtins__": _BUILTINS, "Stage": Stage}, where)
        got = got if isinstance(got, (tuple, list)) else (got,)
        if not got or not all(isinstance(s, Stage) for s in got):
            raise ValueError(f"{where}: STAGE = {ast.unparse(decl)[:80]}...; allowed: a Stage(...) or a tuple of them")
        out += [replace(s, module=_module_name(f, package)) for s in got]
    return tuple(out)


def _reads(s: Stage, o: Stage) -> bool:
    """Whether stage ``s`` reads what stage ``o`` writes (its results folder, its data sets)."""
    return s.kind == "claims" and o.kind != "claims" or any(
        i == w or i.startswith(w + "/") for i in s.inputs for w in (f"results/{o.name}", *o.outs))


def in_order(entries) -> tuple[Stage, ...]:
    """``entries`` in the pipeline's order: a stage after every stage it reads, otherwise by its
    notebook's number."""
    names = [s.name for s in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        where = {n: [s.module or "experiments.stages" for s in entries if s.name == n] for n in twice}
        raise ValueError(f"stages declared twice: {where}")
    left, out = sorted(entries, key=lambda s: (s.notebook, s.name)), []
    while left:
        ready = [s for s in left if not any(_reads(s, o) for o in left if o is not s)]
        if not ready:
            raise ValueError(f"stages that read each other's outputs: {[s.name for s in left]}")
        out.append(ready[0])
        left.remove(ready[0])
    return tuple(out)


STAGES: tuple[Stage, ...] = in_order((*_HERE, *discover()))

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


def builder_of(name: str):
    """Stage ``name``'s builder (``measuring_stage(cfg, ...) -> MeasuringStage``, imported);
    None for a stage without one (:attr:`Stage.builder`)."""
    s = BY_NAME[name]
    return None if s.builder is None else rule(s.builder)


def length_of(name: str, params: dict) -> dict[str, float] | None:
    """Stage ``name``'s run length under ``params``: {part: a number proportional to the units
    (epochs or steps) a run of that part does}. A run's seconds are set-up plus units (Kalibera and
    Jones's cost model, the one variance.csv fits), so the forecast scales only the units' share
    of a run (``unit_share`` in env/reference-times.csv); None for a stage without a length rule
    (its runs' length is taken at the reference's, and a change to it is named UNKNOWN)."""
    s = BY_NAME[name]
    return None if s.length is None else rule(s.length)(params, name)


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
    """The rounds a stage runs at least: its ``runs`` and its warm-up rounds."""
    return int(section.get("runs", 1)) + int(section.get("warmup", 0) or 0)
