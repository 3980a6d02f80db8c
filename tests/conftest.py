"""Shared fixtures. The smoke pipeline runs once per test session in a temporary copy of the
project (``DLIO_ROOT`` points the package there) on the smoke profile, through DVC and papermill
exactly as ``dvc repro`` does; the smoke tests then assert on the files each notebook wrote.
A smoke test of a stage that ``SMOKE_STAGES`` left out is skipped (see ``stage_results``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def project_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files of the project (what a fresh clone has)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def tree_digest(folder: Path) -> str:
    """SHA-256 (hex) of every file under ``folder``: its path relative to ``folder`` and its
    bytes, in sorted order. Equal digests: the same files with the same contents."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted(Path(folder).rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(folder)).encode() + f.read_bytes())
    return h.hexdigest()


@pytest.fixture
def digest():
    """:func:`tree_digest`, for tests that compare generated folders."""
    return tree_digest


@pytest.fixture(scope="session")
def smoke_root(tmp_path_factory) -> Path:
    """A copy of the project with params.yaml on the smoke profile and ``dvc repro`` run in it."""
    root = tmp_path_factory.mktemp("smoke") / "project"
    for f in project_files():
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, root / f)
    env = {**os.environ, "DLIO_ROOT": str(root),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = lambda *cmd: subprocess.run(cmd, cwd=root, env=env, check=True)  # noqa: E731
    run(sys.executable, "-m", "experiments.profile", "smoke")
    run("dvc", "config", "--local", "core.no_scm", "true")
    # SMOKE_STAGES="a b" limits the run to those stages and what they depend on (for work on
    # one stage); CI and `make test` leave it unset and run the whole pipeline.
    try:
        # the log `make repro` shows (tests/test_smoke_first_hour.py counts error-like lines in it)
        log = root.parent / "repro.log"
        with open(log, "w") as f:
            p = subprocess.run(["dvc", "repro", *os.environ.get("SMOKE_STAGES", "").split()],
                               cwd=root, env=env, stdout=f, stderr=subprocess.STDOUT)
        if p.returncode:
            pytest.fail(f"dvc repro failed ({p.returncode}); the end of {log}:\n{log.read_text()[-6000:]}")
        yield root
    finally:
        # the copy's own tiers outside it (/dev/shm/...-{checkout}); nothing stays behind
        own = subprocess.run([sys.executable, "-m", "experiments.tiers", "dirs", "--own"], cwd=root,
                             env=env, capture_output=True, text=True).stdout.split()
        for d in own:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def smoke_results(smoke_root):
    return smoke_root / "results"


@pytest.fixture
def stage_results(smoke_results):
    """``stage_results("name")``: that stage's smoke results folder, or a skip if it did not run."""
    def get(stage: str) -> Path:
        d = smoke_results / stage
        if not d.exists() and os.environ.get("SMOKE_STAGES"):
            pytest.skip(f"stage {stage} not in SMOKE_STAGES")
        assert d.exists(), f"stage {stage} wrote no results folder"
        return d
    return get
