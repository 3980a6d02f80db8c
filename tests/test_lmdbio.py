"""LMDBIO: the database, its provenance, the layout and every strategy (tiny inputs)."""

import os

import pandas as pd
import pytest

from experiments.settings import config
from experiments.statistics import stats
from experiments.lmdbio import read as lmdbio
from experiments.lmdbio import report as lmdbio_report
from experiments.settings.config import ConfigError


def _cfg(**kw):
    base = {"datasets": [{"name": "t", "records": 60, "record_bytes": 3072}], "procs": [1, 3],
            "ranks_per_node": 2, "batch_size": 4, "coalesce": 2, "map_size_mib": 16}
    return lmdbio.LMDBIOConfig(**{**base, **kw})


def test_provenance_offsets_point_at_the_records(tmp_path):
    for size in (3072, 112640, 100):
        prov = lmdbio.build(tmp_path / f"db{size}", 20, size, 64 << 20, seed=5)
        fd = os.open(tmp_path / f"db{size}" / "data.mdb", os.O_RDONLY)
        try:
            for i in (0, 7, 19):
                got = os.pread(fd, size, int(prov["offset"][i]))
                assert got == lmdbio.record_bytes(i, size, 5)
        finally:
            os.close(fd)


def test_build_is_reused_and_atomic(tmp_path):
    a = lmdbio.build(tmp_path / "db", 10, 3072, 16 << 20, seed=1)
    mtime = (tmp_path / "db" / "data.mdb").stat().st_mtime_ns
    b = lmdbio.build(tmp_path / "db", 10, 3072, 16 << 20, seed=1)
    assert a.equals(b) and (tmp_path / "db" / "data.mdb").stat().st_mtime_ns == mtime
    assert not (tmp_path / "db.partial").exists()


def test_layout_covers_every_record_once():
    for procs, rpn, records, batch in [(1, 4, 50, 8), (3, 2, 61, 4), (8, 4, 1000, 16)]:
        seen = []
        for node in lmdbio.layout(records, procs, rpn, batch):
            for r in range(node["rounds"]):
                for local in range(len(node["members"])):
                    first = node["lo"] + r * node["per_round"] + local * batch
                    seen += list(range(first, min(first + batch, node["hi"])))
        assert sorted(seen) == list(range(records))


@pytest.mark.parametrize("strategy", lmdbio.STRATEGIES)
def test_every_strategy_delivers_every_byte(tmp_path, strategy):
    cfg = _cfg()
    prov = lmdbio.build(tmp_path / "db", 60, 3072, 16 << 20, seed=2)
    for p in (1, 3):
        per = lmdbio.run(tmp_path / "db", prov, strategy, p, cfg, 3072)
        assert per["bytes"].sum() == 60 * 3072 and len(per) == p
        assert (per["context_switches"] >= 0).all()


@pytest.mark.parametrize("bad,match", [
    ({"procs": [0]}, r"lmdbio\.procs.*P must be between 1"),
    ({"map_size_mib": 1, "datasets": [{"name": "big", "records": 1, "record_bytes": 2 << 20}]},
     r"record_bytes = 2097152 is larger than the LMDB map size"),
    ({"map_size_mib": 1, "datasets": [{"name": "many", "records": 1000, "record_bytes": 3072}]},
     r"raise map_size_mib"),
    ({"strategies": ["mmap"]}, r"unknown strategies"),
])
def test_bad_input_stops_before_any_work(bad, match):
    raw = {"datasets": [{"name": "t", "records": 10, "record_bytes": 3072}], **bad}
    with pytest.raises(ConfigError, match=match):
        config.validate("lmdbio", raw)


def test_summary_and_claims(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    rows = []
    for ds in ("cifar", "imagenet"):
        for s, sec, cs in (("lmdb", 4.0, 100), ("lmm", 2.0, 50), ("dio_prov", 1.5, 40),
                           ("coal", 1.0, 30), ("stag", 0.9, 30)):
            for p in (1, 2):
                for i in range(6):
                    f = float(rng.normal(1, 0.01))
                    rows.append({"tier": "disk", "memory_backed": False, "dataset": ds, "strategy": s,
                                 "P": p, "repeat": i, "seconds": sec * f, "MBps": 1.0 / f,
                                 "cs_per_proc": cs + 7, "cs_vol_per_proc": cs * f, "cs_invol_per_proc": 7})
    raw = pd.DataFrame(rows)
    s = lmdbio.summarize(raw)
    c1 = s[(s["strategy"] == "stag") & (s["dataset"] == "cifar") & (s["P"] == 1)]["speedup_vs_lmdb"].iloc[0]
    assert c1 == pytest.approx(4 / 0.9, rel=0.05)
    env = {"cpu": {"count": 1}, "cold_runs": {"disk": {"resident_fraction_max": 0.5}}}
    c = {x["id"]: x for x in lmdbio_report.claims(s, "disk", env, raw=raw)}
    measured = [x for x in c.values() if x["our_value"] is not None]
    assert all(x["holds"] for x in measured) and len(measured) == 12 and len(c) == 17   # 3 Caffe rows and 2 of the headline pass not measured
    assert all(x["n"] == 6 and x["ci_low"] is not None for x in measured)
    # the steps are judged at the largest P that fits the cores (here 1); marked warm (50 % resident)
    assert "P = 1" in c["lmdbio_coal_faster_than_dio_prov_cifar"]["statement"]
    # context switches: all of them (57 / 107 here; no wait columns), judged on the P with more
    # than one process (none fits the 1 core: the smallest, P = 2); P = 1 in the note
    sw = c["lmdbio_lmm_fewer_switches_cifar"]
    assert sw["our_value"] == pytest.approx(57 / 107, rel=0.01) and "P = 2)" in sw["statement"]
    assert sw["cold"] is False and "P = 2: LMM" in sw["note"] and "not judged (P = 1" in sw["note"]
    stag = c["lmdbio_stag_beats_lmdb_every_p_cifar"]
    # "in all cases" is judged on the lowest speed-up; the 77-fold (9,216 processes) is its own row
    assert stag["verdict"] == "holds" and stag["paper_value"] is None and "lmdbio_caffe_77x" in stag["note"]
    big = c["lmdbio_caffe_77x_faster_at_9216"]
    assert big["paper_value"] == 77 and big["verdict"] == "not measured" and "9,216 processes" in big["note"]
    assert stag["basis"] == "stated" and "P = 1, 2" in stag["statement"]
    # the paper ran only CIFAR10-Large: ImageNet rows are our extension, with no paper value
    im = c["lmdbio_stag_beats_lmdb_every_p_imagenet"]
    assert im["basis"] == "extension" and im["paper_value"] is None and im["verdict"] == "holds"
    assert c["lmdbio_coal_faster_than_dio_prov_cifar"]["basis"] == "implied"
    assert c["lmdbio_lmm_faster_than_lmdb_cifar"]["basis"] == "stated"
    assert c["lmdbio_stag_faster_than_coal_cifar"]["basis"] == "stated"
    assert "LMM-DM" in c["lmdbio_dio_prov_faster_than_lmm_cifar"]["statement"]
    # the paper's 9,216-process numbers are rows, not measured here, with the reason
    for k, v in (("lmdbio_caffe_660x_from_ideal_scaling", 660), ("lmdbio_read_90pct_of_training", 90)):
        assert c[k]["verdict"] == "not measured" and c[k]["paper_value"] == v and "9,216" in c[k]["note"]
    # without the runs there is no interval: no finding holds on a point
    point = lmdbio_report.claims(s, "disk", env)
    assert {x["verdict"] for x in point} == {"inconclusive", "not measured"}
    # a data set with no runs is still a row, "not measured", with the reason
    none = lmdbio_report.claims(s[s["tier"] == "nothing"], "disk", env)
    assert none and {x["verdict"] for x in none} == {"not measured"}


def test_every_p_rows_judge_the_p_beyond_the_cores():
    """STAG "in all cases" sees a P above the cores: it loses at P = 4 (lowest speed-up < 1)
    though it wins at P <= 2; the switch row is judged over the P that fit the cores, as the
    steps are (the paper's ranks each had a core): LMM's more switches at P = 4 on 2 cores
    are in its note (4x), not its value."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    rows = []
    for s, sec, cs in (("lmdb", 4.0, 100), ("lmm", 2.0, 50), ("dio_prov", 1.5, 40),
                       ("coal", 1.0, 30), ("stag", 0.9, 30)):
        for p in (1, 2, 4):
            bad = p == 4 and s in ("stag", "lmm")
            for i in range(6):
                f = float(rng.normal(1, 0.01))
                c = (400 if bad else cs) * f
                rows.append({"tier": "disk", "memory_backed": False, "dataset": "cifar", "strategy": s,
                             "P": p, "repeat": i, "seconds": (8.0 if bad else sec) * f, "MBps": 1.0,
                             "cs_per_proc": c, "cs_vol_per_proc": c - 5, "cs_invol_per_proc": 5})
    raw = pd.DataFrame(rows)
    env = {"cpu": {"count": 2}}
    c = {x["id"]: x for x in lmdbio_report.claims(lmdbio.summarize(raw), "disk", env, raw=raw)}
    stag, sw = c["lmdbio_stag_beats_lmdb_every_p_cifar"], c["lmdbio_lmm_fewer_switches_cifar"]
    assert stag["our_value"] == pytest.approx(0.5, rel=0.05) and stag["verdict"] == "fails"
    assert "P = 4: 0.50x" in stag["note"]
    assert sw["our_value"] == pytest.approx(0.5, rel=0.05) and sw["verdict"] == "holds"
    assert "P = 2)" in sw["statement"] and "P = 4: 4.04x" in sw["note"] and "P = 1: 0.497x" in sw["note"]
    assert c["lmdbio_stag_faster_than_coal_cifar"]["verdict"] == "holds"   # judged at P = 2


def test_switch_claim_judges_the_switches_outside_mpi_waits():
    """LMM's ranks switch 4x as often as LMDB's in all, but outside MPI's hand-over waits half
    as often: the claim (the paper's switches are I/O wake-ups) judges the latter, 0.5 holds,
    and its note keeps the totals with the waits."""
    import numpy as np
    import pandas as pd

    per = pd.DataFrame({"context_switches": [10, 30], "cs_voluntary": [8, 20], "cs_involuntary": [2, 10],
                        "cs_wait_voluntary": [6, 20], "cs_wait_involuntary": [0, 4]})
    assert lmdbio.io_switches(per) == {"cs_io_per_proc": 5.0, "cs_io_vol_per_proc": 1.0,
                                       "cs_io_invol_per_proc": 4.0, "cs_wait_per_proc": 15.0}
    rng = np.random.default_rng(2)
    rows = []
    for s, tot, io in (("lmdb", 100, 100), ("lmm", 400, 50)):
        for p in (1, 2, 4):
            for i in range(8):
                f = float(rng.normal(1, 0.01))
                rows.append({"tier": "disk", "memory_backed": False, "dataset": "cifar", "strategy": s,
                             "P": p, "repeat": i, "seconds": 1.0 * f, "MBps": 1.0,
                             "cs_per_proc": tot * f, "cs_vol_per_proc": tot * f - 5, "cs_invol_per_proc": 5,
                             "cs_io_per_proc": io * f, "cs_io_vol_per_proc": io * f - 5,
                             "cs_io_invol_per_proc": 5, "cs_wait_per_proc": (tot - io) * f})
    raw = pd.DataFrame(rows)
    c = {x["id"]: x for x in lmdbio_report.claims(lmdbio.summarize(raw), "disk", {"cpu": {"count": 2}},
                                                 raw=raw)}["lmdbio_lmm_fewer_switches_cifar"]
    assert c["our_value"] == pytest.approx(0.5, rel=0.05) and c["verdict"] == "holds"
    assert "outside MPI's hand-over waits" in c["statement"]
    assert "with MPI's waits, all switches" in c["note"] and "LMM 400" in c["note"]


def test_spinning_hand_over_makes_no_sleeps_where_a_barrier_sleeps_every_round(tmp_path):
    """The context-switch finding depends on how a node's consumers wait for its reader: with
    multiprocessing.Barrier every wait sleeps (a voluntary switch per barrier), with the
    MPI-like spinning hand-over the consumers never sleep (docs/lmdbio.md)."""
    rounds = 100
    prov = lmdbio.build(tmp_path / "db", 2 * 4 * rounds, 512, 16 << 20, seed=3)
    for _ in range(3):
        vol = {}
        for handover in ("sleep", "spin"):
            cfg = _cfg(handover=handover, ranks_per_node=2, batch_size=4)
            per = lmdbio.run(tmp_path / "db", prov, "lmm", 2, cfg, 512)
            assert per["bytes"].sum() == 2 * 4 * rounds * 512
            vol[handover] = int(per.loc[~per["reader"], "cs_voluntary"].iloc[0])
        if vol["sleep"] >= rounds / 10:   # a CI beside two simulations once saw 4 of 100: tried again
            break
    # two barriers a round: idle, the consumer arrives first (and sleeps) at about half of them;
    # on a loaded box its reader is often preempted first, so it sleeps less (15 of 100 rounds
    # seen at a load of 5): the rule is that sleeping hand-overs sleep and spinning ones do not
    assert vol["sleep"] >= rounds / 10, vol
    assert vol["spin"] <= min(rounds / 10, vol["sleep"] / 2), vol


def test_measure_records_processes_residency_and_the_hand_over_check(tmp_path):
    from experiments.host import cache, tiers
    cache.reset_log()
    t = tiers.Tier(name="disk", path=str(tmp_path / "disk"))
    cfg = _cfg(procs=[1, 2], strategies=["lmdb", "lmm"])
    m, facts = lmdbio.measure([t], cfg, seed=1)
    raw = m.rows
    assert set(raw["strategy"]) == {"lmdb", "lmm"} and (raw["handover"] == "spin").all()
    assert raw["resident_fraction"].notna().all()
    per = m.tables["processes"]
    assert len(per) == raw["P"].sum() and {"cs_voluntary", "cs_involuntary"} <= set(per)
    h = facts["handover_check"]
    assert set(zip(h["strategy"], h["handover"])) == {("lmdb", "none"), ("lmm", "spin"), ("lmm", "sleep")}
    assert set(h["P"]) == {1, 2}
    table = lmdbio_report.handover_table(h)
    assert set(table["role"]) == {"every process", "reader", "consumer"}
    assert cache.summary()["disk"]["evictions"] == len(raw) + len(h.groupby(["strategy", "handover", "P"]))
    cache.reset_log()
    # the runs' launcher and scale, for env.json
    assert (raw["nodes"] == 1).all() and facts["launcher"]["launcher"] in ("mpiexec", "srun")
    assert facts["launcher"]["mpi"]["library"] and facts["scale"]["procs_max"] == 2


def _steps_rows(runs, effect, noise, seed=0):
    """Runs of the five strategies at P = 1, 2 on one disk tier: each step ``effect`` times
    faster than the one before (1: no effect), seconds with relative ``noise``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for k, s in enumerate(lmdbio.STRATEGIES):
        for p in (1, 2):
            for i in range(runs):
                f = float(rng.normal(1, noise))
                sec = 4.0 / effect ** k * f
                rows.append({"tier": "disk", "memory_backed": False, "dataset": "cifar", "strategy": s,
                             "P": p, "nodes": 1, "repeat": i, "warmup": False, "seconds": sec,
                             "MBps": 1.0 / sec, "cs_per_proc": (100 / effect ** min(k, 1)) * f,
                             "cs_vol_per_proc": 90 * f, "cs_invol_per_proc": 10.0})
    return pd.DataFrame(rows)


def test_the_rounds_judge_like_the_report_a_clear_effect_decides_noise_at_few_repeats_does_not():
    """The stage's rounds judge its findings by their declared rules alone (the same measure
    function as the report, experiments.verdicts.looks.judge): the same verdicts."""
    from experiments.claims import steering
    from experiments.verdicts import looks

    env = {"cpu": {"count": 2}, "handover": "spin", "params": {"lmdbio": {"ranks_per_node": 2}}}
    level = 1 - 0.05 / 3
    judge = looks.judge("lmdbio", lambda rows, tables: lmdbio.findings_of(rows, env), rules=steering.rules("lmdbio"))
    clear = judge(_steps_rows(8, 2.0, 0.01), {}, level)
    # the report's findings with a value: the switches, the four steps, stag over every P
    assert len(clear) == 6 and all(clear.values()), clear
    noise = judge(_steps_rows(4, 1.0, 0.2), {}, level)
    assert set(noise) == set(clear) and not any(noise.values()), noise
    # the report judges rows at their level: 4 noisy runs cannot reach 98.3 %, 8 can
    rows = _steps_rows(8, 2.0, 0.01).assign(level=level)
    c = {x["id"]: x for x in lmdbio_report.claims(lmdbio.summarize(rows), "disk", env, raw=rows)}
    assert all(c[k]["holds"] for k in clear)   # the stag row: direction only (16x, not 77x)
    cov = c["lmdbio_lmm_faster_than_lmdb_cifar"]["ci_coverage"]   # simulated (issue 64): 1.4 x the misses
    assert cov is None or 1 - cov <= stats.SLACK * (1 - level) + 1e-9


def _fake_measure(monkeypatch, seconds_of):
    """lmdbio.measure with its database, eviction and ranks faked: each run's per-process rows
    from ``seconds_of(strategy, P)``."""
    import pandas as pd
    from types import SimpleNamespace

    class Pools:
        def __init__(self, module):
            self.sizes = []

        def get(self, p, n=1):
            return None

        def close(self):
            pass

    def run(dest, prov, strategy, p, cfg, size, nodes=1, verify=False, pool=None):
        sec = seconds_of(strategy, p)
        return pd.DataFrame([{"proc": q, "node": 0, "reader": q == 0, "bytes": 1000, "t0": 0.0, "t1": sec,
                              "context_switches": 10, "cs_voluntary": 9, "cs_involuntary": 1, "records": 4}
                             for q in range(p)])

    monkeypatch.setattr(lmdbio, "run", run)
    monkeypatch.setattr(lmdbio, "build", lambda *a, **k: pd.DataFrame({"offset": [0], "bytes": [1]}))
    monkeypatch.setattr(lmdbio, "require_room", lambda *a, **k: None)
    monkeypatch.setattr(lmdbio, "prepare", lambda t: SimpleNamespace(memory_backed=False))
    monkeypatch.setattr(lmdbio.cache, "evict", lambda *a, **k: SimpleNamespace(resident_fraction=0.0))
    monkeypatch.setattr(lmdbio.launcher, "Pools", Pools)


def test_measure_runs_in_seeded_rounds_up_to_max_repeats(monkeypatch, tmp_path):
    import numpy as np
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    _fake_measure(monkeypatch, lambda s, p: float(rng.uniform(1, 2)))   # no effect, much noise
    t = SimpleNamespace(name="disk", dir=tmp_path)
    cfg = _cfg(procs=[1, 2], strategies=["lmdb", "lmm"], runs=2, max_runs=5, handover_check=False)
    m, facts = lmdbio.measure([t], cfg, seed=3)
    raw, seq = m.rows, m.course
    assert {"level", "repeat", "round_order", "warmup", "run", "run_s"} <= set(raw)
    assert raw["repeat"].max() == 4 and len(raw) == 5 * 4   # undecided: every round up to the maximum
    assert seq["plan"]["max_runs"] == 5 and len(seq["order"]) == len(raw)
    # no effect: none holds; a t interval over the runs may rule an effect out before the maximum
    # (decided: fails), the others run to it (issue 64: decided from 3 runs a side)
    stopped = {f["stopped"] for f in seq["findings"].values()}
    assert "maximum" in stopped and stopped <= {"maximum", "decided"}
    # rounds: every configuration once, in a seeded order that differs between rounds
    orders = [tuple(g["strategy"] + g["P"].astype(str)) for _, g in raw.groupby("repeat", sort=True)]
    assert all(len(set(o)) == 4 for o in orders) and len(set(orders)) > 1
    assert (raw["level"] == seq["plan"]["level"]).all() and seq["plan"]["level"] < 0.95 + 0.05
    assert len(m.tables["processes"]) == raw["P"].sum() and facts["scale"]["procs_max"] == 2
    assert set(m.variance["quantity"]) == {"seconds", "cs_per_proc"} and (m.variance["runs"] == 5).all()
    # a fixed count (max_runs None): exactly runs rounds, at 95 %
    m2, _ = lmdbio.measure([t], cfg.model_copy(update={"max_runs": None}), seed=3)
    assert m2.rows["repeat"].max() == 1 and (m2.rows["level"] == 0.95).all()
    # building the stage runs nothing: no LMDB read, no eviction
    ran = []
    monkeypatch.setattr(lmdbio, "run", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(lmdbio.cache, "evict", lambda *a, **k: ran.append(a))
    dbs, mem = lmdbio.databases([t], cfg, 3)
    stage = lmdbio.measuring_stage(cfg, [t], dbs, mem, 3, lmdbio.launcher.Pools("x"), {})
    assert len(stage.configs) == 4 and stage.rounds.max_runs == 5 and not ran


def test_scale_rows_say_the_processes_they_need_and_had():
    rows = _steps_rows(6, 2.0, 0.01)
    env = {"cpu": {"count": 2}, "scale": {"procs_max": 8, "nodes_max": 1, "allocation_nodes": 1}}
    c = {x["id"]: x for x in lmdbio_report.claims(lmdbio.summarize(rows), "disk", env, raw=rows)}
    for k in ("lmdbio_caffe_660x_from_ideal_scaling", "lmdbio_read_90pct_of_training"):
        note = c[k]["note"]
        assert c[k]["verdict"] == "not measured"
        assert "9,216 processes" in note and "at most 8 processes over 1 node(s)" in note, note
        assert "allocation of 1 node(s)" in note and "9,208 more than here" in note
        assert "training" in note and "lmdbio.procs" in note


def test_claims_judge_the_one_node_runs_only():
    """Runs spread over an allocation's nodes (nodes > 1) never enter a one-node interval:
    adding wildly different two-node rows leaves every finding's value and interval as they were."""
    env = {"cpu": {"count": 2}, "handover": "spin", "params": {"lmdbio": {"ranks_per_node": 2}}}
    rows = _steps_rows(8, 2.0, 0.01).assign(nodes=1)
    spread = rows[rows["P"] > 1].assign(nodes=2, seconds=lambda d: d["seconds"] * (1 + 9 * (d["strategy"] == "stag")))
    one = {c["id"]: c for c in lmdbio_report.claims(lmdbio.summarize(rows), "disk", env, raw=rows)}
    both_rows = pd.concat([rows, spread], ignore_index=True)
    both = {c["id"]: c for c in lmdbio_report.claims(lmdbio.summarize(both_rows), "disk", env, raw=both_rows)}
    for k, c in one.items():
        if c["kind"] == "finding" and c["verdict"] != "not measured":
            assert (c["our_value"], c.get("ci_low"), c.get("ci_high")) == \
                (both[k]["our_value"], both[k].get("ci_low"), both[k].get("ci_high")), k


def test_switch_note_names_the_kind_of_switch_that_makes_the_excess():
    """The why of the context-switch row follows the measured kind: an involuntary excess (the
    default run: LMM 1.5 + 31,120 against LMDB 41.8 + 6.0 at P = 4) is preemption of spinning
    consumers, not their waits; a voluntary one is sleeping hand-overs."""
    from experiments.lmdbio.findings import _nodes_words, _switch_kind

    inv = _switch_kind(4, {4: 1.5}, {4: 31120.2}, {4: 41.8}, {4: 6.0}, "spin", 2)
    assert "involuntary" in inv and "preempts" in inv and "waits for their reader" not in inv
    vol = _switch_kind(2, {2: 300.0}, {2: 5.0}, {2: 30.0}, {2: 4.0}, "sleep", 2)
    assert "voluntary (300.0" in vol and "sleep" in vol
    # counted outside MPI's waits: preemption above the cores, the box's other load within them
    assert "preempts ranks" in _switch_kind(4, {4: 1.5}, {4: 155.0}, {4: 36.5}, {4: 4.9}, "spin", 2, io=True)
    assert "other load" in _switch_kind(2, {2: 1.5}, {2: 55.0}, {2: 36.5}, {2: 4.9}, "spin", 2, io=True)
    assert _nodes_words(2, 4) == "one node of 2 ranks"
    assert _nodes_words(8, 4) == "2 emulated nodes of up to 4 ranks each, on this one host"


def test_focus_keeps_the_configurations_each_undecided_finding_needs():
    """The rounds run, on the judged tier, only what the undecided findings compare (their
    declarations' ``compares``, filled from the stage's context): a step finding, its two
    strategies at the P the steps are judged at (the most processes within the cores); STAG "in
    all cases", LMDB and STAG at every P; the switches, LMM and LMDB at the P with more than one
    process that fit the cores."""
    import pandas as pd

    from experiments.claims import steering
    from experiments.lmdbio import read
    from experiments.repeats import findings

    strategies = ("lmdb", "lmm", "dio_prov", "coal", "stag")
    configs = [{"tier": t, "dataset": ds, "strategy": s, "P": p, "nodes": 1} for t in ("mem", "disk")
               for ds in ("cifar", "imagenet") for s in strategies for p in (1, 2, 4)]
    rows = pd.DataFrame([{**c, "memory_backed": c["tier"] == "mem", "seconds": 1.0, "MBps": 1.0, "cs_per_proc": 1.0,
                          "cs_vol_per_proc": 1.0, "cs_invol_per_proc": 0.0, "warmup": False} for c in configs])
    env = {"cpu": {"count": 2, "affinity": 2}}
    focus = findings.focus("lmdbio", configs, lambda r: read.context(r, env), rules=steering.rules("lmdbio"))
    key = lambda i: tuple(configs[i].values())   # noqa: E731
    got = focus(["lmdbio_stag_beats_lmdb_every_p_cifar", "lmdbio_coal_faster_than_dio_prov_cifar"], rows)
    assert sorted(key(i) for i in got) == sorted(
        {("disk", "cifar", s, p, 1) for s in ("lmdb", "stag") for p in (1, 2, 4)}
        | {("disk", "cifar", s, 2, 1) for s in ("coal", "dio_prov")})
    sw = focus(["lmdbio_lmm_fewer_switches_imagenet"], rows)
    assert sorted(key(i) for i in sw) == [("disk", "imagenet", "lmdb", 2, 1), ("disk", "imagenet", "lmm", 2, 1)]
    keep = focus(["lmdbio_coal_faster_than_dio_prov_cifar"], rows)
    assert sorted(key(i) for i in keep) == sorted(("disk", "cifar", s, 2, 1) for s in ("coal", "dio_prov"))
    both = focus(["lmdbio_coal_faster_than_dio_prov_cifar", "lmdbio_stag_faster_than_coal_imagenet"], rows)
    assert {configs[i]["dataset"] for i in both} == {"cifar", "imagenet"} and len(both) == 4



def test_a_purchase_widens_the_intervals_of_the_findings_it_bought_for_and_of_no_other():
    """Issue 57: rows bought for one finding (LMM against LMDB at the judged P) carry one more
    look; that finding's interval is judged at the higher level, every finding that compares
    other configurations keeps its value, interval and verdict."""
    env = {"cpu": {"count": 2}, "handover": "spin", "params": {"lmdbio": {"ranks_per_node": 2}}}
    rows = _steps_rows(8, 2.0, 0.03).assign(level=0.95, made_by="repro")
    before = {c["id"]: c for c in lmdbio_report.claims(lmdbio.summarize(rows), "disk", env, raw=rows)}
    extra = _steps_rows(2, 2.0, 0.03, seed=9)
    extra = extra[extra["strategy"].isin(["lmm", "lmdb"]) & (extra["P"] == 2)].assign(
        level=1 - 0.05 / 2, made_by="decide 1", repeat=lambda d: d["repeat"] + 8)
    both = pd.concat([rows, extra], ignore_index=True)
    after = {c["id"]: c for c in lmdbio_report.claims(lmdbio.summarize(both), "disk", env, raw=both)}
    from experiments.claims import steering
    from experiments.repeats import findings

    rules, ctx = steering.rules("lmdbio"), lmdbio.context(both, env)
    level = lambda k: findings.level_of_finding(k, both, rules, ctx)   # noqa: E731
    assert level("lmdbio_lmm_faster_than_lmdb_cifar") == pytest.approx(1 - 0.05 / 2)   # its data bought
    assert level("lmdbio_dio_prov_faster_than_lmm_cifar") == pytest.approx(1 - 0.05 / 2)   # it compares LMM too
    for k in ("lmdbio_coal_faster_than_dio_prov_cifar", "lmdbio_stag_faster_than_coal_cifar"):
        assert level(k) == 0.95
        assert (after[k]["our_value"], after[k]["ci_low"], after[k]["ci_high"], after[k]["verdict"]) == \
            (before[k]["our_value"], before[k]["ci_low"], before[k]["ci_high"], before[k]["verdict"]), k
    assert after["lmdbio_lmm_faster_than_lmdb_cifar"]["ci_low"] != before["lmdbio_lmm_faster_than_lmdb_cifar"]["ci_low"]
