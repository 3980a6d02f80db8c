"""The ``traced_comparison`` stage (notebook 52): every side of every workload traced, pass after
pass, through the one measuring-stage interface; tabulated and written.

A **run** is one pass of a workload (:func:`measuring_stage`): each side (real, sleep, emulator,
DLIO) once, in a tracer session of its own (the probes attach once per pass), on data evicted
before each side; our sides fork their ranks from the stage's warm parent, which every
session follows (:func:`trace_pass`). The pass is the unit of every interval (the report's findings, :mod:`.findings`);
the stage runs ``traced_comparison.runs`` rounds of every workload in a seeded order, then the
passes ``make decide`` bought (``decide.traced_comparison``), appending to what it measured before.

It measures and draws nothing else; ``traced_comparison_report`` (notebook 53, :mod:`.report`)
reads what it wrote and makes the figures and claims. ``results/traced_comparison/`` holds

- ``throughput.csv``: the stage's rows, one per pass and side (``run``, ``repeat``, ``made_by``,
  ``run_s``): its data and compute throughputs (:mod:`.sides`), its similarity to the same pass's
  real run (Eq 4.1) with the components used, its checkpoint distance from it, its BIO / VFS read
  share, its training epochs, the device audit; ``similarity.csv`` the same rows' similarity columns;
- ``vectors.csv`` (every pass's Table 4.2 vector of every side), ``components.csv`` (Tables
  5.1-5.3 of every pass: one value and one difference column per side);
  ``table_5_1_unet3d.md`` / ``table_5_2_bert.md`` / ``table_5_3_dlrm.md`` (and ``.csv``): the
  tables of each side's median vector over the passes, with each side's median similarity;
  ``vectors.json`` (those median vectors), ``why.json`` (workload -> side -> why not measured);
- ``side_steps.csv``: every measured side's steady steps (:func:`side_steps`), tagged with the pass;
- of each workload's first pass only (they are large and show one pass): ``trace_<workload>_<side>.parquet``
  (the full trace, which no report reads: the reference run leaves it out), ``timelines.json``
  with ``timeline_<workload>_<side>.parquet`` (what the timeline draws of that trace,
  :func:`timeline_trace`), ``.io.csv`` and ``.phases.csv`` (what each side's Fig 5.7/5.12/5.18
  timeline draws, computed while its checkpoint files, whose extents filter the block rows, still
  exist);
- the validation layout of the workload stages for the sides that run our programs
  (``raw.parquet`` steps, ``loader.csv``, ``phases.csv``, ``runs.csv``, ``summary.csv``, column
  ``variant`` = the side, every row tagged with its pass), so that
  :data:`experiments.workloads.validation.ROWS`'s ``emulator`` row reads this folder;
- ``rounds.json``, ``variance.csv`` (between- and within-pass variance per workload and side),
  ``metrics.json``, ``env.json``;
- ``search.csv``: the max-accelerators search of ``traced_comparison.max_accelerators``
  (:func:`search`; RetinaNet at its AU mark of 0.85 on each tier), once a stage run, not a pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..trace.vector import KEYS
from . import compare, sides

TABLE_FILE = {"unet3d": "table_5_1_unet3d", "bert": "table_5_2_bert", "dlrm": "table_5_3_dlrm",
              "retinanet": "table_5_x_retinanet"}
TIMELINE_FILE = {"unet3d": "fig5_7_unet3d_timeline", "bert": "fig5_12_bert_timeline",
                 "dlrm": "fig5_18_dlrm_timeline", "retinanet": "fig5_x_retinanet_timeline"}
STAGE = "traced_comparison"
CONFIG_KEYS = ("workload",)   # a configuration is a workload at its point; a run is one pass of its sides
TABLES = ("vectors", "components", "side_steps", "steps", "loader", "phases")
FILES = {"rows": "throughput.csv", "steps": "raw.parquet"}
RECORDS = ("steps", "loader", "phases")   # the validation layout's side tables (variant = the side)


class Passes:
    """What the passes run in this process kept beside their rows: each workload's first pass's
    traces and timeline inputs (:func:`timeline_inputs`) and its sides' facts (for ``env.json``);
    ``parents``: the stage's warm parents the sides' ranks fork from (:func:`trace_pass`)."""

    def __init__(self, parents=None):
        self.traces: dict[str, dict] = {}      # workload -> side -> Trace
        self.timelines: dict[str, list] = {}   # workload -> timeline_inputs items
        self.facts: dict[str, dict] = {}       # workload -> side -> facts
        self.data: dict[str, str] = {}         # workload -> the staged data folder
        self.parents = parents                 # the stage's warm parents (trace_pass), or None
        self.launch: dict = {"mode": "fresh"}  # for env.json: how the sides' ranks started


def measuring_stage(cfg, work_root, passes: Passes | None = None):
    """The stage as a :class:`experiments.repeats.MeasuringStage`: one configuration per workload
    of ``cfg.traced_comparison.points`` (key ``workload``), ``traced_comparison.runs`` rounds in a
    seeded order; a run is one pass (:func:`run_pass`), its rows one per side, its side tables
    :data:`TABLES`. ``cfg`` holds the sections ``traced_comparison``, ``tiers``, ``seed`` and the
    workloads'. Bad input (a workload without its section, sides without ``real``, an unknown
    tier) stops here, before any pass."""
    from .. import repeats

    tc = cfg.traced_comparison
    secs = {w: getattr(cfg, w).model_dump(mode="json") for w in tc.points if hasattr(cfg, w)}
    sides.check_points(tc, secs)
    tier = sides.pick_tier(cfg.tiers, tc.tier)
    for t in tc.max_accelerators.tiers:   # the search's tiers, checked before any pass
        sides.pick_tier(cfg.tiers, t, "traced_comparison.max_accelerators.tiers")
    work_root = Path(work_root)
    kept = passes if passes is not None else Passes()

    def run_one(c: dict, repeat: int):
        # each pass its own seed (the file order, the shuffles), as the workload stages' runs have:
        # with one seed every pass read the same files, and RetinaNet's 4-step passes repeated one
        # similarity to 4 digits, an interval of width 0 that a second clone fell outside (issue 64)
        rows, tables = run_pass(c["workload"], secs[c["workload"]], tc, pass_seed(cfg.seed, repeat), tier,
                                work_root, kept, desc=f"{c['workload']} pass {repeat}: sides")
        return repeats.Run(rows, tables)

    configs = [{"workload": w} for w in tc.points]
    return repeats.MeasuringStage(STAGE, CONFIG_KEYS, configs, run_one, repeats.RoundsPlan(tc.runs, tc.runs),
                                  cfg.seed, tables=TABLES, files=FILES, progress=f"{STAGE} passes")


def pass_seed(seed: int, repeat: int) -> int:
    """The seed of pass ``repeat`` (0, 1, ...): every side of the pass shares it, so the sides
    read the same files in the same order, and each pass draws its own, as a workload stage's
    run ``repeat`` does (:func:`experiments.workloads.launch.run_config`: ``seed + repeat``)."""
    return int(seed) + int(repeat)


def search(cfg, work_root) -> pd.DataFrame:
    """The max-accelerators search of ``traced_comparison.max_accelerators`` (none when it names
    no workload): per tier and workload, the most emulated accelerators at the workload's AU
    mark (RetinaNet: the v3.0 config's 0.85) with the bound verdict and the deciding run's device
    audit (:func:`experiments.emulator.search.tier_table`); each trial a cold emulator run, after the passes."""
    from ..emulator.search import tier_table

    ma = cfg.traced_comparison.max_accelerators
    if not ma.workloads:
        return pd.DataFrame()
    tiers = [sides.pick_tier(cfg.tiers, t, "traced_comparison.max_accelerators.tiers") for t in ma.tiers]
    return tier_table(tiers, ma.workloads, ma.limit, Path(work_root) / "search", (ma.compute_model,), cfg)


def measure(cfg, work_root, purchases=()) -> tuple:
    """Run the stage (:func:`measuring_stage`) and the passes ``make decide`` bought
    (``purchases``: ``decide.traced_comparison``); returns the
    :class:`experiments.repeats.Measurement` and the :class:`Passes` run now."""
    from .. import repeats
    from ..host import warm_launch

    # one warm parent per framework for the stage, started by the first pass that forks from it;
    # two-rank sides fork too, as the workload stages' runs do (docs/statistics.md, "Two forked
    # ranks: the same load")
    with warm_launch.Parents(multi_rank=True) as parents:
        kept = Passes(parents)
        m = repeats.measure(measuring_stage(cfg, work_root, kept), purchases)
        kept.launch = {"mode": "warm", "parent_import_s": parents.import_s}
    kept.parents = None
    return m, kept


def run_pass(workload: str, section: dict, tc, seed: int, tier, work_root: Path, kept: Passes,
             desc: str | None = None) -> tuple[list[dict], dict]:
    """One pass of ``workload`` (:func:`trace_pass`); returns its rows (:func:`pass_rows`) and
    side tables (:func:`pass_tables`). The first pass of a workload in this process keeps its
    traces, timeline inputs and facts in ``kept``; every pass's checkpoints are removed once its
    timelines are computed."""
    done = {workload: trace_pass(workload, section, tc, seed, tier, work_root, desc, kept.parents)}
    try:
        rows, tables = pass_rows(done), pass_tables(done)
        if workload not in kept.traces:
            kept.traces[workload] = {s: r["trace"] for s, r in done[workload]["results"].items()
                                     if r.get("trace") is not None}
            kept.timelines[workload] = timeline_inputs(done)
            kept.facts[workload] = facts(done)[workload]
            kept.data[workload] = done[workload]["data_dir"]
    finally:
        sides.clean(done)
    return rows, tables


WARM_SIDES = ("real", "sleep", "emulator", "fixed")   # the sides that run our rank programs


def trace_pass(workload: str, section: dict, tc, seed: int, tier, work_root: Path, desc: str | None = None,
               parents=None) -> dict:
    """Every side of ``workload`` once: its data staged and DLIO's plan made
    (:func:`.sides.prepare_workload`), then each side in a window of one tracer session
    (:func:`.sides.run_workload`); :func:`.sides.finish_workload`'s result.

    ``parents``: the stage's warm parents (:class:`experiments.host.warm_launch.Parents`, or
    None: every side starts fresh processes). The sides that run our programs fork their ranks
    (one or, with ``Parents.multi_rank``, several) from the parent of the workload's framework, whose imports were
    paid once a stage instead of once a side (twice for the emulator, whose torchrun agent
    imports PyTorch too); the session follows that parent's forks (``follow``) and never sees
    its imports. Each side is still a process of its own (each rank one); parents that do not
    serve the point's ranks (``Parents.serves``) leave its sides to start fresh."""
    from ..trace import Session
    from ..workloads.launch import framework

    work_root.mkdir(parents=True, exist_ok=True)
    # data staged and DLIO's plan made first: a folder renamed inside a session keeps the name
    # the tracer saw first (staging writes <name>.partial, then renames it)
    prep = sides.prepare_workload(workload, section, tc.points[workload], tc, seed, tier, work_root)
    warm = parents is not None and parents.serves(tc.points[workload].ranks) \
        and any(s in WARM_SIDES for s in prep["sides"])
    # started (once a stage) before the session: the tracer follows its forks, not its imports
    follow = (parents.get(framework(workload)).pid,) if warm else ()
    with Session(backend=tc.backend, watch=[tier.dir, work_root], quiet=True, follow=follow) as session:
        got = sides.run_workload(prep, tc, seed, session, progress_desc=desc, parents=parents if warm else None)
    return sides.finish_workload(got)


def pass_rows(done: dict) -> list[dict]:
    """The rows of one pass ({workload: :func:`.sides.finish_workload`}): one per side, its
    throughput row (:func:`.sides.throughput_row`) with ``similarity`` to this pass's real run
    (Eq 4.1, 0-1; NaN when either side has no vector), ``components_used``, ``checkpoint_distance``
    from the real run (:func:`.compare.checkpoint_distance`), ``bio_vfs_read_pct`` (BIO / VFS read
    bytes, %), ``epochs`` (training epochs in its phases), ``eviction``, and, for the sides that
    ran our programs, ``cpu_seconds``, ``load_1min``, ``run_dir``."""
    out = []
    for w, got in done.items():
        res = got["results"]
        hour = got.get("compute") or {}   # the pass's hour factor (sides.carried_model), given to every side but real
        vectors = {s: r["vector"] for s, r in res.items()}
        why = {s: r["why"] for s, r in res.items() if r["status"] != "measured"}
        sims = compare.similarity_table(w, vectors, why, {s: r.get("backend", "") for s, r in res.items()})
        sims = sims.set_index("side")
        tp = got["throughput"].set_index("side")
        for side, r in res.items():
            row = tp.loc[side].to_dict()
            v = vectors.get(side) or {}
            rec = got["records"].get(side, {})
            u = rec.get("usage") or {}
            ph = rec.get("phases")
            epochs = int(ph[ph["phase"] == "train"]["epoch"].dropna().nunique()) \
                if ph is not None and len(ph) and {"phase", "epoch"} <= set(ph.columns) else 0
            row.update(side=side, similarity=sims.loc[side, "similarity"],
                       components_used=int(sims.loc[side, "components_used"]),
                       checkpoint_distance=compare.checkpoint_distance(vectors.get("real"), vectors.get(side)),
                       bio_vfs_read_pct=v.get("bio_vfs_read_pct", float("nan")), epochs=epochs,
                       eviction=r.get("eviction", ""), cpu_seconds=u.get("cpu_s", float("nan")),
                       load_1min=float(np.mean(u.get("load_1min", [np.nan]))), run_dir=r.get("run_dir", ""),
                       compute_scale=hour.get("scale", np.nan) if side != "real" else np.nan)
            out.append(row)
    return out


def pass_tables(done: dict) -> dict[str, pd.DataFrame]:
    """The side tables of one pass: ``vectors`` (one row per measured side: its vector's
    :data:`~experiments.trace.vector.KEYS`), ``components`` (:func:`.compare.component_table`),
    ``side_steps`` (:func:`side_steps`) and the validation layout's ``steps``, ``loader``,
    ``phases`` (:func:`validation_records`)."""
    vec, comps = [], []
    for w, got in done.items():
        vectors = {s: r["vector"] for s, r in got["results"].items()}
        vec += [{"workload": w, "side": s, **v} for s, v in vectors.items() if v is not None]
        if vectors.get("real") is not None:
            comps.append(compare.component_table(w, vectors))
    val = validation_records(done)
    return {"vectors": pd.DataFrame(vec, columns=["workload", "side", *KEYS]),
            "components": pd.concat(comps, ignore_index=True) if comps else pd.DataFrame(),
            "side_steps": side_steps(done), **{k: val[k] for k in RECORDS}}


def facts(done: dict) -> dict:
    """Per workload and side, what ``env.json`` records of a pass (status, why, back end,
    eviction, wall seconds, run folder, launch (warm: forked from the pass's warm parent; fresh),
    DLIO's command and config, and for every side but real the ``compute`` hour factor it was
    given, :func:`.sides.carried_model`)."""
    keep = ("status", "why", "command", "config_file", "dlio_version", "wall_s")
    return {w: {s: {k: r.get(k) for k in ("status", "why", "backend", "eviction", "wall_s", "run_dir", "launch")}
                | {"dlio": {k: v for k, v in (r.get("dlio") or {}).items() if k in keep}}
                | ({"compute": got["compute"]} if s != "real" and got.get("compute") else {})
                for s, r in got["results"].items()}
            for w, got in done.items()}


STEP_COLS = ["workload", "side", "rank", "samples", "data_ns", "compute_ns"]


def side_steps(done: dict) -> pd.DataFrame:
    """The steady steps of every measured side (columns :data:`STEP_COLS`; ns), the samples of
    the throughputs' intervals (:func:`.compare.step_rates`): our programs' steps as
    :func:`experiments.workloads.fits.steady` keeps them, DLIO's train steps without each
    epoch's first (as :func:`.sides.throughput_row` counts them), ``samples`` = the batch size."""
    from ..workloads.fits import steady

    parts = []
    for w, got in done.items():
        for side, r in got["results"].items():
            if r.get("status") != "measured":
                continue
            if side == "dlio":
                st = (r.get("dlio") or {}).get("steps")
                if st is None or not len(st):
                    continue
                st = st[st["phase"] == "train"]
                if len(st) and (st.groupby(["rank", "epoch"]).size() > 1).all():
                    st = st[st["step"] > st.groupby(["rank", "epoch"])["step"].transform("min")]
                parts.append(pd.DataFrame({"workload": w, "side": side, "rank": st["rank"].to_numpy(),
                                           "samples": float(r["batch_size"]),
                                           "data_ns": st["load_s"].to_numpy(dtype=float) * 1e9,
                                           "compute_ns": st["compute_s"].to_numpy(dtype=float) * 1e9}))
                continue
            st = got["records"].get(side, {}).get("steps")
            if st is None or not len(st):
                continue
            st = steady(st)
            parts.append(st.assign(workload=w, side=side)[STEP_COLS])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=STEP_COLS)


def validation_records(done: dict) -> dict:
    """The step, loader and phase records of the sides that ran our programs, in the workload
    stages' layout (``variant`` = the side): ``steps``, ``loader``, ``phases``."""
    parts = {k: [] for k in RECORDS}
    for got in done.values():
        for rec in got["records"].values():
            for k in parts:
                if len(rec.get(k, [])):
                    parts[k].append(rec[k])
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}


def timeline_inputs(done: dict) -> list[dict]:
    """Per traced side, what its Fig 5.7/5.12/5.18 timeline draws: ``name`` (the figure's
    file name), ``workload``, ``side``, ``title``, ``bin_s`` (s), ``io`` (MB/s per bin,
    :func:`experiments.trace.series.io_series`) and ``phases`` (the application log's, or
    None). Call it before the checkpoints are removed (the block rows are filtered by their
    extents)."""
    from ..trace import phases
    from ..trace import series as timeline   # the series a timeline draws (no figure here)

    out = []
    for w, got in done.items():
        for side, r in got["results"].items():
            tr = r.get("trace")
            if tr is None:
                continue
            logs = sorted(Path(r["run_dir"]).glob("app-r*.jsonl"))
            bin_s = timeline.auto_bin(tr)
            io = timeline.io_series(tr, bin_s, r["data"], r["checkpoint"], r.get("block_files") or None)
            title = (f"{compare.THESIS_TIMELINE[w]} ({w.upper()}): {side}, batch {r['batch_size']}, "
                     f"{r['ranks']} ranks, traced with {tr.backend}")
            out.append({"name": f"{TIMELINE_FILE[w]}_{side}", "workload": w, "side": side, "title": title,
                        "bin_s": bin_s, "io": io, "phases": phases.read(logs) if logs else None})
    return out


def median_vectors(rows: pd.DataFrame, vectors: pd.DataFrame) -> dict:
    """{workload: {side: its vector's median over the passes, or None when no pass measured it}}
    for every workload and side of ``rows``."""
    out: dict = {}
    for (w, side), _ in rows.groupby(["workload", "side"], sort=False):
        v = vectors[(vectors["workload"] == w) & (vectors["side"] == side)] if len(vectors) else vectors
        out.setdefault(w, {})[side] = ({k: float(v[k].median()) if k in v and v[k].notna().any() else float("nan")
                                        for k in KEYS} if len(v) else None)
    return out


SIM_COLS = ["workload", "side", "run", "repeat", "made_by", "similarity", "status", "why", "backend",
            "components_used"]


def runs_table(rows: pd.DataFrame) -> pd.DataFrame:
    """``runs.csv`` of the validation layout: the passes of the sides that ran our programs."""
    d = rows[(rows["side"] != "dlio") & (rows["status"] == "measured")]
    return pd.DataFrame({"workload": d["workload"], "variant": d["side"], "batch_size": d["batch_size"],
                         "ranks": d["ranks"], "repeat": d["repeat"], "run": d["run"], "made_by": d["made_by"],
                         "wall_seconds": d["wall_s"], "cpu_seconds": d["cpu_seconds"], "load_1min": d["load_1min"],
                         "compute": np.where(d["side"] == "real", "real", "sleep"), "run_dir": d["run_dir"]})


def variance(m) -> pd.DataFrame:
    """``variance.csv``: per workload and side, the between- and within-pass variance of the
    similarity and the throughputs (once a pass) and of the steady steps' data and compute times
    (units inside a pass) (:func:`experiments.repeats.variance.table`); a run's cost is the
    side's wall seconds, a unit's its step's data wait and compute."""
    from ..repeats.variance import table

    steps = m.tables.get("side_steps", pd.DataFrame())
    if len(steps):   # a step's seconds: its data wait and its compute (the side steps' parts)
        steps = steps.assign(step_ns=steps["data_ns"] + steps["compute_ns"])
    # a side's run costs its own wall seconds (its share of the pass), not the pass's
    rows = m.rows.assign(run_s=m.rows["wall_s"]) if "wall_s" in m.rows else m.rows
    return table(rows, ("workload", "side"), ("similarity", "data_sps", "compute_sps"), steps if len(steps) else None,
                 ("data_ns", "compute_ns"), "step_ns" if len(steps) else None)


def timeline_trace(tr):
    """What the report's timeline (:func:`experiments.trace.timeline.plot` given the stage's I/O
    series) draws of a side's full trace: its sampler rows (the utilization row), its meta (when it
    started, the back end; less ``mapped_files``, the per-file mmap table, tens of kB and not
    drawn) and its last event row (that row's ``t_s`` ends the time axis); the I/O row is drawn
    from ``timeline_<workload>_<side>.io.csv``, computed from every event. Some 20 kB where the full
    trace is megabytes: what the shipped reference run carries (stages.py ``unread``)."""
    from ..trace.schema import Trace

    meta = {k: v for k, v in tr.meta.items() if k != "mapped_files"}
    return Trace(events=tr.events.nlargest(1, "t_s"), samples=tr.samples, meta=meta)


def save_timeline_trace(folder: Path, workload: str, side: str, tr) -> dict:
    """:func:`timeline_trace` of ``tr`` (saved by :func:`write` as ``trace_<workload>_<side>.parquet``)
    written into ``folder`` as ``timeline_<workload>_<side>.parquet`` (its samples beside it);
    returns ``timelines.json``'s names: ``trace`` (the file the report reads) and ``full_trace``."""
    name = f"timeline_{workload}_{side}.parquet"
    timeline_trace(tr).save(Path(folder) / name)
    return {"trace": name, "full_trace": f"trace_{workload}_{side}.parquet"}


_FIRST_PASS = ("trace_", "timeline_")   # file prefixes of the first pass's traces and timelines
_FIRST_PASS_FILES = ("timelines.json", "sides.json")


def write(out, m, kept: Passes, params: dict, appending: bool = False, searched: pd.DataFrame | None = None) -> dict:
    """What :func:`measure` returned into ``out`` (a :class:`experiments.output.results.StageResults`):
    the rows and side tables (``m.write``), the tables derived from every pass (module
    docstring), each workload's first pass's traces and timelines (``kept``) and the
    max-accelerators search (``searched``: :func:`search`'s table, ``search.csv``; None leaves the
    one of before). When a decide run appends (``appending``), the traces and timelines of before
    stay; otherwise those of an earlier run are removed first. Returns the metrics."""
    from ..output.results import atomic_write, read_json, write_json
    from ..workloads.fits import step_summary

    if not appending:
        for f in out.dir.iterdir():
            if f.name.startswith(_FIRST_PASS) or f.name in _FIRST_PASS_FILES:
                f.unlink()
    m.variance = variance(m)
    m.write(out)
    if searched is not None:
        out.table("search", searched)
    rows = m.rows
    out.table("similarity", rows[[c for c in SIM_COLS if c in rows]])
    out.table("runs", runs_table(rows))
    steps, loader = m.tables.get("steps", pd.DataFrame()), m.tables.get("loader", pd.DataFrame())
    out.summary(step_summary(steps, loader if len(loader) else None) if len(steps) else pd.DataFrame())
    vec = median_vectors(rows, m.tables.get("vectors", pd.DataFrame()))
    sims = compare.per_side(rows)   # each side's median similarity over its passes
    why: dict = {}
    for r in sims[sims["status"] != "measured"].itertuples():
        why.setdefault(r.workload, {})[r.side] = r.why
    for w, vs in vec.items():
        if vs.get("real") is None:
            continue
        c = compare.component_table(w, vs)
        s = sims[sims["workload"] == w]
        r = rows[rows["workload"] == w].iloc[0]
        n = int(rows.loc[rows["workload"] == w, "run"].nunique())
        text = compare.markdown(c, s, f"{compare.THESIS_TABLE[w]} ({w.upper()}, batch {r['batch_size']}, "
                                      f"{r['ranks']} ranks): each side's median over {n} pass(es)")
        atomic_write(out.path(f"{TABLE_FILE[w]}.md"), lambda p, t=text: p.write_text(t))
        c.to_csv(out.path(f"{TABLE_FILE[w]}.csv"), index=False)
    write_json(out.path("vectors.json"), vec)
    write_json(out.path("why.json"), why)
    side_facts = read_json(out.path("sides.json")) if out.path("sides.json").exists() else {}
    # a decide run's passes leave the first pass's files of a workload as they were
    fresh = [w for w in kept.traces if not (appending and w in side_facts)]
    files = {}   # (workload, side) -> timelines.json's names of its full trace and of what the report reads
    for w in fresh:
        for side, tr in kept.traces[w].items():
            tr.save(out.path(f"trace_{w}_{side}.parquet"))
            files[w, side] = save_timeline_trace(out.dir, w, side, tr)
    listed = [t for t in (read_json(out.path("timelines.json")) if out.path("timelines.json").exists() else [])
              if t["workload"] not in fresh]
    for w in fresh:
        for t in kept.timelines[w]:
            stem = f"timeline_{t['workload']}_{t['side']}"
            out.table(f"{stem}.io", t["io"])
            if t["phases"] is not None:
                out.table(f"{stem}.phases", t["phases"])
            listed.append({k: t[k] for k in ("name", "workload", "side", "title", "bin_s")}
                          | files[t["workload"], t["side"]]
                          | {"io": f"{stem}.io.csv", "phases": f"{stem}.phases.csv" if t["phases"] is not None else None})
    write_json(out.path("timelines.json"), listed)
    side_facts.update({w: {"sides": kept.facts[w], "data": kept.data.get(w)} for w in fresh})
    write_json(out.path("sides.json"), side_facts)
    metrics = {"similarity": compare.headline_similarity(sims)}
    out.metrics(metrics)
    backends = sorted({b for b in rows["backend"].fillna("") if b})
    out.env(params=params, tracer=", ".join(backends), passes=int(rows["run"].nunique()),
            sides={w: f["sides"] for w, f in side_facts.items()},
            data={w: f["data"] for w, f in side_facts.items()}, launch=kept.launch)
    return metrics
