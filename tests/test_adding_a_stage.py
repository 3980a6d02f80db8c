"""docs/adding-a-stage.md, followed in a copy of the project: its code blocks written where their
first line says (a file, a notebook cell, a profile's section), its commands run (``dvc repro``
of the new stage on the smoke profile); then ``make decide`` can buy the stage runs and ``make
replicate`` re-measures it. A step the guide misses fails here, and so does a fourth file: the
guide's blocks write three (a module, a notebook, a profile entry), and following it changes no
other file of the project but what its commands generate (``dvc.yaml``, ``params.yaml``)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.settings import paths

GUIDE = "docs/adding-a-stage.md"
STAGE = "block_read"
BLOCK = re.compile(r"```(\w+)\n# (file|notebook|profile|commands):? ?(.*?)\n(.*?)```", re.S)
GENERATED = {"dvc.yaml", "params.yaml", "dvc.lock"}     # what the guide's commands write
OUTPUTS = ("results/", "data/", ".dvc/", ".venv")       # what running the stage writes


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


def hand_files(text: str) -> set[str]:
    """The project files the guide's blocks write: a file's, a notebook's and a profile's."""
    return {where.split(" (")[0] for _, kind, where, _ in blocks(text) if kind != "commands"}


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """{path: (size, mtime)} of the project's files, outputs and caches left out."""
    return {str(f.relative_to(root)): (f.stat().st_size, f.stat().st_mtime_ns) for f in root.rglob("*")
            if f.is_file() and not str(f.relative_to(root)).startswith(OUTPUTS) and "__pycache__" not in f.parts}


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
    before = snapshot(root)
    try:
        ran = follow(root, env)
        after = snapshot(root)
        touched = {f for f in after if before.get(f) != after[f]} | (set(before) - set(after))
        hand = hand_files((paths.root() / GUIDE).read_text())
        assert touched - GENERATED == hand, f"files changed beyond the guide's three: {sorted(touched - GENERATED - hand)}"
        _check(root, env, ran)
    finally:   # the memory tier lives outside the copy (/dev/shm): removed with it
        own = subprocess.run([sys.executable, "-m", "experiments.host.tiers", "dirs", "--own"], cwd=root, env=env,
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
             "from experiments.settings import config\n"
             "from experiments.pipeline import dvc_run\n"
             "from experiments.review import replicate\n"
             "dvc = yaml.safe_load(open('dvc.yaml'))\n"
             f"assert '{STAGE}' in dvc_run.buyable(dvc['stages']), 'make decide cannot buy it'\n"
             f"assert '{STAGE}' in replicate.plan([], dvc)[0], 'make replicate skips it'\n"
             f"assert '{STAGE}' in config.SECTIONS\n"
             f"assert config.load(decide=None).decide.{STAGE} == []\n")
    p = subprocess.run([sys.executable, "-c", check], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]


def test_the_guides_blocks_are_found_and_write_three_files():
    """Each kind of step is in the guide (a block the pattern above missed would be a step the
    test above skips), and its blocks write three files: a module of the package, a notebook and
    a profile."""
    text = (paths.root() / GUIDE).read_text()
    kinds = [k for _, k, _, _ in blocks(text)]
    assert {"file", "notebook", "profile", "commands"} <= set(kinds) and kinds[-1] == "commands"
    hand = sorted(hand_files(text))
    assert len(hand) == 3, hand
    assert [h.split("/")[0] for h in hand] == ["experiments", "notebooks", "profiles"], hand
    assert "# registry" not in text, "a registry step: a stage's entry is in its module (STAGE = Stage(...))"
