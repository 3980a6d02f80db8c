"""A Caltech-101-like image set (JPEG and PNG), generated deterministically from a seed.

Chien et al. (Section IV-B) train their AlexNet mini-application on Caltech 101: 9,144 images
of 101 classes plus a background class (102 labels), median file about 12 kB, mean about
14 kB. Caltech 101 cannot be downloaded here, so we generate real, decodable images whose
sizes follow a log-normal law with that median and mean (a log-normal is the simplest
right-skewed law fixed by exactly those two numbers: ``sigma = sqrt(2 ln(mean / median))``).

A fraction ``png_fraction`` of the images is PNG, the rest JPEG; the pipeline reads both with
``tf.io.decode_png``, which decodes JPEG too (as in the paper). JPEGs come from
:func:`experiments.datasets.imagenet_like.make_jpeg`; PNGs from :func:`make_png`, which uses the same
colour-field-plus-grain content. Image ``i`` depends only on ``(seed, i)``, so the bytes are the
same whatever the number of workers.

Layout: ``<out>/train/c0000/img_000000.jpg`` (or ``.png``) and ``filelist.csv``
(path, label, bytes, format, target_bytes), written last: a folder without it is incomplete.
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
from pydantic import Field, model_validator

from ..settings.config import Section
from .imagenet_like import MANIFEST, make_jpeg, read_manifest, sized_image  # noqa: F401 (re-export)
from ..output.progress import progress
from ..host.tiers import require_free


class CaltechLikeConfig(Section):
    n_images: int = Field(1024, ge=1, le=10_000_000)
    n_classes: int = Field(102, ge=1, le=100_000, description="101 classes + background")
    median_KB: float = Field(12.0, gt=1, le=10_000, description="median file size, kB (10^3 B)")
    mean_KB: float = Field(14.0, gt=1, le=10_000, description="mean file size, kB (10^3 B)")
    png_fraction: float = Field(0.1, ge=0, le=1, description="share of images stored as PNG")
    jpeg_quality: int = Field(90, ge=10, le=100)
    workers: int = Field(0, ge=0, le=256, description="processes; 0 means one per CPU")
    size_tolerance: float = Field(0.02, gt=0, le=0.5, description="relative size error accepted")

    @model_validator(mode="after")
    def _mean_above_median(self):
        if self.mean_KB < self.median_KB:
            raise ValueError(f"caltech_like.mean_KB = {self.mean_KB} must be >= median_KB = "
                             f"{self.median_KB} (the size law is right-skewed)")
        return self


def sample_sizes(n: int, median_bytes: float, mean_bytes: float, seed: int) -> np.ndarray:
    """``n`` target file sizes in bytes from a log-normal with the given median and mean.

    Sizes are kept at or above 1,500 B (a decodable image needs a header and some pixels).
    """
    sigma = float(np.sqrt(2 * np.log(mean_bytes / median_bytes)))
    rng = np.random.default_rng([seed, 0xCA17EC])
    s = rng.lognormal(mean=np.log(median_bytes), sigma=sigma, size=n)
    return np.maximum(s, 1500).astype(np.int64)


def formats_for(n: int, png_fraction: float, seed: int) -> np.ndarray:
    """``"png"`` or ``"jpg"`` per image, drawn from the seed (exactly round(n * fraction) PNGs)."""
    rng = np.random.default_rng([seed, 0x9E6])
    fmt = np.array(["jpg"] * n, dtype=object)
    k = int(round(n * png_fraction))
    if k:
        fmt[rng.choice(n, size=k, replace=False)] = "png"
    return fmt


def make_png(target: int, seed: int, index: int, tol: float) -> bytes:
    """A decodable RGB PNG of about ``target`` bytes; depends only on (seed, index, target).

    PNG is lossless, so the size is set by the pixel count: start from a guess of bytes per
    pixel for this content and rescale the image until the encoded size is within ``tol``.
    """
    def encode(img: np.ndarray) -> bytes:
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG", compress_level=6)
        return buf.getvalue()

    # gentler grain than JPEG (sigma 3-6): PNG pays for every bit of noise
    return sized_image(target, np.random.default_rng([seed, index, 0x96]), encode, (3, 6),
                       2.0, 0.5, 8, 8, tol)


def _work(args) -> list[tuple[int, int]]:
    out_dir, seed, quality, tol, items = args
    done = []
    for index, label, target, fmt in items:
        if fmt == "png":
            data = make_png(int(target), seed, index, tol)
        else:
            data = make_jpeg(int(target), seed, index, quality, tol)
        p = Path(out_dir) / "train" / f"c{label:04d}" / f"img_{index:06d}.{fmt}"
        p.write_bytes(data)
        done.append((index, len(data)))
    return done


def estimated_bytes(cfg: CaltechLikeConfig) -> int:
    """Expected size of the data set on disk: n_images x the mean size, with the size
    tolerance and half a 4 KiB file-system block per file on top."""
    return int(cfg.n_images * (cfg.mean_KB * 1000 * (1 + cfg.size_tolerance) + 2048))


def generate(out: Path, cfg: CaltechLikeConfig, seed: int) -> dict:
    """Write the data set to ``out`` atomically (built under ``<out>.partial``, then renamed).

    States its size first and stops, before writing, when it does not fit
    (:func:`experiments.host.tiers.require_free`); a run that dies half way leaves only the
    ``.partial`` folder, which the next run removes.

    Returns facts: images, bytes, seconds, generation throughput in MB/s (10^6 B/s), workers.
    """
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)     # what a run that died half way left
    require_free(out, estimated_bytes(cfg), f"the Caltech-like set ({cfg.n_images} images)",
                 "caltech_like.n_images", say=True)
    shutil.rmtree(out, ignore_errors=True)
    labels = np.arange(cfg.n_images) % cfg.n_classes
    for c in range(min(cfg.n_classes, cfg.n_images)):
        (tmp / "train" / f"c{c:04d}").mkdir(parents=True, exist_ok=True)
    targets = sample_sizes(cfg.n_images, cfg.median_KB * 1000, cfg.mean_KB * 1000, seed)
    fmts = formats_for(cfg.n_images, cfg.png_fraction, seed)
    items = list(zip(range(cfg.n_images), labels.tolist(), targets.tolist(), fmts.tolist()))
    workers = cfg.workers or os.cpu_count() or 1
    chunks = [items[i:i + 64] for i in range(0, len(items), 64)]
    sizes: dict[int, int] = {}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        jobs = pool.map(_work, [(str(tmp), seed, cfg.jpeg_quality, cfg.size_tolerance, c)
                                for c in chunks])
        with progress(total=cfg.n_images, desc="caltech_like: images") as bar:
            for done in jobs:
                sizes.update(done)
                bar.update(len(done))
    os.sync()
    seconds = time.perf_counter() - t0
    manifest = pd.DataFrame({
        "path": [f"train/c{lab:04d}/img_{i:06d}.{f}" for i, lab, _, f in items],
        "label": labels, "bytes": [sizes[i] for i, *_ in items], "format": fmts,
        "target_bytes": targets,
    })
    manifest.to_csv(tmp / MANIFEST, index=False)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    total = int(manifest["bytes"].sum())
    return {"images": cfg.n_images, "bytes": total, "seconds": seconds,
            "MBps": total / 1e6 / seconds, "workers": workers,
            "png_images": int((fmts == "png").sum())}


def size_summary(manifest: pd.DataFrame) -> pd.DataFrame:
    """Median, mean, 5th and 95th percentile of file size in kB (10^3 B), per format and overall."""
    rows = []
    for fmt, g in [("all", manifest), *manifest.groupby("format")]:
        b = g["bytes"] / 1000
        rows.append({"format": fmt, "images": len(g), "median_KB": b.median(), "mean_KB": b.mean(),
                     "p05_KB": b.quantile(0.05), "p95_KB": b.quantile(0.95)})
    return pd.DataFrame(rows)


def size_histogram(sizes: pd.Series, bin_KB: float = 2.0, max_KB: float = 60.0) -> pd.DataFrame:
    """Share of files (percent) per ``bin_KB``-wide size bin up to ``max_KB`` (the last bin
    holds everything larger)."""
    kb = np.minimum(np.asarray(sizes, dtype=float) / 1000, max_KB - 1e-9)
    edges = np.arange(0, max_KB + bin_KB, bin_KB)
    counts, _ = np.histogram(kb, bins=edges)
    return pd.DataFrame({"bin_lo_KB": edges[:-1], "bin_hi_KB": edges[1:],
                         "files_percent": counts / max(len(kb), 1) * 100})


# ----------------------------------------------------------------------------- the registry's rules

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): its images."""
    return int(p[name]["n_images"])
