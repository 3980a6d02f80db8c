"""The course: eight graded labs under ``course/`` (see ``course/README.md``).

The labs are otter-grader master notebooks (``course/labNN-name/labNN-name.ipynb``). This
package holds what the labs and the instructor's commands share:

- :mod:`.labkit`: the plumbing a lab's notebook calls (where it writes, sizes per profile,
  synthetic data, a timer); standalone, copied into each student bundle as ``labkit.py``;
- :mod:`.integrity`: ``check_own``, which every hidden test calls first (the graded functions are
  the notebook's own and reach nothing of ``experiments``), and the grader's static import check;
- :mod:`.build`: ``make course`` (per lab the student bundle and the autograder, with otter assign);
- :mod:`.hidden`: a hidden test's three parts (the grader's inputs; the run, in the sandbox;
  the judge, outside it), the autograder's side of them (``gradeharness``: :mod:`.harness`, the
  integrity check, the inputs' values) and the judges written beside the zip;
- :mod:`.harness`: the runs' side in the sandbox (records what the student's code gives);
  :mod:`.judge`: step 2 of grading, the record judged outside the sandbox with the package's
  references; :mod:`.witness`: what a run asks the grader while it runs (lab 1's residency,
  lab 8's AU curves), answered from outside;
- :mod:`.grade`: ``make grade LAB=... SUB=...`` (a notebook or a folder of them: otter runs in
  parallel, each in the bubblewrap sandbox of :mod:`.sandbox`, then the judges outside it;
  grades.csv, the written answers per question);
- :mod:`.bench`: the measured time table of the course guide (runs each solution).
"""

from __future__ import annotations

from dataclasses import dataclass
import shutil
from pathlib import Path


@dataclass(frozen=True)
class Lab:
    """One lab: its folder under ``course/``, its title, and the answer variable its hidden
    consistency test recomputes (``answer``), with a number copied from the paper in its place
    (``paper_value``: Table I's Optane/HDD read ratio, Fig 4's 2.3x, Fig 10's 2.6x, the poster's 16 % RL, the thesis's 0.95
    similarity, the DGX-1's 8 V100s; for labs 3 and 6, whose sources give no number, a round guess), which tests/test_course.py types in to see it fail."""
    name: str
    title: str
    answer: str
    paper_value: str


LABS: tuple[Lab, ...] = (
    Lab("lab01-page-cache", "devices and the page cache", "ratio_disk", "9.83"),
    Lab("lab02-tfdata-threads", "tf.data thread scaling", "warm_speedup", "2.3"),
    Lab("lab03-prefetch", "prefetch and overlap", "io_share", "0.5"),
    Lab("lab04-burst-buffer", "checkpoints and the burst buffer", "burst_speedup", "2.6"),
    Lab("lab05-shuffling", "shuffling (DeepIO)", "rl_drop", "16.0"),
    Lab("lab06-formats-lmdb", "formats: a record file against one file per image", "ratio_cold", "1.0"),
    Lab("lab07-tracing", "tracing", "similarity", "0.95"),
    Lab("lab08-accelerators", "emulated accelerators", "max_accelerators", "8"),
)


def lab(name: str) -> Lab:
    """The lab called ``name`` (its folder name, or its number: ``lab01`` or ``1``)."""
    for x in LABS:
        if name in (x.name, x.name.split("-")[0], x.name[3:5].lstrip("0")):
            return x
    raise ValueError(f"LAB = {name!r}; allowed: {', '.join(x.name for x in LABS)}")


# where the labs live: the one place build, hidden and grade take them from
def course_dir() -> Path:
    """``course/`` at the project root: the master notebooks and rubrics."""
    from ..settings import paths

    return paths.root() / "course"


def dist_dir(lab: Lab | None = None) -> Path:
    """``course/dist/`` (generated, not in git), or one lab's folder in it."""
    d = course_dir() / "dist"
    return d / lab.name if lab else d


def master(lab: Lab) -> Path:
    """The master notebook of ``lab`` (solutions and hidden tests)."""
    return course_dir() / lab.name / f"{lab.name}.ipynb"


# where the build puts what it makes (the grader reads them there)
KIT_ENV = "DLIO_COURSE_KIT"      # a folder holding labkit.py (the grader gives each submission its own)


def student_notebook(lab: Lab) -> Path:
    return dist_dir(lab) / "student" / f"{lab.name}.ipynb"


def solution_notebook(lab: Lab) -> Path:
    return dist_dir(lab) / "autograder" / f"{lab.name}.ipynb"


def autograder_zip(lab: Lab) -> Path:
    """The newest autograder zip of ``lab``; FileNotFoundError (naming ``make course``) if none,
    or if it is older than the lab's master notebook (its hidden tests would be the old ones: a
    build of 00:33 graded lab 6's solution 9/11 after the master's tests changed at 05:50)."""
    zips = sorted((dist_dir(lab) / "autograder").glob(f"{lab.name}-autograder_*.zip"))
    if not zips:
        raise FileNotFoundError(f"no autograder for {lab.name} under {dist_dir(lab)}: run `make course` first")
    if master(lab).is_file() and zips[-1].stat().st_mtime < master(lab).stat().st_mtime:
        raise FileNotFoundError(f"the autograder {zips[-1]} is older than {master(lab)}: run `make course` "
                                "to build it again")
    return zips[-1]


def kit_dir() -> Path:
    """A folder holding only a copy of ``labkit.py`` (created): on the kernels' ``PYTHONPATH``
    so that a notebook's ``import labkit`` works in the build and the grader as in a bundle,
    without putting ``experiments/course/`` (the build and grade modules) on the path."""
    d = dist_dir() / "_kit"
    d.mkdir(parents=True, exist_ok=True)
    from . import labkit
    src = Path(labkit.__file__)
    if not (d / src.name).is_file() or (d / src.name).read_bytes() != src.read_bytes():
        shutil.copy(src, d / src.name)
    return d
