"""Real DLRM, 2 ranks: a fresh and a forked run at the same time (the same load), per-step compute over
the steps both were training. Modes after 'fresh' name warm-parent variants (vparent.py)."""
import os, sys, threading, time
ROOT = "/work/wt/warm2rank"; HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT); os.chdir(ROOT)
os.environ["PYTHONPATH"] = HERE + os.pathsep + os.environ.get("PYTHONPATH", "")
from pathlib import Path
import yaml, pandas as pd
from experiments.settings import config, paths
from experiments.host import warm_launch
from experiments.workloads import launch
from experiments.workloads.steptimer import read_app_log
_Popen = warm_launch.subprocess.Popen
def vpopen(args, **kw):
    if args[1:3] == ["-m", "experiments.host.warm_launch"]:
        args = [args[0], "-m", "vparent"]
    return _Popen(args, **kw)
warm_launch.subprocess.Popen = vpopen
reps, steps, variant, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
W = Path("/tmp/warm2rank/sim"); W.mkdir(parents=True, exist_ok=True)
raw = yaml.safe_load(open(paths.params_file()))["dlrm"]
raw["train"].update(steps=steps, eval_every=steps, eval_steps=2)
cfg = config.validate("dlrm", raw); section = cfg.model_dump(mode="json")
section["train"]["checkpoint_dir"] = str(W / "ckpt")
data = Path("/tmp/warm2rank/data")
rows = []
os.environ["VARIANT"] = variant
with warm_launch.Parents(multi_rank=True) as parents:
    parents.start(["torch"])
    for i in range(reps):
        fd, wd = W / f"fresh{i}", W / f"warm{i}"
        t = threading.Thread(target=launch.run_config, args=("dlrm", section, 2048, 2, 1, data, fd))
        t.start()
        def training():
            return any(r.get("phase") == "train" and r.get("event") == "begin"
                       for g in fd.glob("app-r*.jsonl") for r in read_app_log(g))
        while t.is_alive() and not training():
            time.sleep(0.3)
        launch.run_config("dlrm", section, 2048, 2, 1, data, wd, parents=parents)
        t.join()
        f, w = launch.collect(fd)["steps"], launch.collect(wd)["steps"]
        f, w = f[f.step > 0], w[w.step > 0]
        lo, hi = max(f.end_wall.min(), w.end_wall.min()), min(f.end_wall.max(), w.end_wall.max())
        fo, wo = f[f.end_wall.between(lo, hi)], w[w.end_wall.between(lo, hi)]
        rows.append({"variant": variant or "plain", "rep": i, "overlap_s": round(hi - lo, 1), "fresh_steps": len(fo) // 2, "warm_steps": len(wo) // 2,
                     "fresh_compute_ms": fo.compute_ns.median() / 1e6, "warm_compute_ms": wo.compute_ns.median() / 1e6,
                     "fresh_forward_ms": fo.forward_ns.median() / 1e6, "warm_forward_ms": wo.forward_ns.median() / 1e6,
                     "ratio": wo.compute_ns.median() / fo.compute_ns.median()})
        print(rows[-1], flush=True)
out.mkdir(parents=True, exist_ok=True)
pd.DataFrame(rows).to_csv(out / f"simultaneous-{variant or 'plain'}.csv", index=False)
