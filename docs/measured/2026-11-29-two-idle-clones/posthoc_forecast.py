"""D's stages forecast from C's reference table (recorded after both runs, with the idle box's
calibration), scaled by the calibration D's own plan measured before its first stage: a
forecast made after the fact, to see what the table of a run on this hour's box would have
said. Run from /work/main with its .venv:

    python docs/measured/2026-11-29-two-idle-clones/posthoc_forecast.py TABLE.csv CLONE
"""
import json
import sys
from pathlib import Path

import yaml

from experiments.pipeline import forecast as F

table, clone = Path(sys.argv[1]), Path(sys.argv[2])
ref = F.read_reference(table)
plan = json.loads((clone / "results/plan.json").read_text())
params = yaml.safe_load((clone / "params.yaml").read_text())
ratios = F.ratios_of(plan["calibration"]["here"], ref.meta)
tot_f = tot_a = 0.0
print(f"table {table} (commit {ref.meta.get('commit', '')[:10]}, cpu_s {ref.meta.get('cpu_s')}, io_s {ref.meta.get('io_s')}); "
      f"{clone}'s calibration {plan['calibration']['here']}: ratios {ratios}")
print("| stage | forecast s | actual s | actual / forecast | over 2 min: within 20 % |")
print("|---|---:|---:|---:|---|")
for st in plan["to_run"]:
    env = clone / "results" / st / "env.json"
    if not env.exists():
        continue
    actual = float(json.loads(env.read_text())["run"]["wall_s"])
    f = F.forecast(st, ref, params, ratios).seconds
    tot_f, tot_a = tot_f + f, tot_a + actual
    big = "yes" if actual > 120 and abs(actual / f - 1) <= 0.2 else ("**no**" if actual > 120 else "")
    print(f"| `{st}` | {f:.0f} | {actual:.0f} | {actual / f:.2f} | {big} |")
print(f"| **whole run** | {tot_f:.0f} | {tot_a:.0f} | {tot_a / tot_f:.2f} | {'yes' if abs(tot_a / tot_f - 1) <= 0.2 else '**no**'} |")
