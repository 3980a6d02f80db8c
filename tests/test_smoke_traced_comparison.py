"""The ``traced_comparison`` stage on the smoke profile: real, emulator and DLIO traced side by
side (the smoke profile leaves out the sleep side, the real side's code); asserting on what it
wrote (every side the profile names per workload, measured or with a recorded reason,
similarities in [0, 1], the real run's self-similarity, tables consistent with the vectors,
throughputs, timelines, the emulator row of the validation figures, claims with computed
verdicts).

``SMOKE_STAGES="traced_comparison" python -m pytest -m smoke tests/test_smoke_traced_comparison.py``
"""

import json
import math

import pandas as pd
import pytest

from experiments import claims
from experiments.output import headline
from experiments.statistics.stats import Interval
from experiments.sidebyside.findings import THESIS
from experiments.sidebyside.settings import FIXED_DATA, SIDES
from experiments.sidebyside.stage import TABLE_FILE

pytestmark = pytest.mark.smoke


@pytest.fixture(scope="module")
def tc(smoke_run):
    smoke_root = smoke_run.root
    d = smoke_run.wait_for("traced_comparison")
    rep = smoke_run.wait_for("traced_comparison_report")
    if not d.exists() or not rep.exists():
        pytest.skip("stages traced_comparison, traced_comparison_report not in SMOKE_STAGES")
    import yaml

    params = yaml.safe_load((smoke_root / "params.yaml").read_text())["traced_comparison"]
    return {"dir": d, "report": rep, "root": smoke_root, "points": params["points"],
            "search": params.get("max_accelerators", {}),
            "sides": params.get("sides", list(SIDES)), "runs": params.get("runs", 1),
            "sims": pd.read_csv(d / "similarity.csv", dtype={"why": str}).fillna({"why": ""}),
            "tp": pd.read_csv(d / "throughput.csv"),
            "vectors": json.loads((d / "vectors.json").read_text()),
            "claims": json.loads((rep / "claims.json").read_text())}


def sides_of(tc, w) -> set:
    """The sides a pass of ``w`` runs: the profile's, ``fixed`` only where the workload has a
    fixed-size variant of its data (RetinaNet)."""
    return {s for s in tc["sides"] if s != "fixed" or w in FIXED_DATA}


def test_four_sides_per_workload_each_measured_or_with_a_reason(tc):
    s = tc["sims"]
    # a run is one pass of a workload: every side once, the rows tagged with the pass
    assert s.groupby("run")["workload"].nunique().eq(1).all()
    assert s["run"].nunique() == tc["runs"] * len(tc["points"])
    for w in tc["points"]:
        got = s[(s["workload"] == w) & (s["run"] == s.loc[s["workload"] == w, "run"].min())].set_index("side")
        assert set(got.index) == sides_of(tc, w) and set(tc["sides"]) <= set(SIDES), w
        assert got.loc["real", "status"] == "measured"
        assert got.loc["emulator", "status"] == "measured"
        for side, r in got.iterrows():
            if r["status"] == "measured":
                assert 0.0 <= r["similarity"] <= 1.0, (w, side)
                assert r["backend"] in ("bpftrace", "strace", "proc")
            else:
                assert r["status"] == "not measured" and len(r["why"]) > 10, (w, side)


def test_self_consistency_real_vs_itself_and_tables_match_the_vectors(tc):
    s = tc["sims"]
    real = s[s["side"] == "real"]["similarity"].tolist()
    assert real == pytest.approx([1.0] * len(tc["points"]) * tc["runs"])
    names = TABLE_FILE   # RetinaNet's Table 5.x beside the thesis's 5.1-5.3
    for w in tc["points"]:
        # the table of each side's median vector over the passes, as vectors.json holds them
        c = pd.read_csv(tc["dir"] / f"{names[w]}.csv").set_index("key")
        assert len(c) == 19
        for side in sides_of(tc, w):
            v = tc["vectors"][w][side]
            if v is None:
                assert c[side].isna().all()
                continue
            for k, x in v.items():
                if x is None or (isinstance(x, float) and math.isnan(x)):
                    assert math.isnan(c.loc[k, side])
                else:
                    assert c.loc[k, side] == pytest.approx(x), (w, side, k)
        # the real run reads data: its read components were measured and are not zero
        assert c.loc["vfs_read_bytes", "real"] > 0 or math.isnan(c.loc["vfs_read_bytes", "real"])
        assert "median over" in (tc["dir"] / f"{names[w]}.md").read_text()


def test_throughputs_of_measured_sides(tc):
    tp = tc["tp"]
    for _, r in tp.iterrows():
        if r["status"] == "measured":
            assert r["samples_per_s"] > 0 and r["train_s"] > 0, (r["workload"], r["side"])
            assert r["data_sps"] > 0 and r["compute_sps"] > 0, (r["workload"], r["side"])
            assert not r["MBps"] <= 0, (r["workload"], r["side"])   # NaN where the records hold no bytes
            # the device audit of every measured side, DLIO's from outside its processes: the
            # bytes behind MBps beside the device's (tier disk: a block device, a ratio)
            assert r["read_from"] in ("device", "cache", "unknown"), (r["workload"], r["side"])
            if r["read_from"] != "unknown":
                assert r["job_read_MB"] > 0 and r["device_read_ratio"] == pytest.approx(
                    r["device_read_MB"] / r["job_read_MB"]), (r["workload"], r["side"])
        assert r["batch_size"] == tc["points"][r["workload"]]["batch_size"]
        assert r["ranks"] == tc["points"][r["workload"]]["ranks"]
    # every side after the real one was given the fit carried to its pass's hour (hour_level)
    later = tp[(tp["side"] != "real") & (tp["status"] == "measured")]
    assert len(later) and later["compute_scale"].gt(0).all()
    assert tp.loc[tp["side"] == "real", "compute_scale"].isna().all()


def test_timelines_and_throughput_figure_written(tc):
    d, rep = tc["dir"], tc["report"]
    assert (d / "rounds.json").exists() and (d / "variance.csv").exists()
    assert (rep / "throughput_by_side.png").exists()
    for w in tc["points"]:
        assert list(rep.glob(f"fig5_*_{w}_timeline_real.png")), w
        assert list(rep.glob(f"fig5_*_{w}_timeline_emulator.png")), w
        assert (d / f"trace_{w}_real.parquet").exists() and (d / f"timeline_{w}_real.parquet").exists()
    # the report draws each timeline from the small file beside the full trace (what the reference run ships)
    assert all(t["trace"].startswith("timeline_") for t in json.loads((d / "timelines.json").read_text()))
    # the measuring stage draws nothing; its report draws from the files it wrote
    assert not list(d.glob("*.png")) and not (d / "claims.json").exists()


def test_report_reads_back_what_the_measuring_stage_held(tc):
    """The report's tables are the measuring stage's: the claims judged from them equal the
    ones a re-judgement of the same files gives, and every side's vector is back (NaN, not
    None, where a component was not measured)."""
    from experiments.sidebyside import report

    tabs = report.load(tc["dir"])
    assert set(tabs["vectors"]) == set(tc["points"])
    for w, sides in tabs["vectors"].items():
        for side, v in sides.items():
            assert v is None or all(x is not None for x in v.values()), (w, side)
    again = {c["id"]: c["verdict"] for c in report.claims(tabs)}
    assert again == {c["id"]: c["verdict"] for c in tc["claims"]}


def test_emulator_row_of_the_validation_figures_reads_this_stage(tc, monkeypatch):
    from experiments.workloads import validation

    monkeypatch.setenv("DLIO_ROOT", str(tc["root"]))
    row = next(r for r in validation.ROWS if r.key == "emulator")
    got = validation.load_rows([row])
    assert set(got["workload"]) == set(tc["points"])
    assert {"data_sps", "compute_sps"} <= set(got.columns)
    steps = validation.load_rows([row], table="raw.parquet")
    assert len(steps) and set(steps["variant"]) == {"emulator"}
    runs = validation.load_rows([row], table="runs.csv")
    assert set(runs["run"]) == set(steps["run"])                # every pass a run of its own


def test_claims_present_with_computed_verdicts(tc):
    cl = {c["id"]: c for c in tc["claims"]}
    thesis = [w for w in tc["points"] if w in THESIS]   # RetinaNet's rows are its own (below)
    for w in thesis:
        for k in ("traced-similarity-dlio", "traced-similarity-emulator", "traced-similarity-sleep",
                  "traced-similarity-emulator-vs-dlio", "traced-data-throughput-emulator",
                  "traced-compute-throughput-emulator", "traced-compute-throughput-dlio",
                  "traced-checkpoint-closer-than-dlio", "traced-self-similarity",
                  "traced-data-throughput-dlio"):
            assert f"{k}-{w}" in cl
    for c in cl.values():
        assert c["kind"] in claims.KINDS and c["verdict"] in claims.VERDICTS
        ci = (Interval(c["ci_low"], c["ci_high"], c["n"], c["ci_method"] or "", coverage=c.get("ci_coverage"))
              if c.get("ci_low") is not None else None)
        again = claims.claim(c["id"], c["source"], c["figure"], c["statement"], c["our_value"], c["unit"],
                             c["rule"], c["paper_value"], kind=c["kind"], magnitude=c["magnitude"],
                             interval=ci, margin=c.get("margin"), margin_why="as declared",
                             not_comparable="as written" if c["verdict"] == "not comparable" else "")
        assert again["verdict"] == c["verdict"], c["id"]
        if c["verdict"] == "not measured":
            assert "not measured on this run" in c["note"]
    assert all(cl[f"traced-self-similarity-{w}"]["verdict"] == "holds" for w in thesis)
    # a similarity is the whole pass's (the thesis's quantity), the median over the passes; with
    # fewer than 3 passes it has no interval and says what it needs; the thesis's values are
    # DLIO's rows', the emulator's ours
    sims = tc["sims"]
    for w in tc["points"]:
        for side in ("dlio", "emulator"):
            s = cl[f"traced-similarity-{side}-{w}"]
            if s["verdict"] != "not measured":
                got = sims[(sims["workload"] == w) & (sims["side"] == side) & (sims["status"] == "measured")]
                assert s["our_value"] == pytest.approx(got["similarity"].median()) and s["n"] == len(got)
                if len(got) < 3:
                    assert s["verdict"] == "inconclusive" and "needs at least 3 passes" in s["ci_method"]
        assert cl[f"traced-similarity-dlio-{w}"]["basis"] == ("stated" if w in THESIS else "extension")
        assert cl[f"traced-similarity-emulator-{w}"]["basis"] == "extension"


def test_retinanet_fixed_size_side_and_search_at_its_au_mark(tc):
    """RetinaNet (issue 69): its fixed-size side ran on files of one size, its claims were judged,
    and its max-accelerators search ran on each tier the profile names at AU 0.85."""
    if "retinanet" not in tc["points"]:
        pytest.skip("no RetinaNet point in this profile")
    import yaml

    cl = {c["id"]: c for c in tc["claims"]}
    for i in ("traced-similarity-dlio-retinanet", "traced-similarity-emulator-retinanet",
              "retinanet-fixed-size-similarity", "retinanet-fixed-size-throughput"):
        assert cl[i]["source"] == "MLPerf Storage v3.0 RetinaNet (extension)", i
    tp = tc["tp"]
    fx = tp[(tp["workload"] == "retinanet") & (tp["side"] == "fixed")]
    if "fixed" in tc["sides"]:
        assert len(fx) and (fx["status"] == "measured").all()
        em = tp[(tp["workload"] == "retinanet") & (tp["side"] == "emulator")]
        # the same number of training samples read, from files of one size
        assert fx["samples"].tolist() == em["samples"].tolist()
        data = yaml.safe_load((tc["root"] / "params.yaml").read_text())["retinanet"]["data"]
        m = pd.read_csv(tc["root"] / "data" / "retinanet-fixed" / "filelist.csv")
        assert set(m["bytes"]) == {data["mean_bytes"]}
        assert cl["retinanet-fixed-size-similarity"]["verdict"] != "not measured"
    s = pd.read_csv(tc["dir"] / "search.csv")
    assert set(s["tier"]) == set(tc["search"]["tiers"]) and (s["au_mark"] == 0.85).all()
    for r in s.itertuples():
        c = cl[f"retinanet-max-accelerators-{r.tier}"]
        assert c["kind"] == "check" and c["our_value"] == r.max_accelerators
        assert c["verdict"] == ("holds" if r.max_accelerators >= 1 else "fails")
        assert f"bound: {r.bound}" in c["note"] and "device audit" in c["note"]
        assert 1 <= len(r.tried.split(",")) <= tc["search"]["limit"]


def test_metrics_in_the_headline_vocabulary(tc):
    m = json.loads((tc["dir"] / "metrics.json").read_text())
    r = json.loads((tc["report"] / "metrics.json").read_text())
    assert set(m) <= set(headline.KEYS) and set(r) <= set(headline.KEYS)
    assert 0 <= m["similarity"] <= 1 and r["claims"] == len(tc["claims"])


def test_no_data_throughput_row_judges_a_cache_served_side_against_a_device_served_one(tc):
    """Like with like (issue 66): a comparison of two sides' data throughputs is judged only when
    the device audit (throughput.csv's ``read_from``, per pass) says both read from the same place
    in every pass; otherwise the row says "not comparable" and where each side read from."""
    tp, cl = tc["tp"], {c["id"]: c for c in tc["claims"]}
    if "read_from" not in tp:
        pytest.skip("throughput.csv has no device audit")
    tp = tp[(tp["status"] == "measured") & ~tp.get("warmup", pd.Series(False, index=tp.index)).fillna(False).astype(bool)]
    checked = 0
    for cid, c in cl.items():
        if not cid.startswith("traced-data-throughput-") or c["verdict"] == "not measured":
            continue
        side, w = cid.removeprefix("traced-data-throughput-").removesuffix("-from-16k").split("-", 1)
        places = {s: set(tp[(tp["workload"] == w) & (tp["side"] == s)]["read_from"].dropna())
                  & {"device", "cache", "memory"} for s in ("real", side)}
        unlike = all(places.values()) and len(places["real"] | places[side]) > 1
        if unlike:
            assert c["verdict"] == "not comparable" and c["note"].startswith("not comparable: the real run read from"), c
        else:
            assert c["verdict"] != "not comparable", c
        assert not (c["verdict"] in ("holds", "fails", "direction only") and
                    ("cache" in places["real"]) != ("cache" in places[side]) and all(places.values())), c
        checked += 1
    assert checked, "no data throughput row measured"
