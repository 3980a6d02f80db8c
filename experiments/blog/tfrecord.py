"""Nelson's blog, the TensorFlow side: TFRecords vs individual JPEG files, private thread pools.

- :func:`convert` writes the ImageNet-like JPEG set as TFRecord shards (``tf.train.Example``
  with the encoded JPEG and its label, as ``imagenet_to_gcs.py`` does) onto a tier.
- :func:`build_tfrecord_dataset` reads the shards (``TFRecordDataset`` with parallel reads),
  parses, decodes and resizes; the JPEG-file pipeline is :func:`experiments.chien.tfdata_read.build_dataset`
  (``full`` variant). Both get a private thread pool of exactly ``threads`` threads, the blog's
  ``datasets_num_private_threads``.
- :func:`measure` times one epoch per run (images/s, MB/s of stored bytes), the cache evicted
  before each cold run, and samples the device (``experiments.dstat.Sampler``) during each run:
  reads/s, KB per read, queue length, as in the blog's collectl table.

The PyTorch side is :mod:`experiments.blog.torch_jpeg_loader`; keep the two in separate functions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
from pydantic import Field, field_validator

from .. import cache, dstat
from ..cache import EvictionMethod
from ..common_config import check_counts
from ..config import Section
from ..progress import progress
from ..tiers import require_free


class BlogConfig(Section):
    images: int = Field(1024, ge=1, le=10_000_000, description="JPEGs used (first of the set)")
    shards: int = Field(8, ge=1, le=100_000, description="TFRecord files")
    threads: list[int] = Field([1, 2, 4], min_length=1, description="tf.data private threads")
    workers: list[int] = Field([0, 1, 2], min_length=1, description="DataLoader num_workers")
    batch_size: int = Field(64, ge=1, le=65536)
    image_size: int = Field(224, ge=8, le=4096)
    repeats: int = Field(2, ge=1, le=50)
    dstat_interval_s: float = Field(0.5, gt=0, le=10)
    eviction: EvictionMethod = "auto"

    @field_validator("threads")
    @classmethod
    def _t(cls, v):
        return check_counts(v, "thread count", 1, 1024)

    @field_validator("workers")
    @classmethod
    def _w(cls, v):
        return check_counts(v, "num_workers", 0, 256)


def stage_all(source: Path, tiers, cfg: "BlogConfig") -> dict[str, pd.DataFrame]:
    """The JPEG set on every tier (copied once, verified by the file list's checksum), cut to
    its first ``cfg.images`` files: tier name -> manifest of the copy."""
    from ..datasets.imagenet_like import read_manifest
    from ..tiers import stage_copy

    return {t.name: read_manifest(stage_copy(source, t)).iloc[:cfg.images] for t in tiers}


def convert_all(staged: dict[str, pd.DataFrame], tiers, cfg: "BlogConfig") -> tuple[dict, pd.DataFrame]:
    """:func:`convert` on every tier (into ``<tier>/blog-tfrecords``). Returns (tier -> shard
    files, one row per tier: bytes, seconds, MB/s, reused)."""
    conv = {t.name: convert(staged[t.name], t.dir / "blog-tfrecords", cfg.shards) for t in tiers}
    table = pd.DataFrame([{"tier": k, **{f: v.get(f) for f in ("bytes", "seconds", "MBps", "reused")}}
                          for k, v in conv.items()])
    return {k: v["files"] for k, v in conv.items()}, table


def convert(manifest: pd.DataFrame, dest: Path, shards: int) -> dict:
    """Write ``manifest``'s JPEGs as ``shards`` TFRecord files under ``dest`` (atomically).

    Reused when a previous conversion of the same files exists; otherwise states its size and
    stops before writing when it does not fit. Returns facts: files, bytes,
    seconds, MB/s (10^6 B/s) of JPEG bytes converted, and the shard paths.
    """
    dest = Path(dest)
    stamp = dest / "converted.csv"
    want = manifest[["path", "bytes"]].reset_index(drop=True)
    files = [str(dest / f"train-{i:05d}-of-{shards:05d}.tfrecord") for i in range(shards)]
    if stamp.exists() and pd.read_csv(stamp).equals(want) and all(Path(f).exists() for f in files):
        return {"files": files, "seconds": float("nan"), "reused": True,
                "bytes": sum(Path(f).stat().st_size for f in files)}
    dest.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    for f in [*dest.glob("*.partial"), *dest.glob("*.tfrecord")]:   # leftovers, stale shards
        f.unlink()
    # a TFRecord adds about 60 B of framing and features to each JPEG
    require_free(dest, int(manifest["bytes"].sum()) + 60 * len(manifest),
                 f"the blog's TFRecords ({len(manifest)} JPEGs in {shards} shards)", "blog.images", say=True)
    import tensorflow as tf

    t0 = time.perf_counter()
    per = -(-len(manifest) // shards)
    for i, f in enumerate(files):
        part = manifest.iloc[i * per:(i + 1) * per]
        with tf.io.TFRecordWriter(f + ".partial") as w:
            for p, label in zip(part["abspath"], part["label"]):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[Path(p).read_bytes()])),
                    "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(
                        value=[int(label)])),
                }))
                w.write(ex.SerializeToString())
        os.replace(f + ".partial", f)
    os.sync()
    seconds = time.perf_counter() - t0
    want.to_csv(stamp, index=False)
    nbytes = sum(Path(f).stat().st_size for f in files)
    return {"files": files, "seconds": seconds, "reused": False, "bytes": nbytes,
            "MBps": int(manifest["bytes"].sum()) / 1e6 / seconds}


def build_tfrecord_dataset(files: list[str], threads: int, batch_size: int, image_size: int,
                           seed: int):
    """TFRecords -> parse -> decode -> resize -> batch, private pool of ``threads`` threads."""
    import tensorflow as tf

    spec = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64)}

    def fn(rec):
        ex = tf.io.parse_single_example(rec, spec)
        img = tf.io.decode_jpeg(ex["image/encoded"], channels=3)
        return tf.image.resize(img, [image_size, image_size]), ex["image/class/label"]

    ds = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=seed)
    ds = tf.data.TFRecordDataset(ds, num_parallel_reads=min(threads, len(files)))
    ds = ds.map(fn, num_parallel_calls=threads).batch(batch_size)
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = threads
    opts.autotune.enabled = False
    opts.experimental_optimization.map_parallelization = False
    return ds.with_options(opts)


def timed_run(iterate, device: str | None, interval_s: float) -> tuple[float, int, pd.DataFrame]:
    """Seconds and items of ``iterate()`` with the device sampled meanwhile (dstat rows)."""
    with dstat.Sampler(devices=[device] if device else [], pid=os.getpid(),
                       interval_s=interval_s) as s:
        t0 = time.perf_counter()
        n = iterate()
        seconds = time.perf_counter() - t0
    return seconds, n, s.frame()


def _count(ds) -> int:
    n = 0
    for b in ds:
        n += int(b[0].shape[0]) if isinstance(b, tuple) else int(b.shape[0])
    return n


def run_plan(tiers, threads: list[int], repeats: int, seed: int) -> list[tuple]:
    """The runs of :func:`measure` in order, (tier, format, threads, repeat, cache): ``repeats``
    rounds, each running every (tier, format, threads) once cold in an order drawn for the round
    from ``seed`` (:func:`experiments.sequential.round_order`: drift on the box hits every
    configuration alike, and a configuration's repeats are not back to back); in each round the
    cold run at the most threads of each tier and format is followed at once by the same run
    warm (no eviction), so every repeat gives a warm/cold pair that saw the same load."""
    from ..sequential import round_order

    configs = [(t, fmt, n) for t in tiers for fmt in ("tfrecord", "jpeg") for n in threads]
    top = max(threads)
    plan = []
    for i in range(repeats):
        for k in round_order(len(configs), i, seed):
            t, fmt, n = configs[k]
            plan.append((t, fmt, n, i, "cold"))
            if n == top:
                plan.append((t, fmt, n, i, "warm"))   # right after a cold pass
    return plan


def measure(staged: dict[str, pd.DataFrame], records: dict[str, list[str]], tiers,
            cfg: BlogConfig, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """tf.data over TFRecords and over JPEG files for each tier and thread count, cold cache, in
    seeded rounds (:func:`run_plan`); in each round each format's cold run at the most threads is
    followed at once by the same run warm (no eviction: the files are in the page cache), so both
    see the same load.
    Returns (one row per run, dstat rows tagged with the run, facts)."""
    import tensorflow as tf

    from ..chien.tfdata_read import build_dataset

    tf.get_logger().setLevel("ERROR")
    plan = run_plan(tiers, cfg.threads, cfg.repeats, seed)
    rows, samples, evictions = [], [], {}
    # Prime TensorFlow (kernels, thread pools) on a few files, untimed, before the first run.
    first = staged[tiers[0].name]
    for _ in build_dataset(list(first["abspath"][:8]), 1, 8, "full", cfg.image_size, seed):
        pass
    for run_id, (tier, fmt, threads, i, cache_state) in enumerate(progress(plan, desc="blog tf.data")):
        m = staged[tier.name]
        if fmt == "tfrecord":
            target, nbytes = records[tier.name], sum(os.path.getsize(f) for f in records[tier.name])
            ds = build_tfrecord_dataset(target, threads, cfg.batch_size, cfg.image_size, seed)
        else:
            target, nbytes = list(m["abspath"]), int(m["bytes"].sum())
            ds = build_dataset(target, threads, cfg.batch_size, "full", cfg.image_size, seed)
        if cache_state == "cold":
            evictions[tier.name] = cache.evict(target, cfg.eviction, label=tier.name)
            resident = evictions[tier.name].resident_fraction
        else:  # a warm run follows a cold pass over the same files: measure what is still cached
            resident = cache.residency(target)["resident_fraction"]
        device = dstat.device_of(target[0])
        seconds, n, frame = timed_run(lambda: _count(ds), device, cfg.dstat_interval_s)
        rows.append({"run": run_id, "framework": "tensorflow", "tier": tier.name, "format": fmt,
                     "threads": threads, "repeat": i, "cache": cache_state, "seconds": seconds,
                     "images": n, "bytes": nbytes, "images_per_s": n / seconds,
                     "MBps": nbytes / 1e6 / seconds, "device": device or "",
                     "eviction": evictions.get(tier.name, "none") if cache_state == "cold" else "none",
                     "resident_fraction": resident})
        if len(frame):
            samples.append(frame.assign(run=run_id, framework="tensorflow", tier=tier.name,
                                        format=fmt, threads=threads, cache=cache_state))
    return pd.DataFrame(rows), (pd.concat(samples, ignore_index=True) if samples
                                else pd.DataFrame()), {"eviction": evictions}


COLLECTL_COLUMNS = ["framework", "tier", "format", "source", "intervals", "read_KBps",
                    "reads_per_s", "KB_per_read", "queue_len", "util"]
DSTAT_KEYS = ["run", "framework", "tier", "format", "cache", "source", "time_s", "interval_s",
              "read_MBps", "read_iops", "queue_len", "util"]


def dstat_rows_of(*frames: pd.DataFrame) -> pd.DataFrame:
    """The dstat samples of every run in one table, with its columns even when no interval
    was sampled (so the file a later stage reads always parses)."""
    d = pd.concat([f for f in frames if len(f.columns)], ignore_index=True) \
        if any(len(f.columns) for f in frames) else pd.DataFrame()
    for c in DSTAT_KEYS:
        if c not in d:
            d[c] = pd.Series(dtype=float)
    return d


def collectl_table(dstat_rows: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The blog's collectl table: per framework and format, on block devices, the median over
    sampled intervals of read KB/s, reads/s, KB per read and queue length (cold runs only,
    intervals with reads). No rows (but the columns) when no device read was sampled."""
    if dstat_rows.empty:
        return pd.DataFrame(columns=COLLECTL_COLUMNS)
    d = dstat_rows[dstat_rows["source"].astype(str).str.startswith("dev:") & (dstat_rows["cache"] == "cold")]
    d = d[d["read_iops"] > 0]
    if d.empty:
        return pd.DataFrame(columns=COLLECTL_COLUMNS)
    d = d.assign(read_KBps=d["read_MBps"] * 1e3,
                 KB_per_read=d["read_MBps"] * 1e3 / d["read_iops"])
    return (d.groupby(["framework", "tier", "format", "source"]).agg(
        intervals=("read_iops", "size"), read_KBps=("read_KBps", "median"),
        reads_per_s=("read_iops", "median"), KB_per_read=("KB_per_read", "median"),
        queue_len=("queue_len", "median"), util=("util", "median")).reset_index())


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    """Median images/s and MB/s (min, max) per framework, tier, format, parallelism and cache."""
    key = "threads" if "threads" in raw else "workers"
    return (raw.groupby(["framework", "tier", "format", key, "cache"]).agg(
        images_per_s=("images_per_s", "median"), images_per_s_min=("images_per_s", "min"),
        images_per_s_max=("images_per_s", "max"), MBps=("MBps", "median"),
        runs=("seconds", "size")).reset_index())
