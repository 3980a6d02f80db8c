"""The three MLPerf workloads end to end on the smoke profile (stages workload_data, unet3d,
bert, dlrm, workload_fits), asserting on what the notebooks wrote."""

import json

import pandas as pd

from experiments import claims
import pytest

pytestmark = pytest.mark.smoke

PARTS = ["data_ns", "compute_ns", "step_ns"]


def test_data_sets_were_generated(stage_results, smoke_root):
    d = stage_results("workload_data")
    s = pd.read_csv(d / "summary.csv").set_index("workload")
    assert set(s.index) == {"unet3d", "bert", "dlrm"} and (s["bytes"] > 0).all()
    assert (smoke_root / "data" / "dlrm" / "train_data.bin").stat().st_size == 4096 * 160
    assert len(list((smoke_root / "data" / "unet3d" / "train").glob("*_x.npy"))) == 8
    assert len(list((smoke_root / "data" / "bert" / "train").glob("*.tfrecord"))) == 2
    cl = json.loads((d / "claims.json").read_text())
    assert {c["id"] for c in cl} >= {"dlrm-sample-size"} and all(c["verdict"] in claims.VERDICTS for c in cl)


@pytest.mark.parametrize("workload", ["unet3d", "bert", "dlrm"])
def test_every_configuration_and_rank_has_steps(stage_results, workload):
    d = stage_results(workload)
    raw = pd.read_parquet(d / "raw.parquet")
    got = set(map(tuple, raw[["ranks", "batch_size"]].drop_duplicates().to_numpy()))
    b = {"unet3d": [1, 2], "bert": [2], "dlrm": [64, 256]}[workload]
    assert got == {(g, x) for g in (1, 2) for x in b}
    for (g, _), grp in raw.groupby(["ranks", "batch_size"]):
        assert set(grp["rank"]) == set(range(g))
    assert (raw[PARTS] >= 0).all().all() and (raw["step_ns"] >= raw["compute_ns"]).all()
    assert raw["steady"].any() and not raw["steady"].all()
    env = json.loads((d / "env.json").read_text())
    assert all(r["peak_rss_bytes"] > 0 for r in env["ranks"]) and len(env["ranks"]) == 3 * len(b)
    s = pd.read_csv(d / "summary.csv")
    assert (s["compute_sps"] > 0).all() and s["data_share"].between(0, 1).all()


@pytest.mark.parametrize("workload", ["unet3d", "bert", "dlrm"])
def test_app_log_pairs_phases(stage_results, workload):
    d = stage_results(workload)
    lines = [json.loads(x) for x in (d / "app_log.jsonl").read_text().splitlines()]
    assert lines and all({"ts", "rank", "phase", "event"} <= set(r) for r in lines)
    phases = {r["phase"] for r in lines}
    assert {"init", "train", "checkpoint"} <= phases
    begins = sum(r["event"] == "begin" for r in lines)
    assert begins == len(lines) - begins


def test_loaders_recorded_vfs_and_preprocessing(stage_results):
    for w in ("unet3d", "dlrm"):
        lo = pd.read_csv(stage_results(w) / "loader.csv")
        assert (lo["vfs_ns"] > 0).all() and (lo["prep_ns"] > 0).all()


def test_fits_model_file_figures_and_claims(stage_results):
    d = stage_results("workload_fits")
    m = json.loads((d / "compute_model.json").read_text())
    assert set(m["workloads"]) == {"unet3d", "bert", "dlrm"}
    assert m["unet3d_eval"]["mean_s"] > 0 and m["unet3d_eval"]["thesis"]["mean"] == 8.403
    assert (d / "unet3d_eval_sliding_window.png").exists()
    for w in m["workloads"].values():
        assert set(w["mean"]["coef"]) == {"G", "B", "c"} and w["thesis"]["mean"]["B"] > 0
    coef = pd.read_csv(d / "summary.csv")
    assert coef["paper_value"].notna().all()
    for w in ("unet3d", "bert", "dlrm"):
        for f in ("step_breakdown", "throughputs", "compute_distributions"):
            assert (d / f"{w}_{f}.png").stat().st_size > 5000
    cl = json.loads((d / "claims.json").read_text())
    assert len(cl) == 6 and all(c["verdict"] in claims.VERDICTS and c["rule"] for c in cl)
