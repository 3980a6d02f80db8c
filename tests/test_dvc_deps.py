"""dvc.yaml lists, for every stage, each package module its notebook runs (imported directly,
through another module, or through ``config.load``) and each upstream result it reads; else
DVC keeps a stale result when that module or result changes. Fix with what
``python -m experiments.pipeline.depcheck`` prints."""

import json

import pytest

from experiments.pipeline import depcheck
from experiments.settings import paths


def test_every_stage_depends_on_the_modules_and_results_its_notebook_uses():
    miss = depcheck.missing_deps()
    assert not miss, "stages lack deps (add them to dvc.yaml):\n" + "\n".join(
        f"  {s}: {', '.join(f)}" for s, f in miss.items())


def test_every_stage_command_names_the_notebook_it_runs():
    """The check above reads each stage's notebook from its cmd; a cmd it cannot parse would
    make that check pass without checking anything."""
    import yaml

    stages = yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"]
    unparsed = [n for n, st in stages.items() if depcheck.stage_notebook(st.get("cmd", "")) is None]
    assert not unparsed, f"stages whose cmd names no notebook depcheck can find: {unparsed}"


def _notebook(tmp_path, *cells):
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": []} for c in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps(nb))
    return p


def test_imports_are_followed_through_the_package(tmp_path):
    nb = _notebook(tmp_path,
                   "%matplotlib inline\nfrom experiments.lmdbio import report as rep\n",
                   "from experiments.trace import report\n",
                   "cfg = config.load(figures=None, lmdbio=None)\nx = results.load('lmdbio', 'env.json')\n")
    req = depcheck.required_files(nb)
    # direct, transitive (report -> claims -> results -> envinfo), relative (trace/report: from ..)
    for f in ("experiments/lmdbio/report.py", "experiments/claims/__init__.py",
              "experiments/claims/declared.py", "experiments/settings/reference.py",
              "experiments/output/results.py", "experiments/host/envinfo.py", "experiments/host/cache.py",
              "experiments/trace/__init__.py", "experiments/trace/similarity.py",
              "experiments/__init__.py"):
        assert f in req, f
    # config.load imports the module of each section it validates
    assert {"experiments/lmdbio/read.py", "experiments/settings/common_config.py", "experiments/host/procs.py"} <= req
    assert "results/lmdbio/env.json" in req
    assert "experiments/chien/alexnet.py" not in req


def test_a_missing_dep_is_found(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "notebooks").mkdir(parents=True)
    (root / "experiments").symlink_to(paths.root() / "experiments")
    _notebook(root / "notebooks", "from experiments import claims\n")
    (root / "dvc.yaml").write_text(
        "stages:\n  s:\n    cmd: papermill notebooks/nb.ipynb out.ipynb\n    deps:\n"
        "      - notebooks/nb.ipynb\n      - experiments/claims.py\n")
    monkeypatch.setenv("DLIO_ROOT", str(root))
    depcheck._module_imports.cache_clear()
    try:
        miss = depcheck.missing_deps(root / "dvc.yaml")
    finally:
        depcheck._module_imports.cache_clear()
    assert "experiments/statistics/stats.py" in miss["s"] and "experiments/claims.py" not in miss["s"]


def test_a_folder_is_collapsed_when_every_file_of_it_is_needed():
    every = {"experiments/claims/" + f.name for f in (paths.root() / "experiments/claims").iterdir() if f.suffix == ".py"}
    assert depcheck.collapsed(every | {"experiments/claims/papers"}) == ["experiments/claims"]
    some = {"experiments/claims/declared.py", "experiments/claims/table.py"}
    assert depcheck.collapsed(some) == sorted(some)


@pytest.mark.parametrize("dep,path,covered", [
    ("results/blog", "results/blog/dstat.csv", True), ("experiments", "experiments/x.py", True),
    ("experiments/claims.py", "experiments/claims.py", True), ("results/blog", "results/blog_report/x", False)])
def test_a_folder_dep_covers_its_files(dep, path, covered):
    assert depcheck._dep_covers(dep, path) is covered


def test_the_gathering_stage_must_depend_on_every_claims_file(tmp_path, monkeypatch):
    """claims_table.gather() globs results/*/claims.json, so no import names them: a stage that writes
    claims but is not a dep of the gathering stage would leave claims.md stale."""
    root = tmp_path / "proj"
    (root / "notebooks").mkdir(parents=True)
    (root / "experiments").symlink_to(paths.root() / "experiments")
    for name, src in (("a", "out.claims([])\nout.metrics(headline.claims([]))\n"),
                      ("b", "out.metrics(headline.claims([]))\n"),
                      ("all", "table = claims_table.gather()\n")):
        (root / "notebooks" / f"{name}.ipynb").write_text(_notebook(tmp_path, src).read_text())
    deps = "    deps:\n" + "".join(f"      - experiments/{m}.py\n" for m in ("__init__", "claims", "results"))
    (root / "dvc.yaml").write_text("stages:\n" + "".join(
        f"  {n}:\n    cmd: python -m experiments.pipeline.run_notebook notebooks/{n}.ipynb out.ipynb\n{deps}"
        f"      - notebooks/{n}.ipynb\n" for n in ("a", "b", "all")))
    monkeypatch.setenv("DLIO_ROOT", str(root))
    miss = depcheck.missing_deps(root / "dvc.yaml")
    assert "results/a/claims.json" in miss.get("all", [])
    assert not any("results/b/" in f or "results/all/" in f for f in miss.get("all", []))


def test_the_package_has_no_import_circle():
    cycles = depcheck.import_cycles()
    assert not cycles, "modules that import each other (move the shared name to one side):\n" + \
        "\n".join("  " + " <-> ".join(c) for c in cycles)


def test_import_circles_are_found_through_lazy_imports_but_not_type_checking(tmp_path):
    pkg = tmp_path / "experiments"
    (pkg / "sub").mkdir(parents=True)
    for f, text in {
        "__init__.py": "",
        "sub/__init__.py": "from .a import x\n",  # a package importing its module: no circle
        "sub/a.py": "from .. import top\nx = 1\n",
        "sub/b.py": "def f():\n    from . import c\n",  # lazy: still a circle with c
        "sub/c.py": "from .b import f\n",
        "top.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import a\n",
    }.items():
        (pkg / f).write_text(text)
    assert depcheck.import_graph(tmp_path)["experiments.sub.b"] == {"experiments.sub.c"}
    assert depcheck.import_cycles(tmp_path) == [["experiments.sub.b", "experiments.sub.c"]]


def test_the_emulator_circle_this_check_was_written_for_is_found(tmp_path):
    """emulator/checkpoint.py once imported DEFAULT_WRITERS from emulator/config.py, which
    imports checkpoint: put that import back in a copy and the check must see the circle."""
    import shutil

    shutil.copytree(paths.root() / "experiments", tmp_path / "experiments",
                    ignore=shutil.ignore_patterns("__pycache__", "bin", "plugins"))
    ck = tmp_path / "experiments" / "emulator" / "checkpoint.py"
    ck.write_text(ck.read_text() + "\n\ndef _writers():\n    from .config import WORKLOADS\n")
    assert ["experiments.emulator.checkpoint", "experiments.emulator.config"] in depcheck.import_cycles(tmp_path)


def test_stages_that_compare_with_the_realistic_data_sets_depend_on_them():
    """workload_random checks its random-content sets against the realistic ones (names, sizes,
    bytes): without the dep, `dvc repro workload_random` could run before workload_data and
    compare with nothing (a fresh-clone run that listed its targets in another order did)."""
    import yaml

    stages = yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"]
    for name in ("workload_random", "workload_sleep", "emulator_patterns", "traced_comparison"):
        deps = {str(d) for d in stages[name]["deps"]}
        assert {"data/unet3d", "data/bert", "data/dlrm"} <= deps, name
