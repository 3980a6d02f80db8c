"""Shared fixtures. The smoke pipeline runs once per test session in a temporary copy of the
project (``DLIO_ROOT`` points the package there) on the smoke profile, through DVC and papermill
exactly as ``dvc repro`` does; the smoke tests then assert on the files each notebook wrote."""

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
    run("dvc", "repro", "--quiet")
    return root


@pytest.fixture
def smoke_results(smoke_root):
    return smoke_root / "results"
