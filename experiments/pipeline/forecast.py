"""The plan before the first stage: ``python -m experiments.pipeline.forecast plan`` (``make repro``,
``make paper``) prints what each stage that ``dvc repro`` will run should take, and the total.

A stage's forecast is ``runs x seconds a run + fixed seconds``, from the reference box's table
(:data:`REFERENCE`, ``env/reference-times.csv``: per stage the runs the reference run made, the
seconds a run took and the seconds outside the runs, with the commit and host that measured
them), moved to the active ``params.yaml`` and to this box:

- **runs** follow the parameters: each measuring stage's *size* (its registry entry's ``size`` rule, a number
  proportional to its run count: configurations x rounds) is computed from the active
  parameters and from the reference run's, and the reference runs are scaled by their ratio
  (a stage that stops early on the reference box keeps the same share of extra rounds);
- **seconds** follow the box: a few seconds of a CPU-bound and an I/O-bound micro-benchmark
  (:func:`calibrate`) against the same on the reference box; a stage's seconds are multiplied
  by ``cpu^w x io^(1 - w)``, ``w`` its CPU seconds over its wall seconds on the reference box
  (:func:`weighted`; one half where the reference did not record them);
- **a run's length** follows the parameters where a stage's rows separate set-up from steps
  (its registry entry's length rule, :func:`experiments.stages.length_of`): a run x times as long costs ``run_s x (1 - unit_share + unit_share x x)``,
  ``unit_share`` the steps' share of a run on the reference box (its ``variance.csv``);
- what the reference cannot know is said: a parameter of the stage that differs from the
  reference run's (``env/reference-params.yaml``) and that does not set its count of runs
  changes what a run does, and the stage's line says so (:func:`run_changes`).

Only the stages ``dvc repro`` will run count: those ``dvc status`` finds changed and every stage
downstream of one (its inputs will change when they run). The plan, with the forecast of every
stage, is written atomically to ``results/plan.json`` (:data:`experiments.pipeline.ae_table.PLAN`); ``make ae-table``
(:mod:`experiments.pipeline.ae_table`) sets each stage's wall time against it.

``make repro STAGES="deepio lmdbio"`` (``python -m experiments.pipeline.forecast plan --stages ...``, then
``... repro --stages ...``) re-measures only those stages: the stale stages upstream of them
first (a fresh clone's data sets), then the named stages and every stage downstream of one,
forced (:func:`repro_commands`); the plan counts just those. Each claim's cost of being
re-measured that way, from the reference table's own wall times (:func:`cost`), is a column of
the claims table (:mod:`experiments.claims.table`).

``python -m experiments.pipeline.forecast record`` re-records the reference table from the last
``make repro`` of this checkout (each ``results/<stage>/env.json`` and its rows' ``run_s``),
with the calibration that run's plan measured before its first stage (this box's now where it
has none): run it on the reference box after a change to what a run does
(its steps, its start-up), and commit ``env/reference-times.csv`` and ``env/reference-params.yaml``.
A stage whose code (its ``dvc.yaml`` deps) changed since the reference run's commit is named
too (:func:`code_changes`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import subprocess
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

from ..host import cache
from ..settings import config, paths
from .. import stages
from ..output.provenance import MEASURING, data_stages  # noqa: F401 - the stage lists, one place

REFERENCE = "env/reference-times.csv"
REFERENCE_PARAMS = "env/reference-params.yaml"   # the params.yaml the reference run ran with
COLUMNS = ("stage", "runs", "size", "run_s", "fixed_s", "wall_s", "cpu_share", "bytes", "source", "unit_share")
CPU_SHARE = 0.5   # a stage whose CPU seconds the reference did not record: half CPU-, half I/O-bound


# ----------------------------------------------------------------------------- sizes from params
# Each stage's size rule is its registry entry's (experiments.stages.size_of): a number
# proportional to the seconds its runs take; a stage without one is taken at its reference
# seconds, whatever the parameters (its work does not scale with a count of runs).

def length_of(stage: str, params: dict) -> dict[str, float] | None:
    """Stage ``stage``'s run length under ``params`` (its registry entry's length rule,
    :func:`experiments.stages.length_of`); None for a stage without one."""
    try:
        return stages.length_of(stage, params)
    except (KeyError, TypeError, ValueError) as e:
        raise SystemExit(f"forecast: stage {stage}: cannot read its run length from params.yaml ({e!r})") from None


def length_ratio(now: dict[str, float] | None, ref: dict[str, float] | None) -> float | None:
    """The mean over the parts both have of ``now / ref`` (:func:`length_of`); None when none."""
    parts = [k for k in (now or {}) if (ref or {}).get(k)]
    return sum(now[k] / ref[k] for k in parts) / len(parts) if parts else None


def unit_share(variance_csv: Path, ranks: int = 1, runs_s: float | None = None) -> float | None:
    """The units' share of a run's seconds in a stage's ``variance.csv``: over its configurations
    (one quantity counted in units each), their units' seconds over their runs' seconds. A unit is
    one rank's step and the ranks step side by side, so a run's units take ``units / ranks x
    unit_s`` of its wall (``ranks`` from the configuration, else the given count): counting every
    rank's steps would take the set-up for steps. ``runs_s``: the stage's run seconds in all, as
    the reference table counts its runs (a traced pass is every side of a workload, and more); the
    share is then of those. None without such rows."""
    import pandas as pd

    if not variance_csv.exists():
        return None
    v = pd.read_csv(variance_csv)
    if not {"units", "run_s", "unit_s", "configuration"} <= set(v.columns):
        return None
    v = v[(v["units"] > 1) & (v["run_s"] > 0) & v["unit_s"].notna()].drop_duplicates("configuration")
    if v.empty:
        return None
    g = v["configuration"].str.extract(r"ranks=(\d+)")[0].astype(float).fillna(ranks)
    units_s = (v["units"] / g * v["unit_s"]).clip(upper=v["run_s"])
    if runs_s:
        n = v["runs"] if "runs" in v else 1
        return round(float(min(1.0, (units_s * n).sum() / runs_s)), 3)
    return round(float(units_s.sum() / v["run_s"].sum()), 3)


class _Reads(dict):
    """A params mapping that records the leaves a size rule reads (``alexnet.threads``)."""

    def __init__(self, d: dict, path: str, seen: set):
        super().__init__(d)
        self._path, self._seen = path, seen

    def _wrap(self, k, v):
        p = f"{self._path}.{k}" if self._path else str(k)
        if isinstance(v, dict):   # a section passed through: only the leaves read under it count
            return _Reads(v, p, self._seen)
        self._seen.add(p)
        return v

    def __getitem__(self, k):
        return self._wrap(k, super().__getitem__(k))

    def get(self, k, default=None):
        return self._wrap(k, super().__getitem__(k)) if k in self else default


def counted(stage: str, params: dict) -> set[str]:
    """The parameter paths stage ``stage``'s size and length rules read: what sets its count of
    runs and their length (its registry entry's size and length rules)."""
    seen: set[str] = set()
    if stage not in stages.BY_NAME:
        return seen
    for rule in (stages.size_of, stages.length_of):   # its count of runs and their length: both forecast
        try:
            rule(stage, _Reads(params, "", seen))
        except (KeyError, TypeError, ValueError, ImportError):
            pass
    return seen


def _leaves(v, path: str) -> dict[str, object]:
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out |= _leaves(x, f"{path}.{k}")
        return out
    return {path: v}


def _at(params: dict, path: str):
    for k in path.split("."):
        if not isinstance(params, dict) or k not in params:
            return None
        params = params[k]
    return params


# parameters that never change what a run does: the seed, the figures, make decide's purchases,
# and an adaptive stage's bounds on its rounds (the count, not the length, of its runs)
NOT_A_RUN = ("seed", "figures", "decide")
ROUNDS_ONLY = ("max_runs", "budget_s")


def run_changes(stage: str, params: dict, ref_params: dict | None, declared: list) -> list[str]:
    """The parameters of stage ``stage`` (``declared``: its dvc.yaml ``params``) that differ from
    the reference run's and that its size rule does not read: they change what a run does (its
    steps, its data), which the reference's seconds a run do not know."""
    if not ref_params:
        return []
    read = counted(stage, params) | counted(stage, ref_params)
    out = []
    for entry in declared:
        names = [entry] if isinstance(entry, str) else [k for v in entry.values() for k in (v or [])]
        for name in names:
            if name.split(".")[0] in NOT_A_RUN:
                continue
            a, b = _leaves(_at(params, name), name), _leaves(_at(ref_params, name), name)
            for path in sorted(set(a) | set(b)):
                if path.rsplit(".", 1)[-1] in ROUNDS_ONLY:
                    continue
                if a.get(path) != b.get(path) and not any(path == r or path.startswith(r + ".") for r in read):
                    out.append(path)
    return out


def changed_since(commit: str | None, root: Path | None = None) -> set[str] | None:
    """The files that differ between ``commit`` (the reference run's) and this working tree
    (git); None when git cannot tell (no such commit here, no git)."""
    if not commit:
        return None
    try:
        out = subprocess.run(["git", "diff", "--name-only", commit, "--"], cwd=root or paths.root(),
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return set(out.stdout.split()) if out.returncode == 0 else None


def code_changes(deps: list, changed: set[str] | None) -> list[str]:
    """The stage's dependencies (dvc.yaml ``deps``: files and folders) among ``changed``."""
    if not changed:
        return []
    out = []
    for d in deps or []:
        d = str(d).rstrip("/")
        out += sorted(f for f in changed if f == d or f.startswith(d + "/"))
    return list(dict.fromkeys(out))


def size_of(stage: str, params: dict) -> float | None:
    """Stage ``stage``'s size under ``params`` (:func:`experiments.stages.size_of`); None for a
    stage without a size rule (or one the registry lacks)."""
    if stage not in stages.BY_NAME:
        return None
    try:
        return stages.size_of(stage, params)
    except (KeyError, TypeError, ValueError, ImportError) as e:
        raise SystemExit(f"forecast: stage {stage}: cannot count its runs from params.yaml ({e!r})") from None


# ----------------------------------------------------------------------------- calibration

CPU_LOOP = 2_000_000          # iterations of the interpreter loop (CPU-bound: start-up is Python)
CPU_ZLIB_MIB = 8              # MiB compressed by zlib (CPU-bound C code, as the decoders)
IO_MIB = 128                  # MiB written, synced and read back cold (I/O-bound)
TRIES = 5


def _cpu_once() -> float:
    # 16 symbols drawn at random: text-like entropy, so zlib searches and codes as on real data
    data = random.Random(0).randbytes(CPU_ZLIB_MIB << 20).translate(bytes(b"abcdefghijklmnop"[i % 16] for i in range(256)))
    # the process's CPU seconds, not the wall's: the box's speed, not how busy it is this minute
    t = time.process_time()
    x = 0
    for i in range(CPU_LOOP):
        x ^= i * 2654435761 & 0xFFFF
    zlib.compress(data, 6)
    return time.process_time() - t


def _io_once(folder: Path) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f".forecast-calibration-{os.getpid()}"
    block = os.urandom(1 << 20)
    try:
        with open(f, "wb") as fh:
            for _ in range(IO_MIB):
                fh.write(block)
            fh.flush()
            # timed from the sync: the buffered write is memory copying, which other load stretches
            t = time.perf_counter()
            os.fsync(fh.fileno())
        cache.evict([f], "fadvise", label="forecast calibration")   # clean after the sync: the read is cold
        with open(f, "rb") as fh:
            while fh.read(1 << 20):
                pass
    finally:
        f.unlink(missing_ok=True)
    return time.perf_counter() - t


def calibrate(folder: Path | None = None, tries: int = TRIES) -> dict[str, float]:
    """Seconds of the CPU-bound micro-benchmark (CPU seconds of this process) and of the
    I/O-bound one (wall seconds: 128 MiB written, then timed: synced, dropped from the page
    cache and read back) on this box, the least of ``tries`` (other load only lengthens a try), the I/O one in
    ``folder`` (default ``data/``, where the disk tier lives)."""
    folder = folder or paths.root() / "data"
    return {"cpu_s": round(min(_cpu_once() for _ in range(tries)), 4),
            "io_s": round(min(_io_once(folder) for _ in range(tries)), 4)}


def scale(here: dict, ref: dict) -> tuple[float, dict[str, float]]:
    """The factor a reference second is multiplied by on this box, for a stage half CPU- and
    half I/O-bound: the geometric mean of the CPU and I/O ratios (this box's seconds over the
    reference's), and the ratios themselves. Without a reference calibration the factor is 1."""
    ratios = ratios_of(here, ref)
    return weighted(ratios, CPU_SHARE), ratios


def ratios_of(here: dict, ref: dict) -> dict[str, float]:
    return {k: here[k] / ref[k] for k in ("cpu_s", "io_s") if ref.get(k) and here.get(k)}


def weighted(ratios: dict[str, float], cpu_share: float | None) -> float:
    """A stage's factor: ``cpu^w x io^(1 - w)`` with ``w`` its share of CPU-bound time on the
    reference box (its CPU seconds over its wall seconds, at most 1; :data:`CPU_SHARE` when not
    recorded); with one ratio only, that ratio; with none, 1."""
    if not ratios:
        return 1.0
    if len(ratios) == 1:
        return next(iter(ratios.values()))
    w = CPU_SHARE if cpu_share is None else min(1.0, max(0.0, cpu_share))
    return ratios["cpu_s"] ** w * ratios["io_s"] ** (1 - w)


# ----------------------------------------------------------------------------- the reference table

@dataclass
class Reference:
    """The reference box's table: per stage a row of :data:`COLUMNS`; ``meta``: the commit and
    host that measured it, the parameters' profile and its calibration (``cpu_s``, ``io_s``)."""

    rows: dict[str, dict]
    meta: dict = field(default_factory=dict)
    params: dict | None = None   # the parameters of the reference run (env/reference-params.yaml)


def read_reference(path: Path | None = None) -> Reference:
    path = path or paths.root() / REFERENCE
    if not path.exists():
        raise SystemExit(f"forecast: {path} is missing: record it on the reference box "
                         "(python -m experiments.pipeline.forecast record)")
    meta, body = {}, []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            k, _, v = line[1:].partition(":")
            if v:
                meta[k.strip()] = v.strip()
        elif line.strip():
            body.append(line)
    for k in ("cpu_s", "io_s"):
        if k in meta:
            meta[k] = float(meta[k])
    rows = {}
    for r in csv.DictReader(io.StringIO("\n".join(body))):
        rows[r["stage"]] = {"stage": r["stage"], "runs": float(r["runs"] or 0),
                            "size": float(r["size"]) if r["size"] else None,
                            "run_s": float(r["run_s"] or 0), "fixed_s": float(r["fixed_s"] or 0),
                            "wall_s": float(r["wall_s"] or 0),
                            "cpu_share": float(r["cpu_share"]) if r.get("cpu_share") else None,
                            "bytes": int(float(r["bytes"] or 0)),
                            "source": r.get("source", ""),
                            "unit_share": float(r["unit_share"]) if r.get("unit_share") else None}
    pf = path.parent / Path(REFERENCE_PARAMS).name
    return Reference(rows, meta, yaml.safe_load(pf.read_text()) if pf.exists() else None)


def write_reference(ref: Reference, path: Path | None = None) -> Path:
    from ..output.results import atomic_write

    path = path or paths.root() / REFERENCE
    head = ["# The reference box's stage times, read by `python -m experiments.pipeline.forecast plan` (make repro).",
            "# Re-record on the reference box after a make repro: python -m experiments.pipeline.forecast record",
            "# runs: the runs the stage made; size: the same count from its parameters (its registry entry's",
            "# size rule, experiments/stages.py), which the plan scales; run_s: seconds a run; fixed_s: the stage's seconds outside its runs;",
            "# unit_share: the share of run_s in the run's steps (variance.csv's units), which its length rule scales."]
    # the head's own lines read back as meta (a colon in them): written once, not again
    head += [f"# {k}: {v}" for k, v in ref.meta.items() if f"# {k}: {v}" not in head
             and not any(h.startswith(f"# {k}:") for h in head)]
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in ref.rows.values():
        w.writerow({k: _cell(r.get(k)) for k in COLUMNS})
    text = "\n".join(head) + "\n" + out.getvalue()
    if ref.params is not None:
        ptext = (f"# params.yaml of the reference run ({ref.meta.get('commit', '')}), beside {path.name}: the plan "
                 "names the parameters that change what a run does\n" + yaml.safe_dump(ref.params, sort_keys=False))
        atomic_write(path.parent / Path(REFERENCE_PARAMS).name, lambda p: p.write_text(ptext))
    return atomic_write(path, lambda p: p.write_text(text))


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return int(v) if v.is_integer() else round(v, 4)
    return v


def reference_row(stage: str, wall_s: float, runs: int, runs_s: float, nbytes: int, size: float | None,
                  source: str, cpu_s: float | None = None) -> dict:
    """One stage's row: ``runs`` runs that took ``runs_s`` seconds in all, within a stage of
    ``wall_s`` seconds (the rest is fixed; never below 0)."""
    # a run's own clock can overlap the stage's start-up a little (or a median run stand for a
    # mean): the runs never take more than the stage
    run_s = min(runs_s / runs, wall_s / runs) if runs else 0.0
    share = None if cpu_s is None or not wall_s else round(min(1.0, cpu_s / wall_s), 3)
    return {"stage": stage, "runs": float(runs), "size": size, "run_s": run_s,
            "fixed_s": max(0.0, wall_s - runs * run_s), "wall_s": wall_s, "cpu_share": share,
            "bytes": int(nbytes), "source": source}


def _runs_of(stage: str, results: Path | None = None) -> tuple[int, float]:
    """(runs, their seconds in all) from the stage's rows in ``results/<stage>/`` (every run of
    ``make repro``, warm-ups too: they take time; not the runs a ``make decide`` bought); (0, 0)
    for a stage without ``run_s`` rows."""
    import pandas as pd

    from ..repeats.stage import ROUNDS_FILE

    d = results / stage if results is not None else paths.results_dir(stage)
    name = "raw.parquet"
    if (d / ROUNDS_FILE).exists():
        name = json.loads((d / ROUNDS_FILE).read_text()).get("rows_file", name)
    f = d / name
    if not f.exists():
        return 0, 0.0
    rows = pd.read_parquet(f) if name.endswith(".parquet") else pd.read_csv(f)
    if "run_s" not in rows or "run" not in rows:
        return 0, 0.0
    if "made_by" in rows:   # make repro's runs, not those a make decide bought after it
        from ..repeats.purchases import FIRST

        rows = rows[rows["made_by"] == FIRST]
    per = rows.groupby("run")["run_s"].sum()   # a run's passes share its seconds out (the blog's cold, warm)
    return int(len(per)), float(per.sum())


# data stages whose work is their items (images made), so all of it follows their size
ITEMS = tuple(s.name for s in stages.STAGES if s.items)


def _row(st: str, wall: float, runs: int, runs_s: float, nbytes: int, params: dict, source: str,
         cpu_s: float | None = None) -> dict:
    if st in ITEMS:
        n = size_of(st, params)
        return reference_row(st, wall, int(n), wall, nbytes, n, "env.json wall_s over its images", cpu_s)
    return reference_row(st, wall, runs, runs_s, nbytes, size_of(st, params) if runs else None, source, cpu_s)


def _calibration_meta() -> dict:
    c = calibrate()
    return {**c, "calibrated_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def run_calibration(results: Path, recs: dict[str, dict]) -> dict | None:
    """The calibration the run's own plan measured just before its first stage (its ``plan.json``,
    :func:`experiments.pipeline.ae_table.read_plan`),
    when that plan was made before every recorded stage started (one ``make repro`` measured them
    all); else None. A reference table whose seconds and calibration come from one moment: the
    shared box's speed drifts over hours (2x between two idle runs of one commit, 2026-11-29), and
    a benchmark taken when the table is recorded, after the run, need not describe the run."""
    from .ae_table import read_plan

    try:
        p = read_plan(results)
        here, made = p["calibration"]["here"], p["made_at"]
        if not all(here.get(k) for k in ("cpu_s", "io_s")):
            return None
        if any(datetime.fromisoformat(r["started_at"]) < datetime.fromisoformat(made) for r in recs.values()):
            return None
    except (OSError, ValueError, KeyError, TypeError):   # no plan (None), or not one make repro wrote
        return None
    return {"cpu_s": here["cpu_s"], "io_s": here["io_s"], "calibrated_at": made}


def record(out: Path | None = None, source: Path | None = None) -> Reference:
    """The reference table from this checkout's last ``make repro`` (every stage's ``env.json``
    run record and rows) and the calibration its plan measured before its first stage
    (:func:`run_calibration`; this box's now where there is no such plan); ``source``: another checkout of the same
    code where that run was made (its ``results/`` and ``params.yaml``, only read; its commit
    from the run's own ``env.json``), as ``make reference SOURCE=...`` records it."""
    from . import ae_table
    from ..host.envinfo import git_revision

    pfile = source / "params.yaml" if source else paths.params_file()
    results = source / "results" if source else None
    params = yaml.safe_load(pfile.read_text())
    recs = ae_table.runs(results)
    if not recs:
        raise SystemExit(f"forecast record: no stage has an env.json run record in {results or 'results/'}: "
                         "run make repro first")
    rows = {}
    for st, r in recs.items():
        n, secs = _runs_of(st, results)
        rows[st] = _row(st, float(r["wall_s"]), n, secs, ae_table.stage_bytes(r), params,
                        "env.json wall_s and cpu_s; rows' run_s", r.get("cpu_s"))
        if st in stages.BY_NAME and stages.BY_NAME[st].length and n:
            ranks = max([int(x.get("ranks", 1)) for x in (params.get(st) or {}).get("points", {}).values()] or [1])
            rows[st]["unit_share"] = unit_share((results if results is not None else paths.root() / "results")
                                                / st / "variance.csv", ranks, secs)
    first = min(recs.values(), key=lambda x: x["started_at"])
    if source:
        first_stage = min(recs, key=lambda s: recs[s]["started_at"])
        env = json.loads((results / first_stage / "env.json").read_text())
        commit = str((env.get("git") or {}).get("commit") or "unknown")
    else:
        commit = git_revision()["commit"]
    cal = run_calibration(results if results is not None else paths.root() / "results", recs) or _calibration_meta()
    ref = Reference(rows, {"commit": commit, "host": first.get("host", ""),
                           "started_at": first.get("started_at", ""), "profile": _profile(pfile), **cal},
                    params)
    write_reference(ref, out)
    return ref


def _profile(pfile: Path | None = None) -> str:
    """The profile a params.yaml was written from (its first line), ``edited`` when not said."""
    first = ((pfile or paths.params_file()).read_text().splitlines() or [""])[0]
    m = re.match(r"#\s*profile:\s*(\w+)", first)
    return m.group(1) if m else "edited"


def _seconds(text: str) -> float:
    """``3 min 7 s`` or ``42 s`` (:func:`experiments.pipeline.run_notebook.fmt_seconds`) as seconds."""
    m = re.fullmatch(r"(?:(\d+) min )?(\d+) s", text.strip())
    if not m:
        raise ValueError(f"not a stage time: {text!r}")
    return 60 * int(m.group(1) or 0) + int(m.group(2))


def _bytes(text: str) -> int:
    m = re.fullmatch(r"([\d.]+) (GB|MB|kB|B)", text.strip())
    return int(float(m.group(1)) * {"GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1}[m.group(2)]) if m else 0


def from_measured(folder: Path, out: Path | None = None) -> Reference:
    """The reference table from a measured record of a whole ``make repro``
    (``docs/measured/<day>-<what>/``, made by its ``collect.py``): ``ae-table.md`` (each stage's
    wall time, outputs and tier copies; ``stage_times.csv``'s seconds where it has the stage),
    ``variance.md`` (per measuring stage its configurations, runs a configuration and the
    median seconds of a run) and ``commit.txt``; the parameters are this checkout's
    ``params.yaml`` (the record's commit must have had the same). The runs are the record's
    configurations x (runs + the stage's warm-up rounds), each taken at the median run's
    seconds. The calibration is this box's: run it on the reference box only."""
    import pandas as pd

    params = yaml.safe_load(paths.params_file().read_text())
    walls, nbytes = {}, {}
    host = started = ""
    for line in (folder / "ae-table.md").read_text().splitlines():
        m = re.match(r"\| `(\w+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", line)
        if m and m.group(2).strip() != "not run":
            walls[m.group(1)] = float(_seconds(m.group(2)))
            tiers = [_bytes(x.split(" ", 1)[1]) for x in m.group(4).split(",") if x.strip() != "none"]
            nbytes[m.group(1)] = _bytes(m.group(3)) + sum(tiers)
        h = re.search(r" on (.+?), started (\S+) ", line)
        if h:
            host, started = h.group(1), h.group(2)
    times = folder / "stage_times.csv"
    if times.exists():
        walls |= {r.stage: float(r.wall_s) for r in pd.read_csv(times).itertuples()}
    var = {}
    for line in (folder / "variance.md").read_text().splitlines()[2:]:
        c = [x.strip() for x in line.strip("|").split("|")]
        if len(c) > 6 and c[0] not in var:
            var[c[0]] = (int(c[2]), int(c[3]), float(c[6]))   # configurations, runs, run_s: its first quantity
    rows = {}
    for st, wall in walls.items():
        runs = runs_s = 0
        src = "record's wall time; no run_s rows"
        if st in var:
            k, n, each = var[st]
            warm = int((params.get(st) or params.get("alexnet" if st == "alexnet_prefetch" else st) or {})
                       .get("warmup", 0) or 0)
            runs, runs_s = k * (n + warm), k * (n + warm) * each
            src = "record's wall time; variance.md runs and median run_s"
        rows[st] = _row(st, wall, runs, runs_s, nbytes.get(st, 0), params, src)
    commit = (folder / "commit.txt").read_text().split()[0] if (folder / "commit.txt").exists() else "unknown"
    ref = Reference(rows, {"commit": commit, "host": host, "started_at": started, "profile": _profile(),
                           "record": str(folder.relative_to(paths.root()) if folder.is_absolute() else folder),
                           **_calibration_meta()}, params)
    write_reference(ref, out)
    return ref


# ----------------------------------------------------------------------------- the plan

def to_run(changed: list[str], st: dict[str, dict]) -> list[str]:
    """The stages ``dvc repro`` runs when ``changed`` are stale: those and every stage
    downstream of one (dvc.yaml's order)."""
    from .ae_table import upstream

    changed = set(changed)
    return [s for s in st if changed & set(upstream(s, st))]


def chosen(names: list[str], st: dict[str, dict]) -> list[str]:
    """``make repro STAGES="a b"``: the named stages and every stage downstream of one, in
    dvc.yaml's order: what ``dvc repro --force --downstream a b`` runs. A name that is not a
    stage of dvc.yaml stops here, before any work."""
    bad = [n for n in names if n not in st]
    if bad:
        raise SystemExit(f"make repro STAGES: {' '.join(bad)} not a stage of dvc.yaml; allowed: {', '.join(st)}")
    return to_run(names, st)


def before(names: list[str], st: dict[str, dict]) -> list[str]:
    """The stages upstream of what ``--downstream`` forces (the named stages and every stage
    downstream of one) that it leaves out (their data sets, the rules, the baselines, a
    downstream stage's other measuring inputs): ``dvc repro`` of these first runs the stale
    ones, so that every forced stage finds its inputs (a fresh clone has none: STAGES=
    traced_comparison forces workload_validation, which reads workload_sleep too)."""
    from .ae_table import upstream

    forced = set(chosen(names, st))
    up = {u for n in forced for u in upstream(n, st)}
    return [s for s in st if s in up and s not in forced]


def repro_commands(names: list[str], st: dict[str, dict]) -> list[list[str]]:
    """The ``dvc repro`` calls of ``make repro STAGES="a b"``: the stale stages upstream of them
    (:func:`before`; none run when up to date), then the named stages forced and every stage
    downstream of one forced too (DVC's ``--force --downstream``: the named stages re-measured
    even though nothing changed, and what reads them re-made from the new measurements)."""
    chosen(names, st)   # an unknown name stops here
    names = [s for s in st if s in set(names)]   # dvc.yaml's order
    up = before(names, st)
    return ([["dvc", "repro", *up]] if up else []) + [["dvc", "repro", "--force", "--downstream", *names]]


@dataclass
class Cost:
    """What re-measuring a claim judged by ``stage`` costs on the reference box: ``stages``
    (what ``make repro STAGES=...`` names: the measuring stages upstream of it, or the stage
    itself where none is), ``runs`` (what that forces), ``seconds`` (the reference run's wall
    seconds of those), ``data_s`` (of the data sets they read, where they are not generated yet:
    a fresh clone) and ``unknown`` (forced stages the reference table lacks, counted as 0 s)."""

    stage: str
    stages: list[str]
    runs: list[str]
    seconds: float
    data_s: float
    unknown: list[str]

    @property
    def minutes(self) -> float:
        return self.seconds / 60

    @property
    def command(self) -> str:
        return f'make repro STAGES="{" ".join(self.stages)}"'


def cost(stage: str, st: dict[str, dict], ref: Reference) -> Cost:
    """The reference run's cost (:class:`Cost`) of re-measuring what stage ``stage`` judges."""
    from .ae_table import upstream

    up = upstream(stage, st)
    names = [s for s in st if s in up and s in MEASURING] or [stage]
    runs = chosen(names, st)
    data = [s for s in before(names, st) if s in data_stages(st)]
    wall = {s: r["wall_s"] for s, r in ref.rows.items()}
    return Cost(stage, names, runs, sum(wall.get(s, 0.0) for s in runs), sum(wall.get(s, 0.0) for s in data),
                [s for s in [*runs, *data] if s not in wall])


def costs(judges, ref: Reference | None = None, st: dict[str, dict] | None = None) -> dict[str, Cost]:
    """:func:`cost` of each stage in ``judges`` (those that judge claims) that dvc.yaml has, from
    the reference table (:data:`REFERENCE` unless given): the claims table's *re-measure*
    column (:func:`experiments.claims.table.with_costs`)."""
    from .ae_table import stages

    st = st if st is not None else stages()
    ref = ref or read_reference()
    return {j: cost(j, st, ref) for j in judges if j in st}


@dataclass
class Line:
    """One stage's forecast: ``runs`` x ``run_s`` + ``fixed_s`` (seconds on this box), ``bytes``
    its outputs and tier copies should take; ``note``: how it was worked out."""

    stage: str
    runs: float
    run_s: float
    fixed_s: float
    bytes: int
    note: str = ""
    factor: float = 1.0   # this box's seconds per reference second, already in run_s and fixed_s

    @property
    def seconds(self) -> float:
        return self.runs * self.run_s + self.fixed_s


def forecast(stage: str, ref: Reference, params: dict, ratios: dict[str, float] | float,
             declared: list | None = None, code: list[str] | None = None) -> Line:
    """Stage ``stage``'s forecast under ``params`` on a box whose benchmarks took ``ratios``
    times the reference's (:func:`ratios_of`; a number: one factor for every stage)."""
    r = ref.rows.get(stage)
    if r is None:
        return Line(stage, 0, 0.0, 0.0, 0, "not in the reference table: no forecast", 1.0)
    runs, nbytes, note = r["runs"], r["bytes"], ""
    now = size_of(stage, params) if r["runs"] else None
    if now is not None and r["size"]:
        runs = r["runs"] * now / r["size"]
        if stage in ITEMS:   # a data set's bytes follow its images
            nbytes = int(r["bytes"] * now / r["size"])
        if abs(now - r["size"]) > 1e-9:
            note = f"runs x {now / r['size']:.2f} of the reference's (params)"
    elif not r["runs"]:
        note = "no runs: its reference seconds"
    run_s = r["run_s"]
    x = length_ratio(length_of(stage, params), length_of(stage, ref.params)) if ref.params and r["runs"] else None
    if x is not None and abs(x - 1) > 1e-9:
        u = r.get("unit_share")
        if u is None:   # the reference has no set-up split: the run length is not forecast
            note = "; ".join(y for y in (note, f"UNKNOWN run length: x {x:.2f} of the reference's steps, no unit_share "
                                               "recorded; its seconds a run are the reference's") if y)
        else:
            run_s = r["run_s"] * (1 - u + u * x)
            note = "; ".join(y for y in (note, f"runs {x:.2f} x as long: s/run x {1 - u + u * x:.2f} "
                                               f"(units {u:.0%} of a run there)") if y)
    changed = run_changes(stage, params, ref.params, declared or [])
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        note = "; ".join(x for x in (note, f"UNKNOWN run length: {', '.join(changed[:3])}{more} differ from the "
                                           "reference run's, its seconds a run are the reference's") if x)
    if code:
        more = f" and {len(code) - 2} more" if len(code) > 2 else ""
        note = "; ".join(x for x in (note, f"CODE CHANGED since the reference run: {', '.join(code[:2])}{more}") if x)
    factor = ratios if isinstance(ratios, (int, float)) else weighted(ratios, r.get("cpu_share"))
    return Line(stage, runs, run_s * factor, r["fixed_s"] * factor, nbytes, note, factor)


def _fmt(s: float) -> str:
    from .run_notebook import fmt_seconds

    return fmt_seconds(s)


def render(lines: list[Line], fresh: list[str], head: str, skipped: str = "up to date (not run, not counted)") -> str:
    from .run_notebook import human

    out = [head, f"{'stage':26s} {'runs':>6s} x {'s/run':>7s} + {'fixed':>7s} = {'forecast':>12s} {'disk':>9s} "
                 f"{'box':>5s}"]
    for x in lines:
        out.append(f"{x.stage:26s} {x.runs:6.0f} x {x.run_s:7.2f} + {x.fixed_s:6.0f}s = {_fmt(x.seconds):>12s} "
                   f"{human(x.bytes):>9s} x{x.factor:4.2f}" + (f"  ({x.note})" if x.note else ""))
    total = sum(x.seconds for x in lines)
    out.append(f"total: {_fmt(total)} of stages for {len(lines)} stage(s) to run, "
               f"{human(sum(x.bytes for x in lines))} of outputs and tier copies")
    unknown = [x.stage for x in lines if "UNKNOWN" in x.note or "CODE CHANGED" in x.note]
    if unknown:
        out.append(f"{len(unknown)} stage(s) run differently from the reference run (other parameters or code: "
                   f"{', '.join(unknown)}): their forecast keeps the reference's seconds a run, which those changes may have moved; "
                   "re-record the table on the reference box (python -m experiments.pipeline.forecast record) to forecast them")
    if fresh:
        out.append(f"{skipped}: {', '.join(fresh)}")
    return "\n".join(out)


def plan(params: dict, ref: Reference, changed: list[str], here: dict, st: dict[str, dict],
         files: set[str] | None = None, names: list[str] | None = None) -> dict:
    """The plan: every stage's forecast (those ``dvc repro`` runs counted), as written to
    ``results/plan.json``; ``files``: the files changed since the reference run's commit
    (:func:`changed_since`), None when unknown; ``names``: ``make repro STAGES=...``'s stages
    (:func:`repro_commands`: those and their downstream forced, the stale ones upstream first),
    None for a whole ``dvc repro``."""
    factor, ratios = scale(here, ref.meta)
    run = to_run(changed, st)
    if names:
        forced, up = set(chosen(names, st)), set(before(names, st))
        run = [s for s in st if s in forced or (s in up and s in run)]
    lines = [forecast(s, ref, params, ratios, st[s].get("params"), code_changes(st[s].get("deps"), files))
             for s in st]
    return {"made_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "loadavg": round(os.getloadavg()[0], 2),
            "reference": {k: ref.meta.get(k) for k in ("commit", "host", "started_at", "profile")},
            "calibration": {"here": here, "reference": {k: ref.meta.get(k) for k in ("cpu_s", "io_s")},
                            "ratios": ratios, "factor": factor},
            "to_run": run,
            "named": list(names or []),
            "code_checked": files is not None,
            "stages": {x.stage: {"runs": x.runs, "run_s": x.run_s, "fixed_s": x.fixed_s,
                                 "forecast_s": x.seconds, "bytes": x.bytes, "factor": x.factor,
                                 "runs_now": x.stage in run, "note": x.note} for x in lines},
            "total_s": sum(x.seconds for x in lines if x.stage in run)}


def words(p: dict) -> str:
    """The plan as ``make repro`` prints it."""
    c, ref = p["calibration"], p["reference"]
    ratios = ", ".join(f"{'CPU' if k == 'cpu_s' else 'I/O'} x{v:.2f}" for k, v in c["ratios"].items())
    head = (f"The plan: forecast from {REFERENCE} (measured on {ref.get('host')} at {str(ref.get('commit'))[:10]}), "
            f"scaled to this box by {ratios or 'no reference calibration'} (a short CPU and I/O benchmark here "
            f"against the same there; each stage weighs the two by its CPU share on the reference box, "
            f"x{c['factor']:.2f} at half and half)"
            + (f". The 1-minute load average is {p['loadavg']:.1f} on {os.cpu_count()} CPUs: other work on this box "
               "lengthens every stage beyond this forecast" if p.get("loadavg", 0) > 0.5 * (os.cpu_count() or 1) else ""))
    if p.get("named"):
        head += (f". STAGES={' '.join(p['named'])}: those and every stage downstream of one forced "
                 "(dvc repro --force --downstream), the stale stages upstream of them first")
    lines = [Line(s, v["runs"], v["run_s"], v["fixed_s"], v["bytes"], v["note"], v.get("factor", 1.0))
             for s, v in p["stages"].items() if v["runs_now"]]
    fresh = [s for s, v in p["stages"].items() if not v["runs_now"]]
    if not p.get("code_checked", True):
        head += (f". The reference run's commit {str(ref.get('commit'))[:10]} is not in this checkout's history: "
                 "changes to the stages' code since it are not checked")
    if p.get("named"):
        return render(lines, fresh, head, "not run, not counted (neither named nor downstream of a named stage, "
                                          "or up to date upstream of one)")
    return render(lines, fresh, head)


def recalibrate(p: dict, here: dict | None = None) -> dict:
    """The calibration again, after the run (``here``: :func:`calibrate`'s, taken now when None),
    against the same reference as the plan ``p``'s before the first stage: ``at``, ``here``,
    ``ratios`` and ``factor`` (:func:`scale`). A box whose speed changed during the run (the
    shared box's slow hours) shows as two factors apart; the forecast, made before, cannot."""
    here = here or calibrate()
    factor, ratios = scale(here, (p.get("calibration") or {}).get("reference") or {})
    return {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "here": here, "ratios": ratios,
            "factor": factor}


def write_plan(p: dict, path: Path | None = None) -> Path:
    from .ae_table import PLAN
    from ..output.results import write_json

    return write_json(path or paths.root() / PLAN, p)




def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.pipeline.forecast", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("plan", help="print the plan of the next dvc repro and write results/plan.json")
    sub.add_parser("after", help="take the calibration again after the run, kept in results/plan.json (make repro)")
    pl.add_argument("--stages", default="", help="make repro STAGES: only these stages and what depends on them")
    rp = sub.add_parser("repro", help="make repro STAGES: re-measure these stages and re-run what depends on them")
    rp.add_argument("--stages", required=True, help="stages of dvc.yaml, space-separated")
    r = sub.add_parser("record", help=f"re-record {REFERENCE} from this checkout's last make repro (reference box)")
    r.add_argument("--out", type=Path, default=None)
    r.add_argument("--from-measured", type=Path, default=None, metavar="DIR",
                   help="from a docs/measured/ record of a whole make repro instead of results/")
    r.add_argument("--source", type=Path, default=None, metavar="CHECKOUT",
                   help="from the results/ and params.yaml of another checkout's make repro (only read)")
    a = ap.parse_args(argv)
    if a.cmd == "record":
        if a.source and not (a.source / "results").is_dir():
            raise SystemExit(f"forecast record --source {a.source}: no results/ folder there; allowed: a checkout "
                             "where make repro ran")
        ref = (from_measured(a.from_measured, a.out) if a.from_measured
               else record(a.out, a.source.resolve() if a.source else None))
        print(f"wrote {a.out or REFERENCE}: {len(ref.rows)} stages, commit {ref.meta['commit'][:10]}, "
              f"calibration cpu {ref.meta['cpu_s']} s, io {ref.meta['io_s']} s")
        return 0
    if a.cmd == "after":   # make repro's step after dvc repro, before its summary
        from .ae_table import read_plan

        p = read_plan()
        if p and p.get("to_run"):
            p["after"] = recalibrate(p)
            write_plan(p)
            print(f"calibration after the run: x{p['after']['factor']:.2f} (x{p['calibration']['factor']:.2f} "
                  "before the first stage)")
        return 0
    from .ae_table import stages

    st = stages()
    names = a.stages.split()
    if a.cmd == "repro":
        for cmd in repro_commands(names, st):
            print(" ".join(cmd), flush=True)
            rc = subprocess.run(cmd, cwd=paths.root()).returncode
            if rc:
                return rc
        return 0
    chosen(names, st)   # an unknown stage stops before the benchmarks and dvc status
    try:   # an unknown section or a renamed key stops the plan, before any stage runs
        params = config.read_params()
    except config.ConfigError as e:
        raise SystemExit(f"error: {e}") from None
    ref = read_reference()
    from .dvc_run import stale   # dvc status: the stages whose inputs changed

    p = plan(params, ref, stale(paths.root()), calibrate(), st, changed_since(ref.meta.get("commit")), names)
    write_plan(p)
    print(words(p), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
