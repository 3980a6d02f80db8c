"""(docs/measured/2026-11-28-run-lengths) DLRM runs of 40 and 20 steps (the default profile's before and after), alternating, on this box:
wall seconds a run and the steps' own seconds, to check the saving estimate (runs x seconds a run)."""
import json, time
from pathlib import Path
import pandas as pd
from experiments import config, profile
from experiments.workloads import launch, stage

p = profile.render("default")
seed = p["seed"]
cfg = config.validate("dlrm", p["dlrm"])
t0 = time.time()
print(stage.generate("dlrm", cfg.data, seed), flush=True)
print("data", round(time.time() - t0, 1), flush=True)
sec = cfg.model_dump(mode="json")
rows = []
plan = [(1, 40), (1, 20), (1, 20), (1, 40), (1, 40), (1, 20), (2, 20), (2, 40), (2, 40), (2, 20)]
for i, (g, steps) in enumerate(plan):
    s = json.loads(json.dumps(sec))
    s["train"].update({"steps": steps, "eval_every": steps // 2, "eval_steps": 4 if steps == 40 else 2})
    d = Path(f"/tmp/p64/runs/r{i}")
    w = launch.run_config("dlrm", s, 2048, g, seed, stage.data_dir("dlrm"), d, repeat=i)
    got = launch.collect(d)
    st = got["steps"]
    step_s = float(st.groupby("rank")["step_ns"].sum().max()) / 1e9
    rows.append({"i": i, "ranks": g, "steps": steps, "wall_s": w, "steps_s": step_s, "load": open("/proc/loadavg").read().split()[0]})
    print(rows[-1], flush=True)
df = pd.DataFrame(rows)
df.to_csv("/tmp/p64/dlrm_len.csv", index=False)
print(df.groupby(["ranks", "steps"])[["wall_s", "steps_s"]].median())
