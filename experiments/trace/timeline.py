"""Timelines in the style of the thesis's Fig 5.1.

Three rows sharing the time axis (seconds since the trace started):

1. utilization (%): whole-machine CPU and the traced tree's CPU from the /proc sampler, and each
   GPU's utilization where ``nvidia-smi`` reported one (the figure's top row);
2. I/O (MB/s, 10^6 B/s, in bins of ``bin_s``): VFS reads light blue, block reads dark blue,
   VFS writes light red, block writes dark red (the figure's middle row); from the events when
   the trace has them, else from the sampler's per-interval rates;
3. training phases from the application log (:mod:`.phases`): initialization, training,
   evaluation, checkpointing as coloured spans; epoch starts as black vertical lines.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import style
from .schema import Trace
from .series import SERIES, auto_bin, io_series  # noqa: F401 (the series drawn: computed apart from the figure)

PHASE_COLORS = {"init": "#bbbbbb", "train": "#4c9f70", "eval": "#e5a50a", "checkpoint": "#c0392b"}
IO_STYLE = {  # series -> (color, label)
    "vfs_read": ("#8ecae6", "VFS read"), "block_read": ("#023e8a", "BIO read"),
    "vfs_write": ("#f4a6a6", "VFS write"), "block_write": ("#9d0208", "BIO write"),
}


NO_PHASE_LOG = "no phase log: this program writes none (the training workloads do)"


def plot(trace: Trace, phases: pd.DataFrame | None = None, bin_s: float | None = 1.0, data=None,
         checkpoint=None, title: str | None = None, block_files=None, io: pd.DataFrame | None = None,
         no_phases: str = NO_PHASE_LOG):
    """The three-row figure; returns the matplotlib Figure. ``bin_s=None``: :func:`auto_bin`.
    ``io``: the I/O row's series as :func:`io_series` gave them with this ``bin_s`` (a stage
    that measures saves them while the files whose extents filter the block rows still exist;
    its report draws them later), instead of computing them from the trace here. ``no_phases``:
    what the phase row says when ``phases`` is None or empty."""
    import matplotlib.pyplot as plt

    bin_s = auto_bin(trace) if bin_s is None else bin_s
    t0 = float(trace.meta.get("started", 0.0))
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(10, 6),
                             gridspec_kw={"height_ratios": [1.2, 2, 0.6]})
    ax_u, ax_io, ax_ph = axes
    s = trace.samples
    if len(s):
        cpu = s[s["source"] == "cpu"].sort_values("t_s")
        if len(cpu):
            # a sample is the mean over the interval that ends at t_s: draw it over that interval
            dt = cpu["interval_s"].to_numpy() if "interval_s" in cpu else np.full(len(cpu), auto_bin(trace))
            edges = np.r_[cpu["t_s"].iloc[0] - dt[0], cpu["t_s"].to_numpy()]
            ax_u.stairs(cpu["cpu_util_pct"].to_numpy(), edges, color="#555555", label="CPU (machine)")
            if "tree_cpu_pct" in cpu:
                ax_u.stairs(cpu["tree_cpu_pct"].to_numpy(), edges, color="#7b2cbf", label="CPU (traced tree)")
        for src, g in s[s["source"].astype(str).str.startswith("gpu:")].groupby("source"):
            ax_u.plot(g["t_s"], g["gpu_util"], color="#d62828", label=f"GPU {src[4:]}")
    ax_u.set_ylabel("utilization (%)")
    ax_u.set_ylim(0, 105)
    if ax_u.lines or ax_u.patches:   # legends beside the rows: never over the curves
        style.legend_beside(ax_u, fontsize="small")
    if io is None:
        io = io_series(trace, bin_s, data, checkpoint, block_files)
    for name, (color, label) in IO_STYLE.items():
        if name in io and io[name].abs().sum() > 0:
            if name.startswith("vfs"):  # VFS as filled areas, block as lines on top: both show
                ax_io.fill_between(io["t_s"], io[name], step="post", color=color, alpha=0.7,
                                   lw=0, label=label)
            else:
                ax_io.step(io["t_s"], io[name], where="post", color=color, lw=1.2, label=label)
    ax_io.set_ylabel(f"I/O (MB/s, {bin_s:g} s bins)")
    if ax_io.lines or ax_io.collections:
        style.legend_beside(ax_io, fontsize="small")
    if phases is not None and len(phases):
        for r in phases.itertuples():
            a, b = r.start - t0, r.end - t0
            if r.kind == "mark" or r.phase == "epoch":
                for ax in axes:
                    ax.axvline(a, color="black", lw=0.8)
                continue
            ax_ph.axvspan(a, b, color=PHASE_COLORS.get(r.phase, "#dddddd"), lw=0)
            if r.phase == "train" and r.epoch is not None and not pd.isna(r.epoch):
                for ax in axes:
                    ax.axvline(a, color="black", lw=0.6)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PHASE_COLORS.values()]
        # two columns: four rows beside the short phase row reached below it, over the last
        # time tick's label when the axis ended on a tick (the smoke layout check caught it)
        ax_ph.legend(handles, list(PHASE_COLORS), loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0, fontsize="small", ncol=2)
    else:
        ax_ph.text(0.5, 0.5, no_phases,
                   transform=ax_ph.transAxes, ha="center", va="center", fontsize="small", color="0.4")
    # the time axis covers the traced I/O and the phases, not the sampler's tail after them
    ends = [float(trace.events["t_s"].max())] if len(trace.events) else []
    if phases is not None and len(phases):
        ends.append(float(phases["end"].max()) - t0)
    if ends:
        ax_ph.set_xlim(0, max(ends) + bin_s)
    ax_ph.set_yticks([])
    ax_ph.set_ylabel("phase")
    ax_ph.set_xlabel("time since the trace started (s)")
    fig.suptitle(title or f"trace ({trace.backend})")
    fig.tight_layout()
    return fig
