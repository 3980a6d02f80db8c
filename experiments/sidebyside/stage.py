"""The ``traced_comparison`` stage (notebook 52): run every side traced, tabulate, write.

It measures and draws nothing; ``traced_comparison_report`` (notebook 53,
:mod:`.report`) reads what it wrote and makes the figures and claims, so a figure setting
re-runs only the report. ``results/traced_comparison/`` holds

- ``components.csv`` (Tables 5.1-5.3, every workload: one value and one difference column per
  side), ``table_5_1_unet3d.md`` / ``table_5_2_bert.md`` / ``table_5_3_dlrm.md`` (the same as
  Markdown, with each side's similarity to the real run);
- ``similarity.csv`` (workload, side, similarity, status, why, back end);
- ``throughput.csv`` (workload, side: data and compute throughput, see :mod:`.sides`);
- ``side_steps.csv``: every measured side's steady steps (:func:`side_steps`), the samples of
  the throughputs' intervals;
- ``vectors.json``; ``why.json`` (workload -> side -> why it was not measured);
  ``trace_<workload>_<side>.parquet`` (every traced side);
- ``windows.csv``: each measured side's trace cut into :data:`.compare.WINDOWS` windows (equal
  shares of its data reads) and the vector of each (:func:`window_vectors`): the samples of
  the trace findings;
- ``timelines.json`` with ``timeline_<workload>_<side>.io.csv`` and ``.phases.csv``: what
  each side's Fig 5.7/5.12/5.18 timeline draws (:func:`timeline_inputs`), computed while its
  checkpoint files, whose extents filter the block rows, still exist;
- the validation layout of the workload stages for the sides that run our programs
  (``summary.csv`` from :func:`experiments.workloads.fits.step_summary`, ``raw.parquet``
  steps, ``phases.csv``, ``runs.csv``, column ``variant`` = the side), so
  :data:`experiments.workloads.validation.ROWS`'s ``emulator`` row reads this folder;
- ``metrics.json``, ``env.json``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..trace.vector import KEYS
from . import compare, sides

TABLE_FILE = {"unet3d": "table_5_1_unet3d", "bert": "table_5_2_bert", "dlrm": "table_5_3_dlrm"}
TIMELINE_FILE = {"unet3d": "fig5_7_unet3d_timeline", "bert": "fig5_12_bert_timeline",
                 "dlrm": "fig5_18_dlrm_timeline"}


def run_all(cfg, work_root) -> dict:
    """Every workload of ``cfg.traced_comparison.points``: {workload: :func:`.sides.finish_workload`}.
    ``cfg`` holds the sections ``traced_comparison``, ``tiers``, ``seed`` and the workloads'.
    Every side of every workload runs in one tracer session (the probes attach once)."""
    from ..trace import Session

    tc = cfg.traced_comparison
    secs = {w: getattr(cfg, w).model_dump(mode="json") for w in tc.points if hasattr(cfg, w)}
    sides.check_points(tc, secs)
    tier = sides.pick_tier(cfg.tiers, tc.tier)
    work_root = Path(work_root)
    work_root.mkdir(parents=True, exist_ok=True)
    # data staged and DLIO's plans made first: a folder renamed inside a session keeps the name
    # the tracer saw first (staging writes <name>.partial, then renames it)
    prep = {w: sides.prepare_workload(w, secs[w], p, tc, cfg.seed, tier, work_root) for w, p in tc.points.items()}
    with Session(backend=tc.backend, watch=[tier.dir, work_root], quiet=True) as session:
        got = {w: sides.run_workload(prep[w], tc, cfg.seed, session) for w in tc.points}
    return {w: sides.finish_workload(g) for w, g in got.items()}


def tables(done: dict) -> dict:
    """The comparison tables of :func:`run_all`'s result: ``components``, ``similarity``,
    ``throughput`` (DataFrames), ``vectors`` and ``why`` ({workload: {side: ...}}), ``markdown``
    ({workload: text})."""
    comps, sims, tps, md = [], [], [], {}
    vectors, why = {}, {}
    for w, got in done.items():
        res = got["results"]
        vectors[w] = {s: r["vector"] for s, r in res.items()}
        why[w] = {s: r["why"] for s, r in res.items() if r["status"] != "measured"}
        backends = {s: r.get("backend", "") for s, r in res.items()}
        c = compare.component_table(w, vectors[w])
        s = compare.similarity_table(w, vectors[w], why[w], backends)
        comps.append(c)
        sims.append(s)
        tps.append(got["throughput"])
        md[w] = compare.markdown(c, s, f"{compare.THESIS_TABLE[w]} ({w.upper()}, batch "
                                       f"{got['throughput']['batch_size'].iloc[0]}, "
                                       f"{got['throughput']['ranks'].iloc[0]} ranks): this run")
    return {"components": pd.concat(comps, ignore_index=True), "similarity": pd.concat(sims, ignore_index=True),
            "throughput": pd.concat(tps, ignore_index=True), "vectors": vectors, "why": why, "markdown": md,
            "steps": side_steps(done), "windows": window_vectors(done)}


def _bounds(tr, data, t0: float, t1: float, k: int) -> list[float]:
    """``k`` windows' bounds (wall clock, s) over [t0, t1]: at the quantiles of the times of the
    side's reads of its data files, so that window i of every side covers the same share of its
    pass over the data (as equal step ranges would, whatever each side's start-up); equal times
    where the trace has fewer than 2 such reads per window (a memory-mapped data set)."""
    import numpy as np

    from ..trace.schema import VFS_READS
    from ..trace.vector import file_filter

    ev = tr.events
    if len(ev):
        r = ev[(ev["layer"] == "vfs") & ev["op"].isin(list(VFS_READS)) & (ev["error"] == 0)]
        r = r[file_filter(r["path"], data)] if len(r) else r
        ts = r["timestamp"].astype("int64").to_numpy() / 1e9 if len(r) else np.array([])
        if len(ts) >= 2 * k:
            inner = np.quantile(ts, [i / k for i in range(1, k)])
            return [t0, *[float(x) for x in inner], t1]
    return [t0 + (t1 - t0) * i / k for i in range(k + 1)]


def window_vectors(done: dict, k: int = compare.WINDOWS) -> pd.DataFrame:
    """Every measured side's trace cut into ``k`` windows (:func:`_bounds`: equal shares of its
    reads of the data set, from its window's start to its end,
    :func:`experiments.trace.session.cut`) and the Table 4.2 vector of each, with the side's
    own filters (data, checkpoint, block files): one row per workload, side and window
    (``window`` 0..k-1, ``started``/``ended`` wall clock, s, then the vector's keys). The start-up
    before the first reads falls in window 0, the checkpoint after the last in window k-1. A
    /proc-sampled trace (run totals, no timed calls) gives no windows. Call it before the
    checkpoints are removed (the block filter reads their extents)."""
    from ..trace.session import cut
    from ..trace.vector import characteristic_vector

    rows = []
    for w, got in done.items():
        for side, r in got["results"].items():
            tr = r.get("trace")
            if r.get("status") != "measured" or tr is None:
                continue
            if tr.meta.get("backend") not in ("bpftrace", "strace"):
                continue   # /proc sampling: its amounts are the run's totals, not per window
            t0, t1 = tr.meta.get("started"), tr.meta.get("ended")
            if not (isinstance(t0, (int, float)) and isinstance(t1, (int, float)) and t1 > t0):
                continue
            filters = {"data": [Path(p) for p in r["data"]], "checkpoint": [Path(p) for p in r["checkpoint"]],
                       "block_files": [Path(p) for p in r["block_files"]]}
            b = _bounds(tr, filters["data"], t0, t1, k)
            for i in range(k):
                # cut keeps both ends; a call on a boundary belongs to the later window only
                v = characteristic_vector(cut(tr, b[i], b[i + 1] - 1e-6 if i < k - 1 else b[i + 1]), **filters)
                rows.append({"workload": w, "side": side, "window": i, "started": b[i], "ended": b[i + 1], **v})
    return pd.DataFrame(rows, columns=["workload", "side", "window", "started", "ended", *KEYS])


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
    """The sides that ran our programs in the workload stages' layout (``steps``, ``loader``,
    ``phases``, ``runs``, ``summary``), ``variant`` = the side."""
    from ..workloads.fits import step_summary

    parts = {"steps": [], "loader": [], "phases": []}
    runs = []
    for w, got in done.items():
        for side, rec in got["records"].items():
            for k in parts:
                if len(rec.get(k, [])):
                    parts[k].append(rec[k])
            if len(rec.get("steps", [])):
                r = got["results"][side]
                u = rec.get("usage", {})
                runs.append({"workload": w, "variant": side, "batch_size": r["batch_size"], "ranks": r["ranks"],
                             "repeat": 0, "wall_seconds": u.get("wall_s", r.get("wall_s")),
                             "cpu_seconds": u.get("cpu_s", np.nan),
                             "load_1min": float(np.mean(u.get("load_1min", [np.nan]))),
                             "compute": "real" if side == "real" else "sleep", "run_dir": r["run_dir"]})
    out = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in parts.items()}
    out["runs"] = pd.DataFrame(runs)
    out["summary"] = step_summary(out["steps"], out["loader"] if len(out["loader"]) else None) \
        if len(out["steps"]) else pd.DataFrame()
    return out


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


def write(out, done: dict, tabs: dict, params: dict) -> dict:
    """Everything :func:`run_all` and :func:`tables` measured into ``out`` (a
    :class:`experiments.results.StageResults`), the figures' inputs included; returns the
    metrics."""
    from ..results import atomic_write, write_json

    val = validation_records(done)
    out.raw(val["steps"])
    out.summary(val["summary"])
    for k in ("phases", "runs", "loader"):
        if len(val[k]):
            out.table(k, val[k])
    out.table("components", tabs["components"])
    out.table("similarity", tabs["similarity"])
    out.table("throughput", tabs["throughput"])
    out.table("side_steps", tabs["steps"])
    if tabs.get("windows") is not None:
        out.table("windows", tabs["windows"])
    for w, text in tabs["markdown"].items():
        atomic_write(out.path(f"{TABLE_FILE[w]}.md"), lambda p, t=text: p.write_text(t))
        tabs["components"][tabs["components"]["workload"] == w].to_csv(out.path(f"{TABLE_FILE[w]}.csv"), index=False)
    write_json(out.path("vectors.json"), tabs["vectors"])
    write_json(out.path("why.json"), tabs["why"])
    for w, got in done.items():
        for side, r in got["results"].items():
            if r.get("trace") is not None:
                r["trace"].save(out.path(f"trace_{w}_{side}.parquet"))
    listed = []
    for t in timeline_inputs(done):
        stem = f"timeline_{t['workload']}_{t['side']}"
        out.table(f"{stem}.io", t["io"])
        if t["phases"] is not None:
            out.table(f"{stem}.phases", t["phases"])
        listed.append({k: t[k] for k in ("name", "workload", "side", "title", "bin_s")}
                      | {"trace": f"trace_{t['workload']}_{t['side']}.parquet", "io": f"{stem}.io.csv",
                         "phases": f"{stem}.phases.csv" if t["phases"] is not None else None})
    write_json(out.path("timelines.json"), listed)
    metrics = {"similarity": compare.headline_similarity(tabs["similarity"])}
    out.metrics(metrics)
    keep = ("status", "why", "command", "config_file", "dlio_version", "wall_s")
    facts = {w: {s: {k: r.get(k) for k in ("status", "why", "backend", "eviction", "wall_s", "run_dir")}
                 | {"dlio": {k: v for k, v in (r.get("dlio") or {}).items() if k in keep}}
                 for s, r in got["results"].items()}
             for w, got in done.items()}
    backends = sorted({r.get("backend") for got in done.values() for r in got["results"].values() if r.get("backend")})
    out.env(params=params, tracer=", ".join(backends), sides=facts,
            data={w: got["data_dir"] for w, got in done.items()})
    return metrics
