"""docs/adding-a-stage.md, followed in a copy of the project: its code blocks written where their
first line says (a file, a notebook cell, the registry entry, a profile's section), its commands
run (``dvc repro`` of the new stage on the smoke profile); then ``make decide`` can buy the stage
runs and ``make replicate`` re-measures it. A step the guide misses fails here."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import paths

GUIDE = "docs/adding-a-stage.md"
STAGE = "block_read"
BLOCK = re.compile(r"```(\w+)\n# (file|notebook|registry|profile|commands):? ?(.*?)\n(.*?)```", re.S)


def blocks(text: str) -> list[tuple[str, str, str, str]]:
    """(language, kind, where, body) of each code block of the guide whose first line says where
    it goes."""
    return [(lang, kind, where.strip(), body) for lang, kind, where, body in BLOCK.findall(text)]


def _copy(to: Path) -> Path:
    """The project's tracked files (what a fresh clone has) copied to ``to``; the virtual
    environment linked."""
    root = paths.root()
    files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True,
                           check=True).stdout.split("\0")
    for f in files:
        if f and (root / f).is_file() and not (root / f).is_symlink():
            (to / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / f, to / f)
    (to / ".venv").symlink_to((root / ".venv").resolve())
    return to


def _notebook(cells: list[tuple[str, str, bool]]) -> dict:
    """A notebook of ``cells`` ((cell type, source, tagged parameters))."""
    return {"cells": [{"cell_type": t, "metadata": {"tags": ["parameters"]} if p else {}, "source": s,
                       **({"outputs": [], "execution_count": None} if t == "code" else {})}
                      for t, s, p in cells],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def follow(root: Path, env: dict) -> list[str]:
    """Do what the guide says in ``root``; returns the commands it ran."""
    notebooks: dict[str, list] = {}
    ran = []
    for lang, kind, where, body in blocks((paths.root() / GUIDE).read_text()):
        head = where.split(" (")[0]
        if kind == "file":
            (root / head).parent.mkdir(parents=True, exist_ok=True)
            (root / head).write_text(body)
        elif kind == "notebook":
            notebooks.setdefault(head, []).append(
                ("markdown" if lang == "markdown" else "code", body.rstrip("\n"), "(parameters)" in where))
        elif kind == "registry":
            f = root / head
            text = f.read_text()
            at = text.index('    Stage("claims",')   # before the claims stage's entry, as the guide says
            f.write_text(text[:at] + body + text[at:])
        elif kind == "profile":
            with open(root / head, "a") as f:
                f.write("\n" + body)
        elif kind == "commands":
            for nb, cells in notebooks.items():
                (root / nb).write_text(json.dumps(_notebook(cells), indent=1))
            for line in body.splitlines():
                cmd = line.split("#")[0].strip()
                if not cmd:
                    continue
                p = subprocess.run(cmd, shell=True, cwd=root, env=env, capture_output=True, text=True, timeout=600)
                assert p.returncode == 0, f"{cmd}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
                ran.append(cmd)
    return ran


@pytest.mark.smoke
def test_the_guide_adds_a_measuring_stage_that_runs_is_bought_and_replicated(tmp_path):
    root = _copy(tmp_path / "project")
    bin_ = str(Path(sys.executable).parent)
    env = {**os.environ, "DLIO_ROOT": str(root), "PYTHONPATH": str(root),
           "PATH": f"{bin_}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(["dvc", "config", "--local", "core.no_scm", "true"], cwd=root, env=env, check=True,
                   capture_output=True)
    try:
        ran = follow(root, env)
        _check(root, env, ran)
    finally:   # the memory tier lives outside the copy (/dev/shm): removed with it
        own = subprocess.run([sys.executable, "-m", "experiments.tiers", "dirs", "--own"], cwd=root, env=env,
                             capture_output=True, text=True).stdout.split()
        for d in own:
            shutil.rmtree(d, ignore_errors=True)


def _check(root: Path, env: dict, ran: list[str]) -> None:
    assert any(c.startswith(f"dvc repro {STAGE}") for c in ran), f"the guide never runs the stage: {ran}"
    out = root / "results" / STAGE
    for f in ("raw.parquet", "rounds.json", "summary.csv", "metrics.json", "env.json"):
        assert (out / f).is_file(), f"results/{STAGE}/{f} missing"
    # what make decide and make replicate read, asked of the copy's own code
    check = ("import yaml\n"
             "from experiments import config\n"
             "from experiments import dvc_run\n"
             "from experiments.review import replicate\n"
             "dvc = yaml.safe_load(open('dvc.yaml'))\n"
             f"assert '{STAGE}' in dvc_run.buyable(dvc['stages']), 'make decide cannot buy it'\n"
             f"assert '{STAGE}' in replicate.plan([], dvc)[0], 'make replicate skips it'\n"
             f"assert '{STAGE}' in config.SECTIONS\n"
             f"assert config.load(decide=None).decide.{STAGE} == []\n")
    p = subprocess.run([sys.executable, "-c", check], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]


def test_the_guides_blocks_are_found():
    """Each kind of step is in the guide (a block the pattern above missed would be a step the
    test above skips)."""
    kinds = [k for _, k, _, _ in blocks((paths.root() / GUIDE).read_text())]
    assert {"file", "notebook", "registry", "profile", "commands"} <= set(kinds) and kinds[-1] == "commands"
