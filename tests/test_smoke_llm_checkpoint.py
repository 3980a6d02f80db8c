"""The LLM checkpoint stages (notebooks 55, 56) on the smoke profile: 8 ranks of llama3 8B at
1/100,000, every tier and variant, the burst buffer; assertions on what it wrote."""

import json

import pandas as pd
import pytest

pytestmark = pytest.mark.smoke


def test_llm_checkpoint_wrote_every_variant_with_its_residency(stage_results):
    d = stage_results("llm_checkpoint")
    raw = pd.read_parquet(d / "raw.parquet")
    # 8 ranks, two files each (ZeRO-3), two checkpoints, both phases, in every (tier, variant)
    runs = raw.groupby(["tier", "variant"])
    assert set(runs.groups) == {("mem", "fsync"), ("mem", "no-fsync"), ("disk", "fsync"),
                                ("disk", "no-fsync"), ("disk", "direct")}
    assert (runs.size() == 8 * 2 * 2 * 2).all() and raw["rank"].nunique() == 8
    assert set(raw["file"].str.extract(r"_(model|optim)_states\.pt$")[0]) == {"model", "optim"}
    w = raw[raw["op"] == "write"]
    assert (w.loc[w["variant"] != "no-fsync", "fsync_s"] > 0).all()
    assert (w.loc[w["variant"] == "no-fsync", "fsync_s"] == 0).all()
    s = pd.read_csv(d / "summary.csv").set_index(["tier", "variant", "op"]).sort_index()
    assert s.loc[("disk", "fsync", "read"), "read"] == "cold"
    assert s.loc[("disk", "no-fsync", "read"), "verdict"].startswith("no storage verdict")
    assert s.loc[("mem", "fsync", "read"), "read"] == "cache-served"   # memory cannot be evicted
    assert (s["run_throughput_GiBps"] > 0).all()
    # the bound verdict against fio's sequential jobs where the storage was reached, none elsewhere
    assert s.loc[("disk", "no-fsync", "read"), "bound"] == "no verdict"
    assert set(s.loc[("disk", "fsync"), "bound"]) <= {"storage", "client", "undetermined"}
    assert (s.loc[("disk", "fsync"), "fio_MBps"] > 0).all()
    per = pd.read_csv(d / "checkpoints.csv")
    assert (per["duration_s"] >= per["rank0_s"]).all()                # the slowest rank's
    env = json.loads((d / "env.json").read_text())
    assert env["fsync"]["variants"] == {"fsync": True, "no-fsync": False, "direct": True}
    res = {(r["tier"], r["variant"]): r for r in env["residency_before_reads"]}
    assert res[("disk", "fsync")]["resident_fraction"] <= 0.05
    assert res[("disk", "no-fsync")]["resident_fraction"] > 0.05
    assert env["launcher"]["launcher"] in ("mpiexec", "srun") and env["layout"]["ranks"] == 8
    bb = pd.read_csv(d / "burst_buffer.csv")
    assert set(bb["mode"]) == {"direct", "burst buffer"} and set(bb["keep"].dropna()) == {1, 2}
    rep = stage_results("llm_checkpoint_report")   # figures and claims, from what the stage wrote
    cl = {c["id"]: c for c in json.loads((rep / "claims.json").read_text())}
    assert {c["basis"] for c in cl.values() if c["kind"] == "finding"} == {"extension"}
    assert cl["llm_ckpt_layout_totals"]["verdict"] == "holds"
    for f in ("llm_checkpoint_throughput", "llm_checkpoint_timeline", "llm_checkpoint_burst_buffer"):
        assert (rep / f"{f}.png").exists() and not (d / f"{f}.png").exists()
