"""The package's layers, in order (issue 68): every import of a module of ``experiments/`` (at
the top or inside a function, as ``depcheck.import_graph`` reads them with ``ast``) stays in its
layer or goes down, and the packages import each other in no circle.

A *unit* is a package directly under ``experiments/`` (``settings``, ``host``, ``repeats``,
``verdicts``, ``claims``, ``chien``, ...) or a loose module there (``stages``, the registry). :data:`LAYERS` lists the layers from the
bottom; a unit named in none of them is a stage package (``STAGES``), so a new stage needs no
entry here, while a new module that the foundations import must be placed among them. Within a
layer units may import one another, as long as no two of them (nor a longer circle) do so both
ways.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.pipeline import depcheck

STAGES = "every unit not named in another layer: the stage packages (chien, blog, deepio, ...)"

# bottom first; an import may go to its own layer or any layer below
LAYERS: tuple[tuple[str, object], ...] = (
    ("the registry", {"stages"}),          # experiments/stages.py: imports nothing of the package
    ("settings", {"settings"}),            # paths, config, the shared sections, the papers' numbers
    ("host", {"host"}),                    # tiers, page cache, host info, dstat, device audit, launchers
    ("statistics", {"statistics"}),        # intervals over runs and their coverage
    ("output", {"output"}),                # results writer, headline, provenance, progress
    ("figures", {"figures"}),              # the one figure style: what report stages draw with
    ("the measuring loop", {"repeats"}),   # MeasuringStage, rounds, looks, futility, purchases
    ("verdicts", {"verdicts"}),            # rules, a claim's verdict, reasons, Measured, a finding's judge at a look
    ("claims", {"claims"}),                # the papers' declarations, the claims table, a report's levels
    ("data sets", {"datasets"}),           # the generated sets the stages read (their checks are claims)
    ("stages", STAGES),
    ("the pipeline's commands", {"pipeline", "course"}),   # dvc.yaml, run_notebook, profiles, plan, bench; the labs
    ("review", {"review"}),                # make decide, make replicate, make compare-claims; make figures
)


def unit(module: str) -> str | None:
    """``experiments.repeats.stage`` -> ``repeats``; ``experiments.stages`` -> ``stages``; None
    for the package itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def unit_graph(root: Path | None = None) -> dict[str, dict[str, list[str]]]:
    """{unit: {unit it imports: ["module -> module", ...]}}, imports inside a unit left out."""
    out: dict[str, dict[str, list[str]]] = {}
    for m, imported in depcheck.import_graph(root).items():
        a = unit(m)
        if a is None:
            continue
        out.setdefault(a, {})
        for t in sorted(imported):
            b = unit(t)
            if b is not None and b != a:
                out[a].setdefault(b, []).append(f"{m} -> {t}")
    return out


def layer_of(u: str, layers=LAYERS) -> int:
    named = [i for i, (_, units) in enumerate(layers) if units is not STAGES and u in units]
    return named[0] if named else next(i for i, (_, units) in enumerate(layers) if units is STAGES)


def upward(graph, layers=LAYERS) -> list[str]:
    """The imports that run back up the layers, one line each."""
    return [f"{how}  ({layers[layer_of(a, layers)][0]} -> {layers[layer_of(b, layers)][0]})"
            for a, outs in sorted(graph.items()) for b, hows in sorted(outs.items())
            if layer_of(b, layers) > layer_of(a, layers) for how in hows]


def mutual(graph) -> list[str]:
    """Pairs of units that import each other, with one import each way."""
    return [f"{a} <-> {b}: {graph[a][b][0]}; {graph[b][a][0]}"
            for a in sorted(graph) for b in sorted(graph[a]) if a < b and a in graph.get(b, {})]


def circles(graph) -> list[list[str]]:
    """Groups of units that reach each other through their imports (more than one unit each)."""
    reach = {u: set(outs) for u, outs in graph.items()}
    changed = True
    while changed:   # transitive closure: a few dozen units
        changed = False
        for u in reach:
            more = set().union(*(reach.get(v, set()) for v in reach[u])) - reach[u]
            if more:
                reach[u] |= more
                changed = True
    groups = {frozenset({u} | {v for v in reach[u] if u in reach.get(v, set())}) for u in reach}
    return sorted(sorted(g) for g in groups if len(g) > 1)


@pytest.fixture(scope="module")
def graph():
    """This checkout's unit graph, read once for the tests below (ast over every module)."""
    return unit_graph()


def test_no_import_runs_back_up_the_layers(graph):
    bad = upward(graph)
    assert not bad, "imports that run back up the layers (move the name down, or the importer up; " \
        "tests/test_import_layers.py LAYERS lists the order):\n" + "\n".join("  " + b for b in bad)


def test_no_two_packages_import_each_other(graph):
    assert not mutual(graph), "packages that import each other:\n" + "\n".join("  " + m for m in mutual(graph))
    assert not circles(graph), f"packages in an import circle: {circles(graph)}"


def test_the_measuring_loop_imports_nothing_of_the_claims(graph):
    """The layer order says it; this names the boundaries issue 68 was about, so that a change
    of LAYERS cannot drop them silently: the measuring loop and what the measuring stages judge
    their looks with (``verdicts``) import nothing of the claims (which
    ``tests/test_stages.py`` checks stage by stage)."""
    assert layer_of("statistics") < layer_of("repeats") < layer_of("verdicts") < layer_of("claims") \
        < layer_of("chien") < layer_of("review")
    assert "claims" not in graph.get("repeats", {})
    assert "claims" not in graph.get("verdicts", {})


def test_every_named_unit_exists_and_stands_in_one_layer(graph):
    """A name left in LAYERS after its module moved would place nothing."""
    units = set(graph)
    named = [u for _, us in LAYERS if us is not STAGES for u in us]
    assert len(named) == len(set(named)), "a unit named in two layers"
    assert set(named) <= units, f"LAYERS names what is no unit of experiments/: {sorted(set(named) - units)}"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        f = tmp_path / "experiments" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path


def test_a_lazy_import_back_up_is_found(tmp_path):
    """A lazy import (inside a function) that runs back up is found, and the pair it makes."""
    root = _package(tmp_path, {
        "low/__init__.py": "",
        "low/loop.py": "def f():\n    from ..high import judge\n",   # lazy, upward
        "high/__init__.py": "",
        "high/judge.py": "from ..low.loop import f\n",
        "base.py": "",
    })
    layers = (("base", {"base"}), ("low", {"low"}), ("high", {"high"}))
    graph = unit_graph(root)
    assert upward(graph, layers) == ["experiments.low.loop -> experiments.high.judge  (low -> high)"]
    assert mutual(graph) == ["high <-> low: experiments.high.judge -> experiments.low.loop; "
                             "experiments.low.loop -> experiments.high.judge"]
    assert circles(graph) == [["high", "low"]]


def test_a_circle_through_three_packages_within_one_layer_is_found(tmp_path):
    root = _package(tmp_path, {"a.py": "from . import b\n", "b.py": "from . import c\n",
                               "c.py": "def f():\n    from . import a\n", "d.py": "from . import a\n"})
    graph = unit_graph(root)
    assert upward(graph, (("all", STAGES),)) == [] and mutual(graph) == []
    assert circles(graph) == [["a", "b", "c"]]
