"""Report of the ``tracing_patterns`` stage: similarity matrix, timelines, Chrome export, claims.

Reads ``results/tracing_patterns/`` (``summary.csv`` = one vector per run, ``pattern_check.csv``,
``trace_<run>.parquet``); writes nothing itself (the notebook writes through StageResults).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..settings import reference
from ..claims.declared import Measured, join
from . import similarity
from .vector import KEYS

STAGE = "tracing_report"


def vectors_of(summary: pd.DataFrame) -> dict[str, dict]:
    return {r["run"]: {k: float(r[k]) if pd.notna(r[k]) else float("nan") for k in KEYS}
            for r in summary.to_dict("records")}


def similarity_matrix(vecs: dict[str, dict]) -> pd.DataFrame:
    """Eq 4.1 for every ordered pair of runs."""
    runs = list(vecs)
    return pd.DataFrame([[similarity.weighted_cosine(vecs[a], vecs[b]) for b in runs] for a in runs],
                        index=runs, columns=runs)


def plot_matrix(m: pd.DataFrame):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    im = ax.imshow(m.to_numpy(), vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(m)), m.columns, rotation=30, ha="right")
    ax.set_yticks(range(len(m)), m.index)
    for i, j in itertools.product(range(len(m)), repeat=2):
        ax.text(j, i, f"{m.iat[i, j]:.3f}", ha="center", va="center",
                color="white" if m.iat[i, j] < 0.6 else "black", fontsize=9)
    fig.colorbar(im, ax=ax, label="weighted cosine similarity (Eq 4.1)")
    ax.set_title("Similarity of the traced runs")
    fig.tight_layout()
    return fig


def thesis_tables() -> pd.DataFrame:
    """Eq 4.1 recomputed on the components the thesis printed in Tables 5.1-5.3, beside the
    similarity it reported (rounded to 2 decimals)."""
    rows = []
    for w, t in reference.HOVON_TABLES_5.items():
        rows.append({"workload": w, "paper_similarity": reference.HOVON_SIMILARITY[w],
                     "our_similarity": similarity.weighted_cosine(t["workload"], t["emulation"])})
    return pd.DataFrame(rows)


def claims(summary: pd.DataFrame, check: pd.DataFrame, backend: str) -> list[dict]:
    """Claims of the tracing stages, joined with ``papers/hovon2023-thesis-dl-io-patterns.yaml``.
    All are checks of our tracer and metric (they hold by construction unless there is a bug,
    or, for the repeat and the different pattern, unless this box's noise moves a trace); the
    thesis's own finding (a workload and its emulation score 0.95-0.98) is reproduced by the
    traced comparison, not here. Every declared claim is emitted, measured or not."""
    vecs = vectors_of(summary)
    return join(STAGE, [*measure_metric(vecs), *measure_fio_pattern(check, backend),
                        *measure_thesis_tables(), *measure_repeat(vecs, backend)])


def _proc_why(backend: str) -> str:
    return ("no event tracer could run here (see env.json: tracer_fallbacks); the /proc sampler "
            "loses I/O of processes that exit between samples" if backend == "proc" else "")


def measure_metric(vecs: dict[str, dict]) -> list[Measured]:
    """Eq 4.1 on the traced runs: the smallest self-similarity and the largest |sim(A, B) -
    sim(B, A)| over the pairs (similarity 0-1)."""
    m = similarity_matrix(vecs).to_numpy()
    self_min = float(np.min(np.diag(m))) if len(vecs) else np.nan
    asym = float(np.max(np.abs(m - m.T))) if len(vecs) else np.nan
    no_runs = "tracing_patterns traced no runs"
    return [Measured("trace_self_similarity", self_min, why_not=no_runs),
            Measured("trace_similarity_symmetric", asym, why_not=no_runs)]


def measure_fio_pattern(check: pd.DataFrame, backend: str) -> list[Measured]:
    """The fraction of a fio job's quantities (counts, sizes, files, random/sequential split)
    the trace recovers as fio was told (:mod:`.patterns`); NaN under the /proc sampler."""
    match = float(check["match"].mean()) if len(check) and backend != "proc" else np.nan
    return [Measured(
        "trace_fio_pattern_match", match, context=f"back end {backend}",
        note=", ".join(f"{r.quantity}: {r.traced:g} vs {r.expected:g}"
                       for r in check.itertuples() if not r.match) if len(check) else "",
        why_not=_proc_why(backend) or "no pattern check was written")]


def measure_thesis_tables() -> list[Measured]:
    """Eq 4.1 recomputed on the components printed in Tables 5.1-5.3 (similarity 0-1)."""
    return [Measured(f"trace_eq41_{r.workload}", r.our_similarity, note="paper value rounded to 2 decimals")
            for r in thesis_tables().itertuples()]


def measure_repeat(vecs: dict[str, dict], backend: str) -> list[Measured]:
    """The similarity of a fio job to its repeat, and to a random-only job of as many reads."""
    m = similarity_matrix(vecs)
    why = _proc_why(backend)
    have = {"fio_seq_rand", "fio_seq_rand_repeat"} <= set(vecs)
    rep = float(m.loc["fio_seq_rand", "fio_seq_rand_repeat"]) if have else np.nan
    out = [Measured("trace_repeat_similarity", rep,
                    why_not=why or ("a repeat differs in what the page cache held" if have else
                                    "the fio job and its repeat were not both traced"))]
    have = have and "fio_rand" in vecs
    diff = float(m.loc["fio_seq_rand", "fio_rand"]) if have else np.nan
    out.append(Measured(
        "trace_pattern_discrimination", diff,
        note=f"repeat of the same pattern: {rep:.4f}" if np.isfinite(rep) else "",
        why_not=why or ("the two patterns share most components (file, counts, sizes)" if have
                        else "the random-only fio job was not traced")))
    return out


def loader_phases(trace, results_dir) -> tuple[pd.DataFrame | None, str]:
    """The loader's phases for its timeline: the phase log the stage kept in ``results_dir``
    (:data:`.phases.LOADER_LOG`), else the one its trace recorded where it still
    exists (a run before the log was kept: in that run's data tier); else None, and what the
    phase row says instead (the shipped reference run: recorded on another box, no data/)."""
    from pathlib import Path

    from . import phases

    kept = Path(results_dir) / phases.LOADER_LOG
    if kept.is_file():
        return phases.read(kept), ""
    at = trace.meta.get("phase_log")
    if at and Path(at).is_file():
        return phases.read(at), ""
    return None, ("phase log not in this run's results (a run made before it was kept there, as "
                  "the shipped reference run): no phase bands")
