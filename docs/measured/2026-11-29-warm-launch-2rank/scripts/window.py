import json, sys, collections
import pandas as pd
d = json.load(open(sys.argv[1])); b = sys.argv[2]
s = pd.read_csv(f"{b}/steps.csv"); r = pd.read_csv(f"{b}/runs.csv").set_index("run")
s = s[s.step > 0]
by_t = collections.defaultdict(list)
for t, pid, k, cpu, st in d["tl"]:
    by_t[t].append((pid, k, cpu, st))
out = []
for run, g in s.groupby("run"):
    lo, hi = g.end_wall.min(), g.end_wall.max()
    k = r.loc[run, "launch"]
    n = same = sameR = bothR = 0
    for t, rows in by_t.items():
        if lo <= t <= hi:
            rows = [x for x in rows if x[1] == k]
            if len(rows) == 2:
                n += 1; same += rows[0][2] == rows[1][2]
                bothR += rows[0][3] == "R" and rows[1][3] == "R"
                sameR += rows[0][2] == rows[1][2] and rows[0][3] == "R" and rows[1][3] == "R"
    out.append({"run": run, "launch": k, "compute_ms": g.compute_ns.median() / 1e6, "samples": n,
                "same_cpu": same / max(n, 1), "both_R_same_cpu": sameR / max(n, 1), "both_R": bothR / max(n, 1)})
print(pd.DataFrame(out).round(2).to_string())
