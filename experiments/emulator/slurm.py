"""Many clients through Slurm: a batch script that runs one emulation over an allocation.

``python -m experiments.emulator run W -G 8 ... --launcher slurm --nodes 2 [--submit]`` writes
``<out>/emulator.sbatch`` (and with ``--submit`` runs ``sbatch --wait`` on it). The script

1. takes the allocation's first host (``scontrol show hostnames $SLURM_JOB_NODELIST``) as the
   rendezvous host, and a port from the job id (the same on every task);
2. starts one task per node (``srun --ntasks-per-node``; ``--tasks-per-node`` > 1 runs several
   emulator "nodes" on one host, as the one-node test cluster does); each task is one
   emulator node: ``python -m experiments.emulator run ... --nnodes T --node-rank
   $SLURM_PROCID --rdzv-endpoint HEAD:PORT`` into its own folder ``<out>/tasks/task<K>``
   (torchrun's c10d rendezvous for UNET3D and DLRM; BERT's ``TF_CONFIG`` lists every task's
   host with consecutive ports);
3. gathers the task folders into ``<out>`` and summarizes them as one run
   (``python -m experiments.emulator gather <out>``: :func:`gather`): AU per rank and
   overall, bytes per node (``data_bytes_by_node``).

``<out>`` must be on a file system every node sees (the project's folder, as the ``srun``
tasks run the same checkout). The script exports ``DLIO_ROOT`` and ``PYTHONPATH`` of this
checkout and runs this Python.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..settings import paths
from ..settings.config import ConfigError
from .config import EmulatorConfig

SCRIPT = "emulator.sbatch"
TASKS = "tasks"


def run_args(cfg: EmulatorConfig, tasks: int) -> list[str]:
    """The ``run`` arguments every task passes (all but its rank, endpoint and folder)."""
    a = ["run", cfg.workload, "-G", str(cfg.accelerators), "-B", str(cfg.batch_size),
         "--nnodes", str(tasks), "--data", cfg.data_dir, "--checkpoint-dir", cfg.checkpoint_dir,
         "--compute-model", cfg.compute_model, "--checkpoint-pattern", cfg.checkpoint_pattern,
         "--seed", str(cfg.seed)]
    if not cfg.sync_steps:
        a.append("--no-sync")
    return a


def script(cfg: EmulatorConfig, out_dir, nodes: int, tasks_per_node: int = 1, *,
           partition: str | None = None, time_limit: str = "1:00:00",
           params: str | None = None, sets: list[str] | None = None) -> str:
    """The batch script's text (see the module docstring). ``cfg.nodes`` must be
    ``nodes x tasks_per_node`` (one emulator node per task)."""
    tasks = nodes * tasks_per_node
    if cfg.nodes != tasks:
        raise ConfigError(f"--nodes = {nodes} x --tasks-per-node = {tasks_per_node} = {tasks} tasks, "
                          f"but the run has {cfg.nodes} emulator node(s); allowed: the same number")
    out = Path(out_dir).resolve()
    root = paths.root()
    py = sys.executable
    args = run_args(cfg, tasks)
    if params:
        args += ["--params", str(paths.resolve(params))]
    if sets:
        args += ["--set", *sets]
    run = shlex.join([py, "-m", "experiments.emulator", *args])
    bert = ' --hosts "$HOSTS"' if cfg.workload == "bert" else ""
    me = shlex.quote(str(out / SCRIPT))
    head = [
        "#!/bin/bash",
        f"#SBATCH --job-name=emulator-{cfg.workload}",
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --ntasks-per-node={tasks_per_node}",
        f"#SBATCH --time={time_limit}",
        f"#SBATCH --output={out}/slurm-%j.out",
    ] + ([f"#SBATCH --partition={partition}"] if partition else [])
    body = f"""
# Written by `python -m experiments.emulator run ... --launcher slurm` (experiments/emulator/slurm.py).
set -euo pipefail
if [ "${{1:-}}" = task ]; then  # one task = one emulator node (srun runs this file with "task")
  exec {run} --node-rank "$SLURM_PROCID" --rdzv-endpoint "$HEAD:$PORT" --rdzv-id "slurm-$SLURM_JOB_ID"{bert} \\
    --out "$OUT/{TASKS}/task$SLURM_PROCID"
fi
cd {shlex.quote(str(root))}
export DLIO_ROOT={shlex.quote(str(root))}
export PYTHONPATH={shlex.quote(str(root))}${{PYTHONPATH:+:$PYTHONPATH}}
OUT={shlex.quote(str(out))}
# rendezvous on the allocation's first host; a port from the job id, the same on every task
HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
PORT=$((20000 + SLURM_JOB_ID % 20000))
# every task's host, in task order (BERT's TF_CONFIG)
HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | while read -r h; do for i in $(seq {tasks_per_node}); do echo "$h"; done; done | paste -sd, -)
export HEAD PORT HOSTS OUT
rm -rf "$OUT/{TASKS}"
mkdir -p "$OUT/{TASKS}"
srun --nodes={nodes} --ntasks={tasks} --ntasks-per-node={tasks_per_node} --kill-on-bad-exit=1 bash {me} task
{shlex.quote(py)} -m experiments.emulator gather "$OUT"
"""
    return "\n".join(head) + "\n" + body


def write_script(cfg: EmulatorConfig, out_dir, nodes: int, tasks_per_node: int = 1, **kw) -> Path:
    """Write :func:`script` to ``<out_dir>/emulator.sbatch``; returns its path."""
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    p = out / SCRIPT
    p.write_text(script(cfg, out, nodes, tasks_per_node, **kw))
    p.chmod(0o755)
    return p


def submit(script_path: Path, timeout_s: float | None = None) -> str:
    """``sbatch --parsable --wait SCRIPT``: waits for the job; returns its id. RuntimeError
    with sbatch's message (and the job's output file) when it fails."""
    if shutil.which("sbatch") is None:
        raise ConfigError("--submit: sbatch is not on PATH; install Slurm's client (apt-get install "
                          "slurm-client) or submit the script yourself: sbatch " + str(script_path))
    p = subprocess.run(["sbatch", "--parsable", "--wait", str(script_path)], capture_output=True,
                       text=True, timeout=timeout_s)
    job = p.stdout.strip().split(";")[0]
    if p.returncode != 0:
        logs = sorted(script_path.parent.glob(f"slurm-{job}.out")) if job else []
        tail = logs[0].read_text()[-3000:] if logs else ""
        raise RuntimeError(f"sbatch {script_path}: exit {p.returncode}: {p.stderr.strip()}\n{tail}")
    return job


def gather(out_dir) -> dict:
    """The task folders of ``<out_dir>/tasks`` copied into ``out_dir`` (each rank's records
    carry its global rank; ``output.txt`` of task K becomes ``output-task<K>.txt``) and
    summarized as one run (``summary.json``, ``summary.md``); returns the summary."""
    from . import report

    out = Path(out_dir)
    tasks = sorted((out / TASKS).glob("task*"), key=lambda p: int(p.name[4:]))
    if not tasks:
        raise ConfigError(f"gather {out}: no {TASKS}/task<K> folders; allowed: the --out folder of "
                          "a `--launcher slurm` run")
    for t in tasks:
        for f in t.iterdir():
            if f.name in ("summary.json", "summary.md"):
                continue  # a task's partial summary
            dst = out / (f"output-{t.name}.txt" if f.name == "output.txt" else f.name)
            if f.is_file() and not (f.name == "run.json" and dst.exists()):
                shutil.copy2(f, dst)
    r = json.loads((out / "run.json").read_text())
    r["run_dir"] = str(out)
    (out / "run.json").write_text(json.dumps(r, indent=1))
    return report.write(out)
