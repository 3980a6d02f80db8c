"""(docs/measured/2026-11-28-run-lengths) One smoke-profile run of each thesis workload at G = 1
and its smallest batch, twice: a run's wall seconds against its steps' own seconds (what the
smoke profile's run lengths could still cut)."""
import json
from pathlib import Path

import pandas as pd

from experiments import config, profile
from experiments.workloads import launch, stage

p = profile.render("smoke")
seed = p["seed"]
rows = []
for w in ("dlrm", "unet3d", "bert"):
    cfg = config.validate(w, p[w])
    stage.generate(w, cfg.data, seed)
    sec = json.loads(json.dumps(cfg.model_dump(mode="json")))
    b = cfg.sweep.batch_sizes[0]
    for i in range(2):
        d = Path(f"/tmp/p64/runs/{w}{i}")
        wall = launch.run_config(w, sec, b, 1, seed, stage.data_dir(w), d, repeat=i)
        st = launch.collect(d)["steps"]
        rows.append({"workload": w, "batch_size": b, "steps": len(st), "wall_s": wall,
                     "steps_s": float(st["step_ns"].sum()) / 1e9, "load": open("/proc/loadavg").read().split()[0]})
        print(rows[-1], flush=True)
pd.DataFrame(rows).to_csv("/tmp/p64/smoke_runs.csv", index=False)
