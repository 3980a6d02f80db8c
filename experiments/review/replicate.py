"""``make replicate STAGES="blog lmdbio"`` (``python -m experiments.review.replicate --stages ...``):
measure again, compare the two claims tables.

It copies the project (code, params.yaml, dvc.yaml and dvc.lock, every results folder) into
``replicate/`` (git-ignored; its ``data/`` is a link to this checkout's, so the data sets are not
generated again), re-runs there the named measuring stages (default: every one in
:data:`MEASURING`) and the report stages that read them (``dvc repro --single-item --force``,
``DLIO_ROOT`` = the copy: ``results/`` here is never touched), then writes
:func:`experiments.review.compare.markdown` of this checkout's findings and the copy's to
``replicate/replication.md`` (every finding) and prints it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ..settings import paths
from ..claims.table import gather
from ..output.provenance import MEASURING   # stages that measure; `--stages` takes any of these
from .compare import compare, markdown


def plan(stages: list[str], dvc_yaml: dict) -> tuple[list[str], list[str]]:
    """(measuring stages, report stages to run after them) for ``stages`` (empty: all of
    :data:`MEASURING`): a report is a stage that reads ``results/<stage>`` and writes claims
    (a dependency of the ``claims`` stage). Unknown names stop, naming them."""
    bad = [s for s in stages if s not in MEASURING]
    if bad:
        raise SystemExit(f"replicate --stages: {' '.join(bad)} not a measuring stage; allowed: "
                         f"{', '.join(MEASURING)}")
    chosen = [s for s in MEASURING if s in stages] if stages else list(MEASURING)
    st = dvc_yaml["stages"]
    writes_claims = {Path(d).parts[1] for d in st["claims"]["deps"] if str(d).endswith("claims.json")}
    reports = []
    for name, v in st.items():
        deps = [str(d) for d in v.get("deps", [])]
        if name in writes_claims and name not in chosen and any(
                d == f"results/{s}" or d.startswith(f"results/{s}/") for s in chosen for d in deps):
            reports.append(name)
    return chosen, reports


def _copy_project(src: Path, dst: Path) -> None:
    """The tracked files, dvc.lock and every results folder of ``src`` into ``dst``; ``data``
    as a link to ``src``'s."""
    files = subprocess.run(["git", "ls-files"], cwd=src, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        if (src / f).is_file():
            shutil.copy2(src / f, dst / f)
    for f in ("params.yaml", "dvc.lock"):
        if (src / f).exists():
            shutil.copy2(src / f, dst / f)
    if (dst / "results").exists():
        shutil.rmtree(dst / "results")
    shutil.copytree(src / "results", dst / "results", symlinks=True)
    if (dst / "data").is_symlink() or (dst / "data").is_file():
        (dst / "data").unlink()
    elif (dst / "data").exists():
        shutil.rmtree(dst / "data")
    (dst / "data").symlink_to((src / "data").resolve(), target_is_directory=True)


def _gather(root: Path) -> pd.DataFrame:
    """The claims of every stage of the project at ``root`` (:func:`experiments.claims.table.gather`)."""
    was = os.environ.get("DLIO_ROOT")
    os.environ["DLIO_ROOT"] = str(root)
    try:
        return gather()
    finally:
        if was is None:
            os.environ.pop("DLIO_ROOT")
        else:
            os.environ["DLIO_ROOT"] = was


def run(stages: list[str], into: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Re-measure ``stages`` and their reports in ``into`` (see the module docstring); returns
    (this checkout's claims, the copy's, :func:`experiments.review.compare.compare` of them)."""
    import yaml

    src = paths.root()
    chosen, reports = plan(stages, yaml.safe_load((src / "dvc.yaml").read_text()))
    into = Path(into).resolve()
    if into == src.resolve() or into == (src / "results").resolve() or into in (src / "results").resolve().parents:
        raise SystemExit(f"replicate --into {into}: allowed: a folder that is neither this checkout nor "
                         "holds its results/")
    before = _gather(src)
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    _copy_project(src, into)
    env = {**os.environ, "DLIO_ROOT": str(into)}
    subprocess.run(["dvc", "config", "--local", "core.no_scm", "true"], cwd=into, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    for s in [*chosen, *reports]:
        print(f"replicate: dvc repro --single-item --force {s}", file=sys.stderr, flush=True)
        subprocess.run(["dvc", "repro", "--single-item", "--force", s], cwd=into, env=env, check=True)
    after = _gather(into)
    keep = set(reports) | set(chosen)
    one, two = before[before["stage"].isin(keep)], after[after["stage"].isin(keep)]
    return one, two, compare(one, two)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.review.replicate", description=__doc__.split("\n")[0])
    ap.add_argument("--stages", default="", help="measuring stages to re-run, space-separated (default: all)")
    ap.add_argument("--into", default=None, help="the second project folder (default: replicate/ here)")
    a = ap.parse_args(argv)
    into = Path(a.into) if a.into else paths.root() / "replicate"
    one, two, t = run(a.stages.split(), into)
    md = markdown(t, one, two, names=("this checkout", "replicate/"), every=True)
    (into / "replication.md").write_text(md)
    t.to_csv(into / "replication.csv", index=False)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
