"""Smoke: 2 ranks of UNET3D and BERT (the smoke profile's settings) forked from warm parents, one process group / one
MultiWorkerMirroredStrategy each; both ranks' steps recorded."""
import os, sys, time
sys.path.insert(0, "/work/wt/warm2rank"); os.chdir("/work/wt/warm2rank")
from pathlib import Path
import yaml
from experiments.settings import config
from experiments.host import warm_launch
from experiments.workloads import launch, data_bert, data_unet3d
W = Path(sys.argv[1]); W.mkdir(parents=True, exist_ok=True)
smoke = yaml.safe_load(open("profiles/smoke.yaml"))
default = yaml.safe_load(open("params.yaml"))
with warm_launch.Parents(multi_rank=True) as ps:
    for wl, gen in (("unet3d", data_unet3d), ("bert", data_bert)):
        raw = default[wl]
        for part, v in smoke[wl].items():
            raw.setdefault(part, {}).update(v) if isinstance(v, dict) else raw.__setitem__(part, v)
        cfg = config.validate(wl, raw)
        gen.generate(W / f"data-{wl}", cfg.data, 1)
        sec = cfg.model_dump(mode="json"); sec["train"]["checkpoint_dir"] = str(W / "ck")
        t0 = time.time()
        s = launch.run_config(wl, sec, cfg.sweep.batch_sizes[0], 2, 1, W / f"data-{wl}", W / f"run-{wl}", parents=ps)
        got = launch.collect(W / f"run-{wl}")
        print(wl, "wall", round(s, 1), "launch", got["usage"]["launch"], "ranks", sorted(got["steps"]["rank"].unique()),
              "steps", len(got["steps"]), "pids", len({r["pid"] for r in got["ranks"]}), "startup_s", round(launch.startup_seconds(W / f"run-{wl}"), 1), flush=True)
