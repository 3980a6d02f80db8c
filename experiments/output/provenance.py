"""Which stages measure, and which host and commit measured what a stage reads.

A report stage (and the claims table) draws from the measuring and data stages upstream of it.
On the box that ran them those are its own; after ``make figures`` they are the reference run's,
restored from ``reference/run/`` (:mod:`experiments.review.refrun`) and measured on another box. Each
such stage's ``env.json`` says where: its ``run`` record's host label (host, CPUs, CPU model)
and its ``git`` commit. :func:`label` is the line every figure carries (``style.save``) and the
claims table's header names (:func:`measured_by`), so a figure drawn here from the reference
run's rows names the reference box, not this one.

The stage lists live here, not in :mod:`experiments.pipeline.forecast`, so that the report stages that
stamp their figures do not depend on the plan's code.
"""

from __future__ import annotations

import json

import yaml

from ..settings import paths
from ..stages import measuring

# stages that measure (a claim's values come from them, through the report stage that judges
# it): what a claim's `make repro STAGES=...` names; `make replicate --stages` takes these too.
# From the one registry (experiments/stages.py).
MEASURING = measuring()


def stages() -> dict[str, dict]:
    """dvc.yaml's stages (name -> its cmd, deps, params, outs), in the file's order."""
    return yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"]


def upstream(name: str, st: dict[str, dict]) -> list[str]:
    """``name`` and every stage it depends on (through outputs named in its deps)."""
    outs = {}
    for n, s in st.items():
        for o in s.get("outs", []):
            outs[next(iter(o)) if isinstance(o, dict) else o] = n
    seen, todo = [], [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in st:
            continue
        seen.append(n)
        for d in st[n].get("deps", []):
            for o, owner in outs.items():
                if d == o or d.startswith(o.rstrip("/") + "/"):
                    todo.append(owner)
    return seen


def data_stages(st: dict[str, dict]) -> list[str]:
    """The stages that generate data sets (an output under ``data/``)."""
    return [n for n, s in st.items()
            if any(str(next(iter(o)) if isinstance(o, dict) else o).startswith("data/") for o in s.get("outs", []))]


def measured_stages(stage: str, st: dict[str, dict] | None = None) -> list[str]:
    """The measuring and data stages upstream of ``stage`` (itself left out), dvc.yaml's order:
    those whose numbers ``stage`` draws or judges."""
    if st is None:   # a project folder without a pipeline (a test's): nothing upstream
        st = stages() if (paths.root() / "dvc.yaml").exists() else {}
    up = set(upstream(stage, st)) - {stage}
    keep = set(MEASURING) | set(data_stages(st))
    return [s for s in st if s in up and s in keep]


def measured_by(stage: str, st: dict[str, dict] | None = None) -> list[dict]:
    """Who measured what ``stage`` reads: one entry per distinct (``host``, ``commit``) among the
    ``env.json`` of :func:`measured_stages` that have one, each with its ``stages``; [] when none
    has (a measuring stage itself, or nothing measured yet)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for s in measured_stages(stage, st):
        f = paths.results_dir(s) / "env.json"
        if not f.exists():
            continue
        env = json.loads(f.read_text())
        run = env.get("run") or {}
        host = run.get("host") or env.get("host") or "unknown host"
        commit = str((env.get("git") or {}).get("commit") or "unknown")
        groups.setdefault((host, commit), []).append(s)
    return [{"host": h, "commit": c, "stages": ss} for (h, c), ss in groups.items()]


def words(who: list[dict]) -> str:
    """``vm · 2 CPUs · Xeon at commit 839db88`` for each of :func:`measured_by`'s entries, joined
    by ``; ``."""
    return "; ".join(f"{w['host']} at commit {w['commit'][:7]}" for w in who)


def label(stage: str, here: str | None = None) -> str:
    """The figure stamp of ``stage``: ``host: <who measured what it draws>``, and ``drawn on
    <here>`` when this box (``here``, default :func:`experiments.host.envinfo.host_label`) is not
    that host; this box alone where nothing upstream was measured."""
    from ..host.envinfo import host_label

    here = here or host_label()
    who = measured_by(stage)
    if not who:
        return f"host: {here}"
    hosts = {w["host"] for w in who}
    return f"host: {words(who)}" + ("" if hosts == {here} else f"; drawn on {here}")
