"""The ``traced_comparison`` section of ``params.yaml`` (pydantic only, no framework)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..settings.config import Section
from ..stages import Stage, count

WORKLOADS = ("unet3d", "bert", "dlrm")
SIDES = ("real", "sleep", "emulator", "dlio")


class ComparisonPoint(Section):
    """One (B, G) point of a workload's default sweep."""

    batch_size: int = Field(ge=1, description="per accelerator (unet3d, bert) or global (dlrm), as the sweep")
    ranks: int = Field(ge=1, le=64, description="accelerators (processes) G")


class TracedComparisonConfig(Section):
    """What the ``traced_comparison`` stage traces: each workload of ``points`` at its (B, G),
    with the schedule of its own section (``train`` part), laid over by ``overrides``; the data
    staged on ``tier`` (checkpoints go there too), evicted before each side; ``runs`` passes of
    every workload (``make decide`` buys more)."""

    points: dict[Literal["unet3d", "bert", "dlrm"], ComparisonPoint] = Field(
        min_length=1, description="one (batch_size, ranks) per workload compared")
    sides: list[Literal["real", "sleep", "emulator", "dlio"]] = Field(
        list(SIDES), min_length=1, description="which sides run (real is always needed)")
    tier: str = Field("disk", min_length=1, description="name of a tier of `tiers`: data and checkpoints")
    backend: Literal["auto", "bpftrace", "strace", "proc"] = "auto"
    compute_model: str = Field("fit", min_length=1,
                               description="sleep, emulator and DLIO compute time: fit | thesis-v100 | file")
    checkpoint_pattern: str = Field("traced", min_length=1, description="the emulator's checkpoint writes")
    overrides: dict[Literal["unet3d", "bert", "dlrm"], dict] = Field(
        default_factory=dict, description="laid over each workload's section for all sides, "
                                          "e.g. {unet3d: {train: {epochs: 2}}}")
    eviction: Literal["auto", "drop_caches", "fadvise", "none"] = "auto"
    dlio_timeout_s: int = Field(600, ge=10, le=7200, description="DLIO run limit, s")
    runs: int = Field(1, ge=1, le=50, description="passes of every workload (a pass: each side once, "
                                                 "traced): the unit of every interval; 3 give the ratios "
                                                 "between sides one, 6 a side's own similarity")


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): points x sides x runs."""
    t = p["traced_comparison"]
    return count(t["points"]) * count(t["sides"]) * int(t.get("runs", 1))


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`): one per workload point."""
    return [{"workload": w} for w in p["traced_comparison"]["points"]]


STAGE = Stage("traced_comparison", "notebooks/52-traced-comparison.ipynb", "measuring",
              {"traced_comparison": "TracedComparisonConfig"},
              ("seed", "tiers", "unet3d", "bert", "dlrm", "traced_comparison"), True, "traced_comparison_report",
              (*(f"data/{w}" for w in ("unet3d", "bert", "dlrm")), "results/workload_fits/compute_model.json",
               "results/emulator_patterns/checkpoint_pattern.json",
               *(f"results/{w}/checkpoint.json" for w in ("unet3d", "bert", "dlrm"))),
              note="Ho-Von 2023 Tables 5.1-5.3, Fig 5.7/5.12/5.18: real, sleep, emulator and DLIO traced side by "
                   "side (measures; draws nothing).",
              size="size", configs="configurations")
