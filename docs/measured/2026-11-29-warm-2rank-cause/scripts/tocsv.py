"""The probe's per-rank JSON files (ab.py's output folder) as two tables: steps.csv (every step) and runs.csv
(what each rank saw: modules, threads, memory before and after its steps)."""
import glob, json, os, sys
import pandas as pd
src, dst = sys.argv[1], sys.argv[2]
steps, runs = [], []
for f in sorted(glob.glob(f"{src}/*-r[01].json")):
    tag, rank = os.path.basename(f)[:-5].rsplit("-r", 1)
    mode, rnd = tag.rsplit(".", 1)
    d = json.load(open(f))
    key = {"mode": mode, "round": int(rnd), "rank": int(rank)}
    runs.append(key | {k: d[k] for k in ("threads", "interop", "modules", "dynamo", "nthreads", "gc_frozen")}
                | {f"before_{k}_kB": v for k, v in d["m0"].items()} | {f"after_{k}_kB": v for k, v in d["m1"].items()})
    steps += [key | {"step": i} | s for i, s in enumerate(d["steps"])]
os.makedirs(dst, exist_ok=True)
pd.DataFrame(runs).sort_values(["round", "mode", "rank"]).to_csv(f"{dst}/runs.csv", index=False)
pd.DataFrame(steps).sort_values(["round", "mode", "rank", "step"]).round(3).to_csv(f"{dst}/steps.csv", index=False)
