"""Nelson's blog: TFRecord conversion, the two pipelines, the collectl table, claims (tiny inputs)."""

import io
import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from experiments.settings import config
from experiments.blog import report as blog_report
from experiments.blog import tfrecord as bt
from experiments.settings.config import ConfigError


@pytest.fixture
def jpegs(tmp_path):
    rows = []
    for i in range(6):
        buf = io.BytesIO()
        arr = np.random.default_rng(i).integers(0, 255, (40 + i, 30, 3), dtype=np.uint8)
        Image.fromarray(arr).save(buf, format="JPEG")
        p = tmp_path / f"img{i}.JPEG"
        p.write_bytes(buf.getvalue())
        rows.append({"path": p.name, "abspath": str(p), "label": i % 2, "bytes": p.stat().st_size})
    return pd.DataFrame(rows)


def test_tfrecord_conversion_round_trips_and_reads(tmp_path, jpegs):
    import tensorflow as tf

    facts = bt.convert(jpegs, tmp_path / "rec", shards=2)
    assert len(facts["files"]) == 2 and not facts["reused"]
    raw = [r.numpy() for r in tf.data.TFRecordDataset(facts["files"])]
    spec = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64)}
    got = sorted(tf.io.parse_single_example(r, spec)["image/encoded"].numpy() for r in raw)
    assert got == sorted(open(p, "rb").read() for p in jpegs["abspath"])
    assert bt.convert(jpegs, tmp_path / "rec", shards=2)["reused"]
    ds = bt.build_tfrecord_dataset(facts["files"], 2, 4, 16, seed=0)
    shapes = [tuple(x.shape) for x, _ in ds]
    assert sum(s[0] for s in shapes) == 6 and shapes[0][1:] == (16, 16, 3)


def test_torch_dataset_decodes_and_resizes(jpegs):
    from experiments.blog import torch_jpeg_loader as tj

    loader = tj.make_loader(list(jpegs["abspath"]), list(jpegs["label"]), 0, 4, 16, seed=0)
    batches = list(loader)
    assert sum(x.shape[0] for x, _ in batches) == 6 and tuple(batches[0][0].shape[1:]) == (3, 16, 16)


def test_collectl_table_from_dstat_rows():
    rows = pd.DataFrame([
        {"source": "dev:vda", "cache": "cold", "framework": "tensorflow", "tier": "disk",
         "format": "tfrecord", "read_MBps": 128.0, "read_iops": 1000.0, "queue_len": 1.0, "util": 0.5},
        {"source": "dev:vda", "cache": "cold", "framework": "pytorch", "tier": "disk",
         "format": "jpeg", "read_MBps": 64.0, "read_iops": 1000.0, "queue_len": 4.0, "util": 0.5},
        {"source": "dev:vda", "cache": "warm", "framework": "pytorch", "tier": "disk",
         "format": "jpeg", "read_MBps": 0.0, "read_iops": 0.0, "queue_len": 0.0, "util": 0.0},
        {"source": "proc", "cache": "cold", "framework": "pytorch", "tier": "disk",
         "format": "jpeg", "read_MBps": 64.0, "read_iops": np.nan, "queue_len": np.nan, "util": np.nan},
    ])
    t = bt.collectl_table(rows, pd.DataFrame()).set_index("framework")
    assert t.loc["tensorflow", "KB_per_read"] == pytest.approx(128.0)
    assert t.loc["pytorch", "KB_per_read"] == pytest.approx(64.0)
    assert t.loc["pytorch", "queue_len"] == 4.0 and len(t) == 2


def test_warm_cold_and_claims():
    raw = pd.DataFrame([
        {"run": i, "framework": "tensorflow", "tier": "disk", "format": "jpeg", "threads": t,
         "workers": np.nan, "cache": c, "images_per_s": v, "device": "vda"}
        for i, t, c, v in ((0, 1, "cold", 100.0), (1, 2, "cold", 120.0), (2, 2, "cold", 150.0),
                           (2, 2, "warm", 300.0))])   # a warm pass shares its cold pass's run
    wc = blog_report.warm_cold(raw)
    assert wc["warm_over_cold"].iloc[0] == pytest.approx(2.0)
    hist = pd.DataFrame({"bucket": ["32K", "64K", "128K"], "files_percent": [20.0, 40.0, 40.0],
                         "mix_percent": [20, 40, 40]})
    c = {x["id"]: x for x in blog_report.claims(hist, pd.DataFrame(
        columns=["framework", "tier", "format", "threads", "workers", "cache", "images_per_s"]),
        pd.DataFrame(), wc, "disk")}
    assert c["blog_size_64k_128k"]["our_value"] == 80 and c["blog_size_64k_128k"]["holds"]
    assert c["blog_size_64k_128k"]["kind"] == "check" and c["blog_warm_faster"]["kind"] == "finding"
    # one warm run: no interval, so a point alone does not decide
    assert c["blog_warm_faster"]["verdict"] == "inconclusive" and c["blog_warm_faster"]["basis"] == "stated"
    assert c["blog_workers_help"]["basis"] == "extension"
    # the blog's headline numbers are rows with its values, not measured here, with the reason
    assert c["blog_local_tops_8600_images_per_s"]["paper_value"] == 8600
    assert c["blog_jpeg_decode_51pct_of_cpu"]["paper_value"] == 51.18
    assert c["blog_gbps_for_8_v100"]["verdict"] == "not measured" and "no GPU" in c["blog_gbps_for_8_v100"]["note"]
    # no device samples, no collectl table: the claims stay, not measured, with the reason
    for k in ("blog_collectl_read_sizes_similar", "blog_collectl_tf_shorter_queue",
              "blog_private_threads_help", "blog_workers_help", "blog_warm_reads_nothing"):
        assert c[k]["verdict"] == "not measured" and "not measured on this run: " in c[k]["note"], k
    assert c["blog_collectl_tf_shorter_queue"]["magnitude"] == "within 2x"
    assert blog_report.storage_tier(pd.DataFrame({"tier": ["mem", "disk"], "device": ["", "vda"]})) == "disk"


@pytest.mark.parametrize("bad,match", [
    ({"threads": [0]}, r"blog\.threads.*between 1 and 1024"),
    ({"workers": [-1]}, r"blog\.workers.*between 0 and 256"),
    ({"images": 0}, r"blog\.images"),
])
def test_bad_input(bad, match):
    with pytest.raises(ConfigError, match=match):
        config.validate("blog", bad)


def test_storage_reads_of_warm_and_cold_runs_from_own_processes():
    raw = pd.DataFrame([{"run": 4, "framework": "tensorflow", "tier": "disk", "format": "jpeg",
                         "cache": "cold", "bytes": 100e6},
                        {"run": 4, "framework": "tensorflow", "tier": "disk", "format": "jpeg",
                         "cache": "warm", "bytes": 100e6}])   # one run: its cold pass, then its warm pass
    d = pd.DataFrame([
        {"run": 4, "cache": "cold", "source": "proc", "read_MBps": 50.0, "interval_s": 2.0},
        {"run": 4, "cache": "cold", "source": "dev:vda", "read_MBps": 500.0, "interval_s": 2.0},  # others' I/O
        {"run": 4, "cache": "warm", "source": "proc", "read_MBps": 0.0, "interval_s": 1.0},
        {"run": 4, "cache": "warm", "source": "dev:vda", "read_MBps": 300.0, "interval_s": 1.0}])
    r = blog_report.device_reads(d, raw)
    assert r["cold_storage_MB"].iloc[0] == 100 and r["warm_storage_MB"].iloc[0] == 0
    wc = pd.DataFrame([{"tier": "disk", "warm_over_cold": 1.5}])
    # six cold/warm pairs: fewer cannot give a 95 % interval of a median (stats.MIN_N)
    r3 = pd.concat([r, r.assign(warm_storage_MB=1.0), r.assign(warm_storage_MB=2.0)] * 2, ignore_index=True)
    c = {x["id"]: x for x in blog_report.claims(
        pd.DataFrame({"bucket": ["64K"], "files_percent": [80.0]}), pd.DataFrame(
            columns=["framework", "tier", "format", "threads", "workers", "cache", "images_per_s"]),
        pd.DataFrame(), wc, "disk", r3)}
    w = c["blog_warm_reads_nothing"]
    assert w["holds"] and w["our_value"] == pytest.approx(0.01) and w["n"] == 6


def test_warm_claims_say_how_much_was_still_cached():
    raw = pd.DataFrame([
        {"run": i, "framework": "tensorflow", "tier": "disk", "format": "jpeg", "threads": 2,
         "workers": np.nan, "cache": c, "images_per_s": v + i, "resident_fraction": f}
        for i in range(6) for j, (c, v, f) in enumerate((("cold", 100.0, 0.0), ("warm", 90.0, 0.25)))])
    wc = blog_report.warm_cold(raw)
    assert wc["warm_resident_fraction"].iloc[0] == 0.25
    c = {x["id"]: x for x in blog_report.claims(
        pd.DataFrame({"bucket": ["64K"], "files_percent": [80.0]}), pd.DataFrame(
            columns=["framework", "tier", "format", "threads", "workers", "cache", "images_per_s"]),
        pd.DataFrame(), wc, "disk", env={"cpu": {"count": 2}})}
    w = c["blog_warm_faster"]
    assert w["verdict"] == "fails" and "only 25% of the data set was still in the page cache" in w["note"]


def test_request_size_rows_test_what_the_blog_says_and_warm_note_says_what_was_read():
    """The blog calls its device request sizes similar (128 and 113 KB): that row is judged
    against its band and fails where TF's device requests are far larger here; the inference that
    TF asks for much larger reads is a row of its own, not measured (the read calls' sizes). A
    warm run that read nothing gets a note saying so, not a reason for reads it did not make."""
    dev = pd.DataFrame([   # 6 cold runs of each, 4 sampled intervals a run
        {"source": "dev:vda", "cache": "cold", "framework": fw, "tier": "disk", "format": fm, "run": 10 * k + i,
         "read_MBps": mb * (1 + 0.01 * i + 0.001 * j), "read_iops": 100.0, "queue_len": q, "util": 0.5}
        for i in range(6) for j in range(4) for k, (fw, fm, mb, q) in enumerate((("tensorflow", "tfrecord", 250.0, 1.0),
                                                                               ("pytorch", "jpeg", 11.5, 4.0)))])
    collectl = bt.collectl_table(dev, pd.DataFrame()).assign(tier="disk")
    reads = pd.DataFrame([{"framework": "tensorflow", "tier": "disk", "format": "tfrecord",
                           "cold_storage_MB": 100.0, "warm_storage_MB": 0.0, "data_MB": 113.8}] * 3)
    fio_raw = pd.DataFrame([{"tier": "disk", "job": j, "warmup": i == 0, "bw_MBps": v * (1 + 0.01 * i),
                             "iops": v * (1 + 0.01 * i) * 64}
                            for j, v in (("seqread", 900.0), ("randread", 300.0), ("randread16k", 180.0))
                            for i in range(7)])
    fio = fio_raw[~fio_raw["warmup"]].groupby(["tier", "job"], as_index=False)[["bw_MBps", "iops"]].median()
    c = {x["id"]: x for x in blog_report.claims(
        pd.DataFrame({"bucket": ["64K"], "files_percent": [80.0]}), pd.DataFrame(
            columns=["framework", "tier", "format", "threads", "workers", "cache", "images_per_s"]),
        collectl, pd.DataFrame(), "disk", reads, dstat_rows=dev, fio=fio, fio_raw=fio_raw)}
    r = c["blog_collectl_read_sizes_similar"]
    assert r["our_value"] > 10 and r["verdict"] == "fails" and r["paper_value"] == pytest.approx(128 / 113, abs=1e-3)
    assert "appear similar" in r["quote"] and "max_sectors_kb" in r["note"] and "derived" not in r["note"]
    i = c["blog_tf_requests_much_larger_reads"]
    assert (i["verdict"], i["basis"]) == ("not measured", "implied") and "read call" in i["note"]
    w = c["blog_warm_reads_nothing"]
    assert w["our_value"] == 0 and "warm runs read 0.0 MB" in w["note"]
    assert "came during the run" not in w["note"]
    # the collectl tables' throughput; the blog's 16K row sets its IOPS against its Ceph
    # QEMU/KVM post, which is not at hand: not measured, with fio's 16K IOPS here in the reason
    t = c["blog_collectl_tf_reads_device_faster"]
    assert t["our_value"] > 10 and t["verdict"] == "direction only" and t["paper_value"] == pytest.approx(1.295, abs=1e-3)
    f = c["blog_fio_small_reads_slower"]
    assert f["verdict"] == "not measured" and f["basis"] == "implied" and "Ceph QEMU/KVM" in f["note"]
    assert "IOPS (median of 6 runs" in f["note"] and "932 MB/s for its 1 MiB sequential read" in f["note"]
    # the blog's synthetic-data and XLA results: rows, not measured, with what they need
    for k in ("blog_imagenet_slower_than_synthetic", "blog_no_xla_25pct_slower"):
        assert c[k]["verdict"] == "not measured" and "GPU" in c[k]["note"], k
    assert c["blog_no_xla_25pct_slower"]["paper_value"] == 25
    p = c["blog_fio_persistent_over_1gbps_large_reads"]
    assert p["verdict"] == "not measured" and "0.93 GB/s" in p["note"]   # median of 909 ... 954
    assert c["blog_tfrecord_not_slower"]["figure"] == "Conclusion, item 1"


def _fake_run(effect: dict, noise: float, seed: int = 0):
    """A ``one_run`` for :func:`bt.run_rounds` with no I/O: images/s 100 x the configuration's
    factor in ``effect`` (threads: 1 + effect["threads"] per doubling, format jpeg: 1 / (1 +
    effect["tfrecord"]), workers: 1 + effect["workers"] per worker, warm: 1 + effect["warm"]),
    times a lognormal noise of sd ``noise``; two dstat intervals per run (TF's reads larger and
    faster, its queue shorter) and the process's own reads (none when warm)."""
    rng = np.random.default_rng(seed)

    def one_run(c, state):
        f = 1.0
        if c["framework"] == "tensorflow":
            f *= (1 + effect["threads"]) ** np.log2(c["threads"])
            f /= 1.0 if c["format"] == "tfrecord" else 1 + effect["tfrecord"]
        else:
            f *= (1 + effect["workers"]) ** c["workers"]
        f *= 1 + effect["warm"] if state == "warm" else 1.0
        ips = 100.0 * f * float(np.exp(rng.normal(0, noise)))
        tf = c["framework"] == "tensorflow"
        frame = pd.DataFrame([
            {"source": "dev:vda", "time_s": k * 0.5, "interval_s": 0.5,
             "read_MBps": (0.0 if state == "warm" else (200.0 if tf else 100.0) * float(np.exp(rng.normal(0, noise)))),
             "read_iops": 0.0 if state == "warm" else (1000.0 if tf else 2000.0),
             "queue_len": 1.0 if tf else 3.0, "util": 0.5} for k in range(2)]
            + [{"source": "proc", "time_s": 0.0, "interval_s": 1.0,
                "read_MBps": 0.0 if state == "warm" else 50.0, "read_iops": np.nan,
                "queue_len": np.nan, "util": np.nan}])
        return {"seconds": 1024 / ips, "images": 1024, "bytes": 50e6, "images_per_s": ips,
                "MBps": 50 / (1024 / ips), "device": "vda", "resident_fraction": 1.0 if state == "warm" else 0.0}, frame
    return one_run


# a clear TFRecord gain: 1.5x, past the "big win" rule's 1.2 (issue 66)
CLEAR = {"threads": 0.5, "tfrecord": 0.5, "workers": 0.5, "warm": 1.0}


def _rounds(configs, one_run, cfg, seed, purchases=()):
    """The blog's stage (experiments.blog.tfrecord.stage) measured through experiments.repeats:
    (rows, dstat rows, rounds.json)."""
    from experiments import repeats

    m = repeats.measure(bt.measuring_stage(cfg, configs, one_run, seed), purchases)
    return m.rows, bt.dstat_rows_of(m.tables["dstat"]), m.course


def test_blog_measure_goes_in_rounds_with_warm_pairs_and_stops_when_decided():
    """Through the rounds with a fake run: every configuration once a round (order drawn per
    round), a warm pass right after each top cold pass, in the same run; rows carry the level;
    clear effects stop at the first look, with every finding decided."""
    from experiments.repeats.rounds import plan_for

    # 3 looks (8 to 10 rounds) at 98.33 %: the collectl rows (windows inside runs) decide with the
    # jackknife at a nominal 98.75 % there; at 99 % (12 rounds, 5 looks) no simulated method of
    # theirs reaches (stats.calibrated, stats.simulated_below)
    cfg = bt.BlogConfig(threads=[1, 4], workers=[0, 2], runs=6, max_runs=10)
    configs = bt.run_configs(["disk"], cfg.threads, cfg.workers)
    assert len(configs) == 2 * 2 + 2 and sum(c["warm"] for c in configs) == 3
    raw, dstat_rows, seq = _rounds(configs, _fake_run(CLEAR, 0.02), cfg, seed=5)
    plan = plan_for(cfg.runs, cfg.max_runs, cfg.budget_s)
    assert plan.first_look > 6 and raw["level"].eq(plan.level).all()   # a look at the corrected level
    assert raw["repeat"].max() + 1 == plan.first_look                  # decided at the first look
    assert set(seq["findings"]) >= {"blog_private_threads_help", "blog_tfrecord_not_slower",
                                     "blog_workers_help", "blog_warm_faster", "blog_warm_reads_nothing",
                                     "blog_collectl_tf_shorter_queue"}
    assert all(f["stopped"] == "decided" for f in seq["findings"].values())
    cold = raw[raw["cache"] == "cold"]
    assert (cold.groupby("repeat").size() == len(configs)).all() and cold["run"].is_unique
    def order(i):
        return [str(r) for r in cold[cold["repeat"] == i][["framework", "format", "threads", "workers"]].to_numpy()]
    assert order(0) != order(1) and sorted(order(0)) == sorted(order(1))   # drawn per round
    by_run = cold.set_index("run")
    for w in raw[raw["cache"] == "warm"].itertuples():                 # right after its own cold pass
        c = by_run.loc[w.run]
        assert c["framework"] == w.framework and c["format"] == w.format
        assert c["repeat"] == w.repeat and c["round_order"] == w.round_order
    assert set(dstat_rows["run"]) == set(raw["run"])
    # the report reads the same rows into the same findings, decided at the level of the rows
    t = blog_report.run_tables(raw, dstat_rows)
    assert {"summary", "collectl", "wc", "reads"} <= set(t) and len(t["wc"]) == 3 * plan.first_look
    assert t["wc"]["cold_images_per_s"].notna().all() and len(t["reads"]) == 3 * plan.first_look
    # the same seed, the same order
    again, _, _ = _rounds(configs, _fake_run(CLEAR, 0.02), cfg, seed=5)
    assert list(again["run"]) == list(raw["run"]) and list(again["format"]) == list(raw["format"])


def _decided(raw, dstat_rows, level):
    """What the blog's rounds judge at a look: its findings by their declared rules."""
    from experiments.blog.findings import findings_of
    from experiments.claims import steering
    from experiments.verdicts import looks

    return looks.judge("blog", findings_of, rules=steering.rules("blog"))(raw, {"dstat": dstat_rows}, level)


def test_blog_decided_judges_the_reports_own_findings():
    """A clear effect is decided; no effect within a large noise is not, at few runs; a
    finding with no value (no runs of it) is left out."""
    cfg = bt.BlogConfig(threads=[1, 4], workers=[0, 2], runs=7)
    configs = bt.run_configs(["disk"], cfg.threads, cfg.workers)
    raw, dstat_rows, _ = _rounds(configs, _fake_run(CLEAR, 0.02), cfg, seed=1)
    got = _decided(raw, dstat_rows, 0.95)
    assert got["blog_private_threads_help"] and got["blog_workers_help"] and got["blog_warm_faster"]
    # no effect of a warm cache (rule '> 1'), and workers at their rule's threshold (1.2 at 2
    # workers), within a noise of 30 %: six runs cannot tell
    none = {"threads": 0.5, "tfrecord": 0.2, "workers": 1.2 ** 0.5 - 1, "warm": 0.0}
    cfg = bt.BlogConfig(threads=[1, 4], workers=[0, 2], runs=6)
    raw, dstat_rows, _ = _rounds(configs, _fake_run(none, 0.3, seed=2), cfg, seed=1)
    got = _decided(raw, dstat_rows, 0.95)
    assert not got["blog_workers_help"] and not got["blog_warm_faster"]
    assert got["blog_private_threads_help"]
    only_tf = raw[raw["framework"] == "tensorflow"]
    got = _decided(only_tf, dstat_rows[dstat_rows["run"].isin(only_tf["run"])], 0.95)
    assert "blog_workers_help" not in got and "blog_private_threads_help" in got


def test_blog_repeats_bad_input():
    with pytest.raises(ConfigError, match=r"blog\.max_runs = 2: .*max_runs = 2 is below runs = 6; allowed"):
        config.validate("blog", {"runs": 6, "max_runs": 2})
    configs = bt.run_configs(["disk"], [1], [0])
    one = bt.measuring_stage(bt.BlogConfig(runs=3), configs, _fake_run(CLEAR, 0.02), 0)
    assert one.rounds.max_runs == 3                                   # no max: a fixed count
    p = bt.measuring_stage(bt.BlogConfig(runs=6, max_runs=9, budget_s=390), configs, _fake_run(CLEAR, 0.02), 0).rounds
    assert (p.min_runs, p.max_runs, p.budget_s) == (6, 9, 390)


def test_collectl_paper_values_follow_from_the_blogs_tables():
    """The two collectl rows' paper values are the arithmetic their ``derived`` says, on the
    tables' medians the report shows beside ours (reference.NELSON_COLLECTL)."""
    from experiments.settings import reference
    from experiments.claims.declared import declared

    ref, d = reference.NELSON_COLLECTL, declared("blog_report")
    q = d["blog_collectl_tf_shorter_queue"][1]
    assert q.paper_value == pytest.approx(ref["pytorch"]["queue_len"] / ref["tensorflow"]["queue_len"])
    assert "604 / 7" in q.derived
    t = d["blog_collectl_tf_reads_device_faster"][1]
    assert t.paper_value == round(ref["tensorflow"]["read_KBps"] / ref["pytorch"]["read_KBps"], 3)
    assert "968,776 / 747,824" in t.derived


def test_bought_rounds_follow_the_loop_and_a_decide_run_appends_to_the_kept_runs(tmp_path, monkeypatch):
    """make decide's side of the blog (experiments.repeats): a purchase of two configurations
    (a DataLoader one, which has no thread count: None in params.yaml; a warm one, two passes
    per run) runs after the rounds, counted in runs, not rows; a decide run that re-runs the
    stage keeps the runs and dstat rows of before and adds only the new purchase's, the run ids
    going on."""
    from experiments.settings import paths
    from experiments import repeats
    from experiments.repeats import purchases as P
    from experiments.repeats.stage import ROUNDS_FILE

    cfg = bt.BlogConfig(threads=[1, 4], workers=[0, 2], runs=6, max_runs=6)
    configs = bt.run_configs(["disk"], cfg.threads, cfg.workers)
    want = [{"framework": "pytorch", "tier": "disk", "format": "jpeg", "threads": None, "workers": 2},
            {"framework": "tensorflow", "tier": "disk", "format": "tfrecord", "threads": 4, "workers": None}]
    p1 = P.Purchase(run=1, configs=want, runs=3)
    raw, dstat_rows, course = _rounds(configs, _fake_run(CLEAR, 0.02), cfg, seed=5, purchases=[p1])
    assert P.made(raw) == {"repro": 6 * len(configs), "decide 1": 3}
    d1 = raw[raw["made_by"] == "decide 1"]
    assert len(d1) == 3 + (d1["cache"] == "warm").sum() > 3          # a warm pass follows its cold one
    assert d1["level"].eq(1 - 0.05 / 2).all() and d1["repeat"].min() == 6   # one more look at these two
    assert course["decide"][0]["runs"] == 3 and not raw[["run", "cache"]].duplicated().any()
    assert set(dstat_rows["run"]) == set(raw["run"])
    # a decide run re-runs the stage: the runs of before are kept, only purchase 2 runs
    out = tmp_path / "results" / "blog"
    out.mkdir(parents=True)
    raw.to_parquet(out / "raw.parquet")
    dstat_rows.to_csv(out / "dstat.csv", index=False)
    (out / ROUNDS_FILE).write_text(json.dumps(course, default=str))
    monkeypatch.setattr(paths, "results_dir", lambda stage=None: tmp_path / "results" / stage)
    monkeypatch.setenv(P.ENV, "blog")
    p2 = P.Purchase(run=2, configs=want[:1], runs=2)
    again, dstat2, _ = _rounds(configs, _fake_run(CLEAR, 0.02), cfg, seed=5, purchases=[p1, p2])
    assert P.made(again) == {"repro": 6 * len(configs), "decide 1": 3, "decide 2": 2}
    new = again.iloc[len(raw):]
    assert len(new) == 2 * 2 and new["run"].min() == raw["run"].max() + 1   # two runs of a cold and a warm pass
    assert len(dstat2) == len(dstat_rows) + 3 * len(new)      # three dstat rows per fake pass
    assert again.iloc[:len(raw)]["images_per_s"].tolist() == raw["images_per_s"].tolist()
    assert repeats.level_of(again) == pytest.approx(1 - 0.05 / 3)   # its configuration's second purchase
    assert repeats.level_of(again[again["framework"] == "tensorflow"]) == pytest.approx(1 - 0.05 / 2)
