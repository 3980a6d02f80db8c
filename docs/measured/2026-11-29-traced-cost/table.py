import json, sys
def parts(f, idx):
    r = json.load(open(f)); p = r["passes"][idx]
    P = {}
    def add(k, v): P[k] = P.get(k, 0) + v
    side_wall = {}
    prep_end = [s + d for a, s, d in p["parts"] if a.startswith("prepare")][0]
    attach_start = [s for a, s, d in p["parts"] if a.startswith("tracer start")][0]
    for a, s, d in p["parts"]:
        if a.startswith("prepare"): add("prepare (stage data, DLIO plan)", d)
        elif a.startswith("tracer start"): add("tracer attach (bpftrace start)", d)
        elif a == "evict": add("eviction (drop_caches, 1 a side)", d)
        elif a.startswith("side "): side_wall[a[5:]] = d
        elif "detach" in a: add("tracer detach", d)
        elif a.startswith("tracer stop"): pass
        elif "parse" in a: add("trace parse (once a pass)", d)
        elif "cut" in a: add("window cut", d)
        elif a.startswith("finish"): add("vectors, records, rows", d)
        elif a in ("pass_rows", "pass_tables", "timeline_inputs", "clean"): add("tables, timelines, clean", d)
    add("session set-up (+ the warm parent's import in a stage's first warm pass)", max(0, attach_start - prep_end))
    for s, w in side_wall.items():
        i = p["inner"].get(s, {})
        if "launch_to_first_record" in i:
            st = i["launch_to_first_record"] + i["first_record_to_train"]
            tr = i["train_first_to_last"]
            add(f"{s}: launch->train (interpreter, imports, init)", st)
            add(f"{s}: steps (first train begin->last train end)", tr)
            add(f"{s}: after steps (exit, sync, audit)", w - st - tr)
        elif "dlio_first_epoch_start" in i:
            tr = i["dlio_last_epoch_end"] - i["dlio_first_epoch_start"]
            add(f"{s}: DLIO process start + exit", w - tr)
            add(f"{s}: DLIO epochs", tr)
        else:
            add(f"{s}: side", w)
    return p["workload"], p["pass_s"], P, r["load"][0]
cols = [a.split(":") for a in sys.argv[1:]]
res = [parts(f, int(i)) for f, i in cols]
keys = []
for _, _, P, _ in res:
    keys += [k for k in P if k not in keys]
print(f"{'seconds':60s}" + "".join(f"{f.split('/')[-1][:-5]+'#'+i:>14s}" for f, i in cols))
print(f"{'workload':60s}" + "".join(f"{w:>14s}" for w, *_ in res))
print(f"{'1-min load at start':60s}" + "".join(f"{l:14.1f}" for *_, l in res))
for k in keys:
    print(f"{k:60s}" + "".join(f"{P.get(k, 0):14.1f}" for _, _, P, _ in res))
print(f"{'PASS (wall)':60s}" + "".join(f"{t:14.1f}" for _, t, _, _ in res))
