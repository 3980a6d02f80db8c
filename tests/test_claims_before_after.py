"""The claims table before and after a change of the claims code, on one stored run's results.

A *stored run* is a project folder whose ``results/`` a pipeline run wrote (e.g. the smoke
project a ``make test`` leaves under pytest's temporary folder, copied aside): its
``results/<stage>/claims.json`` are the table *before*. This test copies it, puts this checkout's
code in place of the run's, re-runs every stage that wrote a ``claims.json`` (its notebook, as
``dvc repro`` would, on the stored measurements) and compares each claim *after* with *before*:
the same ids, values, intervals, sample counts and verdicts, and the same paper side (paper
value, rule, margin, magnitude, basis, kind). A change a commit means to make is listed in
:data:`EXPECTED` with its reason; anything else fails, naming the claim and the field.

The stored run must still answer at the folder it was made in where its results name files by
absolute path (the traces of ``tracing_patterns`` name their phase logs): keep a run made for
this (``DLIO_ROOT=<folder> dvc repro``, or a ``make repro`` checkout) rather than a copy of
pytest's temporary project, which pytest deletes.

It runs where a stored run is at hand (``DLIO_STORED_RUN=/path/to/project``) and is skipped with
a message elsewhere (CI has none): the comparison is a tool for changing the claims layer, not a
property of a fresh clone. ``-k <stage>`` replays one stage.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
STORED = os.environ.get("DLIO_STORED_RUN")

# fields compared, claim by claim
VALUES = ("our_value", "ci_low", "ci_high", "n", "verdict", "negligible")
PAPER_SIDE = ("kind", "basis", "paper_value", "rule", "margin", "magnitude")

# {claim id: {field: why it changes}}: changes made on purpose (issue 38's (6)), one file per
# source in tests/claims_changes/ (<source>.yaml); an id new or dropped on purpose lists the
# field "id".
EXPECTED: dict[str, dict[str, str]] = {
    k: v for f in sorted((REPO / "tests" / "claims_changes").glob("*.yaml"))
    for k, v in (yaml.safe_load(f.read_text()) or {}).items()}


def _stages() -> list[str]:
    if not STORED or not (Path(STORED) / "results").is_dir():
        return []
    return sorted(p.parent.name for p in (Path(STORED) / "results").glob("*/claims.json")
                  if p.parent.name != "claims")


pytestmark = pytest.mark.skipif(
    not _stages(), reason="no stored run: set DLIO_STORED_RUN to a project folder whose results/ "
    "a pipeline run wrote (the before/after check of the claims code)")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the stored run with this checkout's code and smoke profile."""
    dst = tmp_path_factory.mktemp("stored") / "project"
    # the run's environments and data sets are linked, not copied: a default run's are 12-19 GB
    # (its .venv 7.6, data 3.7), which no report stage writes, and two copies filled the disk
    linked = {".venv", ".venv-dlio", ".venv-dftracer", "data"}
    shutil.copytree(STORED, dst, symlinks=True,
                    ignore=lambda d, names: [n for n in names if Path(d) == Path(STORED) and n in linked])
    for name in sorted(linked):
        if (Path(STORED) / name).exists():
            (dst / name).symlink_to(Path(STORED).resolve() / name)
    for name in ("experiments", "notebooks", "profiles"):
        shutil.rmtree(dst / name, ignore_errors=True)
        shutil.copytree(REPO / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("dvc.yaml",):
        shutil.copy2(REPO / name, dst / name)
    head = (Path(STORED) / "params.yaml").read_text().split("\n", 1)[0]   # "# profile: smoke. ..."
    prof = head.split("profile:")[1].split(".")[0].strip() if "profile:" in head else "smoke"
    subprocess.run([sys.executable, "-m", "experiments.pipeline.profile", prof], cwd=dst,
                   env={**os.environ, "DLIO_ROOT": str(dst)}, check=True, capture_output=True)
    return dst


def _cmd(stage: str) -> list[str]:
    st = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"][stage]
    cmd = st["cmd"].split()
    return [sys.executable, *cmd[1:]] if cmd[0] == "python" else cmd


def _same(a, b) -> bool:
    missing = lambda x: x is None or (isinstance(x, float) and math.isnan(x))  # noqa: E731
    if missing(a) or missing(b):
        return missing(a) and missing(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


@pytest.mark.parametrize("stage", _stages())
def test_claims_unchanged_on_the_stored_run(project, stage):
    before = {c["id"]: c for c in json.loads((Path(STORED) / "results" / stage / "claims.json").read_text())}
    cmd = _cmd(stage)
    r = subprocess.run(cmd, cwd=project, capture_output=True, text=True,
                       env={**os.environ, "DLIO_ROOT": str(project), "DVC_STAGE": stage,
                            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
    assert r.returncode == 0, f"{stage}: {' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    after = {c["id"]: c for c in json.loads((project / "results" / stage / "claims.json").read_text())}
    problems = []
    for i in sorted(set(before) ^ set(after)):
        if "id" not in EXPECTED.get(i, {}):
            problems.append(f"{i}: {'dropped' if i in before else 'new'}")
    for i in sorted(set(before) & set(after)):
        for f in VALUES + PAPER_SIDE:
            if f in EXPECTED.get(i, {}):
                continue
            if not _same(before[i].get(f), after[i].get(f)):
                problems.append(f"{i}: {f} {before[i].get(f)!r} -> {after[i].get(f)!r}")
    assert not problems, f"{stage}: claims changed on the stored run:\n" + "\n".join(problems)
