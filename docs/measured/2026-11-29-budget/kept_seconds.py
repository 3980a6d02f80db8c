"""The shipped reference run's own run seconds of the runs the cut profile keeps (its per-run
rows), beside the plan's stage-average: the forecast takes every run of a stage at its mean, and
the cuts keep cheaper runs than the mean. Usage: python kept_seconds.py [REFERENCE_CHECKOUT]"""
import sys
from pathlib import Path

import pandas as pd

ref = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ref1") / "results"
times = {r.stage: r for r in pd.read_csv(Path(__file__).parents[3] / "env/reference-times.csv", comment="#").itertuples()}
sweep = {"unet3d": [1, 2, 4], "bert": [1, 2, 4], "dlrm": [512, 2048, 8192]}

s = pd.read_csv(ref / "workload_sleep/runs.csv")
keep = s[(s.ranks == 1) & (s.batch_size == s.workload.map(lambda w: sweep[w][0]))]
r = pd.read_csv(ref / "workload_random/runs.csv")
keepr = r[r.batch_size == r.workload.map(lambda w: sweep[w][-1])]
c = pd.read_parquet(ref / "alexnet_checkpoint/raw.parquet")
keepc = c[c.repeat <= 10]   # the warm-up round (0) and the first 10
for name, rows, kept in (("workload_sleep", s, keep), ("workload_random", r, keepr), ("alexnet_checkpoint", c, keepc)):
    t = times[name]
    print(f"{name}: reference {len(rows)} runs, {rows.run_s.sum():.0f} s of runs + {t.fixed_s:.0f} s fixed = {t.wall_s:.0f} s; "
          f"kept {len(kept)} runs, {kept.run_s.sum():.0f} s of runs + {t.fixed_s:.0f} s = {kept.run_s.sum() + t.fixed_s:.0f} s "
          f"(the plan: {len(kept)} x {t.run_s:.2f} + {t.fixed_s:.0f} = {len(kept) * t.run_s + t.fixed_s:.0f} s)")
print("workload_sleep's RetinaNet runs (1 configuration x 3 at the new params) are not in the reference run: "
      "its 3 are counted in the plan, not above")
