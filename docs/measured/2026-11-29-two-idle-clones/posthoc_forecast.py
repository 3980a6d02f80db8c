"""A clone's stages forecast, after the fact, from a reference table it did not have (here C's,
recorded after both runs), scaled by the calibration the clone's own plan measured before its
first stage, and set against its wall times by the AE table's own check
(:func:`experiments.pipeline.ae_table.checks`: within 20 % of actual). Run from /work/main
with its .venv, at 71c5f91 (where env/ holds C's table):

    python docs/measured/2026-11-29-two-idle-clones/posthoc_forecast.py env/reference-times.csv CLONE
"""
import sys
from pathlib import Path

import yaml

from experiments.pipeline import ae_table
from experiments.pipeline import forecast as F

table, clone = Path(sys.argv[1]), Path(sys.argv[2])
ref = F.read_reference(table)
plan = ae_table.read_plan(clone / "results")
params = yaml.safe_load((clone / "params.yaml").read_text())
ratios = F.ratios_of(plan["calibration"]["here"], ref.meta)
for st in plan["to_run"]:   # the clone's plan, its forecasts replaced by the table's
    plan["stages"][st]["forecast_s"] = F.forecast(st, ref, params, ratios).seconds
plan["calibration"]["factor"] = F.weighted(ratios, F.CPU_SHARE)
cs = ae_table.checks(plan, ae_table.runs(clone / "results"))
print(f"table {table} (commit {ref.meta.get('commit', '')[:10]}); {clone}'s calibration "
      f"{plan['calibration']['here']}: ratios {ratios}\n")
print(ae_table.forecast_summary(plan, cs) + "\n\n" + ae_table.forecast_table(cs))
