"""BERT (TensorFlow, Keras 3), one worker's training program: ``python -m experiments.workloads.bert RUN_DIR``.

One process per emulated accelerator, each given a ``TF_CONFIG`` by :mod:`.launch`, all under
``tf.distribute.MultiWorkerMirroredStrategy`` (the thesis used Horovod for the same
one-process-per-GPU layout; the reference's single-process MirroredStrategy is not used).

Input pipeline as the reference's ``input_fn`` (Section 4.1.2): the training files are
sharded per worker -> repeat -> shuffle (files) -> parallel interleave of
``TFRecordDataset`` (``cycle_length`` 8, not deterministic, as ``sloppy=True``) -> shuffle
buffer of 1,000 samples -> map (parse, cast int64 to int32) and batch with 8 threads. No
``prefetch`` (the reference has none).

Model: a BERT encoder (token, position and segment embeddings, ``layers`` post-LN
transformer blocks) with the pre-training heads: masked LM on the gathered
``masked_lm_positions`` (weighted by ``masked_lm_weights``) and next-sentence prediction on the
[CLS] vector; Adam. Checkpoints at the start and at the end, one per worker (as the thesis saw:
every worker writes its own file). After training, ``eval_steps`` evaluation batches from
the held-out file.

Instrumentation: TensorFlow compiles the step into a graph, so, as in the thesis (Fig 5.9),
a step splits only into ``data_ns`` (the wait in ``next(iterator)``, the IteratorGetNext of
Fig 5.10) and ``compute_ns`` (the distributed step until its loss is on the host). There is
no synchronous VFS read to time inside tf.data: ``vfs_ns`` and ``prep_ns`` are not recorded.

The loop (data wait, step, record, phases, checkpoint points, the exit) is :mod:`.loop`'s,
shared with the sleep run and the emulator (no model built, checkpoints replayed from a traced
pattern). ``train.compute: sleep`` (:mod:`.step_compute`), which the thesis could not do (a ``sleep``
inside the model is dropped when TensorFlow compiles the step, Sec 5.2.2): the same tf.data
pipeline, distributed dataset and iterator; the step waits on ``next(iterator)`` (the batch's
tensors exist when it returns), then sleeps ``t`` in Python, outside any graph, then runs one
compiled collective (a sum of one float over the workers, the strategy's reduce), standing in
for the gradient all-reduce that keeps the workers in step. What differs from the compiled
real step: no forward/backward ops compete with tf.data's threads for the cores while the
step "computes"; the collective is issued after the sleep rather than overlapped with
backward; and nothing reads the batch's tensors after ``next`` returns. The model is still
built (once, at init) so the checkpoints write the same variables; evaluation reads its
batches and sleeps one evaluation step per batch.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from . import loop
from .data_bert import train_files


def feature_spec(tf, seq_len: int, max_pred: int) -> dict:
    I = tf.io.FixedLenFeature
    return {"input_ids": I([seq_len], tf.int64), "input_mask": I([seq_len], tf.int64),
            "segment_ids": I([seq_len], tf.int64), "masked_lm_positions": I([max_pred], tf.int64),
            "masked_lm_ids": I([max_pred], tf.int64), "masked_lm_weights": I([max_pred], tf.float32),
            "next_sentence_labels": I([1], tf.int64)}


def input_fn(tf, files, worker: int, workers: int, batch: int, seq_len: int, max_pred: int,
             cycle: int, shuffle_buffer: int, threads: int, seed: int):
    """The reference's training pipeline for one worker (see the module docstring)."""
    spec = feature_spec(tf, seq_len, max_pred)

    def decode(record):
        ex = tf.io.parse_single_example(record, spec)
        return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in ex.items()}

    d = tf.data.Dataset.from_tensor_slices(tf.constant(files))
    d = d.shard(workers, worker)
    d = d.repeat()
    d = d.shuffle(buffer_size=len(files), seed=seed)
    c = min(cycle, len(files))
    d = d.interleave(tf.data.TFRecordDataset, cycle_length=c, num_parallel_calls=c, deterministic=False)
    d = d.shuffle(buffer_size=shuffle_buffer, seed=seed)
    d = d.map(decode, num_parallel_calls=threads).batch(batch, drop_remainder=True)
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return d.with_options(opts)


def build_model(keras, tf, vocab: int, seq_len: int, hidden: int, layers: int, heads: int, inter: int):
    L = keras.layers

    class Encoder(keras.Model):
        def __init__(self):
            super().__init__()
            self.tok = L.Embedding(vocab, hidden)
            self.pos = L.Embedding(seq_len, hidden)
            self.seg = L.Embedding(2, hidden)
            self.ln = L.LayerNormalization(epsilon=1e-12)
            self.blocks = []
            for _ in range(layers):
                self.blocks.append((L.MultiHeadAttention(heads, hidden // heads), L.LayerNormalization(epsilon=1e-12),
                                    L.Dense(inter, activation="gelu"), L.Dense(hidden),
                                    L.LayerNormalization(epsilon=1e-12)))
            self.mlm_dense = L.Dense(hidden, activation="gelu")
            self.mlm_ln = L.LayerNormalization(epsilon=1e-12)
            self.mlm_out = L.Dense(vocab)
            self.pool = L.Dense(hidden, activation="tanh")
            self.nsp = L.Dense(2)

        def call(self, f, training=False):
            ids, mask, seg = f["input_ids"], f["input_mask"], f["segment_ids"]
            pos = tf.range(tf.shape(ids)[1])[None, :]
            x = self.ln(self.tok(ids) + self.pos(pos) + self.seg(seg))
            att_mask = tf.cast(mask[:, None, :], tf.bool)
            for att, ln1, d1, d2, ln2 in self.blocks:
                x = ln1(x + att(x, x, attention_mask=att_mask, training=training))
                x = ln2(x + d2(d1(x)))
            g = tf.gather(x, f["masked_lm_positions"], batch_dims=1)   # (B, P, H)
            mlm = self.mlm_out(self.mlm_ln(self.mlm_dense(g)))
            nsp = self.nsp(self.pool(x[:, 0]))
            return mlm, nsp

    return Encoder()


def losses(tf, f, mlm, nsp):
    """Per-example pre-training loss: weighted masked-LM cross-entropy + next-sentence CE."""
    ce = tf.keras.losses.sparse_categorical_crossentropy if hasattr(tf, "keras") else None
    mlm_ce = ce(f["masked_lm_ids"], mlm, from_logits=True)                      # (B, P)
    w = f["masked_lm_weights"]
    mlm_loss = tf.reduce_sum(mlm_ce * w, axis=1) / (tf.reduce_sum(w, axis=1) + 1e-5)
    nsp_loss = ce(f["next_sentence_labels"][:, 0], nsp, from_logits=True)
    return mlm_loss + nsp_loss


def _leave_together(folder: Path, rank: int, world: int, timeout_s: float = 120.0) -> None:
    """Mark this worker done in ``folder`` and wait (up to ``timeout_s``) for every other one."""
    (folder / f"done-r{rank}").touch()
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not all((folder / f"done-r{r}").exists() for r in range(world)):
        time.sleep(0.02)


def main(argv=None, replay=None) -> None:
    """One worker of BERT: the real model, a sleep run or the emulator (:mod:`.loop`)."""
    run = loop.read_run(argv)
    cfg, B, seed = run["config"], run["batch_size"], run["seed"]
    dc, mc, tc = cfg["data"], cfg["model"], cfg["train"]
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    lp = loop.RankLoop(run, rank, world)   # no checkpoint barrier: each worker writes its own files
    lp.app.event("init", "begin")
    import tensorflow as tf

    threads = loop.threads_per_rank(run, world)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(max(2, threads))
    comm = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
    emulated = loop.emulated(run)
    if not emulated:
        import keras

        keras.utils.set_random_seed(seed)
    files = train_files(run["data_dir"])
    ds = strategy.distribute_datasets_from_function(
        lambda ctx: input_fn(tf, files, ctx.input_pipeline_id, ctx.num_input_pipelines, B,
                             dc["seq_len"], dc["max_predictions"], tc["cycle_length"],
                             tc["shuffle_buffer"], tc["map_threads"], seed))

    @tf.function
    def collective():
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), axis=None)

    barrier = (lambda: float(collective())) if world > 1 else None
    model = None
    if emulated:
        if barrier is not None:
            barrier()      # traced and compiled here, so its own file reads are not counted below
        lp.io_start()
        it = iter(ds)
        first = next(it)   # the real program takes the first batch during its init, too
        lp.io_stop("io_first_batch")   # the shuffle buffer's first fill is read by now
    else:
        with strategy.scope():
            model = build_model(keras, tf, dc["vocab_size"], dc["seq_len"], mc["hidden"], mc["layers"],
                                mc["heads"], mc["intermediate"])
            opt = keras.optimizers.Adam(tc["lr"])
            global_batch = B * world

            @tf.function
            def train_step(batch):
                def step_fn(f):
                    with tf.GradientTape() as tape:
                        mlm, nsp = model(f, training=True)
                        loss = tf.reduce_sum(losses(tf, f, mlm, nsp)) / global_batch
                    grads = tape.gradient(loss, model.trainable_variables)
                    opt.apply_gradients(zip(grads, model.trainable_variables))
                    return loss
                per = strategy.run(step_fn, args=(batch,))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None)

            lp.io_start()
            it = iter(ds)
            first = next(it)
            lp.io_stop("io_first_batch")
            strategy.run(lambda f: model(f), args=(first,))  # build the variables
            opt.build(model.trainable_variables)
        lp.facts["parameters"] = int(sum(int(tf.size(v)) for v in model.trainable_variables))
        ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
        ckpt_dir = Path(run["checkpoint_dir"]) / f"worker-{rank}"

    def save(tag: str) -> dict:
        t0 = time.perf_counter_ns()
        path = ckpt.write(str(ckpt_dir / f"ckpt-{tag}"))
        nbytes = sum(p.stat().st_size for p in ckpt_dir.glob(f"ckpt-{tag}*"))
        return {"path": path, "bytes": nbytes, "seconds": (time.perf_counter_ns() - t0) / 1e9}
    write_checkpoint = loop.checkpointer(run, rank, save, replay)
    sleep = loop.sleep_step(run, barrier)
    if barrier is not None and emulated:
        barrier()          # the workers leave init together, as the real one's variable creation makes them
    lp.app.event("init", "end")
    lp.facts["device"] = "gpu" if tf.config.list_physical_devices("GPU") and not emulated else "cpu"
    lp.checkpoint(write_checkpoint, barrier=False, tag="start")

    def batches():
        """The first batch (taken during init), then ``next(iterator)`` of the distributed data set."""
        if tc["steps"] < 1:
            return
        yield first, {}
        for _ in range(tc["steps"] - 1):
            yield next(it), {}

    def real_step(batch, t) -> dict:
        return {"loss": float(train_step(batch))}

    lp.io_start()
    with lp.phase("train", epoch=0):
        lp.steps(batches(), loop.slept(sleep) if sleep is not None else real_step, epoch=0)
    lp.io_stop()
    lp.checkpoint(write_checkpoint, barrier=False, tag="end")
    if tc["eval_steps"]:
        _evaluate(tf, run, lp, B, model, sleep)
    lp.finish()
    if world > 1:
        # Leave together: a last collective, then exit without TensorFlow's shutdown handshake
        # (a worker that exits first otherwise makes the coordination leader wait for its
        # heartbeat timeout before it can exit). A worker that has its share of the collective
        # may still be asked for its buffer by a peer (RecvBuf pulls), so nobody exits before
        # every worker has finished it: a file per worker in the run folder.
        barrier()
        _leave_together(Path(run["run_dir"]), rank, world)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _evaluate(tf, run: dict, lp, B: int, model, sleep) -> None:
    """The evaluation pass: ``eval_steps`` batches of the evaluation file, the model's masked-LM
    accuracy (or the sleep's evaluation time); its seconds go to ``lp.facts["evals"]``."""
    dc, tc = run["config"]["data"], run["config"]["train"]
    with lp.phase("eval"):
        t0 = time.perf_counter_ns()
        spec = feature_spec(tf, dc["seq_len"], dc["max_predictions"])
        ev = (tf.data.TFRecordDataset(str(Path(run["data_dir"]) / "eval" / "eval.tfrecord"))
              .map(lambda r: {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v
                              for k, v in tf.io.parse_single_example(r, spec).items()})
              .batch(B).take(tc["eval_steps"]))
        hits = seen = 0.0
        n = 0
        for f in ev:
            n += 1
            if sleep is not None:
                sleep.evaluate()
                continue
            mlm, _ = model(f, training=False)
            w = f["masked_lm_weights"].numpy()
            hits += float(((tf.argmax(mlm, -1, output_type=tf.int32).numpy() == f["masked_lm_ids"].numpy()) * w).sum())
            seen += float(w.sum())
        lp.facts["evals"].append({"seconds": (time.perf_counter_ns() - t0) / 1e9, "batches": n,
                                  "mlm_accuracy": hits / seen if seen else float("nan")})


if __name__ == "__main__":
    main()
