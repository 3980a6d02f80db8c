"""Report of the ``tracing_patterns`` stage: similarity matrix, timelines, Chrome export, claims.

Reads ``results/tracing_patterns/`` (``summary.csv`` = one vector per run, ``pattern_check.csv``,
``trace_<run>.parquet``); writes nothing itself (the notebook writes through StageResults).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from .. import claims as C
from .. import reference
from . import similarity
from .vector import KEYS

SOURCE = "Ho-Von 2023"


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


def make_claims(summary: pd.DataFrame, check: pd.DataFrame, backend: str) -> list[dict]:
    """Claims of the tracing stages. All are checks of our tracer and metric (they hold by
    construction unless there is a bug, or, for the repeat and the different pattern, unless
    this box's noise moves a trace); the thesis's own finding (a workload and its emulation
    score 0.95-0.98) is reproduced by the workload stages, not here. Every claim is emitted,
    measured or not."""
    vecs = vectors_of(summary)
    m = similarity_matrix(vecs)
    runs = list(vecs)
    self_min = float(np.min(np.diag(m.to_numpy()))) if runs else np.nan
    asym = float(np.max(np.abs(m.to_numpy() - m.to_numpy().T))) if runs else np.nan
    match = float(check["match"].mean()) if len(check) and backend != "proc" else np.nan
    no_runs = "tracing_patterns traced no runs"
    why = ("no event tracer could run here (see env.json: tracer_fallbacks); the /proc sampler "
           "loses I/O of processes that exit between samples" if backend == "proc" else "")
    low = min(reference.HOVON_SIMILARITY.values())
    out = [
        C.claim("trace_self_similarity", SOURCE, "Eq 4.1",
                "The weighted cosine similarity of a trace's vector with itself is 1 "
                "(smallest over the traced runs)", self_min, "", ">= 0.9999",
                why_not=no_runs, kind="check"),
        C.claim("trace_similarity_symmetric", SOURCE, "Eq 4.1",
                "The similarity is symmetric: sim(A, B) = sim(B, A) (largest difference over pairs)",
                asym, "", "<= 0.000001", why_not=no_runs, kind="check"),
        C.claim("trace_fio_pattern_match", SOURCE, "Table 4.2, Listing A.1",
                "Traced counts, sizes, unique files and random/sequential split of a fio job "
                "(sequential then random reads) match what fio was told (fraction of quantities "
                f"that match; back end {backend})", match, "fraction", ">= 1",
                note=", ".join(f"{r.quantity}: {r.traced:g} vs {r.expected:g}"
                               for r in check.itertuples() if not r.match) if len(check) else "",
                why_not=why or "no pattern check was written", kind="check"),
    ]
    figs = {"unet3d": "Table 5.1", "bert": "Table 5.2", "dlrm": "Table 5.3"}
    for r in thesis_tables().itertuples():
        out.append(C.claim(
            f"trace_eq41_{r.workload}", SOURCE, figs[r.workload],
            f"Eq 4.1/4.2 with weights 2/1, applied to the components printed in {figs[r.workload]} "
            f"({r.workload} vs its MLPerf Storage emulation), gives the similarity the thesis reports",
            r.our_similarity, "", f"between {r.paper_similarity - 0.005:.3f} and {r.paper_similarity + 0.005:.3f}",
            paper_value=r.paper_similarity, note="paper value rounded to 2 decimals", kind="check"))
    have = {"fio_seq_rand", "fio_seq_rand_repeat"} <= set(vecs)
    rep = float(m.loc["fio_seq_rand", "fio_seq_rand_repeat"]) if have else np.nan
    out.append(C.claim(
        "trace_repeat_similarity", SOURCE, "Sec 5.1.4, 5.2.3, 5.3.3 (similarities 0.95-0.98)",
        "Two runs of the same fio job are at least as similar as the thesis's workloads and "
        f"their emulations (its lowest: {low})", rep, "", f">= {low}",
        why_not=why or ("a repeat differs in what the page cache held" if have else
                        "the fio job and its repeat were not both traced"), kind="check"))
    have = have and "fio_rand" in vecs
    diff = float(m.loc["fio_seq_rand", "fio_rand"]) if have else np.nan
    out.append(C.claim(
        "trace_pattern_discrimination", SOURCE, "Eq 4.1",
        "A different access pattern (random reads only, same number of reads) scores below the "
        f"similarity the thesis calls alike ({low})", diff, "", f"< {low}",
        note=f"repeat of the same pattern: {rep:.4f}" if np.isfinite(rep) else "",
        why_not=why or ("the two patterns share most components (file, counts, sizes)" if have
                        else "the random-only fio job was not traced"), kind="check"))
    return out
