"""``make course``: the student release and the autograder of every lab, with otter assign.

For each lab ``course/<lab>/<lab>.ipynb`` (an otter-assign master notebook) this writes
``course/dist/<lab>/student/``, the bundle to hand out: the student notebook (solutions, hidden
tests, rubric answers and outputs stripped) and ``labkit.py`` (the lab's plumbing; it holds no
graded mechanism and imports nothing from ``experiments``), and nothing else: the package with
the graded references is not in it. ``course/dist/<lab>/autograder/`` holds the solution
notebook, the tests, ``<lab>-autograder_*.zip``, which ``make grade`` runs in the sandbox, and
``judges.json`` beside it. The zip holds the public tests and, of each hidden test, only its
inputs and its run (:mod:`experiments.course.hidden`), with ``gradeharness`` (the harness that
records what the student's code gives, and the integrity check): no reference of the package
and no expected value; the judges, which compare the record with the package's references
outside the sandbox, are in ``judges.json`` only. With tests (the default), each lab's solution
is then graded as a submission is (smoke profile, seconds a lab), so a lab whose solution loses
a point stops the build (its log in ``course/dist/<lab>/check/``). The rubric
(``course/<lab>/rubric.md``) is copied beside the autograder, never into the student folder.

    python -m experiments.course.build [LAB ...]      # all labs when none named
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import nbformat

from ..settings import paths
from . import (KIT_ENV, LABS, Lab, autograder_zip, dist_dir, kit_dir, labkit, master,  # noqa: F401 - the layout, kept here for callers
               solution_notebook, student_notebook)
from . import lab as find_lab
from .labkit import PROFILE_ENV

STUDENT_FILES = ("labkit.py",)   # what a bundle holds beside the notebook
def otter_env() -> None:
    """Set up this process's environment for the kernels otter starts (they inherit it): this
    checkout's package and root, ``labkit`` importable as a plain module, and the smoke profile
    unless the caller chose one (the build and the grader run each solution: seconds, not
    minutes). otter runs in this process: importing it costs ~5-10 s, paid once for every lab."""
    os.environ.setdefault(PROFILE_ENV, "smoke")
    os.environ["DLIO_ROOT"] = str(paths.root())
    # TensorFlow's C++ start-up lines (oneDNN, CUDA probing on a box without a GPU) read like
    # errors in an instructor's log; the pipeline filters them the same way (run_notebook)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    pkg = str(Path(__file__).resolve().parents[2])
    for p in (pkg, os.environ.get(KIT_ENV) or str(kit_dir())):
        if p not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (p, os.environ.get("PYTHONPATH", "")) if x)


def build(lab: Lab, run_tests: bool = True) -> Path:
    """Build ``lab``'s release and autograder into :func:`dist_dir`; return that folder. The
    autograder is built from :func:`experiments.course.hidden.harness_notebook` (the master with
    each hidden test's inputs and judge cut off: the zip holds the runs and the inputs' values,
    no reference of the package), the judges written beside it. With ``run_tests`` the solution is then graded as a
    submission is (:func:`experiments.course.grade.run_one`: the sandbox, then the judges), and
    RuntimeError names the tests it failed."""
    from . import hidden
    src = master(lab)
    if not src.is_file():
        raise FileNotFoundError(f"LAB = {lab.name!r}: no master notebook at {src}")
    out = dist_dir(lab)
    shutil.rmtree(out, ignore_errors=True)
    otter_env()
    from otter.assign import main as assign

    staged = dist_dir() / "_harness" / lab.name / src.name   # the master as the zip's tests see it
    shutil.rmtree(staged.parent, ignore_errors=True)
    staged.parent.mkdir(parents=True)
    nbformat.write(hidden.harness_notebook(src), staged)
    try:
        assign(str(staged), str(out), no_pdfs=True, no_run_tests=True)
    finally:
        shutil.rmtree(staged.parent, ignore_errors=True)
    hidden.add_to_zip(autograder_zip(lab), hidden.write_judges(lab))
    student = out / "student"
    for f in STUDENT_FILES:
        shutil.copy(Path(labkit.__file__).parent / f, student / f)
    rubric = src.parent / "rubric.md"
    if rubric.is_file():
        shutil.copy(rubric, out / "autograder" / "rubric.md")
    if run_tests:
        check_solution(lab)
    return out


def check_solution(lab: Lab) -> None:
    """Grade ``lab``'s built solution notebook as ``make grade`` grades a submission (its
    results, log and record in ``course/dist/<lab>/check/``); RuntimeError naming every test
    that lost points."""
    from .grade import TIMEOUT_S, questions, run_one
    keep = dist_dir(lab) / "check"
    r = run_one(lab, solution_notebook(lab), keep, TIMEOUT_S)
    qinfo = questions(master(lab))
    lost = {n: q["output"] for n, q in r["questions"].items() if q["score"] < q["max_score"]}
    missing = [n for n, q in qinfo.items() if not q["manual"] and n not in r["questions"]]
    if r["error"] or lost or missing:
        raise RuntimeError(f"{lab.name}: the solution does not get full points ({r['error'] or 'see below'}; "
                           f"log in {keep}):\n" + "\n\n".join(f"{n}:\n{o}" for n, o in lost.items())
                           + (f"\nno result for {', '.join(missing)}" if missing else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.course.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("labs", nargs="*", help="lab names or numbers (default: all)")
    ap.add_argument("--no-run-tests", action="store_true",
                    help="skip grading each solution (make grade on the solution does the same)")
    a = ap.parse_args(argv)
    labs = [find_lab(x) for x in a.labs] if a.labs else list(LABS)  # bad names stop before any work
    for lab in labs:
        build(lab, run_tests=not a.no_run_tests)
        print(f"{lab.name}: student bundle (hand out this folder) {student_notebook(lab).parent.relative_to(paths.root())}/, "
              f"autograder {autograder_zip(lab).relative_to(paths.root())} (judges beside it, not in it)"
              + (f"; the solution graded in full (log: {(dist_dir(lab) / 'check').relative_to(paths.root())}/)"
                 if not a.no_run_tests else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
