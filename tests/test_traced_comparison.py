"""The traced comparison's tables and claims on tiny vectors (experiments.sidebyside.compare)."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments.settings import config, reference
from experiments.sidebyside import compare, findings
from experiments.statistics import stats
from experiments.trace.vector import KEYS


def vec(**kw):
    v = {k: 10.0 for k in KEYS}
    v.update(kw)
    return v


REAL = vec(vfs_writes=100.0, vfs_write_size_median=4096.0)
EMU = vec(vfs_writes=100.0, vfs_write_size_median=4096.0, vfs_reads=11.0)
DLIO = vec(vfs_writes=1.0, vfs_write_size_median=1e6, vfs_write_size_q1=1e6, vfs_write_size_q3=1e6)


def test_component_table_has_every_side_and_the_difference_from_real():
    t = compare.component_table("unet3d", {"real": REAL, "sleep": REAL, "emulator": EMU, "dlio": DLIO})
    assert list(t["key"]) == KEYS
    r = t.set_index("key")
    assert r.loc["vfs_reads", "diff_emulator_pct"] == pytest.approx(10.0)
    assert r.loc["vfs_reads", "diff_sleep_pct"] == 0
    assert r.loc["vfs_writes", "diff_dlio_pct"] == pytest.approx(-99.0)
    assert set(r["weight"]) == {reference.HOVON_WEIGHT_READ, reference.HOVON_WEIGHT_WRITE}


def test_a_side_not_measured_gets_nan_and_its_reason():
    vs = {"real": REAL, "emulator": EMU, "dlio": None}
    t = compare.component_table("bert", vs)
    assert t["dlio"].isna().all() and not t["used_dlio"].any()
    s = compare.similarity_table("bert", vs, why={"dlio": "mpiexec missing"}).set_index("side")
    assert s.loc["dlio", "status"] == "not measured" and s.loc["dlio", "why"] == "mpiexec missing"
    assert math.isnan(s.loc["dlio", "similarity"])
    assert s.loc["real", "similarity"] == pytest.approx(1.0)
    assert 0 < s.loc["emulator", "similarity"] < 1


def test_similarity_ranks_the_closer_side_higher():
    sims = compare.similarities({"real": REAL, "emulator": EMU, "dlio": DLIO})
    assert sims["real"] == pytest.approx(1.0)
    assert sims["emulator"] > sims["dlio"]


def test_checkpoint_distance():
    assert compare.checkpoint_distance(REAL, REAL) == 0
    assert compare.checkpoint_distance(REAL, DLIO) > compare.checkpoint_distance(REAL, EMU)
    assert math.isnan(compare.checkpoint_distance(REAL, None))
    zero = vec(**{k: 0.0 for k in compare.CHECKPOINT_KEYS})
    assert compare.checkpoint_distance(zero, zero) == 0
    assert compare.checkpoint_distance(REAL, zero) == 1


SIDE_VALUES = {"real": {"data_sps": 100.0, "compute_sps": 50.0}, "emulator": {"data_sps": 95.0, "compute_sps": 50.0},
               "dlio": {"data_sps": 20.0, "compute_sps": 10.0}}


def _rows(vectors: dict, values: dict | None = None, passes: int = 1, workload: str = "unet3d", why=None,
          jitter: float = 0.0, seed: int = 0, **common):
    """``throughput.csv`` as the stage writes it: one row per pass and side (run = the pass),
    ``similarity`` and ``checkpoint_distance`` from ``vectors`` ({side: vector or None}),
    ``bio_vfs_read_pct`` from the vector, ``values`` ({side: {col: value}}), each pass's
    similarity scattered by ``jitter`` (absolute)."""
    rng = np.random.default_rng(seed)
    values = values if values is not None else SIDE_VALUES
    sims = compare.similarities(vectors)
    rows = []
    for run in range(passes):
        for side, v in vectors.items():
            ok = v is not None
            rows.append({"workload": workload, "side": side, "run": run, "repeat": run, "made_by": "repro",
                         "status": "measured" if ok else "not measured",
                         "why": "" if ok else (why or {}).get(side, "not run"), "batch_size": 4, "ranks": 1,
                         "similarity": min(1.0, sims[side] + jitter * rng.standard_normal()) if ok else np.nan,
                         "checkpoint_distance": compare.checkpoint_distance(vectors["real"], v),
                         "bio_vfs_read_pct": (v or {}).get("bio_vfs_read_pct", np.nan),
                         "epochs": 2, **{k: np.nan for k in ("data_sps", "compute_sps")},
                         **((values.get(side) or {}) if ok else {}), **common})
    return pd.DataFrame(rows)


def _steps(rates: dict, n=40, noise=0.01, seed=1, passes=1, workload="unet3d"):
    """Steady steps of each side in each pass (run = the pass) whose per-step throughputs
    (samples/s) scatter by ``noise`` (relative) around ``rates[side] = (data_sps, compute_sps)``."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(passes):
        for side, (d, c) in rates.items():
            for _ in range(n):
                rows.append({"workload": workload, "side": side, "run": run, "rank": 0, "samples": 1.0,
                             "data_ns": 1e9 / (d * (1 + noise * rng.standard_normal())),
                             "compute_ns": 1e9 / (c * (1 + noise * rng.standard_normal()))})
    return pd.DataFrame(rows)


VECS = {"real": REAL, "emulator": EMU, "dlio": DLIO}
RATES = {"real": (100, 50), "emulator": (95, 50), "dlio": (20, 10)}


def _claims(rows, steps=None, vectors=None):
    vs = vectors if vectors is not None else {w: {s: (None if (g["status"] != "measured").all() else VECS.get(s))
                                                  for s, g in d.groupby("side")} for w, d in rows.groupby("workload")}
    return {c["id"]: c for c in findings.claims(rows, steps, vs)}


def test_claims_computed_not_typed():
    cl = _claims(_rows(VECS), _steps(RATES))
    assert all(c["kind"] in ("finding", "check") for c in cl.values())
    # the thesis's benchmark is DLIO's side: its similarity carries the paper's value and quote;
    # our emulator's is our extension beside it
    s = cl["traced-similarity-dlio-unet3d"]
    assert s["paper_value"] == reference.HOVON_SIMILARITY["unet3d"] and s["basis"] == "stated" and "95%" in s["quote"]
    assert s["our_value"] == pytest.approx(compare.similarities(VECS)["dlio"])
    # one pass: a similarity is a point, which never decides a finding; the method says what it needs
    assert s["verdict"] == "inconclusive" and s["n"] == 1 and "needs at least 3 passes, has 1" in s["ci_method"]
    e = cl["traced-similarity-emulator-unet3d"]
    assert (e["basis"], e["paper_value"], e["quote"]) == ("extension", None, None)
    assert cl["traced-similarity-emulator-vs-dlio-unet3d"]["verdict"] == "inconclusive"
    d = cl["traced-data-throughput-emulator-unet3d"]
    # one pass of each side: the ratio of its steps' medians, no interval (its steps are not runs)
    assert d["our_value"] == pytest.approx(0.95, rel=0.02) and d["ci_low"] is None
    assert d["verdict"] == "inconclusive" and "needs at least 3 runs" in d["ci_method"]
    # the thesis reports its benchmark's data throughput as a miss: ours within 10 % is our
    # goal (extension, no paper value); the thesis's gap (UNET3D: data latency 10x) is context
    assert d["paper_value"] is None and d["basis"] == "extension" and "0.0028" in d["note"]
    k = cl["traced-compute-throughput-dlio-unet3d"]
    assert k["paper_value"] == "very similar (Sec 5.1.3)" and k["basis"] == "stated"
    assert k["our_value"] == pytest.approx(0.2, rel=0.02) and k["verdict"] == "inconclusive"   # DLIO computes at 10, real 50
    assert cl["traced-compute-throughput-emulator-unet3d"]["basis"] == "extension"
    g = cl["traced-data-throughput-dlio-unet3d"]
    assert g["our_value"] == pytest.approx(0.2, rel=0.02) and g["verdict"] == "inconclusive"
    # a check is ours: it has no basis (experiments/claims/declared.py)
    c = cl["traced-checkpoint-closer-than-dlio-unet3d"]
    assert c["kind"] == "check" and c["basis"] is None and c["verdict"] == "holds"
    assert cl["traced-self-similarity-unet3d"]["verdict"] == "holds"


def test_three_passes_give_the_ratios_an_interval_over_the_passes():
    """3 passes of each side: a ratio between sides is over the passes (n counts passes of both
    sides: 6; a jackknife t over the passes, the two-level bootstrap covering too little at 3, issue
    64); a side's own similarity (one sample) decides at 3 passes too, with Student's t on the
    passes' logs (a median's order statistics need 6, and take over there)."""
    rows, steps = _rows(VECS, passes=3), _steps(RATES, passes=3)
    cl = _claims(rows, steps)
    d = cl["traced-data-throughput-emulator-unet3d"]
    assert d["n"] == 6 and d["ci_low"] < 0.95 < d["ci_high"] and d["verdict"] == "holds"
    assert "over 6 runs" in d["ci_method"] and "jackknife t" in d["ci_method"]
    g = cl["traced-data-throughput-dlio-unet3d"]
    assert g["verdict"] == "holds" and g["ci_high"] < 1                  # DLIO at a fifth of the real run
    s = cl["traced-similarity-emulator-unet3d"]
    assert s["n"] == 3 and s["verdict"] == "holds" and "Student t" in s["ci_method"]   # [min, max] would cover 75 %
    cl6 = _claims(_rows(VECS, passes=6, jitter=0.001), _steps(RATES, passes=6))
    s6 = cl6["traced-similarity-emulator-unet3d"]
    assert s6["n"] == 6 and s6["verdict"] == "holds" and "median over 6 passes" in s6["ci_method"]
    assert cl6["traced-similarity-dlio-unet3d"]["verdict"] == "fails"     # DLIO's writes are nothing like
    m = cl6["traced-similarity-emulator-vs-dlio-unet3d"]
    assert m["n"] == 6 and m["ci_low"] > 0 and m["verdict"] == "holds" and "Welch t" in m["ci_method"]
    # a difference between sides decides at 4 passes too (Welch t on the passes' values): a
    # median's jackknife (88.8 % at 4) and bootstrap (its range's bound 87.5 %) reach 95 % only
    # at 3 and from 6, and 4 passes of the default profile left 3 such rows without an interval
    m4 = _claims(_rows(VECS, passes=4, jitter=0.001), _steps(RATES, passes=4))["traced-similarity-emulator-vs-dlio-unet3d"]
    assert m4["n"] == 4 and m4["ci_low"] > 0 and m4["verdict"] == "holds", m4["ci_method"]


def test_a_pass_that_differs_widens_the_interval_the_steps_do_not():
    """The run is the unit: noisy steps inside quiet passes leave the ratio's interval narrow,
    one pass whose emulator ran at 80 widens it (the passes are resampled)."""
    quiet = _claims(_rows(VECS, passes=3), _steps(RATES, passes=3, noise=0.3))["traced-data-throughput-emulator-unet3d"]
    steps = _steps(RATES, passes=3, noise=0.01)
    slow = steps["side"].eq("emulator") & steps["run"].eq(2)
    steps.loc[slow, "data_ns"] *= 95 / 80
    loud = _claims(_rows(VECS, passes=3), steps)["traced-data-throughput-emulator-unet3d"]
    assert loud["ci_low"] < 0.85 and loud["ci_low"] < quiet["ci_low"]


def test_throughput_claims_say_where_each_side_read_from():
    """The device audit's columns of throughput.csv (sides.audit) reach the throughput claims'
    notes: per side, in how many passes its reads came from the device or the page cache."""
    rows = _rows(VECS, passes=2)
    rows["read_from"] = rows["side"].map({"real": "device", "emulator": "device", "dlio": "cache"})
    cl = _claims(rows, _steps(RATES, passes=2))
    assert "device audit, passes reading from: real device in 2; dlio cache in 2" in cl["traced-data-throughput-dlio-unet3d"]["note"]
    assert "emulator device in 2" in cl["traced-data-throughput-emulator-unet3d"]["note"]
    # a table from before the audit: no words
    assert "device audit" not in _claims(_rows(VECS))["traced-data-throughput-dlio-unet3d"]["note"]


def test_a_data_throughput_of_a_cache_served_side_against_a_device_served_one_is_not_comparable():
    """Like with like (issue 66): the real run's reads served from the page cache against DLIO's
    from the device is no comparison of the two data paths: the row shows its value, is not
    judged, and says where each side read from; sides that read from the same place are judged;
    the compute throughput, which times no read, is judged either way."""
    rows = _rows(VECS, passes=3)
    rows["read_from"] = rows["side"].map({"real": "cache", "emulator": "cache", "dlio": "device"})
    cl = _claims(rows, _steps(RATES, passes=3))
    d = cl["traced-data-throughput-dlio-unet3d"]
    assert d["verdict"] == "not comparable" and d["holds"] is None and d["our_value"] == pytest.approx(0.2, rel=0.05)
    assert d["note"].startswith("not comparable: the real run read from the page cache (3 passes), DLIO from "
                                "the device (3 passes)")
    assert cl["traced-data-throughput-emulator-unet3d"]["verdict"] != "not comparable"   # both cache
    assert cl["traced-compute-throughput-dlio-unet3d"]["verdict"] != "not comparable"
    # a side whose passes read from two places is unlike the other
    rows.loc[(rows["side"] == "emulator") & (rows["run"] == 0), "read_from"] = "device"
    e = _claims(rows, _steps(RATES, passes=3))["traced-data-throughput-emulator-unet3d"]
    assert e["verdict"] == "not comparable" and "the emulator from the page cache (2 passes) and the device (1 pass)" in e["note"]
    # both from the device: judged (DLIO's 0.2 of the real run's holds "< 1")
    rows["read_from"] = "device"
    assert _claims(rows, _steps(RATES, passes=3))["traced-data-throughput-dlio-unet3d"]["verdict"] == "holds"


@pytest.mark.parametrize("places,unlike", [
    ({"real": ["device"] * 2, "dlio": ["device"] * 2}, ""),
    ({"real": ["cache"], "dlio": ["cache", "cache"]}, ""),
    ({"real": ["memory"], "dlio": ["memory"]}, ""),
    ({"real": ["unknown"], "dlio": ["device"]}, ""),          # the audit could not tell for one side
    ({"real": [], "dlio": ["device"]}, ""),                   # no audit (a table from before it)
    ({"real": ["cache", "cache"], "dlio": ["device", "device"]},
     "the real run read from the page cache (2 passes), DLIO from the device (2 passes)"),
    ({"real": ["device"], "emulator": ["device", "cache"]},
     "the real run read from the device (1 pass), the emulator from the device (1 pass) and the page cache (1 pass)"),
    ({"real": ["device", "unknown"], "sleep": ["memory"]},
     "the real run read from the device (1 pass), the sleep run from memory (tmpfs) (1 pass)"),
])
def test_unlike_sides_on_tiny_tables(places, unlike):
    assert findings.unlike_sides(places) == unlike


def test_each_workload_quotes_its_own_benchmark_gap():
    rows = pd.concat([_rows(VECS, workload=w) for w in ("bert", "dlrm")], ignore_index=True)
    steps = pd.concat([_steps(RATES, workload=w) for w in ("bert", "dlrm")], ignore_index=True)
    cl = _claims(rows, steps)
    # each row quotes its own workload's gap, as words (a context, not a target for ours)
    assert "0.2 of the real run's" in cl["traced-data-throughput-emulator-bert"]["note"]
    assert cl["traced-data-throughput-emulator-bert"]["paper_value"] is None
    assert cl["traced-data-throughput-dlio-bert"]["paper_value"] == 0.2
    assert "2.5x to 5x" not in " ".join(c["statement"] for c in cl.values())


@pytest.mark.parametrize("batch,measured,other,rule,paper", [
    (8192, "traced-data-throughput-dlio-dlrm", "traced-data-throughput-dlio-dlrm-from-16k",
     "between 0.8 and 1.25", "~1 (batch < 16k)"),
    (32768, "traced-data-throughput-dlio-dlrm-from-16k", "traced-data-throughput-dlio-dlrm", "< 1", 0.5)])
def test_dlrm_benchmark_gap_only_from_batch_16k(batch, measured, other, rule, paper):
    """Sec 5.3.2: DLRM's benchmark is "all very similar" to the real run below batch 16k and
    reaches 0.5 of its data throughput only at the highest batch: two rows, the one of the
    batch the stage ran measured, the other not measured with what it needs."""
    rows = _rows(VECS, workload="dlrm").assign(batch_size=batch)
    cl = _claims(rows, _steps({"real": (1.0, 1.0), "emulator": (1.0, 1.0), "dlio": (0.95, 1.0)}, workload="dlrm"))
    g = cl[measured]
    assert g["rule"] == rule and g["paper_value"] == paper and "16k and up" in g["note"]
    assert f"batch {batch}" in g["statement"] and g["our_value"] == pytest.approx(0.95, rel=0.02)
    assert cl[other]["verdict"] == "not measured" and "16,384" in cl[other]["note"]
    e = cl["traced-data-throughput-emulator-dlrm"]
    assert e["basis"] == "extension" and f"batch {batch}" in e["note"]


def test_dlio_not_measured_claims_are_emitted_with_the_reason():
    rows = _rows({"real": REAL, "emulator": EMU, "dlio": None}, why={"dlio": "mpiexec missing"})
    cl = _claims(rows, _steps({"real": (100, 50), "emulator": (95, 50)}))
    for k in ("traced-similarity-emulator-vs-dlio-unet3d", "traced-checkpoint-closer-than-dlio-unet3d",
              "traced-similarity-dlio-unet3d", "traced-data-throughput-dlio-unet3d"):
        assert cl[k]["verdict"] == "not measured", k
        assert "mpiexec missing" in cl[k]["note"], k
    assert cl["traced-similarity-emulator-unet3d"]["verdict"] != "not measured"


def test_markdown_names_every_side_and_says_not_measured():
    vs = {"real": REAL, "emulator": EMU, "dlio": None}
    md = compare.markdown(compare.component_table("dlrm", vs),
                          compare.similarity_table("dlrm", vs, why={"dlio": "no DLIO"}), "Table 5.3")
    assert "| dlio | not measured |" in md and "no DLIO" in md
    assert "emulator vs real" in md and "Median VFS write size (B)" in md


def test_headline_similarity_is_the_lowest_emulator_value():
    s = pd.DataFrame({"side": ["emulator", "emulator", "dlio"], "similarity": [0.9, 0.97, 0.5]})
    assert compare.headline_similarity(s) == 0.9
    assert compare.headline_similarity(s[s["side"] == "dlio"]) is None


def test_section_refuses_bad_input():
    with pytest.raises(config.ConfigError, match="traced_comparison"):
        config.validate("traced_comparison", {"points": {"resnet": {"batch_size": 1, "ranks": 1}}})
    with pytest.raises(config.ConfigError, match="ranks"):
        config.validate("traced_comparison", {"points": {"dlrm": {"batch_size": 1, "ranks": 0}}})
    ok = config.validate("traced_comparison", {"points": {"dlrm": {"batch_size": 512, "ranks": 1}}})
    assert ok.sides == ["real", "sleep", "emulator", "dlio"]


def test_sides_without_real_stop_before_work():
    from experiments.sidebyside import sides

    cfg = config.validate("traced_comparison", {"points": {"dlrm": {"batch_size": 512, "ranks": 1}},
                                                "sides": ["emulator"]})
    with pytest.raises(config.ConfigError, match="real"):
        sides.check_points(cfg, {"dlrm": {}})


def test_bench_client_table_puts_emulator_dlio_and_fio_side_by_side():
    from experiments.sidebyside.bench import client_table

    emu = pd.DataFrame([{"tier": "disk", "workload": "unet3d", "emulator_MBps": 434.0, "fio_MBps": 467.0,
                         "fraction_of_fio": 0.93, "emulator_warm_MBps": 2000.0, "fio_warm_MBps": 2500.0,
                         "warm_fraction_of_fio": 0.8, "bound": "storage"},
                        {"tier": "disk", "workload": "dlrm", "emulator_MBps": 10.0, "fio_MBps": 100.0,
                         "fraction_of_fio": 0.1, "bound": "client"}])
    # issue 21's row: DLIO's all-epoch average (1,237 MB/s) looked ahead; its first epoch is 0.53 of fio
    dl = pd.DataFrame([{"tier": "disk", "workload": "unet3d", "status": "measured", "dlio_Bps": 1237e6,
                        "basis": "bytes", "dlio_cold": 250e6, "fio_cold": 470e6, "dlio_warm": 2100e6,
                        "fio_warm": 2500e6, "dlio_fraction_of_fio": 0.53, "dlio_warm_fraction_of_fio": 0.84,
                        "bytes_per_sample": 1e6, "why": ""},
                       {"tier": "disk", "workload": "dlrm", "status": "not measured", "why": "no mpiexec"}])
    t = client_table(emu, dl).set_index("workload")
    assert t.loc["unet3d", "emulator_ahead_of_dlio_cold"] == True  # noqa: E712 - a pandas object cell
    assert t.loc["unet3d", "emulator_ahead_of_dlio_warm"] == False  # noqa: E712
    assert t.loc["unet3d", "dlio_cold_MBps"] == pytest.approx(250) and "dlio_MBps" not in t
    assert t.loc["unet3d", "emulator_goal_0.8_cold"] and not t.loc["dlrm", "emulator_goal_0.8_cold"]
    assert pd.isna(t.loc["dlrm", "emulator_ahead_of_dlio_cold"]) and t.loc["dlrm", "dlio_why"] == "no mpiexec"
    assert t.loc["dlrm", "emulator_bound"] == "client" and pd.isna(t.loc["dlrm", "emulator_warm_MBps"])
    # DLRM's DLIO is judged in requests/s: its bytes/s is requests/s x bytes per sample
    dl2 = pd.DataFrame([{"tier": "disk", "workload": "dlrm", "status": "measured", "basis": "requests",
                         "dlio_cold": 1000.0, "fio_cold": 2000.0, "bytes_per_sample": 4096.0}])
    t2 = client_table(emu, dl2).set_index("workload")
    assert t2.loc["dlrm", "dlio_cold_MBps"] == pytest.approx(4.096)


def test_a_failing_claim_says_what_was_measured():
    vals = {**SIDE_VALUES, "emulator": {"data_sps": 50.0, "compute_sps": 50.0},
            "sleep": {"data_sps": 55.0, "compute_sps": 50.0}}
    rows = _rows({**VECS, "sleep": REAL}, vals)
    cl = _claims(rows, _steps({"real": (100, 50), "emulator": (50, 50)}), {"unet3d": {**VECS, "sleep": REAL}})
    note = cl["traced-data-throughput-emulator-unet3d"]["note"]
    assert "real 100" in note and "emulator 50" in note and "sleep run 55" in note
    far = vec(**{k: 0.0 for k in KEYS[:9]})     # reads nothing the real run read
    vs2 = {"real": REAL, "emulator": far, "dlio": DLIO}
    c = _claims(_rows(vs2), vectors={"unet3d": vs2})["traced-similarity-emulator-unet3d"]
    # one pass: no interval, so not a failure, but the note still names the farthest components
    assert c["verdict"] == "inconclusive" and "farthest components" in c["note"] and "vfs_reads 10 vs 0" in c["note"]


def test_throughput_figure_draws_each_side_at_its_point_with_the_passes_range():
    """The four sides at one point per workload: the sides on the x axis, each side's median
    over its passes with the lowest and highest pass, one colour per side (no log batch axis
    over one batch size); one pass: no bar."""
    import matplotlib
    matplotlib.use("Agg")
    from experiments.figures import style
    from experiments.sidebyside import report

    rows = _rows({"real": REAL, "emulator": EMU}, passes=3)
    rows.loc[rows["side"].eq("real"), "data_sps"] = [90.0, 100.0, 120.0]
    fig = report.throughput_figure(rows)
    bars = [c for ax in fig.axes for c in ax.containers]
    assert len(bars) == 4                       # 2 sides x (data, compute)
    data = fig.axes[0]
    assert [t.get_text() for t in data.get_xticklabels()] == ["real", "emulator"]   # SIDES' order
    real = bars[0]
    assert real.lines[0].get_xdata()[0] == 0 and real.lines[0].get_color() == style.category("side", "real")["color"]
    assert real.lines[0].get_ydata()[0] == 100
    lo, hi = real.lines[2][0].get_segments()[0][:, 1]
    assert (lo, hi) == (90, 120)                # the passes' range
    assert data.get_xscale() == "linear" and style.series_problems(fig) == []
    assert "3 pass(es)" in data.get_title()
    # three workloads' panels side by side, as the smoke and default profiles draw them: no title
    # runs into its neighbour's (the layout check every saved figure passes)
    three = pd.concat([_rows({"real": REAL, "emulator": EMU, "dlio": DLIO}, workload=w).assign(batch_size=b)
                       for w, b in (("unet3d", 2), ("dlrm", 256), ("bert", 2))], ignore_index=True)
    with matplotlib.rc_context():
        style.apply("notebook")   # the report's style: bold titles, seaborn's notebook sizes
        assert style.layout_problems(report.throughput_figure(three)) == []


def test_bert_bio_over_vfs_of_the_benchmark_against_the_real_run():
    """Table 5.2: BERT's real run reads 107 % of its VFS bytes from storage, the benchmark 86.97 %:
    DLIO over real below 1, the ratio of the medians over the passes, each side's passes
    resampled; a real run with no block I/O (memory tier) is not measured."""
    vs = {"real": vec(bio_vfs_read_pct=107.0), "emulator": vec(bio_vfs_read_pct=100.0),
          "dlio": vec(bio_vfs_read_pct=87.0)}
    c = _claims(_rows(vs, workload="bert"), vectors={"bert": vs})["traced-bio-vfs-dlio-below-real-bert"]
    assert c["our_value"] == pytest.approx(87 / 107) and c["paper_value"] == pytest.approx(0.813, abs=1e-3)
    assert c["n"] == 1 and c["ci_low"] is None and c["verdict"] == "inconclusive", c["ci_method"]
    rows = _rows(vs, workload="bert", passes=3)
    rows.loc[rows["side"].eq("dlio"), "bio_vfs_read_pct"] = [85.0, 87.0, 90.0]
    c = _claims(rows, vectors={"bert": vs})["traced-bio-vfs-dlio-below-real-bert"]
    assert c["n"] == 3 and c["ci_high"] < 1 and c["verdict"] == "holds" and "DLIO 3 pass(es): 85, 87, 90" in c["note"]
    vs["real"] = vec(bio_vfs_read_pct=0.0)
    c = _claims(_rows(vs, workload="bert"), vectors={"bert": vs})["traced-bio-vfs-dlio-below-real-bert"]
    assert c["verdict"] == "not measured" and "memory-backed" in c["note"]


@pytest.mark.parametrize("share", [50.0, 100.0])
def test_unet3d_storage_reads_are_counted_in_passes_over_the_data_set(share):
    """Sec 5.1.4: ~30 GB from storage, "the approximate size of the dataset". The BIO / VFS
    share times the epochs: 50 % over 2 epochs is one pass (the second epoch cached), 100 % two
    passes (nothing cached); one traced pass gives no interval, six decide."""
    vs = {"real": vec(bio_vfs_read_pct=share), "emulator": vec(), "dlio": vec()}
    c = _claims(_rows(vs), vectors={"unet3d": vs})["traced-unet3d-vfs-reads-to-storage"]
    assert c["our_value"] == pytest.approx(share / 50) and c["verdict"] == "inconclusive" and c["ci_low"] is None
    assert "2 training epochs" in c["statement"]
    c = _claims(_rows(vs, passes=6), vectors={"unet3d": vs})["traced-unet3d-vfs-reads-to-storage"]
    assert c["verdict"] == ("holds" if share == 50 else "fails")
    c = _claims(_rows(vs).assign(epochs=0), vectors={"unet3d": vs})["traced-unet3d-vfs-reads-to-storage"]
    assert c["verdict"] == "not measured" and "phases" in c["note"]


def test_compute_throughput_is_a_per_pass_ratio_so_a_shared_move_of_the_pass_cancels():
    """At compute_level hour a pass's emulating sides sleep the fit carried to that pass's speed:
    the real side and the others move together from pass to pass. The compute row takes the
    ratio pass by pass (findings._Tables.pass_ratio); resampling each side's passes apart would
    count the shared move twice (fresh clone L: 0.82-0.94 pass by pass, printed [0.575, 1.17])."""
    speed = [1.0, 1.35, 0.8, 1.2, 0.9, 1.1]               # the box's speed in each pass
    rows = _rows(VECS, passes=6)
    for run, k in enumerate(speed):
        for side, ratio in (("real", 1.0), ("emulator", 0.95), ("dlio", 1.02)):
            sel = (rows["run"] == run) & (rows["side"] == side)
            rows.loc[sel, "compute_sps"] = 50.0 * k * ratio * (1 + 0.005 * (run % 3 - 1))
    cl = _claims(rows, _steps(RATES, passes=6))
    e, d = cl["traced-compute-throughput-emulator-unet3d"], cl["traced-compute-throughput-dlio-unet3d"]
    assert e["our_value"] == pytest.approx(0.95, rel=0.01) and d["our_value"] == pytest.approx(1.02, rel=0.01)
    assert "per-pass ratio" in e["ci_method"] and e["n"] == 6
    assert 0.9 < e["ci_low"] < e["ci_high"] < 1.0 and e["verdict"] == "holds"
    t = findings._Tables(rows, None, {})
    # apart, the same passes give an interval as wide as the box's moves
    _, apart = stats.ratio_of_medians(t.values("unet3d", "emulator", "compute_sps"),
                                      t.values("unet3d", "real", "compute_sps"))
    assert apart.high / apart.low > 1.2 > e["ci_high"] / e["ci_low"]


def test_a_sleeping_sides_compute_interval_holds_the_spread_of_the_fit_it_slept_for():
    """Every pass of the emulator and DLIO sleeps for one compute fit, so the passes alone give an
    interval conditional on it. With the fit's own runs at hand (the workload stage's, row real:
    report.fit_steps) the sleeping sides' compute ratio adds the line's variance at the side's
    point (here spread 10 % over its 3 runs), and the real side's own rows are not touched."""
    rows = _rows(VECS, passes=3, compute_scale=1.1)
    rows.loc[rows["side"] == "real", "compute_scale"] = np.nan
    for run in range(3):
        for side, ratio in (("real", 1.0), ("emulator", 0.95 + 0.005 * run), ("dlio", 1.02)):
            sel = (rows["run"] == run) & (rows["side"] == side)
            rows.loc[sel, "compute_sps"] = 50.0 * ratio
    fit = []
    for g in (1, 2):
        for b in (1, 2, 4):
            for j in range(3):
                off = (j - 1) * (0.1 if (g, b) == (1, 4) else 0.01)
                fit.append(pd.DataFrame({"workload": "unet3d", "row": "real", "ranks": g, "batch_size": b,
                                         "run": 10 * g + 3 * b + j, "steady": True, "made_by": "repro",
                                         "compute_ns": (0.02 * g + 0.03 * b) * (1 + off) * 1e9 * np.ones(8)}))
    fit = pd.concat(fit, ignore_index=True)
    vs = {"unet3d": VECS}
    alone = findings.claims(rows, _steps(RATES, passes=3), vs)
    held = findings.claims(rows, _steps(RATES, passes=3), vs, fit_steps=fit)
    get = lambda cl, i: next(c for c in cl if c["id"] == i)  # noqa: E731
    a, h = get(alone, "traced-compute-throughput-emulator-unet3d"), get(held, "traced-compute-throughput-emulator-unet3d")
    assert a["our_value"] == pytest.approx(h["our_value"])
    assert h["ci_low"] < a["ci_low"] and h["ci_high"] > a["ci_high"]
    assert "fit's variance at the point added" in h["ci_method"] and "fit" not in a["ci_method"]
    # a point the fit did not measure: the sides were given the real side's speed there, no fit term
    off_grid = findings.claims(rows.assign(batch_size=3), _steps(RATES, passes=3), vs, fit_steps=fit)
    assert "fit's variance" not in get(off_grid, "traced-compute-throughput-emulator-unet3d")["ci_method"]
