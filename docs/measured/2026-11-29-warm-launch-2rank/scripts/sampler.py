"""External sampler: per-thread schedstat of DLRM rank processes (fresh: cmdline; warm: children of the warm parent)."""
import json, os, sys, time
import psutil
out = sys.argv[1]; stop = sys.argv[2]
acc = {}
def kind(p):
    try:
        cl = p.cmdline()
    except psutil.Error:
        return None
    s = " ".join(cl)
    if "experiments.workloads.dlrm" in s and "torch.distributed.run" not in s and "warm_launch" not in s:
        return "fresh"
    try:
        pp = psutil.Process(p.ppid())
        if "experiments.warm_launch" in " ".join(pp.cmdline()):
            return "warm"
    except psutil.Error:
        pass
    return None
known = {}
tl = []
while not os.path.exists(stop):
    for p in psutil.process_iter():
        if p.pid not in known:
            k = kind(p)
            if k is None and p.pid not in known:
                known[p.pid] = None
                continue
            known[p.pid] = k
        k = known[p.pid]
        if not k:
            continue
        pid = p.pid
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                run_ns, wait_ns, sl = map(int, open(f"/proc/{pid}/task/{t}/schedstat").read().split())
                st = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
                comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
                a = acc.setdefault(f"{pid}/{t}", {"kind": k, "comm": comm, "cpus": {}, "R": 0, "n": 0, "first": time.time()})
                a.update(run_ns=run_ns, wait_ns=wait_ns, slices=sl, last=time.time(), minflt=int(st[7]), majflt=int(st[9]))
                a["cpus"][st[36]] = a["cpus"].get(st[36], 0) + 1
                if int(t) == pid:
                    for line in open(f"/proc/{pid}/task/{t}/sched"):
                        if line.startswith(("se.nr_migrations", "nr_switches", "nr_voluntary_switches", "nr_involuntary_switches")):
                            kk, vv = line.split(":"); a[kk.strip()] = int(float(vv))
                a["n"] += 1; a["R"] += st[0] == "R"
                if int(t) == pid:
                    tl.append((round(time.time(), 2), pid, k, int(st[36]), st[0]))
        except (OSError, ValueError):
            pass
    # forget pids whose process ended (their pid may be reused)
    for pid in list(known):
        if not os.path.exists(f"/proc/{pid}"):
            del known[pid]
    time.sleep(0.05)
json.dump({"acc": acc, "tl": tl}, open(out, "w"))
