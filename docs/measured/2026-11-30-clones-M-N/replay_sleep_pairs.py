"""The workload_validation claims of a stored run, recomputed by this checkout's code beside the
stored ones (the sleep row's compute throughput paired by round: report.measure_sleep_compute).

    DLIO_ROOT=<project after dvc repro> python replay_sleep_pairs.py > replay-sleep-<X>.txt
"""
import pandas as pd

from experiments import repeats
from experiments.settings import paths
from experiments.output import results
from experiments.statistics import stats
from experiments.workloads import compute_model, report, validation

loaded = validation.ROWS + [validation.Row(v, l, "workload_sleep", v) for v, l in validation.FIG_A3.items()][1:] \
    + validation.BESIDE
summary, steps, phases, loader, runs = (validation.load_rows(loaded, table=t) for t in
                                        ("summary.csv", "raw.parquet", "phases.csv", "loader.csv", "runs.csv"))
model = compute_model.load(paths.results_dir("workload_sleep") / "compute_model.json")
beside = [r.key for r in validation.BESIDE]
modelled = steps[steps["workload"].isin(list(model.workloads)) & ~steps["row"].isin(beside)]
au = validation.utilization(modelled, phases, model)
au_steps = validation.au_steps(modelled, phases, model)
env = results.read_json(paths.results_dir("workload_sleep") / "env.json")
ds = paths.results_dir("workload_random") / "datasets.csv"
with stats.corrected_level(repeats.level_of(steps)):
    new = {c["id"]: c for c in report.validation_claims(
        summary, au, steps[steps["row"].isin(list(validation.FIG_A3))], model, env["ranks"],
        pd.read_csv(ds) if ds.exists() else None, runs, steps=steps, loader=loader, au_steps=au_steps)}
old = pd.read_csv(paths.results_dir("claims") / "claims.csv").set_index("id")
print(f"{paths.results_dir('claims').parent.parent}: workload_validation rows that changed, stored against recomputed\n")
f = lambda v, lo, hi, vd: " ".join(("-" if x is None or x != x else f"{float(x):.3g}") for x in (v, lo, hi)) + f" {vd}"  # noqa: E731
for i, n in sorted(new.items()):
    o = old.loc[i] if i in old.index else None
    a = f(o["our_value"], o["ci_low"], o["ci_high"], o["verdict"]) if o is not None else "-"
    b = f(n["our_value"], n["ci_low"],
          n["ci_high"], n["verdict"])
    if "sleep-compute-throughput" in i or (o is not None and o["verdict"] != n["verdict"]):
        print(f"{i:42s} stored {a:42s} now {b}\n{'':42s} {n['ci_method']}")
