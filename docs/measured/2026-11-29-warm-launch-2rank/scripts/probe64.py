"""Scratch probe (issue 64): what one rank sees, and how fast it computes."""
import json, os, sys, time
import torch, torch.distributed as dist

out = sys.argv[1]
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo", rank=rank, world_size=world)
import threadpoolctl

def tasks():
    r = {}
    for t in os.listdir("/proc/self/task"):
        try:
            st = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
            name = open(f"/proc/self/task/{t}/comm").read().strip()
            r[t] = {"name": name, "utime": int(st[11]), "stime": int(st[12]), "cpu": int(st[36]), "nice": int(st[16])}
        except OSError:
            pass
    return r

def status():
    d = {}
    for line in open("/proc/self/status"):
        k, v = line.split(":", 1)
        if k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches", "VmRSS", "Threads", "Cpus_allowed_list"):
            d[k] = v.strip()
    try:
        for line in open("/proc/self/smaps_rollup"):
            if line.startswith(("AnonHugePages", "Anonymous", "Shared", "Private")):
                k, v = line.split(":", 1); d[k] = v.strip()
    except OSError:
        pass
    return d

info = {"pid": os.getpid(), "ppid": os.getppid(), "rank": rank,
        "threads": torch.get_num_threads(), "interop": torch.get_num_interop_threads(),
        "affinity": sorted(os.sched_getaffinity(0)), "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "env": {k: v for k, v in os.environ.items() if any(s in k for s in ("OMP", "MKL", "KMP", "GOMP", "OPENBLAS", "MALLOC", "LD_"))},
        "pools": [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads", "filepath")} for p in threadpoolctl.threadpool_info()],
        "parallel_info": torch.__config__.parallel_info(), "sched": os.sched_getscheduler(0),
        "modules": len(sys.modules), "dynamo": "torch._dynamo" in sys.modules}
info["status0"] = status(); info["tasks0"] = tasks()
# a DLRM-like compute: MLPs at half of B=2048, forward + backward + SGD
torch.manual_seed(0)
B = int(os.environ.get("PROBE_B", "1024"))
m = torch.nn.Sequential(torch.nn.Linear(13, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(),
                        torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1024), torch.nn.ReLU(),
                        torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
emb = torch.nn.EmbeddingBag(200000, 128, mode="sum")
opt = torch.optim.SGD(list(m.parameters()) + list(emb.parameters()), lr=0.01)
x = torch.randn(B, 13); ids = torch.randint(0, 200000, (B, 26)); y = torch.rand(B, 1)
steps = []
dist.barrier()
for i in range(int(os.environ.get("PROBE_STEPS", "25"))):
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    loss = torch.nn.functional.mse_loss(m(x) + emb(ids).sum(1, keepdim=True) * 0, y)
    w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
    loss.backward(); opt.step(); opt.zero_grad()
    w2, c2 = time.perf_counter_ns(), time.thread_time_ns()
    steps.append({"fwd_ms": (w1 - w0) / 1e6, "fwd_cpu_ms": (c1 - c0) / 1e6, "bwd_ms": (w2 - w1) / 1e6, "bwd_cpu_ms": (c2 - c1) / 1e6, "load": os.getloadavg()[0]})
dist.barrier()
info["steps"] = steps; info["status1"] = status(); info["tasks1"] = tasks()
json.dump(info, open(f"{out}-r{rank}.json", "w"), indent=1)
dist.destroy_process_group()
