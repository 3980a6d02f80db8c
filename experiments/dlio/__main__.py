"""``python -m experiments.dlio``: DLIO (dlio-benchmark 2.0.0) driven from ``params.yaml``.

    python -m experiments.dlio status                        can DLIO run here? (and why not)
    python -m experiments.dlio plan unet3d --ranks 2 -b 2    dry run: DLIO's config and command
    python -m experiments.dlio run bert --ranks 1 --out /tmp/dlio-bert
    python -m experiments.dlio run dlrm --compute-model thesis-v100
    python -m experiments.dlio.bench                         zero-compute DLIO vs fio per tier
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

import yaml

from ..settings.config import ConfigError
from . import environment, runner
from .workload_config import WORKLOADS


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help=f"one of: {', '.join(WORKLOADS)}")
    p.add_argument("--ranks", "-G", type=int, default=1, help="processes (emulated accelerators)")
    p.add_argument("--batch-size", "-b", type=int, default=None,
                   help="ours: per rank (unet3d, bert), global (dlrm); default: the first of sweep.batch_sizes")
    p.add_argument("--compute-model", default=None,
                   help="fit (default), thesis-v100, or a compute-model JSON file")
    p.add_argument("--compute-time", type=float, default=None,
                   help="seconds of sleep per step (overrides the compute model; 0 for throughput)")
    p.add_argument("--data-dir", default=None, help="our data set (default data/<workload>)")
    p.add_argument("--checkpoint-bytes", default="auto",
                   help="bytes of one real checkpoint; 'auto' (from results/<workload>/env.json) or 'none'")
    p.add_argument("--timeout", type=int, default=None, help="seconds (default train.timeout_s)")
    p.add_argument("--out", default=None, help="run folder (default data/dlio/runs/<workload>-G<G>)")


def _kw(a) -> dict:
    ck = a.checkpoint_bytes
    ck = None if str(ck).lower() == "none" else ("auto" if ck == "auto" else int(ck))
    return {"batch_size": a.batch_size, "compute_time_s": a.compute_time,
            "compute_model": a.compute_model, "data_dir": a.data_dir, "checkpoint_bytes": ck,
            "timeout_s": a.timeout}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.dlio", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("status", help="whether DLIO's environment can run here")
    _args(sub.add_parser("plan", help="print DLIO's config and command; run nothing"))
    _args(sub.add_parser("run", help="run DLIO and print what it measured"))
    a = ap.parse_args(argv)
    if a.cmd == "status":
        s = environment.status()
        print(json.dumps(s.facts(), indent=1))
        return 0 if s.ok else 1
    from ..settings import paths

    out = a.out or paths.data_dir("dlio") / "runs" / f"{a.workload}-G{a.ranks}"
    try:
        if a.cmd == "plan":
            plan = runner.prepare(a.workload, None, a.ranks, out, dry_run=True, **_kw(a))
            print(f"# {plan.config_file}")
            print(yaml.safe_dump(plan.built.config, sort_keys=False))
            print("# command (run in", plan.cwd, "with", " ".join(f"{k}={v}" for k, v in plan.env_set.items()), ")")
            print(shlex.join(plan.command))
            print("# notes")
            for n in plan.built.notes:
                print("-", n)
            if not plan.status.ok:
                print(f"# DLIO cannot run here: {plan.status.why}")
            return 0
        r = runner.run(a.workload, None, a.ranks, out, **_kw(a))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if r["status"] != "measured":
        print(f"DLIO {a.workload}: not measured: {r['why']}")
        if r.get("output_tail"):
            print(r["output_tail"])
        return 1
    print(r["epochs"].round(4).to_string(index=False))
    print(json.dumps(r["row"], indent=1, default=str))
    print(f"results: {r['out_dir']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
