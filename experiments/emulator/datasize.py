"""How large a data set an emulated run needs (MLPerf Storage's ``datasize`` rule).

Two lower bounds on the number of training samples, the larger wins:

- **memory**: the data set is at least ``multiplier`` (5) times the memory of all client
  nodes, so the page cache cannot hold it and reads reach the storage;
- **steps**: every accelerator runs at least ``steps`` (500) steps in an epoch:
  ``steps x batch per accelerator x accelerators`` samples (DLRM: ``steps x global batch``).

The sample size comes from the data folder when it exists (what is on disk), otherwise from the
generator's parameters (UNET3D: the case-size distribution at ``data.scale``; BERT: a few
serialized samples; DLRM: 160 B). The answer names the parameter to set in ``params.yaml``.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..settings import paths
from ..settings.config import ConfigError


def client_memory_bytes() -> int:
    from ..host.envinfo import memory_bytes
    return memory_bytes()


def sample_bytes(workload: str, section: dict, data_dir=None, seed: int = 0) -> tuple[float, str]:
    """(bytes per training sample, where the number comes from)."""
    from .config import data_layout

    d = Path(data_dir) if data_dir else paths.data_dir(workload)
    if d.exists():
        lay = data_layout(workload, d)
        if workload == "bert":
            n = section["data"]["samples_per_file"] * lay["train_files"]
            return lay["train_bytes"] / n, f"{d} ({lay['train_files']} files, {n} samples assumed from bert.data.samples_per_file)"
        return float(lay["sample_bytes"]), f"{d} (measured on disk)"
    if workload == "unet3d":
        from ..workloads.data_unet3d import mean_image_MB
        img = mean_image_MB(seed, section["data"]["scale"]) * 1e6
        return img * 1.25 + 256, f"generator at unet3d.data.scale = {section['data']['scale']} (image + uint8 mask)"
    if workload == "dlrm":
        from ..workloads.data_dlrm import SAMPLE_BYTES
        return float(SAMPLE_BYTES), "DLRM sample format (40 int32)"
    if workload == "retinanet":
        return float(section["data"]["mean_bytes"]), "retinanet.data.mean_bytes (one JPEG per sample)"
    import numpy as np
    import tensorflow as tf

    from ..workloads.data_bert import _serialize, make_example_arrays
    dc = section["data"]
    rng = np.random.default_rng(seed)
    n = [len(_serialize(tf, make_example_arrays(rng, dc["seq_len"], dc["max_predictions"], dc["vocab_size"])))
         for _ in range(32)]
    return float(np.mean(n)) + 16, "32 serialized samples (+16 B TFRecord framing)"


def datasize(workload: str, section=None, accelerators: int = 1, batch_size: int | None = None,
             memory_bytes: int | None = None, nodes: int = 1, steps: int = 500,
             multiplier: float = 5.0, data_dir=None, seed: int | None = None) -> dict:
    """The samples (and files, bytes) a run of ``accelerators`` at ``batch_size`` needs; see the
    module docstring. ``memory_bytes``: memory of one client node (default: this host's)."""
    from .config import max_accelerators_for, validate_section  # noqa: F401

    sec = validate_section(workload, section)
    if batch_size is not None and batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}; allowed: an integer >= 1 (None: the sweep's smallest)")
    if accelerators < 1 or nodes < 1 or steps < 1 or multiplier <= 0:
        raise ConfigError(f"accelerators = {accelerators}, nodes = {nodes}, steps = {steps}, "
                          f"multiplier = {multiplier}: accelerators, nodes and steps must be >= 1, "
                          "multiplier > 0")
    B = batch_size if batch_size is not None else min(sec["sweep"]["batch_sizes"])
    mem = int(memory_bytes or client_memory_bytes())
    if seed is None:
        from ..settings.config import read_params
        seed = int(read_params().get("seed", 0))
    per, where = sample_bytes(workload, sec, data_dir, seed)
    by_memory = math.ceil(multiplier * mem * nodes / per)
    by_steps = steps * B * (1 if workload == "dlrm" else accelerators)
    n = max(by_memory, by_steps)
    out = {"workload": workload, "accelerators": accelerators, "nodes": nodes, "batch_size": B,
           "client_memory_bytes": mem, "multiplier": multiplier, "steps": steps, "sample_bytes": per, "sample_bytes_from": where,
           "samples_for_memory": by_memory, "samples_for_steps": by_steps,
           "bound": "memory" if by_memory >= by_steps else "steps", "samples": n,
           "bytes": int(n * per)}
    if workload == "unet3d":
        out.update(files=2 * n, set={"unet3d.data.train_cases": n})
    elif workload == "bert":
        spf = sec["data"]["samples_per_file"]
        files = max(math.ceil(n / spf), accelerators)
        out.update(files=files, samples=files * spf, bytes=int(files * spf * per),
                   set={"bert.data.files": files})
    elif workload == "retinanet":
        out.update(files=n, set={"retinanet.data.train_files": n})
    else:
        out.update(files=1, set={"dlrm.data.train_samples": n})
    return out


def describe(d: dict) -> str:
    key, val = next(iter(d["set"].items()))
    return (f"{d['workload']}: {d['samples']:,} samples ({d['files']:,} file(s), {d['bytes'] / 1e9:.3g} GB) "
            f"for {d['accelerators']} accelerator(s) x batch {d['batch_size']} on {d['nodes']} node(s) "
            f"with {d['client_memory_bytes'] / 2**30:.3g} GiB each.\n"
            f"  memory rule: {d['samples_for_memory']:,} samples ({d['multiplier']:g}x client memory / "
            f"{d['sample_bytes']:.4g} B per sample, {d['sample_bytes_from']})\n"
            f"  steps rule:  {d['samples_for_steps']:,} samples ({d['steps']} steps per accelerator)\n"
            f"  -> the {d['bound']} rule decides; set {key}: {val} in params.yaml and run "
            f"`dvc repro workload_data` (check the disk has {d['bytes'] / 1e9:.3g} GB free)")
