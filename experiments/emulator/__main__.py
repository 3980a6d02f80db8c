"""Command line of the emulator: ``python -m experiments.emulator --help``.

    python -m experiments.emulator run unet3d --data /mnt/nvme/unet3d -G 8 -B 4 \\
        --compute-model thesis-v100 --out runs/unet3d-nvme         # summary.md, summary.json
    python -m experiments.emulator run dlrm -G 4 -B 8192 --dry-run  # config + launch command
    python -m experiments.emulator max-accelerators unet3d --data /mnt/nvme/unet3d -B 4 \\
        --compute-model thesis-v100 --out runs/unet3d-search
    python -m experiments.emulator datasize unet3d -G 8 -B 4
    python -m experiments.emulator pattern trace dlrm -o my_patterns.json
    python -m experiments.emulator pattern derive run.parquet --workload dlrm \\
        --checkpoint data/checkpoints/dlrm --app-log RUN_DIR --ranks 2 -o my_patterns.json
    python -m experiments.emulator pattern show traced
    python -m experiments.emulator bench                            # zero compute vs fio, per tier
    python -m experiments.emulator checkpoint --model llama3-8b --tier /mnt/nvme/ckpt \\
        --scale 64 --checkpoints 10 [--ranks 8] [--dry-run] [--no-fsync] [--read-direct]

Across machines (UNET3D, DLRM) run the same ``run`` on every node with ``--nnodes N
--node-rank K --rdzv-endpoint HOST:PORT`` and one ``--out`` folder on a shared file system;
BERT takes ``--hosts h0,h1`` (its workers listen on consecutive ports from the endpoint's).

Through Slurm, one task per node: ``run ... --launcher slurm --nodes N [--submit]`` writes
``<out>/emulator.sbatch`` (srun, rendezvous on the allocation's first host, the task folders
gathered and summarized as one run: :mod:`.slurm`); ``--submit`` runs ``sbatch --wait`` on it.

Bad input prints one ``error:`` line and exits with status 2 before anything runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..settings.config import ArgumentParser, ConfigError, check_args, matching

EXIT_BAD_INPUT = 2

# ----------------------------------------------------------------------------- argument models
# Every argument of every subcommand is validated here, as params.yaml's sections are, before
# any work (experiments.settings.config.check_args names the argument, the value and what is allowed).

_Name = Annotated[str, Field(min_length=1)]


_matching = matching
_COMPUTE_MODELS = ("fit", "thesis-v100", "zero")
_PATTERNS = ("traced", "thesis", "none")


def _named_or_file(v, names, what):
    from ..settings import paths  # relative paths are the project root's, as the commands read them

    if v is None or v in names or paths.resolve(v).is_file():
        return v
    raise ValueError(f"no such {what}; allowed: {', '.join(names)} or an existing file")


def _existing_dir(v):
    from ..settings import paths

    if v is not None and not paths.resolve(v).is_dir():
        raise ValueError("no such folder")
    return v


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CommonArgs(_Args):
    workload: Literal["unet3d", "bert", "dlrm"]
    batch_size: int | None = Field(None, ge=1)
    accelerators: int | None = Field(None, ge=1)
    data: _Name | None = None
    params: _Name | None = None
    set: list[_matching(r"[A-Za-z_]\w*\.[\w.]+=.*", "PART.KEY=VALUE, e.g. train.epochs=2")] = []
    seed: int | None = Field(None, ge=0)
    nnodes: int = Field(1, ge=1, le=4096)

    _data = field_validator("data")(_existing_dir)

    @field_validator("params")
    @classmethod
    def _params(cls, v):
        from ..settings import paths

        if v is not None and not paths.resolve(v).is_file():
            raise ValueError("no such file; allowed: a params file with the workload's section")
        return v


class RunArgs(CommonArgs):
    compute_model: _Name = "fit"
    checkpoint_pattern: _Name = "traced"
    checkpoint_dir: _Name | None = None
    out: _Name | None = None

    @field_validator("compute_model")
    @classmethod
    def _cm(cls, v):
        return _named_or_file(v, _COMPUTE_MODELS, "compute model")

    @field_validator("checkpoint_pattern")
    @classmethod
    def _cp(cls, v):
        return _named_or_file(v, _PATTERNS, "checkpoint pattern")


class RunOnlyArgs(RunArgs):
    node_rank: int = Field(0, ge=0)
    rdzv_endpoint: _matching(r"[\w.\-\[\]:]+:\d{1,5}", "HOST:PORT, e.g. node0:29500") | None = None
    rdzv_id: _matching(r"[\w.\-]+", "letters, digits, '.', '-', '_'") | None = None
    hosts: _matching(r"[\w.\-]+(,[\w.\-]+)*", "host names separated by commas, e.g. h0,h1") | None = None
    launcher: Literal["local", "slurm"] = "local"
    partition: _matching(r"[\w.\-]+", "a Slurm partition name") | None = None
    time_limit: _matching(r"(\d+-)?\d+(:\d{2}){0,2}", "Slurm's time, e.g. 30, 1:00:00, 1-00:00:00") = "1:00:00"
    tasks_per_node: int = Field(1, ge=1, le=1024)
    submit: bool = False

    @model_validator(mode="after")
    def _across(self):
        if self.launcher == "slurm" and (self.rdzv_endpoint or self.node_rank or self.hosts):
            raise ValueError("--launcher slurm: the batch script sets --node-rank, --rdzv-endpoint and "
                             "--hosts itself; allowed: none of them with --launcher slurm")
        if self.launcher != "slurm" and (self.submit or self.tasks_per_node != 1 or self.partition):
            raise ValueError("--submit, --tasks-per-node and --partition: allowed with --launcher slurm only")
        if self.launcher != "slurm" and self.node_rank >= self.nnodes:
            raise ValueError(f"--node-rank = {self.node_rank}: allowed: 0 .. --nnodes - 1 = {self.nnodes - 1}")
        return self


class SearchArgs(RunArgs):
    start: int = Field(1, ge=1)
    limit: int = Field(64, ge=1, le=65536)


class DatasizeArgs(CommonArgs):
    memory_gib: float | None = Field(None, gt=0)
    steps: int = Field(500, ge=1)
    multiplier: float = Field(5.0, gt=0)


class PatternArgs(_Args):
    action: Literal["show", "derive", "trace"]
    source: _Name
    workload: Literal["unet3d", "bert", "dlrm"] | None = None
    checkpoint: list[_Name] | None = None
    app_log: _Name | None = None
    ranks: int = Field(2, ge=1, le=1024)
    output: _Name = "checkpoint_pattern.json"

    @field_validator("checkpoint")
    @classmethod
    def _ck(cls, v):
        for d in v or []:
            if not Path(d).exists():
                raise ValueError(f"{d}: no such file or folder")
        return v

    @field_validator("app_log")
    @classmethod
    def _log(cls, v):
        if v is not None and not Path(v).exists():
            raise ValueError("no such file or folder; allowed: the real run's folder or app log")
        return v

    @model_validator(mode="after")
    def _source(self):
        s = self.source
        if self.action == "show":
            if s not in ("traced", "thesis") and not Path(s).is_file():
                raise ValueError(f"source = {s!r}: allowed for show: traced, thesis or a pattern file")
        elif self.action == "derive" and not Path(s).is_file():
            raise ValueError(f"source = {s!r}: no such trace file; allowed for derive: TRACE.parquet")
        elif self.action == "trace" and s not in ("unet3d", "bert", "dlrm"):
            raise ValueError(f"source = {s!r}: allowed for trace: unet3d, bert, dlrm")
        return self


class GatherArgs(_Args):
    run_dir: _Name

    @field_validator("run_dir")
    @classmethod
    def _rd(cls, v):
        if not (Path(v) / "tasks").is_dir():
            raise ValueError("no tasks/ folder; allowed: the --out folder of a --launcher slurm run")
        return v


class SummarizeArgs(_Args):
    run_dir: _Name

    @field_validator("run_dir")
    @classmethod
    def _rd(cls, v):
        if not (Path(v) / "run.json").is_file():
            raise ValueError("not a run folder (no run.json); allowed: a folder an emulator run wrote")
        return v


class CheckpointArgs(_Args):
    """``checkpoint``: LLM checkpointing as MLPerf Storage defines it (:mod:`.llm_checkpoint`)."""

    model: _Name
    tier: _Name
    ranks: int | None = Field(None, ge=1, le=65536)
    scale: float = Field(1.0, ge=1)
    checkpoints: int = Field(10, ge=1, le=1000)
    pause_s: float = Field(0.0, ge=0)
    eviction: Literal["auto", "drop_caches", "fadvise", "none"] = "auto"
    nodes: int | None = Field(None, ge=1, le=4096)
    out: _Name | None = None

    @field_validator("model")
    @classmethod
    def _model(cls, v):
        from .llm_layout import MODELS as LLMS

        if v not in LLMS:
            raise ValueError(f"unknown model; allowed: {', '.join(LLMS)}")
        return v

    @model_validator(mode="after")
    def _ranks(self):
        from .llm_layout import MODELS as LLMS, check_ranks

        if self.ranks is not None:
            check_ranks(LLMS[self.model], self.ranks)   # ValueError: names --ranks and what divides
        return self


MODELS = {"checkpoint": CheckpointArgs, "run": RunOnlyArgs, "max-accelerators": SearchArgs, "datasize": DatasizeArgs,
          "pattern": PatternArgs, "summarize": SummarizeArgs, "gather": GatherArgs}


def _section(a) -> dict | None:
    import yaml

    from ..settings.config import merge

    if a.params is None and not a.set:
        return None
    from ..settings import paths
    p = paths.resolve(a.params) if a.params else paths.params_file()
    if not p.is_file():
        raise ConfigError(f"--params {p}: no such file")
    params = yaml.safe_load(p.read_text()) or {}
    if a.workload not in params:
        raise ConfigError(f"--params {p}: no {a.workload!r} section")
    sec = params[a.workload]
    for kv in a.set:
        if "=" not in kv or "." not in kv.split("=", 1)[0]:
            raise ConfigError(f"--set {kv!r}: allowed: PART.KEY=VALUE, e.g. train.epochs=2")
        key, val = kv.split("=", 1)
        part, k = key.split(".", 1)
        sec = merge(sec, {part: {k: yaml.safe_load(val)}})
    return sec


def _cfg(a, check=True):
    from .config import from_params

    return from_params(a.workload, _section(a), a.batch_size, a.accelerators,
                       compute_model=a.compute_model, checkpoint_pattern=a.checkpoint_pattern,
                       data_dir=a.data, checkpoint_dir=a.checkpoint_dir, seed=a.seed,
                       nodes=a.nnodes, sync_steps=not a.no_sync, check=check)


def _out(a, cfg, what="run") -> Path:
    from ..settings import paths

    if a.out:
        return Path(a.out).resolve()
    name = f"{cfg.workload}-G{cfg.accelerators}-B{cfg.batch_size}-{Path(cfg.compute_model).stem}"
    return paths.data_dir("emulator_runs") / (name if what == "run" else f"{name}-search")


def cmd_slurm(a) -> int:
    from . import slurm
    from .config import from_params

    tasks = a.nnodes * a.tasks_per_node
    cfg = from_params(a.workload, _section(a), a.batch_size, a.accelerators,
                      compute_model=a.compute_model, checkpoint_pattern=a.checkpoint_pattern,
                      data_dir=a.data, checkpoint_dir=a.checkpoint_dir, seed=a.seed, nodes=tasks,
                      sync_steps=not a.no_sync, check=True)
    out = _out(a, cfg)
    p = slurm.write_script(cfg, out, a.nnodes, a.tasks_per_node, partition=a.partition,
                           time_limit=a.time_limit, params=a.params, sets=a.set)
    print(f"batch script: {p}")
    if a.dry_run or not a.submit:
        print(f"submit it with: sbatch {p}   (then the summary is in {out})")
        return 0
    job = slurm.submit(p)
    print((out / "summary.md").read_text())
    print(f"job {job}; results: {out}")
    return 0


def cmd_gather(a) -> int:
    from .slurm import gather

    gather(a.run_dir)
    print((Path(a.run_dir) / "summary.md").read_text())
    return 0


def cmd_run(a) -> int:
    from .runner import describe, run

    if a.launcher == "slurm":
        return cmd_slurm(a)
    multi = a.nnodes > 1 or a.rdzv_endpoint
    if multi and not a.rdzv_endpoint and a.workload != "bert":
        raise ConfigError(f"--nnodes {a.nnodes}: give --rdzv-endpoint HOST:PORT (the node-0 host "
                          "and a free port, the same on every node)")
    hosts = a.hosts.split(",") if a.hosts else None
    if hosts and len(hosts) != a.nnodes:
        raise ConfigError(f"--hosts {a.hosts!r}: {len(hosts)} host(s) for --nnodes {a.nnodes}")
    cfg = _cfg(a)
    out = _out(a, cfg)
    if a.dry_run:
        print(describe(cfg, out, a.rdzv_endpoint, hosts))
        return 0
    base = int(a.rdzv_endpoint.rsplit(":", 1)[1]) + 1 if (a.rdzv_endpoint and cfg.workload == "bert") else None
    s = run(cfg, out, a.node_rank, a.rdzv_endpoint, a.rdzv_id, hosts, base)
    if s:
        print((out / "summary.md").read_text())
        print(f"results: {out}")
    else:
        print(f"node {a.node_rank}: ranks done; node 0 writes the summary in {out}")
    return 0


def cmd_max(a) -> int:
    from .search import markdown, max_accelerators

    cfg = _cfg(a)
    res = max_accelerators(cfg, _out(a, cfg, "search"), a.start, a.limit)
    print(markdown(res))
    return 0


def cmd_datasize(a) -> int:
    from .datasize import datasize, describe

    d = datasize(a.workload, _section(a), a.accelerators or 1, a.batch_size,
                 int(a.memory_gib * 2**30) if a.memory_gib else None, a.nnodes, a.steps,
                 a.multiplier, a.data, a.seed)
    print(json.dumps(d, indent=1) if a.json else describe(d))
    return 0


def cmd_pattern(a) -> int:
    from . import checkpoint

    if a.action == "show":
        pf = checkpoint.load(a.source)
        print(f"{pf.source} ({pf.host})")
        for w, p in pf.workloads.items():
            if p is None:
                print(f"  {w}: no checkpoint writes")
                continue
            s = p.summary
            print(f"  {w}: writers {p.writers}, {p.reuse}; per checkpoint and writer {s.get('files')} "
                  f"file(s), {s.get('writes')} writes, {s.get('bytes')} B, size quartiles "
                  f"{s.get('size_q1')} / {s.get('size_median')} / {s.get('size_q3')} B")
        return 0
    if a.action == "derive":
        if not a.workload or not a.checkpoint:
            raise ConfigError("pattern derive: give --workload and --checkpoint (the folder the "
                              "real run wrote its checkpoints to)")
        from ..trace import schema
        tr = schema.load(a.source)
        p, rows = checkpoint.derive(tr, a.checkpoint, a.workload, a.ranks, a.app_log)
    else:  # trace
        from ..settings import config, paths
        from .stage import trace_real_checkpoints
        w = a.source
        if w not in ("unet3d", "bert", "dlrm"):
            raise ConfigError(f"pattern trace {w!r}: allowed workloads: unet3d, bert, dlrm")
        cfg = config.load(seed=None, **{w: None})
        p, rows, _ = trace_real_checkpoints(w, getattr(cfg, w).model_dump(mode="json"), cfg.seed,
                                            paths.data_dir(w), paths.data_dir("emulator_patterns") / w,
                                            a.ranks)
    import pandas as pd
    print(pd.DataFrame(rows).to_string(index=False))
    checkpoint.write_file({p.workload: p}, a.output)
    print(f"pattern of {p.workload} -> {a.output}")
    return 0


def cmd_summarize(a) -> int:
    from .report import write

    write(a.run_dir)
    print((Path(a.run_dir) / "summary.md").read_text())
    return 0


def cmd_checkpoint(a) -> int:
    from . import llm_checkpoint as C, llm_layout as L
    from ..settings import paths

    from ..host import launcher

    lo = L.layout(a.model, a.ranks, a.scale)
    nodes = a.nodes or launcher.allocation_nodes()
    launcher.check_nodes([nodes], "--nodes")
    if nodes > lo.ranks:
        raise ConfigError(f"--nodes = {nodes}: more nodes than the {lo.ranks} ranks; allowed: 1..{lo.ranks}")
    here = -(-lo.ranks // nodes)   # ranks a node, dealt in blocks
    tier = paths.resolve(a.tier)
    run_dir = tier / f"llm-{a.model}"
    if a.dry_run:
        print(L.describe(lo, L.layout(a.model, a.ranks) if a.scale != 1 else None))
        n = C.needs(lo, a.checkpoints, here, direct=a.read_direct)
        print(f"  this run needs: {n['disk_bytes'] / 1e9:.3f} GB of disk in {run_dir} "
              f"({a.checkpoints} checkpoints), {n['memory_bytes'] / 1e9:.2f} GB of memory a node "
              f"({here} ranks of {n['per_rank_memory_bytes'] / 1e6:.0f} MB, {nodes} node(s))")
        return 0
    C.check(lo, run_dir, a.checkpoints, here, a.read_direct)
    print(f"checkpoint: {a.checkpoints} checkpoints of {lo.total_bytes / 1e6:.1f} MB from {lo.ranks} "
          f"ranks to {run_dir}, then the cache ({a.eviction}) and the reads", flush=True)
    out = Path(a.out).resolve() if a.out else paths.data_dir("emulator_runs") / f"llm-{a.model}-s{a.scale:g}"
    r = C.run_variant(lo, run_dir, fsync=not a.no_fsync, evict=a.eviction, direct=a.read_direct,
                      checkpoints=a.checkpoints, pause_s=a.pause_s, label=str(tier), nodes=nodes)
    C.write_run(out, lo, r)
    print((out / "summary.md").read_text())
    print(f"results: {out}")
    return 0


def _common(p) -> None:
    p.add_argument("workload", help="unet3d, bert or dlrm")
    p.add_argument("-B", "--batch-size", type=int, default=None,
                   help="per accelerator (unet3d, bert) or global (dlrm); default: the sweep's smallest")
    p.add_argument("-G", "--accelerators", type=int, default=None,
                   help="emulated accelerators, all nodes together; default: the sweep's largest")
    p.add_argument("--data", default=None, help="the data set folder (default data/<workload>)")
    p.add_argument("--params", default=None, help="params file with the workload's section (default params.yaml)")
    p.add_argument("--set", nargs="*", default=[], help="PART.KEY=YAML over the section, e.g. train.epochs=2")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--nnodes", "--nodes", dest="nnodes", type=int, default=1,
                   help="client machines (--launcher slurm: nodes to allocate)")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:  # its own options (python -m experiments.emulator bench --help)
        from .bench import main as bench_main
        return bench_main(argv[1:])
    ap = ArgumentParser(prog="python -m experiments.emulator", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn in (("run", cmd_run), ("max-accelerators", cmd_max)):
        p = sub.add_parser(name)
        _common(p)
        p.add_argument("--compute-model", default="fit", help="fit, thesis-v100, zero or a compute-model file")
        p.add_argument("--checkpoint-pattern", default="traced", help="traced, thesis, none or a pattern file")
        p.add_argument("--checkpoint-dir", default=None)
        p.add_argument("--out", default=None, help="results folder (default data/emulator_runs/<name>)")
        p.add_argument("--no-sync", action="store_true", help="no barrier per step")
        p.set_defaults(fn=fn)
        if name == "run":
            p.add_argument("--dry-run", action="store_true", help="print the resolved config and the launch command")
            p.add_argument("--node-rank", type=int, default=0)
            p.add_argument("--rdzv-endpoint", default=None, help="HOST:PORT of node 0 (several nodes)")
            p.add_argument("--rdzv-id", default=None)
            p.add_argument("--hosts", default=None, help="BERT across nodes: host of each node, comma separated")
            p.add_argument("--launcher", default="local", choices=["local", "slurm"],
                           help="slurm: write (with --submit, sbatch) a batch script, one task per node")
            p.add_argument("--submit", action="store_true", help="--launcher slurm: sbatch the script and "
                           "wait for it, then summarize")
            p.add_argument("--tasks-per-node", type=int, default=1,
                           help="--launcher slurm: emulator nodes per Slurm node (default 1)")
            p.add_argument("--partition", default=None, help="--launcher slurm: the partition (sbatch -p)")
            p.add_argument("--time-limit", default="1:00:00", help="--launcher slurm: sbatch --time")
        else:
            p.add_argument("--start", type=int, default=1)
            p.add_argument("--limit", type=int, default=64)
    p = sub.add_parser("datasize")
    _common(p)
    p.add_argument("--memory-gib", type=float, default=None, help="memory of one client node (default: this host)")
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--multiplier", type=float, default=5.0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_datasize)
    p = sub.add_parser("pattern", help="checkpoint patterns: show, derive (from a trace), trace (a short real run)")
    p.add_argument("action", choices=["show", "derive", "trace"])
    p.add_argument("source", help="show: traced|thesis|FILE; derive: TRACE.parquet; trace: WORKLOAD")
    p.add_argument("--workload", default=None)
    p.add_argument("--checkpoint", nargs="*", default=None, help="the real run's checkpoint folder(s)")
    p.add_argument("--app-log", default=None, help="the real run's folder (app-r*.jsonl) or log file")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("-o", "--output", default="checkpoint_pattern.json")
    p.set_defaults(fn=cmd_pattern)
    p = sub.add_parser("summarize", help="(re)write summary.json and summary.md of a run folder")
    p.add_argument("run_dir")
    p.set_defaults(fn=cmd_summarize)
    p = sub.add_parser("gather", help="gather the task folders of a --launcher slurm run into one "
                       "run and summarize it (the batch script's last step)")
    p.add_argument("run_dir")
    p.set_defaults(fn=cmd_gather)
    p = sub.add_parser("checkpoint", help="LLM checkpointing as MLPerf Storage defines it (llama3 "
                       "8B..1T, DeepSpeed files, torch.save + fsync, reads off the page cache)")
    p.add_argument("--model", required=True, help="llama3-8b, llama3-70b, llama3-405b or llama3-1t")
    p.add_argument("--tier", required=True, help="the folder to write the checkpoints in")
    p.add_argument("--ranks", type=int, default=None, help="MPI ranks (default: the rules' count)")
    p.add_argument("--scale", type=float, default=1.0, help="divide every tensor by this (>= 1)")
    p.add_argument("--checkpoints", type=int, default=10, help="written, then read back (rules: 10)")
    p.add_argument("--pause-s", type=float, default=0.0, help="untimed pause before each checkpoint")
    p.add_argument("--eviction", default="auto", help="before the reads: auto, drop_caches, fadvise "
                   "or none (reads then likely served from the page cache, and flagged)")
    p.add_argument("--dry-run", action="store_true", help="print the layout and what the run needs")
    p.add_argument("--no-fsync", action="store_true", help="no fsync of files and folders (what a "
                   "benchmark that forgets it measures)")
    p.add_argument("--read-direct", action="store_true", help="read with O_DIRECT, then torch.load")
    p.add_argument("--nodes", type=int, default=None, help="nodes of the Slurm allocation to run the "
                   "ranks on (srun; default: all of them, 1 off Slurm)")
    p.add_argument("--out", default=None, help="results folder (default data/emulator_runs/llm-...)")
    p.set_defaults(fn=cmd_checkpoint)
    sub.add_parser("bench", help="emulator with zero compute vs fio on the same files, per tier "
                   "(bench --help for its options)")
    a = ap.parse_args(argv)
    try:
        check_args(MODELS[a.cmd], a, ap)
        return a.fn(a)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
