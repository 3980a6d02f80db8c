"""Scratch probe (issue 64 item 1, cause of the forked pair's slowness): a DLRM-like step, per-step
thread CPU time and page faults, what the rank sees."""
import json, os, resource, sys, time
import torch, torch.distributed as dist

out = sys.argv[1]
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
if os.environ.get("PROBE_SETTHREADS"):
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo", rank=rank, world_size=world)

def rollup():
    d = {}
    for line in open("/proc/self/smaps_rollup"):
        if ":" in line and line.split(":")[0] in ("Rss", "Private_Dirty", "Shared_Dirty", "AnonHugePages", "Anonymous"):
            k, v = line.split(":", 1); d[k] = int(v.split()[0])
    return d

info = {"pid": os.getpid(), "ppid": os.getppid(), "rank": rank, "threads": torch.get_num_threads(),
        "interop": torch.get_num_interop_threads(), "modules": len(sys.modules),
        "dynamo": "torch._dynamo" in sys.modules, "nthreads": len(os.listdir("/proc/self/task")),
        "m0": rollup(), "gc": __import__("gc").get_count(), "gc_frozen": __import__("gc").get_freeze_count()}
torch.manual_seed(0)
B = int(os.environ.get("PROBE_B", "1024"))
m = torch.nn.Sequential(torch.nn.Linear(13, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(),
                        torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1024), torch.nn.ReLU(),
                        torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))
emb = torch.nn.EmbeddingBag(int(os.environ.get("PROBE_ROWS", "1000000")), 16, mode="sum")
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.m, self.emb = m, emb
    def forward(self, x, ids):
        return self.m(x) + self.emb(ids).sum(1, keepdim=True) * 0
from torch.nn.parallel import DistributedDataParallel as DDP
net = DDP(Net()) if os.environ.get("PROBE_DDP") else Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(B, 13); ids = torch.randint(0, 200000, (B, 26)); y = torch.rand(B, 1)
steps = []
dist.barrier()
go = os.environ.get("PROBE_GO")
if go:   # all probes of a round start their steps together (the same load)
    open(f"{go}/ready-{os.path.basename(out)}-r{rank}", "w").close()
    while not os.path.exists(f"{go}/go"):
        time.sleep(0.05)
T = lambda: resource.getrusage(resource.RUSAGE_THREAD)
for i in range(int(os.environ.get("PROBE_STEPS", "30"))):
    r0, w0, c0 = T(), time.perf_counter_ns(), time.thread_time_ns()
    p0 = time.process_time_ns(); loss = torch.nn.functional.mse_loss(net(x, ids), y)
    r1, w1, c1 = T(), time.perf_counter_ns(), time.thread_time_ns()
    loss.backward(); opt.step(); opt.zero_grad()
    r2, w2, c2 = T(), time.perf_counter_ns(), time.thread_time_ns()
    steps.append({"proc_cpu": (time.process_time_ns() - p0) / 1e6, "step_ms": (w2 - w0) / 1e6, "fwd_ms": (w1 - w0) / 1e6, "fwd_cpu": (c1 - c0) / 1e6, "bwd_ms": (w2 - w1) / 1e6, "bwd_cpu": (c2 - c1) / 1e6,
                  "fwd_flt": r1.ru_minflt - r0.ru_minflt, "bwd_flt": r2.ru_minflt - r1.ru_minflt,
                  "fwd_sys": (r1.ru_stime - r0.ru_stime) * 1e3, "bwd_sys": (r2.ru_stime - r1.ru_stime) * 1e3,
                  "ivcsw": r2.ru_nivcsw - r0.ru_nivcsw, "load": os.getloadavg()[0]})
dist.barrier()
info["steps"] = steps; info["m1"] = rollup()
json.dump(info, open(f"{out}-r{rank}.json", "w"), indent=1)
dist.destroy_process_group()
