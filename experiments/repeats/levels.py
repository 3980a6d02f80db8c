"""The level every interval of a finding is judged at: one alpha, one Bonferroni formula.

A finding is *looked at* each time its rows may stop or extend the measuring: at a look of a
stage's rounds (:mod:`.rounds`), and once more for each ``make decide`` purchase that added to
the configurations it compares (:mod:`.purchases`). Each look is a chance to stop on noise,
so the chance of a false verdict over all of a finding's looks is held at :data:`ALPHA` by
judging every one of them at ``1 - ALPHA / looks`` (Bonferroni). The level is written into the
rows (their ``level`` column): the rows a finding compares say the level it is judged at
(:func:`level_of`).
"""

from __future__ import annotations

import pandas as pd

ALPHA = 0.05   # the chance of a false verdict over all looks at a finding (1 - stats.LEVEL)


def level(looks: int, alpha: float = ALPHA) -> float:
    """The level of each of ``looks`` looks: 1 - alpha / looks (at least one look)."""
    if isinstance(looks, bool) or not isinstance(looks, int) or looks < 1:
        raise ValueError(f"looks = {looks!r}; allowed: an integer >= 1")
    return 1 - alpha / looks


def looks(at_level: float, alpha: float = ALPHA) -> int:
    """The looks a level was corrected for (the inverse of :func:`level`)."""
    return max(1, round(alpha / max(1e-12, 1 - at_level)))


def level_of(rows: pd.DataFrame | None, default: float = 1 - ALPHA) -> float:
    """The level ``rows`` are judged at: the highest of their ``level`` column (the most looks
    any of them took part in); ``default`` (95 %) for rows without one."""
    if rows is None or "level" not in getattr(rows, "columns", ()) or not rows["level"].notna().any():
        return default
    return float(rows["level"].dropna().max())
