"""Integrity checks a lab's hidden tests call first: the graded functions are the student's own.

``check_own(globals(), ["cold_read", "evict"])`` raises AssertionError (its message says what
it found) when a named function is missing or not defined in the notebook
(``__module__ != "__main__"``), or when a named function (or a notebook function it calls, its
closure, its defaults) or the notebook's own namespace references a module or object of the
package ``experiments`` or of ``gradeharness`` (``labkit`` is allowed: it is the bundle's
plumbing), or when a module of either was loaded before the first hidden test ran (a name built
at run time that no scan of the code sees). The package holds the references; ``gradeharness``
is the hidden tests' side in the sandbox (experiments/course/harness.py: it records what the
student's code gives, and holds no reference): a notebook that calls either gets no hidden points.

The hidden tests' runs call this module as ``gradeharness.check_own`` (a copy in the autograder
zip, :mod:`experiments.course.hidden`). It is the second line: in the grader's sandbox
(experiments/course/sandbox.py) the package is not importable at all, and the references the
judges compare with never enter the sandbox (experiments/course/judge.py). It matters where
bubblewrap cannot run and the package is readable.

The grader adds a static check (``experiments.course.grade``): a submission whose code imports
``experiments`` gets zero hidden points whatever its tests say.
"""

from __future__ import annotations

import dis
import re
import sys
import types

PACKAGE = "experiments"
PACKAGES = (PACKAGE, "gradeharness")   # the references, and the hidden tests' side in the sandbox
# hidden tests import the package into the notebook's namespace (otter runs them there); the
# names present at a namespace's first check are the notebook's, later ones the tests'
_FIRST_SEEN: dict[int, frozenset[str]] = {}
# the modules of PACKAGES loaded when the first hidden test ran (the notebook's doing), but this one
_LOADED_FIRST: list[list[str]] = []
_IPYTHON = {"In", "Out", "get_ipython", "exit", "quit"}
_IMPORT_RE = re.compile(rf"(^|[^\w.])(from|import)\s+{PACKAGE}\b|__import__\(\s*['\"]{PACKAGE}\b|"
                        rf"import_module\(\s*['\"]{PACKAGE}\b", re.MULTILINE)


def _is_labkit(name: str) -> bool:
    return name == "labkit" or name.endswith(".labkit")


def _ours(name: str) -> bool:
    """Whether the module ``name`` is of :data:`PACKAGES`."""
    return any(name == p or name.startswith(p + ".") for p in PACKAGES)


def _integrity_chain(name: str) -> bool:
    """This module and the packages above it (a hidden test imports them to check)."""
    parts = __name__.split(".")
    return name in {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _origin(obj) -> str | None:
    """The ``experiments`` module ``obj`` is or comes from, else None (labkit and this module
    excepted)."""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    else:
        name = getattr(obj, "__module__", None)
        if not isinstance(name, str):
            owner = getattr(obj, "__self__", None)   # a bound method of a package object
            name = getattr(type(owner), "__module__", None) if owner is not None else None
    if not isinstance(name, str) or not _ours(name):
        return None
    if _is_labkit(name) or name == __name__:
        return None
    return name


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _function_refs(fn, seen: set[int]) -> list[str]:
    """What ``fn`` (and every notebook function it reaches) takes from the package."""
    if id(fn) in seen:
        return []
    seen.add(id(fn))
    found: list[str] = []
    if isinstance(fn, type):   # a class the student wrote: its methods
        for v in vars(fn).values():
            f = getattr(v, "__func__", v)
            if isinstance(f, types.FunctionType):
                found += _function_refs(f, seen)
        return found
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        return found
    g = fn.__globals__
    for code in _codes(fn.__code__):
        for ins in dis.get_instructions(code):
            n = ins.argval
            if ins.opname == "IMPORT_NAME":
                if _ours(n):
                    found.append(f"{fn.__name__} imports {n}")
                continue
            # globals only: an attribute of the same name (x.evict) is not the package's evict
            if ins.opname not in ("LOAD_GLOBAL", "LOAD_NAME") or n not in g:
                continue
            v = g[n]
            o = _origin(v)
            if o:
                found.append(f"{fn.__name__} uses {n} (from {o})")
            elif isinstance(v, (types.FunctionType, type)) and getattr(v, "__module__", "") == "__main__":
                found += _function_refs(v, seen)
        for c in code.co_consts:
            if isinstance(c, str) and re.match(rf"({'|'.join(PACKAGES)})(\.|$)", c):
                found.append(f"{fn.__name__} names the module {c!r}")
    others = [c.cell_contents for c in (fn.__closure__ or ()) if _has_contents(c)]
    others += list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values())
    for v in others:
        o = _origin(v)
        if o:
            found.append(f"{fn.__name__} holds an object from {o}")
        elif isinstance(v, (types.FunctionType, type)) and getattr(v, "__module__", "") == "__main__":
            found += _function_refs(v, seen)
    return found


def _has_contents(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def check_own(namespace: dict, names: list[str] | tuple[str, ...]) -> None:
    """Assert that the functions ``names`` are the notebook's own and reach nothing of the
    package ``experiments`` (see the module's docstring). Raises AssertionError naming each
    problem; returns None when there is none."""
    first = _FIRST_SEEN.setdefault(id(namespace), frozenset(namespace))
    if not _LOADED_FIRST and not __name__.startswith(PACKAGE + "."):   # the bundle's copy, in a kernel
        _LOADED_FIRST.append(sorted(m for m in list(sys.modules) if _ours(m) and not _integrity_chain(m)))
    problems: list[str] = [f"the notebook loaded {m} (a module of the graded references or the grader's)"
                           for m in (_LOADED_FIRST or [[]])[0]]
    seen: set[int] = set()
    for n in names:
        fn = namespace.get(n)
        if fn is None:
            problems.append(f"{n} is not defined in the notebook")
            continue
        if not callable(fn) or getattr(fn, "__module__", None) != "__main__":
            problems.append(f"{n} is not a function written in the notebook "
                            f"(it comes from {getattr(fn, '__module__', type(fn).__name__)!r})")
            continue
        problems += _function_refs(fn, seen)
    for n in sorted(first):
        if n.startswith("_") or n in _IPYTHON or n not in namespace:
            continue
        o = _origin(namespace[n])
        if o:
            problems.append(f"the notebook's {n} comes from {o}")
    if problems:
        raise AssertionError("integrity: the graded functions must be the notebook's own, without the "
                             "package experiments (it holds the graded references): " + "; ".join(problems))


def imports_package(source: str) -> bool:
    """True when ``source`` (a notebook's code) imports the package ``experiments`` (the
    grader's static check; ``labkit`` is a separate module and does not count)."""
    return bool(_IMPORT_RE.search(source))
