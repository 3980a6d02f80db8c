"""The course's labs work (see course/README.md): each builds, its solution earns full autograded points when graded
(run on the smoke profile), the student release holds no solution and no hidden test, the
untouched student notebook fails, and a solution with the paper's number typed in place of the
computed one fails the consistency test. Everything runs in a temporary copy of ``course/``
(``DLIO_ROOT``), so the checkout's ``course/dist`` and ``explore/`` stay as they were."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from experiments.course import LABS, lab
from experiments.course import build as cb
from experiments.course import grade as cg

ROOT = Path(__file__).resolve().parent.parent
# Grading runs a lab twice through otter (~10-40 s each on 2 cores): lab 1 is graded in the unit
# run, the others under the smoke marker (`make test` runs both; `make unit` only the first).
GRADED = [pytest.param(x, id=x.name, marks=() if i == 0 else pytest.mark.smoke) for i, x in enumerate(LABS)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("course-root")
    shutil.copytree(ROOT / "course", tmp / "course", ignore=shutil.ignore_patterns("dist"))
    shutil.copy(ROOT / "params.yaml", tmp / "params.yaml")   # labs 2, 3, 6 read the ImageNet size mix
    saved = {k: os.environ.get(k) for k in ("DLIO_ROOT", "DLIO_COURSE_PROFILE", "PYTHONPATH")}
    os.environ["DLIO_ROOT"] = str(tmp)
    os.environ["DLIO_COURSE_PROFILE"] = "smoke"
    try:
        # the solution's own tests run when it is graded below (test_solution_gets_full_points)
        for x in LABS:
            cb.build(x, run_tests=False)
        yield tmp
    finally:
        from experiments import paths
        shutil.rmtree(Path("/dev/shm") / f"dlio-artifact-{paths.checkout_id(tmp)}", ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _solution_lines(nb_path: Path) -> list[str]:
    """The non-trivial solution lines of a master notebook: inside ``# BEGIN/END SOLUTION``
    within a code cell, and every line of a markdown cell in a solution block."""
    out, md_block = [], False
    for c in nbformat.read(nb_path, 4).cells:
        src = "".join(c.source)
        if c.cell_type == "raw":
            md_block = {"# BEGIN SOLUTION": True, "# END SOLUTION": False}.get(src.strip(), md_block)
            continue
        inside = c.cell_type == "markdown" and md_block
        for line in src.splitlines():
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) > 12:
                out.append(line.strip())
    return out


def _hidden_tests(nb_path: Path) -> list[str]:
    return ["".join(c.source) for c in nbformat.read(nb_path, 4).cells
            if c.cell_type == "code" and re.search(r"^hidden:\s*true", "".join(c.source), re.MULTILINE)]


@pytest.mark.parametrize("x", LABS, ids=[x.name for x in LABS])
def test_release_has_no_solution_and_no_hidden_test(built, x):
    student = cb.student_notebook(x)
    assert student.is_file() and cb.autograder_zip(x).is_file()
    text = student.read_text()
    sols, hidden = _solution_lines(cb.master(x)), _hidden_tests(cb.master(x))
    assert sols and hidden, "a lab has a solution and hidden tests"
    prompts = "".join("".join(c.source) for c in nbformat.read(cb.master(x), 4).cells
                      if c.cell_type == "markdown" and "Rubric answer" not in "".join(c.source))
    leaked = [s for s in sols if s in text and s not in prompts]  # a prompt may quote a line
    assert not leaked, leaked
    assert "BEGIN SOLUTION" not in text and "hidden: true" not in text
    # the hidden tests' assertions are not in the student's copy of the tests either
    for h in hidden:
        for line in h.splitlines():
            if line.startswith("assert"):
                assert json.dumps(line)[1:-1] not in text, line
    assert not (cb.dist_dir(x) / "student" / "rubric.md").exists()
    assert (cb.dist_dir(x) / "autograder" / "rubric.md").is_file()


@pytest.mark.parametrize("x", GRADED)
def test_solution_gets_full_points(built, x):
    g = cg.grade(x.name, cb.solution_notebook(x))
    assert g["max_score"] > 0 and g["score"] == g["max_score"], g["questions"]
    assert g["manual"], "each lab has a written answer graded with its rubric"
    assert "Autograded score" in (g["dir"] / "feedback.md").read_text()


def test_untouched_student_notebook_fails(built):
    x = LABS[0]
    g = cg.grade(x.name, cb.student_notebook(x))
    assert g["score"] < g["max_score"]
    assert all(q["score"] < q["max_score"] for q in g["questions"].values())


@pytest.mark.parametrize("x", GRADED)
def test_typed_paper_number_fails_the_consistency_test(built, x, tmp_path):
    nb = nbformat.read(cb.solution_notebook(x), 4)
    pat = re.compile(rf"^{re.escape(x.answer)} = .*$", re.MULTILINE)
    hits = [c for c in nb.cells if c.cell_type == "code" and pat.search("".join(c.source))]
    assert len(hits) == 1, f"{x.name}: one cell computes {x.answer}"
    hits[0].source = pat.sub(f"{x.answer} = {x.paper_value}", "".join(hits[0].source))
    sub = tmp_path / f"{x.name}-typed.ipynb"
    nbformat.write(nb, sub)
    g = cg.grade(x.name, sub)
    assert g["score"] < g["max_score"], g["questions"]


def test_bad_lab_name_stops_with_the_allowed_names():
    with pytest.raises(ValueError, match=r"LAB = 'lab99'; allowed: lab01"):
        lab("lab99")


def test_grade_refuses_a_missing_submission(tmp_path):
    with pytest.raises(ValueError, match="SUB = "):
        cg.grade("lab01", tmp_path / "nope.ipynb")


def test_labkit_profile_and_read_check_their_input(tmp_path, monkeypatch):
    from experiments.course import labkit
    monkeypatch.setenv("DLIO_COURSE_PROFILE", "huge")
    with pytest.raises(ValueError, match="DLIO_COURSE_PROFILE = 'huge'; allowed: smoke, default"):
        labkit.profile()
    monkeypatch.setenv("DLIO_COURSE_PROFILE", "smoke")
    assert labkit.sizes({"smoke": {"n": 1}, "default": {"n": 9}}) == {"n": 1}
    f = labkit.write_file(tmp_path / "f.bin", 1)
    with pytest.raises(ValueError, match="block = 0"):
        labkit.timed_read(f, 0, random=False)
    seq, rnd = labkit.timed_read(f, 1 << 16, random=False), labkit.timed_read(f, 4096, random=True)
    assert seq["bytes"] == rnd["bytes"] == 1 << 20          # both patterns read the whole file once
    assert rnd["iops"] > 0 and seq["MBps"] > 0
    r = labkit.emulate(f, 2, 4096, 0.001, 5)
    assert r["run_s"] >= 5 * 0.001 and r["steps"] == 5     # a run is never shorter than its compute


def test_course_bench_times_the_default_profile_unless_told(monkeypatch, tmp_path):
    """`make course-bench` fills the students' time table: the default profile, not the smoke
    profile the build and the grader default to (it measured smoke when otter_env ran first)."""
    from experiments.course import bench
    from experiments.course.labkit import PROFILE_ENV

    monkeypatch.delenv(PROFILE_ENV, raising=False)
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    seen = []
    monkeypatch.setattr(bench, "autograder_zip", lambda lab: tmp_path)
    monkeypatch.setattr(bench, "run_solution", lambda lab: (seen.append(os.environ[PROFILE_ENV]), (1.0, "1"))[1])
    monkeypatch.setattr(bench, "grade", lambda *a, **k: {"score": 1, "max_score": 1})
    monkeypatch.setattr(bench, "solution_notebook", lambda lab: tmp_path / "x.ipynb")
    got = bench.measure(LABS[:1])
    assert seen == ["default"] and list(got["profile"]) == ["default"]
