"""The tf.data read micro-benchmark of Chien et al. (Section III-A, Fig 4 and Fig 5).

Pipeline, as in the paper: list of paths -> shuffle -> map(read_file, decode_jpeg, resize)
with ``num_parallel_calls = threads`` -> batch -> iterate with no computation. The
``read_only`` variant maps only ``read_file`` (Fig 5). tf.data gets a private thread pool of
exactly ``threads`` threads and no autotuning, so the thread count is the thread count. The
``raw`` variant reads the same files without TensorFlow (Python's ``open``/``read`` from a pool
of ``threads`` threads, in a shuffled order): DeepIO's Fig 2 sets the Dataset API against such
raw reads, and ``read_only`` over ``raw`` is the wrappers' cost it speaks of.

Each run: evict the data set from the page cache, build the pipeline, time from the first
request to the last batch (``time.perf_counter``). Throughput is images/s and MB/s
(10^6 B/s of JPEG bytes read).
"""

from __future__ import annotations

import time
from typing import Literal

import pandas as pd
from pydantic import Field, field_validator

from ..host import cache
from ..host.cache import EvictionMethod
from ..settings.common_config import check_counts
from ..settings.config import Section
from ..host.tiers import Tier
from ..stages import Stage, count, rounds, tier_names

VARIANTS = ("full", "read_only", "raw")


class TFDataReadConfig(Section):
    threads: list[int] = Field([1, 2, 4, 8], min_length=1)
    batch_size: int = Field(64, ge=1, le=65536)
    variants: list[Literal["full", "read_only", "raw"]] = Field(["full", "read_only", "raw"], min_length=1)
    runs: int = Field(3, ge=1, le=50)
    warmup: int = Field(1, ge=0, le=5)
    image_size: int = Field(224, ge=8, le=4096, description="resize target, pixels per side")
    eviction: EvictionMethod = "auto"

    @field_validator("threads")
    @classmethod
    def _threads(cls, v: list[int]) -> list[int]:
        return check_counts(v, "thread count", 1, 1024)


def build_dataset(paths: list[str], threads: int, batch_size: int, variant: str,
                  image_size: int, seed: int):
    """The paper's input pipeline as a ``tf.data.Dataset`` of batches."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(paths)
    ds = ds.shuffle(len(paths), seed=seed, reshuffle_each_iteration=False)
    if variant == "full":
        def fn(p):
            img = tf.io.decode_jpeg(tf.io.read_file(p), channels=3)
            return tf.image.resize(img, [image_size, image_size])
    elif variant == "read_only":
        def fn(p):
            return tf.strings.length(tf.io.read_file(p))
    else:
        raise ValueError(f"variant = {variant!r}; allowed: {', '.join(VARIANTS)}")
    ds = ds.map(fn, num_parallel_calls=threads).batch(batch_size)
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = threads
    opts.autotune.enabled = False
    opts.experimental_optimization.map_parallelization = False
    # TF 2 fuses map and batch by default, and the fused op runs ahead like a prefetch; the
    # paper's TF 1.10 did not. Keep the pipeline as the paper built it.
    opts.experimental_optimization.map_and_batch_fusion = False
    return ds.with_options(opts)


def raw_epoch(paths: list[str], threads: int, batch_size: int, seed: int) -> tuple[float, int]:
    """Seconds to read every file of ``paths`` whole with Python's ``open``/``read`` from
    ``threads`` threads (a read releases the GIL), in an order shuffled by ``seed``; and the
    number of batches of ``batch_size`` the images make. No TensorFlow: DeepIO's "Raw"."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    order = [paths[i] for i in np.random.default_rng(seed).permutation(len(paths))]

    def read(p: str) -> int:
        with open(p, "rb", buffering=0) as f:
            return len(f.read())

    t0 = time.perf_counter()
    if threads == 1:
        for p in order:
            read(p)
    else:
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(read, order, chunksize=batch_size):
                pass
    return time.perf_counter() - t0, -(-len(order) // batch_size)


def time_epoch(ds) -> tuple[float, int]:
    """Seconds to draw every batch of ``ds`` (no computation), and the number of batches."""
    t0 = time.perf_counter()
    n = 0
    for _ in ds:
        n += 1
    return time.perf_counter() - t0, n


KEYS = ("tier", "variant", "threads")   # the columns that name a configuration


def measuring_stage(cfg: TFDataReadConfig, staged: dict[str, "pd.DataFrame"], tiers: list[Tier], seed: int,
          evictions: dict | None = None):
    """The stage as the repeat machinery runs it (:class:`experiments.repeats.MeasuringStage`):
    every (tier, variant, threads) configuration, ``warmup + runs`` rounds, each round every
    configuration once in an order drawn from ``seed``, so drift on the box during the stage
    reaches every configuration's samples alike instead of one configuration's block of
    back-to-back runs (the speed-ups are ratios of two configurations). A run: evict the
    data set (``staged[tier]``: the manifest of its copy on that tier, with ``abspath``), build
    the pipeline, time one epoch; ``evictions`` gets each tier's last eviction (env.json)."""
    import tensorflow as tf

    from ..repeats import MeasuringStage, RoundsPlan

    tf.get_logger().setLevel("ERROR")
    by_name = {t.name: t for t in tiers}

    def run_one(c: dict, repeat: int) -> dict:
        tier = by_name[c["tier"]]
        m = staged[tier.name]
        folder = str(pd.Series(m["abspath"]).iloc[0]).rsplit("/train/", 1)[0]
        ev = cache.evict([folder], cfg.eviction, label=tier.name)
        if evictions is not None:
            evictions[tier.name] = ev
        if c["variant"] == "raw":
            seconds, batches = raw_epoch(list(m["abspath"]), c["threads"], cfg.batch_size, seed)
        else:
            seconds, batches = time_epoch(build_dataset(list(m["abspath"]), c["threads"], cfg.batch_size,
                                                        c["variant"], cfg.image_size, seed))
        n, nbytes = len(m), int(m["bytes"].sum())
        return {"seconds": seconds, "images": n, "bytes": nbytes, "batches": batches,
                "images_per_s": n / seconds, "MBps": nbytes / 1e6 / seconds, "eviction": ev}

    configs = [{"tier": t.name, "variant": v, "threads": n} for t in tiers for v in cfg.variants for n in cfg.threads]
    return MeasuringStage("tfdata_read", KEYS, configs, run_one, RoundsPlan(cfg.runs, cfg.runs), seed,
                          warmup=cfg.warmup, progress="tf.data rounds", quantities=("images_per_s",))


def measure(staged: dict[str, "pd.DataFrame"], tiers: list[Tier], cfg: TFDataReadConfig,
            seed: int, purchases=()):
    """:func:`measuring_stage` measured, then the runs ``make decide`` bought (``purchases``: ``params.yaml``'s
    ``decide.tfdata_read``). Returns the :class:`experiments.repeats.Measurement` (one row per
    run, ``repeat`` counting the warm-up rounds first) and facts for env.json (the eviction
    method per tier)."""
    from .. import repeats

    evictions: dict = {}
    m = repeats.measure(measuring_stage(cfg, staged, tiers, seed, evictions), purchases)
    return m, {"eviction": evictions}


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    """Median images/s and MB/s with min and max per (tier, variant, threads), warm-ups left out,
    and the speed-up of each thread count over one thread (ratio of medians, same tier and variant).
    """
    d = raw[~raw["warmup"]]
    s = (d.groupby(["tier", "variant", "threads"], sort=False)
          .agg(images_per_s=("images_per_s", "median"), images_per_s_min=("images_per_s", "min"),
               images_per_s_max=("images_per_s", "max"), MBps=("MBps", "median"),
               MBps_min=("MBps", "min"), MBps_max=("MBps", "max"), runs=("seconds", "size"),
               mean_image_bytes=("bytes", lambda b: float(b.iloc[0])))
          .reset_index())
    s["mean_image_bytes"] = s["mean_image_bytes"] / d["images"].iloc[0]
    base = s[s["threads"] == s["threads"].min()].set_index(["tier", "variant"])["images_per_s"]
    s["speedup_vs_min_threads"] = [r.images_per_s / base[(r.tier, r.variant)] for r in s.itertuples()]
    return s


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): tiers x variants x threads x rounds."""
    t = p["tfdata_read"]
    return len(tier_names(p)) * count(t["variants"]) * count(t["threads"]) * rounds(t)


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`)."""
    t = p["tfdata_read"]
    return [{"tier": x, "variant": v, "threads": n} for x in tier_names(p) for v in t["variants"] for n in t["threads"]]


STAGE = Stage("tfdata_read", "notebooks/03-tfdata-read.ipynb", "measuring", {"tfdata_read": "TFDataReadConfig"},
              ("seed", "tiers", "tfdata_read"), True, "tfdata_read_report", ("data/imagenet_like",),
              plots=({"tfdata thread scaling": {"template": "simple", "x": "threads",
                                                "y": {"results/tfdata_read/summary.csv": "images_per_s"}}},),
              size="size", configs="configurations")
