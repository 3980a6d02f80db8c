"""The AE table's time and disk come from the stages' recorded runs, never by hand."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from experiments.pipeline import ae_table
from experiments.output import headline, results


@pytest.fixture
def project(tmp_path, monkeypatch):
    stages = {
        "gen": {"cmd": "x", "deps": ["notebooks/01.ipynb"], "outs": [{"data/gen": {"cache": False}},
                                                                     {"results/gen": {"cache": False}}]},
        "use": {"cmd": "x", "deps": ["notebooks/02.ipynb", "data/gen"], "outs": [{"results/use": {"cache": False}}]},
        "report": {"cmd": "x", "deps": ["results/use/claims.json"], "outs": [{"results/report": {"cache": False}}]},
        "other": {"cmd": "x", "deps": [], "outs": [{"results/other": {"cache": False}}]},
    }
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    (tmp_path / "params.yaml").write_text("tiers: [{name: disk, path: data/tiers/disk}]\n")
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    for i, (name, wall, outs, added) in enumerate([("gen", 60.0, 5_000_000, 0), ("use", 125.0, 1_000_000, 2_000_000),
                                                    ("report", 10.0, 100_000, 0)]):
        d = tmp_path / "results" / name
        d.mkdir(parents=True)
        (d / "env.json").write_text(json.dumps({"run": {
            "wall_s": wall, "started_at": f"2025-01-01T00:0{i}:00+00:00", "host": "box · 2 CPUs · cpu",
            "loadavg_start": [0.5, 0.4, 0.3], "loadavg_end": [1.5, 1, 1],
            "outs_bytes": {f"results/{name}": outs}, "tier_bytes_added": {"disk": added}}}))
    return tmp_path


def test_upstream_follows_outputs_named_in_deps(project):
    st = ae_table.stages()
    assert sorted(ae_table.upstream("report", st)) == ["gen", "report", "use"]
    assert ae_table.upstream("other", st) == ["other"]


def test_the_guides_blocks_are_filled_from_the_runs(project):
    readme = ("intro\n<!-- ae:summary -->\nold\n<!-- /ae:summary -->\n\n<!-- ae:table -->\n"
              "| claim | command | time |\n|---|---|---|\n"
              "| a claim | `dvc repro report` | ~5 min |\n| unmeasured | `dvc repro other` | ~1 min |\n"
              "<!-- /ae:table -->\nend\n")
    out = ae_table.update_guide(readme, ae_table.runs(), ae_table.footprint(), ae_table.stages())
    assert "old" not in out and "~5 min" not in out and out.endswith("end\n")
    assert "| a claim | `dvc repro report` | 3 min 15 s (10 s for this stage), 8.1 MB |" in out
    assert "| unmeasured | `dvc repro other` | not measured yet |" in out
    assert "took 3 min 15 s" in out and "on box · 2 CPUs · cpu" in out and "load average up to 1.5" in out
    assert "`data/`" in out and ".venv/" in out
    assert ae_table.update_guide(out, ae_table.runs(), ae_table.footprint(), ae_table.stages()) == out


def test_main_writes_the_per_stage_doc(project):
    (project / "docs").mkdir(exist_ok=True)
    (project / ae_table.GUIDE).write_text("<!-- ae:summary -->\n<!-- /ae:summary -->\n<!-- ae:table -->\n<!-- /ae:table -->\n")
    assert ae_table.main([]) == 0
    doc = (project / "docs" / "ae-table.md").read_text()
    assert "| `use` | 2 min 5 s | 1.0 MB | disk 2.0 MB | 3 min 5 s (2 min 5 s for this stage), 8.0 MB |" in doc
    assert "| `other` | not run |" in doc


def test_headline_metrics_use_the_one_vocabulary():
    claim_list = [{"verdict": v} for v in ("holds", "holds", "fails", "not measured", "inconclusive")]
    assert headline.claims(claim_list) == {"claims": 5, "holds": 2, "fails": 1, "undecided": 1}
    fio = pd.DataFrame({"tier": ["mem", "disk", "disk"], "job": ["seqread", "seqread", "randread"],
                        "bw_MBps": [9e3, 500.0, 80.0], "iops": [1, 2, 4000.0]})
    assert headline.fio_baseline(fio, "disk") == {"MBps": 500.0, "iops": 4000.0}
    runs = pd.DataFrame({"wall_seconds": [2.0, 3.0]})
    summary = pd.DataFrame({"data_share": [0.1, 0.3, 0.2], "compute_s": [1.0, 2.0, 3.0]})
    assert headline.workload_runs(runs, summary) == {"seconds": 5.0, "data_share": 0.2}
    models = {"a": {"mean": {"r2": 0.9}}, "b": {"mean": {"r2": 0.7}}, "c": {"mean": {"r2": None}}}
    au = pd.DataFrame({"row": ["sleep", "sleep", "real"], "au": [0.8, 1.0, 0.1]})
    assert headline.workload_fits(models, claim_list)["r2"] == 0.7
    assert headline.validation(au, claim_list)["au"] == 0.9
    for got in (headline.claims(claim_list), headline.fio_baseline(fio, "disk"),
                headline.workload_fits(models, []), headline.validation(au, [])):
        assert set(got) <= set(headline.KEYS)


def test_metrics_are_flat_and_rounded(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    monkeypatch.setenv(results.PIPELINE_ENV, "s")
    out = results.StageResults("s")
    out.metrics({"MBps": 1234.56789, "claims": 48, "speedup": float("nan")})
    assert json.loads(out.path("metrics.json").read_text()) == {"MBps": 1235.0, "claims": 48, "speedup": None}
    with pytest.raises(ValueError, match="flat numbers"):
        out.metrics({"MBps": {"mem": 1.0}})
    with pytest.raises(ValueError, match="'median_data_share' is not in the headline vocabulary"):
        out.metrics({"median_data_share": 0.1})
