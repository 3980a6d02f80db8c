"""The pipeline as DVC keeps it (``dvc.yaml``, ``dvc.lock``, ``dvc status``): which stages can
buy runs, what a purchase re-runs, whether the pipeline is up to date, and the ``dvc repro`` that
runs the purchases (interruptible: a Ctrl-C is passed on to DVC and waited for). ``make decide``
(:mod:`experiments.review.decide`) runs its purchases through it and the plan
(:mod:`experiments.pipeline.forecast`) asks it which stages are stale; it imports nothing of the package."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import yaml


def stages_of(root: Path) -> dict:
    return yaml.safe_load((root / "dvc.yaml").read_text()).get("stages", {})


def reads(stage: dict, name: str) -> bool:
    """Whether a stage (its dvc.yaml entry) depends on stage ``name``'s results (a file of them
    or the whole folder)."""
    return any(str(d) == f"results/{name}" or str(d).startswith(f"results/{name}/") for d in stage.get("deps", []))


def buyable(stages: dict) -> list[str]:
    """The stages that can buy runs: those whose DVC params include ``decide.<stage>``."""
    return [n for n, v in stages.items() if f"decide.{n}" in [str(p) for p in v.get("params", [])]]


def readers(stages: dict, name: str) -> list[str]:
    """The stages that read stage ``name``'s results (its report, fits, ...)."""
    return [o for o, w in stages.items() if o != name and reads(w, name)]


def wall_s(root: Path, stage: str) -> float | None:
    """The stage's last recorded run, seconds (``env.json``'s run wall time); None when unknown."""
    try:
        return float(json.loads((root / "results" / stage / "env.json").read_text())["run"]["wall_s"])
    except (OSError, KeyError, ValueError, TypeError):
        return None


def overhead_s(root: Path, stages) -> float:
    """Seconds the stages that re-run after a purchase took last time (60 s for one unknown)."""
    return sum(w if (w := wall_s(root, s)) is not None else 60.0 for s in stages)


def stale(root: Path, env: dict | None = None) -> list[str]:
    """The stages ``dvc status`` finds changed (their results would not be the parameters' and
    code's of now). A ``.dvc`` file's tracked data (``reference/run.dvc``, the shipped reference
    run, absent until ``make figures`` pulls it) is no stage: left out."""
    out = subprocess.run(["dvc", "status", "--json"], cwd=root, env=env or os.environ.copy(),
                         capture_output=True, text=True, check=True).stdout
    return sorted(k.split(":")[-1] for k in json.loads(out or "{}") if not k.endswith(".dvc"))


def repro(root: Path, env: dict) -> bool:
    """``dvc repro`` of the pipeline, in a session of its own: DVC runs the stages whose params
    changed (the purchases) and those that read what they wrote, nothing else when it was up to
    date. A Ctrl-C here is passed on to it (dvc, the stage's command, its kernel) and waited
    for, so that dvc ends the stage and releases its lock. Returns True when it finished, False
    when interrupted; raises CalledProcessError on a failure."""
    cmd = ["dvc", "repro"]
    proc = subprocess.Popen(cmd, cwd=root, env=env, start_new_session=True)
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
        finally:
            signal.signal(signal.SIGINT, old)
        return False
    if rc:
        raise subprocess.CalledProcessError(rc, cmd)
    return True


def locked_purchases(root: Path, stage: str):
    """``decide.<stage>`` as ``dvc.lock`` recorded it for ``stage`` (what its rows were made with)."""
    lock = yaml.safe_load((root / "dvc.lock").read_text()) if (root / "dvc.lock").exists() else {}
    return ((lock.get("stages", {}).get(stage, {}).get("params") or {}).get("params.yaml") or {}).get(f"decide.{stage}")


def commit(root: Path, stage: str, env: dict | None = None) -> None:
    """``dvc commit`` of ``stage``: its params (a purchase recorded as the runs it made) and its
    rows agree again."""
    subprocess.run(["dvc", "commit", "--force", stage], cwd=root, env=env or os.environ.copy(), check=True)
