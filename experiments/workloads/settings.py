"""The ``unet3d``, ``bert`` and ``dlrm`` sections of ``params.yaml`` (pydantic only, no framework).

Each section has four parts: ``data`` (the generator, read by the ``workload_data`` stage),
``model``, ``train`` and ``sweep`` (read by the workload's training stage). Checks that span
parts (a batch larger than the data set, more ranks than UNET3D has files, embedding tables
over budget) run here, so bad input stops before anything is launched, with a message naming
the parameter, the value and what is allowed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..settings.common_config import check_counts
from ..settings.config import Section, validate
from ..stages import Stage, count

from .shapes import CRITEO_CARDINALITIES, min_dims


def _positive_list(v: list[int], what: str, hi: int) -> list[int]:
    check_counts(v, what, 1, hi)
    if len(set(v)) != len(v):
        raise ValueError(f"{what}s must not repeat; got {v}")
    return sorted(v)


class Sweep(Section):
    """The grid of (batch size, ranks) configurations; one run per configuration."""

    batch_sizes: list[int] = Field(min_length=1)
    ranks: list[int] = Field([1, 2], min_length=1, description="emulated accelerators (G)")
    runs: int = Field(1, ge=1, le=10, description="independent runs per configuration")

    @field_validator("batch_sizes")
    @classmethod
    def _b(cls, v):
        return _positive_list(v, "batch size", 10_000_000)

    @field_validator("ranks")
    @classmethod
    def _g(cls, v):
        return _positive_list(v, "rank count", 256)


CONTENTS = ("realistic", "random")
COMPUTE = ("real", "sleep")
Content = Literal["realistic", "random"]


class Common(Section):
    """What every workload's training takes.

    ``compute``: ``real`` trains the model; ``sleep`` keeps everything around the data (data
    wait, to-device, the per-step all-reduce, phases, evaluation reads, checkpoints) and
    replaces forward/backward/optimizer with ``time.sleep(t)``, ``t`` drawn per step from the
    compute model named by ``compute_model`` (see :mod:`.compute_model`: ``fit``,
    ``thesis-v100`` or a path to a ``compute-model/1`` file).
    """

    threads_per_rank: int = Field(0, ge=0, le=256, description="intra-op threads; 0: CPUs / ranks")
    compute: Literal["real", "sleep"] = Field("real", description="real model, or sleep(t) from compute_model")
    compute_model: str = Field("fit", min_length=1,
                               description="fit | thesis-v100 | zero | path of a compute-model/1 file (sleep only)")
    checkpoint_dir: str = Field("data/checkpoints", min_length=1,
                                description="where checkpoints go (relative to the project)")
    timeout_s: int = Field(900, ge=10, le=86400, description="per configuration")


# ----------------------------------------------------------------------------- UNET3D

class Unet3dData(Section):
    content: Content = Field("realistic", description="realistic (structured) or random (uniform in the valid ranges, no structure)")
    train_cases: int = Field(16, ge=1, le=100_000, description="paper: 168")
    eval_cases: int = Field(4, ge=1, le=100_000, description="paper: 42")
    scale: float = Field(0.3, gt=0, le=1.0, description="KiTS19 dimensions are multiplied by this")
    workers: int = Field(0, ge=0, le=256, description="generator processes; 0: one per CPU")


class Unet3dModel(Section):
    base_channels: int = Field(4, ge=1, le=512, description="paper: 32")
    depth: int = Field(3, ge=2, le=6, description="resolution levels; paper: 6")
    crop: int = Field(32, ge=8, le=512, description="training patch side; paper: 128")


class Unet3dTrain(Common):
    epochs: int = Field(3, ge=2, le=10_000, description="the first is excluded from throughput")
    eval_every: int = Field(0, ge=0, description="epochs between evaluations; 0: at the end only")
    workers: int = Field(1, ge=0, le=64, description="DataLoader workers per rank")
    oversampling: float = Field(0.4, ge=0, le=1, description="share of foreground-centred crops "
                                "(the reference's RandBalancedCrop)")
    preprocessing: Literal["real", "none", "sleep"] = Field(
        "real", description="real: the reference's augmentations; none: a plain random crop only "
        "(as a benchmark that skips preprocessing); sleep: none + sleep(prep_sleep_s) per sample (Fig A.3)")
    prep_sleep_s: float = Field(0.0, ge=0, le=60, description="seconds per sample with preprocessing: sleep")
    lr: float = Field(0.01, gt=0, le=10)
    eval_overlap: float = Field(0.25, ge=0, lt=1, description="sliding-window overlap")


class Unet3dConfig(Section):
    data: Unet3dData = Unet3dData()
    model: Unet3dModel = Unet3dModel()
    train: Unet3dTrain = Unet3dTrain()
    sweep: Sweep = Sweep(batch_sizes=[1, 2, 4])

    @model_validator(mode="after")
    def _fits(self):
        d, m = self.data, self.model
        gmax, bmax = max(self.sweep.ranks), max(self.sweep.batch_sizes)
        if gmax > d.train_cases:
            raise ValueError(
                f"sweep.ranks = {self.sweep.ranks}: {gmax} ranks but data.train_cases = "
                f"{d.train_cases}; each rank needs at least one file, so ranks <= {d.train_cases}")
        for g in self.sweep.ranks:
            if bmax * g > d.train_cases:
                raise ValueError(
                    f"sweep.batch_sizes = {self.sweep.batch_sizes}: batch {bmax} x {g} ranks is "
                    f"larger than the data set (data.train_cases = {d.train_cases}); allowed: "
                    f"batch size x ranks <= {d.train_cases}")
        if m.crop > min(min_dims(d.scale)):
            raise ValueError(f"model.crop = {m.crop}: larger than the smallest case at data.scale = "
                             f"{d.scale} ({min(min_dims(d.scale))} voxels); lower crop or raise scale")
        if m.crop % (2 ** (m.depth - 1)):
            raise ValueError(f"model.crop = {m.crop}: must be a multiple of 2^(depth-1) = "
                             f"{2 ** (m.depth - 1)}")
        return self


# ----------------------------------------------------------------------------- BERT

class BertData(Section):
    content: Content = Field("realistic", description="realistic (structured) or random (uniform in the valid ranges, no structure)")
    files: int = Field(8, ge=1, le=100_000, description="paper: 500")
    samples_per_file: int = Field(256, ge=1, le=10_000_000, description="paper: ~313,000")
    eval_samples: int = Field(128, ge=1, le=10_000_000, description="paper: 10,000")
    vocab_size: int = Field(30522, ge=128, le=1_000_000)
    seq_len: int = Field(512, ge=8, le=4096)
    max_predictions: int = Field(76, ge=1, le=4096)
    workers: int = Field(0, ge=0, le=256)

    @model_validator(mode="after")
    def _pred(self):
        if self.max_predictions > self.seq_len:
            raise ValueError(f"max_predictions = {self.max_predictions} must be <= seq_len = {self.seq_len}")
        return self


class BertModel(Section):
    hidden: int = Field(64, ge=8, le=8192, description="paper (BERT-large): 1024")
    layers: int = Field(2, ge=1, le=48, description="paper: 24")
    heads: int = Field(2, ge=1, le=64, description="paper: 16")
    intermediate: int = Field(128, ge=8, le=32768, description="paper: 4096")

    @model_validator(mode="after")
    def _div(self):
        if self.hidden % self.heads:
            raise ValueError(f"hidden = {self.hidden} must be a multiple of heads = {self.heads}")
        return self


class BertTrain(Common):
    steps: int = Field(12, ge=3, le=10_000_000, description="the first is excluded")
    eval_steps: int = Field(2, ge=0, le=100_000)
    cycle_length: int = Field(8, ge=1, le=256, description="parallel interleave of files")
    shuffle_buffer: int = Field(1000, ge=1, le=10_000_000)
    map_threads: int = Field(8, ge=1, le=256, description="map_and_batch threads")
    lr: float = Field(1e-4, gt=0, le=10)


class BertConfig(Section):
    data: BertData = BertData()
    model: BertModel = BertModel()
    train: BertTrain = BertTrain()
    sweep: Sweep = Sweep(batch_sizes=[1, 2, 4])

    @model_validator(mode="after")
    def _fits(self):
        n = self.data.files * self.data.samples_per_file
        for g in self.sweep.ranks:
            if g > self.data.files:
                raise ValueError(f"sweep.ranks = {self.sweep.ranks}: {g} ranks but data.files = "
                                 f"{self.data.files}; files are sharded per worker, so ranks <= files")
            b = max(self.sweep.batch_sizes)
            if b * g > n:
                raise ValueError(f"sweep.batch_sizes = {self.sweep.batch_sizes}: batch {b} x {g} ranks "
                                 f"is larger than the data set ({n} samples)")
        return self


# ----------------------------------------------------------------------------- DLRM

class DlrmData(Section):
    content: Content = Field("realistic", description="realistic (structured) or random (uniform in the valid ranges, no structure)")
    train_samples: int = Field(200_000, ge=1, le=10**11, description="paper: ~4.2 billion")
    eval_samples: int = Field(20_000, ge=1, le=10**10)
    workers: int = Field(0, ge=0, le=256)


class DlrmModel(Section):
    embedding_dim: int = Field(16, ge=1, le=1024, description="paper: 128")
    bottom_mlp: list[int] = Field([64, 32], description="hidden sizes; paper: 512, 256 (then 128)")
    top_mlp: list[int] = Field([64, 32], description="hidden sizes; paper: 1024, 1024, 512, 256")
    max_cardinality: int = Field(10_000, description="rows per table cap (ids folded with %)")
    embedding_budget_mib: float = Field(64, gt=0, le=10**7, description="all tables, float32")

    @field_validator("max_cardinality")
    @classmethod
    def _cap(cls, v):
        if v < 1:
            raise ValueError(f"max_cardinality = {v}: must be >= 1 (rows per embedding table)")
        return v

    def table_rows(self) -> list[int]:
        return [min(c, self.max_cardinality) for c in CRITEO_CARDINALITIES]

    def embedding_bytes(self) -> int:
        return sum(self.table_rows()) * self.embedding_dim * 4

    @model_validator(mode="after")
    def _budget(self):
        need = self.embedding_bytes() / 2**20
        if need > self.embedding_budget_mib:
            raise ValueError(
                f"max_cardinality = {self.max_cardinality}, embedding_dim = {self.embedding_dim}: "
                f"the tables need {need:.1f} MiB, over embedding_budget_mib = "
                f"{self.embedding_budget_mib}; lower max_cardinality or raise the budget")
        return self


class DlrmTrain(Common):
    steps: int = Field(40, ge=3, le=10**8)
    eval_every: int = Field(20, ge=0, description="steps between evaluation + checkpoint; 0: end only")
    eval_steps: int = Field(4, ge=0, le=10**6)
    lr: float = Field(0.1, gt=0, le=100)


class DlrmConfig(Section):
    data: DlrmData = DlrmData()
    model: DlrmModel = DlrmModel()
    train: DlrmTrain = DlrmTrain()
    sweep: Sweep = Sweep(batch_sizes=[512, 2048, 8192])

    @model_validator(mode="after")
    def _fits(self):
        b = max(self.sweep.batch_sizes)
        if b > self.data.train_samples:
            raise ValueError(f"sweep.batch_sizes = {self.sweep.batch_sizes}: batch {b} is larger "
                             f"than the data set (data.train_samples = {self.data.train_samples}); "
                             "DLRM's batch is global")
        for g in self.sweep.ranks:
            if min(self.sweep.batch_sizes) < g:
                raise ValueError(f"sweep.ranks = {self.sweep.ranks}: the global batch "
                                 f"{min(self.sweep.batch_sizes)} is split over ranks, so it must "
                                 f"be >= ranks ({g})")
        if self.train.eval_steps and self.data.eval_samples < max(self.sweep.batch_sizes):
            raise ValueError(f"data.eval_samples = {self.data.eval_samples}: smaller than the "
                             f"largest batch {b}; allowed: >= {b} or train.eval_steps = 0")
        return self


# ----------------------------------------------------------------------------- RetinaNet

class RetinanetData(Section):
    """MLPerf Storage v3.0's RetinaNet data: one JPEG per sample (:mod:`.data_retinanet`)."""

    content: Literal["realistic"] = Field("realistic", description="realistic only (no generated-data row)")
    train_files: int = Field(8, ge=1, le=10_000_000, description="v3.0: 1,170,301")
    eval_files: int = Field(2, ge=1, le=10_000_000)
    mean_bytes: int = Field(322_957, ge=4096, le=64 * 2**20, description="v3.0: record_length_bytes 322,957")
    size_sigma: float = Field(0.5, ge=0, le=2, description="log-normal spread of file sizes; 0: one fixed size (DLIO's)")
    size_tolerance: float = Field(0.05, gt=0, le=0.5, description="relative size error accepted per file")
    jpeg_quality: int = Field(90, ge=10, le=100)
    max_boxes: int = Field(4, ge=1, le=100, description="boxes per image: 1 to this")
    num_classes: int = Field(264, ge=2, le=10_000, description="MLPerf's OpenImages subset: 264")
    workers: int = Field(0, ge=0, le=256, description="generator processes; 0: one per CPU")


class RetinanetModel(Section):
    image_size: int = Field(64, ge=64, le=2048, description="images resized to this square; MLPerf: 800. At "
                            "least 64: below it ResNet-50's last stage is 1 x 1 and batch norm cannot train at batch 1")


class RetinanetTrain(Common):
    epochs: int = Field(2, ge=1, le=10_000, description="v3.0: 8; the first step of each is excluded")
    read_threads: int = Field(1, ge=0, le=64, description="DataLoader workers per rank; v3.0: 8")
    lr: float = Field(0.01, gt=0, le=10)


class RetinanetConfig(Section):
    data: RetinanetData = RetinanetData()
    model: RetinanetModel = RetinanetModel()
    train: RetinanetTrain = RetinanetTrain()
    sweep: Sweep = Sweep(batch_sizes=[1, 2])

    @model_validator(mode="after")
    def _fits(self):
        for g in self.sweep.ranks:
            b = max(self.sweep.batch_sizes)
            if b * g > self.data.train_files:
                raise ValueError(f"sweep.batch_sizes = {self.sweep.batch_sizes}: batch {b} x {g} ranks is "
                                 f"larger than the data set (data.train_files = {self.data.train_files}); "
                                 f"allowed: batch size x ranks <= {self.data.train_files}")
        return self


# ----------------------------------------------------------------------------- validation rows

WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")


class Subset(Section):
    """Which of each workload's sweep configurations a validation stage runs (so the extra rows
    fit a time budget): ``ranks`` a subset of ``<workload>.sweep.ranks`` (None: all of them),
    ``batch_sizes`` one of ``all``, ``smallest``, ``largest``, ``ends`` (smallest and largest)."""

    workloads: list[Literal["unet3d", "bert", "dlrm", "retinanet"]] = Field(
        ["unet3d", "bert", "dlrm"], min_length=1,
        description="the thesis's three unless named; retinanet (MLPerf Storage v3.0) when listed")
    ranks: list[int] | None = Field(None, description="None: each workload's sweep.ranks")
    batch_sizes: Literal["all", "smallest", "largest", "ends"] = "all"

    @field_validator("workloads")
    @classmethod
    def _w(cls, v):
        if len(set(v)) != len(v):
            raise ValueError(f"workloads must not repeat; got {v}")
        return v

    @field_validator("ranks")
    @classmethod
    def _r(cls, v):
        return None if v is None else _positive_list(v, "rank count", 256)

    def grid(self, sweep: Sweep, section: str) -> tuple[list[int], list[int]]:
        """(ranks, batch sizes) of ``sweep`` this subset keeps; ValueError naming ``section``
        when ``ranks`` names a rank count the workload's sweep does not run (no real row)."""
        ranks = sweep.ranks if self.ranks is None else self.ranks
        extra = sorted(set(ranks) - set(sweep.ranks))
        if extra:
            raise ValueError(f"{section}.ranks = {self.ranks}: {extra} not in the real sweep's ranks "
                             f"{sweep.ranks}; allowed: a subset of them (the real row is compared)")
        b = sweep.batch_sizes
        pick = {"all": b, "smallest": b[:1], "largest": b[-1:], "ends": sorted({b[0], b[-1]})}
        return list(ranks), list(pick[self.batch_sizes])


class FigA3(Section):
    """Fig A.3: UNET3D sleep runs whose loader skips the preprocessing (``none``) or sleeps
    ``prep_sleep_s`` seconds per sample in its place (``sleep``; None: the real run's median
    per-sample preprocessing time), on ``ranks`` (None: the sleep row's) and the sleep row's
    batch sizes."""

    modes: list[Literal["none", "sleep"]] = Field(["none", "sleep"], description="[] to skip Fig A.3")
    ranks: list[int] | None = Field(None, description="a subset of the sleep row's ranks; None: all")
    prep_sleep_s: float | None = Field(None, ge=0, le=60,
                                       description="None: the real run's median preprocessing latency")

    @field_validator("ranks")
    @classmethod
    def _r(cls, v):
        return None if v is None else _positive_list(v, "rank count", 256)


class WorkloadSleepConfig(Subset):
    """The "sleep" row (thesis Sec 5.1.3, 5.3.2) and Fig A.3: each workload's sweep (or the
    subset) with ``train.compute = sleep``, on the realistic data set, with the compute model
    ``compute_model``; and UNET3D with the loader's preprocessing replaced (``fig_a3``)."""

    compute_model: str = Field("fit", min_length=1,
                               description="fit | thesis-v100 | zero | path of a compute-model/1 file")
    compute_level: Literal["hour", "fit"] = Field(
        "hour", description="hour: the fit carried to each round's hour by the real runs beside the row "
                            "(experiments.workloads.hour_level); fit: as fitted (the thesis's way). "
                            "Only the model fit is carried")
    fig_a3: FigA3 = FigA3()


class WorkloadRandomConfig(Subset):
    """The "generated data" row (thesis Sec 4.7, 5.1.3): each workload's data set generated
    again with ``content: random`` into ``data/<workload>-random`` and the real sweep (or the
    subset) run on it."""

    workloads: list[Literal["unet3d", "bert", "dlrm"]] = Field(["unet3d", "bert", "dlrm"], min_length=1,
                                                            description="RetinaNet has no generated-data row")


# ----------------------------------------------------------------------------- the registry's entry

def sweep_size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): a workload's batch sizes x ranks x runs."""
    s = p[name]["sweep"]
    return count(s["batch_sizes"]) * count(s["ranks"]) * int(s["runs"])


def real_configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`): a workload's real runs."""
    s = p[name]["sweep"]
    return [{"workload": name, "variant": "real", "ranks": g, "batch_size": n} for g in s["ranks"] for n in s["batch_sizes"]]


def _subset(p: dict, section: str, w: str) -> tuple[int, int]:
    """(rank counts, batch sizes) of workload ``w``'s sweep that the row ``section`` keeps, as
    :meth:`Subset.grid` picks them (counted, not listed: the forecast records what it reads)."""
    s, sw = p[section], p[w]["sweep"]
    ranks = s.get("ranks") or sw["ranks"]
    b = sw["batch_sizes"]
    pick = s.get("batch_sizes") or "all"
    return count(ranks), {"all": count(b), "smallest": 1, "largest": 1, "ends": len({b[0], b[-1]})}[pick]


def sleep_size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): the sleep row's
    configurations (each workload's kept (G, B)), the real runs beside them, and Fig A.3's (UNET3D's kept batch sizes, on its
    ranks), each run its workload's ``sweep.runs`` times."""
    s = p["workload_sleep"]
    a3 = s.get("fig_a3") or {}
    out = 0
    for w in s.get("workloads") or []:
        g, b = _subset(p, "workload_sleep", w)
        n = g * b
        n *= 2   # the real runs beside the sleep row (validation.BESIDE)
        if w == "unet3d":
            n += count(a3.get("modes")) * (count(a3.get("ranks")) if a3.get("ranks") else g) * b
        out += n * int(p[w]["sweep"]["runs"])
    return out


def random_size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): each workload's kept
    (G, B) of the generated-data row and of the real runs beside it, run its ``sweep.runs`` times."""
    s = p["workload_random"]
    out = 0
    for w in s.get("workloads") or []:
        g, b = _subset(p, "workload_random", w)
        out += 2 * g * b * int(p[w]["sweep"]["runs"])   # and the real runs beside it (validation.BESIDE)
    return out


STEPS = {"unet3d": "epochs", "bert": "steps", "dlrm": "steps"}   # what a workload's run length is counted in


def train_units(p: dict, w: str, over: dict | None = None) -> float:
    """Workload ``w``'s run length in its units (``train.epochs`` or ``train.steps``; ``over``:
    a stage's overrides of the workloads' sections, as the traced comparison has)."""
    o = ((over or {}).get(w) or {}).get("train") or {}
    key = STEPS[w]
    return float(o[key] if key in o else p[w]["train"][key])


def run_length(p: dict, name: str) -> dict[str, float]:
    """The stage's run length (:func:`experiments.stages.length_of`): each workload it runs, its
    units a run (one workload's stage: that workload's; the sleep and random rows: theirs).
    Not for RetinaNet, AlexNet's or the blog's runs: their variance.csv rows separate no set-up."""
    names = [name] if name in STEPS else (p[name].get("workloads") or [])
    return {w: train_units(p, w) for w in names if w in STEPS}


def sleep_configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`):
    each workload's sleep grid, the real runs beside it, and UNET3D's Fig A.3 prep modes."""
    ws = validate("workload_sleep", p["workload_sleep"])
    out = []
    for w in ws.workloads:
        g, bs = ws.grid(validate(w, p[w]).sweep, "workload_sleep")
        out += [{"workload": w, "variant": v, "ranks": r, "batch_size": n} for v in ("sleep", "real")
                for r in g for n in bs]
        if w == "unet3d":
            out += [{"workload": w, "variant": f"prep-{m}", "ranks": r, "batch_size": n}
                    for m in ws.fig_a3.modes for r in (ws.fig_a3.ranks or g) for n in bs]
    return out


def random_configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`):
    each workload's random-data grid and the real runs beside it."""
    wr = validate("workload_random", p["workload_random"])
    out = []
    for w in wr.workloads:
        g, bs = wr.grid(validate(w, p[w]).sweep, "workload_random")
        out += [{"workload": w, "variant": v, "ranks": r, "batch_size": n} for v in ("random", "real")
                for r in g for n in bs]
    return out


_DATA = ("data/unet3d", "data/bert", "data/dlrm")
_PARTS = ("model", "train", "sweep")
STAGE = (
    *(Stage(w, f"notebooks/3{i}-{w}.ipynb", "measuring", {w: f"{w.capitalize()}Config"},
            ("seed", *(f"{w}.{p}" for p in _PARTS)), True, "workload_fits", (f"data/{w}",),
            size="sweep_size", configs="real_configurations", length="run_length")
      for i, w in ((1, "unet3d"), (2, "bert"), (3, "dlrm"))),
    Stage("retinanet", "notebooks/38-retinanet.ipynb", "measuring", {"retinanet": "RetinanetConfig"},
          ("seed", *(f"retinanet.{p}" for p in _PARTS)), True, "workload_fits", ("data/retinanet",),
          note="MLPerf Storage v3.0's RetinaNet (our extension; docs/workloads.md \"RetinaNet\").", size="sweep_size"),
    Stage("workload_sleep", "notebooks/35-workload-sleep.ipynb", "measuring", {"workload_sleep": "WorkloadSleepConfig"},
          ("seed", *(f"{w}.{p}" for w in ("unet3d", "bert", "dlrm", "retinanet") for p in _PARTS), "workload_sleep"),
          True, "workload_validation",
          (*_DATA, "data/retinanet", "results/workload_fits/compute_model.json", "results/unet3d/loader.csv"),
          note="Ho-Von 2023 Ch. 3, Sec 4.7, 5.x.3: the sleep and generated-data rows, Fig A.3, accelerator "
               "utilization.",
          size="sleep_size", configs="sleep_configurations", length="run_length"),
    Stage("workload_random", "notebooks/36-workload-random.ipynb", "measuring",
          {"workload_random": "WorkloadRandomConfig"}, ("seed", "unet3d", "bert", "dlrm", "workload_random"),
          True, "workload_validation", _DATA, ("data/unet3d-random", "data/bert-random", "data/dlrm-random"),
          size="random_size", configs="random_configurations", length="run_length"),
)
