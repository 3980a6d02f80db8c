"""``make grade LAB=... SUB=...``: grade one submitted notebook, or a folder of them, without Docker.

Each submission is graded by ``otter run`` (otter's non-containerized grader) with the lab's
autograder zip, in a process of its own, in a bubblewrap sandbox of its own
(:mod:`experiments.course.sandbox`: its own folder with its copy of the notebook, ``labkit.py``
and the zip; the grading environment read-only *without* the package ``experiments``; private
``/tmp``, ``/dev/shm`` and ``/proc``; no network; as ``nobody``), with a time limit
(``--timeout``, default :data:`TIMEOUT_S`; every process of it is killed at it); up to
``--jobs`` (default: the cores) at a time. Where bubblewrap cannot run, it says so once and
runs each submission as before: its own scratch folder (``DLIO_COURSE_DIR``, its own
``/dev/shm`` folder, its own ``HOME``), as the unprivileged user ``nobody`` when the grader runs
as root (with a world-readable copy of the interpreter, made once under
``/var/lib/dlio-grade/python`` or ``$DLIO_GRADE_PYTHON_DIR``, where the interpreter lives under a
folder nobody cannot enter, as pyenv's under /root). The notebook is
re-executed top to bottom (smoke profile unless ``DLIO_COURSE_PROFILE`` says otherwise), each
question's public tests and the runs of its hidden tests after its cell: a run calls the
student's functions on the grader's inputs and records what they gave (:mod:`.harness`), the
witness (:mod:`.witness`) measuring and answering for it from outside. Then, outside the
sandbox, each hidden test's judge compares the record with the package's references
(:mod:`.judge`): the sandbox never holds a reference or an expected value. A hang, a crash or a
notebook that does not run is a row with its reason, never a stopped run.

A static integrity check runs too: a submission whose code imports ``experiments`` (the package
holding the graded references) keeps only its public points; its row says so. (It is off, with a
message, for a lab whose own student notebook still imports the package.)

Writes, in the output folder it prints (default ``explore/course/grades/<lab>/<SUB's name>/``):

- ``grades.csv``: one row per submission: points per question, ``total``, ``max``,
  ``seconds`` (wall), ``error`` (empty, or why points are missing: timeout, crash, integrity),
  ``ran_as`` (the user and uid the submission ran as, and in what: the sandbox, or why none);
- ``answers/<question>.md``: the written answers (manual questions and the prediction),
  collected across submissions, one file per question, to grade with the lab's ``rubric.md``;
- ``<submission>/feedback.md`` (per question points and what failed: the public tests' output
  in the kernel, each test's verdict judged outside), ``results.json`` (otter's run of the public
  tests in the kernel: the student's feedback, no points), ``record.jsonl`` (what the runs
  recorded), ``witness.json`` (what the witness saw), ``judged.json`` (every test's verdict,
  public twins and hidden tests: the points) and ``log.txt``.

    python -m experiments.course.grade LAB SUBMISSION.ipynb|FOLDER [--timeout S] [--jobs N] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from ..settings import paths
from . import Lab, sandbox
from . import lab as find_lab
from . import KIT_ENV, autograder_zip, kit_dir, master, student_notebook
from .harness import RECORD_ENV, WITNESS_ENV
from .hidden import judges, quiet_imports
from .integrity import imports_package
from .judge import judge_all, load_record
from .labkit import DIR_ENV, PROFILE_ENV, mem_root
from .witness import SOCKET_NAME, WitnessProcess

TIMEOUT_S = 600          # per submission; a smoke-profile lab grades in well under a minute
UNPRIVILEGED = ("nobody", "nogroup")


# ---- what the master notebook says about each question ------------------------------------

def questions(master_nb: Path) -> dict[str, dict]:
    """``{name: {points, public, hidden, manual}}`` for each question of a master notebook:
    ``public``/``hidden`` are the points of its public and hidden test cases (a case without
    ``points`` gets an equal share of the question's)."""
    out: dict[str, dict] = {}
    cur, in_tests = None, False
    for c in nbformat.read(master_nb, 4).cells:
        src = "".join(c.source)
        if c.cell_type == "raw":
            s = src.strip()
            if s.startswith("# BEGIN QUESTION"):
                name = re.search(r"^name:\s*(\S+)", src, re.MULTILINE)
                pts = re.search(r"^points:\s*([\d.]+)", src, re.MULTILINE)
                cur = name.group(1) if name else f"q{len(out) + 1}"
                out[cur] = {"points": float(pts.group(1)) if pts else 0.0, "manual":
                            bool(re.search(r"^manual:\s*true", src, re.MULTILINE)), "cases": []}
            elif s == "# BEGIN TESTS":
                in_tests = True
            elif s == "# END TESTS":
                in_tests = False
            elif s == "# END QUESTION":
                cur = None
            continue
        if in_tests and cur and c.cell_type == "code":
            pts = re.search(r"^points:\s*([\d.]+)", src, re.MULTILINE)
            out[cur]["cases"].append((float(pts.group(1)) if pts else None,
                                      bool(re.search(r"^hidden:\s*true", src, re.MULTILINE))))
    for q in out.values():
        cases = q.pop("cases")
        given = sum(p for p, _ in cases if p is not None)
        free = [1 for p, _ in cases if p is None]
        share = (q["points"] - given) / len(free) if free else 0.0
        q["public"] = sum(share if p is None else p for p, h in cases if not h)
        q["hidden"] = sum(share if p is None else p for p, h in cases if h)
    return out


# ---- what a submission holds ------------------------------------------------------------------

def code_of(nb_path: Path) -> str:
    """All the code cells of a notebook, joined (what the static integrity check reads)."""
    return "\n".join("".join(c.source) for c in nbformat.read(nb_path, 4).cells if c.cell_type == "code")


def written_answers(nb_path: Path, manual: list[str]) -> dict[str, str]:
    """The written answers of a submission: the k-th ``<!-- BEGIN QUESTION -->`` block of the
    student notebook is the k-th manual question of the master; the ``prediction = ...`` code
    cell(s) under ``prediction``."""
    out: dict[str, str] = {}
    blocks, cur = [], None
    for c in nbformat.read(nb_path, 4).cells:
        src = "".join(c.source)
        if c.cell_type == "code" and re.search(r"^prediction\s*=", src, re.MULTILINE):
            out["prediction"] = (out.get("prediction", "") + "\n" + src).strip()
        # otter puts BEGIN at the top of the answer's first cell and END at the top of the cell
        # after its last (or at the end of the last): the cells in between are the answer
        if cur is not None and src.lstrip().startswith("<!-- END QUESTION -->"):
            blocks.append(cur)
            cur = None
        if "<!-- BEGIN QUESTION -->" in src:
            cur = []
        if cur is not None:
            if c.cell_type == "markdown":
                cur.append(src.replace("<!-- BEGIN QUESTION -->", "").replace("<!-- END QUESTION -->", "").strip())
            if "<!-- END QUESTION -->" in src:
                blocks.append(cur)
                cur = None
    for name, cells in zip(manual, blocks):
        out[name] = "\n\n".join(x for x in cells if x) or "(no answer)"
    return out


# ---- one submission -------------------------------------------------------------------------

_PREFIX: list[list[str]] = []
_PREFIX_LOCK = threading.Lock()


def _unprivileged_prefix() -> list[str]:
    """The command prefix that runs a submission unprivileged when this process is root:
    ``setpriv`` to ``nobody``. Where ``nobody`` cannot run this Python (an interpreter under a
    private home, as pyenv's in /root), the grader first builds a world-readable copy of the
    interpreter (:func:`public_python`) and runs that; if even the copy fails, root without any
    capability (no DAC override, no kill of other users' processes, no new privileges), said
    once on stderr and in grades.csv's ``ran_as``. Empty when not root."""
    if os.geteuid() != 0:
        return []
    with _PREFIX_LOCK:
        if not _PREFIX:
            _PREFIX.append(_probe_prefix())
    return _PREFIX[0]


_PUBLIC: dict[str, str] = {}     # env additions for the public copy, when used
PUBLIC_ENV = "DLIO_GRADE_PYTHON_DIR"   # where the world-readable interpreter copy goes


def _can_run(user: list[str], python: str, env: dict) -> subprocess.CompletedProcess:
    # the probe starts a second interpreter as otter does for the kernel: a first exec may pass
    # where a nested one is refused (a private home on the interpreter's path)
    code = ("import subprocess, sys, experiments.course.grade, otter, nbformat; "
            "subprocess.run([sys.executable, '-c', 'import ipykernel'], check=True)")
    return subprocess.run([*user, python, "-c", code], capture_output=True, cwd="/",
                          env=dict(env, HOME="/"), check=False)


def _private_ancestor(path: Path) -> Path | None:
    """The first folder on ``path``'s way from / that others cannot enter, else None."""
    for d in [*reversed(path.parents)]:
        if not os.stat(d).st_mode & 0o001:
            return d
    return None


def public_python(base: Path, dest_root: Path) -> Path:
    """A copy of the interpreter installed at ``base`` (``sys.base_prefix``) under ``dest_root``,
    readable and runnable by every user and writable by root only: ``bin/python3.X``, its shared
    library and its standard library (not its own site-packages or test suite: the project's
    virtual environment does not use them). Beside it, a virtual environment whose
    ``site-packages`` is this one's (a symbolic link), so that the copy imports the same
    packages. Made once; returns the virtual environment's ``bin/python``."""
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    v = sys.version.split()[0]
    tag = re.sub(r"[^\w.-]+", "_", v if base.name == v else f"{base.name}-{v}")   # pyenv names the folder by version
    root = dest_root / tag
    venv = root / "venv"
    py = venv / "bin" / "python"
    if py.exists():
        _check_root_owned(root)
        return py
    dest_root.mkdir(parents=True, exist_ok=True, mode=0o755)
    _check_root_owned(dest_root)
    tmp = Path(f"{root}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    interp = tmp / "interp"
    (interp / "bin").mkdir(parents=True)
    shutil.copy2(base / "bin" / ver, interp / "bin" / ver)
    (interp / "lib").mkdir()
    for so in (base / "lib").glob("libpython*"):
        shutil.copy2(so, interp / "lib" / so.name, follow_symlinks=False)
    shutil.copytree(base / "lib" / ver, interp / "lib" / ver, symlinks=True,
                    ignore=lambda d, names: [n for n in names if Path(d) == base / "lib" / ver
                                             and n in ("site-packages", "test", "idlelib", "tkinter")])
    site = Path(sys.prefix) / "lib" / ver / "site-packages"
    (tmp / "venv" / "bin").mkdir(parents=True)
    (tmp / "venv" / "lib" / ver).mkdir(parents=True)
    os.symlink(site, tmp / "venv" / "lib" / ver / "site-packages")
    for name in ("python", "python3", ver):   # the kernel may be started by any of these names
        os.symlink(root / "interp" / "bin" / ver, tmp / "venv" / "bin" / name)
    (tmp / "venv" / "pyvenv.cfg").write_text(f"home = {root / 'interp' / 'bin'}\n"
                                             "include-system-site-packages = false\n"
                                             f"version = {sys.version.split()[0]}\n")
    for p in [tmp, *tmp.rglob("*")]:
        if not p.is_symlink():
            os.chmod(p, 0o755 if p.is_dir() or os.access(p, os.X_OK) else 0o644)
    os.replace(tmp, root)
    return py


def _check_root_owned(d: Path) -> None:
    st = os.stat(d)
    if st.st_uid != 0 or st.st_mode & 0o022:
        raise RuntimeError(f"{d} is not root's alone (owner uid {st.st_uid}, mode {st.st_mode & 0o777:o}): "
                           f"refusing to run submissions with an interpreter someone else could change; "
                           f"remove it or set {PUBLIC_ENV}")


def _probe_prefix() -> list[str]:
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise RuntimeError("the grader runs as root and setpriv (util-linux) is missing: it would run "
                           "student code as root; install util-linux or grade as an ordinary user")
    user = [setpriv, f"--reuid={UNPRIVILEGED[0]}", f"--regid={UNPRIVILEGED[1]}", "--clear-groups"]
    probe = _can_run(user, sys.executable, dict(os.environ))
    if probe.returncode == 0:
        return user
    why = (probe.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"])[0]
    private = _private_ancestor(Path(sys.base_prefix))
    site_private = _private_ancestor(Path(sys.prefix))
    if private is not None and site_private is None:
        # the interpreter alone lies under a private folder (pyenv in /root): a public copy of
        # it, not a wider mode on that folder
        dest = Path(os.environ.get(PUBLIC_ENV, "/var/lib/dlio-grade/python"))
        try:
            py = public_python(Path(sys.base_prefix), dest)
            env = {"LD_LIBRARY_PATH": os.pathsep.join(x for x in (str(py.parent.parent.parent / "interp" / "lib"),
                                                                    os.environ.get("LD_LIBRARY_PATH", "")) if x)}
            probe = _can_run(user, str(py), dict(os.environ, **env))
            if probe.returncode == 0:
                _PUBLIC.update(env, python=str(py))
                print(f"grade: {UNPRIVILEGED[0]} cannot enter {private}, where this Python lives: submissions "
                      f"run as {UNPRIVILEGED[0]} with a world-readable copy of the interpreter, {py}", file=sys.stderr)
                return user
            why = (probe.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"])[0]
        except (OSError, RuntimeError) as e:
            why = str(e)
    print(f"grade: {UNPRIVILEGED[0]} cannot run {sys.executable} with this package ({why}); submissions "
          "run as root without capabilities instead (install the environment where nobody can read it "
          "to run them as nobody)", file=sys.stderr)
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]


def ran_as() -> str:
    """Who a submission runs as, and in what, in words (grades.csv's ``ran_as``)."""
    if sandbox.available():
        import pwd
        who = (f"{UNPRIVILEGED[0]} (uid {sandbox.UID})" if os.geteuid() == 0
               else f"{pwd.getpwuid(os.geteuid()).pw_name} (uid {os.geteuid()}, the grader's own)")
        return (f"{who} in a bubblewrap sandbox: its own folder, the grading environment read-only "
                "without experiments, no network")
    return f"{_ran_as_plain()}; no sandbox ({sandbox.WHY_NOT[0]})"


def _ran_as_plain() -> str:
    prefix = _unprivileged_prefix()
    if not prefix:
        import pwd
        return f"{pwd.getpwuid(os.geteuid()).pw_name} (uid {os.geteuid()}, the grader's own)"
    if f"--reuid={UNPRIVILEGED[0]}" in prefix:
        import pwd
        via = f", interpreter copy {_PUBLIC['python']}" if _PUBLIC else ""
        return f"{UNPRIVILEGED[0]} (uid {pwd.getpwnam(UNPRIVILEGED[0]).pw_uid}{via})"
    return "root without capabilities (uid 0)"


def _chown_tree(d: Path) -> None:
    import grp
    import pwd
    uid, gid = pwd.getpwnam(UNPRIVILEGED[0]).pw_uid, grp.getgrnam(UNPRIVILEGED[1]).gr_gid
    for p in [d, *d.rglob("*")]:
        os.chown(p, uid, gid, follow_symlinks=False)


RECORD = "record.jsonl"   # the harness's record, in the submission's folder (then kept beside its results)


def run_one(lab: Lab, sub: Path, keep: Path, timeout_s: float) -> dict:
    """Grade ``sub`` in two steps. First, in a fresh scratch folder (under the system's temporary
    folder, so that the unprivileged user can reach it), in a child process under the limits
    above: otter runs the notebook, its public tests and the hidden tests' runs, which record
    what the student's code gives (:mod:`.harness`; the witness, :mod:`.witness`, measures for
    them from outside). Then, here, outside the sandbox: each hidden test's judge on that record
    (:mod:`.judge`). Copies ``results.json`` (otter's), ``log.txt``, ``record.jsonl`` and
    ``judged.json`` to ``keep``. Returns ``questions`` ({name: {score, max_score, output}}: the
    public tests' points from otter, the hidden tests' from the judges), ``seconds`` and ``error``."""
    import tempfile
    tests = judges(lab)   # no judges: stop before any work
    quiet_imports(tests)
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix=f"dlio-grade-{lab.name[:5]}-"))
    try:
        # the witness, a process of its own outside the sandbox (it makes the oracles itself)
        with WitnessProcess(work, lab.name) as witness:
            r = _run_in(lab, sub, work, keep, timeout_s)
        _keep_witness(witness, keep)
        if not r["error"]:
            r["questions"] = _judged(lab, tests, r["questions"], load_record(read_plain(work / RECORD)), witness, keep)
        return r
    finally:
        for f in ("results.json", "log.txt", RECORD):
            data = read_plain(work / f)
            if data is not None:
                (keep / f).write_bytes(data)
        _cleanup_memory(work / "scratch")
        shutil.rmtree(work, ignore_errors=True)


def _keep_witness(witness: WitnessProcess, keep: Path) -> None:
    """``keep/witness.json``: what the witness saw, per span (its clock, the process's counters
    and threads read outside, its ticks, strace's calls), per residency measurement (path,
    resident pages, pages, the machine's page-cache drops before and after) and per file it
    read (not the bytes)."""
    data = {"spans": witness.spans, "resident": witness.log,
            "files": {t: {k: v for k, v in f.items() if k != "data"} for t, f in witness.files.items()}}
    (keep / "witness.json").write_text(json.dumps(data, indent=1))


MAX_READ = 256 << 20   # bytes of a submission's file the grader reads at most (a larger one: none)


def read_plain(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most :data:`MAX_READ` bytes (never
    through a link: the submission, which owns its folder, could point one at a file only the
    grader may read), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def _judged(lab: Lab, tests, qs: dict, record: dict, witness: WitnessProcess, keep: Path) -> dict:
    """Each question's points, all judged outside the sandbox on the record: the public tests'
    twins' and the hidden tests' verdicts (otter's in-kernel results of the public tests stay
    the student's feedback, in ``output``, and count for nothing). ``public``: the points of
    the public tests' twins. Writes ``keep/judged.json``."""
    qinfo = questions(master(lab))
    verdicts = judge_all(tests, record, {n: q["points"] for n, q in qinfo.items()}, witness)
    tmp = keep / "judged.json.tmp"
    tmp.write_text(json.dumps([v.__dict__ for v in verdicts], indent=1))
    os.replace(tmp, keep / "judged.json")
    public = {h.key for h in tests if h.public}
    out = {}
    for n in [n for n, q in qinfo.items() if not q["manual"]]:   # otter's results name the questions: not trusted
        q = qs.get(n, {"output": "", "max_score": qinfo[n]["points"]})
        mine = [v for v in verdicts if v.question == n]
        lines = [f"{'public' if v.key in public else 'hidden'} test {v.key} ({v.points:g} points), judged outside: "
                 + ("passed" if not v.message else "failed\n" + "\n".join("    " + ln for ln in v.message.splitlines()))
                 for v in mine]
        out[n] = {"score": sum(v.earned for v in mine),
                  "public": sum(v.earned for v in mine if v.key in public),
                  "max_score": qinfo[n]["points"] if n in qinfo else q["max_score"],
                  "output": "\n\n".join([_public_output(q["output"]), *lines])}
    return out


def _public_output(otter_output: str) -> str:
    """Otter's output for a question, of its public tests: the passing cases (the hidden tests'
    runs among them, which always pass there) left out."""
    text = otter_output.strip()
    if not text or "All test cases passed!" in text.splitlines()[0]:
        return "public tests in your kernel (feedback; the points are judged outside): all passed"
    text = re.sub(r"\n\s*\S+ - \d+ result:\n\s*✅ Test case passed", "", text)
    return "public tests in your kernel (feedback; the points are judged outside):\n" + text


# the child: otter run on the submission, nothing of the package (in the sandbox it is absent).
# otter imports nbformat, whose jsonschema imports rfc3987_syntax where it is installed, and that
# builds its grammar at import: 1.45 s of the 2.4 s that importing otter took (-X importtime, at
# a load of 4 on 2 cores), paid by the child and again by the kernel (otter's first cell imports
# otter). Otter validates no IRI format, so both go without it, as the pipeline's run_notebook
# does (the kernel by NO_IRI_STARTUP).
NO_IRI = "import sys; sys.modules.setdefault('rfc3987_syntax', None)\n"
CHILD = (NO_IRI.strip() + "; from otter.run import main; "
         "main(sys.argv[1], autograder=sys.argv[2], output_dir=sys.argv[3], no_logo=True)")
NO_IRI_STARTUP = Path("profile_default") / "startup" / "00-grader-no-iri.py"   # under the child's IPYTHONDIR


def _child_env(work: Path) -> dict[str, str]:
    """What the child's environment holds besides PATH: its own home, scratch folder and
    labkit, the profile, TensorFlow's start-up lines off."""
    home = work / "home"
    return {"HOME": str(home), DIR_ENV: str(work / "scratch"), KIT_ENV: str(work / "kit"),
           PROFILE_ENV: os.environ.get(PROFILE_ENV, "smoke"), "TF_CPP_MIN_LOG_LEVEL": "3",
           "MPLCONFIGDIR": str(home / ".mpl"), "JUPYTER_RUNTIME_DIR": str(home / ".jupyter-rt"),
           "IPYTHONDIR": str(home / ".ipython"), "XDG_CACHE_HOME": str(home / ".cache"),
           "PYTHONPATH": str(work / "kit"), "LANG": "C.UTF-8",
           RECORD_ENV: str(work / RECORD), WITNESS_ENV: str(work / SOCKET_NAME)}


def _run_in(lab: Lab, sub: Path, work: Path, keep: Path, timeout_s: float) -> dict:
    (work / "home").mkdir()
    startup = Path(_child_env(work)["IPYTHONDIR"]) / NO_IRI_STARTUP   # run by the kernel before any cell
    startup.parent.mkdir(parents=True)
    startup.write_text(NO_IRI)
    (work / "scratch").mkdir()
    (work / "kit").mkdir()
    shutil.copy(kit_dir() / "labkit.py", work / "kit" / "labkit.py")
    nb = work / sub.name
    shutil.copy(sub, nb)
    zip_ = work / "autograder.zip"
    shutil.copy(autograder_zip(lab), zip_)
    args = ["-c", CHILD, str(nb), str(zip_), str(work)]
    if sandbox.available():
        # bubblewrap: this folder, the environment read-only without the package, nothing else
        if os.geteuid() == 0:   # the submission runs as nobody: its folder is nobody's
            os.chmod(work, 0o755)
            _chown_tree(work)
        python = sys.executable
        env = dict(_child_env(work), PATH=os.pathsep.join([str(Path(python).parent), "/usr/bin", "/bin"]))
        cmd = sandbox.command(work, [python, *args], env)
    else:
        prefix = _unprivileged_prefix()
        if prefix and "--reuid=nobody" in prefix:
            os.chmod(work, 0o755)
            _chown_tree(work)
        env = dict(os.environ, **_child_env(work))
        python = sys.executable
        if prefix and _PUBLIC:   # nobody runs the world-readable copy of the interpreter
            python = _PUBLIC["python"]
            env["LD_LIBRARY_PATH"] = _PUBLIC["LD_LIBRARY_PATH"]
            env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
        cmd = [*prefix, python, *args]
    t0 = time.perf_counter()
    error = ""
    with open(work / "log.txt", "wb") as log:
        p = subprocess.Popen(cmd, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout_s)
            if rc != 0:
                error = f"crashed (exit {rc}; see {keep / 'log.txt'})"
        except subprocess.TimeoutExpired:
            _kill_tree(p.pid)
            p.wait()
            error = f"time limit: killed after {timeout_s:g} s"
    seconds = time.perf_counter() - t0
    res = read_plain(work / "results.json")
    qs = {}
    if res is not None and not error:
        tests = json.loads(res)["tests"]
        qs = {t["name"]: {"score": float(t.get("score") or 0), "max_score": float(t["max_score"]),
                          "output": t.get("output", "")} for t in tests if t.get("max_score") is not None}
    elif not error:
        error = f"no results (the notebook did not run; see {keep / 'log.txt'})"
    return {"questions": qs, "seconds": seconds, "error": error}


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc's children lists), deepest last."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(x) for x in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid``'s process group and every descendant: the kernel otter starts runs in a
    session of its own (jupyter_client), so the group alone would leave it running."""
    for p in _descendants(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _cleanup_memory(scratch: Path) -> None:
    """Remove the submission's /dev/shm folder (its tmpfs files hold RAM) and its scratch data."""
    h = mem_root(scratch).name.rsplit("-", 1)[1]   # whichever uid the submission ran as
    for d in Path("/dev/shm").glob(f"dlio-course-*-{h}"):
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


# ---- one lab, many submissions ----------------------------------------------------------------

def submissions(sub: Path) -> list[Path]:
    """The notebooks to grade: ``sub`` itself, or every ``.ipynb`` under the folder ``sub``."""
    if sub.is_file() and sub.suffix == ".ipynb":
        return [sub]
    if sub.is_dir():
        found = sorted(p for p in sub.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        if found:
            return found
        raise ValueError(f"SUB = {str(sub)!r}: a folder with no .ipynb under it")
    raise ValueError(f"SUB = {str(sub)!r}; allowed: an existing .ipynb file or a folder of them")


def _sub_id(p: Path, base: Path) -> str:
    rel = p.relative_to(base) if base.is_dir() else Path(p.name)
    return re.sub(r"[^\w.-]+", "_", str(rel.with_suffix("")))


def grade_many(lab_name: str, sub: str | Path, out: Path | None = None, timeout_s: float = TIMEOUT_S,
               jobs: int | None = None) -> dict:
    """Grade every submission of ``sub`` (a notebook or a folder) for lab ``lab_name``; write
    ``grades.csv``, ``answers/`` and each submission's feedback under ``out``. Returns ``rows``
    (one dict per submission, as in grades.csv, plus ``questions``), ``questions`` (the lab's)
    and ``dir``."""
    lab = find_lab(lab_name)
    sub = Path(sub)
    subs = submissions(sub)
    if timeout_s <= 0:
        raise ValueError(f"timeout = {timeout_s!r}; allowed: seconds > 0")
    jobs = jobs or os.cpu_count() or 1
    if jobs < 1:
        raise ValueError(f"jobs = {jobs!r}; allowed: a whole number >= 1")
    autograder_zip(lab)   # no autograder: stop before any work
    quiet_imports(judges(lab))   # before the threads: it points the process's stderr elsewhere a moment
    # the static check needs a lab whose own student notebook imports nothing from the package
    # (convention 3); a lab not converted yet would fail its own solution
    static = not imports_package(code_of(student_notebook(lab))) if student_notebook(lab).is_file() else True
    if not static:
        print(f"grade: {lab.name}'s student notebook imports experiments itself: the static integrity "
              "check is off for this lab", file=sys.stderr)
    qinfo = questions(master(lab))
    manual = [n for n, q in qinfo.items() if q["manual"]]
    auto = [n for n, q in qinfo.items() if not q["manual"]]
    out = (out or paths.root() / "explore" / "course" / "grades" / lab.name / _sub_id(sub, sub.parent)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ids = [_sub_id(p, sub) for p in subs]

    def one(i: int) -> dict:
        p, sid = subs[i], ids[i]
        r = run_one(lab, p, out / sid, timeout_s)
        qs = r["questions"]
        errors = [r["error"]] if r["error"] else []
        if static and imports_package(code_of(p)):
            for n, q in qs.items():
                if n in qinfo:
                    q["score"] = min(q["score"], q.get("public", qinfo[n]["public"]))
            errors.append("integrity: the notebook imports experiments (the graded references): hidden points set to 0")
        row = {"submission": sid, **{n: qs.get(n, {}).get("score", 0.0) for n in auto},
               "total": sum(qs.get(n, {}).get("score", 0.0) for n in auto),
               "max": sum(qinfo[n]["points"] for n in auto),
               "seconds": round(r["seconds"], 1), "error": "; ".join(errors), "ran_as": ran_as()}
        _feedback(lab, p, out / sid, row, qs, manual)
        print(f"{sid}: {row['total']:g} / {row['max']:g} in {row['seconds']:.0f} s"
              + (f" ({row['error']})" if row["error"] else ""), flush=True)
        return {**row, "questions": qs}

    if not sandbox.available():
        print(f"grade: {sandbox.WHY_NOT[0]}: each submission runs without a sandbox, as before "
              "(grades.csv's ran_as says how)", file=sys.stderr)
    print(f"grading {len(subs)} submission(s) of {lab.name}, {min(jobs, len(subs))} at a time, "
          f"{timeout_s:g} s each at most, into {out}", flush=True)
    with ThreadPoolExecutor(max_workers=min(jobs, len(subs))) as ex:
        rows = list(ex.map(one, range(len(subs))))
    fields = ["submission", *auto, "total", "max", "seconds", "error", "ran_as"]
    tmp = out / "grades.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out / "grades.csv")
    _collect_answers(lab, subs, ids, manual, out)
    return {"rows": rows, "questions": qinfo, "dir": out}


def _feedback(lab: Lab, sub: Path, d: Path, row: dict, qs: dict, manual: list[str]) -> None:
    lines = [f"# {lab.name}: {sub.name}", "", f"Autograded score: **{row['total']:g} / {row['max']:g}**", ""]
    if row["error"]:
        lines += [f"**Note:** {row['error']}", ""]
    lines += ["| question | points | max |", "|---|---|---|"]
    lines += [f"| {n} | {q['score']:g} | {q['max_score']:g} |" for n, q in qs.items()]
    for n, q in qs.items():
        if q["score"] < q["max_score"] and q["output"].strip():
            lines += ["", f"## {n}: what failed", "", "```", q["output"].strip()[:4000], "```"]
    lines += ["", f"Written answers to grade with the lab's `rubric.md`: {', '.join(manual) or 'none'}."]
    d.mkdir(parents=True, exist_ok=True)
    (d / "feedback.md").write_text("\n".join(lines) + "\n")


def _collect_answers(lab: Lab, subs: list[Path], ids: list[str], manual: list[str], out: Path) -> None:
    """``answers/<question>.md``: every submission's answer to one written question, in turn."""
    d = out / "answers"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    got = [written_answers(p, manual) for p in subs]
    for q in ["prediction", *manual]:
        if q == "prediction" and not any(q in g for g in got):
            continue
        lines = [f"# {lab.name}: {q}, every submission (grade with rubric.md)", ""]
        for sid, g in zip(ids, got):
            ans = g.get(q, "(no answer)")
            lines += [f"## {sid}", "", f"```python\n{ans}\n```" if q == "prediction" else ans, ""]
        (d / f"{q}.md").write_text("\n".join(lines))


def grade(lab_name: str, submission: str | Path, out: Path | None = None, timeout_s: float = TIMEOUT_S) -> dict:
    """Grade one notebook (as :func:`grade_many`); returns ``score``, ``max_score``,
    ``questions`` ({name: {score, max_score, output}}), ``manual``, ``error`` and ``dir`` (where
    its ``results.json`` and ``feedback.md`` are)."""
    sub = Path(submission)
    if not sub.is_file() or sub.suffix != ".ipynb":
        raise ValueError(f"SUB = {str(submission)!r}; allowed: an existing .ipynb file")
    g = grade_many(lab_name, sub, out, timeout_s, jobs=1)
    r = g["rows"][0]
    return {"score": r["total"], "max_score": r["max"], "questions": r["questions"], "error": r["error"],
            "manual": [n for n, q in g["questions"].items() if q["manual"]], "dir": g["dir"] / r["submission"]}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m experiments.course.grade", description=__doc__.split("\n\n")[0])
    ap.add_argument("lab")
    ap.add_argument("submission", help="one .ipynb, or a folder: every .ipynb under it")
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S, help=f"seconds per submission (default {TIMEOUT_S})")
    ap.add_argument("--jobs", type=int, default=None, help="submissions at a time (default: the cores)")
    ap.add_argument("--out", type=Path, default=None, help="output folder (default explore/course/grades/<lab>/<SUB>)")
    a = ap.parse_args(argv)
    try:
        g = grade_many(a.lab, a.submission, a.out, a.timeout, a.jobs)
    except (ValueError, FileNotFoundError) as e:   # bad input: one line naming it, before any work
        ap.exit(2, f"{ap.prog}: {e}\n")
    print(f"wrote {g['dir'] / 'grades.csv'} ({len(g['rows'])} submission(s)) and the written answers "
          f"per question in {g['dir'] / 'answers'}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
