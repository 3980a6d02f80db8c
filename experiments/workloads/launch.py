"""Launch one configuration (batch size B, ranks G) of a workload (the sweep of a stage runs
these in rounds: :func:`experiments.workloads.stage.measuring_stage`).

PyTorch workloads (UNET3D, DLRM, RetinaNet) run under ``torchrun --standalone --nproc_per_node G``
(``python -m torch.distributed.run``); one rank (G = 1) runs the rank program itself with the
environment torchrun would give it (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` ...: the same
process group, the same code), without the agent that imports torch first (about 3 s of each
start here); on several machines the same program runs under
``torchrun --nnodes N --rdzv-endpoint HOST:PORT``. BERT runs one TensorFlow process per
emulated accelerator, each with a ``TF_CONFIG`` naming all of them, for
``MultiWorkerMirroredStrategy``. Each configuration gets a run folder (see :mod:`.rank`); the
rank programs write their records there and :func:`collect` gathers them.

With ``parents`` (:class:`experiments.host.warm_launch.Parents`, what the pipeline's workload stages
pass) every rank is instead forked from the stage's warm parent of its framework, which imported
PyTorch or TensorFlow once: PyTorch ranks get torchrun's environment from here (no agent), BERT's
workers their ``TF_CONFIG``; each is a process of its own (see :mod:`experiments.host.warm_launch`).

A run's ``run.json`` says what its ranks do after the data wait: ``compute`` is
``{"mode": "real"}`` or, for ``compute: sleep``, the resolved compute model at this (G, B)
(``mean_s``, ``std_s``, ``eval_mean_s``, ``eval_std_s``, ``source``; see
:mod:`.compute_model` and :mod:`.step_compute`) and ``launch`` (``warm`` or ``fresh``).
``usage.json`` holds the run's wall time and the CPU time of its whole process tree (launcher,
ranks, DataLoader workers; a warm run's ranks and their workers), seconds, the host's 1-minute
load average before and after, the launch and its start (``launched_at``, epoch seconds).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from ..settings import paths
from .steptimer import phase_intervals, read_app_log

TORCH_WORKLOADS = ("unet3d", "dlrm", "retinanet")


def framework(workload: str) -> str:
    """The framework of a workload's rank program: ``torch`` or ``tensorflow``."""
    return "torch" if workload in TORCH_WORKLOADS else "tensorflow"


def _env(threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(paths.root()) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": str(threads), "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONUNBUFFERED": "1"}
    return env


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def command(workload: str, ranks: int, run_dir: Path) -> list[str]:
    """The command line of a PyTorch workload on one machine: torchrun for several ranks, the
    rank program itself for one (:func:`run_config` gives it torchrun's environment)."""
    if ranks == 1:
        return [sys.executable, "-m", f"experiments.workloads.{workload}", str(run_dir)]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={ranks}", "-m", f"experiments.workloads.{workload}", str(run_dir)]


def _children_cpu_s() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def rank_envs(workload: str, ranks: int, threads: int, torchrun_env: bool) -> list[dict]:
    """The environment of each rank process of one run on this machine: ``OMP_NUM_THREADS``
    and, for PyTorch, torchrun's variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR`` ...; ``torchrun_env``: the launcher sets them itself, not torchrun); for
    TensorFlow ``RANK``, ``WORLD_SIZE`` and, with several workers, a ``TF_CONFIG`` naming all."""
    if workload in TORCH_WORKLOADS:
        if not torchrun_env:
            return [_env(threads)]
        port = str(_free_ports(1)[0])
        return [_env(threads) | {"RANK": str(r), "WORLD_SIZE": str(ranks), "LOCAL_RANK": str(r),
                                 "LOCAL_WORLD_SIZE": str(ranks), "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1",
                                 "ROLE_RANK": str(r), "ROLE_WORLD_SIZE": str(ranks),
                                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port} for r in range(ranks)]
    workers = [f"localhost:{p}" for p in _free_ports(ranks)]
    out = []
    for r in range(ranks):
        env = _env(threads) | {"RANK": str(r), "WORLD_SIZE": str(ranks), "CUDA_VISIBLE_DEVICES":
                               os.environ.get("CUDA_VISIBLE_DEVICES", str(r))}
        if ranks > 1:
            env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": r}})
        out.append(env)
    return out


def wait_all(procs: list, deadline: float) -> list[int]:
    """Exit codes of ``procs`` (:class:`subprocess.Popen` or forked runs); when one fails the
    others are killed (a rank waiting for a dead peer would otherwise wait until the deadline),
    and at the deadline every one still running is killed (code -9)."""
    while True:
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            return codes
        if any(c not in (None, 0) for c in codes) or time.monotonic() > deadline:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            return [p.wait() if c is None else c for p, c in zip(procs, codes)]
        time.sleep(0.1)


def run_config(workload: str, section: dict, batch_size: int, ranks: int, seed: int,
               data_dir: Path, run_dir: Path, repeat: int = 0, compute: dict | None = None,
               variant: str = "real", parents=None) -> float:
    """Run one configuration to completion; returns its wall-clock seconds.

    ``compute``: what :func:`.step_compute.from_run` reads (None: the real model);
    ``variant`` names the row (``real``, ``random``, ``sleep``, ...) and keeps its checkpoints
    apart. ``parents``: an :class:`experiments.host.warm_launch.Parents` (a warm launch: every rank
    a process forked from the stage's warm parent of its framework, with the environment a fresh
    launch gives it; for several ranks only where ``parents.multi_rank``), or None (a fresh launch: new interpreters, torchrun for several PyTorch
    ranks). Writes ``usage.json`` (wall and process-tree CPU seconds, the launch, when it
    started) beside ``run.json``. Raises ``RuntimeError`` with the tail of the ranks' output if
    any rank fails.
    """
    run_dir = Path(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    train = section["train"]
    ckpt = paths.resolve(train["checkpoint_dir"]) / (workload if variant == "real" else f"{workload}-{variant}")
    if parents is not None and not parents.serves(ranks):
        parents = None   # several ranks start fresh unless the parents fork them too (warm_launch.Parents)
    mode = "fresh" if parents is None else "warm"
    run = {"workload": workload, "config": section, "batch_size": batch_size, "ranks": ranks,
           "seed": seed + repeat, "repeat": repeat, "data_dir": str(data_dir), "run_dir": str(run_dir),
           "checkpoint_dir": str(ckpt), "variant": variant, "compute": compute or {"mode": "real"},
           "launch": mode}
    (run_dir / "run.json").write_text(json.dumps(run, indent=1))
    threads = train.get("threads_per_rank") or max(1, (os.cpu_count() or 1) // ranks)
    module = f"experiments.workloads.{workload}"
    log = open(run_dir / "output.txt", "w")
    cpu0, load0, launched_at = _children_cpu_s(), os.getloadavg()[0], time.time()
    t0 = time.perf_counter()
    try:
        if parents is not None:   # every rank forked from the warm parent, torchrun's environment ours
            parent = parents.get(framework(workload))
            procs = [parent.start(module, [str(run_dir)], env, log.name)
                     for env in rank_envs(workload, ranks, threads, torchrun_env=True)]
        elif workload in TORCH_WORKLOADS:
            # one rank: torchrun's environment for its one worker, without its agent
            env = rank_envs(workload, ranks, threads, torchrun_env=ranks == 1)[0]
            procs = [subprocess.Popen(command(workload, ranks, run_dir), cwd=paths.root(),
                                      env=env, stdout=log, stderr=subprocess.STDOUT)]
        else:
            procs = [subprocess.Popen([sys.executable, "-m", module, str(run_dir)], cwd=paths.root(), env=env,
                                      stdout=log, stderr=subprocess.STDOUT)
                     for env in rank_envs(workload, ranks, threads, torchrun_env=False)]
        codes = wait_all(procs, time.monotonic() + train.get("timeout_s", 900))
    finally:
        log.close()
    seconds = time.perf_counter() - t0
    cpu = sum(p.cpu_s for p in procs) if parents is not None else _children_cpu_s() - cpu0
    # The host's 1-minute load average before and after: runs compared across rows were taken
    # at different times, and on a shared host the load explains much of their differences.
    (run_dir / "usage.json").write_text(json.dumps({"wall_s": seconds, "cpu_s": cpu,
                                                    "load_1min": [load0, os.getloadavg()[0]],
                                                    "launch": mode, "launched_at": launched_at}))
    if any(codes):
        tail = (run_dir / "output.txt").read_text()[-4000:]
        raise RuntimeError(f"{workload} B={batch_size} G={ranks}: a rank failed (exit codes {codes});"
                           f" output tail:\n{tail}")
    return seconds


def startup_seconds(run_dir: Path) -> float:
    """Seconds from a run's launch to the first training step's phase (the earliest rank's
    ``train`` begin in its application log): interpreter, imports, process group, model build,
    data loader. NaN without ``launched_at`` in ``usage.json`` or a ``train`` phase."""
    run_dir = Path(run_dir)
    try:
        t0 = json.loads((run_dir / "usage.json").read_text())["launched_at"]
    except (OSError, KeyError, ValueError):
        return float("nan")
    begins = [r["ts"] for f in run_dir.glob("app-r*.jsonl") for r in read_app_log(f)
              if r.get("phase") == "train" and r.get("event") == "begin"]
    return min(begins) - t0 if begins else float("nan")


def collect(run_dir: Path) -> dict:
    """The records one configuration's ranks wrote: steps, loader, phases, rank facts."""
    run_dir = Path(run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    keys = {"workload": run["workload"], "batch_size": run["batch_size"], "ranks": run["ranks"],
            "repeat": run.get("repeat", 0), "variant": run.get("variant", "real")}
    steps = []
    for f in sorted(run_dir.glob("steps-r*.csv")):
        d = pd.read_csv(f)
        d.insert(0, "rank", int(f.stem.split("-r")[1]))
        steps.append(d)
    steps = pd.concat(steps, ignore_index=True).assign(**keys) if steps else pd.DataFrame()
    loader = []
    for f in sorted(run_dir.glob("loader-r*.jsonl")):
        d = pd.read_json(f, lines=True)
        d.insert(0, "rank", int(f.stem.split("-r")[1].split("-")[0]))
        loader.append(d)
    loader = pd.concat(loader, ignore_index=True).assign(**keys) if loader else pd.DataFrame()
    app = [r for f in sorted(run_dir.glob("app-r*.jsonl")) for r in read_app_log(f)]
    phases = pd.DataFrame(phase_intervals(app)).assign(**keys) if app else pd.DataFrame()
    ranks = [json.loads(f.read_text()) | keys for f in sorted(run_dir.glob("rank-r*.json"))]
    usage = json.loads((run_dir / "usage.json").read_text()) if (run_dir / "usage.json").exists() else {}
    return {"steps": steps, "loader": loader, "app": [r | {"batch_size": run["batch_size"],
            "ranks": run["ranks"], "variant": keys["variant"]} for r in app], "phases": phases,
            "ranks": ranks, "usage": usage, "compute": run.get("compute", {"mode": "real"})}


def given_steps(got: dict) -> pd.DataFrame:
    """The steps of :func:`collect`'s ``got``; for a run that slept, with the compute its
    ``run.json`` gave it beside each step (``given_mean_s``, ``given_std_s``, seconds: the model
    carried to its hour, :mod:`.hour_level`), which Eq 3.2 and the sleep check read
    (:func:`given`)."""
    c, steps = got.get("compute") or {}, got["steps"]
    if c.get("mode") != "sleep" or not len(steps):
        return steps
    return steps.assign(given_mean_s=c.get("mean_s"), given_std_s=c.get("std_s"))


def given(steps: pd.DataFrame, model, w: str, G: int, B: int) -> tuple[float, float]:
    """(mean, std) of the step compute time (s) one run's ``steps`` were given: their
    ``given_mean_s`` and ``given_std_s`` (:func:`given_steps`), else ``model``'s at (G, B), as
    resolved into a run's run.json."""
    if "given_mean_s" in steps and steps["given_mean_s"].notna().any():
        return float(steps["given_mean_s"].dropna().iloc[0]), float(steps["given_std_s"].dropna().iloc[0])
    c = model.run_facts(w, G, B)
    return c["mean_s"], c["std_s"]


def app_log_text(records: list[dict]) -> str:
    """All ranks' application-log lines of a sweep, sorted by time (same format, see steptimer)."""
    return "".join(json.dumps(r) + "\n" for r in sorted(records, key=lambda r: r["ts"]))


def main(argv=None) -> int:
    """Command line without the pipeline (for another machine, e.g. a GPU server):

    ``python -m experiments.workloads.launch dlrm --params params.yaml --ranks 1 --batch-sizes
    2048 8192 --set train.steps=50 --data /scratch/dlrm --out /scratch/runs``

    Reads the workload's section from the params file as is (no validation: run it through
    the pipeline first to check it), generates the data set when ``--data`` has none, runs
    each configuration and writes ``steps.csv``, ``loader.csv``, ``ranks.json`` under ``--out``.
    ``--set train.compute=sleep --compute-model thesis-v100`` (or ``fit``, or a file) sleeps
    instead of computing.
    """
    import argparse
    from types import SimpleNamespace

    import yaml

    ap = argparse.ArgumentParser(prog="python -m experiments.workloads.launch")
    ap.add_argument("workload", choices=("unet3d", "bert", "dlrm", "retinanet"))
    ap.add_argument("--params", default=str(paths.params_file()))
    ap.add_argument("--ranks", type=int, nargs="+", default=[1])
    ap.add_argument("--batch-sizes", type=int, nargs="+", required=True)
    ap.add_argument("--set", nargs="*", default=[], help="PART.KEY=YAML overrides, e.g. train.steps=50")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--compute-model", default=None, help="with train.compute=sleep: fit | thesis-v100 | FILE")
    a = ap.parse_args(argv)
    params = yaml.safe_load(open(a.params))
    section, seed = params[a.workload], a.seed if a.seed is not None else params["seed"]
    for kv in a.set:
        key, val = kv.split("=", 1)
        part, k = key.split(".", 1)
        section.setdefault(part, {})[k] = yaml.safe_load(val)
    model = None
    if section.get("train", {}).get("compute", "real") == "sleep":
        from .compute_model import load
        model = load(a.compute_model or section["train"].get("compute_model", "fit"))
        model.require(a.workload)                     # before any run
    data = Path(a.data)
    if not data.exists():
        from . import data_bert, data_dlrm, data_retinanet, data_unet3d
        gen = {"unet3d": data_unet3d, "bert": data_bert, "dlrm": data_dlrm,
               "retinanet": data_retinanet}[a.workload].generate
        print(gen(data, SimpleNamespace(**section["data"]), seed), flush=True)
    out = Path(a.out)
    steps, loader, ranks = [], [], []
    for g in a.ranks:
        for b in a.batch_sizes:
            d = out / f"G{g}-B{b}-r0"
            s = run_config(a.workload, section, b, g, seed, data, d,
                           compute=model.run_facts(a.workload, g, b) if model else None,
                           variant="sleep" if model else "real")
            got = collect(d)
            steps.append(got["steps"])
            loader.append(got["loader"])
            ranks += got["ranks"]
            print(f"{a.workload} G={g} B={b}: {s:.1f} s, median compute "
                  f"{got['steps']['compute_ns'].iloc[1:].median() / 1e6:.2f} ms", flush=True)
    pd.concat(steps).to_csv(out / "steps.csv", index=False)
    if any(len(x) for x in loader):
        pd.concat([x for x in loader if len(x)]).to_csv(out / "loader.csv", index=False)
    (out / "ranks.json").write_text(json.dumps(ranks, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
