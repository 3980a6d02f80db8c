"""A figure setting re-measures nothing: no stage that measures (reads a tier, runs a workload,
traces) reads the ``figures`` parameters or depends on a stage that does, so a change of
``figures.dpi`` re-runs only report stages and ``claims`` (``dvc exp run -S figures.dpi=...``
after ``make repro``: seconds, the verdicts unchanged).

The static test reads ``dvc.yaml``; the smoke test asks DVC itself, after the smoke pipeline,
which stages a changed ``figures.dpi`` makes stale (``dvc status`` in a copy of the smoke
project whose params.yaml has another dpi)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from experiments import paths
from experiments.repeats import replicate


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


@pytest.mark.smoke
def test_a_changed_dpi_leaves_every_measuring_stage_up_to_date(smoke_root, tmp_path):
    """In a copy of the smoke project (its results and data linked, params.yaml with another
    dpi), ``dvc status`` names only report stages and ``claims``; with the smoke project's own
    params.yaml, none."""
    copy = tmp_path / "dpi"
    copy.mkdir()
    for p in smoke_root.iterdir():
        if p.name in ("params.yaml", "dvc.yaml", "dvc.lock", ".dvc"):
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, copy / p.name)
        else:
            (copy / p.name).symlink_to(p)
    params = yaml.safe_load((copy / "params.yaml").read_text())
    params["figures"]["dpi"] = int(params["figures"]["dpi"]) + 1
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "DLIO_ROOT": str(copy)}
    out = subprocess.run([str(Path(sys.executable).parent / "dvc"), "status", "--json"], cwd=copy, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    stale = set(json.loads(out.stdout or "{}"))
    st = _stages(copy)
    reports = {n for n, s in st.items() if _reads_figures(s)}
    assert stale, "a changed figures.dpi made no stage stale: the check saw nothing"
    assert stale <= reports | {"claims"}, f"a figure setting makes these stages re-run: {sorted(stale - reports)}"
    assert not stale & measuring(st)
