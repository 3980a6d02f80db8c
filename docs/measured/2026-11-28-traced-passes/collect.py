"""Copy what the traced comparison's three passes measured into this records folder.

``python collect.py OUT ROOT``: ROOT is the project folder the stage and its report wrote
(``results/traced_comparison``, ``results/traced_comparison_report``)."""

import json
import shutil
import sys
from pathlib import Path

import pandas as pd

out, root = Path(sys.argv[1]), Path(sys.argv[2])
m, r = root / "results/traced_comparison", root / "results/traced_comparison_report"
for f in ("throughput.csv", "variance.csv", "rounds.json", "table_5_1_unet3d.md", "table_5_2_bert.md",
          "table_5_3_dlrm.md"):
    shutil.copy2(m / f, out / f)
env = json.loads((m / "env.json").read_text())
(out / "env.json").write_text(json.dumps({k: env[k] for k in ("captured_at", "host", "cpu", "memory_bytes", "kernel",
                                                             "git", "tracer", "passes", "run") if k in env}, indent=1))
claims = pd.DataFrame(json.loads((r / "claims.json").read_text()))
cols = ["id", "kind", "verdict", "our_value", "ci_low", "ci_high", "n", "ci_method", "rule", "paper_value"]
claims[cols].to_csv(out / "claims.csv", index=False)
rows = pd.read_csv(m / "throughput.csv")
per = rows.groupby(["workload", "run"])["run_s"].sum().groupby("workload").agg(["median", "min", "max", "count"])
per.round(1).to_csv(out / "pass_seconds.csv")
print(claims["verdict"].value_counts().to_string())
