"""BERT's data: TFRecord files of serialized ``tf.train.Example`` (Section 4.1.2, Table 4.1).

Each example has the reference's seven features: ``input_ids``, ``input_mask``,
``segment_ids`` (``seq_len`` int64 each), ``masked_lm_positions``, ``masked_lm_ids``
(``max_predictions`` int64), ``masked_lm_weights`` (``max_predictions`` float32) and
``next_sentence_labels`` (1 int64). Values are valid for the model: a sentence pair of random
length with token ids inside the vocabulary, padding 0, about 15 % of the tokens masked (at
most ``max_predictions``), sorted distinct positions. File ``k`` depends only on ``(seed, k)``.
Training files ``train/part-00000-of-00008.tfrecord`` ..., evaluation ``eval/eval.tfrecord``.

``content`` (the thesis's real vs generated data, Sec 4.7): ``realistic`` is the above (a
sentence pair of some length, padding, ~15 % masked, sorted positions); ``random`` keeps file
names, feature names, shapes and dtypes, and draws every value uniformly inside its field's
valid range (token ids in the vocabulary, 0/1 masks, positions below ``seq_len``, weights in
[0, 1)) **with the same protobuf varint length as the realistic value it replaces**, so every
serialized record, and so every file, has exactly the realistic one's size: the same bytes
on the wire, no structure (no padding runs, no sorted positions, no sentence).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .settings import BertData

FIRST_WORD_ID = 999  # ids below are [PAD], [CLS], [SEP], [MASK] and unused slots in BERT's vocab


def make_example_arrays(rng: np.random.Generator, seq_len: int, max_pred: int, vocab: int) -> dict:
    """One sample's seven arrays (numpy), valid for a model with ``vocab`` tokens."""
    n = int(rng.integers(seq_len // 2, seq_len + 1))
    ids = np.zeros(seq_len, np.int64)
    ids[:n] = rng.integers(min(FIRST_WORD_ID, vocab - 1), vocab, n)
    ids[0] = min(101, vocab - 1)
    mask = np.zeros(seq_len, np.int64)
    mask[:n] = 1
    seg = np.zeros(seq_len, np.int64)
    seg[int(rng.integers(1, n)) if n > 1 else 0:n] = 1
    k = int(min(max_pred, max(1, round(0.15 * n)), n - 1 if n > 1 else 1))
    pos = np.zeros(max_pred, np.int64)
    chosen = np.sort(rng.choice(np.arange(1, max(n, 2)), size=k, replace=False))
    pos[:k] = chosen
    lm_ids = np.zeros(max_pred, np.int64)
    lm_ids[:k] = ids[chosen]
    w = np.zeros(max_pred, np.float32)
    w[:k] = 1.0
    ids[chosen] = min(103, vocab - 1)  # [MASK]
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg, "masked_lm_positions": pos,
            "masked_lm_ids": lm_ids, "masked_lm_weights": w,
            "next_sentence_labels": np.array([rng.integers(0, 2)], np.int64)}


FIELD_RANGES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
                "next_sentence_labels")  # integer fields, randomized within their valid range


def _varint_bounds(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi) of the non-negative integers whose varint encoding is as long as each of ``v``'s."""
    k = np.ones(v.shape, np.int64)
    for j in range(1, 9):
        k += v >= 128 ** j
    lo = np.where(k == 1, 0, 128 ** (k - 1))
    return lo, 128 ** k


def randomize(arrays: dict, rng: np.random.Generator, seq_len: int, vocab: int) -> dict:
    """``arrays`` with every value redrawn uniformly in its field's valid range and its varint
    length (module docstring): the serialized size is unchanged."""
    valid = {"input_ids": vocab, "input_mask": 2, "segment_ids": 2, "masked_lm_positions": seq_len,
             "masked_lm_ids": vocab, "next_sentence_labels": 2}
    out = {}
    for k, v in arrays.items():
        if v.dtype == np.float32:
            out[k] = rng.random(v.shape, dtype=np.float32)
            continue
        lo, hi = _varint_bounds(v)
        out[k] = rng.integers(lo, np.minimum(hi, valid[k])).astype(np.int64)
    return out


def planned_bytes(cfg: "BertData") -> int:
    """An upper bound of the data set's size: every integer at its field's largest varint length,
    plus feature names, protobuf and TFRecord framing."""
    def v(n: int) -> int:  # varint bytes of the largest value below n
        return max(1, -(-int(n - 1).bit_length() // 7))

    per = (cfg.seq_len * (v(cfg.vocab_size) + 2) + cfg.max_predictions * (v(cfg.seq_len) + v(cfg.vocab_size) + 4)
           + 1 + 400)
    return per * (cfg.files * cfg.samples_per_file + cfg.eval_samples)


def _serialize(tf, arrays: dict) -> bytes:
    feat = {}
    for k, v in arrays.items():
        if v.dtype == np.float32:
            feat[k] = tf.train.Feature(float_list=tf.train.FloatList(value=v.tolist()))
        else:
            feat[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=v.tolist()))
    return tf.train.Example(features=tf.train.Features(feature=feat)).SerializeToString(deterministic=True)


def _work(args) -> tuple[int, int]:
    path, seed, file_id, n, seq_len, max_pred, vocab, content = args
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    rng = np.random.default_rng([seed, 0xBE27, file_id])
    scramble = np.random.default_rng([seed, 0xBE27, file_id, 1]) if content == "random" else None
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(n):
            a = make_example_arrays(rng, seq_len, max_pred, vocab)
            if scramble is not None:
                a = randomize(a, scramble, seq_len, vocab)
            w.write(_serialize(tf, a))
    return n, os.path.getsize(path)


def train_files(folder: Path) -> list[str]:
    files = sorted(str(p) for p in (Path(folder) / "train").glob("part-*.tfrecord"))
    if not files:
        raise FileNotFoundError(f"{folder}/train has no TFRecord files: run `dvc repro workload_data`")
    return files


def generate(out: Path, cfg: "BertData", seed: int) -> dict:
    """Write the TFRecord files under ``out`` (atomically); states the size first and stops
    (``tiers.require_free``) when it does not fit."""
    from .datasets import start

    out = Path(out)
    content = getattr(cfg, "content", "realistic")
    planned = planned_bytes(cfg)
    tmp = start(out, planned, f"bert data set ({content}, {cfg.files} files x {cfg.samples_per_file} "
                f"samples, at most)", "bert.data.files / samples_per_file / eval_samples")
    (tmp / "train").mkdir(parents=True)
    (tmp / "eval").mkdir()
    tasks = [(str(tmp / "train" / f"part-{k:05d}-of-{cfg.files:05d}.tfrecord"), seed, k,
              cfg.samples_per_file, cfg.seq_len, cfg.max_predictions, cfg.vocab_size, content)
             for k in range(cfg.files)]
    tasks.append((str(tmp / "eval" / "eval.tfrecord"), seed, 10**6, cfg.eval_samples, cfg.seq_len,
                  cfg.max_predictions, cfg.vocab_size, content))
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=min(len(tasks), cfg.workers or os.cpu_count() or 1)) as pool:
        done = list(pool.map(_work, tasks))
    os.sync()
    seconds = time.perf_counter() - t0
    os.replace(tmp, out)
    n, nbytes = sum(d[0] for d in done), sum(d[1] for d in done)
    return {"workload": "bert", "content": content, "files": len(tasks), "samples": n, "bytes": nbytes,
            "planned_bytes": planned, "seconds": seconds, "MBps": nbytes / 1e6 / seconds,
            "bytes_per_sample": nbytes / n}
