import numpy as np
import pandas as pd
import pytest

from experiments.chien import alexnet as ax
from experiments.chien import alexnet_checkpoint as ckpt
from experiments.datasets import caltech_like as cl
from experiments.settings import config
from experiments.settings.config import ConfigError
from experiments.host.tiers import Tier


def test_alexnet_has_the_papers_layers():
    import keras

    m = ax.build_model(102, 224, 1.0, 1.0)
    kinds = [type(layer).__name__ for layer in m.layers]
    assert kinds.count("Conv2D") == 5 and kinds.count("MaxPooling2D") == 3 and kinds.count("Dense") == 3
    assert m.output_shape == (None, 102)
    assert [layer.filters for layer in m.layers if isinstance(layer, keras.layers.Conv2D)] == [96, 256, 384, 384, 256]
    assert [layer.units for layer in m.layers if isinstance(layer, keras.layers.Dense)] == [4096, 4096, 102]
    assert all(layer.activation.__name__ == "relu" for layer in m.layers[:-1] if hasattr(layer, "activation"))
    small = ax.build_model(4, 64, 0.125, 0.05)
    assert small.output_shape == (None, 4)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cal") / "caltech_like"
    cl.generate(d, cl.CaltechLikeConfig(n_images=20, n_classes=3, png_fraction=0.3, workers=1), 2)
    return cl.read_manifest(d)


@pytest.mark.parametrize("prefetch", [0, 1])
def test_pipeline_yields_whole_one_hot_batches(data, prefetch):
    ds = ax.build_pipeline(list(data["abspath"]), list(data["label"]), 3, threads=2, batch_size=8,
                           prefetch=prefetch, image_size=32, seed=1)
    batches = list(ds)
    assert len(batches) == 2                              # 20 images: two whole batches of 8
    x, y = batches[0]
    assert x.shape == (8, 32, 32, 3) and y.shape == (8, 3)
    assert np.allclose(y.numpy().sum(axis=1), 1) and 0 <= float(x.numpy().min()) and float(x.numpy().max()) <= 1


def test_training_steps_and_checkpoint_round_trip(data, tmp_path):
    tr = ax.Trainer(3, 32, 0.125, 0.02, seed=1)
    ds = ax.build_pipeline(list(data["abspath"]), list(data["label"]), 3, 2, 4, 1, 32, 1)
    calls = []
    seconds, steps = ax.run_steps(tr, ds, iterations=3, on_step=lambda i: calls.append(i) or 0.5)
    assert list(steps["step"]) == [1, 2, 3] and calls == [1, 2, 3] and (steps["ckpt_s"] == 0.5).all()
    assert seconds >= steps["compute_s"].sum() and np.isfinite(steps["loss"]).all()
    want = tr.weights()
    prefix = tr.checkpoint().write(str(tmp_path / "ck"))
    assert tr.state_bytes() == sum(w.nbytes for w in want)
    other = ax.Trainer(3, 32, 0.125, 0.02, seed=2)
    assert not all(np.array_equal(a, b) for a, b in zip(want, other.weights()))
    other.checkpoint().read(prefix).assert_consumed()
    assert all(np.array_equal(a, b) for a, b in zip(want, other.weights()))


def test_summaries_compute_io_excess_and_ratios_to_fast():
    runs = pd.DataFrame([
        {"experiment": "prefetch", "tier": "disk", "threads": 1, "batch_size": 8, "prefetch": p,
         "repeat": r, "warmup": r == 0, "seconds": s, "images_per_s": 1.0, "data_s": 0.1,
         "compute_s": 1.0, "iterations": 2}
        for p, vals in [(0, [9, 5, 7]), (1, [9, 4, 4])] for r, s in enumerate(vals)])
    s = ax.summarize(runs)
    p1 = s[s["prefetch"] == 1].iloc[0]
    assert p1["seconds"] == 4 and p1["no_prefetch_seconds"] == 6 and p1["io_excess_s"] == 2
    ck = pd.DataFrame([
        {"repeat": 1, "warmup": False, "mode": m, "target": t, "seconds": sec, "stall_median_s": st,
         "stall_total_s": st * 5, "drain_done_s": sec, "checkpoints": 5, "checkpoint_MB": 100}
        for m, t, sec, st in [("none", "none", 10, 0), ("direct", "mem", 11, 0.2),
                              ("direct", "disk", 15, 1.0), ("burst", "mem>disk", 11.5, 0.3)]])
    cs = ckpt.summarize_checkpoint(ck, "mem").set_index("target")
    assert cs.loc["disk", "stall_median_s_vs_fast"] == pytest.approx(5)
    assert cs.loc["mem>disk", "overhead_s_vs_fast"] == pytest.approx(1.5)
    from experiments.chien import alexnet_report as rep
    r = rep.stall_ratios(cs.reset_index(), "mem", "disk")
    assert r["burst_speedup_stall_vs_slow"] == pytest.approx(1.0 / 0.3)
    assert r["stall_ratio_to_fast_mem"] == 1.0


def test_config_errors_name_parameter_value_and_allowed():
    with pytest.raises(ConfigError, match=r"alexnet.threads = \[0, 2\].*between 1 and 1024"):
        config.validate("alexnet", {"threads": [0, 2]})
    with pytest.raises(ConfigError, match="alexnet.prefetch"):
        config.validate("alexnet", {"prefetch": [-1]})
    with pytest.raises(ConfigError, match="a burst buffer needs two tiers"):
        config.validate("alexnet_checkpoint", {"fast": "disk", "slow": "disk"})
    with pytest.raises(ConfigError, match="interval = 30 is larger than iterations = 20"):
        config.validate("alexnet_checkpoint", {"iterations": 20, "interval": 30})
    tiers = [Tier(name="mem", path="/tmp/a"), Tier(name="disk", path="/tmp/b")]
    with pytest.raises(ConfigError, match="alexnet_checkpoint.fast = 'nvme': no such tier; allowed: mem, disk"):
        ax.tier_named("nvme", tiers, "alexnet_checkpoint.fast")
    with pytest.raises(ConfigError, match=r"alexnet.batch_size = 128: larger than the data set \(100 images\)"):
        ax.check_batches(100, {"alexnet.batch_size": 128})


def test_checkpoint_tiers_checked_before_training(tmp_path):
    tr = ax.Trainer(3, 32, 0.125, 0.02, seed=1)
    (tmp_path / "mem").mkdir()
    (tmp_path / "disk").mkdir()
    dirs = {"mem": str(tmp_path / "mem"), "disk": str(tmp_path / "disk")}
    c = ckpt.CheckpointConfig(fast_capacity_MB=0.01, iterations=4, interval=2)
    with pytest.raises(ConfigError, match="too small for one checkpoint"):
        ckpt.check_checkpoint_tiers(tr, dirs, c)
    with pytest.raises(ConfigError, match="does not exist"):
        ckpt.check_checkpoint_tiers(tr, {**dirs, "disk": str(tmp_path / "missing")}, ckpt.CheckpointConfig())
    assert ckpt.check_checkpoint_tiers(tr, dirs, ckpt.CheckpointConfig()) > tr.state_bytes()


def test_checkpoint_tier_with_missing_parent_is_refused(tmp_path, monkeypatch):
    ok = Tier(name="mem", path=str(tmp_path / "new"))
    gone = Tier(name="nvme", path=str(tmp_path / "not-mounted" / "dlio"))
    assert ckpt.prepare_checkpoint_tiers([("alexnet_checkpoint.fast", ok)]) == {"mem": str(tmp_path / "new")}
    with pytest.raises(ConfigError, match=r"alexnet_checkpoint.slow = 'nvme': tiers\[nvme\]\.path = .*: the tier directory does not exist"):
        ckpt.prepare_checkpoint_tiers([("alexnet_checkpoint.slow", gone)])
    assert not (tmp_path / "not-mounted").exists()
    # a tier inside the project (relative path) is created, parents and all
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path / "project"))
    inside = Tier(name="disk", path="data/tiers/disk")
    assert ckpt.prepare_checkpoint_tiers([("alexnet_checkpoint.slow", inside)])
    assert (tmp_path / "project" / "data" / "tiers" / "disk").is_dir()


def test_checkpoint_findings_declare_the_modes_they_compare():
    """The declarations' ``compares`` (experiments.repeats.findings), filled from the stage's
    context (its fast and slow tier, the burst buffer between them), name the modes each
    finding of Fig 9 and 10 compares: what its rounds and make decide buy."""
    from experiments.repeats import findings

    configs = [{"mode": "none", "target": "none"}, {"mode": "direct", "target": "mem"},
               {"mode": "direct", "target": "disk"}, {"mode": "burst", "target": "mem>disk"}]
    rules, ctx = findings.steering("alexnet_checkpoint"), {"fast": "mem", "slow": "disk", "burst": "mem>disk"}
    got = lambda k: findings.compared(k, configs, rules, ctx)   # noqa: E731
    assert got("burst-buffer-close-to-fast") == [1, 3]
    assert got("burst-buffer-speedup-vs-slow") == [2, 3]
    assert got("checkpoint-overhead-vs-none") == [0, 1]
    assert got("checkpoint-ssd-between-optane-and-hdd") == [1, 2]
    assert findings.of("alexnet-prefetch-faster-disk", rules) is None


def test_checkpoint_runs_then_a_decide_run_appends_its_purchase(data, tmp_path, monkeypatch):
    """The checkpoint stage's rounds (every mode once, a warm-up first), then, as ``make decide``
    re-runs it, the rows and side tables of before kept and only the purchase run after them."""
    from experiments import repeats
    from experiments.output import results
    from experiments.repeats import purchases as P

    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    for t in ("mem", "disk"):
        (tmp_path / t).mkdir()
    dirs = {"mem": str(tmp_path / "mem"), "disk": str(tmp_path / "disk")}
    tr = ax.Trainer(3, 32, 0.125, 0.02, seed=1)
    c = ckpt.CheckpointConfig(iterations=2, interval=1, batch_size=4, threads=1, runs=1, warmup=1,
                              eviction="none", dstat_interval_s=0.1)
    with monkeypatch.context() as mp:   # building the stage trains no step
        ran = []
        mp.setattr(ckpt, "run_steps", lambda *a, **k: ran.append(a))
        stage = ckpt.measuring_stage(c, tr, data, 3, dirs, 32, 1, tmp_path)
        assert len(stage.configs) == 4 and stage.rounds.max_runs == 1 and not ran
    res = ckpt.measure_checkpoint(tr, data, 3, dirs, c, 32, 1)
    runs = res.rows
    assert len(runs) == 2 * 4 and set(runs["made_by"]) == {P.FIRST}
    assert sorted(runs["repeat"].unique()) == [0, 1] and runs["warmup"].sum() == 4
    assert len(res.tables["saves"]) and set(res.tables["saves"]["repeat"]) == {0, 1}
    res.write(results.StageResults("alexnet_checkpoint"))
    monkeypatch.setenv(P.ENV, "alexnet_checkpoint")
    buy = [P.Purchase(run=1, configs=[{"mode": "burst", "target": "mem>disk"},
                                      {"mode": "direct", "target": "mem"}], runs=2)]
    more = ckpt.measure_checkpoint(tr, data, 3, dirs, c, 32, 1, buy)
    new = more.rows[more.rows["made_by"] == P.label(1)]
    assert len(more.rows) == 10 and len(new) == 2 and set(new["repeat"]) == {2}
    assert set(zip(new["mode"], new["target"])) == {("burst", "mem>disk"), ("direct", "mem")}
    assert (new["level"] > repeats.level_of(runs)).all() and not new["warmup"].any()   # one more look: wider
    saves = more.tables["saves"]
    assert len(saves) > len(res.tables["saves"]) and set(saves["repeat"]) == {0, 1, 2}
    assert set(saves["run"]) <= set(more.rows["run"]) and more.course["decide"][0]["runs"] == 2
