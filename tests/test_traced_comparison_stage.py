"""The traced comparison as a measuring stage (experiments.sidebyside.stage) with its passes
faked: a run is one pass of a workload, its rows one per side; what ``write`` derives from every
pass; a decide run appending passes keeps the first pass's traces and timelines."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments.settings import config
from experiments.output import results
from experiments.repeats import purchases
from experiments.sidebyside import stage
from experiments.trace.vector import KEYS


class _Section:
    def model_dump(self, mode="json"):
        return {"train": {}}


def _vec(reads):
    v = {k: 10.0 for k in KEYS}
    v.update(vfs_reads=reads)
    return v


def _done(workload: str, n: int, emu_reads: float, data_ns: float) -> dict:
    """A finished pass as :func:`experiments.sidebyside.sides.finish_workload` returns it: real
    and emulator measured (steps, phases), DLIO not."""
    res, recs, tp = {}, {}, []
    for side, reads in (("real", 10.0), ("emulator", emu_reads), ("dlio", None)):
        ok = reads is not None
        res[side] = {"side": side, "workload": workload, "status": "measured" if ok else "not measured",
                     "why": "" if ok else "no mpiexec here", "backend": "strace", "eviction": "fadvise",
                     "wall_s": 1.0, "run_dir": f"/runs/{workload}/{side}", "trace": None,
                     "vector": _vec(reads) if ok else None, "dlio": None}
        steps = pd.DataFrame({"workload": workload, "ranks": 1, "batch_size": 2, "variant": side, "repeat": 0,
                              "rank": 0, "epoch": np.repeat([0, 1, 2], 4), "step": np.tile(range(4), 3),
                              "samples": 2.0, "data_ns": data_ns, "compute_ns": 1e6, "step_ns": data_ns + 1e6})
        phases = pd.DataFrame({"workload": workload, "variant": side, "rank": 0, "phase": "train",
                               "epoch": [0, 1, 2], "seconds": 1.0})
        recs[side] = ({"steps": steps, "loader": pd.DataFrame(), "phases": phases, "usage": {"cpu_s": 2.0}}
                      if ok else {"steps": pd.DataFrame(), "loader": pd.DataFrame(), "phases": pd.DataFrame()})
        tp.append({"workload": workload, "side": side, "batch_size": 2, "ranks": 1, "status": res[side]["status"],
                   "why": res[side]["why"], "backend": "strace", "wall_s": 1.0,
                   "data_sps": 2 / (data_ns / 1e9) if ok else np.nan, "compute_sps": 2000.0 if ok else np.nan})
    return {"results": res, "records": recs, "throughput": pd.DataFrame(tp), "data_dir": f"/data/{workload}",
            "checkpoint_root": "/nonexistent/checkpoints"}


@pytest.fixture
def faked(tmp_path, monkeypatch):
    """A project root in ``tmp_path``, the pipeline running ``traced_comparison``, each pass faked."""
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    monkeypatch.setenv(results.PIPELINE_ENV, "traced_comparison")
    monkeypatch.setattr(stage.sides, "pick_tier", lambda tiers, name: SimpleNamespace(dir=tmp_path / "tier"))
    made, seeds = [], []

    class Trace:
        def __init__(self, k):
            self.k = k
            self.events, self.samples, self.meta = pd.DataFrame({"t_s": [0.5, float(k)]}), pd.DataFrame(), {}

        def save(self, path):
            path.write_text(f"pass {self.k}")

    def fake(workload, section, tc, seed, tier, work_root, desc=None, parents=None):
        made.append(workload)
        seeds.append((workload, seed))
        k = len(made)
        done = _done(workload, k, emu_reads=10.0 + k, data_ns=1e6 * (1 + 0.01 * k))
        done["results"]["real"]["trace"] = Trace(k)
        return done

    def timelines(done):
        return [{"name": f"fig_{w}_real", "workload": w, "side": "real", "title": "t", "bin_s": 1.0,
                 "io": pd.DataFrame({"t_s": [0.0], "MBps": [1.0]}), "phases": None} for w in done]

    monkeypatch.setattr(stage, "timeline_inputs", timelines)

    monkeypatch.setattr(stage, "trace_pass", fake)
    tc = config.validate("traced_comparison", {"points": {"unet3d": {"batch_size": 2, "ranks": 1},
                                                          "bert": {"batch_size": 2, "ranks": 1}},
                                               "sides": ["real", "emulator", "dlio"], "runs": 2})
    cfg = SimpleNamespace(traced_comparison=tc, tiers=None, seed=3, unet3d=_Section(), bert=_Section())
    return SimpleNamespace(cfg=cfg, made=made, seeds=seeds, root=tmp_path)


def _write(f, appending=False, bought=()):
    m, kept = stage.measure(f.cfg, f.root / "work", bought)
    out = results.StageResults("traced_comparison", clean=False)
    stage.write(out, m, kept, {"traced_comparison": {"runs": 2}}, appending=appending)
    return m, out.dir


def test_a_run_is_one_pass_of_a_workload_with_a_row_per_side(faked):
    m, d = _write(faked)
    assert sorted(faked.made) == ["bert", "bert", "unet3d", "unet3d"]   # 2 rounds of each workload
    rows = pd.read_csv(d / "throughput.csv")
    assert len(rows) == 4 * 3 and rows.groupby("run")["side"].apply(sorted).map(tuple).nunique() == 1
    assert set(rows.groupby("run")["workload"].nunique()) == {1}         # a pass is one workload's
    assert set(rows["made_by"]) == {purchases.FIRST} and rows["run_s"].notna().all()
    emu = rows[rows["side"] == "emulator"]
    assert (emu["similarity"] < 1).all() and (rows.loc[rows["side"] == "real", "similarity"] == 1).all()
    assert rows.loc[rows["side"] == "dlio", "status"].eq("not measured").all()
    # side tables carry their pass: steps, vectors, components
    steps = pd.read_csv(d / "side_steps.csv")
    assert set(steps["run"]) == set(rows["run"]) and set(steps["side"]) == {"real", "emulator"}
    assert set(pd.read_csv(d / "vectors.csv")["run"]) == set(rows["run"])
    # the validation layout: the emulator's passes, each a run of its own
    runs = pd.read_csv(d / "runs.csv")
    assert len(runs[runs["variant"] == "emulator"]) == 4 and runs["run"].nunique() == 4
    assert "run" in pd.read_parquet(d / "raw.parquet")
    # the tables of the median vectors name the passes; the similarity rows are every pass's
    md = (d / "table_5_1_unet3d.md").read_text()
    assert "median over 2 pass(es)" in md and "| dlio | not measured |" in md
    vec = json.loads((d / "vectors.json").read_text())
    assert vec["unet3d"]["dlio"] is None and vec["unet3d"]["emulator"]["vfs_reads"] > 10
    assert json.loads((d / "why.json").read_text())["bert"]["dlio"] == "no mpiexec here"
    assert len(pd.read_csv(d / "similarity.csv")) == 12
    var = pd.read_csv(d / "variance.csv")
    sim = var[(var["quantity"] == "similarity") & var["configuration"].str.contains("side=emulator")]
    assert len(sim) == 2 and (sim["runs"] == 2).all()
    course = json.loads((d / "rounds.json").read_text())
    assert course["keys"] == ["workload"] and course["rows_file"] == "throughput.csv"


def test_each_pass_draws_its_own_seed_shared_by_its_sides(faked):
    """A pass's sides share one seed (they read the same files in the same order), and each pass
    of a workload has its own (seed + pass, as a workload stage's runs): with one seed for
    every pass, RetinaNet's passes read the same files and repeated one similarity to 4 digits."""
    _write(faked)
    by = {}
    for w, s in faked.seeds:
        by.setdefault(w, []).append(s)
    assert by == {"unet3d": [3, 4], "bert": [3, 4]}


def test_a_decide_run_appends_passes_and_keeps_the_first_pass_files(faked, monkeypatch):
    _, d = _write(faked)
    first = (d / "trace_bert_real.parquet").read_text()
    listed = json.loads((d / "timelines.json").read_text())
    assert first.startswith("pass ") and {t["workload"] for t in listed} == {"unet3d", "bert"}
    # the report reads the timeline file beside the full trace, which ends where the trace did
    t = next(t for t in listed if t["workload"] == "bert")
    assert (t["trace"], t["full_trace"]) == ("timeline_bert_real.parquet", "trace_bert_real.parquet")
    assert pd.read_parquet(d / t["trace"])["t_s"].tolist() == [float(first.split()[1])]
    monkeypatch.setenv(purchases.ENV, "traced_comparison")
    bought = [purchases.Purchase(run=1, configs=[{"workload": "bert"}], runs=2)]
    n = len(faked.made)
    m, d = _write(faked, appending=True, bought=bought)
    assert faked.made[n:] == ["bert", "bert"]                       # only the purchase ran
    rows = pd.read_csv(d / "throughput.csv")
    assert rows["run"].nunique() == 6 and (rows["made_by"] == "decide 1").sum() == 2 * 3
    assert (d / "trace_bert_real.parquet").read_text() == first     # the first pass's trace, kept
    assert sorted(t["workload"] for t in json.loads((d / "timelines.json").read_text())) == ["bert", "unet3d"]
    assert "median over 4 pass(es)" in (d / "table_5_2_bert.md").read_text()
    # from scratch, the first pass's files of before go
    monkeypatch.delenv(purchases.ENV)
    (d / "trace_dlrm_real.parquet").write_text("a workload no longer compared")
    _write(faked)
    assert not (d / "trace_dlrm_real.parquet").exists() and (d / "trace_bert_real.parquet").read_text() != first


def test_bad_input_stops_before_any_pass(faked):
    faked.cfg.traced_comparison = config.validate("traced_comparison", {
        "points": {"unet3d": {"batch_size": 2, "ranks": 1}}, "sides": ["emulator"]})
    with pytest.raises(config.ConfigError, match="real"):
        stage.measure(faked.cfg, faked.root / "work")
    assert faked.made == []
    with pytest.raises(config.ConfigError, match="runs"):
        config.validate("traced_comparison", {"points": {"unet3d": {"batch_size": 2, "ranks": 1}}, "runs": 0})


def test_each_side_runs_on_its_data_set_evicted_just_before_it(tmp_path, monkeypatch):
    """Like with like by default (issue 66): every side starts from the same cold data set: the
    one eviction helper (experiments.host.cache.evict) runs on the side's data, with the section's
    method (``auto`` unless set), right before that side, never once for all."""
    import contextlib

    from experiments.host import cache, device_audit
    from experiments import emulator
    from experiments.sidebyside import settings, sides
    from experiments.workloads import launch

    events = []
    monkeypatch.setattr(cache, "evict", lambda paths, method="auto": events.append(("evict", [str(p) for p in paths], method)) or method)
    monkeypatch.setattr(launch, "run_config", lambda w, sec, B, G, seed, data, run_dir, compute=None, variant="",
                        parents=None: events.append(("run", variant)))
    monkeypatch.setattr(emulator, "from_params", lambda *a, **k: "cfg")
    monkeypatch.setattr(emulator, "run", lambda cfg, run_dir, parents=None: events.append(("run", "emulator")))

    class _Span:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    monkeypatch.setattr(device_audit, "Span", _Span)
    session = SimpleNamespace(window=lambda label: contextlib.nullcontext(SimpleNamespace(trace=None)))
    assert settings.TracedComparisonConfig.model_fields["eviction"].default == "auto"
    data = tmp_path / "data"
    data.mkdir()
    for side in ("real", "emulator"):
        sides.run_side(side, "unet3d", {"train": {}}, 2, 1, seed=0, data_dir=data, work_dir=tmp_path / "w",
                       checkpoint_root=tmp_path / "ck", compute_model="fit", session=session)
    assert events == [("evict", [str(data)], "auto"), ("run", "real"), ("evict", [str(data)], "auto"),
                      ("run", "emulator")]


@pytest.mark.parametrize("ranks", [1, 2])
def test_one_rank_sides_fork_from_the_stages_warm_parent_which_the_session_follows(tmp_path, monkeypatch, ranks):
    """At one rank a pass's sides fork from the stage's warm parent of the workload's framework,
    started (once a stage) before the pass's tracer session, which follows its pid; at two ranks
    nothing is forked, no parent starts and the session follows only this process's tree."""
    from experiments import trace

    events = []

    class Session:
        def __init__(self, follow=(), **kw):
            events.append(("session", tuple(follow)))

        def __enter__(self):
            return self

        def __exit__(self, *a):
            events.append("session end")

    class Parents:
        def serves(self, ranks):
            return ranks == 1

        def get(self, framework):
            events.append(("parent", framework))
            return SimpleNamespace(pid=4242)

    monkeypatch.setattr(trace, "Session", Session)
    monkeypatch.setattr(stage.sides, "prepare_workload", lambda w, *a: {"sides": ["real", "emulator", "dlio"]})
    monkeypatch.setattr(stage.sides, "run_workload", lambda prep, tc, seed, session, progress_desc=None, parents=None:
                        events.append(("sides", parents is not None)) or {"results": {}})
    monkeypatch.setattr(stage.sides, "finish_workload", lambda got: dict(got))
    tc = SimpleNamespace(points={"dlrm": SimpleNamespace(batch_size=64, ranks=ranks)}, backend="auto")
    stage.trace_pass("dlrm", {}, tc, 0, SimpleNamespace(dir=tmp_path), tmp_path / "w", parents=Parents())
    if ranks == 1:
        assert events == [("parent", "torch"), ("session", (4242,)), ("sides", True), "session end"]
    else:
        assert events == [("session", ()), ("sides", False), "session end"]


def test_the_stage_forks_two_rank_sides_too(monkeypatch):
    """The stage's warm parents serve two-rank points (``multi_rank``), as the workload stages'
    do: a DLRM pass at two ranks took 35 s forked against 61 s fresh, its compute throughputs
    within the fresh passes' spread (docs/measured/2026-11-29-traced-2rank/)."""
    from experiments import repeats
    from experiments.host import warm_launch

    made = []

    class Parents(warm_launch.Parents):
        def __init__(self, **kw):
            super().__init__(**kw)
            made.append(self)

    monkeypatch.setattr(warm_launch, "Parents", Parents)
    monkeypatch.setattr(stage, "measuring_stage", lambda cfg, work_root, kept: kept)
    monkeypatch.setattr(repeats, "measure", lambda kept, purchases: kept.parents.serves(2))
    served, kept = stage.measure(None, "w")
    assert served is True and len(made) == 1 and made[0].serves(2)
