"""The shipped reference run (experiments/review/refrun.py) and who measured what a figure draws
(experiments/output/provenance.py), on a made-up project: no DVC, no notebook."""

import json
import shutil
from pathlib import Path

import pytest

from experiments.output import provenance
from experiments.review import refrun

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project root with this dvc.yaml and nothing measured yet."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy2(ROOT / "dvc.yaml", root / "dvc.yaml")
    monkeypatch.setenv("DLIO_ROOT", str(root))
    return root


def _env(host: str, commit: str, started: str = "2026-11-29T01:00:00+00:00") -> dict:
    return {"host": host.split(" ")[0], "git": {"commit": commit, "dirty": False},
            "run": {"host": host, "started_at": started, "wall_s": 1.0}}


def _run(folder: Path, host="refbox · 2 CPUs · Xeon", commit="abc1234def") -> Path:
    """A checkout where a whole make repro ran: every restored stage's folder with its env.json,
    rows, executed notebook and kernel log, and the claims table."""
    for s in refrun.restored():
        d = folder / "results" / s
        d.mkdir(parents=True)
        (d / "env.json").write_text(json.dumps(_env(host, commit)))
        (d / "raw.csv").write_text("run,x\n0,1\n")
        (d / f"{s}.ipynb").write_text("{}")
        (d / "kernel-stderr.log").write_text("noise\n")
    tc = folder / "results" / "traced_comparison"   # its full trace (no report reads it) beside the timeline file
    for f in ("trace_bert_real.parquet", "trace_bert_real.samples.parquet", "timeline_bert_real.parquet",
              "timeline_bert_real.samples.parquet"):
        (tc / f).write_text(f)
    (folder / "results" / "claims").mkdir()
    (folder / "results" / "claims" / "claims.csv").write_text("id,kind,verdict\na,finding,holds\n")
    (folder / "results" / "claims" / "claims.md").write_text("# Claims\n")
    (folder / "params.yaml").write_text("# profile: default\nseed: 0\n")
    return folder


def test_reports_and_restored_stages_split_the_pipeline():
    st = provenance.stages()
    rep, res = refrun.reports(st), refrun.restored(st)
    assert rep[-1] == "claims" and not set(rep) & set(res)
    assert set(rep) | set(res) == set(st), sorted(set(st) - set(rep) - set(res))
    assert set(provenance.MEASURING) <= set(res)                  # no measuring stage runs in make figures
    assert {"imagenet_like", "caltech_like", "workload_data"} <= set(res)   # their sizes are measured too
    assert rep.index("workload_fits") < rep.index("workload_validation")    # dvc.yaml's order: it reads the fits


def test_record_ships_rows_and_env_but_no_notebook_and_names_the_run(project, tmp_path):
    src = _run(tmp_path / "src")
    m = refrun.record(src, push=False)
    run = project / refrun.RUN
    assert m["host"] == "refbox · 2 CPUs · Xeon" and m["commit"] == "abc1234def" and m["profile"] == "default"
    assert (run / "tfdata_read" / "raw.csv").is_file() and (run / "tfdata_read" / "env.json").is_file()
    assert not list(run.rglob("*.ipynb")) and not list(run.rglob("kernel-stderr.log"))
    # what the reports read of the traced comparison, not its full traces (stages.py unread)
    assert sorted(f.name for f in (run / "traced_comparison").glob("t*_bert_*")) == [
        "timeline_bert_real.parquet", "timeline_bert_real.samples.parquet"]
    assert "traced_comparison/trace_*" in m["left_out"] and "derived" not in m
    assert (run / "claims" / "claims.csv").is_file() and not (run / "claims" / "env.json").exists()
    assert (m["files"], m["bytes"]) == refrun._size(run)
    assert json.loads((project / refrun.MANIFEST).read_text())["stages"] == refrun.restored()


def test_record_stops_before_copying_when_a_stage_is_missing(project, tmp_path):
    src = _run(tmp_path / "src")
    (src / "results" / "lmdbio" / "env.json").unlink()
    with pytest.raises(SystemExit, match="lmdbio"):
        refrun.record(src, push=False)
    assert not (project / refrun.RUN).exists()


def test_a_rewritten_restored_file_is_caught_and_clear_removes_the_restored_stages(project, tmp_path):
    refrun.record(_run(tmp_path / "src"), push=False)
    stages = refrun.restore()
    assert refrun.unchanged(stages) == []
    (project / "results" / "deepio" / "raw.csv").write_text("run,x\n0,2\n")      # a stage that ran again
    (project / "results" / "lmdbio" / "extra.csv").write_text("x\n")            # or added a file
    assert refrun.unchanged(stages) == ["deepio", "lmdbio"]
    with pytest.raises(SystemExit, match="make decide"):
        refrun.guard("decide")
    refrun.clear()
    assert not any((project / "results" / s).exists() for s in stages)
    refrun.guard("decide")   # nothing restored any more: decide may run
    (project / "results" / "deepio").mkdir()
    (project / "results" / "deepio" / "env.json").write_text("{}")    # measured here by make repro
    with pytest.raises(SystemExit, match="this box's own measurements \\(deepio\\)"):
        refrun.restore()
    assert (project / "results" / "deepio" / "env.json").read_text() == "{}"


def test_figures_drawn_here_from_another_box_name_that_box_and_commit(project, tmp_path):
    for s in ("fio_baseline", "imagenet_like", "tfdata_read"):
        d = project / "results" / s
        d.mkdir(parents=True)
        (d / "env.json").write_text(json.dumps(_env("refbox · 2 CPUs · Xeon", "abc1234def")))
    assert provenance.measured_stages("tfdata_read_report") == ["fio_baseline", "imagenet_like", "tfdata_read"]
    assert provenance.label("tfdata_read_report", here="laptop · 8 CPUs · M2") == (
        "host: refbox · 2 CPUs · Xeon at commit abc1234; drawn on laptop · 8 CPUs · M2")
    assert provenance.label("tfdata_read_report", here="refbox · 2 CPUs · Xeon") == (
        "host: refbox · 2 CPUs · Xeon at commit abc1234")
    # a measuring stage's own figure, or one with nothing measured upstream: this box
    assert provenance.label("fio_baseline", here="laptop") == "host: laptop"
    # two boxes (a stage re-measured here after make figures): both named
    (project / "results" / "tfdata_read" / "env.json").write_text(json.dumps(_env("laptop", "fff0000")))
    who = provenance.measured_by("tfdata_read_report")
    assert [(w["host"], w["stages"]) for w in who] == [("refbox · 2 CPUs · Xeon", ["fio_baseline", "imagenet_like"]),
                                                        ("laptop", ["tfdata_read"])]


def test_the_claims_table_names_who_measured_it():
    import pandas as pd

    from experiments.claims import table

    who = [{"host": "refbox · 2 CPUs · Xeon", "commit": "abc1234def", "stages": ["fio_baseline", "deepio"]}]
    md = table.to_markdown(pd.DataFrame(columns=[*table.COLUMNS, "stage"]), measured=who)
    assert "**Measured on** refbox · 2 CPUs · Xeon at commit abc1234 (the env.json of the 2 measuring" in md


def test_reports_run_side_by_side_and_claims_after_every_report(project, tmp_path, monkeypatch, capsys):
    """A stand-in `dvc` on PATH records when each stage starts and ends."""
    import os
    import stat
    import sys

    rep = refrun.reports()
    need = refrun.needs(rep)
    assert need["claims"] == set(rep) - {"claims"}
    assert need["traced_comparison_report"] == set()   # it reads workload_fits only through a restored stage
    trail = tmp_path / "trail"
    dvc = tmp_path / "bin" / "dvc"
    dvc.parent.mkdir()
    dvc.write_text(f"#!{sys.executable}\nimport sys, time\n"
                   f"s = sys.argv[-1]\nopen({str(trail)!r}, 'a').write(f'start {{s}}\\n')\n"
                   "time.sleep(0.3)\nprint('Running stage', repr(s) + ':')\n"
                   f"open({str(trail)!r}, 'a').write(f'end {{s}}\\n')\n"
                   "sys.exit(3 if s == 'blog_report' and 'FAIL' in __import__('os').environ else 0)\n")
    dvc.chmod(dvc.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{dvc.parent}{os.pathsep}{os.environ['PATH']}")
    assert refrun.run_reports(rep, n=2) == 0
    events = trail.read_text().split("\n")[:-1]
    live, most = set(), 0
    for e in events:
        kind, s = e.split()
        live = live | {s} if kind == "start" else live - {s}
        most = max(most, len(live))
    assert most == 2
    assert events.index("start claims") > max(events.index(f"end {s}") for s in rep[:-1])
    assert capsys.readouterr().out.count("Running stage") == len(rep)   # each stage's log printed
    trail.unlink()
    monkeypatch.setenv("FAIL", "1")
    assert refrun.run_reports(rep, n=2) == 3
    assert "start claims" not in trail.read_text()   # a failed report: nothing more starts


def test_the_readme_says_the_reference_runs_size(project, monkeypatch):
    (project / "README.md").write_text("a\n<!-- reference:size -->\nnot recorded yet\n<!-- /reference:size -->\nb\n")
    monkeypatch.setattr(refrun, "_git_bytes", lambda: 14_000_000)
    m = {"bytes": 41_500_000, "files": 310, "store_bytes": 41_600_000, "host": "refbox · 2 CPUs · Xeon",
         "commit": "abc1234def", "profile": "default", "started_at": "2026-11-29T02:00:00+00:00"}
    refrun.update_readme(m)
    text = (project / "README.md").read_text()
    assert ("41.5 MB in 310 files (the store: 41.6 MB), measured on refbox · 2 CPUs · Xeon at commit abc1234 "
            "(default profile, 2026-11-29); the repository with it about 56 MB") in text
    assert text.startswith("a\n") and text.endswith("b\n") and "not recorded" not in text
