"""The AlexNet mini-application's notebooks on the smoke profile (caltech_like,
alexnet_prefetch, alexnet_checkpoint, alexnet_report): assertions on what they wrote."""

import json

import pandas as pd

from experiments import claims
import pytest

from test_smoke_pipeline import assert_cold_runs

pytestmark = pytest.mark.smoke


def test_caltech_like_data_and_claims(stage_results, smoke_run):
    d = stage_results("caltech_like")
    m = pd.read_csv(smoke_run.root / "data" / "caltech_like" / "filelist.csv")
    assert len(m) == 48 and set(m["format"]) == {"jpg", "png"} and m["label"].nunique() == 4
    raw = pd.read_parquet(d / "raw.parquet")
    assert list(raw["bytes"]) == list(m["bytes"])
    assert {m["id"] for m in json.loads((d / "measured.json").read_text())} == {"caltech-median-size", "caltech-mean-size"}
    t = pd.read_csv(stage_results("claims") / "claims.csv")
    cl = t[t["stage"] == "caltech_like"].set_index("id")
    assert set(cl.index) == {"caltech-median-size", "caltech-mean-size"}
    assert (cl["kind"] == "check").all() and (cl["our_value"] > 0).all()


def test_alexnet_prefetch_measured_every_configuration(stage_results):
    d = stage_results("alexnet_prefetch")
    raw = pd.read_parquet(d / "raw.parquet")
    p = raw[raw["experiment"] == "prefetch"]
    assert set(p["threads"]) == {1, 2} and set(p["prefetch"]) == {0, 1}
    assert set(p["tier"]) == {"mem", "disk"} and (raw["seconds"] > 0).all()
    assert (raw["iterations"] == raw["images"] // raw["batch_size"]).all()
    s = pd.read_csv(d / "summary.csv")
    assert s["io_excess_s"].notna().all()
    b = pd.read_csv(d / "batch_sizes.csv")
    assert set(b["batch_size"]) == {4, 8} and set(b["threads"]) == {2}
    dst = pd.read_csv(d / "dstat.csv")
    assert set(dst["tier"]) == {"mem", "disk"} and set(dst["prefetch"]) == {0, 1}
    env = json.loads((d / "env.json").read_text())
    assert env["stage"] == "alexnet_prefetch" and "alexnet" in env["params"]
    assert_cold_runs(env)


def test_alexnet_checkpoint_every_mode_and_restore(stage_results):
    d = stage_results("alexnet_checkpoint")
    runs = pd.read_parquet(d / "raw.parquet")
    assert set(runs["target"]) == {"none", "mem", "disk", "mem>disk"}
    ck = runs[runs["mode"] != "none"]
    assert (ck["checkpoints"] == 2).all() and (ck["stall_median_s"] > 0).all()
    saves = pd.read_csv(d / "saves.csv")
    assert len(saves) == 6 and (saves["bytes"] > 0).all()
    drains = pd.read_csv(d / "drains.csv")
    assert len(drains) == 2 and (drains["target"] == "mem>disk").all()
    env = json.loads((d / "env.json").read_text())
    assert env["restore_check"]["bit_identical"] is True
    m = json.loads((d / "metrics.json").read_text())
    assert set(m) == {"seconds", "speedup"} and m["speedup"] > 0
    s = pd.read_csv(d / "summary.csv")
    assert float(s.loc[s["target"] == "mem", "stall_median_s_vs_fast"].iloc[0]) == 1.0


def test_alexnet_report_figures_and_claims(stage_results):
    d = stage_results("alexnet_report")
    for name in ("caltech_like_sizes", "fig6_alexnet_prefetch_threads", "fig7_alexnet_batch_size",
                 "fig8_alexnet_dstat", "fig9_checkpoint_runtime", "fig10_checkpoint_dstat"):
        assert (d / f"{name}.png").stat().st_size > 5000, name
    cl = json.loads((d / "claims.json").read_text())
    c = {x["id"]: x for x in cl}
    assert all(x["verdict"] in claims.VERDICTS and x["rule"] and x["kind"] == "finding" for x in cl)
    b = c["burst-buffer-speedup-vs-slow"]
    assert b["our_value"] > 0 and b["paper_value"] == 2.6 and b["magnitude"] == "within 2x"
    assert b["ratio"] == pytest.approx(b["our_value"] / 2.6)
    assert c["burst-buffer-close-to-fast"]["our_value"] > 0
    for tier in ("mem", "disk"):
        assert c[f"alexnet-prefetch-faster-{tier}"]["our_value"] > 0
    assert c["alexnet-prefetch-faster-disk"]["cold"] is True
    r = pd.read_csv(d / "stall_ratios.csv").iloc[0]
    assert r["stall_ratio_to_fast_mem"] == 1.0 and r["stall_ratio_to_fast_burst"] > 0
    m = json.loads((d / "metrics.json").read_text())
    assert m["claims"] == len(cl) and m["holds"] == sum(c["verdict"] == "holds" for c in cl)
