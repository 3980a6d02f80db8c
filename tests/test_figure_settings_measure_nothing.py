"""A figure setting re-measures nothing: no stage that measures (reads a tier, runs a workload,
traces) reads the ``figures`` parameters or depends on a stage that does, so a change of
``figures.dpi`` re-runs only report stages and ``claims`` (``dvc exp run -S figures.dpi=...``
after ``make repro``: seconds, the verdicts unchanged).

The static test reads ``dvc.yaml``; tests/test_smoke_measuring_deps.py asks DVC itself, after
the smoke pipeline, which stages a changed ``figures.dpi`` (and a quote, a statement, a colour)
makes stale."""

from pathlib import Path

import yaml

from experiments.settings import paths
from experiments.review import replicate


def _stages(root: Path) -> dict:
    return yaml.safe_load((root / "dvc.yaml").read_text())["stages"]


def _reads_figures(st: dict) -> bool:
    return any(p == "figures" or str(p).startswith("figures.") for p in st.get("params", []))


def measuring(stages: dict) -> set[str]:
    """The stages that measure: those replicate re-measures, and any that reads a tier."""
    return set(replicate.MEASURING) | {n for n, st in stages.items() if "tiers" in st.get("params", [])}


# Files of a figure-reading stage that a measuring stage may read: written from its inputs
# alone, the same bits whatever the figure settings, so DVC does not re-run the reader after a
# figure change re-ran the writer.
SAME_BITS = {"results/workload_fits/compute_model.json": "the fitted compute model (OLS of the steps)"}


def test_no_measuring_stage_reads_the_figure_parameters_or_a_reports_figures():
    st = _stages(paths.root())
    meas = measuring(st)
    assert meas <= set(st), f"replicate.MEASURING names stages dvc.yaml lacks: {sorted(meas - set(st))}"
    assert not [n for n in meas if _reads_figures(st[n])], "measuring stages with the figures params"
    readers = {n for n in st if _reads_figures(st[n])}
    bad = {n: [d for d in st[n].get("deps", []) if d not in SAME_BITS
               and any(d == f"results/{r}" or d.startswith(f"results/{r}/") for r in readers)] for n in meas}
    assert not any(bad.values()), f"measuring stages that read what a figure-reading stage writes: {bad}"
