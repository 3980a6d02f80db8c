"""UNET3D's data: pairs of .npy files per case, KiTS19-like (Section 4.5, Fig 4.1).

Case ``i`` is ``case_XXXXX_x.npy`` (CT image, float32, shape (1, d1, d2, d2), values uniform in
(-2.340702, 2.639792)) and ``case_XXXXX_y.npy`` (mask, uint8 in {0, 1}, same shape). d1 and d2
are drawn from normals fitted to KiTS19 after the reference's resampling (d1 is bimodal around
175 and 300, approximated by one normal, as the thesis did), clipped to the observed ranges,
then multiplied by ``scale``: at scale 1 the image is ~117 MB on average (paper: 117 +- 54 MB).
Training cases are ``train/case_00000..``, evaluation cases ``eval/case_10000..``: no name is
shared between the two sets (the clash the thesis found in the benchmark, Table 5.1).
Case ``i`` depends only on ``(seed, i)``, whatever the number of workers.
"""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # keep pydantic off the rank programs' import path
    from .settings import Unet3dData

IMAGE_RANGE = (-2.340702, 2.639792)
# KiTS19 after resampling: d1 (slices) ~ N(240, 60) in [128, 512]; d2 ~ N(350, 50) in [256, 512]
# (the mean volume 240 * 350^2 float32 voxels = 117.6 MB, the thesis's mean image size).
D1 = (240.0, 60.0, 128, 512)
D2 = (350.0, 50.0, 256, 512)
EVAL_OFFSET = 10_000
MANIFEST = "filelist.csv"


def min_dims(scale: float) -> tuple[int, int]:
    """The smallest (d1, d2) a case can have at ``scale``."""
    return max(1, int(D1[2] * scale)), max(1, int(D2[2] * scale))


def case_shape(seed: int, index: int, scale: float) -> tuple[int, int, int, int]:
    rng = np.random.default_rng([seed, 0x3D, index, 0])
    d1 = int(np.clip(rng.normal(D1[0], D1[1]), D1[2], D1[3]) * scale)
    d2 = int(np.clip(rng.normal(D2[0], D2[1]), D2[2], D2[3]) * scale)
    return (1, max(1, d1), max(1, d2), max(1, d2))


def make_case(seed: int, index: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    shape = case_shape(seed, index, scale)
    rng = np.random.default_rng([seed, 0x3D, index, 1])
    x = rng.uniform(*IMAGE_RANGE, size=shape).astype(np.float32)
    y = (rng.random(shape, dtype=np.float32) < 0.5).astype(np.uint8)
    return x, y


def _work(args) -> list[dict]:
    folder, seed, scale, items = args
    rows = []
    for split, index in items:
        x, y = make_case(seed, index, scale)
        base = Path(folder) / split / f"case_{index:05d}"
        np.save(f"{base}_x.npy", x)
        np.save(f"{base}_y.npy", y)
        rows.append({"split": split, "case": index, "path_x": f"{split}/case_{index:05d}_x.npy",
                     "path_y": f"{split}/case_{index:05d}_y.npy", "d1": x.shape[1], "d2": x.shape[2],
                     "bytes_x": os.path.getsize(f"{base}_x.npy"),
                     "bytes_y": os.path.getsize(f"{base}_y.npy")})
    return rows


def generate(out: Path, cfg: "Unet3dData", seed: int) -> dict:
    """Write the cases and ``filelist.csv`` (last) under ``out``, atomically."""
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "train").mkdir(parents=True)
    (tmp / "eval").mkdir()
    items = ([("train", i) for i in range(cfg.train_cases)]
             + [("eval", EVAL_OFFSET + i) for i in range(cfg.eval_cases)])
    chunks = [items[i:i + 4] for i in range(0, len(items), 4)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=cfg.workers or os.cpu_count() or 1) as pool:
        rows = [r for part in pool.map(_work, [(str(tmp), seed, cfg.scale, c) for c in chunks]) for r in part]
    os.sync()
    seconds = time.perf_counter() - t0
    m = pd.DataFrame(rows)
    m.to_csv(tmp / MANIFEST, index=False)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    nbytes = int(m["bytes_x"].sum() + m["bytes_y"].sum())
    return {"workload": "unet3d", "files": 2 * len(m), "samples": len(m), "bytes": nbytes,
            "seconds": seconds, "MBps": nbytes / 1e6 / seconds}


def read_manifest(folder: Path, split: str | None = None) -> pd.DataFrame:
    folder = Path(folder)
    p = folder / MANIFEST
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the data set is incomplete; run `dvc repro workload_data`")
    m = pd.read_csv(p)
    return m[m["split"] == split].reset_index(drop=True) if split else m


def mean_image_MB(seed: int, scale: float = 1.0, n: int = 2000) -> float:
    """Mean image size (10^6 B of float32) the generator draws at ``scale``, over ``n`` cases."""
    return float(np.mean([np.prod(case_shape(seed, i, scale)) * 4 / 1e6 for i in range(n)]))
