"""The grader's side of a lab's hidden tests, ``gradekit``: what they import instead of ``experiments``.

The grading sandbox (:mod:`experiments.course.sandbox`) cannot import the package, so a hidden
test imports ``gradekit.X`` where it would have imported ``experiments.X`` (the integrity check,
``mincore``, the functions it compares with). ``make course`` makes each lab's ``gradekit`` from
the package's own source: a copy of every module its hidden tests name and of the package's
modules those import (same layout, package ``__init__`` files empty), or, for a name in
:data:`EXTRACTS`, a few definitions of a module alone (lab 1 needs ``cache.py``'s mincore reader,
not its eviction, which lab 1 grades); and puts it in the autograder zip under ``files/``, which
otter copies beside the submission. One source for both sides: nothing is written twice.
"""

from __future__ import annotations

import ast
import re
import shutil
import zipfile
from pathlib import Path

import nbformat

from . import Lab
from . import dist_dir, master

GRADER_PKG = "gradekit"          # the grader's side of the hidden tests, in the autograder zip
# modules of gradekit made of a few definitions of a package module (not the whole of it: lab
# 1's hidden tests need cache.py's mincore reader, not its eviction, lab 1's graded mechanism)
EXTRACTS = {"residency": ("cache", ("_libc", "_c", "resident_pages"))}


def _module_file(pkg_root: Path, mod: str) -> Path:
    """The source file of ``mod`` (``experiments.a.b``) under ``pkg_root`` (``experiments/``)."""
    p = pkg_root.joinpath(*mod.split(".")[1:])
    return p / "__init__.py" if p.is_dir() else p.with_suffix(".py")


def _relative_imports(pkg_root: Path, mod: str) -> set[str]:
    """The modules of the package ``mod`` imports, at its top or inside a function (relative
    imports: the package uses no other kind)."""
    f = _module_file(pkg_root, mod)
    here = mod.split(".") if f.name == "__init__.py" else mod.split(".")[:-1]
    out = set()
    for n in ast.walk(ast.parse(f.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level:
            base = here[:len(here) - n.level + 1]
            names = [n.module] if n.module else [a.name for a in n.names]
            for x in names:
                cand = ".".join(base + x.split("."))
                out.add(cand if _module_file(pkg_root, cand).is_file() else ".".join(base))
    return {m for m in out if _module_file(pkg_root, m).is_file() and _module_file(pkg_root, m).name != "__init__.py"}


def _imports_of(src: str) -> set[str]:
    """The modules of ``gradekit`` a hidden test imports (``import gradekit.a.b``, ``from
    gradekit.a import b``: both ``gradekit.a`` and ``gradekit.a.b``)."""
    out = set()
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out |= {n.module, *(f"{n.module}.{a.name}" for a in n.names)}
    return {m for m in out if m.split(".")[0] == GRADER_PKG}


def _hidden_cells(lab: Lab) -> list[str]:
    """The source of each hidden test of ``lab``'s master notebook."""
    return [src for c in nbformat.read(master(lab), 4).cells
            if c.cell_type == "code" and re.search(r"^hidden:\s*true", src := "".join(c.source), re.MULTILINE)]


def _extract(module: Path, names: tuple[str, ...]) -> str:
    """A standalone module: ``module``'s absolute imports and its top-level definitions of
    ``names`` (functions, classes, assignments), in their order, as written there."""
    text = module.read_text()
    body = ast.parse(text).body

    def named(n) -> bool:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            return n.name in names
        return isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)

    imports = [ast.get_source_segment(text, n) for n in body
               if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)]
    defs = [ast.get_source_segment(text, n) for n in body if named(n)]
    head = f'"""{", ".join(names)} of experiments/{module.name}, for the grader (made by make course)."""\n\n'
    return head + "\n".join(imports) + "\n\n\n" + "\n\n\n".join(defs) + "\n"


def grader_modules(lab: Lab) -> list[str]:
    """The package's modules ``lab``'s hidden tests import (as ``gradekit.X``: the references
    they compare with, mincore) and every module those import in turn, as ``experiments.X``."""
    pkg_root = Path(__file__).resolve().parents[1]
    found = set()
    for src in _hidden_cells(lab):
        found |= _imports_of(src)
    found = {"experiments" + m[len(GRADER_PKG):] for m in found if m.split(".", 1)[-1] not in EXTRACTS}
    found = {m for m in found if _module_file(pkg_root, m).is_file() and _module_file(pkg_root, m).name != "__init__.py"}
    todo, seen = sorted(found), set()
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += sorted(_relative_imports(pkg_root, m))
    return sorted(seen)


def grader_kit(lab: Lab, out: Path | None = None) -> Path:
    """``out`` (default ``course/dist/_gradekit/<lab>/``): a folder holding the package
    ``gradekit``, a copy of :func:`grader_modules` (same layout and source as in
    ``experiments``; package ``__init__`` files empty), made afresh; returns the folder to put
    on ``sys.path``."""
    pkg_root = Path(__file__).resolve().parents[1]
    out = out or dist_dir() / "_gradekit" / lab.name
    shutil.rmtree(out, ignore_errors=True)
    dest = out / GRADER_PKG
    for m in grader_modules(lab):
        rel = _module_file(pkg_root, m).relative_to(pkg_root)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(pkg_root / rel, dest / rel)
    for name, (mod, names) in EXTRACTS.items():
        if any(re.search(rf"\b{GRADER_PKG}\b.*\b{name}\b", c) for c in _hidden_cells(lab)):
            dest.mkdir(parents=True, exist_ok=True)
            (dest / f"{name}.py").write_text(_extract(pkg_root / f"{mod}.py", names))
    for d in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        if not (d / "__init__.py").exists():
            (d / "__init__.py").write_text(f'"""The grader\'s side of {lab.name}\'s hidden tests (copied from experiments)."""\n')
    return out


def add_to_zip(zip_path: Path, kit: Path) -> None:
    """Put ``kit``'s ``gradekit/`` under ``files/`` in the autograder zip (otter copies
    ``files/`` beside the submission before it runs it)."""
    with zipfile.ZipFile(zip_path, "a") as z:
        for f in sorted(kit.rglob("*.py")):
            z.write(f, f"files/{f.relative_to(kit)}")
