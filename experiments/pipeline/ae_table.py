"""The artifact-evaluation numbers, made from the last run: ``python -m experiments.pipeline.ae_table``.

Every stage that ``dvc repro`` ran records in its ``env.json`` (key ``"run"``, written by
:mod:`experiments.pipeline.run_notebook`) its wall time, the host, the load average, the bytes its
outputs take and the bytes it added to each tier. From those, and from what is on disk now,
this command writes

- ``docs/ae-table.md``: per stage its time (that of ``dvc repro -f -s STAGE``, which re-runs the
  stage alone: how a reviewer re-measures one stage), its outputs and tier copies, and the time
  of ``dvc repro STAGE`` from scratch (the stage and everything upstream of it);
- the reviewer's guide's (``docs/reviewers.md``) marked blocks: the summary of the run and of its
  forecast's check (``<!-- ae:summary -->``) and the time and
  disk column of the claims table (``<!-- ae:table -->``: the last cell of each row whose
  command is ``dvc repro STAGE``);
- in ``docs/ae-table.md``, each stage's forecast (the plan ``make repro`` printed before its first
  stage, ``results/plan.json``, :mod:`experiments.pipeline.forecast`) against its wall time, and the
  done-when's check: the whole run and every stage over 2 minutes within 20 %.

``--print`` only prints the summary and the forecast's check (``make repro`` and ``make decide``
end with it). Nothing here is typed by hand: run it after ``make repro`` on the box the numbers should describe, and commit.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


from ..settings import config, paths
from ..output.provenance import stages, upstream  # noqa: F401 - dvc.yaml's stages, one place (provenance)
from .run_notebook import disk_bytes, fmt_seconds, human

SUMMARY = ("<!-- ae:summary -->", "<!-- /ae:summary -->")
TABLE = ("<!-- ae:table -->", "<!-- /ae:table -->")
GUIDE = "docs/reviewers.md"   # the page with the marked blocks (its links are relative to docs/)


def runs(results=None) -> dict[str, dict]:
    """Stage -> its ``run`` record from the last ``dvc repro`` (stages without one left out);
    ``results``: another run's results folder instead of this checkout's (read only)."""
    out = {}
    for name in stages():
        p = (results / name if results is not None else paths.results_dir(name)) / "env.json"
        if p.exists():
            run = json.loads(p.read_text()).get("run")
            if run:
                out[name] = run
    return out


def stage_bytes(run: dict) -> int:
    return sum(run["outs_bytes"].values()) + sum(max(0, v) for v in run["tier_bytes_added"].values())


def footprint() -> dict[str, tuple[str, int]]:
    """What the artifact takes on disk now: label -> (path shown, bytes)."""
    root = paths.root()
    out = {"data/": ("data/", disk_bytes(root / "data"))}
    try:
        tiers = config.load(tiers=None).tiers
    except Exception:  # noqa: BLE001 - no params.yaml: no tiers to measure
        tiers = []
    for t in tiers:
        inside = t.dir.resolve().is_relative_to(root.resolve())
        out[f"tier {t.name}"] = (str(t.dir.relative_to(root)) if inside else str(t.dir), disk_bytes(t.dir))
    out["results/"] = ("results/", disk_bytes(root / "results"))
    out[".venv"] = (".venv/", disk_bytes(root / ".venv"))
    return out


def summary(r: dict[str, dict], foot: dict[str, tuple[str, int]], per_stage: bool = True) -> str:
    if not r:
        return ("Not measured on this checkout yet: run `make repro`, then `python -m experiments.pipeline.ae_table` "
                "writes the time and disk of that run here" +
                (" and, per stage, in [ae-table.md](ae-table.md)." if per_stage else "."))
    total = sum(x["wall_s"] for x in r.values())
    first = min(r.values(), key=lambda x: x["started_at"])
    load = max(max(x["loadavg_start"][0], x["loadavg_end"][0]) for x in r.values())
    inside = [f"tier {k[5:]} `{p}` {human(b)}" for k, (p, b) in foot.items()
              if k.startswith("tier") and p.startswith("data/")]
    parts = []
    for k, (p, b) in foot.items():
        if k == "data/":
            parts.append(f"`data/` {human(b)}" + (f" (of which {', '.join(inside)})" if inside else ""))
        elif k.startswith("tier") and not p.startswith("data/"):
            parts.append(f"tier {k[5:]} `{p}` {human(b)}")
        elif not k.startswith("tier"):
            parts.append(f"`{p}` {human(b)}")
    disk = "; ".join(parts)
    return (f"Last run: `make repro` of {len(r)} stages took {fmt_seconds(total)} (the sum of the stages' "
            f"wall times) on {first['host']}, started {first['started_at']} (1-minute load average up to "
            f"{load:.1f} during the run). On disk after it: {disk}."
            + (" Per stage: [ae-table.md](ae-table.md)." if per_stage else ""))


PLAN = "results/plan.json"   # the plan make repro printed before its first stage (experiments.pipeline.forecast)
JUDGED_S = 120.0   # the done-when's stages: those over 2 minutes
WITHIN = 0.20      # forecast within 20 % of actual


@dataclass
class Check:
    """One stage's forecast (``results/plan.json``, :mod:`experiments.pipeline.forecast`) against its wall
    time: ``actual_s`` None when it has not run since the plan."""

    stage: str
    forecast_s: float
    actual_s: float | None

    @property
    def ratio(self) -> float | None:
        """actual / forecast."""
        return self.actual_s / self.forecast_s if self.actual_s is not None and self.forecast_s > 0 else None

    @property
    def judged(self) -> bool:
        """Whether the done-when judges it: it ran, for over 2 minutes."""
        return self.actual_s is not None and self.actual_s > JUDGED_S

    @property
    def within(self) -> bool | None:
        """|forecast - actual| <= 20 % of actual (None: not run)."""
        return None if self.actual_s is None else abs(self.forecast_s - self.actual_s) <= WITHIN * self.actual_s


def read_plan(results: Path | None = None) -> dict | None:
    """The last plan (:data:`PLAN`; in ``results``, another checkout's results folder, when
    given), None when none was made."""
    f = results / Path(PLAN).name if results is not None else paths.root() / PLAN
    return json.loads(f.read_text()) if f.exists() else None


def checks(plan: dict | None, r: dict[str, dict]) -> list[Check]:
    """Each stage the plan said ``dvc repro`` would run, its forecast against the wall time of
    its run started after the plan was made (its ``env.json``; a ``make decide`` run keeps that
    record)."""
    if not plan:
        return []
    made = datetime.fromisoformat(plan["made_at"])
    out = []
    for st in plan["to_run"]:
        x = r.get(st)
        ran = x is not None and datetime.fromisoformat(x["started_at"]) >= made
        out.append(Check(st, float(plan["stages"][st]["forecast_s"]), float(x["wall_s"]) if ran else None))
    return out


def whole(cs: list[Check]) -> Check:
    """The whole run as one check: the forecasts and wall times of the stages that ran."""
    ran = [c for c in cs if c.actual_s is not None]
    return Check("whole run", sum(c.forecast_s for c in ran), sum(c.actual_s for c in ran) if ran else None)


def _pct(c: Check) -> str:
    return f"{100 * (c.ratio - 1):+.0f} %" if c.ratio is not None else "not run"


def forecast_summary(plan: dict | None, cs: list[Check]) -> str:
    """One paragraph: the plan's total against the run's, and the done-when's check (the whole
    and every stage over 2 minutes within 20 %)."""
    if not plan:
        return "No plan recorded (results/plan.json): `make repro` writes one before its first stage."
    if not plan["to_run"]:
        return f"The last plan ({plan['made_at']}) found every stage up to date: dvc repro had nothing to run."
    w = whole(cs)
    missing = [c.stage for c in cs if c.actual_s is None]
    judged = [c for c in cs if c.judged]
    off = [c for c in judged if not c.within]
    if w.actual_s is None:
        return (f"Plan of {plan['made_at']}: {fmt_seconds(plan['total_s'])} forecast for {len(cs)} stage(s); "
                "none has run since.")
    verdict = ("not judged: not every stage of the plan has run since" if missing
               else "met" if w.within and not off else "not met")
    return (f"Forecast against actual (plan of {plan['made_at']}, x{plan['calibration']['factor']:.2f} for this box): "
            f"{fmt_seconds(w.forecast_s)} forecast, {fmt_seconds(w.actual_s)} measured for the {len(cs) - len(missing)} "
            f"stage(s) that ran ({_pct(w)}, {'within' if w.within else 'outside'} 20 %); stages over 2 min within "
            f"20 %: {len(judged) - len(off)} of {len(judged)}"
            + (f" (outside: {', '.join(f'{c.stage} {_pct(c)}' for c in off)})" if off else "")
            + (f"; not run since the plan: {', '.join(missing)}" if missing else "")
            + f". The done-when \"forecast within 20 % of actual for the whole and every stage over 2 min\": {verdict}."
            + _after(plan))


SPEED_CHANGED = 0.15   # the two calibrations this far apart: the box changed speed during the run


def _after(plan: dict) -> str:
    """The calibration after the run (``plan["after"]``, :func:`experiments.pipeline.forecast.recalibrate`)
    beside the one before it, as a sentence; "" when none was taken."""
    a = plan.get("after")
    if not a or not a.get("ratios"):
        return ""
    before, now = plan["calibration"]["factor"], a["factor"]
    changed = abs(now / before - 1) > SPEED_CHANGED if before else False
    return (f" The calibration after the run read x{now:.2f} ({a['at']}), x{before:.2f} before the first stage"
            + (": the box's speed changed during the run, and the forecast, made before it, carries that change"
               if changed else ": the box kept its speed") + ".")


def forecast_table(cs: list[Check]) -> str:
    lines = ["| stage | forecast | actual | actual / forecast | over 2 min: within 20 % |", "|---|---|---|---|---|"]
    for c in cs + [whole(cs)]:
        name = f"**{c.stage}**" if c.stage == "whole run" else f"`{c.stage}`"
        act = fmt_seconds(c.actual_s) if c.actual_s is not None else "not run since the plan"
        ratio = f"{c.ratio:.2f}" if c.ratio is not None else ""
        judged = c.judged or (c.stage == "whole run" and c.actual_s is not None)
        ok = ("yes" if c.within else "**no**") if judged else ""
        lines.append(f"| {name} | {fmt_seconds(c.forecast_s)} | {act} | {ratio} | {ok} |")
    return "\n".join(lines)


def cell_for(stage: str, st: dict, r: dict[str, dict]) -> str:
    """'time, disk' of ``dvc repro STAGE`` from scratch, or why there is none."""
    chain = upstream(stage, st)
    missing = [s for s in chain if s not in r]
    if len(missing) == len(chain):
        return "not measured yet"
    if missing:
        return f"not measured ({', '.join(sorted(missing)[:2])}{', ...' if len(missing) > 2 else ''} did not run)"
    alone = r[stage]["wall_s"]
    total = sum(r[s]["wall_s"] for s in chain)
    size = sum(stage_bytes(r[s]) for s in chain)
    up = f" ({fmt_seconds(alone)} for this stage)" if len(chain) > 1 else ""
    return f"{fmt_seconds(total)}{up}, {human(size)}"


def stage_table(r: dict[str, dict], st: dict) -> str:
    lines = ["| stage | wall time: `dvc repro -f -s STAGE` (this stage alone) | outputs | tier copies added | "
             "`dvc repro STAGE` from scratch |",
             "|---|---|---|---|---|"]
    for name in st:
        if name not in r:
            lines.append(f"| `{name}` | not run | | | |")
            continue
        x = r[name]
        tiers = ", ".join(f"{k} {human(v)}" for k, v in x["tier_bytes_added"].items() if v > 0) or "none"
        lines.append(f"| `{name}` | {fmt_seconds(x['wall_s'])} | {human(sum(x['outs_bytes'].values()))} | "
                     f"{tiers} | {cell_for(name, st, r)} |")
    return "\n".join(lines)


def doc(r: dict[str, dict], foot: dict[str, tuple[str, int]], st: dict, plan: dict | None = None) -> str:
    cs = checks(plan, r)
    return "\n".join([
        "# Time and disk of the last run",
        "",
        "Generated by `python -m experiments.pipeline.ae_table` from each stage's `env.json` (`\"run\"`), written by",
        "`dvc repro`, and the plan `make repro` printed before its first stage (`results/plan.json`,",
        "`experiments/pipeline/forecast.py`); do not edit by hand. The host, the start and the load average say what",
        "the numbers describe: timings from a loaded box are longer than on an idle one.",
        "",
        summary(r, foot, per_stage=False),
        "",
        stage_table(r, st) if r else "",
        "",
        "## Forecast against actual",
        "",
        "Each stage the plan said `dvc repro` would run: its forecast (runs x seconds a run + fixed seconds,",
        "from `env/reference-times.csv` moved to the parameters and scaled to this box) against its wall",
        "time. The done-when: the whole run, and every stage over 2 minutes, within 20 % of actual.",
        "",
        forecast_summary(plan, cs),
        "",
        forecast_table(cs) if cs else "",
    ]).rstrip("\n") + "\n"


def _replace_block(text: str, marks: tuple[str, str], body: str) -> str:
    a, b = marks
    i, j = text.find(a), text.find(b)
    if i < 0 or j < i:
        raise SystemExit(f"ae_table: {GUIDE} lacks the marked block {a} ... {b}")
    return text[:i + len(a)] + "\n" + body.strip("\n") + "\n" + text[j:]


def fill_table(block: str, st: dict, r: dict[str, dict]) -> str:
    """The claims table with the last cell of each ``dvc repro STAGE`` row regenerated."""
    out = []
    for line in block.splitlines():
        m = re.search(r"`dvc repro (\w+)`", line)
        cells = line.split("|")
        if m and line.startswith("|") and len(cells) > 3 and m.group(1) in st:
            cells[-2] = f" {cell_for(m.group(1), st, r)} "
            line = "|".join(cells)
        out.append(line)
    return "\n".join(out)


def update_guide(text: str, r: dict[str, dict], foot: dict[str, tuple[str, int]], st: dict,
                 plan: dict | None = None) -> str:
    text = _replace_block(text, SUMMARY, summary(r, foot) + "\n\n" + forecast_summary(plan, checks(plan, r)))
    a, b = TABLE
    i, j = text.find(a), text.find(b)
    if i < 0 or j < i:
        raise SystemExit(f"ae_table: {GUIDE} lacks the marked block {a} ... {b}")
    return _replace_block(text, TABLE, fill_table(text[i + len(a):j], st, r))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.pipeline.ae_table", description=__doc__.split("\n\n")[0])
    ap.add_argument("--print", action="store_true", help="only print the summary of the last run")
    a = ap.parse_args(argv)
    st, r, foot, plan = stages(), runs(), footprint(), read_plan()
    plain = lambda t: re.sub(r"\[([^]]+)\]\([^)]+\)", r"\1", t).replace("`", "").replace("**", "")   # noqa: E731
    if a.print:
        print(plain(summary(r, foot)))
        print(plain(forecast_summary(plan, checks(plan, r))))
        return 0
    root = paths.root()
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "ae-table.md").write_text(doc(r, foot, st, plan))
    guide = root / GUIDE
    guide.write_text(update_guide(guide.read_text(), r, foot, st, plan))
    print(f"wrote docs/ae-table.md and {GUIDE}'s time and disk from {len(r)} stages' last run")
    cs = checks(plan, r)
    print(plain(forecast_summary(plan, cs)))
    if cs:
        print(plain(forecast_table(cs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
