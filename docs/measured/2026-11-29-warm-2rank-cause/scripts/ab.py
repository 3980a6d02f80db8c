"""Alternating A/B of 2-rank probe runs: fresh processes, fresh with the warm parent's imports, forked variants."""
import json, os, subprocess, sys, time, statistics as st
ROOT = "/work/wt/warm2rank"; HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT); os.chdir(ROOT)
os.environ["PYTHONPATH"] = HERE + os.pathsep + os.environ.get("PYTHONPATH", "")
from experiments.host import warm_launch
from experiments.workloads import launch
rounds, modes, outd = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
os.makedirs(outd, exist_ok=True)
_Popen = warm_launch.subprocess.Popen
def vpopen(args, **kw):
    if args[1:3] == ["-m", "experiments.host.warm_launch"]:
        args = [args[0], "-m", "vparent"]
    return _Popen(args, **kw)
warm_launch.subprocess.Popen = vpopen
PRE = "import importlib,runpy,sys; from experiments.host.warm_launch import PRELOAD; [importlib.import_module(m) for m in PRELOAD['torch']]; sys.argv=['probe2',sys.argv[1]]; runpy.run_module('probe2', run_name='__main__', alter_sys=True)"
parents = {}
for m in modes:
    if m.startswith("warm"):
        os.environ["VARIANT"] = m[5:]
        parents[m] = warm_launch.Parent("torch")
        print(m, "parent import_s", round(parents[m].import_s, 1), flush=True)
def start(mode, tag, go):
    envs = [e | {"PROBE_GO": go} | EXTRA.get(mode, {}) for e in launch.rank_envs("dlrm", 2, 1, torchrun_env=True)]
    log = f"{outd}/{tag}.log"
    if mode.startswith("warm"):
        procs = [parents[mode].start("probe2", [f"{outd}/{tag}"], e, log) for e in envs]
    elif mode == "fresh":
        procs = [subprocess.Popen([sys.executable, "-m", "probe2", f"{outd}/{tag}"], env=e, stdout=open(log, "a"), stderr=subprocess.STDOUT) for e in envs]
    elif mode == "freshpre":
        procs = [subprocess.Popen([sys.executable, "-c", PRE, f"{outd}/{tag}"], env=e, stdout=open(log, "a"), stderr=subprocess.STDOUT) for e in envs]
    return procs
def report(mode, tag, t0):
    res = [json.load(open(f"{outd}/{tag}-r{r}.json")) for r in range(2)]
    med = lambda k: st.mean(st.median(s[k] for s in r["steps"][3:]) for r in res)
    print(f"{tag:22s} fwd_cpu {med('fwd_cpu'):6.2f} bwd_cpu {med('bwd_cpu'):6.2f} flt {med('fwd_flt'):5.0f} {med('bwd_flt'):5.0f} "
          f"sys {med('fwd_sys'):4.1f} {med('bwd_sys'):4.1f} fwd_ms {med('fwd_ms'):6.1f} load {os.getloadavg()[0]:.1f} {time.time()-t0:.0f}s", flush=True)
EXTRA = {}
try:
    for i in range(rounds):
        go = f"{outd}/go{i}"; os.makedirs(go); t0 = time.time()
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        procs = {m: start(m, f"{m}.{i}", go) for m in order}
        while len([f for f in os.listdir(go) if f.startswith("ready")]) < 2 * len(modes):
            bad = [(m, p.poll()) for m, ps in procs.items() for p in ps if p.poll() not in (None, 0)]
            assert not bad, bad
            time.sleep(0.1)
        open(f"{go}/go", "w").close()
        for m in order:
            codes = launch.wait_all(procs[m], time.monotonic() + 900)
            assert not any(codes), (m, codes, open(f"{outd}/{m}.{i}.log").read()[-3000:])
        for m in modes:
            report(m, f"{m}.{i}", t0)
        print(flush=True)
finally:
    for p in parents.values():
        p.close()
