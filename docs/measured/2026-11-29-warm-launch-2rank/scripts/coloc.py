import json, sys, collections
d = json.load(open(sys.argv[1]))
acc, tl = d["acc"], d["tl"]
# runs = pairs of pids of one kind alive at the same time; co-location per sample time
by_t = collections.defaultdict(list)
for t, pid, k, cpu, st in tl:
    by_t[t].append((pid, k, cpu, st))
pairs = collections.defaultdict(lambda: [0, 0, 0])   # same cpu, samples, both R
for t, rows in by_t.items():
    if len(rows) == 2 and rows[0][1] == rows[1][1]:
        key = (rows[0][1],) + tuple(sorted(r[0] for r in rows))
        p = pairs[key]; p[1] += 1; p[0] += rows[0][2] == rows[1][2]; p[2] += rows[0][3] == "R" and rows[1][3] == "R"
for k, (same, n, bothR) in sorted(pairs.items(), key=lambda kv: kv[0][1]):
    m = [acc.get(f"{p}/{p}", {}) for p in k[1:]]
    print(k, f"same cpu {same}/{n}  both R {bothR}/{n}", " main run/wait s:", [(round(x.get('run_ns', 0) / 1e9, 1), round(x.get('wait_ns', 0) / 1e9, 1), x.get('se.nr_migrations'), x.get('nr_involuntary_switches')) for x in m])
