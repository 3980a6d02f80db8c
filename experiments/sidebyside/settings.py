"""The ``traced_comparison`` section of ``params.yaml`` (pydantic only, no framework)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config import Section

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
