"""What notebook 50 (``emulator_patterns``) shows: the write sizes of each derived checkpoint
pattern and the replay claim.

- :func:`write_sizes` / :func:`write_size_figure`: the VFS write sizes (bytes) one writer issues
  per checkpoint when the emulator replays a pattern, drawn as one empirical CDF per workload.
- :func:`claims`: ``emulator-checkpoint-replay``, the fraction of workloads whose
  replayed writes, traced and derived again, give the stored pattern
  (:func:`.stage.replay_check`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims.declared import Measured, join

STAGE = "emulator_patterns_report"


def write_sizes(pattern) -> np.ndarray:
    """The sizes (bytes) of the writes one writer issues per checkpoint, sorted ascending."""
    return np.sort(np.array([s for _, ws in pattern.plan(0) for _, s in ws], dtype=np.int64))


def write_size_figure(patterns: dict):
    """One panel per workload of ``patterns`` ({workload: Pattern}): the CDF of its VFS write
    sizes (bytes, log axis), titled with the number of writes and the MB (10^6 B) per checkpoint."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(1, len(patterns)), figsize=(4 * max(1, len(patterns)), 3.4),
                             squeeze=False)
    for ax, (w, p) in zip(axes[0], patterns.items()):
        sizes = write_sizes(p)
        ax.step(sizes, np.arange(1, len(sizes) + 1) / max(1, len(sizes)), where="post")
        ax.set_xscale("log")
        ax.set(title=f"{w}: {len(sizes)} writes, {sizes.sum() / 1e6:.3g} MB", xlabel="VFS write size (B)",
               ylabel="fraction of writes (CDF)")
    fig.tight_layout()
    return fig


def claims(check: pd.DataFrame, backend: str, pattern_ranks: int) -> list[dict]:
    """The stage's claims (``emulator-checkpoint-replay``), joined with
    ``papers/hovon2023-thesis-dl-io-patterns.yaml``."""
    return join(STAGE, measure_replay(check, backend, pattern_ranks))


def measure_replay(check: pd.DataFrame, backend: str, pattern_ranks: int) -> list[Measured]:
    """The fraction of workloads whose replayed writes, traced and derived again, give the
    stored pattern (:func:`.stage.replay_check`: one row per workload, ``match``); not measured
    when there is none."""
    value = float(check["match"].mean()) if len(check) else np.nan
    return [Measured(
        "emulator-checkpoint-replay", value,
        note=f"traced with {backend}; pattern ranks {pattern_ranks}. The thesis's benchmark first wrote "
             "each checkpoint as one file of the right size; Sec 6.4: it \"was modified and broken up "
             "into multiple smaller writes\", whose sizes followed no distribution of the real run's: "
             "16 files written against BERT's 50 (Table 5.2), 2 against DLRM's 1 (Table 5.3), median "
             "write size 28x, 333x and 280x off (Tables 5.1-5.3)",
        why_not="" if len(check) else "no workload's pattern was replayed")]
