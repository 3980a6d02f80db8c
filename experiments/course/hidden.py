"""A lab's hidden tests in two parts: what runs in the sandbox, and the judge that stays with the grader.

A hidden test of a master notebook (a test cell with ``hidden: true``) is written in three parts,
marked by two comment lines:

    # the grader's inputs (deterministic: literals and seeded draws; may use the package)
    _g = np.random.default_rng(71)
    _rows = [...]
    # -- run in the sandbox
    _gh.check_own(globals(), ["characteristic_vector"])
    _rec["vectors"] = [characteristic_vector(r, "/g/data", "/g/ck") for r in _rows]
    # -- judged outside the sandbox
    import experiments.trace.vector as _vec
    for _r, _got in zip(_rows, _rec["vectors"]):
        assert ...

``make course`` (:mod:`experiments.course.build`) runs the inputs (here, outside the sandbox)
and puts in the autograder zip only the run and the *values* of the inputs it uses (data:
``gradeharness/inputs/<key>.json``; the code that made them, and the inputs the run does not use, stay
out), with ``gradeharness`` (:mod:`experiments.course.harness` and
:mod:`experiments.course.integrity`); each hidden test becomes a call of ``gradeharness.run``,
worth no point in otter's count. The judges go beside the zip, never in it (``judges.json``).
``make grade`` (:mod:`experiments.course.grade`) runs the submission in the sandbox, then judges
its record outside with the package (:mod:`experiments.course.judge`): the judge sees the inputs
(made again), ``_rec`` (what the run recorded) and imports what it compares with from
``experiments``. The run may use the notebook's names and ``_gh`` (the harness); the inputs may
not (they are made without the notebook). An input named ``_ask_*`` is a function the run
calls through the grader's witness (``_gh.ask``): it answers from outside the sandbox, so that
what it knows (lab 8's AU curves' thresholds) never enters it.

Inputs that hold the line :data:`KEEP_MARK` are made once, by ``make course``: the values of the
inputs the judge uses (data only: its references, lab 2's decoded images and folder sizes) are
kept in ``judges.json`` (``kept``) and the judge starts from them instead of making the inputs
again. A lab whose inputs need TensorFlow (lab 2) then grades without importing it.

A public test is written in the same three parts, and judged the same way: its twin (key
``q1.p1``, the question's first public test) runs in the sandbox beside it and is judged
outside on the record, and the grade counts that judgement (:mod:`experiments.course.grade`).
The student's copy of a public test (and otter's run of it, the student's feedback, which
counts for nothing) is its three parts in a row, with ``_rec`` a plain dict: its judge may
not use the package.
"""

from __future__ import annotations

import ast
import json
import os
import re
import zipfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from . import Lab, dist_dir, master
from .integrity import imports_package

RUN_MARK = "# -- run in the sandbox"
JUDGE_MARK = "# -- judged outside the sandbox"
KEEP_MARK = "# -- the judge takes these inputs as made at build"
HARNESS_PKG = "gradeharness"     # the sandbox's side of the hidden tests, in the autograder zip
_CONFIG_END = "# END TEST CONFIG"


@dataclass(frozen=True)
class Hidden:
    """One hidden test: its ``key`` (``q1.2``: the question and its n-th hidden test), points,
    the source of its three parts, ``shipped``: the inputs its run uses, and ``given``: their
    values as the sandbox gets them (encoded; filled by :func:`write_judges`), and ``kept``: where
    the inputs hold :data:`KEEP_MARK`, the values of the inputs the judge uses (encoded; None:
    the judge makes the inputs again)."""
    key: str
    question: str
    points: float | None
    inputs: str
    run: str
    judge: str
    shipped: tuple[str, ...] = ()
    given: dict = field(default_factory=dict)
    public: bool = False
    kept: dict | None = None


def _config(src: str) -> tuple[str, str]:
    """(the TEST CONFIG head of a test cell, the code after it)."""
    i = src.index(_CONFIG_END)
    j = src.index("\n", i) + 1 if "\n" in src[i:] else len(src)
    return src[:j], src[j:]


def split(src: str, where: str = "a hidden test") -> tuple[str, str, str]:
    """(inputs, run, judge) of a hidden test cell's code. ValueError naming ``where`` when a
    marker is missing or out of order, or when the run names the package."""
    _, code = _config(src) if _CONFIG_END in src else ("", src)
    lines = code.splitlines(keepends=True)
    at = {m: [i for i, ln in enumerate(lines) if ln.strip().startswith(m)] for m in (RUN_MARK, JUDGE_MARK)}
    if len(at[RUN_MARK]) != 1 or len(at[JUDGE_MARK]) != 1 or at[RUN_MARK][0] > at[JUDGE_MARK][0]:
        raise ValueError(f"{where}: a hidden test has one line {RUN_MARK!r}, then one line {JUDGE_MARK!r} "
                         f"(found {len(at[RUN_MARK])} and {len(at[JUDGE_MARK])})")
    r, j = at[RUN_MARK][0], at[JUDGE_MARK][0]
    inputs, run, judge = "".join(lines[:r]), "".join(lines[r + 1:j]), "".join(lines[j + 1:])
    if imports_package(run) or re.search(r"\b(gradekit|experiments)\b", run):
        raise ValueError(f"{where}: its run (in the sandbox) names the package; only the inputs and the judge may")
    for part in (inputs, run, judge):
        ast.parse(part)
    return inputs, run, judge


def hidden_tests(nb) -> list[Hidden]:
    """The hidden tests of a master notebook (an nbformat notebook or a path), in order."""
    import nbformat   # here, not at the top: the witness imports this module (judges, oracles) per submission
    if not hasattr(nb, "cells"):
        nb = nbformat.read(nb, 4)
    out, question, count, pcount = [], None, {}, {}
    for c in nb.cells:
        src = "".join(c.source)
        if c.cell_type == "raw" and src.strip().startswith("# BEGIN QUESTION"):
            m = re.search(r"^name:\s*(\S+)", src, re.MULTILINE)
            question = m.group(1) if m else f"q{len(count) + 1}"
            count.setdefault(question, 0)
        if c.cell_type != "code" or _CONFIG_END not in src:
            continue
        public = not re.search(r"^hidden:\s*true", src, re.MULTILINE)
        if public:
            pcount[question] = pcount.get(question, 0) + 1
            key, where = f"{question}.p{pcount[question]}", f"public test {pcount[question]} of {question}"
        else:
            count[question] = count.get(question, 0) + 1
            key, where = f"{question}.{count[question]}", f"hidden test {count[question]} of {question}"
        pts = re.search(r"^points:\s*([\d.]+)", src, re.MULTILINE)
        inputs, run, judge = split(src, f"{key} ({where})")
        if public and (imports_package(judge) or re.search(r"\b(_gh|_witnessed|_dropped|_span|_seen_file|_asked)\b", run + judge)):
            raise ValueError(f"{key} ({where}): a public test runs in the student's kernel too: its run and "
                             "judge use neither the package nor the grader's witness")
        used = {n.id for n in ast.walk(ast.parse(run)) if isinstance(n, ast.Name)}
        defined = {n.id for n in ast.walk(ast.parse(inputs)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        out.append(Hidden(key, question, float(pts.group(1)) if pts else None, inputs, run, judge,
                          tuple(sorted(used & defined)), public=public))
    return out


def public_cell(src: str, h: Hidden) -> str:
    """The student's copy of the public test ``h`` (``src``: its cell in the master): its TEST
    CONFIG head, then its inputs, run and judge in a row, ``_rec`` a plain dict."""
    head, _ = _config(src)
    return f"{head}_rec = {{}}\n{h.inputs}{h.run}{h.judge}"


def inputs_namespace(h: Hidden) -> dict:
    """``h``'s inputs, made: the namespace its inputs' code leaves (with numpy, pandas and math
    given), which the judge starts from."""
    import math

    import numpy as np
    import pandas as pd
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")   # inputs made with TensorFlow: its start-up lines off
    ns = {"__name__": f"inputs of {h.key}", "np": np, "pd": pd, "math": math}
    exec(compile(h.inputs, f"<inputs of {h.key}>", "exec"), ns)  # noqa: S102 (the grader's own code)
    return ns


def judge_namespace(h: Hidden) -> dict:
    """Where ``h``'s judge starts: its inputs' values kept at build (numpy, pandas and math
    given) where it has them (:data:`KEEP_MARK`), else :func:`inputs_namespace`."""
    if h.kept is None:
        return inputs_namespace(h)
    import math

    import numpy as np
    import pandas as pd

    from .harness import decode
    return {"__name__": f"inputs of {h.key}", "np": np, "pd": pd, "math": math,
            **{k: decode(v) for k, v in h.kept.items()}}


def _names(src: str, stored: bool) -> set[str]:
    """The names ``src`` binds (``stored``: assignments and imports) or mentions."""
    tree = ast.parse(src)
    if not stored:
        return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return ({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            | {a.asname or a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names})


def kept_data(h: Hidden, ns: dict) -> dict | None:
    """``{name: encoded value}`` of the inputs ``h``'s judge uses, when its inputs hold
    :data:`KEEP_MARK` (else None). ValueError naming the input when one is not data (a module,
    a function): the judge could not start from a value."""
    from .harness import TAG, encode
    if not any(ln.strip() == KEEP_MARK for ln in h.inputs.splitlines()):
        return None
    out = {}
    for name in sorted(_names(h.judge, False) & _names(h.inputs, True)):
        if name not in ns:
            continue   # bound only inside a comprehension
        v = ns[name]
        enc = encode(v)
        if callable(v) or '"' + TAG + '": "repr"' in json.dumps(enc):
            raise ValueError(f"hidden test {h.key}: its judge uses the input {name} ({type(v).__name__}), which is "
                             f"not data to keep at build: make it in the judge, or take out {KEEP_MARK!r}")
        out[name] = enc
    return out


def quiet_imports(tests: list[Hidden]) -> None:
    """Import TensorFlow once, here, with its start-up lines off the console (in
    ``course/dist/_tensorflow.stderr.log``), when a judge of ``tests``, or an input that the
    judge makes again (none kept at build), uses it: the grader makes inputs and judges in its
    own process. Call it before any thread does."""
    import sys
    if "tensorflow" in sys.modules or not any("tensorflow" in h.judge + (h.inputs if h.kept is None else "")
                                              for h in tests):
        return
    from ..host.envinfo import gpus
    from ..pipeline.run_notebook import _StderrTee, noise_filter
    log = dist_dir() / "_tensorflow.stderr.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    tee = _StderrTee(log, noise_filter(bool(gpus())))
    try:
        import tensorflow  # noqa: F401
    finally:
        tee.close()


def oracles(h: Hidden, ns: dict) -> dict:
    """``{name: function}``: the inputs named ``_ask_*``, which the witness answers for the run."""
    return {n: f for n, f in ns.items() if n.startswith("_ask_") and callable(f)}


def shipped_data(h: Hidden, ns: dict | None = None) -> dict:
    """``{name: encoded value}`` of the inputs ``h``'s run uses (:func:`harness.encode`).
    ValueError when one is not data (a function, a module, an object JSON cannot hold): the
    run must then make it itself."""
    from .harness import TAG, encode
    ns = inputs_namespace(h) if ns is None else ns
    out = {}
    for name in h.shipped:
        if name not in ns or name.startswith("_ask_"):
            continue   # a name the inputs bind only inside (a comprehension's), or an oracle
        v = ns[name]
        enc = encode(v)
        if callable(v) or '"' + TAG + '": "repr"' in json.dumps(enc):
            raise ValueError(f"hidden test {h.key}: its run uses the input {name} ({type(v).__name__}), "
                             "which is not data the sandbox can be given: make it in the run")
        out[name] = enc
    return out


def harness_cell(h: Hidden) -> str:
    """What the autograder zip holds of ``h`` (a hidden test, or a public test's twin): its run,
    run by ``gradeharness.run`` (with the inputs it uses; it records what the run gives), worth
    0 points in otter's count (the judge gives them)."""
    return ('"""# BEGIN TEST CONFIG\nhidden: true\npoints: 0\n"""  # END TEST CONFIG\n'
            f"import {HARNESS_PKG} as _gh\n"
            f"_gh.run({h.key!r}, globals(), {h.run!r})\n")


def harness_notebook(master_path: Path):
    """``master_path``'s notebook with each hidden test replaced by :func:`harness_cell`: what
    otter assign builds the autograder from (the student notebook holds no hidden test either way)."""
    import nbformat
    nb = nbformat.read(master_path, 4)
    tests = iter(hidden_tests(nb))
    cells = []
    for c in nb.cells:
        src = "".join(c.source)
        if c.cell_type == "code" and _CONFIG_END in src:
            h = next(tests)
            if h.public:   # the student's copy (otter's feedback), then its twin, judged outside
                c.source = public_cell(src, h)
                cells.append(c)
                c = nbformat.v4.new_code_cell(harness_cell(h))
            else:
                c.source = harness_cell(h)
        cells.append(c)
    nb.cells = cells
    return nb


def judges_path(lab: Lab) -> Path:
    """``course/dist/<lab>/autograder/judges.json``: the judges, beside the zip, never in it."""
    return dist_dir(lab) / "autograder" / "judges.json"


def write_judges(lab: Lab) -> dict[str, dict]:
    """Write :func:`judges_path` from ``lab``'s master notebook (atomically); return the shipped
    inputs, ``{key: {name: encoded value}}`` (the zip's ``inputs/``), made twice to be sure
    they are the same each time (the judge makes them again, or starts from those it keeps:
    :func:`kept_data`). ValueError if not."""
    tests = hidden_tests(master(lab))
    quiet_imports(tests)
    data, kept = {}, {}
    for h in tests:
        ns, again = inputs_namespace(h), inputs_namespace(h)
        data[h.key], kept[h.key] = shipped_data(h, ns), kept_data(h, ns)
        if json.dumps([data[h.key], kept[h.key]]) != json.dumps([shipped_data(h, again), kept_data(h, again)]):
            raise ValueError(f"hidden test {h.key} of {lab.name}: its inputs differ from one making to "
                             "the next (seed every draw): the judge could not make them again")
    p = judges_path(lab)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(replace(h, given=data[h.key], kept=kept[h.key])) for h in tests], indent=1))
    os.replace(tmp, p)
    return data


def judges(lab: Lab) -> list[Hidden]:
    """The judges ``make course`` wrote for ``lab`` (each with the inputs' values the sandbox
    gets); FileNotFoundError (naming ``make course``) if none."""
    p = judges_path(lab)
    if not p.is_file():
        raise FileNotFoundError(f"no judges for {lab.name} at {p}: run `make course` first")
    return [Hidden(**{**d, "shipped": tuple(d.get("shipped", ()))}) for d in json.loads(p.read_text())]


def harness_files(inputs: dict[str, dict]) -> dict[str, bytes]:
    """``{path in the zip: content}`` of ``gradeharness``: the harness and the integrity check,
    from the package's own source (nothing else of it), and the shipped ``inputs``."""
    from .harness import INPUTS
    here = Path(__file__).resolve().parent
    return {f"files/{HARNESS_PKG}/__init__.py": (here / "harness.py").read_bytes(),
            f"files/{HARNESS_PKG}/integrity.py": (here / "integrity.py").read_bytes(),
            **{f"files/{HARNESS_PKG}/{INPUTS}/{key}.json": json.dumps(data).encode()
               for key, data in inputs.items() if data}}


def add_to_zip(zip_path: Path, inputs: dict[str, dict]) -> None:
    """Put :func:`harness_files` in the autograder zip (otter copies ``files/`` beside the
    submission before it runs it)."""
    with zipfile.ZipFile(zip_path, "a") as z:
        for name, data in harness_files(inputs).items():
            z.writestr(name, data)
