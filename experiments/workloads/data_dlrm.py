"""DLRM's data: one binary file of samples of 40 int32 (Section 4.1.3, Table 4.1).

A sample is ``[label, 13 dense, 26 categorical]``, 160 B, as the reference's "binary loader"
format: the label is 0/1 (about 25 % clicks), dense features are non-negative counts
(log-normal), categorical feature ``j`` is drawn within its Criteo cardinality
(:data:`~experiments.workloads.shapes.CRITEO_CARDINALITIES`) from a Zipf-like law, so a few
ids are hot. ``train_data.bin`` and ``test_data.bin``; chunk ``k`` of a file depends only on
``(seed, file, k)``, so the bytes are the same whatever the number of workers.

``content: random`` (the thesis's generated data, Sec 4.7): the same files and sizes, every
field uniform in its valid range with no structure: label 0/1 at 50 %, dense features
uniform non-negative int32, categorical ids uniform within each cardinality (no hot ids).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from typing import TYPE_CHECKING

from .shapes import CRITEO_CARDINALITIES

if TYPE_CHECKING:  # rank programs import this module; keep pydantic off their path
    from .settings import DlrmData

SAMPLE_INTS = 40
SAMPLE_BYTES = SAMPLE_INTS * 4
CHUNK = 65536  # samples per generation task
FILES = {"train": "train_data.bin", "eval": "test_data.bin"}


def make_samples(n: int, seed: int, file_id: int, chunk: int, content: str = "realistic") -> np.ndarray:
    """``n`` samples as an (n, 40) int32 array, from ``(seed, file_id, chunk)`` only."""
    out = np.empty((n, SAMPLE_INTS), dtype=np.int32)
    if content == "random":
        rng = np.random.default_rng([seed, 0xD17, file_id, chunk, 1])
        out[:, 0] = rng.integers(0, 2, n)
        out[:, 1:14] = rng.integers(0, 2**31 - 1, size=(n, 13), dtype=np.int32)
        out[:, 14:] = rng.integers(0, np.array(CRITEO_CARDINALITIES), size=(n, 26)).astype(np.int32)
        return out
    if content != "realistic":
        raise ValueError(f"content = {content!r}; allowed: realistic, random")
    rng = np.random.default_rng([seed, 0xD17, file_id, chunk])
    out[:, 0] = rng.random(n) < 0.25
    out[:, 1:14] = np.minimum(rng.lognormal(1.5, 1.5, size=(n, 13)), 2**31 - 1).astype(np.int32)
    card = np.array(CRITEO_CARDINALITIES, dtype=np.float64)
    u = rng.random((n, 26))
    out[:, 14:] = np.minimum(np.floor(card * u ** 3), card - 1).astype(np.int32)  # skewed ids
    return out


def _work(args) -> int:
    path, seed, file_id, chunk, n, content = args
    arr = make_samples(n, seed, file_id, chunk, content)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, arr.tobytes(), chunk * CHUNK * SAMPLE_BYTES)
    finally:
        os.close(fd)
    return n


def planned_bytes(cfg: "DlrmData") -> int:
    return (cfg.train_samples + cfg.eval_samples) * SAMPLE_BYTES


def generate(out: Path, cfg: "DlrmData", seed: int) -> dict:
    """Write both files under ``out`` (atomically: a ``.partial`` folder renamed into place);
    states the size first and stops (``tiers.require_free``) when it does not fit."""
    from .datasets import start

    out = Path(out)
    content = getattr(cfg, "content", "realistic")
    planned = planned_bytes(cfg)
    tmp = start(out, planned, f"dlrm data set ({content}, {cfg.train_samples} + {cfg.eval_samples} samples)",
                "dlrm.data.train_samples / eval_samples")
    tmp.mkdir(parents=True)
    tasks = []
    for file_id, (split, n) in enumerate((("train", cfg.train_samples), ("eval", cfg.eval_samples))):
        p = tmp / FILES[split]
        with open(p, "wb") as f:
            f.truncate(n * SAMPLE_BYTES)
        tasks += [(str(p), seed, file_id, k, min(CHUNK, n - k * CHUNK), content) for k in range(-(-n // CHUNK))]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=cfg.workers or os.cpu_count() or 1) as pool:
        n = sum(pool.map(_work, tasks))
    os.sync()
    seconds = time.perf_counter() - t0
    os.replace(tmp, out)
    nbytes = n * SAMPLE_BYTES
    return {"workload": "dlrm", "content": content, "files": 2, "samples": n, "bytes": nbytes,
            "planned_bytes": planned, "seconds": seconds, "MBps": nbytes / 1e6 / seconds}


def open_reader(folder: Path, split: str) -> tuple[int, int]:
    """(file descriptor, number of samples) of a split's file."""
    p = Path(folder) / FILES[split]
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: run `dvc repro workload_data`")
    return os.open(p, os.O_RDONLY), p.stat().st_size // SAMPLE_BYTES
