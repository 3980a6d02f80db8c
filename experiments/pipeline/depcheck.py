"""Which package modules each DVC stage runs (and which upstream results it reads), and whether
``dvc.yaml`` lists them as ``deps``.

A stage whose notebook imports a module (directly, through another module of the package,
or through ``config.load``, which imports the module of each section it validates) re-runs
only if that module is among its ``deps``; otherwise DVC keeps a stale result after the module
changed (a paper value in ``reference.py``, a rule in ``claims/papers/``). This walks the imports
statically (``ast``: every ``import`` anywhere in a module, including inside functions, and
string constants naming a module, as ``python -m experiments.x`` does) and compares.

It also finds import circles inside the package (:func:`import_cycles`): module A importing B
while B imports A, at the top or inside a function (a lazy import only hides a circle; it
breaks when either side moves its import up). Imports under ``if TYPE_CHECKING:`` are left
out: they never run.

``python -m experiments.pipeline.depcheck`` prints what each stage lacks and each circle (and exits 1
when there is any); ``tests/test_dvc_deps.py`` runs the same checks. ``--write`` first writes
``dvc.yaml`` whole from the registry of stages (:mod:`experiments.stages`, :func:`dvc_yaml`), each
stage's package deps from its notebook's imports (:func:`code_deps`).
"""

from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
from functools import cache
from pathlib import Path

import yaml

from ..settings import paths

PACKAGE = "experiments"
_MODULE_STRING = re.compile(rf"^{PACKAGE}(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _root() -> Path:
    return paths.root()


def module_file(name: str) -> Path | None:
    """The source file of module ``name`` (``experiments.x.y``), or None if it is not one."""
    base = _root().joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _packages_of(name: str) -> list[str]:
    """``experiments.trace.report`` -> [``experiments``, ``experiments.trace``]: importing a
    module runs the ``__init__`` of every package above it."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _config_sections() -> dict[str, str]:
    from ..settings.config import SECTIONS
    return {k: v.split(":")[0] for k, v in SECTIONS.items()}


def imports_of(tree: ast.AST, current: str = "", is_package: bool = False) -> set[str]:
    """Modules of the package that ``tree`` imports (anywhere in it), with their packages."""
    found: set[str] = set()
    sections = None
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(node, current, is_package)
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _MODULE_STRING.match(node.value):
            names = [node.value]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "load" and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in ("config", "cfg_module"):
            sections = sections or _config_sections()
            names = [f"{PACKAGE}.config"] + [sections[k.arg] for k in node.keywords if k.arg in sections]
        for n in names:
            if n.split(".")[0] == PACKAGE and module_file(n):
                found.add(n)
                found.update(_packages_of(n))
    return found


@cache
def _module_imports(name: str) -> frozenset[str]:
    f = module_file(name)
    tree = ast.parse(f.read_text(), str(f))
    return frozenset(imports_of(tree, name, f.name == "__init__.py"))


def closure(modules: set[str]) -> set[str]:
    """``modules`` and everything they import from the package, transitively."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo.extend(_module_imports(m) - seen)
    return seen


def _code_cells(nb: Path) -> list[ast.Module]:
    """A notebook's code cells, parsed (IPython magics and shell lines left out)."""
    return [ast.parse("\n".join(line for line in "".join(c["source"]).splitlines()
                                if not line.lstrip().startswith(("%", "!"))), str(nb))
            for c in json.loads(Path(nb).read_text())["cells"] if c["cell_type"] == "code"]


def _calls(nb: Path, attr: str) -> list[ast.Call]:
    """Calls ``X.attr(...)`` in a notebook's code cells."""
    return [n for tree in _code_cells(nb) for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and n.func.attr == attr]


def notebook_modules(nb: Path) -> set[str]:
    """Package modules a notebook's code cells import."""
    return set().union(*(imports_of(tree) for tree in _code_cells(nb)))


def stage_notebook(cmd: str) -> Path | None:
    m = re.search(r"(?:papermill|experiments\.pipeline\.run_notebook)\s+(\S+\.ipynb)", " ".join(cmd) if isinstance(cmd, list) else cmd)
    return _root() / m.group(1) if m else None


def notebook_results(nb: Path) -> set[str]:
    """Upstream result files a notebook reads with ``results.load("stage", "file")``
    (``summary.csv`` when no file is named), as paths relative to the project."""
    out: set[str] = set()
    for node in _calls(nb, "load"):
        if isinstance(node.func.value, ast.Name) and node.func.value.id == "results" and node.args \
                and isinstance(node.args[0], ast.Constant):
            name = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                else "summary.csv"
            out.add(f"results/{node.args[0].value}/{name}")
    return out


def writes_claims(nb: Path) -> bool:
    """Whether a notebook writes its stage's ``claims.json`` (``StageResults.claims``; not
    ``headline.claims``, which only counts them)."""
    return any(not (isinstance(c.func.value, ast.Name) and c.func.value.id == "headline")
               for c in _calls(nb, "claims"))


def writes_measured(nb: Path) -> bool:
    """Whether a notebook writes its stage's ``measured.json`` (``StageResults.measured``: the
    claims stage joins it with the declarations)."""
    return bool(_calls(nb, "measured"))


def gathered_claims(stages: dict) -> dict[str, set[str]]:
    """For the stage that gathers every claims file (its notebook calls ``claims_table.gather()``, which
    globs ``results/*/claims.json`` and ``results/*/measured.json``): the claims (or measured)
    file of every stage whose notebook writes one."""
    nbs = {n: stage_notebook(st.get("cmd", "")) for n, st in stages.items()}
    writers = {f"results/{n}/claims.json" for n, nb in nbs.items() if nb and writes_claims(nb)} | \
        {f"results/{n}/measured.json" for n, nb in nbs.items() if nb and writes_measured(nb)}
    return {n: writers - {f"results/{n}/claims.json"} for n, nb in nbs.items()
            if nb and _calls(nb, "gather")}


DECLARATIONS = f"{PACKAGE}/claims/papers"   # what claims.declared reads at run time
RULES = "results/claim_rules/{stage}.json"   # a buying stage's rules, margins and compares (repeats.findings)


def required_files(nb: Path) -> set[str]:
    """Package files (relative to the project) a stage running ``nb`` executes, and the
    upstream result files it reads; the declarations (``claims/papers``) for a stage that
    joins claims with them. The registry of stages is left out (:data:`NOT_DEPS`)."""
    mods = {str(module_file(m).relative_to(_root())) for m in closure(notebook_modules(nb))} - set(NOT_DEPS)
    if f"{PACKAGE}/claims/declared.py" in mods:
        mods.add(DECLARATIONS)
    return mods | notebook_results(nb)


def stage_required(name: str, st: dict) -> set[str]:
    """What stage ``name`` (its dvc.yaml entry ``st``) must depend on beyond its notebook's
    closure: a measuring stage that buys runs (``decide.<name>`` among its params) reads its
    findings' steering part (:data:`RULES`)."""
    return {RULES.format(stage=name)} if f"decide.{name}" in [str(p) for p in st.get("params", [])] else set()


def _all_files() -> set[str]:
    return {str(f.relative_to(_root())) for f in (_root() / PACKAGE).rglob("*")
            if f.is_file() and "__pycache__" not in f.parts and not f.name.endswith(".pyc")}


def collapsed(files: set[str]) -> list[str]:
    """``files`` (package files and folders, relative to the project) with every package folder
    whose files are all among them listed as the folder: what a stage's deps say."""
    every = _all_files()
    out = set(files)
    folders = {str(p) for f in files for p in Path(f).parents if str(p).startswith(PACKAGE + "/")}
    for d in sorted(folders, key=lambda s: s.count("/")):
        members = {f for f in every if f.startswith(d + "/")}
        if members and all(any(_dep_covers(x, m) for x in out) for m in members):
            out = {f for f in out if not f.startswith(d + "/")} | {d}
    return sorted(f for f in out if not any(f != g and f.startswith(g + "/") for g in out))


WIDTH = 108   # dvc.yaml's lines: deps and params are flow lists wrapped at this width


def flow(key: str, items: list[str], indent: int = 4, width: int = WIDTH) -> list[str]:
    """``key: [a, b, ...]`` as YAML lines of at most ``width`` characters (an item longer than
    that on a line of its own), continuation lines indented two more than ``key``: a stage's
    deps read as a paragraph instead of a line each."""
    lines, cur = [], " " * indent + f"{key}: ["
    for i, item in enumerate(items):
        piece = item + ("]" if i == len(items) - 1 else ",")
        if len(cur) + 1 + len(piece) > width and not cur.endswith("["):
            lines.append(cur)
            cur = " " * (indent + 2) + piece
        else:
            cur += ("" if cur.endswith("[") else " ") + piece
    return lines + [cur if items else cur + "]"]


# ----------------------------------------------------------------------------- dvc.yaml

HEADER = """\
# GENERATED by `python -m experiments.pipeline.depcheck --write` from the registry of stages
# (experiments/stages.py and each measuring module's STAGE): edit those and regenerate
# (tests/test_stages.py fails on a hand edit).
#
# One stage per notebook, each writing only its own results/<stage>/ folder; downstream stages depend
# on upstream results folders, never on executed notebooks. `make repro` runs it; `dvc dag` draws it.
# Every cmd is `python -m experiments.pipeline.run_notebook NOTEBOOK results/<stage>/<stage>.ipynb`:
# papermill given only the params.yaml sections the notebook's `parameters` cell declares, its kernel's stderr
# in results/<stage>/kernel-stderr.log, DLIO_PIPELINE_STAGE=<stage> set (only this run writes
# results/<stage>/). A buying stage's out persists: make decide appends the runs it buys.
# A stage's deps: its results/ and data/ inputs, its notebook, then the package code its notebook
# reaches (the imports, walked by experiments/pipeline/depcheck.py): a package as its folder, and
# the modules of experiments/claims/ one by one unless the stage reads the declarations
# (claims/papers/ re-runs only the stages that read them).
"""

# Package files no stage lists: everything this registry says of a stage is written into that
# stage's dvc.yaml entry, which DVC compares itself, so an added stage re-runs no other.
NOT_DEPS = ("experiments/stages.py",)
# Package folders listed file by file: claims/ holds the papers' declarations, which must re-run
# only the stages that read them, not a stage that imports only the table's code (claims/table.py);
# a stage that reads them (claims/papers/) lists the folder whole. A measuring stage imports
# nothing of claims/ (it judges its looks with experiments/verdicts/: tests/test_stages.py).
BY_FILE = {"experiments/claims": "experiments/claims/papers"}


def cmd(s) -> str:
    return f"python -m experiments.pipeline.run_notebook {s.notebook} results/{s.name}/{s.name}.ipynb"


def code_deps(files: set[str]) -> list[str]:
    """Package files (relative to the project) as a stage's deps: a file at the top of
    ``experiments/`` as itself, one of a :data:`BY_FILE` folder as itself unless the stage reads
    that folder's declarations or needs all of it (:func:`experiments.pipeline.depcheck.collapsed`), any
    other as its subpackage's folder (``experiments/workloads``); :data:`NOT_DEPS` left out."""
    out, by_file = set(), set()
    for f in set(files) - set(NOT_DEPS):
        parts = f.split("/")
        folder = next((b for b in BY_FILE if f.startswith(b + "/")), None)
        if folder and not any(g == BY_FILE[folder] or g.startswith(BY_FILE[folder] + "/") for g in files):
            by_file.add(f)
        else:
            out.add(f if len(parts) <= 2 else "/".join(parts[:2]))
    return sorted(out | set(collapsed(by_file)))


def deps_of(s, gathered: dict[str, set[str]]) -> list[str]:
    """Stage ``s``'s deps in dvc.yaml: its inputs, the rules it reads (a buying stage), what it
    gathers (the claims stage), its notebook, its code (:func:`code_deps`)."""
    need = required_files(_root() / s.notebook)
    rules = [RULES.format(stage=s.name)] if s.buys else []
    results = sorted(f for f in need | gathered.get(s.name, set()) if not f.startswith(PACKAGE + "/")
                     and not any(_dep_covers(d, f) for d in (*s.inputs, *rules)))
    return [*s.inputs, *rules, *results, s.notebook,
            *code_deps({f for f in need if f.startswith(PACKAGE + "/")})]


def params_of(s) -> list[str]:
    return [*s.params, *([f"decide.{s.name}"] if s.buys else [])]


def _out(path: str, persist: bool) -> str:
    return f"{path}: {{cache: false{', persist: true' if persist else ''}}}"


def dvc_yaml() -> str:
    """The text of ``dvc.yaml`` made from the registry (:data:`experiments.stages.STAGES`)."""
    from ..stages import STAGES

    gathered = gathered_claims({s.name: {"cmd": cmd(s)} for s in STAGES})
    lines = HEADER.rstrip("\n").split("\n") + [""]
    lines += flow("metrics", [f"results/{s.name}/metrics.json" for s in STAGES if s.kind != "rules"], 0)
    plots = [p for s in STAGES for p in s.plots if isinstance(p, str)]
    lines += flow("plots", plots, 0)[:-1] + [flow("plots", plots, 0)[-1].rstrip("]") + ","]
    for s in STAGES:
        for p in s.plots:
            if isinstance(p, dict):
                (title, spec), = p.items()
                y = ", ".join(f"{k}: {v}" for k, v in spec["y"].items())
                lines.append(f"  {{{title}: {{template: {spec['template']}, x: {spec['x']}, y: {{{y}}}}}}}]")
    lines += ["", "stages:"]
    for s in STAGES:
        lines += [f"  # {ln}" for ln in textwrap.wrap(s.note, WIDTH - 4)]
        lines += [f"  {s.name}:", f"    cmd: {cmd(s)}"]
        outs = [_out(o, False) for o in s.outs] + [_out(f"results/{s.name}", s.buys or s.keep)]
        lines += flow("outs", [f"{{{o}}}" for o in outs])
        lines += flow("deps", deps_of(s, gathered))
        if params_of(s):
            lines += flow("params", params_of(s))
        lines.append("")
    return "\n".join(lines)


def write_dvc(path: Path | None = None) -> Path:
    """Write :func:`dvc_yaml` to ``dvc.yaml`` (or ``path``) atomically; returns the path."""
    from ..output.results import atomic_write

    text = dvc_yaml()
    return atomic_write(Path(path or _root() / "dvc.yaml"), lambda p: p.write_text(text))


def _dep_covers(dep: str, path: str) -> bool:
    dep = dep.rstrip("/")
    return path == dep or path.startswith(dep + "/")


def missing_deps(dvc_yaml: Path | None = None) -> dict[str, list[str]]:
    """Stage -> package files its notebook runs that its ``deps`` do not list (stages with
    nothing missing are left out)."""
    dvc_yaml = dvc_yaml or _root() / "dvc.yaml"
    stages = yaml.safe_load(Path(dvc_yaml).read_text())["stages"]
    out = {}
    gathered = gathered_claims(stages)
    for name, st in stages.items():
        nb = stage_notebook(st.get("cmd", ""))
        if nb is None:
            continue
        deps = [d if isinstance(d, str) else next(iter(d)) for d in st.get("deps", [])]
        need = required_files(nb) | gathered.get(name, set()) | stage_required(name, st)
        lack = sorted(f for f in need if not any(_dep_covers(d, f) for d in deps))
        if lack:
            out[name] = lack
    return out


def _is_type_checking(node: ast.AST) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if _is_type_checking(node):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def import_graph(root: Path | None = None) -> dict[str, set[str]]:
    """Module -> the package modules it imports at run time (anywhere in it, functions
    included; ``from pkg import mod`` counts as importing ``pkg.mod``, not ``pkg``). Parent
    packages are not added: Python runs a package's ``__init__`` before its modules, which is
    no circle. ``root`` is the project folder (default: this checkout)."""
    root = Path(root or _root())
    files = {}
    for f in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    graph = {}
    for name, f in files.items():
        out: set[str] = set()
        for node in _runtime_nodes(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in files)
            elif isinstance(node, ast.ImportFrom):
                mod = _resolve(node, name, f.name == "__init__.py")
                subs = {f"{mod}.{a.name}" for a in node.names} & files.keys()
                out |= subs
                if len(subs) < len(node.names) and mod in files:
                    out.add(mod)
        graph[name] = out - {name}
    return graph


def import_cycles(root: Path | None = None) -> list[list[str]]:
    """Groups of package modules that import each other in a circle (strongly connected
    components of :func:`import_graph` with more than one module), each sorted; [] if none."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for start in graph:  # Tarjan's algorithm, iterative (no recursion limit on deep chains)
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    return sorted(cycles)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--write"]:   # dvc.yaml is written whole from the registry of stages
        print(f"{write_dvc()}: written from experiments/stages.py, deps from the notebooks' imports")
        argv = argv[1:]
    miss = missing_deps()
    for stage, files in miss.items():
        print(f"{stage}: add to deps: " + ", ".join(files))
    if not miss:
        print("every stage lists every package module its notebook runs")
    cycles = import_cycles()
    for c in cycles:
        print("import circle: " + " <-> ".join(c))
    if not cycles:
        print("no import circle in the package")
    return 1 if miss or cycles else 0


if __name__ == "__main__":
    sys.exit(main())
