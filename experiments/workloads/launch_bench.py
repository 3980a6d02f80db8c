"""Measured, not assumed: are warm-launched runs as independent as fresh ones, and what do they save?

``python -m experiments.workloads.launch_bench --data D --work W --out DIR`` runs one workload (DLRM by default,
the default profile's model and steps) side by side under both launches, through the one
measuring-stage loop: the configurations (launch x ranks) once a round, in a seeded order, so
that the two launches alternate in one run and meet the same load. It writes ``DIR/runs.csv``
(one row per run: wall and start-up seconds, CPU seconds, load), ``DIR/steps.csv`` (every step),
``DIR/variance.csv`` (:func:`experiments.repeats.variance.table`: the between-run and within-run
variance of each configuration) and ``DIR/compare.csv``: per ranks and quantity, each launch's
between-run share with a bootstrap interval over its runs, and the median start-up seconds.

The rule (docs/statistics.md, "Warm launch"): the between-run share of the step times under the
warm launch must not be smaller than under fresh processes. A smaller share would mean the
runs share state (the warm parent's), so that runs would look more alike than independent
runs are, and intervals over them too narrow.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

LAUNCHES = ("fresh", "warm")
KEYS = ("launch", "ranks", "batch_size")


def share_interval(rows: pd.DataFrame, steps: pd.DataFrame, q: str, draws: int = 1000, seed: int = 0,
                   level: float = 0.95) -> tuple[float, float, float]:
    """Between-run share of ``q`` (:func:`experiments.repeats.variance.table`) over these runs,
    and a percentile bootstrap interval over the runs (drawn with replacement, each drawn run with
    all its steps)."""
    from ..repeats.variance import table

    def share(r: pd.DataFrame, s: pd.DataFrame) -> float:
        t = table(r, ["launch"], (), s, (q,))
        return float(t["between_share"].iloc[0]) if len(t) else float("nan")

    point = share(rows, steps)
    rng = np.random.default_rng(seed)
    runs = rows["run"].to_numpy()
    by_run = {r: g for r, g in steps.groupby("run")}
    got = []
    for _ in range(draws):
        pick = rng.choice(runs, len(runs))
        r = pd.DataFrame({"run": np.arange(len(pick)), "launch": rows["launch"].iloc[0], "run_s": 1.0})
        s = pd.concat([by_run[p].assign(run=i) for i, p in enumerate(pick)], ignore_index=True)
        got.append(share(r, s))
    lo, hi = np.nanquantile(got, [(1 - level) / 2, (1 + level) / 2])
    return point, float(lo), float(hi)


def compare(rows: pd.DataFrame, steps: pd.DataFrame, quantities=("compute_ns", "data_ns", "step_ns"),
            draws: int = 1000) -> pd.DataFrame:
    """Per ranks, batch size and step quantity: each launch's between-run share (and interval),
    runs, median start-up and wall seconds."""
    out = []
    for (g, b), grp in rows.groupby(["ranks", "batch_size"]):
        for q in quantities:
            rec = {"ranks": g, "batch_size": b, "quantity": q}
            for mode in LAUNCHES:
                r = grp[grp["launch"] == mode]
                s = steps[steps["run"].isin(r["run"])]
                s = s[s["step"] > 0]   # the first step of a run (its warm-up) is left out, as fits.steady
                p, lo, hi = share_interval(r, s, q, draws)
                rec |= {f"{mode}_runs": len(r), f"{mode}_share": p, f"{mode}_share_lo": lo,
                        f"{mode}_share_hi": hi, f"{mode}_startup_s": float(r["startup_s"].median()),
                        f"{mode}_wall_s": float(r["wall_seconds"].median())}
            rec["warm_share_not_smaller"] = bool(rec["warm_share"] >= rec["fresh_share"])
            rec["intervals_overlap"] = bool(rec["warm_share_hi"] >= rec["fresh_share_lo"]
                                            and rec["fresh_share_hi"] >= rec["warm_share_lo"])
            out.append(rec)
    return pd.DataFrame(out)


def main(argv=None) -> int:
    from ..settings import config, paths
    from .. import repeats
    from ..host import warm_launch
    from . import data_bert, data_dlrm, data_unet3d, launch

    ap = argparse.ArgumentParser(prog="python -m experiments.workloads.launch_bench", description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="dlrm", choices=("unet3d", "bert", "dlrm"))
    ap.add_argument("--ranks", type=int, nargs="+", default=[1])
    ap.add_argument("--batch-size", type=int, default=None, help="default: the profile's smallest")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--set", nargs="*", default=[], help="PART.KEY=YAML overrides of the workload's section")
    ap.add_argument("--data", type=Path, required=True, help="the data set (generated when missing)")
    ap.add_argument("--out", type=Path, required=True, help="where the tables go")
    ap.add_argument("--work", type=Path, required=True, help="where the runs' folders and checkpoints go")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args(argv)
    if a.rounds < 2:
        ap.error(f"--rounds = {a.rounds}: allowed: 2 or more (a variance between runs needs two)")
    import yaml

    params = yaml.safe_load(open(paths.params_file()))
    raw = params[a.workload]
    for kv in a.set:
        key, val = kv.split("=", 1)
        part, k = key.split(".", 1)
        raw.setdefault(part, {})[k] = yaml.safe_load(val)
    cfg = config.validate(a.workload, raw)
    seed = params["seed"] if a.seed is None else a.seed
    if not a.data.exists():
        gen = {"unet3d": data_unet3d, "bert": data_bert, "dlrm": data_dlrm}[a.workload].generate
        print(gen(a.data, cfg.data, seed), flush=True)
    b = a.batch_size or min(cfg.sweep.batch_sizes)
    section = cfg.model_dump(mode="json")
    section["train"]["checkpoint_dir"] = str(a.work / "checkpoints")
    runs_dir = a.work / "runs"

    with warm_launch.Parents(multi_rank=True) as parents:
        parents.start([launch.framework(a.workload)])
        def run_one(c: dict, repeat: int):
            d = runs_dir / f"{c['launch']}-G{c['ranks']}-r{repeat}"
            s = launch.run_config(a.workload, section, b, c["ranks"], seed, a.data, d, repeat=repeat,
                                  parents=parents if c["launch"] == "warm" else None)
            got = launch.collect(d)
            return repeats.Run({"wall_seconds": s, "startup_s": launch.startup_seconds(d),
                                "cpu_seconds": got["usage"]["cpu_s"],
                                "load_1min": float(np.mean(got["usage"]["load_1min"]))}, {"steps": got["steps"]})

        configs = [{"launch": m, "ranks": g, "batch_size": b} for g in a.ranks for m in LAUNCHES]
        st = repeats.MeasuringStage("launch_bench", KEYS, configs, run_one, repeats.RoundsPlan(a.rounds, a.rounds),
                                    seed, tables=("steps",), quantities=("wall_seconds", "startup_s"),
                                    units="steps", unit_quantities=("compute_ns", "data_ns", "step_ns"),
                                    unit_seconds="step_ns", progress="launch_bench runs")
        m = repeats.measure(st)
        import_s = parents.import_s
    a.out.mkdir(parents=True, exist_ok=True)
    m.rows.to_csv(a.out / "runs.csv", index=False)
    m.tables["steps"].to_csv(a.out / "steps.csv", index=False)
    m.variance.to_csv(a.out / "variance.csv", index=False)
    cmp = compare(m.rows, m.tables["steps"])
    cmp.to_csv(a.out / "compare.csv", index=False)
    (a.out / "facts.json").write_text(json.dumps({"workload": a.workload, "batch_size": b, "ranks": a.ranks,
                                                  "rounds": a.rounds, "parent_import_s": import_s,
                                                  "argv": sys.argv}, indent=1))
    print(cmp.to_markdown(index=False, floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
