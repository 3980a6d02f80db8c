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

``python -m experiments.depcheck`` prints what each stage lacks and each circle (and exits 1
when there is any); ``tests/test_dvc_deps.py`` runs the same checks.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from functools import cache
from pathlib import Path

import yaml

from . import paths

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
    from .config import SECTIONS
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
    m = re.search(r"(?:papermill|experiments\.run_notebook)\s+(\S+\.ipynb)", " ".join(cmd) if isinstance(cmd, list) else cmd)
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
    joins claims with them."""
    mods = {str(module_file(m).relative_to(_root())) for m in closure(notebook_modules(nb))}
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


def _span(lines: list[str], i: int) -> int:
    """The end (exclusive) of the block that starts at line ``i`` (``    key:``): the lines
    after it indented six or more (block items, flow continuations, their comments)."""
    j = i + 1
    while j < len(lines) and lines[j].startswith("      "):
        j += 1
    return j


def stage_deps(name: str, st: dict, gathered: dict) -> tuple[list[str], list[str]] | None:
    """(the stage's deps as they should read, comments found in its deps block to keep), or None
    for a stage that runs no notebook: its notebook, its other deps (data, upstream results) in
    their order, the results it needs and lacks, then its package files from the imports
    (:func:`required_files`, folders collapsed: :func:`collapsed`); a claims or measured file no
    notebook writes any more is dropped."""
    nb = stage_notebook(st.get("cmd", ""))
    if nb is None:
        return None
    need = required_files(nb) | gathered.get(name, set()) | stage_required(name, st)
    nb = str(Path(nb).resolve().relative_to(_root()))
    deps = [d if isinstance(d, str) else next(iter(d)) for d in st.get("deps", [])]
    kept = [d for d in deps if not d.startswith(PACKAGE + "/") and d != nb and not (
        re.match(r"^results/[^/]+/(claims|measured)\.json$", d) and d not in need)]
    extra = sorted(f for f in need if not f.startswith(PACKAGE + "/") and not any(_dep_covers(h, f) for h in kept))
    mods = collapsed({f for f in need if f.startswith(PACKAGE + "/")})
    return [nb, *kept, *extra, *mods]


def write_deps(dvc_yaml: Path | None = None) -> int:
    """Rewrite every stage's ``deps`` in ``dvc.yaml`` as :func:`stage_deps` says, and its
    ``params``, each as one wrapped flow list (:func:`flow`); a comment inside either block
    moves above it, other lines are kept as they are. Returns the number of stages changed."""
    dvc_yaml = Path(dvc_yaml or _root() / "dvc.yaml")
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    gathered = gathered_claims(stages)
    lines = dvc_yaml.read_text().split("\n")
    out, i, changed = [], 0, set()
    cur = None
    while i < len(lines):
        ln = lines[i]
        m = re.match(r"^  ([A-Za-z0-9_]+):\s*$", ln)
        if m:
            cur = m.group(1)
        key = re.match(r"^    (deps|params):", ln)
        if cur in stages and key:
            j = _span(lines, i)
            block = lines[i:j]
            st = stages[cur]
            params = st.get("params", [])
            items = stage_deps(cur, st, gathered) if key.group(1) == "deps" else \
                (params if all(isinstance(p, str) for p in params) else None)
            if items is None:
                out += block
            else:
                notes = ["    " + b.strip() for b in block[1:] if b.strip().startswith("#")]
                new = notes + flow(key.group(1), items)
                if new != block:
                    changed.add(cur)
                out += new
            i = j
            continue
        out.append(ln)
        i += 1
    from .results import atomic_write

    atomic_write(dvc_yaml, lambda p: p.write_text("\n".join(out)))
    return len(changed)


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
    if argv[:1] == ["--write"]:
        n = write_deps()
        print(f"dvc.yaml: the package deps of {n} stage(s) rewritten from their notebooks' imports")
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
