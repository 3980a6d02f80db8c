"""UNET3D's data: pairs of .npy files per case, KiTS19-like (Section 4.5, Fig 4.1).

Case ``i`` is ``case_XXXXX_x.npy`` (CT image, float32, shape (1, d1, d2, d2), values in
(-2.340702, 2.639792)) and ``case_XXXXX_y.npy`` (mask, uint8, same shape). d1 and d2 are drawn
from normals fitted to KiTS19 after the reference's resampling (d1 is bimodal around 175 and
300, approximated by one normal, as the thesis did), clipped to the observed ranges, then
multiplied by ``scale``: at scale 1 the image is ~117 MB on average (paper: 117 +- 54 MB).
Training cases are ``train/case_00000..``, evaluation cases ``eval/case_10000..``: no name is
shared between the two sets (the clash the thesis found in the benchmark, Table 5.1).
Case ``i`` depends only on ``(seed, i)``, whatever the number of workers.

``content`` (the thesis's real vs generated data, Sec 4.7, 5.1.3):

- ``realistic`` (stands in for KiTS19): a body (elliptic cylinder of soft tissue), two kidneys
  (ellipsoids, label 1) and a tumour (a ball in one kidney, label 2) with noisy intensities,
  air outside the body; a mask has a few connected objects, as a real one.
- ``random`` (as the thesis's generated data and DLIO's: same names, shapes, dtypes and
  sizes, no structure): image uniform in the value range, mask uniform over the labels
  {0, 1, 2}. Not raw random bytes: float32 bit patterns include NaN and Inf and a mask byte
  above 2 is not a class, and the real model must accept the data (the thesis: "care must
  still be taken for the data to be accepted by the model", Sec 4.5).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from typing import TYPE_CHECKING

from .shapes import D1, D2

if TYPE_CHECKING:  # keep pydantic off the rank programs' import path
    from .settings import Unet3dData

IMAGE_RANGE = (-2.340702, 2.639792)
N_LABELS = 3  # background, kidney, tumour
NPY_HEADER = 128  # bytes before the array in a .npy file of these shapes (format 1.0)
EVAL_OFFSET = 10_000
MANIFEST = "filelist.csv"


def case_shape(seed: int, index: int, scale: float) -> tuple[int, int, int, int]:
    rng = np.random.default_rng([seed, 0x3D, index, 0])
    d1 = int(np.clip(rng.normal(D1[0], D1[1]), D1[2], D1[3]) * scale)
    d2 = int(np.clip(rng.normal(D2[0], D2[1]), D2[2], D2[3]) * scale)
    return (1, max(1, d1), max(1, d2), max(1, d2))


def _ellipsoid(grid, centre, radii) -> np.ndarray:
    z, yy, xx = grid
    return (((z - centre[0]) / radii[0]) ** 2 + ((yy - centre[1]) / radii[1]) ** 2
            + ((xx - centre[2]) / radii[2]) ** 2) <= 1.0


def make_case(seed: int, index: int, scale: float, content: str = "realistic") -> tuple[np.ndarray, np.ndarray]:
    """Case ``index``'s (image, mask) for ``content`` (module docstring)."""
    shape = case_shape(seed, index, scale)
    if content == "random":
        rng = np.random.default_rng([seed, 0x3D, index, 2])
        x = rng.uniform(*IMAGE_RANGE, size=shape).astype(np.float32)
        y = rng.integers(0, N_LABELS, size=shape, dtype=np.uint8)
        return x, y
    if content != "realistic":
        raise ValueError(f"content = {content!r}; allowed: realistic, random")
    rng = np.random.default_rng([seed, 0x3D, index, 1])
    _, d1, d2, _ = shape
    # Voxel centres in [0, 1] along each axis (float32 open grids, broadcast on use).
    grid = [((np.arange(n, dtype=np.float32) + 0.5) / n).reshape(s)
            for n, s in ((d1, (-1, 1, 1)), (d2, (1, -1, 1)), (d2, (1, 1, -1)))]
    body = _ellipsoid(grid, (0.5, 0.5, 0.5), (10.0, 0.36, 0.46))      # a cylinder along z
    y = np.zeros(shape[1:], np.uint8)
    kidneys = []
    for side in (0.3, 0.7):
        c = (rng.uniform(0.35, 0.65), rng.uniform(0.55, 0.65), side + rng.uniform(-0.04, 0.04))
        r = (rng.uniform(0.10, 0.16), rng.uniform(0.06, 0.09), rng.uniform(0.05, 0.07))
        kidneys.append((c, r))
        y[_ellipsoid(grid, c, r)] = 1
    c, r = kidneys[int(rng.integers(2))]
    t = rng.uniform(0.03, 0.05)
    tc = tuple(ci + rng.uniform(-0.5, 0.5) * ri for ci, ri in zip(c, r))
    y[_ellipsoid(grid, tc, (t * d2 / d1, t, t)) & (body | (y > 0))] = 2
    x = rng.normal(-0.2, 0.3, size=shape[1:]).astype(np.float32)        # soft tissue
    x[~body] = IMAGE_RANGE[0]                                           # air
    x[y == 1] += np.float32(1.4)
    x[y == 2] += np.float32(1.0)
    np.clip(x, *IMAGE_RANGE, out=x)
    return x[None], y[None]


def planned_bytes(cfg: "Unet3dData", seed: int) -> int:
    """Bytes the data set will take on disk (both files of every case, headers included)."""
    n = sum(int(np.prod(case_shape(seed, i, cfg.scale))) for i in range(cfg.train_cases))
    n += sum(int(np.prod(case_shape(seed, EVAL_OFFSET + i, cfg.scale))) for i in range(cfg.eval_cases))
    return n * 5 + 2 * NPY_HEADER * (cfg.train_cases + cfg.eval_cases)


def _work(args) -> list[dict]:
    folder, seed, scale, content, items = args
    rows = []
    for split, index in items:
        x, y = make_case(seed, index, scale, content)
        base = Path(folder) / split / f"case_{index:05d}"
        np.save(f"{base}_x.npy", x)
        np.save(f"{base}_y.npy", y)
        rows.append({"split": split, "case": index, "path_x": f"{split}/case_{index:05d}_x.npy",
                     "path_y": f"{split}/case_{index:05d}_y.npy", "d1": x.shape[1], "d2": x.shape[2],
                     "bytes_x": os.path.getsize(f"{base}_x.npy"),
                     "bytes_y": os.path.getsize(f"{base}_y.npy")})
    return rows


def generate(out: Path, cfg: "Unet3dData", seed: int) -> dict:
    """Write the cases and ``filelist.csv`` (last) under ``out``, atomically.

    States its size first and stops (``tiers.require_free``) when it does not fit."""
    from .datasets import start

    out = Path(out)
    content = getattr(cfg, "content", "realistic")
    planned = planned_bytes(cfg, seed)
    tmp = start(out, planned, f"unet3d data set ({content}, {cfg.train_cases} + {cfg.eval_cases} cases "
                f"at scale {cfg.scale})", "unet3d.data.train_cases / eval_cases / scale")
    (tmp / "train").mkdir(parents=True)
    (tmp / "eval").mkdir()
    items = ([("train", i) for i in range(cfg.train_cases)]
             + [("eval", EVAL_OFFSET + i) for i in range(cfg.eval_cases)])
    chunks = [items[i:i + 4] for i in range(0, len(items), 4)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=cfg.workers or os.cpu_count() or 1) as pool:
        rows = [r for part in pool.map(_work, [(str(tmp), seed, cfg.scale, content, c) for c in chunks])
                for r in part]
    os.sync()
    seconds = time.perf_counter() - t0
    m = pd.DataFrame(rows)
    m.to_csv(tmp / MANIFEST, index=False)
    os.replace(tmp, out)
    nbytes = int(m["bytes_x"].sum() + m["bytes_y"].sum())
    return {"workload": "unet3d", "content": content, "files": 2 * len(m), "samples": len(m),
            "bytes": nbytes, "planned_bytes": planned, "seconds": seconds, "MBps": nbytes / 1e6 / seconds}


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
