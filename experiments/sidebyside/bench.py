"""Benchmark tables (``make bench``; not tests, numbers from a shared box are noisy):

1. **client load per tier**: our emulator at zero compute (:func:`experiments.emulator.bench.measure`)
   and DLIO at ``computation_time`` 0 (:func:`experiments.dlio.bench.measure`), each beside fio
   reading the same files with the same request sizes, in one run, cold against cold and warm
   against warm (:func:`client_table`). Goal (issue 12): the emulator at >= 0.8 of fio's
   bytes/s (cold) and ahead of DLIO. DLIO's bytes/s is its samples/s x
   the bytes per sample it read; each fraction is against the fio job that mirrors that
   program's own requests (for DLRM DLIO is judged in requests/s, see its module).
2. **per workload**: the ``traced_comparison`` stage's emulator, real and DLIO data throughput
   (MB/s, and samples/s as the thesis's Sec 4.4) and similarity to the real run (read from ``results/traced_comparison``), and the
   most accelerators at AU >= 90 % (:func:`experiments.emulator.search.tier_table`) on each
   tier with this box's fitted compute model and the thesis's V100 model, searched up to
   ``--search-limit``.

``python -m experiments.sidebyside.bench [--tiers mem,disk] [--workloads unet3d,bert,dlrm]
[--search-limit 2] [--skip-client]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ..settings import paths

MODELS = ("fit", "thesis-v100")


def client_table(emu: pd.DataFrame, dl: pd.DataFrame) -> pd.DataFrame:
    """One row per (tier, workload): emulator and DLIO bytes/s with their fio references,
    **cold against cold and warm against warm**, each column named for which (``emu``: emulator
    bench rows, median over runs; ``dl``: DLIO bench rows).

    Cold: the emulator's first (UNET3D) or only pass after eviction, DLIO's first epoch
    (``dlio_cold``), fio after eviction; warm: UNET3D's second epoch, DLIO's later epochs
    (median, ``dlio_warm``), fio again from the page cache. DLIO's average over all its epochs
    mixes the two (the page-cache trap) and is not compared. Where DLIO is judged in requests/s
    (DLRM: ``basis`` requests), its bytes/s is requests/s x the bytes per sample it read."""
    cols = {"emulator_MBps": "emulator_cold_MBps", "fio_MBps": "fio_cold_MBps_emulator_job",
            "fraction_of_fio": "emulator_cold_fraction_of_fio",
            "emulator_warm_MBps": "emulator_warm_MBps", "fio_warm_MBps": "fio_warm_MBps_emulator_job",
            "warm_fraction_of_fio": "emulator_warm_fraction_of_fio"}
    e = emu.reindex(columns=["tier", "workload", *cols]).groupby(["tier", "workload"], as_index=False) \
        .median(numeric_only=True).rename(columns=cols)
    if "bound" in emu:
        from ..emulator.bench import repeats_bound

        b = emu.groupby(["tier", "workload"], as_index=False)["bound"].agg(repeats_bound)
        e = e.merge(b.rename(columns={"bound": "emulator_bound"}), on=["tier", "workload"], how="left")
    d = dl.copy()
    nan = pd.Series(float("nan"), index=d.index)
    if len(d):
        per = d.get("bytes_per_sample", nan)
        req = d.get("basis", pd.Series("bytes", index=d.index)).eq("requests")
        for kind in ("cold", "warm"):
            v = d.get(f"dlio_{kind}", nan)
            d[f"dlio_{kind}_MBps"] = v.where(~req, v * per) / 1e6
            f = d.get(f"fio_{kind}", nan)
            d[f"fio_{kind}_MBps_dlio_job"] = f.where(~req, f * per) / 1e6
        d = d.rename(columns={"dlio_fraction_of_fio": "dlio_cold_fraction_of_fio",
                              "dlio_warm_fraction_of_fio": "dlio_warm_fraction_of_fio"})
        keep = [c for c in ("tier", "workload", "status", "dlio_cold_MBps", "fio_cold_MBps_dlio_job",
                            "dlio_cold_fraction_of_fio", "dlio_warm_MBps", "fio_warm_MBps_dlio_job",
                            "dlio_warm_fraction_of_fio", "basis", "why") if c in d]
        d = d[keep].rename(columns={"status": "dlio_status", "why": "dlio_why", "basis": "dlio_basis"})
        t = e.merge(d, on=["tier", "workload"], how="outer")
    else:
        t = e.assign(dlio_status="not measured", dlio_cold_MBps=float("nan"), dlio_warm_MBps=float("nan"))
    t["emulator_goal_0.8_cold"] = t["emulator_cold_fraction_of_fio"] >= 0.8
    for kind in ("cold", "warm"):
        a, b = t.get(f"emulator_{kind}_MBps"), t.get(f"dlio_{kind}_MBps")
        ahead = (a > b).astype(object)
        ahead[a.isna() | b.isna()] = None   # not measured on a side
        t[f"emulator_ahead_of_dlio_{kind}"] = ahead
    return t


def stage_table() -> pd.DataFrame:
    """Per workload from the traced_comparison stage: data throughput (MB/s), where its reads came
    from (the device audit: ``read_from``, ``device_read_ratio``) and similarity to the real run
    of the emulator, the real run and DLIO (NaN where not measured)."""
    d = paths.results_dir("traced_comparison")
    if not (d / "throughput.csv").exists():
        raise FileNotFoundError(f"{d / 'throughput.csv'}: run `dvc repro traced_comparison` first")
    tp, sims = pd.read_csv(d / "throughput.csv"), pd.read_csv(d / "similarity.csv")
    rows = []
    for w, g in tp.groupby("workload", sort=False):
        t, s = g.set_index("side"), sims[sims["workload"] == w].set_index("side")
        r = {"workload": w, "batch_size": int(t["batch_size"].iloc[0]), "ranks": int(t["ranks"].iloc[0])}
        for side in ("real", "emulator", "dlio"):
            r[f"{side}_MBps"] = float(t["MBps"].get(side, float("nan")))
            if "read_from" in t:   # the device audit: cache where the figure was the page cache's
                r[f"{side}_read_from"] = t["read_from"].get(side, "not measured")
                r[f"{side}_device_read_ratio"] = float(t["device_read_ratio"].get(side, float("nan")))
            r[f"{side}_data_sps"] = float(t["data_sps"].get(side, float("nan")))
            if side != "real":
                r[f"{side}_similarity"] = float(s["similarity"].get(side, float("nan")))
        rows.append(r)
    return pd.DataFrame(rows)


def llm_checkpoint_rows() -> pd.DataFrame:
    """The ``llm_checkpoint`` stage's phases that reached the storage, as rows of the storage
    engineer's table (:func:`experiments.emulator.llm_report.engineer_rows`); empty when that
    stage has not run."""
    from ..output import results
    from ..emulator import llm_report

    try:
        s, env = results.load("llm_checkpoint"), results.load("llm_checkpoint", "env.json")
    except FileNotFoundError:
        return pd.DataFrame()
    return llm_report.engineer_rows(s, env["layout"]["model"])


def main(argv=None) -> int:
    from ..settings import config
    from ..dlio import bench as dlio_bench
    from ..emulator import bench as emu_bench

    ap = argparse.ArgumentParser(prog="python -m experiments.sidebyside.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiers", default=None, help="tier names (comma list); default: every tier")
    ap.add_argument("--workloads", default="unet3d,bert,dlrm")
    ap.add_argument("--search-limit", type=int, default=2)
    ap.add_argument("--skip-client", action="store_true", help="only the per-workload table")
    a = ap.parse_args(argv)
    ws = a.workloads.split(",")
    cfg = config.load(tiers=None)
    tiers = [t for t in cfg.tiers if a.tiers is None or t.name in a.tiers.split(",")]
    if not tiers or any(w not in ("unet3d", "bert", "dlrm") for w in ws) or a.search_limit < 0:
        print(f"error: --tiers {a.tiers!r} (allowed: {', '.join(t.name for t in cfg.tiers)}), --workloads "
              f"{a.workloads!r} (from unet3d, bert, dlrm), --search-limit {a.search_limit} (>= 0)", file=sys.stderr)
        return 2
    out = Path(tempfile.mkdtemp(prefix="sidebyside-bench-"))
    wide = {"display.width": 220, "display.max_colwidth": 70}
    if not a.skip_client:
        load = emu_bench.measure(tiers, ws, runs=1, out_root=out / "emulator")
        t = client_table(load, dlio_bench.measure(",".join(t.name for t in tiers), ws, 1, out / "dlio"))
        print("\nclient load per tier: emulator (zero compute) and DLIO (computation_time 0), each beside fio "
              "on the same files and requests, cold against cold (first epoch / one pass, fio after eviction) "
              "and warm against warm (later epochs, fio from the page cache) (MB/s = 10^6 B/s; goal: "
              "emulator >= 0.8 of fio cold and ahead of DLIO)")
        with pd.option_context(*sum(wide.items(), ())):
            print(t.round(3).to_string(index=False))
    try:
        s = stage_table()
        print("\nper workload, from results/traced_comparison: data throughput (MB/s), where its reads came from "
              "(device audit: device or page cache) and similarity to the real run")
        with pd.option_context(*sum(wide.items(), ())):
            print(s.round(4).to_string(index=False))
    except FileNotFoundError as e:
        print(f"\nper workload: not measured ({e})")
    if a.search_limit:
        from ..emulator.search import tier_table

        m = tier_table(tiers, ws, a.search_limit, out / "search", MODELS)
        print(f"\nmost accelerators at AU >= 90 % (searched up to {a.search_limit}), per tier and compute model")
        with pd.option_context(*sum(wide.items(), ())):
            print(m.to_string(index=False))
        if not a.skip_client:
            # and LLM checkpointing's write and read phases, from results/llm_checkpoint
            t = pd.concat([emu_bench.engineer_table(m, load), llm_checkpoint_rows()], ignore_index=True)
            print("\n" + emu_bench.engineer_markdown(t))
    shutil.rmtree(out, ignore_errors=True)          # the runs' folders; the tables are printed
    return 0


if __name__ == "__main__":
    sys.exit(main())
