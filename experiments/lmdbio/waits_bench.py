"""How MPICH's waits behave when a pool's ranks outnumber the cores: LMDBIO's hand-over
strategies timed under each wait setting (a bench, not a test: ``make bench`` prints its table).

Each setting is an environment for the ranks (they inherit it when their pool starts): MPICH's
default polling, ``MPIR_CVAR_POLLS_BEFORE_YIELD`` raised, and ``MPIR_CVAR_ENABLE_HEAVY_YIELD=1``
(a sleep in place of ``sched_yield``, what :mod:`experiments.host.launcher` sets for pools that
outnumber the cores). Per (setting, strategy, P): the median wall seconds of ``--runs`` cold
runs (read of the whole LMDB, the page cache evicted first), the median voluntary and
involuntary context switches per rank. The LMDB is the default profile's CIFAR-like set, built
under ``explore/bench/lmdbio-waits`` (reused when it matches).

    python -m experiments.lmdbio.waits_bench [--procs 4 8] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import pandas as pd

from ..host import cache, launcher
from ..settings import paths
from ..host.envinfo import host_cores, host_label
from . import read as lm

SETTINGS = {"MPICH default": {},
            "POLLS_BEFORE_YIELD=100000": {"MPIR_CVAR_POLLS_BEFORE_YIELD": "100000"},
            "heavy yield": {launcher.HEAVY_YIELD: "1"}}
STRATEGIES = ("lmdb", "lmm", "stag")


def measure(procs: list[int], runs: int, records: int = 65536, record_bytes: int = 3072,
            seed: int = 20181001) -> pd.DataFrame:
    """One row per (setting, strategy, P): seconds (median of ``runs`` cold runs), switches per
    rank (medians over the runs of the per-rank means)."""
    if runs < 1 or not procs or min(procs) < 1:
        raise ValueError(f"waits_bench: runs = {runs}, procs = {procs}; allowed: runs >= 1, procs >= 1 each")
    db = paths.root() / "explore" / "bench" / "lmdbio-waits"
    cfg = lm.LMDBIOConfig(datasets=[{"name": "cifar", "records": records, "record_bytes": record_bytes}],
                          procs=procs, ranks_per_node=max(procs), map_size_mib=1024)
    prov = lm.build(db, records, record_bytes, cfg.map_size_mib << 20, seed)
    saved = {k: os.environ.get(k) for env in SETTINGS.values() for k in env}
    rows = []
    try:
        for name, env in SETTINGS.items():
            # only this setting's variables; heavy yield off explicitly, else the launcher turns
            # it on for these oversubscribed pools
            for k in saved:
                v = env.get(k, "0" if k == launcher.HEAVY_YIELD else None)
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            pools = launcher.Pools(lm.RANK_PROGRAM)
            try:
                for p in procs:
                    for s in STRATEGIES:
                        secs, vol, inv = [], [], []
                        for _ in range(runs):
                            cache.evict([db], "auto", label="waits_bench")
                            per = lm.run(db, prov, s, p, cfg, record_bytes, pool=pools.get(p, 1))
                            secs.append(float(per["t1"].max() - per["t0"].min()))
                            vol.append(float(per["cs_voluntary"].mean()))
                            inv.append(float(per["cs_involuntary"].mean()))
                        rows.append({"setting": name, "strategy": s, "P": p,
                                     "oversubscribed": launcher.oversubscribed(p),
                                     "seconds": statistics.median(secs),
                                     "cs_vol_per_rank": statistics.median(vol),
                                     "cs_invol_per_rank": statistics.median(inv), "runs": runs})
                        print(f"{name}, {s}, P = {p}: {rows[-1]['seconds']:.3f} s", file=sys.stderr, flush=True)
            finally:
                pools.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.lmdbio.waits_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, nargs="+", default=[4, 8], help="ranks per run (default: 4 8)")
    ap.add_argument("--runs", type=int, default=5, help="cold runs per strategy and P (default 5)")
    a = ap.parse_args(argv)
    df = measure(a.procs, a.runs)
    print(f"LMDBIO hand-over under MPICH's wait settings, {host_label()}, {host_cores()} "
          f"usable cores; median of {a.runs} cold runs (s), switches per rank (voluntary / involuntary)")
    print("| setting | strategy | P | more ranks than cores | s | switches / rank |\n|---|---|---|---|---|---|")
    for r in df.itertuples():
        print(f"| {r.setting} | {r.strategy} | {r.P} | {'yes' if r.oversubscribed else 'no'} | "
              f"{r.seconds:.3f} | {r.cs_vol_per_rank:.0f} / {r.cs_invol_per_rank:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
