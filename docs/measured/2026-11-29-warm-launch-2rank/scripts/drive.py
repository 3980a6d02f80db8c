import json, os, subprocess, sys, time, statistics as st
sys.path.insert(0, "/work/wt/launch64b")
from experiments import warm_launch
from experiments.workloads import launch
modes = sys.argv[2].split(",")
rounds = int(sys.argv[1])
outd = "/tmp/launch64b/pp/out"; os.makedirs(outd, exist_ok=True)
def run(mode, tag):
    envs = launch.rank_envs("dlrm", 2, 1, torchrun_env=True)
    log = f"{outd}/{tag}.log"
    t0 = time.time()
    if mode == "warm":
        procs = [parent.start("probe64", [f"{outd}/{tag}"], e, log) for e in envs]
    elif mode == "fresh":
        procs = [subprocess.Popen([sys.executable, "-m", "probe64", f"{outd}/{tag}"], env=e, stdout=open(log, "a"), stderr=subprocess.STDOUT) for e in envs]
    elif mode == "torchrun":
        e = launch._env(1)
        procs = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "probe64", f"{outd}/{tag}"], env=e, stdout=open(log, "a"), stderr=subprocess.STDOUT)]
    codes = launch.wait_all(procs, time.monotonic() + 600)
    assert not any(codes), (mode, codes, open(log).read()[-3000:])
    res = [json.load(open(f"{outd}/{tag}-r{r}.json")) for r in range(2)]
    fw = [st.median(s["fwd_ms"] for s in r["steps"][2:]) for r in res]
    fc = [st.median(s["fwd_cpu_ms"] for s in r["steps"][2:]) for r in res]
    bw = [st.median(s["bwd_ms"] for s in r["steps"][2:]) for r in res]
    print(f"{tag:14s} fwd wall {fw[0]:6.1f} {fw[1]:6.1f} cpu {fc[0]:6.1f} {fc[1]:6.1f} bwd {bw[0]:6.1f} {bw[1]:6.1f} load {res[0]['steps'][-1]['load']:.1f} {time.time()-t0:.0f}s", flush=True)
with warm_launch.Parent("torch") as parent:
    for i in range(rounds):
        for m in modes:
            run(m, f"{m}{i}")
