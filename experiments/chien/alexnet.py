"""The AlexNet mini-application of Chien et al. 2018 (Section III-B, III-C, V-B, V-C).

Model: AlexNet in Keras 3 (five convolutions, three max-pools, three dense layers, ReLU),
input ``image_size`` x ``image_size`` x 3, one-hot labels, softmax cross-entropy, Adam. The
paper's sizes are ``image_size=224, width=1, dense_width=1``; ``width`` scales the number of
convolution filters and ``dense_width`` the 4096 units of the two hidden dense layers, so the
model fits a two-core CPU while its checkpoint stays large (it is mostly dense weights).

Input pipeline, as in the paper: (paths, labels) -> shuffle -> map(read_file, decode_png
[which decodes JPEG and PNG], convert to float, resize, one-hot) with ``num_parallel_calls =
threads`` in a private pool of that size -> batch (whole batches only) -> prefetch of 0 or 1
batches. Autotuning and injected prefetches are off so that "prefetch 0" means no prefetch.

The loop runs one training step per batch and records per step (``time.perf_counter``, s):
the wait for the batch (``data_s``), the step (``compute_s``) and any checkpoint stall
(``ckpt_s``). The run time of an epoch is from the first request to the end of the last step.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from ..host import cache, dstat
from ..host.cache import EvictionMethod
from ..settings.common_config import check_counts
from ..settings.config import ConfigError, validate
from ..host.tiers import tier_named
from ..repeats.rounds import Rounds
from ..stages import Stage, rounds, tier_names


class AlexNetConfig(Rounds):
    """The ``alexnet`` section: model size and the prefetch, thread, batch and dstat sweeps."""

    image_size: int = Field(224, ge=32, le=1024, description="input side, pixels (paper 224)")
    width: float = Field(0.25, gt=0, le=4, description="conv filters x this (paper 1)")
    dense_width: float = Field(0.5, gt=0, le=4, description="dense units 4096 x this (paper 1)")
    learning_rate: float = Field(1e-4, gt=0, le=1)
    batch_size: int = Field(64, ge=1, le=65536, description="batch of the thread sweep (Fig 6)")
    threads: list[int] = Field([1, 2, 4, 8], min_length=1)
    prefetch: list[int] = Field([0, 1], min_length=1, description="batches prefetched")
    tiers: list[str] | None = Field(None, description="tier names to read from; null = all tiers")
    warmup: int = Field(1, ge=0, le=5)
    eviction: EvictionMethod = "auto"
    batch_sizes: list[int] = Field([16, 32, 64], min_length=1, description="Fig 7 sweep")
    batch_threads: int = Field(8, ge=1, le=1024, description="map threads of the Fig 7 sweep")
    batch_tiers: list[str] = Field(["disk"], min_length=1)
    dstat_tiers: list[str] = Field(["mem", "disk"], min_length=1, description="Fig 8 tiers")
    dstat_threads: int = Field(8, ge=1, le=1024)
    dstat_interval_s: float = Field(0.5, gt=0, le=10, description="sampling period, s (paper 1)")

    @field_validator("threads")
    @classmethod
    def _threads(cls, v):
        return check_counts(v, "thread count", 1, 1024)

    @field_validator("batch_sizes")
    @classmethod
    def _batches(cls, v):
        return check_counts(v, "batch size", 1, 65536)

    @field_validator("prefetch")
    @classmethod
    def _prefetch(cls, v):
        return check_counts(v, "prefetch depth (batches)", 0, 64)


# --- checks that need more than one section -------------------------------------------------

def check_batches(n_images: int, sizes: dict[str, int]) -> None:
    """Every batch size must fit the data set (one whole batch at least)."""
    for param, b in sizes.items():
        if b > n_images:
            raise ConfigError(f"{param} = {b}: larger than the data set ({n_images} images); "
                              f"allowed: 1..{n_images}")


# --- model and pipeline ---------------------------------------------------------------------

def check_prefetch_params(cfg, source) -> tuple[list[str], int]:
    """Notebook 11's checks before any work: every tier ``alexnet`` names exists, and every
    batch size fits the data set at ``source``. Returns (the Fig 6 tiers, images in the set)."""
    from ..datasets.caltech_like import read_manifest

    a = cfg.alexnet
    names = a.tiers or [t.name for t in cfg.tiers]
    for key, tiers in (("tiers", names), ("batch_tiers", a.batch_tiers), ("dstat_tiers", a.dstat_tiers)):
        for i, name in enumerate(tiers):
            tier_named(name, cfg.tiers, f"alexnet.{key}[{i}]")
    n_images = len(read_manifest(source))
    check_batches(n_images, {"alexnet.batch_size": a.batch_size,
                             **{f"alexnet.batch_sizes[{i}]": b for i, b in enumerate(a.batch_sizes)}})
    return names, n_images


def stage_prefetch_data(source, cfg, tier_names: list[str]) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The same bytes on every tier notebook 11 uses (copied once, verified by the file list's
    checksum). Returns (tier -> manifest of its copy, tier -> directory)."""
    from ..datasets.caltech_like import read_manifest
    from ..host.tiers import stage_copy

    a = cfg.alexnet
    used = set(tier_names) | set(a.batch_tiers) | set(a.dstat_tiers)
    staged = {t.name: read_manifest(stage_copy(source, t)) for t in cfg.tiers if t.name in used}
    return staged, {t.name: str(t.dir) for t in cfg.tiers}


def staged_table(staged: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Files and MB of each tier's copy."""
    return pd.DataFrame([{"tier": k, "files": len(m), "MB": m["bytes"].sum() / 1e6}
                         for k, m in staged.items()])


def devices_of(tier_dirs: dict[str, str], names=None) -> dict[str, str | None]:
    """The block device under each tier directory (of ``names``, default all), for env.json."""
    return {t: dstat.device_of(tier_dirs[t]) for t in (names if names is not None else tier_dirs)}


def build_model(n_classes: int, image_size: int = 224, width: float = 1.0, dense_width: float = 1.0):
    """AlexNet (Krizhevsky 2012, single tower): conv 11x11/4 (96) -> pool -> conv 5x5 (256) ->
    pool -> conv 3x3 (384, 384, 256) -> pool -> dense 4096 -> dense 4096 -> dense n_classes.
    Pools are 3x3/2 with 'same' padding so small inputs still reach the dense layers."""
    import keras
    from keras import layers

    c = lambda n: max(4, int(round(n * width)))          # noqa: E731
    d = lambda n: max(8, int(round(n * dense_width)))    # noqa: E731
    pool = lambda: layers.MaxPooling2D(3, 2, padding="same")  # noqa: E731
    return keras.Sequential([
        keras.Input((image_size, image_size, 3)),
        layers.Conv2D(c(96), 11, strides=4, activation="relu"), pool(),
        layers.Conv2D(c(256), 5, padding="same", activation="relu"), pool(),
        layers.Conv2D(c(384), 3, padding="same", activation="relu"),
        layers.Conv2D(c(384), 3, padding="same", activation="relu"),
        layers.Conv2D(c(256), 3, padding="same", activation="relu"), pool(),
        layers.Flatten(),
        layers.Dense(d(4096), activation="relu"),
        layers.Dense(d(4096), activation="relu"),
        layers.Dense(n_classes),
    ], name="alexnet")


def build_pipeline(paths: list[str], labels: list[int], n_classes: int, threads: int,
                   batch_size: int, prefetch: int, image_size: int, seed: int, repeat: bool = False):
    """The paper's input pipeline: a ``tf.data.Dataset`` of (images, one-hot labels) batches."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((paths, np.asarray(labels, dtype=np.int32)))
    ds = ds.shuffle(len(paths), seed=seed, reshuffle_each_iteration=False)
    if repeat:
        ds = ds.repeat()

    def fn(p, y):
        img = tf.io.decode_png(tf.io.read_file(p), channels=3)   # decodes JPEG and PNG
        img = tf.image.convert_image_dtype(img, tf.float32)
        img = tf.image.resize(img, [image_size, image_size])
        return img, tf.one_hot(y, n_classes)

    ds = ds.map(fn, num_parallel_calls=threads).batch(batch_size, drop_remainder=True)
    if prefetch > 0:
        ds = ds.prefetch(prefetch)
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = threads
    opts.autotune.enabled = False
    opts.experimental_optimization.map_parallelization = False
    opts.experimental_optimization.inject_prefetch = False
    opts.experimental_optimization.map_and_batch_fusion = False   # MapAndBatch runs ahead: a hidden prefetch
    return ds.with_options(opts)


class Trainer:
    """AlexNet, Adam and a compiled training step; one instance serves every run."""

    def __init__(self, n_classes: int, image_size: int, width: float, dense_width: float,
                 learning_rate: float = 1e-4, seed: int = 0):
        import keras
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")
        keras.utils.set_random_seed(seed)
        self.n_classes, self.image_size = n_classes, image_size
        self.model = build_model(n_classes, image_size, width, dense_width)
        self.optimizer = keras.optimizers.Adam(learning_rate)
        self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True)
        self._warm: set[int] = set()

        @tf.function(reduce_retracing=True)
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = self.loss_fn(y, self.model(x, training=True))
            grads = tape.gradient(loss, self.model.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
            return loss

        self.step = step

    def warm(self, batch_size: int) -> None:
        """Trace and run the step once for this batch size, so no run pays for tracing."""
        if batch_size in self._warm:
            return
        import tensorflow as tf

        x = tf.zeros((batch_size, self.image_size, self.image_size, 3))
        y = tf.one_hot(tf.zeros(batch_size, tf.int32), self.n_classes)
        self.step(x, y).numpy()
        self._warm.add(batch_size)

    def checkpoint(self):
        """A ``tf.train.Checkpoint`` of the model and the optimizer (weights, Adam slots)."""
        import tensorflow as tf

        return tf.train.Checkpoint(model=self.model, optimizer=self.optimizer)

    def state_bytes(self) -> int:
        """Bytes of every variable a checkpoint holds (model and optimizer)."""
        return int(sum(np.prod(v.shape) * v.dtype.itemsize if hasattr(v.dtype, "itemsize")
                       else v.numpy().nbytes for v in self.model.variables + self.optimizer.variables))

    def weights(self) -> list[np.ndarray]:
        """Copies of every model and optimizer variable (to compare restores bit for bit)."""
        return [v.numpy().copy() for v in self.model.variables + self.optimizer.variables]


def run_steps(trainer: Trainer, ds, iterations: int | None = None, on_step=None) -> tuple[float, pd.DataFrame]:
    """Train one step per batch of ``ds`` (at most ``iterations``). ``on_step(i)`` runs after
    step ``i`` (1-based) and returns the seconds training stalled for it (a checkpoint).

    Returns the run time in seconds (first request to end of the last step) and one row per
    step: ``start_s`` (from the run's start), ``data_s``, ``compute_s``, ``ckpt_s``, ``loss``.
    """
    rows = []
    it = iter(ds)
    t0 = time.perf_counter()
    i = 0
    while iterations is None or i < iterations:
        a = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        b = time.perf_counter()
        loss = float(trainer.step(x, y).numpy())
        c = time.perf_counter()
        i += 1
        ck = float(on_step(i) or 0.0) if on_step else 0.0
        rows.append({"step": i, "start_s": a - t0, "data_s": b - a, "compute_s": c - b,
                     "ckpt_s": ck, "loss": loss})
    return time.perf_counter() - t0, pd.DataFrame(rows)


def data_folder(manifest: pd.DataFrame) -> str:
    return str(manifest["abspath"].iloc[0]).rsplit("/train/", 1)[0]


def _one_run(trainer, m, n_classes, threads, batch, prefetch, image_size, seed, eviction, tier=None):
    ev = cache.evict([data_folder(m)], eviction, label=tier)
    ds = build_pipeline(list(m["abspath"]), list(m["label"]), n_classes, threads, batch,
                        prefetch, image_size, seed)
    seconds, steps = run_steps(trainer, ds)
    return seconds, steps, ev


def sweep_findings(runs: pd.DataFrame, tables: dict, cfg: "AlexNetConfig") -> list:
    """The prefetch and batch findings of the sweeps' runs so far (Fig 6, 7:
    :func:`experiments.chien.alexnet_findings.measure_prefetch` and ``measure_batch_size`` on
    :func:`summarize` of the runs), at the level in force: the measure function the stage's
    rounds judge at each look."""
    from .alexnet_findings import measure_batch_size, measure_prefetch

    n = os.cpu_count() or 1
    summary = summarize(runs)
    batches = batch_table(summary, cfg.batch_threads, cfg.batch_tiers, cfg.batch_sizes)
    return [*measure_prefetch(summary, {}, n, runs),
            *(measure_batch_size(batches, {}, n, runs, tables.get("steps")) if len(batches) else [])]


KEYS = ("experiment", "tier", "threads", "batch_size", "prefetch")   # the columns that name a configuration


def measuring_stage(cfg: AlexNetConfig, trainer: Trainer, staged: dict[str, pd.DataFrame], n_classes: int,
                    tier_names: list[str], seed: int):
    """Fig 6's prefetch sweep and Fig 7's batch sweep as one measuring stage
    (:class:`experiments.repeats.MeasuringStage`): every configuration (``experiment``: prefetch
    or batch) once a round, in a seeded order, the data set evicted from the page cache before
    each run; a warm-up round first; at least ``runs`` rounds, more while a prefetch or batch
    finding is undecided (:func:`sweep_findings`, judged by the declared rules), up to
    ``max_runs`` within ``budget_s``. A run
    trains one epoch: its row (run time, images/s, the summed data wait and compute) and its
    steps (side table ``steps``)."""
    from .. import repeats
    from ..verdicts import looks
    from ..repeats import findings

    def run_one(c, i):
        m = staged[c["tier"]]
        trainer.warm(c["batch_size"])
        seconds, st, ev = _one_run(trainer, m, n_classes, c["threads"], c["batch_size"],
                                   c["prefetch"], cfg.image_size, seed, cfg.eviction, c["tier"])
        n = len(st) * c["batch_size"]
        return repeats.Run({"seconds": seconds, "iterations": len(st), "images": n,
                            "images_per_s": n / seconds, "data_s": st["data_s"].sum(),
                            "compute_s": st["compute_s"].sum(), "eviction": ev}, {"steps": st})

    pre = prefetch_configs(tier_names, cfg)
    configs = ([{"experiment": "prefetch", **c} for c in pre]
               + [{"experiment": "batch", **c} for c in batch_configs(cfg, pre)])
    context = lambda rows: {"batch_threads": cfg.batch_threads, "batch_tiers": cfg.batch_tiers}   # noqa: E731
    return repeats.MeasuringStage("alexnet_prefetch", KEYS, configs, run_one, cfg.plan(), seed, warmup=cfg.warmup,
                                  tables=("steps",), progress="alexnet rounds",
                                  judge=looks.judge("alexnet_prefetch", lambda r, t: sweep_findings(r, t, cfg)),
                                  focus=findings.focus("alexnet_prefetch", configs, context),
                                  quantities=("seconds", "data_s"), units="steps",
                                  unit_quantities=("data_s", "compute_s"),
                                  context=context)


def measure_stage(trainer: Trainer, staged: dict[str, pd.DataFrame], tier_dirs: dict[str, str], n_classes: int,
                  tier_names: list[str], cfg: AlexNetConfig, seed: int, purchases=()):
    """The stage's measurements: Fig 6's prefetch and Fig 7's batch sweep (:func:`measuring_stage`), then
    the runs ``make decide`` bought (``purchases``, ``params.yaml``'s
    ``decide.alexnet_prefetch``), and Fig 8's dstat epochs (:func:`measure_dstat`). Returns the
    sweep's :class:`experiments.repeats.Measurement` (one row per run, ``experiment`` saying
    which sweep; side table ``steps``), the dstat samples and the dstat steps. When a decide
    run appends, everything measured before is kept and only the purchases run."""
    from ..settings import paths
    from .. import repeats

    m = repeats.measure(measuring_stage(cfg, trainer, staged, n_classes, tier_names, seed), purchases)
    if repeats.purchases.appending("alexnet_prefetch"):
        d = paths.results_dir("alexnet_prefetch")
        keep = lambda n: pd.read_csv(d / f"{n}.csv") if (d / f"{n}.csv").exists() else pd.DataFrame()  # noqa: E731
        return m, keep("dstat"), keep("dstat_steps")
    samples, dsteps = measure_dstat(trainer, staged, tier_dirs, n_classes, cfg, seed)
    return m, samples, dsteps


def prefetch_configs(tiers: list[str], cfg: AlexNetConfig) -> list[dict]:
    """Fig 6: threads x prefetch x tiers at ``cfg.batch_size``."""
    return [{"tier": t, "threads": n, "batch_size": cfg.batch_size, "prefetch": p}
            for t in tiers for n in cfg.threads for p in cfg.prefetch]


def batch_configs(cfg: AlexNetConfig, skip: list[dict] = ()) -> list[dict]:
    """Fig 7: batch sizes x prefetch at ``cfg.batch_threads`` threads, leaving out the
    configurations in ``skip`` (those the thread sweep already measures)."""
    return [c for c in ({"tier": t, "threads": cfg.batch_threads, "batch_size": b, "prefetch": p}
                        for t in cfg.batch_tiers for b in cfg.batch_sizes for p in cfg.prefetch)
            if c not in list(skip)]


def batch_table(summary: pd.DataFrame, cfg_threads: int, tiers: list[str], sizes: list[int]) -> pd.DataFrame:
    """The Fig 7 rows of a summary, whichever sweep measured them."""
    d = summary[(summary["threads"] == cfg_threads) & summary["tier"].isin(tiers)
                & summary["batch_size"].isin(sizes)]
    return d.sort_values(["tier", "prefetch", "batch_size"]).reset_index(drop=True)


def measure_dstat(trainer: Trainer, staged: dict[str, pd.DataFrame], tier_dirs: dict[str, str],
                  n_classes: int, cfg: AlexNetConfig, seed: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig 8: one cold epoch per (tier, prefetch) at ``cfg.batch_size`` and ``dstat_threads``,
    sampled by :class:`experiments.host.dstat.Sampler` every ``dstat_interval_s``: device MB/s read
    (block devices) and the process tree's VFS MB/s (a memory tier has no device). Returns the
    samples and the steps, both with ``time_s`` from the start of sampling."""
    samples, steps = [], []
    for tier in cfg.dstat_tiers:
        dev = dstat.device_of(tier_dirs[tier])
        for p in cfg.prefetch:
            m = staged[tier]
            trainer.warm(cfg.batch_size)
            ev = cache.evict([data_folder(m)], cfg.eviction, label=tier)
            ds = build_pipeline(list(m["abspath"]), list(m["label"]), n_classes, cfg.dstat_threads,
                                cfg.batch_size, p, cfg.image_size, seed)
            s = dstat.Sampler(devices=[dev] if dev else [], pid=os.getpid(),
                              interval_s=cfg.dstat_interval_s)
            t_start = time.perf_counter()
            with s:
                t_run = time.perf_counter()
                seconds, st = run_steps(trainer, ds)
            f = s.frame()
            if len(f):
                samples.append(f.assign(tier=tier, prefetch=p, device=dev or "", eviction=ev,
                                        run_seconds=seconds))
            steps.append(st.assign(tier=tier, prefetch=p,
                                   time_s=st["start_s"] + (t_run - t_start)))
    return (pd.concat(samples, ignore_index=True) if samples else pd.DataFrame(),
            pd.concat(steps, ignore_index=True))


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Median run time (s) with min and max per configuration, warm-ups left out, and for each
    configuration with prefetch the excess of no prefetch over it (the cost of I/O, Fig 6)."""
    keys = ["experiment", "tier", "threads", "batch_size", "prefetch"]
    d = runs[~runs["warmup"]]
    s = (d.groupby(keys, sort=False)
          .agg(seconds=("seconds", "median"), seconds_min=("seconds", "min"),
               seconds_max=("seconds", "max"), images_per_s=("images_per_s", "median"),
               data_s=("data_s", "median"), compute_s=("compute_s", "median"),
               iterations=("iterations", "first"), runs=("seconds", "size"))
          .reset_index())
    base = s[s["prefetch"] == 0].set_index(keys[:-1])["seconds"]
    s["no_prefetch_seconds"] = [base.get(tuple(r[k] for k in keys[:-1]), np.nan)
                                for _, r in s.iterrows()]
    s["io_excess_s"] = s["no_prefetch_seconds"] - s["seconds"]
    return s


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): the prefetch and batch sweeps' configurations x rounds."""
    a = p["alexnet"]
    cfg = SimpleNamespace(**{k: a[k] for k in ("threads", "prefetch", "batch_size", "batch_threads", "batch_tiers",
                                              "batch_sizes")})
    pre = prefetch_configs(a.get("tiers") or tier_names(p), cfg)
    return (len(pre) + len(batch_configs(cfg, pre))) * rounds(a)


def configurations(p: dict, name: str) -> list[dict]:
    """The stage's configurations under a rendered profile (:func:`experiments.stages.configs_of`): the prefetch sweep's, then the batch sweep's."""
    a = validate("alexnet", p["alexnet"])
    pre = prefetch_configs(tier_names(p, a.tiers), a)
    return ([{"experiment": "prefetch", **c} for c in pre]
            + [{"experiment": "batch", **c} for c in batch_configs(a, pre)])


STAGE = Stage("alexnet_prefetch", "notebooks/11-alexnet-prefetch.ipynb", "measuring", {"alexnet": "AlexNetConfig"},
              ("seed", "tiers", "caltech_like.n_classes", "alexnet"), True, "alexnet_report", ("data/caltech_like",),
              size="size", configs="configurations")
