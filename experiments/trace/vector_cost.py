"""What the vector mode's cost per call is made of (issue 42, point 5; issue 56): the vector
program with one part taken out at a time, on fio's 4 KiB page-cache reads (the goal that is tight).

``python -m experiments.trace.vector_cost [--runs N] [--io-mib M] [--out DIR]`` runs, in the
same alternating run, fio untraced and under each variant of the vector mode's bpftrace program
(:func:`experiments.trace.bpftrace_backend.script`, the read and write exit probes as the vector
mode attaches them, filtered by the command's name instead of the traced tree, so that no
variant pays for following children):

- ``vector``: the whole program (each call's file number looked up in the per-(process,
  descriptor) map ``@fd``, resolved from the descriptor table only where it misses, and the call
  counted in ``@agg`` by (file number, bytes, operation));
- ``resolve_every_call``: the program before issue 56, the file resolved from the task's
  descriptor table at every call (``fd_cache=False``: about a dozen checked kernel-memory reads,
  and the once-per-inode name check, a map lookup);
- ``no_aggregation``: without the aggregation's count (a per-CPU hash keyed by file number and
  the packed operation and size);
- ``registers_only``: each probe reads the saved registers (checked) and counts, without finding
  the file or aggregating: what the descriptor costs before any map is touched;
- ``count_only``: the floor, each exit probe only counting (``@n = count()``);
- ``vector_kfunc``, ``count_only_kfunc`` (issue 70; where bpftrace attaches ``kfunc`` probes):
  the whole program and the floor on the system-call functions' fexit instead of the
  tracepoints (:func:`experiments.trace.bpftrace_backend.to_kfunc`).

Prints and writes ``vector_cost.csv`` (default ``results/trace_bench/``): per variant the
command's median CPU seconds, the CPU overhead in percent with its 95 % bootstrap interval, and
the extra CPU per call in microseconds. A part whose removal moves the cost by less than the
intervals' width costs less than this box can resolve.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import pandas as pd

from ..settings import paths
from ..statistics import stats
from ..output.results import atomic_write
from . import bench
from . import bpftrace_backend as bt


def _by_comm(prog: str, comm: str) -> str:
    """``prog`` with the traced tree replaced by a filter on the process name ``comm`` (the
    descriptor epoch a constant 1)."""
    prog = "\n".join(x for x in prog.split("\n") if not x.startswith("tracepoint:sched"))
    return (prog.replace("@tree[$1] = 1; ", "@tree[0] = 1; ").replace("/@tree[pid]/", f'/comm == "{comm}"/')
            .replace("$e = @tree[pid];", f'$e = comm == "{comm}" ? (uint64)1 : (uint64)0;'))


def variants(comm: str) -> dict[str, str]:
    """The programs, each filtered by process name ``comm``."""
    pr = bt._probe()
    full, before = (_by_comm(bt.script(None, False, "device", bench.READY_TOKEN, "vector", "kernel",
                                       pr["syscalls"] or None, pr["exit_regs"], False, cache), comm)
                    for cache in (True, False))
    no_agg = re.sub(r"@agg\[[^\]]*\] = count\(\); ", "", full).replace("print(@agg); ", "").replace("clear(@agg); ", "")
    # from the file's lookup to the count: gone (the maps it used with it), one count left
    regs = re.sub(r"\$c = @fd\[.*?@agg\[[^\]]*\] = count\(\); ", "@agg[0, 0] = count(); ", full, flags=re.S)
    regs = "\n".join(x for x in regs.split("\n") if "@fd[" not in x).replace("clear(@fd); ", "").replace("clear(@seen); ", "")
    kfunc = {}
    if bt.probe_kind()[0] == "kfunc":
        kfunc = {"vector_kfunc": _by_comm(bt.script(None, False, "device", bench.READY_TOKEN, "vector", "kernel",
                                                    pr["syscalls"] or None, pr["exit_regs"], False, True,
                                                    probes="kfunc"), comm),
                 "count_only_kfunc": bench.probe_program(comm, "kfunc")}
    return {
        "vector": full,
        "resolve_every_call": before,
        "no_aggregation": no_agg,
        "registers_only": regs,
        "count_only": bench.probe_program(comm),
        **kfunc,
    }


def measure(directory: Path, runs: int = 7, io_mib: int = 256) -> pd.DataFrame:
    """One row per (variant, repeat): the command's wall and CPU seconds; fio at 4 KiB."""
    job = bench.fio_jobs(directory, io_mib * 8, 256, (4,))[0]   # fio_jobs reads io/8 at 4 KiB
    cmd, data = job["cmd"], job["warm"][0]
    progs = variants("fio")
    rows = []
    bench.untraced(cmd)
    for r in range(runs):
        bench.progress_line(f"vector cost: repeat {r + 1}/{runs}")
        bench.warm(data)
        wall, cpu = bench.untraced(cmd)
        rows.append({"variant": "none", "repeat": r, "command_s": wall, "command_cpu_s": cpu})
        for name, prog in progs.items():
            bench.warm(data)
            wall, cpu, _ = bench.under_program(prog, cmd)
            rows.append({"variant": name, "repeat": r, "command_s": wall, "command_cpu_s": cpu})
    return pd.DataFrame(rows).assign(calls=job["io_mib"] * 256)   # 4 KiB reads of io_mib MiB


def table(raw: pd.DataFrame) -> pd.DataFrame:
    base = raw[raw.variant == "none"]["command_cpu_s"]
    rows = []
    for v, g in raw.groupby("variant", sort=False):
        pt, ci = stats.ratio_of_medians(g["command_cpu_s"], base, level=0.95)
        rows.append({"variant": v, "runs": len(g), "cpu_s": g["command_cpu_s"].median(),
                     "cpu_overhead_pct": 100 * (pt - 1), "cpu_overhead_lo": 100 * (ci.low - 1),
                     "cpu_overhead_hi": 100 * (ci.high - 1),
                     "us_per_call": 1e6 * (g["command_cpu_s"].median() - base.median()) / g["calls"].iloc[0]})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.trace.vector_cost", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--io-mib", type=int, default=256, help="MiB fio reads in 4 KiB calls")
    ap.add_argument("--out", default=None, help="folder for vector_cost.csv (default: results/trace_bench)")
    a = ap.parse_args(argv)
    if a.runs < 2 or a.io_mib < 1:
        raise SystemExit(f"error: --runs = {a.runs}, --io-mib = {a.io_mib}; allowed: runs >= 2, "
                         "io-mib >= 1")
    ok, why, _ = bt.available()
    if not ok or not bt.kernel_files_available()[0]:
        print(f"vector cost: not measured ({why or bt.kernel_files_available()[1]})")
        return 1
    with tempfile.TemporaryDirectory(prefix="dlio-vector-cost-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        raw = measure(Path(d), a.runs, a.io_mib)
    t = table(raw)
    print(f"\nThe vector program's cost, a part taken out at a time: fio 4 KiB page-cache reads, "
          f"{int(raw.calls.iloc[0]):,} calls, median of {a.runs}")
    print(t.to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
    out = Path(a.out) if a.out else paths.results_dir("trace_bench")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "vector_cost.csv", lambda p: t.to_csv(p, index=False))
    atomic_write(out / "vector_cost_raw.csv", lambda p: raw.to_csv(p, index=False))
    print(f"-> {out}/vector_cost.csv, vector_cost_raw.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
