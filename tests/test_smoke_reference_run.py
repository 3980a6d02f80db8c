"""The shipped reference run stays true to the code (issue 65): ``make figures`` in a copy of
the project restores it from the in-repository DVC store and runs every report stage and the
claims table on it; a report that can no longer read what the reference box measured (a renamed
file or column) fails here. The figures and the table must name the reference host."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Background, project_files
from experiments.review import refrun

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.smoke


def _reference_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "reference"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return [f for f in out.split("\0") if f]


def _figures(base: Path, env: dict) -> tuple[Path, subprocess.CompletedProcess]:
    """``make figures`` in a copy of the project (what a fresh clone has, the reference's store
    too) in ``base``: the copy and the finished command."""
    root = base / "project"
    for f in [*project_files(), *_reference_files()]:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, root / f)
    env = {**env, "DLIO_ROOT": str(root), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    subprocess.run(["dvc", "config", "--local", "core.no_scm", "true"], cwd=root, env=env, check=True)
    return root, subprocess.run([sys.executable, "-m", refrun.__name__, "figures"], cwd=root, env=env,
                                capture_output=True, text=True, timeout=1200)


# about 85 s of report stages that need nothing of the suite: run beside the unit tests
FIGURES = Background(_figures) if (ROOT / refrun.MANIFEST).is_file() else None


@pytest.mark.background(FIGURES)
def test_make_figures_reads_the_shipped_reference_run():
    if FIGURES is None:
        pytest.skip(f"no reference run shipped ({refrun.MANIFEST} absent): make reference on the reference box")
    m = json.loads((ROOT / refrun.MANIFEST).read_text())
    root, p = FIGURES.result()
    log = p.stdout + p.stderr
    assert p.returncode == 0, log[-6000:]
    assert "make figures: no measuring stage ran" in log, log[-3000:]
    ran = [line.split()[-1] for line in log.splitlines() if line.startswith("Running stage ")]
    assert sorted(s.strip("':") for s in ran) == sorted(refrun.reports()), ran   # DVC ran those and no other
    host = m["host"] if isinstance(m["host"], str) else m["host"][0]
    claims = (root / "results" / "claims" / "claims.md").read_text()
    first = m["commit"] if isinstance(m["commit"], str) else m["commit"][0]   # a list: measured at two commits
    assert f"**Measured on** {host} at commit {first[:7]}" in claims
    for s in refrun.reports()[:-1]:
        figs = json.loads((root / "results" / s / "figures.json").read_text())
        assert figs, f"{s} drew no figure"
    from experiments.output import provenance

    was = os.environ.get("DLIO_ROOT")
    os.environ["DLIO_ROOT"] = str(root)
    try:
        assert all(provenance.label(s).startswith(f"host: {host} at commit") for s in refrun.reports()[:-1])
    finally:
        os.environ.pop("DLIO_ROOT") if was is None else os.environ.__setitem__("DLIO_ROOT", was)
