"""DeepIO: the randomization level, the orders, the training loop and the loader (tiny inputs)."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments import repeats
from experiments.settings import config
from experiments.deepio import experiment as deepio
from experiments.deepio import report as deepio_report
from experiments.deepio import randomization as rz
from experiments.settings.config import ConfigError


def test_rl_of_full_shuffle_and_constant_order():
    n = 1000
    _, c = rz.shuffled_order(n, np.random.default_rng(0))
    assert rz.rl_from_choices(c, n)["RL"] == pytest.approx(1.0)
    assert rz.rl_blocked(n, 1) == pytest.approx(1.0)
    assert rz.rl_blocked(n, n) == 0.0
    order, c = rz.blocked_order(n, n, np.random.default_rng(0))
    assert list(order) == list(range(n)) and rz.rl_from_choices(c, n)["RL"] == 0.0


def test_rl_blocked_closed_form_matches_generated_orders_and_falls_with_k():
    n = 1347
    rls = []
    for k in (1, 4, 16, 256):
        order, c = rz.blocked_order(n, k, np.random.default_rng(k))
        assert sorted(order) == list(range(n))
        m = rz.rl_from_choices(c, n)
        assert m["RL"] == pytest.approx(rz.rl_blocked(n, k))
        assert m["draws"] == math.ceil(n / k)
        rls.append(m["RL"])
    assert rls == sorted(rls, reverse=True)


def test_blocks_keep_constant_order_inside():
    order, _ = rz.blocked_order(64, 16, np.random.default_rng(3))
    for b in range(4):
        blk = order[16 * b:16 * b + 16]
        assert list(np.diff(blk)) == [1] * 15 and blk[0] % 16 == 0


@pytest.mark.parametrize("ratio,procs", [(1.0, 1), (0.5, 2), (0.25, 3), (0.1, 4)])
def test_opportunistic_order_serves_every_sample_once(ratio, procs):
    n = 203
    order, c = rz.opportunistic_order(n, ratio, procs, chunk=8, seed=1)
    assert sorted(order) == list(range(n))
    assert (c >= 1).all()
    # it never holds more than its buffer: candidates <= R * share (rounded), at least 1
    assert c.max() <= max(1, round(ratio * math.ceil(n / procs)))


def test_opportunistic_reads_are_sequential_chunks_and_rl_falls_with_memory():
    rng = np.random.default_rng(0)
    order, c, reads = rz.opportunistic_schedule(0, 100, 25, 10, rng)
    assert sum(cnt for _, cnt in reads) == 100 and all(s % 10 == 0 for s, _ in reads)
    hi = rz.rl_from_choices(rz.opportunistic_order(1000, 1.0, 1, 16, 1)[1], 1000)["RL"]
    lo = rz.rl_from_choices(rz.opportunistic_order(1000, 0.05, 1, 16, 1)[1], 1000)["RL"]
    assert 0 < lo < hi <= 1


def test_same_seed_same_order_in_every_process():
    a = rz.opportunistic_order(300, 0.5, 2, 16, seed=7, epoch=2)[0]
    b = rz.opportunistic_order(300, 0.5, 2, 16, seed=7, epoch=2)[0]
    c = rz.opportunistic_order(300, 0.5, 2, 16, seed=7, epoch=3)[0]
    assert list(a) == list(b) and list(a) != list(c)


@pytest.mark.parametrize("bad,match", [
    ({"ratios": [0.0]}, r"deepio\.ratios.*\(0, 1\]"),
    ({"ratios": [1.5]}, r"deepio\.ratios.*\(0, 1\]"),
    ({"block_sizes": [0]}, r"deepio\.block_sizes.*k must be >= 1"),
    ({"procs": [0]}, r"deepio\.procs.*P must be between 1"),
])
def test_bad_input_stops_with_named_parameter(bad, match):
    with pytest.raises(ConfigError, match=match):
        config.validate("deepio", bad)


def test_rejects_bad_r_and_p_in_the_generator_too():
    with pytest.raises(ValueError, match="R"):
        rz.opportunistic_order(10, 0, 1, 2, 0)
    with pytest.raises(ValueError, match="P"):
        rz.opportunistic_order(10, 0.5, 0, 2, 0)
    with pytest.raises(ValueError, match="k"):
        rz.blocked_order(10, 0, np.random.default_rng(0))


def test_training_learns_digits_with_a_full_shuffle():
    cfg = deepio.DeepIOConfig(epochs=5, train_runs=1)
    X, y, Xva, yva = deepio.digits_data(1)
    assert list(y) == sorted(y)  # stored in class order: the constant order
    acc = deepio.train(lambda e: np.random.default_rng(e).permutation(len(X)), X, y, Xva, yva, cfg, 0)
    assert len(acc) == 5 and acc[-1] > 0.8


def test_loader_reads_every_byte_in_both_modes(tmp_path):
    sizes = [100, 5000, 300, 70000, 20, 4096] * 5
    files = []
    for i, s in enumerate(sizes):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i % 256]) * s)
        files.append(str(p))
    m = pd.DataFrame({"abspath": files, "bytes": sizes})
    index = deepio.pack(m, tmp_path / "pack")
    blob = (tmp_path / "pack" / "samples.bin").read_bytes()
    assert blob[index["offset"][3]:index["offset"][3] + 70000] == bytes([3]) * 70000
    for mode in ("ordered", "opportunistic"):
        r = deepio.run_loader(tmp_path / "pack" / "samples.bin", index, mode, 2, 0.5, 4, 1)
        assert r["bytes"] == sum(sizes) and r["served"] == len(sizes)
    ordered = deepio.run_loader(tmp_path / "pack" / "samples.bin", index, "ordered", 1, 0.5, 4, 1)
    opp = deepio.run_loader(tmp_path / "pack" / "samples.bin", index, "opportunistic", 1, 0.5, 4, 1)
    assert ordered["requests"] == len(sizes) and opp["requests"] == math.ceil(len(sizes) / 4)


def test_report_claims_compute_verdicts():
    rl = deepio.rl_table(1347, [1, 4], 0, {4: 73})
    curves = pd.DataFrame([
        {"figure": f, "k": k, "R": r, "P": p, "train_seed": seed, "epoch": 1,
         "val_accuracy": acc + 0.002 * seed, "RL_percent": rlp}
        for f, k, r, p, acc, rlp in (("fig7", 1, None, None, 0.9, 100), ("fig7", 4, None, None, 0.7, 78),
                                     ("fig8", None, 0.5, 1, 0.89, 95))
        for seed in range(6)])
    loader = pd.DataFrame([
        {"tier": "disk", "mode": m, "R": 0.5, "P": 1, "MBps": v, "RL_percent": rlp}
        for m, v, rlp in (("ordered", 100.0, 100.0), ("opportunistic", 300.0, 90.0))])
    loader = pd.concat([loader, pd.DataFrame([
        {"tier": "mem", "mode": m, "R": 0.5, "P": p, "MBps": v, "RL_percent": 90.0}
        for p in (1, 2) for m, v in (("ordered", 200.0), ("opportunistic", 100.0 * p))])])
    raw = pd.DataFrame([{**r, "repeat": i, "MBps": r["MBps"] * (1 + 0.01 * (i - 1))}
                        for r in loader.to_dict("records") for i in range(6)])
    fio = pd.DataFrame({"tier": ["mem", "mem"], "job": ["seqread", "randread"], "bw_MBps": [4000.0, 3000.0]})
    env = {"cold_runs": {"mem": {"resident_fraction_max": 1.0, "memory_backed": True},
                         "disk": {"resident_fraction_max": 0.0, "memory_backed": False}}}
    c = {x["id"]: x for x in deepio_report.claims(rl, curves, loader, "disk", env, fio, raw=raw)}
    assert c["deepio_fig7_low_rl_hurts"]["holds"] and c["deepio_fig8_opportunistic_keeps_accuracy"]["holds"]
    assert c["deepio_fig7_low_rl_hurts"]["n"] == 6 and c["deepio_fig7_low_rl_hurts"]["basis"] == "implied"
    assert c["deepio_fig10_opp_faster_R0.5"]["our_value"] == pytest.approx(3.0)
    assert c["deepio_fig10_opp_faster_R0.5"]["n"] == 6
    assert c["deepio_rl_k4"]["paper_value"] == 73 and c["deepio_rl_k4"]["kind"] == "check"
    # the poster's k = 16 and 256 were not in block_sizes: rows, not measured, with the reason
    assert c["deepio_rl_k16"]["verdict"] == "not measured" and "no k = 16" in c["deepio_rl_k16"]["note"]
    # ordered beats opportunistic on mem at P = 1 (issue 14): the claim fails with fio's reason
    m = c["deepio_opp_faster_every_p_mem"]
    assert m["kind"] == "finding" and m["our_value"] == pytest.approx(0.5) and m["verdict"] == "fails"
    assert "random read 3,000 MB/s, sequential 4,000 MB/s" in m["note"] and m["memory_backed"]
    assert c["deepio_opp_faster_every_p_disk"]["verdict"] == "holds"
    assert c["deepio_opp_faster_every_p_disk"]["cold"] is True
    # the poster's BeeGFS bandwidths are rows with their numbers, not measured here
    assert c["deepio_beegfs_small_dataset_MBps"]["paper_value"] == 7411.98
    assert c["deepio_beegfs_large_dataset_MBps"]["verdict"] == "not measured"
    assert c["deepio_beegfs_small_dataset_MBps"]["figure"] == "Problem Statement panel"
    # the memory tier has no backend storage: the every-P row there is our extension
    assert m["basis"] == "extension" and c["deepio_opp_faster_every_p_disk"]["basis"] == "implied"
    assert c["deepio_fig10_opp_faster_R0.5"]["basis"] == "implied"
    # R >= 1 fits in memory: outside the poster's argument, so the R = 1 row is our extension
    # and the every-P row leaves it out
    l1 = pd.concat([loader, loader.assign(R=1.0, MBps=loader["MBps"].where(loader["mode"] == "ordered", 1.0))],
                   ignore_index=True)
    r1 = pd.concat([raw, raw.assign(R=1.0, MBps=raw["MBps"].where(raw["mode"] == "ordered", 1.0))],
                   ignore_index=True)
    c1 = {x["id"]: x for x in deepio_report.claims(rl, curves, l1, "disk", env, fio, raw=r1)}
    assert c1["deepio_fig10_opp_faster_R1"]["basis"] == "extension"
    assert c1["deepio_opp_faster_every_p_disk"]["our_value"] == pytest.approx(3.0)
    # without the loader's runs: no interval, so no bandwidth finding holds or fails on its point
    point = deepio_report.claims(rl, curves, loader, "disk", env, fio)
    assert {x["verdict"] for x in point if "opp_faster" in x["id"]} == {"inconclusive"}


def _loader_rows(runs, effect, noise, seed=0):
    """Loader runs on a disk tier, R = 0.5, 0.25, P = 1, 2: opportunistic ``effect`` times the
    ordered MB/s (1: no effect), relative ``noise``."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([
        {"tier": "disk", "memory_backed": False, "mode": m, "R": r, "P": p, "nodes": 1, "repeat": i,
         "warmup": False, "MBps": 100.0 * (effect if m == "opportunistic" else 1) * float(rng.normal(1, noise)),
         "requests": 10, "RL_percent": 90.0, "samples": 64}
        for m in ("ordered", "opportunistic") for r in (0.5, 0.25) for p in (1, 2) for i in range(runs)])


def test_the_loaders_rounds_judge_like_the_report():
    """The stage's rounds judge the loader's findings by their declared rules alone (the same
    measure function as the report, experiments.verdicts.looks.judge): the same verdicts."""
    from experiments.claims import steering
    from experiments.verdicts import looks

    level = 1 - 0.05 / 3
    judge = looks.judge("deepio", deepio.loader_findings, rules=steering.rules("deepio"))
    clear = judge(_loader_rows(8, 3.0, 0.02), {}, level)
    # the report's bandwidth findings: one per R at the largest P, and every P on the tier
    assert set(clear) == {"deepio_fig10_opp_faster_R0.25", "deepio_fig10_opp_faster_R0.5",
                          "deepio_opp_faster_every_p_disk"} and all(clear.values()), clear
    noise = judge(_loader_rows(4, 1.0, 0.2), {}, level)
    assert set(noise) == set(clear) and not any(noise.values()), noise
    # the report's own rows, at the level of the rows (the level column): the same verdicts
    rows = _loader_rows(8, 3.0, 0.02).assign(level=level)
    c = {x["id"]: x for x in deepio_report.loader_claims(deepio.summarize_loader(rows), "disk", raw=rows)}
    assert all(c[k]["holds"] for k in clear)
    rl = deepio.rl_table(100, [1], 0, {})
    curves = pd.DataFrame([{"figure": "fig7", "k": 1, "R": None, "P": None, "train_seed": 0, "epoch": 1,
                            "val_accuracy": 0.9, "RL_percent": 100}])
    full = {x["id"]: x for x in deepio_report.claims(rl, curves, deepio.summarize_loader(rows), "disk", raw=rows)}
    cov = full["deepio_opp_faster_every_p_disk"]["ci_coverage"]   # None: each part reaches its own level
    assert cov is None and full["deepio_opp_faster_every_p_disk"]["ci_low"] is not None


def test_measure_loader_runs_in_seeded_rounds_up_to_max_repeats(monkeypatch, tmp_path):
    from types import SimpleNamespace

    rng = np.random.default_rng(1)

    class Pools:
        def __init__(self, module):
            pass

        def get(self, p, n=1):
            return None

        def close(self):
            pass

    monkeypatch.setattr(deepio, "pack", lambda m, dest: pd.DataFrame({"offset": [0, 10], "bytes": [10, 10]}))
    monkeypatch.setattr(deepio, "prepare", lambda t: SimpleNamespace(memory_backed=False))
    monkeypatch.setattr(deepio.cache, "evict", lambda *a, **k: "none")
    monkeypatch.setattr(deepio.launcher, "Pools", Pools)
    effect = {"x": 1.0}
    monkeypatch.setattr(deepio, "run_loader", lambda path, index, mode, p, r, chunk, seed, nodes=1, pool=None: {
        "seconds": 1.0, "bytes": 20, "requests": 2, "RL_percent": 90.0, "served": 2,
        "MBps": 100.0 * (effect["x"] if mode == "opportunistic" else 1) * float(rng.normal(1, 0.3 if effect["x"] == 1 else 0.01))})
    t = SimpleNamespace(name="disk", dir=tmp_path)
    staged = {"disk": pd.DataFrame({"abspath": ["a", "b"], "bytes": [10, 10]})}
    cfg = deepio.DeepIOConfig(ratios=[0.5], procs=[1, 2], runs=2, max_runs=5)
    m, facts = deepio.measure_loader(staged, [t], cfg, seed=2)
    raw, seq = m.rows, m.course
    assert {"level", "repeat", "round_order", "warmup"} <= set(raw)
    assert raw["repeat"].max() == 4 and len(raw) == 5 * 4   # no effect: undecided up to the maximum
    assert {f["stopped"] for f in seq["findings"].values()} == {"maximum"} and len(seq["order"]) == len(raw)
    assert facts["scale"] == {"procs_max": 2, "nodes_max": 1, "allocation_nodes": 1}
    # a clear effect stops at the first look (7 rounds of at least 6, up to 9, a look every 4)
    effect["x"] = 3.0
    m, _ = deepio.measure_loader(staged, [t], cfg.model_copy(update={"runs": 6, "max_runs": 9}), seed=2)
    raw, seq = m.rows, m.course
    assert seq["plan"]["first_look"] == 7 and raw["repeat"].max() == 6
    assert {f["stopped"] for f in seq["findings"].values()} == {"decided"}
    assert (raw["level"] == seq["plan"]["level"]).all() and seq["plan"]["level"] > 0.95
    # building the stage runs nothing: no loader run, no eviction (the packs are written before)
    ran = []
    monkeypatch.setattr(deepio, "run_loader", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(deepio.cache, "evict", lambda *a, **k: ran.append(a))
    stage = deepio.measuring_stage(cfg, deepio.pack_tiers(cfg, staged, [t]), [t], 2, Pools("x"), {})
    assert isinstance(stage, repeats.MeasuringStage) and len(stage.configs) == 2 * 2 and not ran


def test_beegfs_rows_say_the_nodes_they_need_and_had():
    rl = deepio.rl_table(100, [1], 0, {})
    curves = pd.DataFrame(columns=["figure", "k", "R", "P", "train_seed", "epoch", "val_accuracy", "RL_percent"])
    loader = deepio.summarize_loader(_loader_rows(6, 3.0, 0.02))
    env = {"scale": {"procs_max": 8, "nodes_max": 1, "allocation_nodes": 1}}
    c = {x["id"]: x for x in deepio_report.claims(rl, curves, loader, "disk", env)}
    for size in ("small", "large"):
        note = c[f"deepio_beegfs_{size}_dataset_MBps"]["note"]
        assert c[f"deepio_beegfs_{size}_dataset_MBps"]["verdict"] == "not measured"
        assert "16 nodes" in note and "at most 8 processes over 1 node(s)" in note, note
        assert "allocation of 1 node(s)" in note and "salloc -N 16" in note


def test_fig10_rows_say_what_the_ratio_is_of_and_nodes_row_measures_more_than_one_node():
    rows = _loader_rows(6, 3.0, 0.02)
    rows = pd.concat([rows, rows[rows["P"] == 2].assign(nodes=2, P=4, MBps=lambda d: d["MBps"] * 1.8)],
                     ignore_index=True)
    loader = deepio.summarize_loader(rows)
    c = {x["id"]: x for x in deepio_report.claims(deepio.rl_table(100, [1], 0, {}), pd.DataFrame(
        columns=["figure", "k", "R", "P", "train_seed", "epoch", "val_accuracy", "RL_percent"]),
        loader, "disk", {}, raw=rows)}
    f = c["deepio_fig10_opp_faster_R0.25"]
    assert "ordered 10 (one read per sample" in f["note"] and "R = 0.5: 3.0" in f["note"]
    n = c["deepio_bandwidth_grows_with_nodes"]
    assert n["our_value"] == pytest.approx(1.8, rel=0.05) and n["verdict"] == "holds" and n["n"] == 6
    assert "2 nodes (P = 4) over 1 node (P = 2)" in n["statement"]
    one = {x["id"]: x for x in deepio_report.loader_claims(deepio.summarize_loader(_loader_rows(6, 3.0, 0.02)),
                                                           "disk", raw=_loader_rows(6, 3.0, 0.02))}
    assert "deepio_bandwidth_grows_with_nodes" not in one   # the loop judges Fig 10's rows alone
    for i in ("deepio_faster_than_memory_storage", "deepio_fig11_tf_api_slower_than_raw",
              "deepio_fig9_cifar10_read_share"):
        assert c[i]["verdict"] == "not measured" and c[i]["note"], i


def test_decide_buys_loader_runs_for_the_bandwidth_findings_only():
    """What the declarations say the loader's findings compare (``compares``, filled from the
    stage's context): a bandwidth finding judged per tier, that tier's loader configurations;
    the Fig 10 ones, the storage tier's; an accuracy finding steers nothing (its samples are
    training seeds, which loader runs do not add)."""
    from experiments.claims import steering
    from experiments.repeats import findings

    configs = [{"tier": t, "mode": m, "R": 0.25, "P": 2, "nodes": 1} for t in ("mem", "disk")
               for m in ("ordered", "opportunistic")]
    rules, ctx = steering.rules("deepio"), {"storage_tier": "disk"}
    assert findings.of("deepio_fig7_low_rl_hurts", rules) is None
    assert findings.compared("deepio_opp_faster_every_p_mem", configs, rules, ctx) == [0, 1]
    assert findings.compared("deepio_fig10_opp_faster_R0.25", configs, rules, ctx) == [2, 3]
