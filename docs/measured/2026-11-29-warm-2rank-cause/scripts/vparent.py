"""A warm parent variant (scratch): VARIANT names what differs from experiments.host.warm_launch.serve."""
import gc, os, sys
from experiments.host import warm_launch as w
V = os.environ.get("VARIANT", "").split("+")
if "min" in V:   # only torch and torch.distributed, no pandas/scipy/dynamo/experiments
    w.PRELOAD["torch"] = ["torch", "torch.distributed"]
_fork = os.fork
def fork():
    if "gcfreeze" in V:
        gc.collect(); gc.freeze()
    if "gcdisable" in V:
        gc.disable()
    pid = _fork()
    if pid == 0 and "childgcfreeze" in V:
        gc.freeze()
    return pid
os.fork = fork
sys.exit(w.serve("torch"))
