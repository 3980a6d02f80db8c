"""The ``traced_comparison`` section of ``params.yaml`` (pydantic only, no framework)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..settings.config import Section
from ..stages import Stage

WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")
SIDES = ("real", "sleep", "emulator", "dlio", "fixed")
# the side ``fixed``: the emulator on the workload's fixed-size variant of its data (every file
# one size, as DLIO writes them); only RetinaNet has one (data/retinanet-fixed)
FIXED_DATA = {"retinanet": "retinanet-fixed"}
_W = Literal["unet3d", "bert", "dlrm", "retinanet"]


class ComparisonPoint(Section):
    """One (B, G) point of a workload's default sweep."""

    batch_size: int = Field(ge=1, description="per accelerator (unet3d, bert) or global (dlrm), as the sweep")
    ranks: int = Field(ge=1, le=64, description="accelerators (processes) G")


class MaxAccelerators(Section):
    """The max-accelerators search run once a stage run, after the passes (not a pass: one
    search per tier and workload, its trials each a cold emulator run)."""

    workloads: list[_W] = Field(default_factory=list, description="workloads searched, at their point's batch")
    tiers: list[str] = Field(default_factory=list, description="names of tiers of `tiers`, each searched")
    compute_model: str = Field("mlperf-v3.0", min_length=1,
                               description="the emulator's sleep: mlperf-v3.0 (the config's 0.04755 s), fit, a file")
    limit: int = Field(4, ge=1, le=1024, description="most accelerators tried (the data set may allow fewer)")


class TracedComparisonConfig(Section):
    """What the ``traced_comparison`` stage traces: each workload of ``points`` at its (B, G),
    with the schedule of its own section (``train`` part), laid over by ``overrides``; the data
    staged on ``tier`` (checkpoints go there too), evicted before each side; ``runs`` passes of
    every workload (``make decide`` buys more)."""

    points: dict[_W, ComparisonPoint] = Field(
        min_length=1, description="one (batch_size, ranks) per workload compared")
    sides: list[Literal["real", "sleep", "emulator", "dlio", "fixed"]] = Field(
        list(SIDES[:4]), min_length=1, description="which sides run (real is always needed; fixed: the "
                                                   "emulator on the fixed-size data, for workloads that have it)")
    tier: str = Field("disk", min_length=1, description="name of a tier of `tiers`: data and checkpoints")
    backend: Literal["auto", "bpftrace", "strace", "proc"] = "auto"
    compute_model: str = Field("fit", min_length=1,
                               description="sleep, emulator and DLIO compute time: fit | thesis-v100 | file")
    compute_level: Literal["hour", "fit"] = Field(
        "hour", description="hour: the fit carried to each pass's hour by its real side, which runs first "
                            "(experiments.workloads.hour_level); fit: as fitted (the thesis's way). "
                            "Only the model fit is carried")
    checkpoint_pattern: str = Field("traced", min_length=1, description="the emulator's checkpoint writes")
    overrides: dict[_W, dict] = Field(
        default_factory=dict, description="laid over each workload's section for all sides, "
                                          "e.g. {unet3d: {train: {epochs: 2}}}")
    eviction: Literal["auto", "drop_caches", "fadvise", "none"] = "auto"
    dlio_timeout_s: int = Field(600, ge=10, le=7200, description="DLIO run limit, s")
    runs: int = Field(1, ge=1, le=50, description="passes of every workload (a pass: each side once, "
                                                 "traced): the unit of every interval; 3 give the ratios "
                                                 "between sides one, 6 a side's own similarity")
    max_accelerators: MaxAccelerators = Field(default_factory=MaxAccelerators,
                                              description="the max-accelerators search (none by default)")


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): each point's sides x runs."""
    t = p["traced_comparison"]
    # the sides a pass runs: `fixed` only for a workload with a fixed-size variant of its data (FIXED_DATA)
    return sum(len([s for s in t["sides"] if s != "fixed" or w in FIXED_DATA]) for w in t["points"]) * int(t.get("runs", 1))


def run_length(p: dict, name: str) -> dict[str, float]:
    """The stage's run length (:func:`experiments.stages.length_of`): each traced workload's units
    a pass (its section with the stage's overrides; RetinaNet has no length rule)."""
    from ..workloads.settings import STEPS, train_units

    t = p["traced_comparison"]
    return {w: train_units(p, w, t.get("overrides")) for w in t["points"] if w in STEPS}


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`): one per workload point."""
    return [{"workload": w} for w in p["traced_comparison"]["points"]]


STAGE = Stage("traced_comparison", "notebooks/52-traced-comparison.ipynb", "measuring",
              {"traced_comparison": "TracedComparisonConfig"},
              ("seed", "tiers", "unet3d", "bert", "dlrm", *(f"retinanet.{p}" for p in ("model", "train", "sweep")),
               "traced_comparison"), True, "traced_comparison_report",
              (*(f"data/{w}" for w in ("unet3d", "bert", "dlrm", "retinanet", "retinanet-fixed")),
               "results/workload_fits/compute_model.json", "results/emulator_patterns/checkpoint_pattern.json",
               *(f"results/{w}/checkpoint.json" for w in ("unet3d", "bert", "dlrm", "retinanet"))),
              note="Ho-Von 2023 Tables 5.1-5.3, Fig 5.7/5.12/5.18: real, sleep, emulator and DLIO traced side by "
                   "side (measures; draws nothing); RetinaNet's Table 5.x, its fixed-size side and its "
                   "max-accelerators search at AU 0.85 (our extension).",
              unread=("trace_*",),   # the full first-pass traces: the report draws the timeline_* files beside them
              size="size", configs="configurations", length="run_length")
