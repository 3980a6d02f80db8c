"""The emulator's figures (the storage engineer's notebook, 51-emulator), apart from its runs so
that a stage that runs the emulator never depends on how a figure looks."""

from __future__ import annotations

import pandas as pd


def au_figure(table: pd.DataFrame, title: str):
    """Accelerator utilization (%) of each run of :func:`run_grid`'s ``table``, one bar per
    workload, green where it passes MLPerf Storage's 90 % mark and red where it does not."""
    import matplotlib.pyplot as plt

    from ..figures import style
    from ..workloads.compute_model import MLPERF_AU_PASS

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(table["workload"], 100 * table["au"], color=["tab:green" if p else "tab:red" for p in table["au_pass"]])
    ax.axhline(100 * MLPERF_AU_PASS, color="k", ls="--", lw=1, label=f"MLPerf Storage pass ({100 * MLPERF_AU_PASS:g} %)")
    ax.set(ylabel="accelerator utilization (%)", ylim=(0, 105), title=title)
    ax.legend(loc="lower right")
    style.stamp_host(fig)
    return fig
