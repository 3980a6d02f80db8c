"""The course's labs work (see course/README.md).

- Every lab builds; its student bundle holds the student notebook and ``labkit.py`` only: no
  solution line, no hidden test, no rubric answer, no package (the graded references). Its
  autograder zip (what the grading sandbox gets) holds the hidden tests' runs, the harness and
  the inputs' values: no module of the package, no judge, no line of the code that made the
  inputs; the judges lie beside it.
- The parts of grading in two steps, on tiny inputs: a hidden test's three parts; a record's
  values round trip exactly; a judge passes, fails, and refuses a missing or altered record;
  a judge starts from the inputs kept at build where they say so (lab 2's);
  the witness measures residency and answers oracles from outside, keeping it there.
- Labs 1 and 4: a folder of synthetic submissions (the solution; the untouched student notebook;
  one whose mechanism is faked and whose table is typed in; one with the paper's number typed
  in) is graded in one command to the expected points; grades.csv and the written answers per
  question are written. Lab 1's folder has more, of what the grader does alike in every lab: one
  that calls the package's reference (the static check), one that hangs (killed at its limit),
  one that reaches the reference by a module
  name built at run time (no hidden point), and one that tries to read a classmate's
  submission, the master notebook and the repository, to import the package and to write
  outside its folder, and writes what it saw to its kernel's stderr (the grader's log): every
  attempt refused, so its copy of the classmate's functions gets no point.
- Each submission runs in a bubblewrap sandbox without the package (``ran_as`` says so); a
  sandbox cannot import ``experiments`` nor see the repository.
- The other labs: the solution gets full points (one grading command each); in labs 2 and 6 a
  second submission, a faked pipeline (reader) with a table typed in the paper's shape, gets no
  hidden point; in lab 7 a run-time thief of the grader's Eq 4.1 loses exactly the hidden tests
  of the function it delegated.
- grades.csv says who each submission ran as, and in what (``nobody`` in the bubblewrap sandbox;
  without one, ``nobody`` where the grader is root).
- The crash-safe checkpoint test of lab 4 kills a writer: its judge passes a save through a
  temporary file and rename, and fails an in-place one.

Everything runs in a temporary copy of ``course/`` (``DLIO_ROOT``), so the checkout's
``course/dist`` and ``explore/`` stay as they were. Grading runs otter on the smoke profile.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
import pytest

from experiments.course import LABS, harness, hidden, lab, sandbox
from experiments.course import build as cb
from experiments.course import grade as cg
from experiments.course.integrity import check_own, imports_package
from experiments.course.judge import judge_one, load_record
from experiments.course.witness import Witness

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = ("lab01-page-cache", "lab04-burst-buffer")
HANG_LIMIT_S = 150   # the synthetic folders' time limit: a solution grades in ~20-60 s under load


def build_course(prefix: str) -> Path:
    """A copy of ``course/`` (and params.yaml) in a new temporary folder, made the package's
    root (``DLIO_ROOT``, smoke profile), with every lab built; the folder. The solution's own
    tests run when it is graded."""
    # not under pytest's 0700 temporary root: the grader may run submissions as nobody
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(tmp, 0o755)
    shutil.copytree(ROOT / "course", tmp / "course", ignore=shutil.ignore_patterns("dist"))
    shutil.copy(ROOT / "params.yaml", tmp / "params.yaml")   # labs may read the ImageNet size mix
    os.environ["DLIO_ROOT"] = str(tmp)
    os.environ["DLIO_COURSE_PROFILE"] = "smoke"
    for x in LABS:
        cb.build(x, run_tests=False)
    return tmp


@pytest.fixture(scope="module")
def built(course_class):
    """A built course (``DLIO_ROOT`` points there, smoke profile): the one the background class
    grading of the whole suite built (``course_class``, conftest.py; it removes it), or one
    built here when this module runs alone."""
    saved = {k: os.environ.get(k) for k in ("DLIO_ROOT", "DLIO_COURSE_PROFILE", "PYTHONPATH", "DLIO_COURSE_DIR")}
    tmp = None
    try:
        if course_class is not None:
            os.environ["DLIO_ROOT"] = str(course_class.built_root())
            os.environ["DLIO_COURSE_PROFILE"] = "smoke"
            yield Path(os.environ["DLIO_ROOT"])
        else:
            tmp = build_course("dlio-course-test-")
            yield tmp
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


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
    return ["".join(c.source) for c in _code(nbformat.read(nb_path, 4))
            if re.search(r"^hidden:\s*true", "".join(c.source), re.MULTILINE)]


# ---- the bundles ----------------------------------------------------------------------------

@pytest.mark.parametrize("x", LABS, ids=[x.name for x in LABS])
def test_bundle_holds_no_solution_no_hidden_test_no_reference(built, x):
    student = cb.student_notebook(x)
    assert student.is_file() and cb.autograder_zip(x).is_file()
    assert sorted(p.name for p in student.parent.iterdir()) == sorted([student.name, *cb.STUDENT_FILES])
    text = student.read_text()
    sols, hidden = _solution_lines(cb.master(x)), _hidden_tests(cb.master(x))
    assert sols and hidden, "a lab has a solution and hidden tests"
    prompts = "".join("".join(c.source) for c in nbformat.read(cb.master(x), 4).cells
                      if c.cell_type == "markdown" and "Rubric answer" not in "".join(c.source))
    leaked = [s for s in sols if s in text and s not in prompts]  # a prompt may quote a line
    assert not leaked, leaked
    assert "BEGIN SOLUTION" not in text and "hidden: true" not in text and "Rubric answer" not in text
    for h in hidden:   # the hidden tests' assertions are not in the student's copy of the tests
        for line in h.splitlines():
            if line.startswith("assert"):
                assert json.dumps(line)[1:-1] not in text, line
    assert not (student.parent / "rubric.md").exists()
    assert (cb.dist_dir(x) / "autograder" / "rubric.md").is_file()
    kit = (student.parent / "labkit.py").read_text()
    assert not imports_package(kit), "labkit imports nothing from experiments"
    if imports_package(cg.code_of(student)):
        pytest.xfail(f"{x.name} is not converted yet: its student notebook imports experiments")


def test_labkit_runs_alone(built, tmp_path):
    """The bundle's labkit imports without the package, writes under DLIO_COURSE_DIR or
    ./lab-output, and names its /dev/shm folder after that root."""
    kit = cb.student_notebook(LABS[0]).parent
    code = ("import sys, labkit; assert not any(m == 'experiments' or m.startswith('experiments.') for m in sys.modules);"
            "print(labkit.lab_dir('l', 's')); print(labkit.mem_root())")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DLIO_COURSE_DIR")}
    out = [subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(kit)!r}); {code}"],
                          cwd=tmp_path, env=dict(env, **extra), capture_output=True, text=True, check=True).stdout.split()
           for extra in ({}, {"DLIO_COURSE_DIR": str(tmp_path / "mine")})]
    assert out[0][0] == str(tmp_path / "lab-output" / "l" / "s") and out[1][0] == str(tmp_path / "mine" / "l" / "s")
    assert out[0][1] != out[1][1] and all(o[1].startswith("/dev/shm/dlio-course-") for o in out)


def test_sandbox_hides_the_package_and_the_repository(tmp_path):
    """In the grader's sandbox the package does not import, the repository and /root's other
    folders are not there, the network is down, and only its own folder is writable."""
    if not sandbox.available():
        pytest.skip(f"no sandbox here: {sandbox.WHY_NOT[0]}")
    os.chmod(tmp_path, 0o755)
    if os.geteuid() == 0:   # the grader gives nobody its folder
        os.chown(tmp_path, 65534, 65534)
    code = ("import importlib.util, json, os, socket\n"
            f"out = {{'spec': importlib.util.find_spec('experiments') is None, 'repo': os.path.exists({str(ROOT / 'experiments')!r}),"
            " 'uid': os.getuid()}\n"
            "try:\n    socket.create_connection(('192.0.2.1', 80), timeout=2); out['net'] = True\n"
            "except OSError:\n    out['net'] = False\n"
            "open('mine', 'w').write('x')\n"
            "try:\n    open('/mine', 'w'); out['root_w'] = True\nexcept OSError:\n    out['root_w'] = False\n"
            "out['shadow'] = os.path.exists('/etc/shadow') or os.path.exists('/etc/ssl/private')\n"
            "print(json.dumps(out))")
    p = subprocess.run(sandbox.command(tmp_path, [sys.executable, "-c", code], {"PATH": "/usr/bin:/bin"}),
                       capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(p.stdout) == {"spec": True, "repo": False, "uid": 65534, "net": False, "root_w": False,
                                      "shadow": False}, p.stderr
    assert (tmp_path / "mine").read_text() == "x"


def test_without_bubblewrap_the_grader_says_why_in_ran_as(monkeypatch):
    """Where bwrap is missing, the sandbox is off with the reason, and ran_as records the
    fallback (nobody where the grader is root)."""
    monkeypatch.setattr(sandbox, "_OK", [])
    monkeypatch.setattr(sandbox, "WHY_NOT", [])
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(cg, "_PREFIX", [["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]])
    monkeypatch.setattr(cg, "_PUBLIC", {})
    assert not sandbox.available() and "bubblewrap (bwrap) is not installed" in sandbox.WHY_NOT[0]
    said = cg.ran_as()
    assert "no sandbox (bubblewrap (bwrap) is not installed" in said
    assert said.startswith("nobody (uid 65534") if os.geteuid() == 0 else "the grader's own" in said


@pytest.mark.parametrize("x", LABS, ids=[x.name for x in LABS])
def test_autograder_holds_no_reference_no_judge_no_expected_value(built, x):
    """What the sandbox gets of the hidden tests (the autograder zip, which otter unpacks beside
    the submission): their runs, the harness, the integrity check and the inputs' values; no
    module of the package (no gradekit), no judge and no line of the code that made the inputs
    (lab 6's layout writer, lab 8's AU curves); the judges lie beside the zip."""
    import zipfile
    with zipfile.ZipFile(cb.autograder_zip(x)) as z:
        names = z.namelist()
        texts = {n: z.read(n).decode(errors="replace") for n in names}
    extra = [n for n in names if n.startswith("files/") and not re.fullmatch(
        r"files/gradeharness/(__init__\.py|integrity\.py|inputs/q[\w.]+\.json)", n)]
    assert not extra and not [n for n in names if "gradekit" in n], extra
    assert not [n for n, t in texts.items() if n.endswith(".py") and imports_package(t)]
    tests = hidden.hidden_tests(cb.master(x))
    assert tests and [h.key for h in hidden.judges(x)] == [h.key for h in tests]
    zipped = "\n".join(texts.values())
    # a line every run may hold (a loop over the inputs) is no leak where some test's run has it
    run_lines = {ln.strip() for h in tests for ln in h.run.splitlines()}
    for h in tests:
        if h.public:   # a public test is the student's to read; its twin is judged outside all the same
            continue
        for ln in (h.inputs + h.judge).splitlines():
            ln = ln.strip()
            if len(ln) > 25 and not ln.startswith("#") and ln not in run_lines:
                assert ln not in zipped and repr(ln)[1:-1] not in zipped, (h.key, ln)
    harness_nb = "".join("".join(c.source) for c in hidden.harness_notebook(cb.master(x)).cells)
    assert hidden.JUDGE_MARK not in harness_nb and "experiments" not in harness_nb.replace("experiments/", "")


def test_hidden_tests_are_split_in_three_parts():
    """A hidden test without its two markers, or whose run names the package, stops the build
    naming the test."""
    with pytest.raises(ValueError, match="q9.1: a hidden test has one line"):
        hidden.split("assert f(1) == 2\n", "q9.1")
    with pytest.raises(ValueError, match="its run .* names the package"):
        hidden.split(f"x = 1\n{hidden.RUN_MARK}\nimport experiments.host.cache\n{hidden.JUDGE_MARK}\npass\n", "q9.2")
    inputs, run, judge = hidden.split(f"x = 1\n{hidden.RUN_MARK}\n_rec['y'] = f(x)\n{hidden.JUDGE_MARK}\nassert _rec['y'] == 2\n")
    assert (inputs, run, judge) == ("x = 1\n", "_rec['y'] = f(x)\n", "assert _rec['y'] == 2\n")


def test_record_round_trip_keeps_values_exact():
    """What a run records comes back as it was: floats exactly (NaN too), bytes, arrays, frames
    with their index and dtypes, dicts with other keys than strings; an object JSON cannot hold
    comes back as its type and repr (a judge then fails on it)."""
    import numpy as np
    import pandas as pd
    frame = pd.DataFrame({"k": [1, 4], "ok": [True, False], "s": [0.1 + 0.2, float("nan")], "t": ["a", "b"]}).set_index("k")
    x = {"f": 1 / 3, "b": b"\x00\xff", "a": np.arange(6, dtype=np.int32).reshape(2, 3), "d": {3: [np.float32(0.1)]},
         "frame": frame, "series": frame["s"], "obj": object()}
    got = harness.decode(json.loads(json.dumps(harness.encode(x))))
    assert got["f"] == 1 / 3 and got["b"] == b"\x00\xff" and got["d"] == {3: [float(np.float32(0.1))]}
    assert got["a"].dtype == np.int32 and got["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    pd.testing.assert_frame_equal(got["frame"], frame)
    pd.testing.assert_series_equal(got["series"], frame["s"])
    assert got["obj"]["type"] == "object"


def test_judge_passes_fails_and_refuses_an_altered_record(tmp_path, monkeypatch):
    """A test's run (in the harness, as in the sandbox) records what the student's function
    gives; its judge passes or fails on it, and says why: the run raised, no record, a record
    written twice."""
    monkeypatch.setenv(harness.RECORD_ENV, str(tmp_path / "record.jsonl"))
    h = hidden.Hidden("q1.1", "q1", 2.0, "x = 21\n", "_rec['y'] = f(x)\n", "assert _rec['y'] == 2 * x, _rec['y']\n", ("x",))
    for name, f in (("good", lambda v: 2 * v), ("bad", lambda v: v + 1), ("raises", lambda v: 1 / 0)):
        monkeypatch.setenv(harness.RECORD_ENV, str(tmp_path / f"{name}.jsonl"))
        harness.run(h.key, {"f": f, "x": 21}, h.run)
    judged = {n: judge_one(h, load_record((tmp_path / f"{n}.jsonl").read_bytes()).get(h.key))
              for n in ("good", "bad", "raises")}
    assert judged["good"] == "" and "AssertionError: 22" in judged["bad"] and "ZeroDivisionError" in judged["raises"]
    assert "no record of this test" in judge_one(h, None)
    twice = (tmp_path / "good.jsonl").read_bytes() * 2
    assert "recorded more than once" in judge_one(h, load_record(twice)[h.key])


def test_judge_starts_from_inputs_kept_at_build(tmp_path, monkeypatch):
    """Inputs that hold the keep line are made once, at build: the judge takes the values it
    uses (a reference the run never gets) from the build and does not make the inputs again
    (here a file the inputs count, changed after the build, does not change the verdict), and
    judges with them as before; an input the judge uses that is not data stops the build."""
    src = tmp_path / "n.txt"
    src.write_text("abc")
    inputs = f"{hidden.KEEP_MARK}\nx = 21\n_want = 2 * x + len(open({str(src)!r}).read()) - 3\n"
    h = hidden.Hidden("q1.1", "q1", 2.0, inputs, "_rec['y'] = f(x)\n", "assert _rec['y'] == _want, (_rec['y'], _want)\n", ("x",))
    ns = hidden.inputs_namespace(h)
    kept = hidden.kept_data(h, ns)
    assert kept == {"_want": 42}   # the judge's names only: x is the run's (given), not kept
    h = dataclasses.replace(h, given=hidden.shipped_data(h, ns), kept=kept)
    src.write_text("abcdef")       # made again, the reference would be 45
    for name, f, ok in (("good", lambda v: 2 * v, True), ("bad", lambda v: v + 1, False)):
        monkeypatch.setenv(harness.RECORD_ENV, str(tmp_path / f"{name}.jsonl"))
        harness.run(h.key, {"f": f, "x": 21}, h.run)
        msg = judge_one(h, load_record((tmp_path / f"{name}.jsonl").read_bytes()).get(h.key))
        assert (msg == "") == ok, msg
    assert hidden.kept_data(dataclasses.replace(h, inputs=inputs.replace(hidden.KEEP_MARK, "# made again")), ns) is None
    bad = dataclasses.replace(h, inputs=f"{hidden.KEEP_MARK}\nimport math as m\n", judge="assert m.pi > 3\n")
    with pytest.raises(ValueError, match="judge uses the input m .*not data"):
        hidden.kept_data(bad, hidden.inputs_namespace(bad))
def test_witness_measures_and_answers_outside_and_keeps_it(tmp_path, monkeypatch):
    """The witness measures a file of the submission's folder (page-cache residency; the run gets
    a token, never the number), refuses one outside it, and answers a test's oracle (keeping
    every question)."""
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(3 * 4096))
    with Witness(tmp_path, {"q2.2": {"_ask_au": lambda g: 0.97 if g <= 3 else 0.6}}) as w:
        monkeypatch.setenv(harness.WITNESS_ENV, str(w.path))
        token = harness.resident(f)
        assert w.log[token][0] == str(f.resolve()) and w.log[token][2] == 3
        with pytest.raises(RuntimeError, match="not a file of the submission's folder"):
            harness.resident("/etc/hostname")
        harness._CURRENT.append("q2.2")
        try:
            assert [harness.ask("_ask_au", g) for g in (1, 4)] == [0.97, 0.6]
            with pytest.raises(RuntimeError, match="no oracle"):
                harness.ask("_ask_other", 1)
        finally:
            harness._CURRENT.pop()
    assert w.asked == {"q2.2": [["_ask_au", [1], 0.97], ["_ask_au", [4], 0.6]]}


# ---- integrity ------------------------------------------------------------------------------

def _main_ns(src: str) -> dict:
    ns = {"__name__": "__main__"}
    exec(compile(src, "<notebook>", "exec"), ns)  # noqa: S102 (a notebook's code, as otter runs it)
    return ns


def test_check_own_accepts_own_code_and_refuses_the_package():
    check_own(_main_ns("import os\ndef h(p):\n    return os.path.getsize(p)\ndef f(p):\n    return h(p)\n"), ["f"])
    with pytest.raises(AssertionError, match="h uses cache"):
        check_own(_main_ns("from experiments.host import cache\ndef h(p):\n    return cache.resident_pages(p)\n"
                           "def f(p):\n    return h(p)\n"), ["f"])
    with pytest.raises(AssertionError, match="f imports experiments.host.cache"):
        check_own(_main_ns("def f(p):\n    import experiments.host.cache as c\n    return c.resident_pages(p)\n"), ["f"])
    with pytest.raises(AssertionError, match="resident_pages is not a function written in the notebook"):
        check_own(_main_ns("from experiments.host.cache import resident_pages\n"), ["resident_pages"])
    with pytest.raises(AssertionError, match="g is not defined"):
        check_own(_main_ns(""), ["g"])
    assert imports_package("x = 1\nfrom experiments.host import cache") and not imports_package("import labkit  # experiments")


SAFE_SAVE = '''
import os
def save_checkpoint(directory, name, data):
    final = os.path.join(directory, name)
    tmp = final + f".tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    fd = os.open(directory, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    return final
'''
IN_PLACE_SAVE = '''
import os
def save_checkpoint(directory, name, data):
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)
    return os.path.join(directory, name)
'''


def test_crash_safe_checkpoint_test_kills_a_writer(tmp_path, monkeypatch):
    """Lab 4's hidden test forks a process that saves in a loop and SIGKILLs it at random
    instants (its run, in the harness, records what the checkpoint holds after each kill); its
    judge passes a save through a temporary file and rename, and finds an in-place one torn."""
    import numpy as np

    from experiments.course import labkit
    monkeypatch.setenv("DLIO_COURSE_DIR", str(tmp_path))
    x = lab("lab04")
    h = next(t for t in hidden.hidden_tests(cb.master(x)) if "SIGKILL" in t.inputs + t.run)
    given = {k: harness.decode(v) for k, v in hidden.shipped_data(h).items()}
    for src, ok in ((SAFE_SAVE, True), (IN_PLACE_SAVE, False)):
        ns = _main_ns(src)
        ns.update(given, labkit=labkit, np=np, LAB=x.name, _gh=harness)
        record = tmp_path / f"record-{ok}.jsonl"
        monkeypatch.setenv(harness.RECORD_ENV, str(record))
        with Witness(tmp_path) as w:   # it reads the checkpoint after each kill itself
            monkeypatch.setenv(harness.WITNESS_ENV, str(w.path))
            harness.run(h.key, ns, h.run)
        verdict = judge_one(h, load_record(record.read_bytes()).get(h.key), w)
        assert verdict == "" if ok else "torn" in verdict, verdict


# ---- grading: synthetic submissions ---------------------------------------------------------

def _replace_def(nb, name: str, new_src: str) -> None:
    """Replace the function or class ``name`` in the one code cell defining it by ``new_src``."""
    pat = re.compile(rf"^(def|class) {name}\b.*?(?=^\S|\Z)", re.MULTILINE | re.DOTALL)
    cells = [c for c in _code(nb) if pat.search(c.source)]
    assert len(cells) == 1, name
    cells[0].source = pat.sub(lambda m: new_src.strip() + "\n\n\n", cells[0].source, count=1)


def _replace_cell(nb, needle: str, new_src: str) -> None:
    cells = [c for c in _code(nb) if needle in c.source]
    assert len(cells) == 1, needle
    cells[0].source = new_src


def _type_answer(nb, x) -> None:
    pat = re.compile(rf"^{re.escape(x.answer)}( *)=(?!=).*$", re.MULTILINE)
    hits = [c for c in _code(nb) if pat.search(c.source)]
    assert len(hits) == 1, f"{x.name}: one cell computes {x.answer}"
    # the paper's number in place of the computed one; where this box computes exactly the
    # paper's number (lab 8's 8 accelerators can be), a neighbour: a typed number must be wrong
    # for its loss of points to be expected
    pv = x.paper_value
    hits[0].source = pat.sub(lambda m: f"{m.group(0)}\n{x.answer} = {pv} if {x.answer} != {pv} else {pv} + 1",
                             hits[0].source)


# the package's reference imported: the grader's static check, the same for every lab (lab 1's folder
# alone; lab 4's, the same check on save_checkpoint, cost the suite a grading)
REFERENCE = {
    "lab01-page-cache": [("evict", "from experiments.host import cache\n\ndef evict(path):\n    cache.evict([path], 'fadvise')")],
}
INVENTED = {
    "lab01-page-cache": ([("evict", "def evict(path):\n    pass"),
                          ("resident_fraction", "def resident_fraction(path):\n    return 0.0"),
                          ("cold_read", ("def cold_read(path, block, random=False, direct=False, seed=0):\n"
                                         "    n = os.path.getsize(path)\n"
                                         "    return {'bytes': n, 'seconds': 0.01, 'MBps': 400.0 if block > 4096 else 25.0}"))],
                         ("rows = []", ("table = pd.DataFrame([{'tier': t, 'pattern': p, 'mode': m, 'MBps': {'seq': 400.0, 'random': 25.0}[p],"
                                        " 'resident_after': 0.0, 'note': ''} for t in TIERS for p in ('seq', 'random')"
                                        " for m in ('buffered', 'direct')])"))),
    "lab04-burst-buffer": ([("save_checkpoint", "def save_checkpoint(directory, name, data):\n    return os.path.join(directory, name)"),
                            ("BurstBuffer", ("class BurstBuffer:\n    def __init__(self, fast, slow, keep):\n        pass\n"
                                             "    def save(self, step, data):\n        pass\n    def wait(self):\n        pass"))],
                           ("rows = []", ("saves = pd.DataFrame([{'target': t, 'checkpoint': i, 'warmup': i == 0, 'stall_s': s}"
                                          " for t, s in [('fast', 0.01), ('slow', 0.2)]"
                                          " + [(f'fast>slow keep={k}', 0.2 if k == 1 else 0.01) for k in P['keeps']]"
                                          " for i in range(P['checkpoints'])])"))),
    # labs 2 and 6: a pipeline that does not decode / a reader that reads nothing, and a table
    # typed in the paper's shape (full scaling to 2.3x, records 5x faster); only the grader's
    # re-run of the student's code on its own files can tell
    "lab02-tfdata-threads": ([("make_pipeline", ("def make_pipeline(files, threads, batch, image_size, decode=True):\n"
                                                 "    return tf.data.Dataset.from_tensor_slices(list(files)).batch(batch)"))],
                             ("rows = []", ("raw = pd.DataFrame([{'variant': v, 'threads': t, 'cache': c, 'repeat': i, 'warmup': i == 0,"
                                            " 'seconds': len(files) / r, 'images': len(files), 'images_per_s': r}"
                                            " for v in ('full', 'read_only') for t in P['threads'] for i in range(1 + P['runs'])"
                                            " for c in ('cold', 'warm')"
                                            " for r in [(100 if v == 'full' else 300) * {1: 1, 2: 1.6}.get(t, 2.3) * (2.3 if c == 'warm' else 1)]])"))),
    "lab06-formats-lmdb": ([("write_records", "def write_records(path, blobs):\n    open(path, 'wb').close()"),
                            ("open_records", "def open_records(path):\n    return os.open(path, os.O_RDONLY), []"),
                            ("read_record", "def read_record(fd, index, i):\n    return b''")],
                           ("rows = []", ("runs = pd.DataFrame([{'format': f, 'cache': c, 'repeat': r, 'seconds': len(blobs) / v,"
                                          " 'bytes': sum(map(len, blobs)), 'images_per_s': v, 'MBps': 0.0}"
                                          " for r in range(P['runs']) for f in ('files', 'records') for c in ('cold', 'warm')"
                                          " for v in [(5000 if f == 'records' else 1000) * (3 if c == 'warm' else 1)]])"))),
}
INVENTED_OTHERS = ("lab02-tfdata-threads", "lab06-formats-lmdb")
# lab 7's weighted_cosine taken from the grader's reference by a module name built at run time
# (gradekit's copy, as the autograder zip carried one, else the package's), the module dropped
# from sys.modules after each call; where neither loads, a guess. It got 10 / 10 while the zip
# carried gradekit: it must lose the points of the tests that judge weighted_cosine.
THIEF = ("lab07-tracing", "weighted_cosine", '''
def weighted_cosine(u, v, weights):
    import importlib, sys
    before = set(sys.modules)
    try:
        for top in ("".join(["grade", "kit"]), "".join(["exp", "eri", "ments"])):
            try:
                return float(importlib.import_module(top + ".trace.similarity").weighted_cosine(u, v, weights))
            except ImportError:
                pass
        return 0.5
    finally:
        for k in [k for k in sys.modules if k not in before]:
            del sys.modules[k]
''', ("q1.p1", "q1.2", "q2.1"))   # q1.p1: its public test, judged outside, asks weighted_cosine(v, v) == 1


# a module name no scan can read: the reference reached at run time (lab 1)
RUNTIME = [("evict", ("def evict(path):\n    import importlib\n"
                      "    m = importlib.import_module(''.join(['exp', 'eri', 'ments']) + '.cache')\n"
                      "    m.evict([path], 'fadvise')")),
           ("resident_fraction", ("def resident_fraction(path):\n    import importlib\n"
                                  "    m = importlib.import_module(''.join(['exp', 'eri', 'ments']) + '.cache')\n"
                                  "    r, n = m.resident_pages(path)\n    return r / n if n else None"))]
SNOOP_MARK = "SNOOP-RECORD "


def _snoop_cell(targets: dict[str, str], classmate: str, writes: list[str]) -> str:
    """A first cell that tries every read of ``targets`` ({what: path}) and every write of
    ``writes``, imports the package, lists the other graders' folders, then executes the
    classmate's code cells (their functions, if the read worked); it prints what it saw, one
    JSON line on the kernel's stderr (the grader keeps it in log.txt)."""
    return f'''import glob, json, os, sys
_seen = {{}}
for _what, _p in {targets!r}.items():
    try:
        _seen[_what] = "read %d bytes" % len(open(_p, "rb").read())
    except OSError as _e:
        _seen[_what] = "refused: " + type(_e).__name__
for _p in {writes!r}:
    try:
        open(_p, "w").write("x")
        _seen["write " + _p] = "written"
    except OSError as _e:
        _seen["write " + _p] = "refused: " + type(_e).__name__
try:
    __import__("".join(["exp", "eri", "ments"]))
    _seen["import"] = "imported"
except ImportError as _e:
    _seen["import"] = "refused: " + type(_e).__name__
_own = os.path.dirname(os.environ.get("DLIO_COURSE_DIR", "/nowhere"))
_seen["other graders"] = [_p for _p in glob.glob("/tmp/dlio-grade-*") if _p != _own]
try:
    import nbformat as _nbf
    for _c in _nbf.read({classmate!r}, 4).cells:
        if _c.cell_type == "code" and "def " in _c.source:
            exec(_c.source, globals())
    _seen["copied"] = True
except Exception as _e:
    _seen["copied"] = "refused: " + type(_e).__name__
print({SNOOP_MARK!r} + json.dumps(_seen), file=sys.__stderr__, flush=True)
'''


def _snoop_targets(x, root: Path) -> tuple[dict[str, str], list[str]]:
    """What the snooping submission of lab ``x`` tries to read and write, in the built course
    ``root`` (its class folder ``root/submissions/<lab>/``): {what: path}, [paths]."""
    folder, course = root / "submissions" / x.name, root / "course" / x.name
    return ({"classmate": str(folder / "solution.ipynb"), "master notebook": str(course / f"{x.name}.ipynb"),
             "repository": str(ROOT / "experiments" / "host" / "cache.py"),
             "autograder of the course": str(next((root / "course" / "dist" / x.name / "autograder").glob("*.zip")))},
            [str(folder / "snooped.txt"), str(ROOT / "snooped.txt"), str(course / "snooped.txt")])


def _synthetic_folder(x, folder: Path) -> dict[str, str]:
    """Write the synthetic submissions of lab ``x`` into ``folder`` (lab 1: the solution, the
    untouched notebook, the reference, invented rows, a typed number, a hang, a run-time thief,
    a snoop; lab 4: the solution, untouched, invented, typed), and the honest and tricked pair;
    returns {name: what it is}."""
    folder.mkdir(parents=True)
    def sol():
        return nbformat.read(cb.solution_notebook(x), 4)

    made = {}
    nbformat.write(sol(), folder / "solution.ipynb")
    made["solution"] = "full"
    shutil.copy(cb.student_notebook(x), folder / "untouched.ipynb")
    made["untouched"] = "zero"
    if x.name in REFERENCE:
        nb = sol()
        for name, src in REFERENCE[x.name]:
            _replace_def(nb, name, src)
        nbformat.write(nb, folder / "reference.ipynb")
        made["reference"] = "public only"
    nbformat.write(_invented(x), folder / "invented.ipynb")
    made["invented"] = "no hidden"
    nb = sol()
    _type_answer(nb, x)
    nbformat.write(nb, folder / "typed.ipynb")
    made["typed"] = "less"
    if x.name == SYNTHETIC[0]:   # the grader's time limit, the same for every lab (lab 1's folder alone)
        nb = sol()
        first = _code(nb)[0]
        first.source = "import time\ntime.sleep(100_000)\n" + first.source
        nbformat.write(nb, folder / "hang.ipynb")
        made["hang"] = "killed"
        nb = sol()
        for name, src in RUNTIME:
            _replace_def(nb, name, src)
        nbformat.write(nb, folder / "runtime.ipynb")
        made["runtime"] = "no hidden"
        nb = nbformat.read(cb.student_notebook(x), 4)
        targets, writes = _snoop_targets(x, folder.parent.parent)
        nb.cells.insert(0, nbformat.v4.new_code_cell(_snoop_cell(targets, targets["classmate"], writes)))
        nbformat.write(nb, folder / "snoop.ipynb")
        made["snoop"] = "refused"
    _trick_pair(x, folder, made)
    return made


OTHERS = [x for x in LABS if x.name not in SYNTHETIC]


# ---- tricks: each earns nothing over the same notebook without it -----------------------------
# A first cell that patches the clock (time.perf_counter at half speed), forges /proc's io
# counters (open() of /proc/self/io adds 8 MiB a read), patches otter's checker (every test
# passed, full points) and sends "end" at once for the spans named (before the work); per lab,
# any trick of its own. Every timed or counted test is now judged on the witness's numbers,
# every point outside the sandbox: the tricked notebook earns, test by test, what the same
# notebook without the cell earns.
TRICK_CELL = r"""
import builtins as _tb, io as _tio, sys as _tsys, time as _ttime
_applied = []
_real_pc = _ttime.perf_counter
_pc0 = _real_pc()
_ttime.perf_counter = lambda: _pc0 + (_real_pc() - _pc0) * 0.5
_applied.append("clock")
_real_open = _tb.open
def _forged_open(f, *a, **k):
    if str(f) in ("/proc/self/io", "/proc/thread-self/io"):
        with _real_open(f) as h:
            real = dict(l.split(": ") for l in h.read().splitlines() if l)
        _forged_open.n += 1
        return _tio.StringIO("".join(f"{k}: {int(v) + (_forged_open.n << 23)}\n" for k, v in real.items()))
    return _real_open(f, *a, **k)
_forged_open.n = 0
_tb.open = _forged_open
_applied.append("proc")
try:
    import otter.test_files.abstract_test as _oat
    _oat.TestFile.grade = property(lambda self: 1)
    _oat.TestFile.passed_all = property(lambda self: True)
    _oat.TestFile.passed_all_public = property(lambda self: True)
    _oat.TestCaseResult.passed = property(lambda self: True, lambda self, v: self.__dict__.__setitem__("passed", True))
    _applied.append("otter")
except Exception:
    pass
_EARLY = set(EARLY_LABELS)
try:
    import gradeharness as _G
    _real_start, _real_end, _ended = _G.start, _G.end, set()
    def _start(label, *a, **k):
        sid, nonce = _real_start(label, *a, **k)
        if label in _EARLY:   # "end" at once, before the work
            _real_end(sid, "")
            _ended.add(sid)
        return sid, nonce
    def _end(sid, digest=""):
        if sid not in _ended:
            _real_end(sid, digest)
    _G.start, _G.end = _start, _end
    _applied.append("early end")
except ImportError:
    pass
EXTRA
print("TRICKS-APPLIED", _applied, file=_tsys.__stderr__, flush=True)
"""
SAVE_NO_DIR_FSYNC = """
def save_checkpoint(directory, name, data):
    directory = os.fspath(directory)
    final = os.path.join(directory, name)
    tmp = os.path.join(directory, f".{name}.tmp-{os.getpid()}-{threading.get_ident()}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    return final
"""
# the same save, with a directory fsync that an os.fsync patched in the first cell makes a no-op:
# watched in the process, the order looked durable
SAVE_FAKE_DIR_FSYNC = SAVE_NO_DIR_FSYNC.replace("    return final", """    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return final""")
FAKE_FSYNC = """
import os as _tos, stat as _tstat
_real_fsync = _tos.fsync
def _fake_fsync(fd):
    if _tstat.S_ISDIR(_tos.fstat(fd).st_mode):
        return None
    return _real_fsync(fd)
_tos.fsync = _fake_fsync
_applied.append("fsync")
"""
OPEN_READS_ALL = """
def open_records(path):
    import struct
    fd = os.open(path, os.O_RDONLY)
    data = os.pread(fd, os.fstat(fd).st_size, 0)   # the whole file, for its index
    at, n = struct.unpack("<QQ", data[-16:])
    return fd, [struct.unpack_from("<QQ", data, at + 16 * i) for i in range(n)]
"""
# per lab: the honest code's fault [(name, def)] and the tricked one's ([] : the same), the
# spans its "end" is sent early for (those the honest code fails), and a trick of its own
TRICKS = {
    "lab01-page-cache": ([("evict", "def evict(path):\n    pass")], None, ("buffered random=False", "buffered random=True"), ""),
    "lab03-prefetch": ([("prefetch", "def prefetch(items, depth):\n    yield from items")], None, ("overlap",), ""),
    "lab04-burst-buffer": ([("save_checkpoint", SAVE_NO_DIR_FSYNC)], [("save_checkpoint", SAVE_FAKE_DIR_FSYNC)], ("save",), FAKE_FSYNC),
    "lab06-formats-lmdb": ([("open_records", OPEN_READS_ALL)], None, ("open",), ""),
}
# the other labs: the honest code is the solution with no prediction (it loses exactly that point)


def _no_prediction(nb) -> None:
    cells = [c for c in _code(nb) if re.search(r"^prediction\s*=", c.source, re.MULTILINE)]
    assert cells, "a lab asks for a prediction"
    cells[-1].source += "\nprediction = ''\n"


def _trick_pair(x, folder: Path, made: dict) -> None:
    """Write ``honest.ipynb`` (where the lab has a fault of its own) and ``tricked.ipynb`` (the
    same with :data:`TRICK_CELL`) into ``folder``."""
    fault, tricked_fault, early, extra = TRICKS.get(x.name, ([], None, (), ""))
    for name, defs, cell in (("honest", fault, None),
                             ("tricked", fault if tricked_fault is None else tricked_fault,
                              TRICK_CELL.replace("EARLY_LABELS", repr(tuple(early))).replace("EXTRA", extra))):
        if name == "honest" and not fault:
            continue
        nb = nbformat.read(cb.solution_notebook(x), 4)
        _no_prediction(nb)
        for n, src in defs:
            _replace_def(nb, n, src)
        if cell:
            nb.cells.insert(1, nbformat.v4.new_code_cell(cell))
        nbformat.write(nb, folder / f"{name}.ipynb")
        made[name] = "tricks earn nothing" if cell else "honest"


def _invented(x):
    nb = nbformat.read(cb.solution_notebook(x), 4)
    defs, (needle, table) = INVENTED[x.name]
    for name, src in defs:
        _replace_def(nb, name, src)
    _replace_cell(nb, needle, table)
    return nb


def _solution_and_invented(x, folder: Path) -> dict[str, str]:
    """The solution (every lab's must earn full points) and, for the labs of INVENTED_OTHERS,
    invented rows. The typed-in number is tried on the two SYNTHETIC labs only: each lab's
    hidden tests re-measure on the grader's own files, so a typed number fails them all alike,
    and six more gradings would cost the suite a minute."""
    folder.mkdir(parents=True)
    shutil.copy(cb.solution_notebook(x), folder / "solution.ipynb")
    made = {"solution": "full"}
    if x.name in INVENTED_OTHERS:
        nbformat.write(_invented(x), folder / "invented.ipynb")
        made["invented"] = "no hidden"
    if x.name == THIEF[0]:
        nb = nbformat.read(cb.solution_notebook(x), 4)
        _replace_def(nb, THIEF[1], THIEF[2])
        nbformat.write(nb, folder / "thief.ipynb")
        made["thief"] = "loses what it delegated"
    _trick_pair(x, folder, made)
    return made


def grade_class(root: Path) -> tuple[dict, list]:
    """Every grading command of this module, run at once in ``root`` (a built course): each
    synthetic folder (two at a time, so that a hang waits out its limit beside the others'
    work) and, one lab after another, the other labs' solution (and invented rows for two of
    them). Returns ({lab: (what each submission is, grade_many's result)}, [(lab, error)])."""
    out, errors = {}, []

    def run(names):
        for name in names:
            x = lab(name)
            folder = root / "submissions" / x.name
            try:
                if name in SYNTHETIC:
                    made = _synthetic_folder(x, folder)
                    out[name] = (made, cg.grade_many(x.name, folder, root / "grades" / x.name,
                                                     timeout_s=HANG_LIMIT_S, jobs=2))
                else:
                    made = _solution_and_invented(x, folder)
                    out[name] = (made, cg.grade_many(x.name, folder, root / "grades" / x.name, jobs=2))
            except Exception as e:  # noqa: BLE001 (re-raised in the tests, in pytest's thread)
                errors.append((name, e))

    ts = [threading.Thread(target=run, args=(names,)) for names in ([SYNTHETIC[0]], [SYNTHETIC[1]], [x.name for x in OTHERS])]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out, errors


@pytest.fixture(scope="module")
def graded(built, course_class):
    """:func:`grade_class`'s result: from the background process the whole suite starts at
    its start (``course_class``, conftest.py: the unit tests go on beside it), or computed here
    in ``built`` when this module runs alone."""
    if course_class is None:
        return grade_class(built)
    data = course_class.result()
    out = {k: (made, {**g, "dir": Path(g["dir"])}) for k, (made, g) in data["out"].items()}
    return out, [(n, RuntimeError(e)) for n, e in data["errors"]]


def _result(graded, name):
    out, errors = graded
    for n, e in errors:
        if n == name:
            raise e
    return out[name]


@pytest.mark.smoke
@pytest.mark.parametrize("name", SYNTHETIC)
def test_a_folder_of_submissions_grades_in_one_command(graded, name):
    made, g = _result(graded, name)
    q = g["questions"]
    auto = [n for n, v in q.items() if not v["manual"]]
    public = {n: q[n]["public"] for n in auto}
    top = sum(q[n]["points"] for n in auto)
    rows = {r["submission"]: r for r in g["rows"]}
    assert set(rows) == set(made)
    with open(g["dir"] / "grades.csv") as f:
        csv_rows = {r["submission"]: r for r in csv.DictReader(f)}
    assert set(csv_rows) == set(made) and float(csv_rows["solution"]["total"]) == top
    assert list(next(iter(csv_rows.values()))) == ["submission", *auto, "total", "max", "seconds", "error", "ran_as"]
    # who the submissions ran as: nobody in a bubblewrap sandbox; where bubblewrap cannot run,
    # nobody where the grader is root, else the grader's own user, and the row says why
    if sandbox.available():
        want = "nobody (uid 65534) in a bubblewrap sandbox"
    else:
        want = "nobody (uid 65534" if os.geteuid() == 0 else f"(uid {os.geteuid()}, the grader's own)"
    assert all(want in r["ran_as"] for r in csv_rows.values()), {r["ran_as"] for r in csv_rows.values()}

    assert rows["solution"]["total"] == top and not rows["solution"]["error"], rows["solution"]
    assert rows["untouched"]["total"] == 0, rows["untouched"]
    # the package's reference called: no hidden points, and the row says why
    if "reference" in made:
        assert all(rows["reference"][n] <= public[n] for n in auto) and "integrity" in rows["reference"]["error"]
    # a faked mechanism with a typed-in table: no hidden point (the grader re-measures on its own files)
    assert all(rows["invented"][n] <= public[n] for n in auto), rows["invented"]
    assert rows["typed"]["total"] < top, rows["typed"]
    if "hang" in made:
        assert rows["hang"]["total"] == 0 and "time limit" in rows["hang"]["error"], rows["hang"]
        assert HANG_LIMIT_S <= rows["hang"]["seconds"] < HANG_LIMIT_S + 60
    if "runtime" in made:   # the reference behind a name built at run time: no hidden point
        assert all(rows["runtime"][n] <= public[n] for n in auto), rows["runtime"]
    if "snoop" in made:
        _assert_snoop_refused(g["dir"], rows["snoop"], lab(name))

    answers = g["dir"] / "answers"
    manual = [n for n, v in q.items() if v["manual"]]
    assert manual and sorted(p.stem for p in answers.glob("*.md")) == sorted(["prediction", *manual])
    text = (answers / f"{manual[-1]}.md").read_text()
    assert all(f"## {s}" in text for s in made) and "Rubric answer" in text   # the solution's answer
    assert "Autograded score" in (g["dir"] / "solution" / "feedback.md").read_text()


def _assert_snoop_refused(out: Path, row: dict, x) -> None:
    """The snooping submission's own record (its log): every read, write and import refused,
    no other grader's folder seen; nothing written where it tried; none of the classmate's points."""
    if not sandbox.available():
        pytest.skip(f"no sandbox here ({sandbox.WHY_NOT[0]}): a submission sees what nobody may read")
    lines = [ln for ln in (out / "snoop" / "log.txt").read_text().splitlines() if ln.startswith(SNOOP_MARK)]
    assert len(lines) == 1, (out / "snoop" / "log.txt").read_text()[-3000:]
    seen = json.loads(lines[0][len(SNOOP_MARK):])
    tried = {k: v for k, v in seen.items() if k != "other graders"}
    assert len(tried) >= 9 and all(str(v).startswith("refused") for v in tried.values()), seen
    assert seen["other graders"] == [], seen
    assert row["total"] == 0, row
    _, writes = _snoop_targets(x, out.parent.parent)
    assert not [w for w in writes if Path(w).exists()], writes


def _failure(output: str) -> str:
    """The part of a test's doctest output that says what failed (its first failed example and
    what came of it; the output's tail otherwise): the tail alone showed only passing lines."""
    i = output.find("Failed example:")
    return output[max(0, i - 200):i + 2500] if i >= 0 else output[-3000:]


@pytest.mark.smoke
@pytest.mark.parametrize("x", OTHERS, ids=lambda x: x.name)
def test_solution_gets_full_points(graded, x):
    """One command grades the lab's solution (and, for two labs, invented rows; for lab 7, a
    run-time thief of the reference its hidden tests compare with)."""
    _, g = _result(graded, x.name)
    rows = {r["submission"]: r for r in g["rows"]}
    failed = {n: _failure(q["output"]) for n, q in rows["solution"]["questions"].items() if q["score"] < q["max_score"]}
    assert rows["solution"]["max"] > 0 and rows["solution"]["total"] == rows["solution"]["max"], failed
    if sandbox.available():   # full points without the package: the sandbox cannot import it
        assert "bubblewrap sandbox" in rows["solution"]["ran_as"], rows["solution"]["ran_as"]
    if "invented" in rows:   # a faked mechanism and a typed table: no hidden point on any question
        q = g["questions"]
        assert all(rows["invented"][n] <= q[n]["public"] for n in q if not q[n]["manual"]), rows["invented"]
    if "thief" in rows:   # the reference is not in the sandbox: the delegated function's hidden tests fail
        judged = {v["key"]: v for v in json.loads((g["dir"] / "thief" / "judged.json").read_text())}
        lost = {k for k, v in judged.items() if v["earned"] < v["points"]}
        assert lost == set(THIEF[3]), {k: v["message"][:300] for k, v in judged.items()}
        assert rows["thief"]["total"] <= rows["solution"]["total"] - sum(judged[k]["points"] for k in THIEF[3])
    assert any(v["manual"] for v in g["questions"].values()), "each lab has a written answer graded with its rubric"


# timed tests the tricks do not aim at, whose outcome on a loaded 2-core box is the box's (the
# solution's test asserts them): left out of the test-by-test comparison
# tests of the notebook's own measurement, which the patched clock distorts: lab 8's emulated runs
# then beat their own compute (AU > 1), which the judge refuses; the trick can only lose there
CLOCKED = {"lab08-accelerators": {"q3.1"}}
NOISY = {"lab01-page-cache": {"q3.1"}, "lab02-tfdata-threads": {"q2.1"}, "lab03-prefetch": {"q2.p1", "q2.2"},
         "lab04-burst-buffer": {"q3.1"}, "lab06-formats-lmdb": {"q2.1"}}


@pytest.mark.smoke
@pytest.mark.parametrize("x", LABS, ids=lambda x: x.name)
def test_tricks_earn_nothing_over_the_same_code_without_them(graded, x):
    """A notebook that patches the clock, forges /proc's counters, patches otter's checker,
    sends "end" before the work of the spans its code fails (and, in lab 4, makes os.fsync of a
    directory a no-op) earns no test's point that the same notebook without these tricks does
    not earn, and exactly its points on every test but those of the notebook's own measurement
    that the patched clock distorts (where it can only lose): every point is judged outside the sandbox, every timed or counted one on the
    witness's numbers. (Without a fault of its own, the honest notebook is the solution with no
    prediction: it loses that point alone.)"""
    made, g = _result(graded, x.name)

    def earned(sub):
        return {v["key"]: v["earned"] for v in json.loads((g["dir"] / sub / "judged.json").read_text())}
    tricked = earned("tricked")
    honest = earned("honest") if "honest" in made else {**earned("solution"), "prediction.p1": 0.0}
    noisy = NOISY.get(x.name, set())
    assert set(tricked) == set(honest) and all(tricked[k] <= honest[k] for k in honest if k not in noisy), (tricked, honest)
    skip = noisy | CLOCKED.get(x.name, set())
    assert {k: v for k, v in tricked.items() if k not in skip} == {k: v for k, v in honest.items() if k not in skip}
    assert tricked["prediction.p1"] == 0.0
    log = (g["dir"] / "tricked" / "log.txt").read_text(errors="replace")
    m = re.search(r"TRICKS-APPLIED (\[.*\])", log)
    assert m, log[-2000:]
    applied = set(eval(m.group(1)))   # noqa: S307 (our own notebook's line)
    assert {"clock", "proc", "otter", "early end"} <= applied, applied
    assert "fsync" in applied or x.name != "lab04-burst-buffer"
    if x.name in TRICKS:   # the honest fault costs points: the tricks had something to earn
        sol = earned("solution")
        assert sum(v for k, v in honest.items() if k not in skip) < sum(v for k, v in sol.items() if k not in skip) - 1
    # otter's own count, in the kernel, was fooled (the prediction's public test passed): it counts for nothing
    otter = {t.get("name"): t for t in json.loads((g["dir"] / "tricked" / "results.json").read_text())["tests"]}
    assert otter["prediction"]["score"] == otter["prediction"]["max_score"] > 0, otter.get("prediction")


# ---- cheap checks -----------------------------------------------------------------------------

def test_bad_lab_name_stops_with_the_allowed_names():
    with pytest.raises(ValueError, match=r"LAB = 'lab99'; allowed: lab01"):
        lab("lab99")


def test_grade_refuses_a_missing_submission_and_bad_limits(tmp_path):
    with pytest.raises(ValueError, match="SUB = "):
        cg.grade("lab01", tmp_path / "nope.ipynb")
    with pytest.raises(ValueError, match="a folder with no .ipynb"):
        cg.grade_many("lab01", tmp_path)
    (tmp_path / "a.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="timeout = 0"):
        cg.grade_many("lab01", tmp_path, timeout_s=0)


def test_questions_split_public_and_hidden_points():
    q = cg.questions(cb.master(lab("lab01")))
    assert q["q1"] == {"points": 3.0, "manual": False, "public": 1.0, "hidden": 2.0}
    assert q["q4"]["manual"] and q["prediction"]["hidden"] == 0


def test_labkit_profile_and_helpers_check_their_input(tmp_path, monkeypatch):
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
    r = labkit.emulate(f, 2, 4096, 0.001, 5)
    assert r["run_s"] >= 5 * 0.001 and r["steps"] == 5 and r["bytes"] == 2 * 5 * 4096
    with labkit.timer() as t:
        pass
    assert t.seconds >= 0


def test_course_bench_times_the_default_profile_unless_told(monkeypatch, tmp_path):
    """`make course-bench` fills the students' time table: the solution on the default profile, not
    the smoke profile the build and the grader default to (it measured smoke when otter_env ran
    first), and the grading on the profile `make grade` uses (smoke), not the students' one."""
    from experiments.course import bench
    from experiments.course.labkit import PROFILE_ENV

    for var in (PROFILE_ENV, "PYTHONPATH"):   # recorded, so what measure() sets is undone after
        monkeypatch.setenv(var, os.environ.get(var, ""))
    monkeypatch.delenv(PROFILE_ENV)
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    seen = []
    monkeypatch.setattr(bench, "autograder_zip", lambda lab: tmp_path)
    monkeypatch.setattr(bench, "run_solution", lambda lab: (seen.append(os.environ[PROFILE_ENV]), (1.0, "1"))[1])
    monkeypatch.setattr(bench, "grade", lambda *a, **k: (seen.append(os.environ[PROFILE_ENV]), {"score": 1, "max_score": 1})[1])
    monkeypatch.setattr(bench, "solution_notebook", lambda lab: tmp_path / "x.ipynb")
    got = bench.measure(LABS[:1])
    assert seen == ["default", "smoke"] and list(got["profile"]) == ["default"]
    assert list(got["grade_profile"]) == ["smoke"] and "grading: `make grade` of that solution on the smoke" in bench.markdown(got)


def _grade_class_in(result: Path) -> None:
    """The background grading (``python tests/test_course.py --grade-class RESULT``): the course
    built in a folder of its own, as ``built`` does, :func:`grade_class` run there, and its
    result written to ``RESULT`` (JSON, written whole or not at all); the folder stays for the
    tests to read (conftest removes it when the session ends)."""
    tmp = build_course("dlio-course-class-")
    # the folder, once built: the bundle tests read it (conftest.py's ``built_root``), and the
    # session's end removes it
    marker = result.with_suffix(".built")
    marker.with_suffix(".partial-built").write_text(str(tmp))
    marker.with_suffix(".partial-built").rename(marker)
    out, errors = grade_class(tmp)
    data = {"root": str(tmp), "out": {k: [made, {**g, "dir": str(g["dir"])}] for k, (made, g) in out.items()},
            "errors": [[n, f"{type(e).__name__}: {e}"] for n, e in errors]}
    part = result.with_suffix(".partial")
    part.write_text(json.dumps(data, default=str))
    part.rename(result)


if __name__ == "__main__" and sys.argv[1:2] == ["--grade-class"]:
    _grade_class_in(Path(sys.argv[2]))
