"""``make decide [MINUTES=30]`` (``python -m experiments.decide --minutes 30``): a reviewer's
second pass. After a ``make repro`` it spends the given minutes on the findings the claims
table leaves ``inconclusive``, where its forecast says more samples would decide them.

1. **Plan** (:func:`plan`): each inconclusive finding of a stage that can buy runs (a measuring
   stage whose DVC params include ``decide.<stage>``: :func:`buyable`) is priced from its
   forecast (``n_to_decide``, scaled to the level the new look needs), the samples per round it
   gained, the configurations it compares (the stage's ``needs`` hook, :data:`NEEDS`; every
   configuration without one) and the stage's recorded seconds per run (``sequential.json``).
   :func:`experiments.sequential.allot` then takes them cheapest first within the minutes; a
   finding forecast *never*, or beyond the minutes, is named and skipped, as is one of a stage
   that cannot buy runs. Stages whose findings compare each other's runs share one purchase
   (``decide.workloads``, :func:`shared`: the thesis's real, sleep and generated-data stages),
   priced as rounds of a workload in all of them (:func:`_shared_candidates`) and bought whole,
   before the others.
2. **Buy** (:func:`run`): the purchases are appended to ``params.yaml``'s ``decide`` section
   (:class:`experiments.bought.Purchase`) and ``dvc repro`` runs: the measuring stage re-runs
   because its params changed, keeps its rows and runs only the new purchase (its ``persist``
   out; :mod:`experiments.bought`), each new row marked ``decide N``; the reports and the claims
   table re-run because the rows changed. No run starts after the minutes (less the reports'
   recorded time); a purchase cut short is recorded as the runs it made (``dvc commit``).
3. **Show**: the count by verdict before and after, and every finding that moved
   (:func:`experiments.replicate.stability`: a holds/fails flip, or a move to or from
   ``inconclusive``).

Afterwards ``dvc status`` is clean, ``dvc repro`` does nothing and ``dvc params diff`` shows
what was bought. Interrupted (Ctrl-C) while a stage is measuring, it puts ``params.yaml``
back: the rows and ``dvc.lock`` are those of before.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from . import bought, paths, sequential

# a measuring stage's hook naming the configurations one finding compares (module:function,
# called as f(finding, raw, configs) -> indices or None); a stage without one buys all of them
NEEDS = {"lmdbio": "experiments.lmdbio.read:needs", "deepio": "experiments.deepio.experiment:needs",
         "tfdata_read": "experiments.chien.tfdata_read:needs", "alexnet_prefetch": "experiments.chien.alexnet:needs",
         "alexnet_checkpoint": "experiments.chien.alexnet_checkpoint:needs", "blog": "experiments.blog.report:needs",
         "workloads": "experiments.workloads.stage:needs"}
CLAIMS_CSV = ("claims", "claims.csv")
NOT_ITS_ROUNDS = "its samples are not {stage}'s rounds (more runs of the stage would not add any)"


@dataclass
class Offer:
    """One stage's purchase: the findings it is for, the configurations (dicts of the stage's
    key columns), the runs and the seconds they should take."""

    stage: str
    findings: list[str]
    configs: list[dict]
    runs: int
    seconds: float
    costs: dict[str, str] = field(default_factory=dict)   # finding: its forecast's price, in words


@dataclass
class Plan:
    offers: list[Offer] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)    # finding: why not bought
    seconds: float = 0.0


def _reads(w: dict, name: str, whole: bool = False) -> bool:
    """Whether a stage (its dvc.yaml entry ``w``) depends on stage ``name``'s results (``whole``:
    on the whole folder, not one file of it)."""
    return any(str(d) == f"results/{name}" or (not whole and str(d).startswith(f"results/{name}/"))
               for d in w.get("deps", []))


def shared(dvc_yaml: dict) -> dict[str, list[str]]:
    """{shared purchase: the stages that list it} for each ``decide.<name>`` param that names no
    stage (``decide.workloads``: the thesis's workload stages, whose findings compare their runs)."""
    st = dvc_yaml.get("stages", {})
    out: dict[str, list[str]] = {}
    for name, v in st.items():
        for p in v.get("params", []):
            unit = str(p).split(".", 1)[1] if str(p).startswith("decide.") else None
            if unit and unit not in st:
                out.setdefault(unit, []).append(name)
    return out


def _in_order(names: list[str], st: dict) -> list[str]:
    """``names`` with every stage after the ones among them whose results it reads (dvc.yaml's
    order otherwise)."""
    left, out = [n for n in st if n in names], []
    while left:
        ready = next(n for n in left if not any(_reads(st[n], m) for m in left if m != n))
        out.append(ready)
        left.remove(ready)
    return out


def buyable(dvc_yaml: dict) -> dict[str, list[str]]:
    """{measuring stage: the stages whose claims read its results} for every stage whose DVC
    params include ``decide.<stage>``; and {shared purchase: its stages, then the stages that
    read one of their results folders whole}, in an order DVC can run them (:func:`shared`; a
    stage reading one file of theirs, a checkpoint's size or the compute model, reads what a
    purchase leaves as it was)."""
    st = dvc_yaml.get("stages", {})
    out = {}
    for name, v in st.items():
        if f"decide.{name}" in [str(p) for p in v.get("params", [])]:
            out[name] = [name] + [o for o, w in st.items() if o != name and _reads(w, name)]
    for unit, members in shared(dvc_yaml).items():
        readers = [o for o, w in st.items() if o not in members and any(_reads(w, m, whole=True) for m in members)]
        out[unit] = _in_order(members + readers, st)
    return out


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - level) / 2))


def _least_n(level: float) -> int:
    """The fewest samples a median's interval needs to reach ``level``."""
    from .stats import reachable

    return next(k for k in range(2, 10_000) if reachable(k) >= level - 1e-12)


def _hook(stage: str):
    if stage not in NEEDS:
        return None
    mod, fn = NEEDS[stage].split(":")
    return getattr(importlib.import_module(mod), fn)


@dataclass
class _Stage:
    """One buying stage's undecided findings, priced: each one's forecast (``pending``, scaled to
    the next look's level), the rounds its configurations ran, the configurations it compares
    (indices into ``configs``, tuples of ``keys``), seconds per run and the seconds a purchase
    adds outside the runs (``after``: the stage's own start-up and writing, its reports)."""

    stage: str
    keys: list[str]
    configs: list[tuple]
    pending: dict
    rounds_run: dict
    configs_of: dict
    per_run: float
    after: float
    per_config: dict[int, float] | None = None   # seconds of one round of each configuration, when they differ

    def rounds(self, k: str) -> int | None:
        return sequential.rounds_needed(self.pending[k], self.rounds_run[k])

    def _round_s(self, union) -> float:
        return sum(self.per_config[i] for i in union) if self.per_config else len(union) * self.per_run

    def seconds(self, findings) -> float:
        """The runs' seconds of buying ``findings`` together: the most rounds any needs, over
        the union of their configurations."""
        union = set().union(*(self.configs_of[k] for k in findings))
        return max(self.rounds(k) for k in findings) * self._round_s(union)

    def offer(self, findings: list[str]) -> Offer:
        union = sorted(set().union(*(self.configs_of[k] for k in findings)))
        rounds = max(self.rounds(k) for k in findings)
        costs = {k: (f"{self.pending[k].n} -> {self.pending[k].n_to_decide} samples: {self.rounds(k)} round(s) "
                     f"of {len(self.configs_of[k])} configuration(s), ~{self.seconds([k]):.0f} s") for k in findings}
        return Offer(self.stage, list(findings), [dict(zip(self.keys, self.configs[i])) for i in union],
                     rounds * len(union), rounds * self._round_s(union), costs)


def _undecided(table: pd.DataFrame, reports: list[str]) -> pd.DataFrame:
    """The inconclusive findings of ``table`` (a claims table) that the stages ``reports`` wrote."""
    return table[table["stage"].isin(reports) & (table["kind"] == "finding") & (table["verdict"] == "inconclusive")]


def _timed_rows(stage: str) -> tuple[dict, pd.DataFrame]:
    """A buying stage's loop course (``sequential.json``) and its rows, warm-ups left out."""
    d = paths.results_dir(stage)
    course = json.loads((d / "sequential.json").read_text())
    raw = pd.read_parquet(d / "raw.parquet")
    return course, raw[~raw["warmup"].astype(bool)] if "warmup" in raw else raw


def _per_run(course: dict) -> float:
    """Seconds per run of a stage's loop, from its course (1 s when it recorded none)."""
    return float(course.get("elapsed_s") or 0) / max(1, len(course.get("order") or [])) or 1.0


def _candidates(stage: str, reports: list[str], table: pd.DataFrame, skipped: dict) -> _Stage | None:
    """``stage``'s inconclusive findings (of the stages in ``reports``) that more of its runs
    could decide, priced; the others named in ``skipped`` with why."""
    course, raw = _timed_rows(stage)
    keys = course.get("keys")
    mine = _undecided(table, reports)
    if not keys or not len(raw):
        skipped.update({i: f"stage {stage} recorded no configuration keys" for i in mine["id"]})
        return None
    configs = _configs(raw, keys)
    pending = _pending(mine, raw, skipped)
    hook, every = _hook(stage), frozenset(range(len(configs)))
    configs_of, rounds_run = {}, {}
    for k in list(pending):
        idx = hook(k, raw, configs) if hook else None
        if idx is not None and not len(idx):
            skipped[k] = NOT_ITS_ROUNDS.format(stage=stage)
            del pending[k]
            continue
        configs_of[k] = every if idx is None else frozenset(int(i) for i in idx)
        want = {configs[i] for i in configs_of[k]}
        sel = raw[[bought.key_of(r, keys) in want for r in raw[keys].itertuples(index=False)]]
        rounds_run[k] = int(sel["repeat"].nunique()) if "repeat" in sel else 1
    per_run = _per_run(course)
    after = overhead_s(sorted(set(reports[1:]) - {"claims"})) + own_overhead_s(stage)
    return _Stage(stage, list(keys), configs, pending, rounds_run, configs_of, per_run, after)


def _pending(mine: pd.DataFrame, raw: pd.DataFrame, skipped: dict) -> dict:
    """{finding: its forecast (:class:`experiments.sequential.Judged`) scaled to the level the
    next look needs} for the inconclusive findings ``mine`` of rows ``raw`` (``level`` and
    ``made_by`` columns: the looks so far); a finding with no samples goes to ``skipped``."""
    level = sequential.level_of(raw)
    made_by = raw["made_by"] if "made_by" in raw else pd.Series(bought.FIRST, index=raw.index)
    nxt = bought.level_after(raw.assign(made_by=made_by), 1 + int((made_by.unique() != bought.FIRST).sum()))
    grow = (_z(nxt) / _z(level)) ** 2   # the new look's wider intervals need more samples
    judged = sequential.judged(mine.to_dict("records"), level)
    pending = {k: sequential.Judged(j.decided, j.n, None if j.n_to_decide is None else math.ceil(j.n_to_decide * grow),
                                    j.never) for k, j in judged.items()}
    least = _least_n(nxt)
    for k, j in pending.items():
        if not j.forecast and j.n and not j.decided:
            # no interval yet, or one too short for its level: at least the samples a median's
            # interval needs at the new look's level (a lower bound, priced as a forecast)
            pending[k] = sequential.Judged(False, j.n, max(j.n + 1, least))
        elif not j.forecast:
            skipped[k] = "no samples to forecast from"
    return {k: j for k, j in pending.items() if j.forecast}


def _shared_prices(members: list[str]) -> tuple[pd.DataFrame, list[tuple], dict[int, int], dict[int, float]]:
    """A shared purchase's stages' ``runs.csv`` rows (column ``stage``), its configurations
    ((workload,) tuples), the rounds each ran and the seconds of one round of each, summed over
    the stages."""
    parts = [pd.read_csv(f).assign(stage=m) for m in members if (f := paths.results_dir(m) / "runs.csv").exists()]
    runs = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not len(runs) or "workload" not in runs:
        return runs, [], {}, {}
    configs = _configs(runs, ["workload"])
    of = [runs["workload"] == c[0] for c in configs]
    rounds = {i: max(1, int(runs.loc[w, "repeat"].nunique())) for i, w in enumerate(of)}
    return runs, configs, rounds, {i: float(runs.loc[w, "wall_seconds"].sum()) / rounds[i] for i, w in enumerate(of)}


def _shared_candidates(unit: str, members: list[str], reports: list[str], table: pd.DataFrame,
                       skipped: dict) -> _Stage | None:
    """A shared purchase's (``decide.workloads``) undecided findings, priced as one buying stage
    whose configurations are workloads: a round of a workload is one more run of each of its
    configurations in every one of ``members`` (its findings compare their runs: real against
    sleep, against generated data), priced from their ``runs.csv`` (:func:`_shared_prices`), its
    findings' configurations from the hook (:data:`NEEDS`)."""
    runs, configs, rounds_of, per_config = _shared_prices(members)
    mine = _undecided(table, reports)
    if not configs:
        skipped.update({i: f"{unit}'s stages ({', '.join(members)}) recorded no runs" for i in mine["id"]})
        return None
    pending = _pending(mine, runs, skipped)
    hook, every = _hook(unit), frozenset(range(len(configs)))
    configs_of, rounds_run = {}, {}
    for k in list(pending):
        idx = hook(k, runs, configs) if hook else None
        configs_of[k] = every if idx is None or not len(idx) else frozenset(int(i) for i in idx)
        rounds_run[k] = min(rounds_of[i] for i in configs_of[k])
    own = sum(max(0.0, (_wall_s(m) or 0.0) - float(runs.loc[runs["stage"] == m, "wall_seconds"].sum()))
              for m in members)
    after = overhead_s(sorted(set(reports) - set(members) - {"claims"})) + own
    return _Stage(unit, ["workload"], configs, pending, rounds_run, configs_of, 1.0, after, per_config)


def _configs(raw: pd.DataFrame, keys: list[str]) -> list[tuple]:
    """The stage's configurations in its rows, in first-run order, as plain tuples of ``keys``
    (:func:`experiments.bought.key_of`: a NaN, a key the configuration lacks, is None)."""
    return list(dict.fromkeys(bought.key_of(r, keys) for r in raw[keys].itertuples(index=False)))


def _wall_s(stage: str) -> float | None:
    """The stage's last recorded run, seconds (``env.json``'s run wall time); None when unknown."""
    try:
        return float(json.loads((paths.results_dir(stage) / "env.json").read_text())["run"]["wall_s"])
    except (OSError, KeyError, ValueError, TypeError):
        return None


def overhead_s(stages: list[str]) -> float:
    """Seconds the stages that re-run after a purchase took last time (``env.json``'s run
    wall time; 60 s for one without)."""
    return sum(w if (w := _wall_s(s)) is not None else 60.0 for s in stages)


def own_overhead_s(stage: str) -> float:
    """The seconds of ``stage``'s last run outside its repeat loop (start-up, set-up, writing):
    its ``env.json`` wall time less the loop's ``elapsed_s``; 30 s when unknown."""
    wall = _wall_s(stage)
    try:
        loop = float(json.loads((paths.results_dir(stage) / "sequential.json").read_text()).get("elapsed_s") or 0)
    except (OSError, ValueError, TypeError):
        return 30.0
    return 30.0 if wall is None else max(0.0, wall - loop)


def plan(table: pd.DataFrame, seconds: float, dvc_yaml: dict) -> Plan:
    """The purchases within ``seconds`` for the inconclusive findings of ``table`` (a claims
    table): every finding of every buying stage priced alone (its runs, its stage's overhead,
    the claims table once), then taken cheapest first, across stages, while the purchases so far
    and it fit the minutes (findings of one stage share their configurations' rounds). Every
    other inconclusive finding is named with why it is skipped. The minutes alone bound a
    purchase: there is no count of rounds."""
    p = Plan()
    can = buyable(dvc_yaml)
    inc = table[(table["kind"] == "finding") & (table["verdict"] == "inconclusive")]
    covered = {r for rs in can.values() for r in rs}
    for r in inc.itertuples(index=False):
        if r.stage not in covered:
            p.skipped[r.id] = f"stage {r.stage}'s runs cannot be bought (no decide.<stage> params)"
    units = shared(dvc_yaml)
    stages = {s: c for s, reports in can.items() if s not in units and (paths.results_dir(s) / "sequential.json").exists()
              and (c := _candidates(s, reports, table, p.skipped)) is not None}
    stages |= {u: c for u, members in units.items()
               if (c := _shared_candidates(u, members, can[u], table, p.skipped)) is not None}
    for c in stages.values():   # a finding another stage's runs can decide is not skipped for this one's
        for k in c.pending:
            if p.skipped.get(k) in {NOT_ITS_ROUNDS.format(stage=s) for s in stages}:
                del p.skipped[k]
    claims_s = overhead_s(["claims"]) if "claims" in dvc_yaml.get("stages", {}) else 0.0
    chosen, p.seconds = take(stages, seconds, claims_s, p.skipped)
    p.offers = [stages[s].offer(ks) for s, ks in chosen.items()]
    return p


def take(stages: dict[str, _Stage], seconds: float, claims_s: float, skipped: dict) -> tuple[dict, float]:
    """The findings bought within ``seconds``: each priced alone (its runs, its stage's
    ``after``, the claims table's ``claims_s``), taken cheapest first across stages while the
    purchase so far and it fit (findings of one stage share their configurations' rounds).
    Returns ({stage: findings}, seconds planned); the rest go to ``skipped`` with why."""
    alone = []
    for s, c in stages.items():
        for k, j in c.pending.items():
            if c.rounds(k) is None:
                skipped[k] = f"forecast: never, at {j.n} samples the value sits at a rule's or margin's edge"
            else:
                alone.append((c.seconds([k]) + c.after + claims_s, s, k))

    def total(plan: dict) -> float:
        return claims_s + sum(stages[x].seconds(ks) + stages[x].after for x, ks in plan.items()) if plan else 0.0

    chosen: dict[str, list[str]] = {}
    for cost, s, k in sorted(alone):
        trial = {**chosen, s: chosen.get(s, []) + [k]}
        if total(trial) <= seconds:
            chosen = trial
        elif cost > seconds:
            j = stages[s].pending[k]
            skipped[k] = (f"forecast: {j.n_to_decide} samples from {j.n}, {stages[s].rounds(k)} more rounds, "
                          f"about {cost:.0f} s with the reports; the minutes hold {seconds:.0f} s")
        else:
            skipped[k] = "within reach alone, not beside the cheaper ones in these minutes"
    return chosen, total(chosen)


def plan_for_finding(table: pd.DataFrame, finding: str, rounds: int, dvc_yaml: dict) -> Plan:
    """A purchase of ``rounds`` rounds of the configurations ``finding`` compares, whatever its
    forecast (a reviewer who wants one finding looked at again; the smoke test)."""
    if rounds < 1:
        raise SystemExit(f"decide --rounds {rounds}; allowed: an integer >= 1")
    row = table[table["id"] == finding]
    can = buyable(dvc_yaml)
    stages = [s for s, rs in can.items() if len(row) and row["stage"].iloc[0] in rs]
    if not stages:
        raise SystemExit(f"decide --finding {finding}: not a finding of a stage that can buy runs; allowed: "
                         f"a finding of {', '.join(sorted(can)) or '(none)'} in results/claims/claims.csv")
    units = shared(dvc_yaml)
    for stage in stages:   # the first stage whose runs the finding compares (a report may read several)
        if stage in units:
            raw, configs, _, per_config = _shared_prices(units[stage])
            keys = ["workload"]
        else:
            course, raw = _timed_rows(stage)
            keys = course["keys"]
            configs = _configs(raw, keys)
        hook = _hook(stage)
        idx = hook(finding, raw, configs) if hook else None
        if idx is None or len(idx):
            break
    else:
        raise SystemExit(f"decide --finding {finding}: its samples are not the rounds of {', '.join(stages)} "
                         "(more runs of the stage would not add any)")
    idx = sorted(range(len(configs)) if idx is None else idx)
    round_s = sum(per_config[i] for i in idx) if stage in units else len(idx) * _per_run(course)
    chosen = [dict(zip(keys, configs[i])) for i in idx]
    runs = rounds * len(chosen)
    cost = f"{rounds} round(s) of {len(chosen)} configuration(s) asked for, ~{rounds * round_s:.0f} s"
    return Plan([Offer(stage, [finding], chosen, runs, rounds * round_s, {finding: cost})], {}, rounds * round_s)


def _read_params(root: Path) -> tuple[str, dict]:
    text = (root / "params.yaml").read_text()
    return text, yaml.safe_load(text)


def _write_params(root: Path, text: str) -> None:
    from .results import atomic_write

    atomic_write(root / "params.yaml", lambda t: t.write_text(text))


def with_purchases(text: str, params: dict, offers: list[Offer], run: int) -> str:
    """``params.yaml`` with ``offers`` appended to its ``decide`` section as purchases of run
    ``run`` (the rest of the file as it was)."""
    dec = dict(params.get("decide") or {})
    for o in offers:
        p = bought.Purchase(run=run, configs=o.configs, runs=o.runs)
        dec[o.stage] = list(dec.get(o.stage) or []) + [p.model_dump()]
    return _replace_section(text, "decide", dec)


def _replace_section(text: str, name: str, value: dict) -> str:
    """``text`` (a YAML file of top-level sections) with section ``name`` replaced by ``value``
    (appended when absent); the other sections' lines, comments included, kept."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"{name}:")), None)
    new = yaml.safe_dump({name: value}, sort_keys=False, default_flow_style=False, width=100)
    if start is None:
        return text + ("" if text.endswith("\n") else "\n") + new
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\n", "#", "-")),
               len(lines))
    return "".join(lines[:start]) + new + "".join(lines[end:])


def next_run(params: dict) -> int:
    runs = [p.get("run", 0) for ps in (params.get("decide") or {}).values() for p in (ps or [])]
    return max(runs, default=0) + 1


def _locked_params(root: Path, stage: str, param: str | None = None):
    """``decide.<param>`` (default: the stage's own) as ``dvc.lock`` recorded it for ``stage``."""
    lock = yaml.safe_load((root / "dvc.lock").read_text()) if (root / "dvc.lock").exists() else {}
    return ((lock.get("stages", {}).get(stage, {}).get("params") or {}).get("params.yaml") or {}).get(
        f"decide.{param or stage}")


def _recorded(root: Path, buyer: str, wanted: dict, dvc_yaml: dict) -> bool:
    """Whether ``dvc.lock`` records the purchase of ``buyer`` (a stage; a shared purchase: for one
    of its stages at least, so params.yaml must keep it)."""
    return any(_locked_params(root, m, buyer) == wanted.get(buyer) for m in shared(dvc_yaml).get(buyer, [buyer]))


def _dvc(root: Path, *args: str, env: dict | None = None) -> None:
    subprocess.run(["dvc", *args], cwd=root, env=env or os.environ.copy(), check=True)


def chain(stages: list[str], dvc_yaml: dict) -> list[str]:
    """The stages a purchase re-runs, in order: each buying stage, the stages that read its
    results, and ``claims`` (the table) last when the pipeline has it."""
    can, out = buyable(dvc_yaml), []
    for s in stages:
        out += [x for x in can[s] if x not in out and x != "claims"]
    return out + (["claims"] if "claims" in dvc_yaml.get("stages", {}) else [])


def _stale(root: Path, stages: list[str]) -> list[str]:
    """The stages of ``stages`` that ``dvc status`` finds changed (their rows would not be the
    parameters' and code's of now)."""
    out = subprocess.run(["dvc", "status", "--json", *stages], cwd=root, capture_output=True, text=True,
                         check=True).stdout
    changed = json.loads(out or "{}")
    return [s for s in stages if any(k == s or k.endswith(f":{s}") for k in changed)]


def _repro(root: Path, env: dict, stages: list[str]) -> bool:
    """``dvc repro --single-item`` of each of ``stages`` in turn (only what the purchase touches:
    the reviewer's minutes go to no other stage), in a session of its own; a Ctrl-C here is
    passed on to it (dvc, the stage's command, its kernel) and waited for, so that dvc ends the
    stage and releases its lock. Returns True when all finished, False when interrupted;
    raises CalledProcessError on a failure."""
    for s in stages:
        cmd = ["dvc", "repro", "--single-item", s]
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


def _record_made(root: Path, offers: list[Offer], run: int, skip=()) -> list[str]:
    """A purchase the minutes cut short recorded as the runs it made (``dvc commit`` of its
    stage: the params and the rows agree); returns the stages so recorded. ``skip``: shared
    purchases (bought whole)."""
    text, params = _read_params(root)
    dec, fixed = dict(params.get("decide") or {}), []
    for o in offers:
        if o.stage in skip:
            continue   # a shared purchase (decide.workloads): bought whole, its stages take no deadline
        raw = pd.read_parquet(paths.results_dir(o.stage) / "raw.parquet")
        made = bought.made(raw).get(bought.label(run), 0)
        if made == o.runs:
            continue
        keep = [p for p in dec[o.stage] if p["run"] != run]
        dec[o.stage] = keep + ([{**next(p for p in dec[o.stage] if p["run"] == run), "runs": made}] if made else [])
        fixed.append(o.stage)
    if fixed:
        _write_params(root, _replace_section(text, "decide", dec))
        for s in fixed:
            _dvc(root, "commit", "--force", s)
    return fixed


def _claims(root: Path) -> pd.DataFrame:
    f = root.joinpath("results", *CLAIMS_CSV)
    if not f.exists():
        raise SystemExit(f"decide: {f} does not exist; run `make repro` first (decide buys runs for the "
                         "findings a finished run left inconclusive)")
    return pd.read_csv(f)


def show_plan(p: Plan, minutes: float) -> str:
    lines = [f"decide: {minutes:g} min; buying {sum(o.runs for o in p.offers)} run(s), about "
             f"{p.seconds / 60:.1f} min with the reports"]
    for o in p.offers:
        lines.append(f"  {o.stage}: {o.runs} runs of {len(o.configs)} configuration(s), ~{o.seconds:.0f} s, for "
                     f"{len(o.findings)} finding(s), cheapest first:")
        lines += [f"    {k}: {o.costs.get(k, '')}" for k in o.findings]
    for k, why in sorted(p.skipped.items()):
        lines.append(f"  skipped {k}: {why}")
    return "\n".join(lines)


def run(minutes: float, root: Path | None = None, dry_run: bool = False, finding: str | None = None,
        rounds: int = 1) -> int:
    """The second pass (module docstring); returns the exit status (130 when interrupted).
    ``finding``: buy ``rounds`` rounds for that finding alone, whatever its forecast."""
    from . import replicate

    if not (minutes > 0):
        raise SystemExit(f"decide --minutes {minutes!r}; allowed: minutes > 0")
    root = Path(root or paths.root())
    start = time.time()
    before = _claims(root)
    dvc_yaml = yaml.safe_load((root / "dvc.yaml").read_text())
    p = plan_for_finding(before, finding, rounds, dvc_yaml) if finding else plan(before, minutes * 60, dvc_yaml)
    print(show_plan(p, minutes), flush=True)
    if dry_run or not p.offers:
        return 0
    stale = _stale(root, chain([o.stage for o in p.offers], dvc_yaml))
    if stale:
        raise SystemExit(f"decide: {', '.join(stale)} not up to date (dvc status); allowed: a finished "
                         "`make repro` (decide appends to the rows a stage measured with these parameters)")
    text, params = _read_params(root)
    n = next_run(params)
    units = shared(dvc_yaml)
    # a shared purchase first: its stages run it whole (no deadline), the others' purchases stop at it
    p.offers.sort(key=lambda o: o.stage not in units)
    _write_params(root, with_purchases(text, params, p.offers, n))
    members = {m for o in p.offers for m in units.get(o.stage, [o.stage])}
    reports = overhead_s(sorted({s for o in p.offers for s in buyable(dvc_yaml)[o.stage]} - members | {"claims"}))
    env = {**os.environ, "DLIO_ROOT": str(root), bought.ENV: " ".join(o.stage for o in p.offers),
           bought.DEADLINE_ENV: str(start + minutes * 60 - reports)}
    try:
        finished = _repro(root, env, chain([o.stage for o in p.offers], dvc_yaml))
    except subprocess.CalledProcessError:
        finished = None
    if not finished:
        wanted = yaml.safe_load((root / "params.yaml").read_text())["decide"]
        done = [o.stage for o in p.offers if _recorded(root, o.stage, wanted, dvc_yaml)]
        if not done:
            _write_params(root, text)   # no stage took its purchase: rows and lock as before
            print("decide: stopped before a stage recorded its purchase; params.yaml put back, the rows "
                  "and dvc.lock are those of before", file=sys.stderr)
        else:
            print(f"decide: stopped after {', '.join(done)} recorded its purchase (its rows and dvc.lock "
                  "agree); `dvc repro` re-renders the reports" + (
                      f" (and runs the purchase in the stages of {', '.join(d for d in done if d in units)} that "
                      f"had not taken it: `{bought.ENV}={' '.join(done)} dvc repro` appends instead)"
                      if any(d in units for d in done) else ""), file=sys.stderr)
        return 130 if finished is False else 1
    _record_made(root, p.offers, n, skip=units)
    after = _claims(root)
    print(replicate.stability_markdown(replicate.stability(before, after), before, after,
                                       names=("before", "after")), end="")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.decide", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="the time to spend (default 30)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan, buy nothing")
    ap.add_argument("--finding", default=None, help="buy for this finding alone, whatever its forecast")
    ap.add_argument("--rounds", type=int, default=1, help="with --finding: rounds to buy (default 1)")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C: passed on to dvc (_repro)
    return run(a.minutes, dry_run=a.dry_run, finding=a.finding, rounds=a.rounds)


if __name__ == "__main__":
    sys.exit(main())
