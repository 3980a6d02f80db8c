"""Split each hour factor of a sleep row into the fit line's miss and the box's move (factors-L.txt).

For every real run beside the sleep row (results/workload_sleep), at its (G, B): its steady mean
compute time ("now"), the mean the fit's own runs measured there ("then": workload_fits'
per-configuration normal fits, raw.parquet) and the fit's line there. now/line is the factor
f6594b6 gave (against the line); now/then the one given since (against the fit's runs);
then/line is the line's miss at that point.

    python factors.py <project after dvc repro> > factors-L.txt
"""
import json
import sys
from pathlib import Path

import pandas as pd

from experiments.workloads import fits

root = Path(sys.argv[1])
nf = pd.read_parquet(root / "results/workload_fits/raw.parquet")
model = json.loads((root / "results/workload_fits/compute_model.json").read_text())
steps = pd.read_parquet(root / "results/workload_sleep/raw.parquet")
runs = pd.read_csv(root / "results/workload_sleep/runs.csv")
rows = []
for (w, r), g in steps[steps["variant"] == "real"].groupby(["workload", "repeat"]):
    for x in fits.normal_fits(g).itertuples():
        then = nf[(nf.workload == w) & (nf.ranks == x.ranks) & (nf.batch_size == x.batch_size)]["mean_s"].iloc[0]
        c = model["workloads"][w]["mean"]["coef"]
        line = c["G"] * x.ranks + c["B"] * x.batch_size + c["c"]
        given = runs[(runs.workload == w) & (runs.variant == "sleep") & (runs.repeat == r)]["compute_scale"]
        rows.append({"workload": w, "round": r, "G": x.ranks, "B": x.batch_size, "now_s": x.mean_s, "then_s": then,
                     "line_s": line, "now/line": x.mean_s / line, "now/then": x.mean_s / then,
                     "then/line": then / line, "given": float(given.iloc[0]) if len(given) else float("nan")})
print(f"{root}: the sleep row's real runs beside it, per round; seconds a step (steady mean)")
print("given: the factor the round's sleep runs were given (this run's code)\n")
print(pd.DataFrame(rows).round(4).to_string(index=False))
