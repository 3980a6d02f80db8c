"""The hour level (experiments/workloads/hour_level.py) against a fit made in a slow hour.

The traced comparison's BERT point, its passes alternating ``compute_level`` hour and fit, with
the fit's BERT times multiplied by ``--slow`` to stand for a fit made in a slow hour (fresh clone
K: the fit gave 0.304 s a step at the point, its real side 0.227 s in J: 1.34). Per pass and side:
the compute throughput (samples per step / median compute time) over the same pass's real side.
At level fit the sides sleep 1.34x the real compute; at level hour they sleep this pass's.

    DLIO_ROOT=<a project after dvc repro> python hour_level_demo.py --passes 3 --slow 1.34 --out DIR
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import pandas as pd

from experiments.host import warm_launch
from experiments.settings import config
from experiments.sidebyside import sides
from experiments.sidebyside import stage as tcs
from experiments.workloads import compute_model as cm

ap = argparse.ArgumentParser()
ap.add_argument("--passes", type=int, default=3)
ap.add_argument("--slow", type=float, default=1.34)
ap.add_argument("--out", type=Path, required=True)
a = ap.parse_args()
a.out.mkdir(parents=True, exist_ok=True)

cfg = config.load(traced_comparison=None, tiers=None, seed=None, bert=None)
tc0 = cfg.traced_comparison
base = cm.load("fit").as_file()
w = base["workloads"]["bert"]
for stat in ("mean", "std"):
    w[stat]["coef"] = {k: v * a.slow for k, v in w[stat]["coef"].items()}
slowed = a.out / "fit-slowed.json"
slowed.write_text(json.dumps(base, indent=1))
cm.fit_file = lambda: slowed   # "fit" now names the slowed fit, for every side of this process

tier = sides.pick_tier(cfg.tiers, tc0.tier)
section = cfg.bert.model_dump(mode="json")
rows = []
t0 = time.time()
with warm_launch.Parents(multi_rank=True) as parents:
    for p in range(a.passes):
        for level in (("hour", "fit") if p % 2 == 0 else ("fit", "hour")):   # alternate which goes first
            tc = tc0.model_copy(update={"compute_level": level, "sides": ["real", "sleep", "emulator", "dlio"],
                                        "points": {"bert": tc0.points["bert"]}})
            print(f"pass {p} level {level} ({time.time() - t0:.0f} s)", flush=True)
            done = tcs.trace_pass("bert", section, tc, tcs.pass_seed(cfg.seed, p), tier, a.out / "work",
                                  parents=parents)
            tp = done["throughput"].set_index("side")
            real = tp.loc["real", "compute_sps"]
            for side, r in tp.iterrows():
                rows.append({"pass": p, "level": level, "side": side, "status": r["status"],
                             "compute_sps": r["compute_sps"], "ratio_to_real": r["compute_sps"] / real,
                             "scale": (done.get("compute") or {}).get("scale"), "wall_s": r["wall_s"]})
            sides.clean({"bert": done})
d = pd.DataFrame(rows)
d.to_csv(a.out / "rows.csv", index=False)
s = d[d["side"] != "real"].groupby(["level", "side"])["ratio_to_real"].agg(["median", "min", "max", "count"])
(a.out / "summary.txt").write_text(f"fit slowed x{a.slow} for BERT; ratio = side / real compute throughput, "
                                   f"same pass; rule of the findings: between 0.9 and 1.1\n\n{s.to_string()}\n")
(a.out / "env.json").write_text(json.dumps({"host": platform.node(), "python": sys.version, "argv": sys.argv,
                                            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
                                            "seconds": time.time() - t0, "point": tc0.points["bert"].model_dump(),
                                            "slowed_fit": str(slowed)}, indent=1))
print(s.to_string())
