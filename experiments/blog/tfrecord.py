"""Nelson's blog, the TensorFlow side: TFRecords vs individual JPEG files, private thread pools.

- :func:`convert` writes the ImageNet-like JPEG set as TFRecord shards (``tf.train.Example``
  with the encoded JPEG and its label, as ``imagenet_to_gcs.py`` does) onto a tier.
- :func:`build_tfrecord_dataset` reads the shards (``TFRecordDataset`` with parallel reads),
  parses, decodes and resizes; the JPEG-file pipeline is :func:`experiments.chien.tfdata_read.build_dataset`
  (``full`` variant). Both get a private thread pool of exactly ``threads`` threads, the blog's
  ``datasets_num_private_threads``.
- :func:`measure` times one epoch per run (images/s, MB/s of stored bytes), of both pipelines
  and of the PyTorch DataLoader, the cache evicted before each cold run, and samples the device
  (``experiments.host.dstat.Sampler``) during each run: reads/s, KB per read, queue length, as in the
  blog's collectl table. The runs go in seeded rounds, and rounds are added while a finding is
  undecided (:func:`measuring_stage`, :mod:`experiments.repeats`).

The PyTorch loader is :mod:`experiments.blog.torch_jpeg_loader`; keep the two in separate functions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
from pydantic import Field, field_validator

from ..host import cache, dstat
from ..host.cache import EvictionMethod
from ..settings.common_config import check_counts
from ..host.tiers import require_free, storage_tier_of
from ..repeats.rounds import Rounds
from ..stages import Stage, count, rounds, tier_names
from .findings import (COLLECTL_COLUMNS, DSTAT_KEYS, collectl_table, dstat_rows_of, summarize,  # noqa: F401
                       summarize_runs)


class BlogConfig(Rounds):
    images: int = Field(1024, ge=1, le=10_000_000, description="JPEGs used (first of the set)")
    shards: int = Field(8, ge=1, le=100_000, description="TFRecord files")
    threads: list[int] = Field([1, 2, 4], min_length=1, description="tf.data private threads")
    workers: list[int] = Field([0, 1, 2], min_length=1, description="DataLoader num_workers")
    batch_size: int = Field(64, ge=1, le=65536)
    image_size: int = Field(224, ge=8, le=4096)
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
    from ..host.tiers import stage_copy

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


def run_configs(tiers: list[str], threads: list[int], workers: list[int]) -> list[dict]:
    """The configurations a round runs once each: tf.data over TFRecords and over JPEG files at
    each thread count, the PyTorch DataLoader at each worker count, on every tier (names).
    ``warm``: the configuration at the most threads (workers) is followed at once by the same
    run warm (no eviction), so every repeat gives a warm/cold pair that saw the same load."""
    return ([{"framework": "tensorflow", "tier": t, "format": fmt, "threads": n, "warm": n == max(threads)}
             for t in tiers for fmt in ("tfrecord", "jpeg") for n in threads]
            + [{"framework": "pytorch", "tier": t, "format": "jpeg", "workers": w, "warm": w == max(workers)}
               for t in tiers for w in workers])


KEYS = ("framework", "tier", "format", "threads", "workers")   # the columns that name a configuration


def measuring_stage(cfg: BlogConfig, configs: list[dict], one_run, seed: int):
    """The blog's runs as one measuring stage (:class:`experiments.repeats.MeasuringStage`):
    each round runs every configuration of ``configs`` (:func:`run_configs`) once cold, in an
    order drawn for the round (drift on the box hits every configuration alike), a ``warm``
    configuration's cold pass followed at once by its warm pass: both rows share the run's id
    (``run``), ``cache`` says which pass. At least ``runs`` rounds, more up to
    ``max_runs`` within ``budget_s`` while a finding is undecided (the findings of the runs
    so far, :func:`experiments.blog.findings.findings_of`, judged by their declared rules).
    ``one_run(config, cache)`` measures one pass and returns (its row, its dstat samples). A run
    gives one row per pass and its side table ``dstat``."""
    from .. import repeats
    from ..verdicts import looks
    from ..repeats import findings
    from .findings import findings_of

    def run_one(c, i):
        rows, frames = [], []
        for state in ("cold", "warm") if c.get("warm") else ("cold",):
            row, frame = one_run(c, state)
            rows.append({"cache": state, **row})
            if frame is not None and len(frame):
                frames.append(frame.assign(cache=state))
        return repeats.Run(rows, {"dstat": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()})

    plan = cfg.plan()
    configs = [{k: c.get(k) for k in KEYS} | c for c in configs]
    context = lambda rows: {"storage_tier": storage_tier_of(rows)}   # noqa: E731 (the tier the report judges)
    return repeats.MeasuringStage(
        "blog", KEYS, configs, run_one, plan, seed, tables=("dstat",),
        judge=looks.judge("blog", findings_of), focus=findings.focus("blog", configs, context),
        context=context, progress="blog rounds",
        quantities=("images_per_s",), units="dstat", unit_quantities=("read_MBps", "queue_len"))


def measure(staged: dict[str, pd.DataFrame], records: dict[str, list[str]], tiers,
            cfg: BlogConfig, seed: int, purchases=()):
    """tf.data over TFRecords and over JPEG files at each private thread count, and the PyTorch
    DataLoader over the JPEG files at each ``num_workers``, on every tier, cold cache, in seeded
    rounds until the findings are decided (:func:`measuring_stage`), then the rounds ``make decide`` bought
    (``purchases``: ``params.yaml``'s ``decide.blog``); each repeat of the most threads
    (workers) is a cold run followed at once by the same run warm (no eviction: the files are in
    the page cache), so both see the same load. Each run times one epoch (images/s, MB/s of
    stored bytes) with the device sampled meanwhile.
    Returns the :class:`experiments.repeats.Measurement` (one row per pass, cold or warm, the
    two passes of a run sharing its ``run``; side table ``dstat``) and facts: ``eviction`` per
    framework and tier."""
    import tensorflow as tf
    import torch

    from ..chien.tfdata_read import build_dataset
    from . import torch_jpeg_loader as tj

    tf.get_logger().setLevel("ERROR")
    torch.set_num_threads(1)  # the DataLoader's parallelism comes from its workers, as in the blog's runs
    evictions: dict[str, dict] = {"tensorflow": {}, "pytorch": {}}
    # Prime TensorFlow (kernels, thread pools) and torchvision's decoder on a few files, untimed.
    first = staged[tiers[0].name]
    for _ in build_dataset(list(first["abspath"][:8]), 1, 8, "full", cfg.image_size, seed):
        pass
    tj.count(tj.make_loader(list(first["abspath"][:8]), list(first["label"][:8]), 0, 8, cfg.image_size, seed))

    def one_run(c, state):
        tier, fw, m = c["tier"], c["framework"], staged[c["tier"]]
        if fw == "tensorflow" and c["format"] == "tfrecord":
            target, nbytes = records[tier], sum(os.path.getsize(f) for f in records[tier])
            ds = build_tfrecord_dataset(target, c["threads"], cfg.batch_size, cfg.image_size, seed)
            iterate = lambda: _count(ds)
        elif fw == "tensorflow":
            target, nbytes = list(m["abspath"]), int(m["bytes"].sum())
            ds = build_dataset(target, c["threads"], cfg.batch_size, "full", cfg.image_size, seed)
            iterate = lambda: _count(ds)
        else:
            target, nbytes = list(m["abspath"]), int(m["bytes"].sum())
            loader = tj.make_loader(target, list(m["label"]), c["workers"], cfg.batch_size, cfg.image_size, seed)
            iterate = lambda: tj.count(loader)
        if state == "cold":
            evictions[fw][tier] = cache.evict(target, cfg.eviction, label=tier)
            resident = evictions[fw][tier].resident_fraction
        else:  # a warm run follows a cold pass over the same files: measure what is still cached
            resident = cache.residency(target)["resident_fraction"]
        device = dstat.device_of(target[0])
        seconds, n, frame = timed_run(iterate, device, cfg.dstat_interval_s)
        return ({"seconds": seconds, "images": n, "bytes": nbytes, "images_per_s": n / seconds,
                 "MBps": nbytes / 1e6 / seconds, "device": device or "",
                 "eviction": evictions[fw].get(tier, "none") if state == "cold" else "none",
                 "resident_fraction": resident}, frame)

    from .. import repeats

    configs = run_configs([t.name for t in tiers], cfg.threads, cfg.workers)
    got = repeats.measure(measuring_stage(cfg, configs, one_run, seed), purchases)
    got.tables["dstat"] = dstat_rows_of(got.tables["dstat"])
    return got, {"eviction": evictions}


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): tiers x (tf.data cold and warm threads + PyTorch workers) x rounds."""
    b = p["blog"]
    return len(tier_names(p)) * (2 * count(b["threads"]) + count(b["workers"])) * rounds(b)


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`)."""
    b = p["blog"]
    return [{k: c.get(k) for k in ("framework", "tier", "format", "threads", "workers")}
            for c in run_configs(tier_names(p), b["threads"], b["workers"])]


STAGE = Stage("blog", "notebooks/44-blog-tfrecord-vs-jpeg.ipynb", "measuring", {"blog": "BlogConfig"},
              ("seed", "tiers", "imagenet_size_mix", "blog"), True, "blog_report", ("data/imagenet_like",),
              size="size", configs="configurations")
