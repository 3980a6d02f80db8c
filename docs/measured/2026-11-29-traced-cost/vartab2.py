"""Between-pass shares (the stage's variance table, experiments.repeats.variance.table as
experiments.sidebyside.stage.variance calls it) of drive2.py runs, side by side: python vartab2.py TAG..."""
import sys
import pandas as pd
from experiments.repeats.variance import table

out = []
for tag in sys.argv[1:]:
    rows = pd.read_csv(f"{tag}.rows.csv")
    steps = pd.read_csv(f"{tag}.steps.csv")
    steps = steps.assign(step_ns=steps["data_ns"] + steps["compute_ns"])
    v = table(rows.assign(run_s=rows["wall_s"]), ("workload", "side"), ("similarity", "data_sps", "compute_sps"),
              steps, ("data_ns", "compute_ns"), "step_ns")
    v = v[v["quantity"].isin(["data_ns", "compute_ns"])]
    out.append(v.set_index(["configuration", "quantity"])[["runs", "units", "between_share"]].add_suffix(f" {tag}"))
print(pd.concat(out, axis=1).round(3).to_string())
