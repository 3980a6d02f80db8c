"""``make decide [MINUTES=30]`` (``python -m experiments.review.decide --minutes 30``): a
reviewer's second pass. After a ``make repro`` it spends the given minutes on the findings the
claims table leaves ``inconclusive``, where their forecasts say more runs would decide them.

1. **Price** (:mod:`.pricing`): each inconclusive finding whose configurations a measuring stage
   can run again (every stage whose DVC params include ``decide.<stage>``) is priced from its
   forecast, the runs per round it gained, the configurations it compares (its declaration's
   ``compares``) and the seconds their runs took, with the top-up of the configurations that
   share a finding with them (:func:`.pricing.top_up`); the purchases are taken cheapest first,
   across stages, within the minutes. A finding forecast *never*, or beyond the minutes, is named and
   skipped, as is one no buying stage measures.
2. **Buy** (:func:`run`): the purchases are appended to ``params.yaml``'s ``decide`` section
   (:mod:`.params_edit`) and ``dvc repro`` runs (:mod:`.dvc_run`): each buying stage re-runs
   because its params changed, keeps its rows and runs only the new purchase (its ``persist``
   out; :func:`experiments.repeats.stage.kept`), each new row marked ``decide N``; the reports
   and the claims table re-run because the rows changed. No run starts after the minutes (less
   the reports' recorded time), nor after its stage's share of them (its priced seconds,
   stretched to the minutes: :func:`.pricing.shares`), so that a box slower than the prices
   cuts every stage's purchase alike; a purchase cut short is recorded as the runs it made.
3. **Show**: the count by verdict before and after, and every finding that moved
   (:func:`experiments.review.compare.compare`).

Afterwards ``dvc status`` is clean, ``dvc repro`` does nothing and ``dvc params diff`` shows what
was bought. Interrupted (Ctrl-C) while a stage is measuring, it puts ``params.yaml`` back: the
rows and ``dvc.lock`` are those of before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from ...pipeline import dvc_run
from ...settings import paths
from ...repeats import purchases as P
from ..compare import compare, markdown
from . import params_edit, pricing
from .pricing import Offer, Shopping  # noqa: F401

CLAIMS_CSV = ("claims", "claims.csv")


def _claims(root: Path) -> pd.DataFrame:
    f = root.joinpath("results", *CLAIMS_CSV)
    if not f.exists():
        raise SystemExit(f"decide: {f} does not exist; run `make repro` first (decide buys runs for the "
                         "findings a finished run left inconclusive)")
    return pd.read_csv(f)


def _stages(root: Path, dvc: dict) -> dict[str, pricing.StageRows]:
    """Every buying stage with rows (:func:`.pricing.stage_rows`), its own overhead priced from its
    last run (its wall time less its runs')."""
    out = {}
    for st in dvc_run.buyable(dvc):
        s = pricing.stage_rows(st, 0.0)
        if s is None:
            continue
        wall = dvc_run.wall_s(root, st)
        runs = float(s.rows["run_s"].sum()) if "run_s" in s.rows else 0.0
        s.after = 30.0 if wall is None else max(0.0, wall - runs)
        s.readers = {r: dvc_run.overhead_s(root, [r]) for r in dvc_run.readers(dvc, st)}
        out[st] = s
    return out


def _report_reads(dvc: dict, buying: list[str]) -> dict[str, list[str]]:
    """{report stage: the buying stages whose results it reads}."""
    return {r: [b for b in buying if dvc_run.reads(v, b)] for r, v in dvc.items()}


def plan(table: pd.DataFrame, seconds: float, root: Path | None = None, finding: str | None = None,
         rounds: int = 1) -> Shopping:
    """The purchases within ``seconds`` for the inconclusive findings of ``table`` (a claims
    table), every other one named with why it is skipped; with ``finding``, ``rounds`` rounds of
    the configurations that finding compares, whatever its forecast."""
    root = Path(root or paths.root())
    dvc = dvc_run.stages_of(root)
    stages = _stages(root, dvc)
    rules = pricing.rules_of(stages)
    reads = _report_reads(dvc, list(stages))
    pricing.read_by(table, stages, rules, reads)
    out = Shopping()
    rows = table[(table["kind"] == "finding") & (table["verdict"] == "inconclusive")] if finding is None \
        else table[table["id"] == finding]
    if finding is not None and not len(rows):
        raise SystemExit(f"decide --finding {finding}: not in results/claims/claims.csv")
    claims_s = dvc_run.overhead_s(root, ["claims"]) if "claims" in dvc else 0.0
    priced = []
    for c in rows.to_dict("records"):
        p = pricing.price(c, stages, rules, reads.get(c.get("stage"), []))
        if isinstance(p, str):
            out.skipped[c["id"]] = p
        else:
            priced.append(p)
    if finding is not None:
        if not priced:
            raise SystemExit(f"decide --finding {finding}: {out.skipped.get(finding)}; allowed: a finding of "
                             f"{', '.join(sorted(stages)) or '(none)'}'s reports")
        if rounds < 1:
            raise SystemExit(f"decide --rounds {rounds}; allowed: an integer >= 1")
        priced[0].rounds = rounds
        chosen = priced
    else:
        chosen = pricing.take(priced, stages, seconds, claims_s, out.skipped)
    out.offers = pricing.offers(chosen, stages)
    out.seconds = pricing.total(chosen, stages, claims_s)   # what take() weighed against the minutes
    return out


def show(p: Shopping, minutes: float, share: dict[str, float]) -> str:
    """The plan as decide prints it; ``share``: each stage's :func:`.pricing.shares`."""
    lines = [f"decide: {minutes:g} min; buying {sum(o.runs for o in p.offers)} run(s), about "
             f"{p.seconds / 60:.1f} min with the reports"]
    for o in p.offers:
        up = (f", and {o.top_up_runs} run(s) of each of {len(o.top_up)} configuration(s) sharing their findings"
              if o.top_up_runs and o.top_up else "")
        lines.append(f"  {o.stage}: {o.runs} runs of {len(o.configs)} configuration(s){up}, ~{o.seconds:.0f} s "
                     f"(no run starts after {share[o.stage]:.0f} s), for {len(o.findings)} finding(s), cheapest first:")
        lines += [f"    {k}: {o.costs.get(k, '')}" for k in o.findings]
    by_why: dict[str, list[str]] = {}
    for k, why in sorted(p.skipped.items()):
        by_why.setdefault(why, []).append(k)
    few = sorted((k, why) for why, ks in by_why.items() if len(ks) < 3 for k in ks)
    lines += [f"  skipped {k}: {why}" for k, why in few]
    # one reason shared by many (a stage that cannot buy): said once
    lines += [f"  skipped {len(ks)} findings, {why}: {', '.join(ks)}" for why, ks in by_why.items() if len(ks) >= 3]
    return "\n".join(lines)


STALE_AFTER_S = 3600   # a run older than this: decide says its rounds will join another hour's


def age_note(root: Path, now: float | None = None) -> str | None:
    """A note when the ``make repro`` whose runs the purchases join ended more than
    :data:`STALE_AFTER_S` ago (its ``results/plan.json``: the calibration taken after its last
    stage, else the plan's own time); None when it is recent or there is no such plan. On a box
    whose speed moved since, the bought rounds widen the intervals they join rather than narrow
    them (docs/statistics.md, "make decide MINUTES=30 on G": 5 findings undone 2 hours later)."""
    from datetime import datetime

    from ...pipeline.ae_table import read_plan

    try:
        plan_ = read_plan(root / "results")
        ended = datetime.fromisoformat((plan_.get("after") or {}).get("at") or plan_["made_at"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    age = (time.time() if now is None else now) - ended.timestamp()
    if age <= STALE_AFTER_S:
        return None
    return (f"decide: note: the run these purchases join ended {age / 3600:.1f} h ago; where this box's speed "
            "has moved since, the new rounds widen the intervals they join rather than narrow them "
            "(make decide pays back right after make repro: docs/reviewers.md)")


def run(minutes: float, root: Path | None = None, dry_run: bool = False, finding: str | None = None,
        rounds: int = 1) -> int:
    """The second pass (module docstring); returns the exit status (130 when interrupted)."""

    if not (minutes > 0):
        raise SystemExit(f"decide --minutes {minutes!r}; allowed: minutes > 0")
    root = Path(root or paths.root())
    start = time.time()
    before = _claims(root)
    p = plan(before, minutes * 60, root, finding, rounds)
    share = pricing.shares(p.offers, p.seconds, minutes * 60)
    print(show(p, minutes, share), flush=True)
    note = age_note(root)
    if note and p.offers:
        print(note, flush=True)
    if dry_run or not p.offers:
        return 0
    env = {**os.environ, "DLIO_ROOT": str(root)}
    stale = dvc_run.stale(root, env)
    if stale:
        raise SystemExit(f"decide: {', '.join(stale)} not up to date (dvc status); allowed: a finished "
                         "`make repro` (decide appends to the rows a stage measured with these parameters)")
    text, params = params_edit.read(root)
    n = params_edit.next_run(params)
    params_edit.write(root, params_edit.with_purchases(text, params, p.offers, n))
    dvc = dvc_run.stages_of(root)
    reports = {r for o in p.offers for r in dvc_run.readers(dvc, o.stage)} - {o.stage for o in p.offers}
    env |= {P.ENV: " ".join(o.stage for o in p.offers),
            P.DEADLINE_ENV: str(start + minutes * 60 - dvc_run.overhead_s(root, reports)),
            P.SHARES_ENV: json.dumps(share)}
    try:
        finished = dvc_run.repro(root, env)
    except subprocess.CalledProcessError:
        finished = None
    if not finished:
        wanted = params_edit.read(root)[1]["decide"]
        done = [o.stage for o in p.offers if dvc_run.locked_purchases(root, o.stage) == wanted.get(o.stage)]
        if not done:
            params_edit.write(root, text)   # no stage took its purchase: rows and lock as before
            print("decide: stopped before a stage recorded its purchase; params.yaml put back, the rows "
                  "and dvc.lock are those of before", file=sys.stderr)
        else:
            print(f"decide: stopped after {', '.join(done)} recorded its purchase (its rows and dvc.lock "
                  "agree); `dvc repro` re-renders the reports", file=sys.stderr)
        return 130 if finished is False else 1
    _record_made(root, p.offers, n, env)
    after = _claims(root)
    print(markdown(compare(before, after), before, after, names=("before", "after")), end="")
    return 0


def _record_made(root: Path, offers: list[Offer], run: int, env: dict) -> list[str]:
    """A purchase the minutes cut short recorded as the runs it made (``dvc commit`` of its
    stage: its params and its rows agree); returns the stages so recorded."""
    made = {}
    for o in offers:
        s = pricing.stage_rows(o.stage, 0.0)
        got = P.made(s.rows).get(P.label(run), 0) if s is not None else 0
        if got != o.planned:
            made[o.stage] = got
    if made:
        text, params = params_edit.read(root)
        params_edit.write(root, params_edit.with_runs_made(text, params, made, run))
        for st in made:
            dvc_run.commit(root, st, env)
    return sorted(made)
