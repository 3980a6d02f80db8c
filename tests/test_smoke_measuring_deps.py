"""Measuring depends on nothing a reader edits (asked of DVC itself, on the smoke project after
its pipeline): a changed quote, statement, colour or figure setting makes ``dvc status`` name
only report stages, ``claim_rules`` and ``claims``; once ``claim_rules`` has run again (it writes
the same bytes) no measuring stage is stale. A changed rule makes the measuring stage whose
rounds it steers stale, and no other."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import Background, smoke_project
from experiments import stages
from experiments.review.replicate import MEASURING

pytestmark = pytest.mark.smoke
DATA_STAGES = set(stages.named("data"))


def _copy(smoke_root: Path, to: Path) -> Path:
    """The smoke project with its code, notebooks, params and DVC files copied (to edit them) and
    its data and results linked (its claim_rules folder copied: the test re-runs that stage)."""
    to.mkdir()
    for p in smoke_root.iterdir():
        if p.name in ("params.yaml", "dvc.yaml", "dvc.lock"):
            shutil.copy2(p, to / p.name)
        elif p.name in (".dvc", "experiments", "notebooks"):
            shutil.copytree(p, to / p.name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "tmp"))
        elif p.name == "results":
            (to / "results").mkdir()
            for r in p.iterdir():
                if r.name == "claim_rules":
                    shutil.copytree(r, to / "results" / r.name)
                else:
                    (to / "results" / r.name).symlink_to(r.resolve())
        else:
            (to / p.name).symlink_to(p.resolve())
    return to


def _stale(root: Path, env: dict) -> set[str]:
    out = subprocess.run([str(Path(sys.executable).parent / "dvc"), "status", "--json"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return {k.split(":")[-1] for k in json.loads(out.stdout or "{}")}


def _edit(f: Path, pattern: str, repl: str) -> None:
    text = f.read_text()
    new, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    assert n == 1, f"{f}: {pattern!r} not found"
    f.write_text(new)


def _edits(base: Path, env: dict) -> None:
    """The edits in a copy of the smoke project in ``base``, each followed by DVC's status and
    the assertions on it (raised in the test)."""
    root = _copy(smoke_project(), base / "copy")
    env = {**env, "DLIO_ROOT": str(root), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    measuring = (set(MEASURING) | DATA_STAGES | {n for n, s in stages.items() if "tiers" in s.get("params", [])}) & set(stages)
    assert not _stale(root, env) & measuring, "the smoke project is not up to date to begin with"
    papers = root / "experiments" / "claims" / "papers"
    _edit(papers / "pumma-lmdbio.yaml", r"^(    quote: .+?)$", r"\1  ")                  # a quote's spacing
    _edit(papers / "nelson-dl-io-blog.yaml", r"^(    statement: )(.+)$", r"\1(edited) \2")  # a statement
    _edit(root / "experiments" / "figures" / "style.py", r'^PALETTE = "\w+"', 'PALETTE = "deep"')       # the colours
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["figures"]["dpi"] = int(params["figures"]["dpi"]) + 1                         # a figure setting
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stale = _stale(root, env)
    assert "claim_rules" in stale and "claims" in stale and "lmdbio_report" in stale
    assert not stale & measuring, f"editing what a paper says re-measures: {sorted(stale & measuring)}"
    run = lambda *a: subprocess.run(["dvc", "repro", "--single-item", *a], cwd=root, env=env,   # noqa: E731
                                    capture_output=True, text=True, timeout=600)
    p = run("claim_rules")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert not _stale(root, env) & measuring      # it wrote the same rules: still nothing to measure
    # a rule steers its measuring stage's rounds: that stage, and no other, is stale now
    _edit(papers / "pumma-lmdbio.yaml",
          r"^(  - id: lmdbio_lmm_faster_than_lmdb_cifar\n(?:    .*\n)*?    rule: )\"> 1\"$", r'\1"> 1.02"')
    p = run("claim_rules")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert _stale(root, env) & measuring == {"lmdbio"}


# started when the pipeline ends, beside the unit tests (19 s of the fresh-clone CI's serial tail)
EDITED = Background(_edits)


@pytest.mark.background(EDITED)
def test_editing_what_a_paper_says_or_how_it_looks_re_measures_nothing(smoke_run):
    EDITED.result()   # the assertions of _edits
