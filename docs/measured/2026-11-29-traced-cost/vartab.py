"""The variance table (experiments.sidebyside.stage.variance's call) of a drive2.py run's passes, beside the
default run of 2f0be98's (/tmp/repro1): between-pass share per workload, side and quantity."""
import sys
import pandas as pd
from experiments.repeats.variance import table

tag, wl = sys.argv[1], sys.argv[2]
rows = pd.read_csv(f"{tag}.rows.csv")
steps = pd.read_csv(f"{tag}.steps.csv")
steps = steps.assign(step_ns=steps["data_ns"] + steps["compute_ns"])
v = table(rows.assign(run_s=rows["wall_s"]), ("workload", "side"), ("similarity", "data_sps", "compute_sps"),
          steps, ("data_ns", "compute_ns"), "step_ns")
ref = pd.read_csv("/tmp/repro1/results/traced_comparison/variance.csv")
keep = ["quantity", "configuration", "runs", "between_share"]
m = v[keep].merge(ref[keep], on=["quantity", "configuration"], suffixes=("_after", "_before"))
m = m[m["configuration"].str.contains(f"workload={wl}") & m["quantity"].isin(["data_ns", "compute_ns"])]
m["not_smaller"] = m["between_share_after"] >= m["between_share_before"] - 1e-12
print(m.round(3).to_string(index=False))
