"""Every measuring stage of the registry is built by one function, ``measuring_stage(cfg, ...)``
(its entry's ``builder``; ``cfg`` the stage's settings), and building runs nothing: it starts no
process and writes no file, it returns a :class:`experiments.repeats.MeasuringStage` for the
loop to run. A stage without a builder says so in its entry (``builder=None``) and why in its
module's docstring (issue 68)."""

import ast
import inspect
import multiprocessing
import os
import shutil
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from experiments import repeats, stages
from experiments.pipeline import profile
from experiments.settings import config

MEASURING = [s for s in stages.STAGES if s.kind == "measuring"]
BUILT = [s.name for s in MEASURING if s.builder]


def _docstring(module: str) -> str:
    f = Path(stages.__file__).parent.parent / (module.replace(".", "/") + ".py")
    return " ".join((ast.get_docstring(ast.parse(f.read_text())) or "").replace("*", "").split())


def test_every_measuring_stage_has_a_builder_or_says_why_not():
    """A builder named measuring_stage whose first parameter is the settings (``cfg``, annotated,
    where annotated, with the stage's settings model); or none, and the docstring says why."""
    assert len(BUILT) >= 15, BUILT
    for s in MEASURING:
        if s.builder is None:
            doc = _docstring(s.module)
            assert "no builder" in doc and "interval" in doc, f"{s.module}'s docstring: why {s.name} has no builder"
            continue
        fn = stages.builder_of(s.name)
        assert fn.__name__ == "measuring_stage", s.builder
        first = next(iter(inspect.signature(fn).parameters.values()))
        assert first.name == "cfg", f"{s.builder}: first parameter {first.name}; allowed: cfg, the settings"
        models = {ref.rpartition(":")[2] for ref in s.settings.values()}
        ann = first.annotation
        assert ann is inspect.Parameter.empty or getattr(ann, "__name__", ann) in models, (s.name, ann)


def test_a_stage_without_a_builder_is_a_measuring_one_and_other_kinds_have_none():
    S = stages.Stage
    assert S("r", "notebooks/9-r.ipynb", "report").builder is None
    assert S("m", "notebooks/9-m.ipynb", "measuring", module="experiments.x.settings").builder == \
        "experiments.x.stage:measuring_stage"
    assert S("m", "notebooks/9-m.ipynb", "measuring", module="experiments.x.m").builder == \
        "experiments.x.m:measuring_stage"
    with pytest.raises(ValueError, match="builder = 'a:b'; allowed only for a measuring stage"):
        S("r", "notebooks/9-r.ipynb", "report", builder="a:b")


# ----------------------------------------------------------------------------- building runs nothing
# The smoke profile's settings; a builder's other parameters by their names (:func:`_standins`):
# what its notebook passes, stood in where only a run reads it (a data set's manifest, a pool of
# ranks): building must not touch them. A new stage whose builder takes ``cfg``, ``tiers`` and
# ``seed`` needs nothing here; a parameter named nowhere below fails, naming it. The data sets
# are the data stages' (a unit test has none), so the workloads' check of theirs is stood in for.

def _tiers(tmp_path):
    from experiments.host.tiers import Tier

    out = []
    for name in ("mem", "disk"):
        (tmp_path / "tiers" / name).mkdir(parents=True)
        out.append(Tier(name=name, path=str(tmp_path / "tiers" / name)))
    return out


def _standins(name: str, p: dict, tmp_path, monkeypatch) -> dict:
    """{parameter: value} for stage ``name``'s builder: the common names, then the stage's own."""
    from experiments.host import launcher

    tiers = _tiers(tmp_path)
    names = [t.name for t in tiers]
    common = {"tiers": tiers, "seed": 0, "tier_names": names, "evictions": {}, "pools": launcher.Pools("x"),
              "pool": None, "staged": {}, "packs": {}, "dbs": {}, "mem": {}, "n_classes": 4, "trainer": None,
              "work_root": tmp_path / "work", "logdir": tmp_path / "logs"}
    if name == "fio_baseline":
        if not shutil.which("fio"):
            pytest.skip("fio not installed")
        return common | {"bssplit": p["imagenet_size_mix"]}
    if name == "tfdata_read":
        import tensorflow  # noqa: F401 - imported first, as its notebook does: the import runs `uname -p`
    if name == "alexnet_checkpoint":
        from experiments.chien import alexnet as ax

        a = p["alexnet"]
        return common | {"trainer": ax.Trainer(4, a["image_size"], a["width"], a["dense_width"], seed=0),
                         "m": pd.DataFrame(), "tier_dirs": {t.name: t.path for t in tiers},
                         "image_size": a["image_size"]}
    if name == "blog":
        from experiments.blog import tfrecord

        return common | {"configs": tfrecord.run_configs(names, p["blog"]["threads"], p["blog"]["workers"]),
                         "one_run": None}
    if name == "llm_checkpoint":
        return common | {"tiers": {t.name: Path(t.path) for t in tiers}}
    module = stages.BY_NAME[name].builder.partition(":")[0]
    if module == "experiments.workloads.stage":
        from experiments.workloads import stage as W

        monkeypatch.setattr(W, "check_data", lambda *a, **k: None)
        # a validation row's jobs: a sweep of a workload
        jobs = None if name in W.WORKLOADS else [W.own_job("dlrm", config.validate("dlrm", p["dlrm"]))]
        return common | {"name": name, "jobs": jobs}
    return common


def _arguments(build, given: dict) -> dict:
    """The keyword arguments of ``build`` after ``cfg``, from ``given``; a parameter without a
    default that ``given`` lacks fails, naming it."""
    out = {}
    for k, prm in list(inspect.signature(build).parameters.items())[1:]:
        if k in given:
            out[k] = given[k]
        elif prm.default is inspect.Parameter.empty:
            pytest.fail(f"{build.__module__}.{build.__name__}: no stand-in for its parameter {k!r}; "
                        "name one in tests/test_measuring_builders.py (_standins)")
    return out


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(f): (f.stat().st_size, f.stat().st_mtime_ns) for f in root.rglob("*") if f.is_file()}


@pytest.mark.parametrize("name", BUILT)
def test_building_with_the_smoke_settings_starts_no_process_and_writes_no_file(name, tmp_path, monkeypatch):
    p = profile.render("smoke")
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path / "root"))   # every project path (data/, results/) in here
    (tmp_path / "root").mkdir()
    s = stages.BY_NAME[name]
    build = stages.builder_of(name)
    if name == "traced_comparison":   # its settings are the sections it reads (tiers, the workloads')
        cfg = SimpleNamespace(**{k: config.validate(k, p[k]) for k in ("seed", "traced_comparison", "unet3d", "bert",
                                                                       "dlrm", "retinanet")},
                              tiers=config.validate("tiers", [{"name": t.name, "path": t.path}
                                                              for t in _tiers(tmp_path / "tc")]))
    else:
        section = next(iter(s.settings))
        cfg = config.validate(section, p[section])
    kwargs = _arguments(build, _standins(name, p, tmp_path, monkeypatch))
    before = _files(tmp_path)
    started = []
    me = threading.get_ident()

    def refusing(real):
        # Only this thread's calls are the builder's: the session's smoke pipeline starts its
        # stages from a thread of its own while this test runs, and must still get the real call.
        def refuse(*a, **k):
            if threading.get_ident() != me:
                return real(*a, **k)
            started.append(a[:2])
            raise AssertionError(f"building {name} started a process: {a[:2]}")
        return refuse

    with monkeypatch.context() as m:
        m.setattr(subprocess, "Popen", refusing(subprocess.Popen))   # subprocess.run and the rest start through it
        m.setattr(multiprocessing.Process, "start", refusing(multiprocessing.Process.start))
        for f in ("fork", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
            if hasattr(os, f):
                m.setattr(os, f, refusing(getattr(os, f)))
        stage = build(cfg, **kwargs)
    assert isinstance(stage, repeats.MeasuringStage) and stage.configs and not started
    assert _files(tmp_path) == before, f"building {name} wrote files"
