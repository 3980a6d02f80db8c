"""The plan of a params.yaml on env/reference-times.csv at the reference box's speed (factor 1: no
calibration here, every stage counted): the forecast of `python -m experiments.forecast plan` for a
fresh clone, without this box's benchmark. Usage: python plan_at_reference.py [params.yaml ...]"""
import sys
from pathlib import Path

import yaml

from experiments import forecast
from experiments.ae_table import stages

st = stages()
ref = forecast.read_reference()
for f in sys.argv[1:] or ["params.yaml"]:
    params = yaml.safe_load(Path(f).read_text())
    lines = [forecast.forecast(s, ref, params, 1.0, st[s].get("params")) for s in st]
    print(f"== {f}")
    for x in lines:
        r = ref.rows.get(x.stage, {})
        print(f"{x.stage:26s} ref {r.get('wall_s', 0):7.1f} s  plan {x.seconds:7.1f} s  runs {x.runs:5.0f} x {x.run_s:6.2f}"
              f" + {x.fixed_s:5.1f}  {x.note}")
    print(f"total: {sum(x.seconds for x in lines):.0f} s = {sum(x.seconds for x in lines) / 60:.1f} min "
          f"(reference run's stages: {sum(r['wall_s'] for r in ref.rows.values()) / 60:.1f} min)")
