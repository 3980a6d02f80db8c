"""An ImageNet-like JPEG data set, generated deterministically from a seed, in parallel.

File sizes follow the blog's ImageNet size mix (fio ``bssplit``): a bucket of block size B
holds the files whose size lies in [B, 2B) (the power-of-two histogram of the blog), and a
size is drawn uniformly inside its bucket. Each image is a real, decodable RGB JPEG whose
content (smooth colour field plus grain) is scaled until its encoded size is within a few
percent of the drawn size. Image ``i`` depends only on ``(seed, i)``, so the bytes are the
same whatever the number of workers.

Layout: ``<out>/train/c0000/img_000000.JPEG`` ..., and ``filelist.csv`` (path, label, bytes),
written last: a folder without it is incomplete.
"""

from __future__ import annotations

import io
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image
from pydantic import Field

from ..settings.common_config import parse_bssplit
from ..settings.config import Section
from ..output.progress import progress
from ..host.tiers import require_free

MANIFEST = "filelist.csv"


class ImageNetLikeConfig(Section):
    n_images: int = Field(1024, ge=1, le=10_000_000)
    n_classes: int = Field(16, ge=1, le=100_000)
    jpeg_quality: int = Field(90, ge=10, le=100)
    workers: int = Field(0, ge=0, le=256, description="processes; 0 means one per CPU")
    size_tolerance: float = Field(0.05, gt=0, le=0.5, description="relative size error accepted")


def sample_sizes(n: int, bssplit: str, seed: int) -> np.ndarray:
    """``n`` target file sizes in bytes drawn from the bssplit mix (bucket B covers [B, 2B))."""
    mix = parse_bssplit(bssplit)
    blocks = np.array([b for b, _ in mix], dtype=float)
    weights = np.array([w for _, w in mix], dtype=float) / 100
    rng = np.random.default_rng([seed, 0xB55])
    idx = rng.choice(len(blocks), size=n, p=weights)
    return (blocks[idx] * (1 + rng.random(n))).astype(np.int64)


def _encode(img: np.ndarray, quality: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def _render(rng: np.random.Generator, h: int, w: int, base: np.ndarray, grain: np.ndarray) -> np.ndarray:
    """A smooth colour field (the low-resolution ``base`` upsampled) plus fine grain, uint8 RGB."""
    field = np.asarray(Image.fromarray(base).resize((w, h), Image.BICUBIC), dtype=np.float32)
    g = grain[:h, :w]
    return np.clip(field + g, 0, 255).astype(np.uint8)


def sized_image(target: int, rng: np.random.Generator, encode, sigma_range: tuple[float, float],
                first_bpp: float, least_bpp: float, min_side: int, iterations: int,
                tol: float) -> bytes:
    """An encoded image of about ``target`` bytes: a smooth colour field plus grain, rescaled
    until ``encode`` (uint8 RGB array -> bytes) gives a size within ``tol`` of the target.

    ``first_bpp`` is the first guess of encoded bytes per pixel; ``least_bpp`` bounds it from
    below, which sizes the grain, drawn once so that resizing keeps the image stable.
    """
    aspect = rng.uniform(0.75, 1.34)
    base = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
    sigma = rng.uniform(*sigma_range)
    side = int(np.sqrt(target / least_bpp / aspect) * 1.6) + 16
    grain = rng.normal(0, sigma, size=(side, int(side * aspect) + 16, 3)).astype(np.float32)
    px = target / first_bpp
    data = b""
    for _ in range(iterations):
        h = max(min_side, int(np.sqrt(px / aspect)))
        w = max(min_side, int(h * aspect))
        h, w = min(h, grain.shape[0]), min(w, grain.shape[1])
        data = encode(_render(rng, h, w, base, grain))
        err = len(data) / target
        if abs(err - 1) <= tol:
            break
        px = h * w / err
    return data


def make_jpeg(target: int, seed: int, index: int, quality: int, tol: float) -> bytes:
    """A decodable JPEG of about ``target`` bytes; depends only on (seed, index, target).
    About 1.2 bytes per pixel at quality 90 for this content (at least 0.6)."""
    return sized_image(target, np.random.default_rng([seed, index]),
                       lambda img: _encode(img, quality), (10, 16), 1.2, 0.6, 16, 6, tol)


def _work(args) -> list[tuple[int, int]]:
    out_dir, seed, quality, tol, items = args
    done = []
    for index, label, target in items:
        data = make_jpeg(int(target), seed, index, quality, tol)
        p = Path(out_dir) / "train" / f"c{label:04d}" / f"img_{index:06d}.JPEG"
        p.write_bytes(data)
        done.append((index, len(data)))
    return done


def estimated_bytes(cfg: ImageNetLikeConfig, bssplit: str) -> int:
    """Expected size of the data set on disk, from the size mix (bucket midpoints), with the
    size tolerance and half a 4 KiB file-system block per file on top."""
    mix = parse_bssplit(bssplit)
    per_file = sum(1.5 * b * w / 100 for b, w in mix) * (1 + cfg.size_tolerance) + 2048
    return int(cfg.n_images * per_file)


def generate(out: Path, cfg: ImageNetLikeConfig, bssplit: str, seed: int) -> dict:
    """Write the data set to ``out`` (atomically: built in ``<out>.partial``, then renamed).

    States its size first and stops, before writing, when it does not fit
    (:func:`experiments.host.tiers.require_free`); a run that dies half way leaves only the
    ``.partial`` folder, which the next run removes.

    Returns facts: images, bytes, seconds and the generation throughput in MB/s (10^6 B/s).
    """
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)     # what a run that died half way left
    require_free(out, estimated_bytes(cfg, bssplit), f"the ImageNet-like set ({cfg.n_images} JPEGs)",
                 "imagenet_like.n_images", say=True)
    shutil.rmtree(out, ignore_errors=True)
    labels = np.arange(cfg.n_images) % cfg.n_classes
    for c in range(min(cfg.n_classes, cfg.n_images)):
        (tmp / "train" / f"c{c:04d}").mkdir(parents=True, exist_ok=True)
    targets = sample_sizes(cfg.n_images, bssplit, seed)
    items = list(zip(range(cfg.n_images), labels.tolist(), targets.tolist()))
    workers = cfg.workers or os.cpu_count() or 1
    chunks = [items[i:i + 32] for i in range(0, len(items), 32)]
    sizes: dict[int, int] = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        jobs = pool.map(_work, [(str(tmp), seed, cfg.jpeg_quality, cfg.size_tolerance, c) for c in chunks])
        with progress(total=cfg.n_images, desc="imagenet_like: JPEGs") as bar:
            for done in jobs:
                sizes.update(done)
                bar.update(len(done))
    os.sync()  # the throughput counts bytes that reached the device, as fio's end_fsync does
    seconds = time.perf_counter() - t0
    manifest = pd.DataFrame({
        "path": [f"train/c{lab:04d}/img_{i:06d}.JPEG" for i, lab, _ in items],
        "label": labels, "bytes": [sizes[i] for i, _, _ in items], "target_bytes": targets,
    })
    manifest.to_csv(tmp / MANIFEST, index=False)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    total = int(manifest["bytes"].sum())
    return {"images": cfg.n_images, "bytes": total, "seconds": seconds,
            "MBps": total / 1e6 / seconds, "workers": workers}


def read_manifest(folder: Path) -> pd.DataFrame:
    """The file list of a generated data set, with absolute paths in ``abspath``."""
    folder = Path(folder)
    m = folder / MANIFEST
    if not m.exists():
        raise FileNotFoundError(f"{m} is missing: the data set at {folder} is incomplete; "
                                "run `dvc repro imagenet_like`")
    df = pd.read_csv(m)
    df["abspath"] = [str(folder / p) for p in df["path"]]
    return df


def size_histogram(sizes: pd.Series, bssplit: str) -> pd.DataFrame:
    """Share of files per power-of-two bucket [B, 2B), beside the bssplit weight of B (percent)."""
    mix = parse_bssplit(bssplit)
    rows = []
    for b, w in mix:
        share = float(((sizes >= b) & (sizes < 2 * b)).mean() * 100)
        rows.append({"bucket_bytes": b, "bucket": f"{b // 1024}K", "mix_percent": w,
                     "files_percent": share})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- the registry's rules

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): its images."""
    return int(p[name]["n_images"])
