"""The burst buffer must not lose a checkpoint: verified drains, bounded eviction, recovery
after a real kill mid-drain with bit-identical restores, and clear errors before training."""

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from experiments.chien import burst_buffer as bb
from experiments.settings.config import ConfigError


def _writer(payload: bytes):
    """A stand-in for tf.train.Checkpoint.write: two files under the prefix."""
    def write(prefix):
        Path(prefix + ".index").write_bytes(b"idx" + payload[:16])
        Path(prefix + ".data-00000-of-00001").write_bytes(payload)
    return write


@pytest.fixture
def tiers(tmp_path):
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir()
    slow.mkdir()
    return fast, slow


def test_save_publishes_atomically_with_manifest(tiers):
    fast, _ = tiers
    m = bb.CheckpointManager(fast, run="r")
    ev = m.save(3, _writer(b"x" * 1000))
    ck = bb.complete_checkpoints(fast / "r")
    assert [c.step for c in ck] == [3] and ck[0].bytes == ev["bytes"] == 1000 + 19
    assert not list((fast / "r").glob("*.partial"))
    assert ev["stall_s"] >= ev["write_s"] + ev["sync_s"]


def test_incomplete_folders_are_never_trusted(tiers):
    fast, _ = tiers
    m = bb.CheckpointManager(fast, run="r")
    m.save(1, _writer(b"a" * 100))
    (fast / "r" / "ckpt-000000002.partial").mkdir()                      # a save cut short
    bad = fast / "r" / "ckpt-000000003"
    bad.mkdir()
    (bad / "ckpt.index").write_bytes(b"short")
    (bad / bb.MANIFEST).write_text(json.dumps({"step": 3, "files": {"ckpt.index": 999}}))
    assert [c.step for c in bb.complete_checkpoints(fast / "r")] == [1]
    assert m.recover().step == 1
    assert not (fast / "r" / "ckpt-000000002.partial").exists()


def test_drain_verifies_and_eviction_keeps_at_most_n(tiers):
    fast, slow = tiers
    m = bb.CheckpointManager(fast, slow, run="r", keep=2)
    for step in range(1, 6):
        m.save(step, _writer(bytes([step]) * 5000))
        m.wait()
        assert len(bb.complete_checkpoints(fast / "r")) <= 2
    slow_cks = bb.complete_checkpoints(slow / "r")
    assert [c.step for c in slow_cks] == [1, 2, 3, 4, 5]
    for c in slow_cks:
        assert set(c.sha256) == set(c.files)
        assert all(bb.sha256_of(c.path / n) == h for n, h in c.sha256.items())
    assert [c.step for c in bb.complete_checkpoints(fast / "r")] == [4, 5]


def test_never_evicts_a_checkpoint_that_is_not_safe(tiers):
    fast, slow = tiers
    m = bb.CheckpointManager(fast, run="r")               # saves without draining
    for step in (1, 2, 3):
        m.save(step, _writer(b"z" * 100))
    assert bb.evict(fast / "r", slow / "r", keep=1) == []
    assert len(bb.complete_checkpoints(fast / "r")) == 3
    # a slow copy whose checksum was never recorded is not safe either
    c = bb.complete_checkpoints(fast / "r")[0]
    import shutil
    shutil.copytree(c.path, slow / "r" / c.name)
    assert bb.evict(fast / "r", slow / "r", keep=1) == []
    bb.drain(fast / "r", slow / "r", keep=1)
    assert [c.step for c in bb.complete_checkpoints(fast / "r")] == [3]


def test_a_corrupt_copy_is_not_published(tiers, monkeypatch):
    fast, slow = tiers
    bb.CheckpointManager(fast, run="r").save(1, _writer(b"q" * 3000))
    monkeypatch.setattr(bb, "_read_back_sha", lambda p: "0" * 64)
    with pytest.raises(bb.DrainError, match="expected"):
        bb.drain(fast / "r", slow / "r", keep=1)
    assert bb.complete_checkpoints(slow / "r") == []
    assert len(bb.complete_checkpoints(fast / "r")) == 1     # the only copy stays


def test_save_waits_for_room_instead_of_evicting_unsafe(tiers):
    fast, slow = tiers
    m = bb.CheckpointManager(fast, slow, run="r", keep=1, throttle_MBps=0.05)
    m.save(1, _writer(b"1" * 20_000))                     # drain takes ~0.4 s
    ev = m.save(2, _writer(b"2" * 20_000))                # must wait: fast holds 1 = keep
    assert ev["wait_s"] > 0.1
    m.wait()
    assert [c.step for c in bb.complete_checkpoints(slow / "r")] == [1, 2]
    assert [c.step for c in bb.complete_checkpoints(fast / "r")] == [2]


# --- errors before training --------------------------------------------------------------------

def test_missing_tier_directory_is_a_clear_error(tmp_path):
    (tmp_path / "fast").mkdir()
    with pytest.raises(ConfigError, match=r"slow tier directory .*nope.* does not exist"):
        bb.CheckpointManager(tmp_path / "fast", tmp_path / "nope")
    with pytest.raises(ConfigError, match="fast tier directory .* does not exist"):
        bb.CheckpointManager(tmp_path / "gone", tmp_path / "fast")


def test_fast_tier_too_small_for_one_checkpoint(tiers):
    fast, slow = tiers
    m = bb.CheckpointManager(fast, slow, run="r", capacity_bytes=10_000_000)
    with pytest.raises(ConfigError, match=r"too small for one checkpoint: one needs 50\.0 MB"):
        m.check(50_000_000, 5)
    m.check(5_000_000, 5)


def test_full_slow_tier(tiers, monkeypatch):
    fast, slow = tiers
    real = bb.free_bytes
    monkeypatch.setattr(bb, "free_bytes", lambda p: 1_000_000 if Path(p) == slow else real(p))
    m = bb.CheckpointManager(fast, slow, run="r")
    with pytest.raises(ConfigError, match=r"slow tier .* is full: 5 checkpoints of 2\.0 MB need 10\.0 MB"):
        m.check(2_000_000, 5)


def test_bad_sync_and_keep():
    with pytest.raises(ConfigError, match="sync = 'fdatasync'; allowed: fsync, syncfs, none"):
        bb.CheckpointManager("/tmp", sync="fdatasync")
    with pytest.raises(ConfigError, match="keep = 0"):
        bb.CheckpointManager("/tmp", keep=0)


def test_syncfs_mode_works(tiers):
    fast, _ = tiers
    bb.CheckpointManager(fast, run="r", sync="syncfs").save(1, _writer(b"s" * 10))
    assert bb.complete_checkpoints(fast / "r")[0].step == 1


# --- a real kill in the middle of a drain, then restart and restore ---------------------------

def _model(seed: int):
    """A small model and its optimizer, weights from ``seed``, and their tf.train.Checkpoint."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(1024, activation="relu"),
                              keras.layers.Dense(512), keras.layers.Dense(4)])
    opt = keras.optimizers.Adam(1e-3)
    opt.build(model.trainable_variables)
    return model, opt, tf.train.Checkpoint(model=model, optimizer=opt)


def _tiny_trainer():
    """The model after one training step (optimizer state written too)."""
    import keras
    import tensorflow as tf

    model, opt, ck = _model(7)
    x = tf.random.stateless_normal((8, 64), seed=[1, 2])
    y = tf.one_hot([0, 1, 2, 3, 0, 1, 2, 3], 4)
    with tf.GradientTape() as tape:
        loss = keras.losses.CategoricalCrossentropy(from_logits=True)(y, model(x))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return model, opt, ck


def _state(model, opt):
    return [v.numpy().copy() for v in model.variables + opt.variables]


def test_kill_mid_drain_then_restart_restores_bit_identical(tiers):
    fast, slow = tiers
    model, opt, ck = _tiny_trainer()
    want = _state(model, opt)
    m = bb.CheckpointManager(fast, slow, run="r", keep=2, throttle_MBps=1.0)   # ~10 s drain
    m.save(1, ck.write)
    drainer = m.drainers[-1]
    partial = slow / "r" / "ckpt-000000001.partial"
    deadline = time.time() + 30
    while time.time() < deadline and not (partial.exists() and bb.folder_bytes(partial) > 100_000):
        time.sleep(0.05)
    assert drainer.poll() is None, "the drain finished before it could be killed"
    os.kill(drainer.pid, signal.SIGKILL)                  # a real kill, mid-copy
    drainer.wait()
    assert drainer.returncode == -signal.SIGKILL
    assert partial.exists() and bb.complete_checkpoints(slow / "r") == []

    # restart: new objects, as after a crash of the whole job
    m2 = bb.CheckpointManager(fast, slow, run="r", keep=2)
    found = m2.recover()
    assert found is not None and found.step == 1 and found.path.parent == fast / "r"
    assert not partial.exists()
    [safe] = bb.complete_checkpoints(slow / "r")          # the drain was redone and verified
    assert safe.files == found.files and set(safe.sha256) == set(found.files)

    model2, opt2, ck2 = _fresh()
    ck2.read(found.prefix).assert_consumed()
    got = _state(model2, opt2)
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(want, got))

    # the fast tier is lost: the slow copy alone restores the same bits
    import shutil
    shutil.rmtree(fast / "r")
    m3 = bb.CheckpointManager(fast, slow, run="r", keep=2)
    from_slow = m3.recover()
    assert from_slow.path.parent == slow / "r"
    model3, opt3, ck3 = _fresh()
    ck3.read(from_slow.prefix).assert_consumed()
    assert all(np.array_equal(a, b) for a, b in zip(want, _state(model3, opt3)))


def _fresh():
    """A model and optimizer with different weights, to restore into."""
    return _model(99)


def test_kill_of_the_newest_drain_recovers_the_newest_checkpoint(tiers):
    """Checkpoint 1 is safe on the slow tier; the drain of checkpoint 2 is killed. The restart
    must pick checkpoint 2 (fast tier only), finish its drain, and keep checkpoint 1."""
    fast, slow = tiers
    m = bb.CheckpointManager(fast, slow, run="r", keep=2)
    m.save(1, _writer(b"1" * 200_000))
    m.wait()
    m.throttle_Bps = 50_000                                # the next drain takes ~4 s
    m.save(2, _writer(b"2" * 200_000))
    d = m.drainers[-1]
    part = slow / "r" / "ckpt-000000002.partial"
    deadline = time.time() + 20
    while time.time() < deadline and not (part.exists() and bb.folder_bytes(part) > 0):
        time.sleep(0.02)
    os.kill(d.pid, signal.SIGKILL)
    d.wait()
    assert [c.step for c in bb.complete_checkpoints(slow / "r")] == [1]
    found = bb.CheckpointManager(fast, slow, run="r", keep=2).recover()
    assert found.step == 2
    assert [c.step for c in bb.complete_checkpoints(slow / "r")] == [1, 2]
    assert (found.path / "ckpt.data-00000-of-00001").read_bytes() == b"2" * 200_000
