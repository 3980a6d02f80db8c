"""Start the emulated accelerators of one run and wait for them.

UNET3D and DLRM: ``torchrun`` (``python -m torch.distributed.run``) with one process per
emulated accelerator: ``--standalone --nproc-per-node G`` on one machine; with ``nodes > 1``
the same command on every machine with ``--nnodes N --rdzv-backend c10d --rdzv-endpoint
HOST:PORT --rdzv-id ID`` (torchrun does the rendezvous; no code of ours).

BERT: G TensorFlow processes, each with ``RANK``, ``WORLD_SIZE`` and a ``TF_CONFIG`` naming all
workers (as :mod:`experiments.workloads.launch` does for the real run). Across machines every
node starts its share of the workers; the worker list is ``host:port`` for each node's host
(``hosts``) and consecutive ports from ``base_port``.

Given warm parents that serve its ranks (:class:`experiments.host.warm_launch.Parents`, one
machine; the traced comparison's one-rank sides), each rank is forked from the parent of its
framework instead, with the environment above and no torchrun agent (:func:`start`).

A run folder holds ``run.json`` (the resolved configuration, in the layout of the real run's
``run.json`` plus an ``emulator`` block), the ranks' records and ``output.txt``; :mod:`.report`
turns it into ``summary.json`` and ``summary.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from ..host import launcher
from ..settings import paths
from ..output.results import atomic_write
from ..workloads.launch import _free_ports, wait_all  # the real launcher's (free ports now, the wait)
from . import threads as thread_cpu
from .config import TORCH_WORKLOADS, EmulatorConfig


def env(cfg: EmulatorConfig) -> dict:
    """The environment of the rank processes (threads per rank as the real run)."""
    threads = cfg.threads_per_rank or max(1, (os.cpu_count() or 1) // cfg.per_node)
    return {"PYTHONPATH": str(paths.root()) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "OMP_NUM_THREADS": str(threads), "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def run_record(cfg: EmulatorConfig, run_dir) -> dict:
    """``run.json``: the real run's keys (so :func:`experiments.workloads.launch.collect` reads
    it), the compute model resolved at this run's G and B (``compute``, as a sleep run's:
    :func:`experiments.workloads.compute_model.resolve`) and the emulator's configuration.
    ``config.train.threads_per_rank`` is the emulator's, the one key the rank programs read."""
    from ..workloads import compute_model as cm

    section = cfg.section | {"train": cfg.section["train"] | {"threads_per_rank": cfg.threads_per_rank}}
    return {"workload": cfg.workload, "config": section, "batch_size": cfg.batch_size,
            "ranks": cfg.accelerators, "seed": cfg.seed, "repeat": 0, "data_dir": cfg.data_dir,
            "run_dir": str(run_dir), "checkpoint_dir": cfg.checkpoint_dir,
            "compute": cm.resolve(cfg.compute_model, cfg.workload, cfg.accelerators, cfg.batch_size),
            "emulator": cfg.to_json() | {"section": None}}


def torchrun(cfg: EmulatorConfig, run_dir, rdzv_endpoint: str | None = None,
             rdzv_id: str = "emulator") -> list[str]:
    """The torchrun command of this node (UNET3D, DLRM): :func:`experiments.host.launcher.torchrun`."""
    return launcher.torchrun(cfg.per_node, ["-m", "experiments.emulator.rank", str(run_dir)],
                             cfg.nodes, rdzv_endpoint, rdzv_id)


def tf_workers(cfg: EmulatorConfig, hosts: list[str] | None = None, base_port: int | None = None) -> list[str]:
    """``host:port`` of every BERT worker: ``per_node`` workers per host, worker ``r`` on port
    ``base_port + r`` (free ports on this host when ``base_port`` is None)."""
    if hosts is None:
        hosts = ["localhost"] * cfg.nodes
    if base_port is None:
        return [f"{h}:{p}" for h, p in zip([h for h in hosts for _ in range(cfg.per_node)],
                                            _free_ports(cfg.accelerators))]
    # port = base + global rank: distinct on every host, and on one host (nodes on loopback)
    return [f"{h}:{base_port + k * cfg.per_node + i}" for k, h in enumerate(hosts) for i in range(cfg.per_node)]


def tf_commands(cfg: EmulatorConfig, run_dir, node_rank: int = 0, workers: list[str] | None = None
                ) -> list[tuple[dict, list[str]]]:
    """(extra environment, command) of each BERT worker on node ``node_rank``."""
    workers = workers or tf_workers(cfg)
    out = []
    for local in range(cfg.per_node):
        r = node_rank * cfg.per_node + local
        e = {"RANK": str(r), "WORLD_SIZE": str(cfg.accelerators), "CUDA_VISIBLE_DEVICES": ""}
        if cfg.accelerators > 1:
            e["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": r}})
        out.append((e, [sys.executable, "-m", "experiments.emulator.rank", str(run_dir)]))
    return out


def command(cfg: EmulatorConfig, run_dir="RUN_DIR", node_rank: int = 0,
            rdzv_endpoint: str | None = None, hosts: list[str] | None = None,
            base_port: int | None = None) -> list[str]:
    """The command line of this node as one list (BERT: the workers joined with ``&``, each
    prefixed by its environment), for the dry run and for a user's own launcher."""
    if cfg.workload in TORCH_WORKLOADS:
        return torchrun(cfg, run_dir, rdzv_endpoint)
    base = base_port if base_port is not None else (int(rdzv_endpoint.rsplit(":", 1)[1]) if rdzv_endpoint else 29600)
    out: list[str] = []
    for e, c in tf_commands(cfg, run_dir, node_rank, tf_workers(cfg, hosts, base)):
        if out:
            out.append("&")
        out += ["env", *[f"{k}={v}" for k, v in e.items()], *c]
    return out


def start(cfg: EmulatorConfig, run_dir, node_rank: int = 0, rdzv_endpoint: str | None = None,
          rdzv_id: str = "emulator", hosts: list[str] | None = None, base_port: int | None = None,
          log=None, parents=None) -> list:
    """Start this node's processes (not waiting). ``parents``: an
    :class:`experiments.host.warm_launch.Parents` that serves this run's ranks (one machine):
    every rank a process forked from the warm parent of its framework, with the environment
    torchrun (PyTorch) or :func:`tf_commands` (BERT) gives it, its output appended to ``log``
    (an open file); None: fresh processes."""
    run_dir = Path(run_dir)
    base_env = {**os.environ, **env(cfg)}
    if parents is not None and cfg.nodes == 1 and not rdzv_endpoint and parents.serves(cfg.per_node):
        from ..workloads.launch import framework, rank_envs

        parent = parents.get(framework(cfg.workload))
        if cfg.workload in TORCH_WORKLOADS:   # torchrun's environment, without its agent
            envs = [base_env | e for e in rank_envs(cfg.workload, cfg.per_node, int(base_env["OMP_NUM_THREADS"]),
                                                    torchrun_env=True)]
        else:
            envs = [base_env | e for e, _ in tf_commands(cfg, run_dir, node_rank)]
        return [parent.start("experiments.emulator.rank", [str(run_dir)], e, log) for e in envs]
    kw = dict(cwd=paths.root(), stdout=log, stderr=subprocess.STDOUT if log else None)
    if cfg.workload in TORCH_WORKLOADS:
        return [subprocess.Popen(torchrun(cfg, run_dir, rdzv_endpoint, rdzv_id), env=base_env, **kw)]
    workers = tf_workers(cfg, hosts, base_port) if (hosts or base_port) else tf_workers(cfg)
    return [subprocess.Popen(c, env=base_env | e, **kw) for e, c in tf_commands(cfg, run_dir, node_rank, workers)]


def wait(procs: list[subprocess.Popen], timeout_s: float) -> list[int]:
    """Exit codes. When one process fails the others are killed (a rank waiting for a dead
    peer would otherwise hang until the deadline); at the deadline every process is killed
    (code -9): :func:`experiments.workloads.launch.wait_all`, the real run's."""
    return wait_all(procs, time.monotonic() + timeout_s)


def free_port_block(n: int, host: str = "127.0.0.1") -> int:
    """A port p such that p .. p+n-1 are free now (BERT workers on one host)."""
    for _ in range(200):
        base = _free_ports(1)[0]
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind((host, base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no block of {n} free ports found")


def prepare_dir(run_dir, fresh: bool = True) -> Path:
    run_dir = Path(run_dir)
    if fresh:
        shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def execute(cfg: EmulatorConfig, run_dir, node_rank: int = 0, rdzv_endpoint: str | None = None,
            rdzv_id: str | None = None, hosts: list[str] | None = None, base_port: int | None = None,
            fresh: bool = True, parents=None) -> float:
    """Write ``run.json``, run this node's ranks to completion; wall-clock seconds. ``parents``:
    warm parents the ranks are forked from where they serve them (:func:`start`).

    Raises ``RuntimeError`` with the tail of the output when a rank fails or times out."""
    run_dir = prepare_dir(run_dir, fresh)
    # launched_at: when the ranks start (epoch seconds), so the summary can take each rank's CPU
    # over its whole life (to its rank-r*.json, written at exit): experiments/emulator/bound.py
    (run_dir / "run.json").write_text(json.dumps(run_record(cfg, run_dir) | {"launched_at": time.time()},
                                                 indent=1))
    out = run_dir / (f"output-node{node_rank}.txt" if cfg.nodes > 1 else "output.txt")
    with open(out, "w") as log:
        t0 = time.perf_counter()
        procs = start(cfg, run_dir, node_rank, rdzv_endpoint, rdzv_id or f"emu-{uuid.uuid4().hex[:8]}",
                      hosts, base_port, log, parents)
        # each thread's CPU over the run (the bound is judged per thread: experiments/emulator/bound.py)
        sampler = thread_cpu.Sampler([p.pid for p in procs]).start()
        try:
            codes = wait(procs, cfg.timeout_s)
        finally:
            sampler.stop()
        seconds = time.perf_counter() - t0
    # atomically: across nodes node 0 reads every node's file while the others may still write theirs
    atomic_write(run_dir / (f"threads-node{node_rank}.csv" if cfg.nodes > 1 else "threads.csv"),
                 lambda p: sampler.frame().to_csv(p, index=False))
    if any(codes):
        tail = out.read_text()[-4000:]
        raise RuntimeError(f"emulator {cfg.workload} G={cfg.accelerators} B={cfg.batch_size}: a rank "
                           f"failed (exit codes {codes}{'; -9: timeout_s' if -9 in codes else ''}); "
                           f"output tail:\n{tail}")
    return seconds
