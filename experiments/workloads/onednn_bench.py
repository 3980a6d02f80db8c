"""Benchmark table (not a test): why UNET3D's compute time is not linear in batch size on a CPU.

``python -m experiments.workloads.onednn_bench`` (part of ``make bench``) times one training
step's forward and backward pass of the UNET3D model of ``params.yaml`` (``unet3d.model``) on
random input at batch 1, 2 and 4, once with PyTorch's oneDNN convolutions allowed (the default,
as in the ``unet3d`` stage) and once with them disabled, and prints the median seconds per step
and per sample. ATen picks oneDNN for a 3x3x3 convolution only when the batch is larger than 1
or the input is large (``ConvParams::use_mkldnn``: N·C·D·H > 20480); at this profile's small
crop, batch 1 falls back to the native kernel, so a step at batch 2 can take less time than at
batch 1, and the linear model of Eq 5.1 fits badly. The thesis timed a V100, where this
heuristic does not apply.
"""

from __future__ import annotations

import argparse
import statistics
import time


def step_seconds(model, batch: int, crop: int, runs: int, warmup: int = 3) -> float:
    """Median wall seconds of forward + backward of ``model`` on a random (batch, 1, crop^3) input."""
    import torch

    x = torch.randn(batch, 1, crop, crop, crop)
    times = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        model(x).sum().backward()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(batches: list[int], runs: int):
    """Rows: oneDNN allowed or not, batch, median s per step, s per sample."""
    import pandas as pd
    import torch

    from ..settings import config
    from .unet3d import build_model

    m = config.load(unet3d=None).unet3d.model
    torch.manual_seed(0)
    model = build_model(m.base_channels, m.depth)
    rows = []
    for allowed in (True, False):
        with torch.backends.mkldnn.flags(enabled=allowed):
            for b in batches:
                s = step_seconds(model, b, m.crop, runs)
                rows.append({"oneDNN": "allowed" if allowed else "disabled", "batch": b,
                             "s_per_step": round(s, 4), "s_per_sample": round(s / b, 4)})
    return pd.DataFrame(rows), m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args(argv)
    if a.runs < 1 or min(a.batches) < 1:
        ap.error(f"--runs {a.runs} and --batches {a.batches}: each must be at least 1")
    import warnings

    import torch

    # torch warns that TF32 on oneDNN needs an Intel GPU when the flags are set: not our concern
    warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
    df, m = measure(a.batches, a.runs)
    print(f"UNET3D forward + backward on CPU ({torch.get_num_threads()} threads; base_channels "
          f"{m.base_channels}, depth {m.depth}, crop {m.crop}), median of {a.runs}:")
    print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
