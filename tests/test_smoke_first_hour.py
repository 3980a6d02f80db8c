"""What a newcomer and a reviewer meet in their first hour, on the smoke run: a quiet log,
every stage's time and disk recorded, a narrow `dvc metrics show`, figures without
overlapping text, readable result files, and exploring that leaves the pipeline alone."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from experiments.output import headline

pytestmark = pytest.mark.smoke

# What a newcomer would take for a failure. The pipeline's own lines never say these words
# when all is well (a stage's headline uses "fails=N", not "failed").
ERROR_LIKE = re.compile(
    r"\b(error|errors|warning|warnings|warn|traceback|exception|failed|fatal|critical|abort(ed)?|"
    r"deprecat\w*|unknown parameter|without encryption)\b|^[EWF]\d{4} \d\d:\d\d|absl::", re.I)


def stages_run(smoke_root: Path) -> list[str]:
    return [n for n in yaml.safe_load((smoke_root / "dvc.yaml").read_text())["stages"]
            if (smoke_root / "results" / n).exists()]


def test_the_log_of_a_clean_run_has_no_error_like_line(smoke_root):
    log = (smoke_root.parent / "repro.log").read_text(errors="replace")
    lines = [ln for ln in re.split(r"[\r\n]+", log) if ln.strip()]
    bad = [ln for ln in lines if ERROR_LIKE.search(ln)]
    assert not bad, f"{len(bad)} error-like lines in the smoke run's log:\n" + "\n".join(bad[:30])
    for stage in stages_run(smoke_root):   # and it shows every stage, its progress and headline
        assert f"{stage}: papermill notebooks/" in log and f"{stage}: done in " in log, stage


def test_every_stage_recorded_its_time_and_disk(smoke_root):
    for stage in stages_run(smoke_root):
        run = json.loads((smoke_root / "results" / stage / "env.json").read_text())["run"]
        assert run["wall_s"] > 0 and run["host"] and len(run["loadavg_start"]) == 3, stage
        assert run["outs_bytes"][f"results/{stage}"] > 0, stage
        assert set(run["tier_bytes_added"]) == {"mem", "disk"}, stage


def test_dvc_metrics_show_fits_in_200_columns(smoke_root):
    out = subprocess.run([str(Path(sys.executable).parent / "dvc"), "metrics", "show"], cwd=smoke_root,
                         capture_output=True, text=True, check=True).stdout
    width = max(map(len, out.splitlines()))
    outside = {p.parent.name: sorted(set(json.loads(p.read_text())) - set(headline.KEYS))
               for p in sorted((smoke_root / "results").glob("*/metrics.json"))}
    outside = {k: v for k, v in outside.items() if v}
    assert width <= 200, (f"`dvc metrics show` is {width} columns wide; keys outside the headline "
                          f"vocabulary (experiments/output/headline.py KEYS): {outside}")


def test_no_figure_has_overlapping_text(smoke_root):
    problems, unchecked = {}, []
    for d in (smoke_root / "results").iterdir():
        pngs = {p.stem for p in d.glob("*.png")}
        checked = json.loads((d / "figures.json").read_text()) if (d / "figures.json").exists() else {}
        unchecked += [f"{d.name}/{n}.png" for n in sorted(pngs - set(checked))]
        problems |= {f"{d.name}/{n}": p for n, p in checked.items() if p}
    assert not unchecked, f"figures saved without the layout check (StageResults.figure): {unchecked}"
    assert not problems, "figures with layout problems:\n" + "\n".join(
        f"{k}: {'; '.join(v)}" for k, v in problems.items())


def test_result_files_are_readable_by_everyone(smoke_root):
    umask = os.umask(0o022)
    os.umask(umask)
    want = 0o666 & ~umask
    private = [str(p.relative_to(smoke_root)) for p in (smoke_root / "results").rglob("*")
               if p.is_file() and stat.S_IMODE(p.stat().st_mode) & want != want]
    assert not private, f"result files not readable as the umask allows: {private[:10]}"


def test_exploring_a_notebook_leaves_the_pipeline_untouched(smoke_root, stage_results, digest):
    tracked = stage_results("tfdata_read")
    before = digest(tracked)
    env = {k: v for k, v in os.environ.items() if k not in ("DVC_STAGE", "DLIO_PIPELINE_STAGE")}
    env |= {"DLIO_ROOT": str(smoke_root), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    out_nb = smoke_root.parent / "explore-03.ipynb"
    subprocess.run([str(Path(sys.executable).parent / "papermill"), "notebooks/03-tfdata-read.ipynb", str(out_nb),
                    "-k", "python3", "-y", 'tfdata_read: {"threads": [1]}'],
                   cwd=smoke_root, env=env, check=True, capture_output=True)
    wrote = smoke_root / "explore" / "03-tfdata-read" / "tfdata_read.threads=1"
    assert (wrote / "metrics.json").exists() and (wrote / "summary.csv").exists()
    said = "".join("".join(o.get("text", "")) for c in json.loads(out_nb.read_text())["cells"]
                   for o in c.get("outputs", []))
    assert "explore/03-tfdata-read/tfdata_read.threads=1/" in said
    assert digest(tracked) == before
    status = subprocess.run([str(Path(sys.executable).parent / "dvc"), "status", "tfdata_read"], cwd=smoke_root,
                            env=env, capture_output=True, text=True, check=True).stdout
    assert "up to date" in status, status
