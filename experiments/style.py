"""The one figure style: seaborn's theme, units on axes, and the host in the corner."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns

from . import envinfo

PALETTE = "colorblind"
_STAMP = "_dlio_host_stamp"


def apply(context: str = "notebook") -> None:
    """Set the project's figure style (call once per notebook)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "axes.titleweight": "bold"})


def stamp_host(fig) -> None:
    """Write which host made the figure in its bottom-right corner (once)."""
    if getattr(fig, _STAMP, False):
        return
    fig.text(0.995, 0.005, f"host: {envinfo.host_label()}", ha="right", va="bottom",
             fontsize=7, color="0.45")
    setattr(fig, _STAMP, True)


def tier_colors(tiers: list[str]) -> dict[str, tuple]:
    """A stable color per tier name, the same in every figure."""
    colors = sns.color_palette(PALETTE, n_colors=max(len(tiers), 3))
    return dict(zip(tiers, colors))
