"""Benchmark tables (not tests): how close the pipelines come to the devices.

``python -m experiments.bench`` (``make bench``) prints, per tier, the tf.data read-only
pipeline's best throughput as a fraction of fio's random read with the same size mix (goal:
at least 0.8), and data generation's MB/s beside fio's sequential write, from the results of
the last ``dvc repro``. Both sides of each ratio were measured in the same pipeline run.
"""

from __future__ import annotations

import sys

from . import results


def main() -> int:
    try:
        ceiling = results.load("tfdata_read_report")
        generation = results.load("tfdata_read_report", "generation_vs_fio.csv")
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("tf.data best throughput vs fio random read (same size mix), MB/s")
    print(ceiling.round(3).to_string(index=False))
    print("\ndata generation vs fio sequential write, MB/s")
    print(generation.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
