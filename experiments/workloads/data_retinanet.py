"""RetinaNet's data (MLPerf Storage v3.0's ``retinanet`` workload): one JPEG per sample, sized
like OpenImages', with boxes for the detection targets.

The v3.0 config (mlcommons/storage ``configs/dlio/workload/retinanet_b200.yaml``) reads
1,170,301 JPEG files of ``record_length_bytes`` 322,957 B. DLIO writes every file at that one
size; the real OpenImages files spread around it. Here file ``i``'s target size is drawn from a
log-normal with mean ``mean_bytes`` and log-space deviation ``size_sigma`` (0: every file exactly
``mean_bytes``, DLIO's fixed size, the JPEG padded after its end marker: the fixed-size variant
``data/retinanet-fixed`` of :func:`fixed_variant`, for the fixed-against-spread comparison), clipped to
[``mean_bytes`` / 16, 16 x ``mean_bytes``], then scaled so that the set's mean is ``mean_bytes``. The shape of the spread is our assumption: no
OpenImages size histogram is in the papers read here; a log-normal is the usual shape of
photograph file sizes, and 0.5 (a coefficient of variation of about 0.53) is near the older
v2 what-if configs' 153,600 +- 51,200 B (0.33) widened for photographs of mixed resolution.

Each image is the ImageNet-like generator's decodable RGB JPEG (smooth colour field plus
grain, rescaled until its encoded size is within ``size_tolerance`` of the target:
:func:`experiments.datasets.imagenet_like.make_jpeg`), so the bytes of file ``i`` depend only
on ``(seed, i)`` whatever the number of workers. Boxes: 1 to ``max_boxes`` per image, each a
class in ``[0, num_classes)`` and a rectangle inside the image (pixels, ``x0 < x1``,
``y0 < y1``), drawn from ``(seed, i)``; they are targets the model trains on, not drawn into
the pixels (the I/O and the decode do not depend on them).

Layout: ``train/img_0000000.jpg`` ..., ``eval/img_<train_files + j>.jpg`` (no name shared
between the sets), ``filelist.csv`` (split, path, bytes, target_bytes, width, height) and one
box index ``boxes.csv`` (path, label, x0, y0, x1, y1), both written last.
"""

from __future__ import annotations

import io
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # keep pydantic off the rank programs' import path
    from .settings import RetinanetData

MANIFEST = "filelist.csv"
BOXES = "boxes.csv"
SPLITS = ("train", "eval")
V3_RECORD_BYTES = 322_957      # retinanet_b200.yaml: dataset.record_length_bytes
V3_TRAIN_FILES = 1_170_301     # retinanet_b200.yaml: dataset.num_files_train


def target_sizes(n: int, mean_bytes: int, sigma: float, seed: int, stream: int = 0) -> np.ndarray:
    """``n`` target file sizes (B): log-normal with log-space deviation ``sigma`` (0: all
    ``mean_bytes``), clipped to [mean / 16, 16 x mean], scaled to the mean ``mean_bytes``;
    from ``(seed, stream)`` only (a split draws its own stream, so each split has the mean)."""
    if sigma == 0:
        return np.full(n, int(mean_bytes), dtype=np.int64)
    rng = np.random.default_rng([seed, 0x4E7A, stream])
    mu = np.log(mean_bytes) - sigma ** 2 / 2          # E[exp(N(mu, s))] = exp(mu + s^2 / 2)
    s = np.clip(rng.lognormal(mu, sigma, n), mean_bytes / 16, mean_bytes * 16)
    # A small set's sample mean strays from the law's (about sigma / sqrt(n)): the draws are
    # scaled so that every set's mean is mean_bytes, what DLIO's fixed-size set has.
    return (s * (mean_bytes / s.mean())).astype(np.int64)


def make_boxes(seed: int, index: int, width: int, height: int, max_boxes: int, num_classes: int) -> list[tuple]:
    """1 to ``max_boxes`` boxes (label, x0, y0, x1, y1) inside a ``width`` x ``height`` image,
    each at least 2 px a side; from ``(seed, index)`` only."""
    rng = np.random.default_rng([seed, 0xB0C5, index])
    out = []
    for _ in range(int(rng.integers(1, max_boxes + 1))):
        bw, bh = (rng.uniform(0.1, 0.6, 2) * (width, height)).clip(2)
        x0, y0 = rng.uniform(0, width - bw), rng.uniform(0, height - bh)
        out.append((int(rng.integers(num_classes)), round(x0, 1), round(y0, 1),
                    round(x0 + bw, 1), round(y0 + bh, 1)))
    return out


def file_name(split: str, index: int) -> str:
    return f"{split}/img_{index:07d}.jpg"


def _work(args) -> list[dict]:
    from PIL import Image

    from ..datasets.imagenet_like import make_jpeg

    out, seed, quality, tol, max_boxes, num_classes, items, exact = args
    done = []
    for split, index, target in items:
        if exact:
            # one size for every file, as DLIO writes them: encoded at most the target, then
            # padded after the JPEG's end marker (decoders stop there) to the target exactly
            data = make_jpeg(int(target / (1 + tol)), seed, index, quality, tol)
            data += bytes(int(target) - len(data))
        else:
            data = make_jpeg(int(target), seed, index, quality, tol)
        name = file_name(split, index)
        (Path(out) / name).write_bytes(data)
        w, h = Image.open(io.BytesIO(data)).size      # the header only
        done.append({"split": split, "path": name, "bytes": len(data), "target_bytes": int(target),
                     "width": w, "height": h,
                     "boxes": make_boxes(seed, index, w, h, max_boxes, num_classes)})
    return done


def split_targets(cfg: "RetinanetData", seed: int) -> np.ndarray:
    """Target sizes of the training files then the evaluation files, each split scaled to ``mean_bytes``."""
    return np.concatenate([target_sizes(cfg.train_files, cfg.mean_bytes, cfg.size_sigma, seed, 0),
                           target_sizes(cfg.eval_files, cfg.mean_bytes, cfg.size_sigma, seed, 1)])


def planned_bytes(cfg: "RetinanetData", seed: int) -> int:
    """The data set's size: the drawn targets with the size tolerance on top, plus the manifests."""
    n = cfg.train_files + cfg.eval_files
    return int(split_targets(cfg, seed).sum() * (1 + cfg.size_tolerance)) + 200 * n


def generate(out: Path, cfg: "RetinanetData", seed: int) -> dict:
    """Write the JPEGs, ``filelist.csv`` and ``boxes.csv`` under ``out`` (atomically: a
    ``.partial`` folder renamed into place); states the size first and stops
    (``tiers.require_free``) when it does not fit. Returns facts (files, bytes, mean and
    coefficient of variation of the file sizes, seconds, MB/s)."""
    from .datasets import start

    out = Path(out)
    if cfg.content != "realistic":
        raise ValueError(f"retinanet.data.content = {cfg.content!r}: RetinaNet has only realistic content "
                         "(no generated-data row); allowed: realistic")
    n = cfg.train_files + cfg.eval_files
    tmp = start(out, planned_bytes(cfg, seed), f"retinanet data set ({cfg.train_files} + {cfg.eval_files} JPEGs)",
                "retinanet.data.train_files / eval_files / mean_bytes")
    for s in SPLITS:
        (tmp / s).mkdir(parents=True)
    targets = split_targets(cfg, seed)
    items = [("train" if i < cfg.train_files else "eval", i, t) for i, t in enumerate(targets.tolist())]
    workers = cfg.workers or os.cpu_count() or 1
    chunks = [items[i:i + 16] for i in range(0, n, 16)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        rows = [r for done in pool.map(_work, [(str(tmp), seed, cfg.jpeg_quality, cfg.size_tolerance,
                                                cfg.max_boxes, cfg.num_classes, c, cfg.size_sigma == 0)
                                               for c in chunks]) for r in done]
    boxes = pd.DataFrame([(r["path"], *b) for r in rows for b in r["boxes"]],
                         columns=["path", "label", "x0", "y0", "x1", "y1"])
    files = pd.DataFrame([{k: v for k, v in r.items() if k != "boxes"} for r in rows])
    boxes.to_csv(tmp / BOXES, index=False)
    files.to_csv(tmp / MANIFEST, index=False)   # last: a folder without it is incomplete
    os.sync()
    seconds = time.perf_counter() - t0
    os.replace(tmp, out)
    nbytes = int(files["bytes"].sum())
    train = files[files["split"] == "train"]["bytes"]
    return {"workload": "retinanet", "content": cfg.content, "files": n, "samples": n, "bytes": nbytes,
            "planned_bytes": planned_bytes(cfg, seed), "mean_file_bytes": float(train.mean()),
            "cv_file_bytes": float(train.std(ddof=0) / train.mean()), "boxes": len(boxes),
            "seconds": seconds, "MBps": nbytes / 1e6 / seconds}


FIXED = "retinanet-fixed"   # the fixed-size variant's data folder (data/retinanet-fixed)


def fixed_variant(cfg: "RetinanetData") -> "RetinanetData":
    """The data settings of the fixed-size variant of ``cfg``'s set: the same files, seed and
    images, every file exactly ``mean_bytes`` (the v3.0 config's one ``record_length_bytes``)."""
    return cfg.model_copy(update={"size_sigma": 0.0})


def read_manifest(folder: Path, split: str | None = None) -> pd.DataFrame:
    """The file list (one split, or both), sorted by path, with the boxes of each file as a list
    of (label, x0, y0, x1, y1) in ``boxes``; a folder without ``filelist.csv`` is incomplete."""
    folder = Path(folder)
    if not (folder / MANIFEST).exists():
        raise FileNotFoundError(f"{folder / MANIFEST} is missing: run `dvc repro workload_data`")
    m = pd.read_csv(folder / MANIFEST)
    if split is not None:
        m = m[m["split"] == split]
    b = pd.read_csv(folder / BOXES)
    by = {p: [(int(r.label), r.x0, r.y0, r.x1, r.y1) for r in g.itertuples()] for p, g in b.groupby("path")}
    m = m.sort_values("path").reset_index(drop=True)
    m["boxes"] = [by.get(p, []) for p in m["path"]]
    return m
