"""Time one pass (or several) of traced_comparison, broken down; DLIO_ROOT = the project copy.

usage: python drive.py OUT_PREFIX WORKLOAD[,WORKLOAD..] [profile-overrides-json]
Writes OUT_PREFIX.json (timings) and OUT_PREFIX.vectors.csv / .rows.csv (what the pass measured).
"""
import json
import os
import sys
import time
from pathlib import Path

import pandas as pd

from experiments.settings import config
from experiments.sidebyside import sides, stage
from experiments.trace import session as tsession
from experiments.trace import tracer as ttracer
from experiments.trace import bpftrace_backend as bt
from experiments.host import cache

out, wl = sys.argv[1], sys.argv[2].split(",")
T: list = []          # (label, t_start, t_end)


def timed(label_fn, f):
    def g(*a, **k):
        t0 = time.time()
        try:
            return f(*a, **k)
        finally:
            T.append((label_fn(*a, **k), t0, time.time()))
    return g


sides.prepare_workload = timed(lambda w, *a, **k: f"prepare {w}", sides.prepare_workload)
sides.finish_workload = timed(lambda *a, **k: "finish_workload (vectors, records, rows)", sides.finish_workload)
sides.run_side = timed(lambda side, w, *a, **k: f"side {side}", sides.run_side)
stage.pass_rows = timed(lambda *a, **k: "pass_rows", stage.pass_rows)
stage.pass_tables = timed(lambda *a, **k: "pass_tables", stage.pass_tables)
stage.timeline_inputs = timed(lambda *a, **k: "timeline_inputs", stage.timeline_inputs)
sides.clean = timed(lambda *a, **k: "clean", sides.clean)
cache.evict = timed(lambda *a, **k: "evict", cache.evict)
tsession.Session.__enter__ = timed(lambda *a, **k: "tracer start (attach)", tsession.Session.__enter__)
EV = {}
_exit = tsession.Session.__exit__


def _exit2(self, *a):
    _exit(self, *a)
    EV["session_events"] = int(self.trace.meta.get("n_events", 0))
    EV["window_events"] = {k: int(w.trace.meta.get("n_events", 0)) for k, w in self.windows.items()}


tsession.Session.__exit__ = timed(lambda *a, **k: "tracer stop+parse+cut", _exit2)
bt.BpftraceSession.stop = timed(lambda *a, **k: "  bpftrace detach", bt.BpftraceSession.stop)
ttracer.Tracer._collect = timed(lambda *a, **k: "  parse output", ttracer.Tracer._collect)
tsession.cut = timed(lambda *a, **k: "  cut window", tsession.cut)
os.sync = timed(lambda *a, **k: "  sync", os.sync)

over = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
cfg = config.load(seed=None, tiers=None, unet3d=None, bert=None, dlrm=None, retinanet=None,
                  traced_comparison=over, decide=None)
tc = cfg.traced_comparison
tier = sides.pick_tier(cfg.tiers, tc.tier)
work = Path(os.environ["DLIO_ROOT"]) / "data" / "traced_comparison"
from experiments.host import warm_launch
WARM = os.environ.get("WARM") == "1"
parents = warm_launch.Parents(multi_rank=True) if WARM else None
res = {"load": os.getloadavg(), "passes": [], "warm": WARM}
vecs, rows = [], []
for w in wl:
    T.clear()
    secs = getattr(cfg, w).model_dump(mode="json")
    kept = stage.Passes(parents) if WARM else stage.Passes()
    t0 = time.time()
    r, tables = stage.run_pass(w, secs, tc, cfg.seed, tier, work, kept)
    t1 = time.time()
    # what the side's own logs say: launch -> first app record -> train begin -> last phase end -> exit
    inner = {}
    for side in {s for s in r and [x["side"] for x in r]}:
        d = work / w / side
        app = []
        for f in d.glob("app-r*.jsonl"):
            app += [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        launched = None
        for f in ("usage.json", "run.json"):
            if (d / f).exists():
                launched = json.loads((d / f).read_text()).get("launched_at") or launched
        if app and launched:
            ts = sorted(a["ts"] for a in app)
            tb = min(a["ts"] for a in app if a.get("phase") == "train" and a.get("event") == "begin")
            te = max(a["ts"] for a in app if a.get("phase") == "train" and a.get("event") == "end")
            inner[side] = {"launch_to_first_record": ts[0] - launched, "first_record_to_train": tb - ts[0],
                           "train_first_to_last": te - tb, "last_train_to_last_record": ts[-1] - te,
                           "launched_at": launched, "last_record": ts[-1]}
        ep = d / "epochs.csv"
        if side == "dlio" and ep.exists():
            e = pd.read_csv(ep)
            inner[side] = {"dlio_first_epoch_start": float(e["start"].min()), "dlio_last_epoch_end": float(e["end"].max())}
    res["passes"].append({"workload": w, "pass_s": t1 - t0, "t0": t0,
                          "parts": [(a, b - t0, c - b) for a, b, c in T], "inner": inner,
                          "wall_s": {x["side"]: x["wall_s"] for x in r}, "events": dict(EV)})
    vecs.append(tables["vectors"].assign(workload=w))
    rows.append(pd.DataFrame(r))
res["load_end"] = os.getloadavg()
if WARM:
    res["parent_import_s"] = parents.import_s
    parents.close()
Path(out + ".json").write_text(json.dumps(res, indent=1, default=str))
pd.concat(vecs).to_csv(out + ".vectors.csv", index=False)
pd.concat(rows).to_csv(out + ".rows.csv", index=False)
print(json.dumps(res, indent=1, default=str)[:6000])
