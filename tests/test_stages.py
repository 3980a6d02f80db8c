"""The registry of stages (experiments/stages.py) is the one list of them: what config, decide,
replicate, the forecast, the profiles and dvc.yaml say of the stages is made from it, and no
other module of the package writes a list of stage names by hand."""

import ast
import subprocess
import sys

import pytest
import yaml

from experiments.settings import config, paths
from experiments.pipeline import depcheck, forecast, profile
from experiments import stages
from experiments.repeats import purchases
from experiments.review import replicate

# Names that are both a stage and something else: unet3d, bert and dlrm are the three workloads
# too, and a list of those (a sweep over workloads) is not a list of stages.
ALSO_WORKLOADS = {"unet3d", "bert", "dlrm"}

# Lists of two or more stage names allowed outside the registry, and why.
ALLOWED = {
    ("experiments/stages.py", None): "the registry itself",
    ("experiments/workloads/report.py", "STAGE_DATA"): "the three stages whose claims that module measures, each a "
                                                        "constant of its own",
}


def _hand_lists(root):
    """(file, assigned name or function, names) for every tuple, list, set or dict literal in the
    package holding two or more stage names (string constants) beyond :data:`ALSO_WORKLOADS`, and
    for every function (or module body) that keys a mapping by two or more (``out["deepio"] =
    ...``) or compares a value with two or more (``if stage == "deepio": ... elif ...``)."""
    names = set(stages.BY_NAME) - ALSO_WORKLOADS
    out = []
    for f in sorted((root / "experiments").rglob("*.py")):
        rel = str(f.relative_to(root))
        tree = ast.parse(f.read_text())
        assigned = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                label = target.id if isinstance(target, ast.Name) else (
                    target.elts[0].id if isinstance(target, ast.Tuple) and isinstance(target.elts[0], ast.Name) else None)
                for sub in ast.walk(node):
                    assigned.setdefault(id(sub), label)
        for node in ast.walk(tree):
            elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None) \
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else None
            if elts is None:
                continue
            hit = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in names]
            if len(hit) >= 2:
                out.append((rel, assigned.get(id(node)), hit))
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        top = ast.Module([s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.ClassDef))], [])
        for scope in (top, *funcs):   # a function's nodes count in it (and in the functions around it)
            keyed = set()
            for node in ast.walk(scope):
                if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                    keyed |= {node.slice.value} & names if isinstance(node.slice, ast.Constant) else set()
                elif isinstance(node, ast.Compare):
                    keyed |= {c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)} & names
            if len(keyed) >= 2:
                out.append((rel, getattr(scope, "name", None), sorted(keyed)))
    return out


def test_no_module_lists_stage_names_by_hand():
    found = [(f, a, h) for f, a, h in _hand_lists(paths.root())
             if (f, None) not in ALLOWED and (f, a) not in ALLOWED]
    assert not found, ("stage names listed by hand (make the list from experiments/stages.py, or allow it in "
                       "ALLOWED with why):\n" + "\n".join(f"  {f} {a}: {h}" for f, a, h in found))


def test_the_hand_list_check_finds_a_list(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "x.py").write_text(
        'MINE = ("deepio", "unet3d", "lmdbio")\nW = ("unet3d", "bert")\n'
        'def configs(p):\n    out = {}\n    out["deepio"] = 1\n    out["blog"] = 2\n    return out\n'
        'def size(stage):\n    if stage == "deepio":\n        return 1\n    return 2 if stage == "lmdbio" else 3\n')
    assert _hand_lists(tmp_path) == [("experiments/x.py", "MINE", ["deepio", "lmdbio"]),
                                     ("experiments/x.py", "configs", ["blog", "deepio"]),
                                     ("experiments/x.py", "size", ["deepio", "lmdbio"])]


def test_config_decide_replicate_and_forecast_read_the_registry():
    assert config.SECTIONS == stages.sections()
    assert tuple(purchases.DecideParams.model_fields) == purchases.BUYING == stages.buying()
    assert replicate.MEASURING == forecast.MEASURING == stages.measuring()
    assert set(stages.buying()) <= set(stages.measuring())



def test_every_size_rule_and_configurations_function_exists():
    """A stage's rules are named as "module:function" (imported only when asked): each resolves."""
    named = [(s.name, ref) for s in stages.STAGES for ref in (s.size, s.configs) if ref]
    assert len(named) > 20
    for name, ref in named:
        assert callable(stages.rule(ref)), f"{name}: {ref}"


def test_every_stage_entry_names_a_notebook_and_a_report_that_exist():
    for s in stages.STAGES:
        assert (paths.root() / s.notebook).is_file(), s.name
        assert s.report is None or stages.BY_NAME[s.report].kind == "report", s.name
        if s.kind == "measuring":
            assert s.report, f"{s.name}: a measuring stage names the report stage that judges it"


def test_every_profile_lists_every_buying_stage_under_decide():
    for name in profile.PROFILES:
        assert list(profile.render(name)["decide"]) == list(stages.buying()), name


def test_a_profiles_purchases_are_kept(tmp_path, monkeypatch):
    """render fills in the buying stages a profile does not list, keeping what it lists."""
    bought = [{"run": 1, "configs": [{"tier": "disk"}], "runs": 2}]
    base = yaml.safe_load((paths.profiles_dir() / "default.yaml").read_text())
    base["decide"] = {"deepio": bought}
    (tmp_path / "default.yaml").write_text(yaml.safe_dump(base))
    monkeypatch.setattr(paths, "profiles_dir", lambda: tmp_path)
    got = profile.render("default")["decide"]
    assert got["deepio"] == bought and list(got) == list(stages.buying())
    assert all(v == [] for k, v in got.items() if k != "deepio")


def test_reading_one_stages_settings_imports_no_framework():
    code = ("import sys\nfrom experiments import stages\nfrom experiments.settings import config\n"
            "for s in stages.STAGES:\n    [config.model_for(k) for k in s.settings]\n"
            "bad = [m for m in ('tensorflow', 'torch') if m in sys.modules]\nassert not bad, bad\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=paths.root(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]


def test_dvc_yaml_is_the_generators_output():
    """dvc.yaml is written whole from the registry (``python -m experiments.pipeline.depcheck --write``):
    a hand edit fails here."""
    depcheck._module_imports.cache_clear()
    assert (paths.root() / "dvc.yaml").read_text() == depcheck.dvc_yaml(), \
        "dvc.yaml differs from the registry's: edit experiments/stages.py, run python -m experiments.pipeline.depcheck --write"


def test_dvc_yaml_puts_each_stages_inputs_before_its_code_and_says_it_is_generated():
    text = (paths.root() / "dvc.yaml").read_text()
    assert text.startswith("# GENERATED by `python -m experiments.pipeline.depcheck --write`")
    st = yaml.safe_load(text)["stages"]
    assert list(st) == [s.name for s in stages.STAGES]
    for name, v in st.items():
        deps = [str(d) for d in v["deps"]]
        code = [i for i, d in enumerate(deps) if d.startswith("experiments/")]
        data = [i for i, d in enumerate(deps) if d.startswith(("results/", "data/", "env/"))]
        assert not data or not code or max(data) < min(code), name
    assert "env/reference-times.csv" in st["claims"]["deps"]


def test_code_deps_are_package_folders_and_claims_files_unless_the_declarations_are_read():
    files = {"experiments/workloads/stage.py", "experiments/workloads/data_bert.py", "experiments/__init__.py",
             "experiments/host/cache.py", "experiments/claims/table.py", "experiments/stages.py",
             "experiments/repeats/decide/pricing.py"}
    assert depcheck.code_deps(files) == ["experiments/__init__.py", "experiments/claims/table.py",
                                         "experiments/host", "experiments/repeats", "experiments/workloads"]
    reads = depcheck.code_deps(files | {"experiments/claims/papers/chien2018-tensorflow-io.yaml"})
    assert reads == ["experiments/__init__.py", "experiments/claims", "experiments/host", "experiments/repeats",
                     "experiments/workloads"]


def _of_claims(names) -> list[str]:
    """The ``names`` (package paths or module names) that are ``experiments/claims/`` or in it."""
    return sorted(n for n in names if n.replace(".", "/") == "experiments/claims"
                  or n.replace(".", "/").startswith("experiments/claims/"))


def test_no_measuring_stage_depends_on_the_claims():
    """A measuring stage (or a data stage) judges its looks and writes what it measured with
    ``experiments/verdicts/``, and reads its findings' rules from results/claim_rules/<stage>.json,
    never the declarations: neither a changed quote nor a change to the claims table's code
    (``experiments/claims/``) re-measures anything. Checked on the generated dvc.yaml's deps, on
    the package files its notebook reaches (what ``--write`` generates them from), and on the
    imports of the modules the registry names for it (its declaring module, settings, builder)."""
    st = yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"]
    for s in stages.STAGES:
        if s.kind not in ("measuring", "data"):
            continue
        assert not _of_claims(str(d) for d in st[s.name]["deps"]), f"{s.name}: dvc.yaml deps"
        assert not _of_claims(depcheck.required_files(paths.root() / s.notebook)), f"{s.name}: its notebook"
        mods = {ref.split(":")[0] for ref in (s.module, s.builder, *s.settings.values()) if ref}
        reached = depcheck.closure(mods)
        assert not _of_claims(reached), f"{s.name}: {sorted(mods)} import {_of_claims(reached)}"
    assert stages.named("measuring") and stages.named("data")


def test_every_pipeline_notebook_is_committed_without_outputs_and_with_cell_ids():
    """nbformat warns (and will refuse) a cell without an id, and the smoke run's log must stay
    free of error-like lines; notebooks are committed without outputs."""
    import json
    for s in stages.STAGES:
        nb = json.loads((paths.root() / s.notebook).read_text())
        for i, c in enumerate(nb["cells"]):
            assert "id" in c, f"{s.notebook}: cell {i} has no id (nbformat's normalize() adds them)"
            assert not c.get("outputs") and c.get("execution_count") is None, f"{s.notebook}: cell {i} has outputs"


def _declaring(tmp_path, files: dict[str, str]):
    pkg = tmp_path / "experiments"
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    return pkg


def test_a_modules_own_entry_is_found_without_importing_it(tmp_path):
    """``STAGE = Stage(...)`` (or a tuple of them) in any module, read with ast: the module itself
    would fail to import; its bare names are its own, a report module's STAGE string is no entry."""
    pkg = _declaring(tmp_path, {
        "toy/__init__.py": "",
        "toy/stage.py": 'import no_such_module\n_IN = ("data/a",)\n'
                        'STAGE = Stage("toy", "notebooks/70-toy.ipynb", "measuring", {"toy": "Settings"}, ("toy",),\n'
                        '              True, "toy_report", (*_IN, *(f"results/{w}" for w in ("x", "y"))), size="size")\n',
        "toy/report.py": 'STAGE = "toy_report"\n',
        "two.py": 'STAGE = (Stage("b", "notebooks/72-b.ipynb", "measuring", configs="other.mod:f"),\n'
                  '         Stage("a", "notebooks/71-a.ipynb", "data"))\n'})
    got = {s.name: s for s in stages.discover(pkg)}
    assert set(got) == {"toy", "a", "b"}
    toy = got["toy"]
    assert toy.module == "experiments.toy.stage" and toy.settings == {"toy": "experiments.toy.stage:Settings"}
    assert toy.size == "experiments.toy.stage:size" and toy.inputs == ("data/a", "results/x", "results/y")
    assert got["b"].configs == "other.mod:f" and got["a"].module == "experiments.two"


def test_a_declaration_that_needs_running_code_stops_with_where_it_is(tmp_path):
    pkg = _declaring(tmp_path, {"bad.py": 'import os\nSTAGE = Stage("bad", os.environ["NB"], "measuring")\n'})
    with pytest.raises(ValueError, match=r"experiments/bad.py: STAGE: .*literals"):
        stages.discover(pkg)


def test_the_order_puts_a_stage_after_what_it_reads_and_a_name_twice_stops():
    S = stages.Stage
    got = stages.in_order([S("late_report", "notebooks/05-r.ipynb", "report", inputs=("results/m/x.csv",)),
                           S("m", "notebooks/40-m.ipynb", "measuring", inputs=("data/d",)),
                           S("d", "notebooks/41-d.ipynb", "data", outs=("data/d",)),
                           S("all", "notebooks/99-c.ipynb", "claims"), S("first", "notebooks/00-f.ipynb", "rules")])
    assert [s.name for s in got] == ["first", "d", "m", "late_report", "all"]
    with pytest.raises(ValueError, match="declared twice"):
        stages.in_order([S("m", "notebooks/40-m.ipynb", "measuring"), S("m", "notebooks/41-m.ipynb", "measuring")])


def test_every_measuring_stage_is_declared_in_its_module():
    """One way to add a measuring stage: its module's STAGE (stages.py lists only the others)."""
    for s in stages.STAGES:
        assert (s.kind == "measuring") == (s.module is not None), s.name


def test_the_rounds_settings_are_one_model():
    """``runs``, ``max_runs`` and ``budget_s`` are declared once (``repeats.rounds.Rounds``,
    which checks max_runs >= runs): a section with a maximum of rounds inherits it."""
    from experiments.repeats.rounds import Rounds

    adding = [s for s in config.SECTIONS if "max_runs" in getattr(config.model_for(s), "model_fields", {})]
    assert len(adding) >= 4
    assert [s for s in adding if not issubclass(config.model_for(s), Rounds)] == []
    with pytest.raises(config.ConfigError, match=r"deepio\.max_runs = 3: .*below runs = 4"):
        config.validate("deepio", {**profile.render("smoke")["deepio"], "runs": 4, "max_runs": 3})
    assert config.model_for("deepio").look_every == 4 and Rounds.look_every == 1


def test_no_settings_model_names_the_count_of_runs_by_an_old_word():
    """Issue 68: the count of runs is ``runs`` everywhere (``max_runs``, ``sweep.runs``,
    ``train_runs``); no section, nor any model nested in one, declares an old name again."""
    from pydantic import BaseModel

    old = set(config.RENAMED)
    assert old >= {"repeats", "max_repeats", "min_repeats"}   # the old words
    seen, todo, found = set(), [config.model_for(s) for s in config.SECTIONS], []
    while todo:
        m = todo.pop()
        if m in seen or not (isinstance(m, type) and issubclass(m, BaseModel)):
            continue
        seen.add(m)
        found += [f"{m.__name__}.{f}" for f in m.model_fields if f in old]
        for f in m.model_fields.values():
            todo += [a for a in (f.annotation, *getattr(f.annotation, "__args__", ()))
                     if isinstance(a, type) and issubclass(a, BaseModel)]
    assert len(seen) > len(config.SECTIONS) // 2 and found == []
