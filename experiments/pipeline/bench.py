"""Benchmark tables (not tests): how close the pipelines come to the devices.

``python -m experiments.pipeline.bench`` (``make bench``) measures, per tier and in the same run, the
tf.data read-only pipeline over the staged ImageNet-like set at growing thread counts and fio's
random read with the same size mix, and prints the best pipeline throughput as a fraction of
fio's (goal: at least 0.8). It also prints data generation's MB/s beside fio's sequential write,
from the last ``dvc repro``. Needs the ``imagenet_like`` and ``fio_baseline`` stages' outputs.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import pandas as pd

from ..settings import config, paths
from ..output import results
from ..chien import fio_baseline, tfdata_read
from ..datasets import imagenet_like
from ..host.tiers import stage_copy


def measure_fraction(threads: list[int], runs: int) -> pd.DataFrame:
    """Per tier: best median read-only MB/s over ``threads`` and fio's median random-read MB/s."""
    cfg = config.load(seed=None, tiers=None, tfdata_read=None, fio_baseline=None,
                      imagenet_size_mix=None)
    rcfg = cfg.tfdata_read.model_copy(update={"threads": threads, "variants": ["read_only"],
                                              "runs": runs, "warmup": 1})
    rows = []
    for tier in cfg.tiers:
        m = imagenet_like.read_manifest(stage_copy(paths.data_dir("imagenet_like"), tier))
        raw, _ = tfdata_read.measure({tier.name: m}, [tier], rcfg, cfg.seed)
        s = tfdata_read.summarize(raw)
        best = s.loc[s["MBps"].idxmax()]
        path = tier.dir / "fio-bench.testfile"
        try:
            fio_baseline.run_job(path, "seqwrite", cfg.fio_baseline, cfg.imagenet_size_mix, True)
            fio = [fio_baseline.run_job(path, "randread", cfg.fio_baseline, cfg.imagenet_size_mix,
                                        True)["bw_bytes"] / 1e6 for _ in range(runs)]
        finally:
            path.unlink(missing_ok=True)
        rows.append({"tier": tier.name, "best_threads": int(best["threads"]),
                     "tfdata_read_only_MBps": float(best["MBps"]),
                     "fio_randread_MBps": statistics.median(fio),
                     "fraction_of_fio": float(best["MBps"]) / statistics.median(fio)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.pipeline.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="8,16,32,64", help="thread counts to try (comma list)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        threads = [int(t) for t in args.threads.split(",")]
        if any(t < 1 for t in threads) or args.runs < 1:
            raise ValueError
    except ValueError:
        print(f"error: --threads = {args.threads!r}, --runs = {args.runs}: "
              "thread counts and runs must be integers >= 1", file=sys.stderr)
        return 2
    try:
        generation = results.load("tfdata_read_report", "generation_vs_fio.csv")
        table = measure_fraction(threads, args.runs)
    except (FileNotFoundError, config.ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\ntf.data read-only pipeline vs fio random read (same size mix, same run), MB/s")
    print(table.round(3).to_string(index=False))
    print("\ndata generation vs fio sequential write (last dvc repro), MB/s")
    print(generation.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
