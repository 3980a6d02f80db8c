"""``make course``: the student release and the autograder of every lab, with otter assign.

For each lab ``course/<lab>/<lab>.ipynb`` (an otter-assign master notebook) this writes
``course/dist/<lab>/student/``, the bundle to hand out: the student notebook (solutions, hidden
tests, rubric answers and outputs stripped) and ``labkit.py`` (the lab's plumbing; it holds no
graded mechanism and imports nothing from ``experiments``), and nothing else: the package with
the graded references is not in it. ``course/dist/<lab>/autograder/`` holds the solution
notebook, every test and ``<lab>-autograder_*.zip``, which ``make grade`` runs; the zip carries
``gradekit/`` (:func:`experiments.course.graderkit.grader_kit`), the grader's side of the hidden tests, so that they pass where
the package is not importable (the grader's sandbox). otter assign runs
each solution against its own tests while building (on the smoke profile, seconds a lab), so a
lab whose solution fails its tests stops the build; the stderr of the kernels it starts goes to
``course/dist/<lab>/build.log``, known start-up noise kept off the console. The rubric (``course/<lab>/rubric.md``) is
copied beside the autograder, never into the student folder.

    python -m experiments.course.build [LAB ...]      # all labs when none named
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

from .. import paths
from ..run_notebook import _StderrTee
from . import LABS, Lab, dist_dir, labkit, master
from . import lab as find_lab
from .labkit import DIR_ENV, PROFILE_ENV

STUDENT_FILES = ("labkit.py",)   # what a bundle holds beside the notebook
KIT_ENV = "DLIO_COURSE_KIT"      # a folder holding labkit.py (the grader gives each submission its own)


def student_notebook(lab: Lab) -> Path:
    return dist_dir(lab) / "student" / f"{lab.name}.ipynb"


def solution_notebook(lab: Lab) -> Path:
    return dist_dir(lab) / "autograder" / f"{lab.name}.ipynb"


def autograder_zip(lab: Lab) -> Path:
    """The newest autograder zip of ``lab``; FileNotFoundError (naming ``make course``) if none."""
    zips = sorted((dist_dir(lab) / "autograder").glob(f"{lab.name}-autograder_*.zip"))
    if not zips:
        raise FileNotFoundError(f"no autograder for {lab.name} under {dist_dir(lab)}: run `make course` first")
    return zips[-1]


def kit_dir() -> Path:
    """A folder holding only a copy of ``labkit.py`` (created): on the kernels' ``PYTHONPATH``
    so that a notebook's ``import labkit`` works in the build and the grader as in a bundle,
    without putting ``experiments/course/`` (the build and grade modules) on the path."""
    d = dist_dir() / "_kit"
    d.mkdir(parents=True, exist_ok=True)
    src = Path(labkit.__file__)
    if not (d / src.name).is_file() or (d / src.name).read_bytes() != src.read_bytes():
        shutil.copy(src, d / src.name)
    return d


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


# the kernel's warning when it talks over TCP (otter's kernels do; the pipeline's use IPC)
KERNEL_TCP = re.compile(r"\[IPKernelApp\] WARNING \| Kernel is running over TCP without encryption")


def _build_noise():
    """True for a line of a build's stderr that is known start-up noise: the pipeline's
    (experiments.run_notebook.NOISE) and :data:`KERNEL_TCP`."""
    from ..envinfo import gpus
    from ..run_notebook import noise_filter
    pipeline = noise_filter(bool(gpus()))
    return lambda line: bool(KERNEL_TCP.search(line)) or pipeline(line)


def build(lab: Lab, run_tests: bool = True) -> Path:
    """Build ``lab``'s release and autograder into :func:`dist_dir`; return that folder.
    With ``run_tests`` otter runs the solution against every test first and raises
    RuntimeError (naming the failed tests) when one fails."""
    src = master(lab)
    if not src.is_file():
        raise FileNotFoundError(f"LAB = {lab.name!r}: no master notebook at {src}")
    out = dist_dir(lab)
    shutil.rmtree(out, ignore_errors=True)
    otter_env()
    from otter.assign import main as assign

    from .graderkit import add_to_zip, grader_kit
    kit = grader_kit(lab)   # on the path of the kernels otter starts to check the solution
    saved_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(kit), saved_path) if x)
    scratch = dist_dir() / "_scratch" / lab.name   # where the solution's run writes while otter checks it
    saved = os.environ.get(DIR_ENV)
    os.environ[DIR_ENV] = str(scratch)
    log = dist_dir() / f"_{lab.name}.build.log"
    log.unlink(missing_ok=True)
    # the kernels otter starts to check the solution: their start-up lines (ipykernel's "running
    # over TCP without encryption", TensorFlow's) in the lab's build.log, off the console
    tee = _StderrTee(log, _build_noise()) if run_tests else None
    try:
        assign(str(src), str(out), no_pdfs=True, no_run_tests=not run_tests)
    finally:
        if tee is not None:
            tee.close()
            if out.is_dir():
                os.replace(log, out / "build.log")
        os.environ["PYTHONPATH"] = saved_path
        shutil.rmtree(labkit.mem_root(), ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        if saved is None:
            os.environ.pop(DIR_ENV, None)
        else:
            os.environ[DIR_ENV] = saved
    add_to_zip(autograder_zip(lab), kit)
    student = out / "student"
    for f in STUDENT_FILES:
        shutil.copy(Path(labkit.__file__).parent / f, student / f)
    rubric = src.parent / "rubric.md"
    if rubric.is_file():
        shutil.copy(rubric, out / "autograder" / "rubric.md")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.course.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("labs", nargs="*", help="lab names or numbers (default: all)")
    ap.add_argument("--no-run-tests", action="store_true",
                    help="skip running each solution against its tests (make grade on the solution does the same)")
    a = ap.parse_args(argv)
    labs = [find_lab(x) for x in a.labs] if a.labs else list(LABS)  # bad names stop before any work
    for lab in labs:
        build(lab, run_tests=not a.no_run_tests)
        print(f"{lab.name}: student bundle (hand out this folder) {student_notebook(lab).parent.relative_to(paths.root())}/, "
              f"autograder {autograder_zip(lab).relative_to(paths.root())}"
              + (f" (kernels' stderr: {(dist_dir(lab) / 'build.log').relative_to(paths.root())})"
                 if (dist_dir(lab) / "build.log").is_file() else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
