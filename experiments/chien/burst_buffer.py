"""Checkpoints made durable on a tier, and a burst buffer that must not lose one.

Chien et al. (Section III-C, V-C) checkpoint AlexNet every K iterations with TensorFlow's
saver, make the files durable with ``syncfs``, and compare tiers; their burst buffer writes
and syncs to a fast tier (Optane) and spawns a background process that copies the files to
the slow tier (HDD) while training goes on. This module is that checkpoint writer, made
crash-safe. It never imports TensorFlow: the caller passes a function that writes the
checkpoint files under a prefix (``tf.train.Checkpoint.write``), so the drain process starts
quickly and the logic is testable with plain files.

On-tier layout, one folder per checkpoint under ``<tier>/<run>/``::

    ckpt-000020/ckpt.index, ckpt.data-00000-of-00001, MANIFEST.json
    ckpt-000020.partial/   being written (a save) or copied (a drain): never trusted
    ckpt-000020.evicting/  being removed from the fast tier (its slow copy is verified)

The rules that keep a checkpoint safe:

1. A save builds ``ckpt-N.partial``, makes every file durable (fsync, or syncfs of the tier),
   writes ``MANIFEST.json`` (file names and sizes) last, then renames the folder into place
   and syncs the parent. A folder without ``.partial`` and with a manifest whose sizes match
   is complete; anything else is ignored.
2. A drain (a separate process, holding an exclusive lock on the slow run folder) copies each
   complete fast checkpoint that the slow tier lacks into ``ckpt-N.partial`` on the slow tier,
   hashing the fast files as it reads them, fsyncs, drops the copy from the page cache and
   reads it back from the device to compare size and SHA-256, writes the manifest with the
   checksums, renames into place and syncs the parent. Only then is the copy *safe*.
3. The fast tier keeps at most ``keep`` checkpoints. Only a checkpoint whose slow copy is
   safe may be evicted; a save that finds the fast tier full waits for the drain and, if the
   oldest is still not safe, drains it itself (that wait counts as stall).
4. :meth:`CheckpointManager.recover`, at start, removes ``.partial``/``.evicting`` leftovers,
   finishes or redoes any drain a killed process left, and returns the newest complete
   checkpoint found on either tier.

Units: bytes, seconds (``time.perf_counter``), MB = 10^6 B.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path



def ConfigError(msg: str) -> Exception:  # noqa: N802 (stands in for the class)
    """:class:`experiments.settings.config.ConfigError`, imported only when raised, so the drain
    process does not pay for importing pydantic at every start."""
    from ..settings.config import ConfigError as _E

    return _E(msg)

MANIFEST = "MANIFEST.json"
PREFIX = "ckpt"
SYNC_METHODS = ("fsync", "syncfs", "none")
_CHUNK = 1 << 20


# --- durability helpers --------------------------------------------------------------------

def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def syncfs(path: Path) -> None:
    """``syncfs(2)`` on the file system holding ``path`` (flushes all of its dirty data)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def make_durable(folder: Path, method: str) -> None:
    """Make the files of ``folder`` and the folder itself durable: ``fsync`` of each file and
    of the folder, ``syncfs`` of the file system, or ``none``."""
    if method == "none":
        return
    if method == "syncfs":
        syncfs(folder)
        return
    for f in sorted(folder.iterdir()):
        if f.is_file():
            _fsync_path(f)
    _fsync_path(folder)


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding ``path``."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


# --- checkpoints on one tier ---------------------------------------------------------------

@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint folder on one tier."""

    step: int
    path: Path
    files: dict[str, int]            # name -> size in bytes
    sha256: dict[str, str] = field(default_factory=dict)  # filled on the slow tier by a drain

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def prefix(self) -> str:
        """The prefix ``tf.train.Checkpoint.read`` takes."""
        return str(self.path / PREFIX)

    @property
    def bytes(self) -> int:
        return sum(self.files.values())


def ckpt_name(step: int) -> str:
    return f"ckpt-{step:09d}"


def _step_of(name: str) -> int | None:
    if not name.startswith("ckpt-") or "." in name:
        return None
    try:
        return int(name[5:])
    except ValueError:
        return None


def read_checkpoint(folder: Path) -> Checkpoint | None:
    """The checkpoint in ``folder`` if it is complete (manifest present, every size matches)."""
    folder = Path(folder)
    step = _step_of(folder.name)
    if step is None or not (folder / MANIFEST).is_file():
        return None
    try:
        man = json.loads((folder / MANIFEST).read_text())
        files = {str(k): int(v) for k, v in man["files"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for name, size in files.items():
        try:
            if (folder / name).stat().st_size != size:
                return None
        except OSError:
            return None
    return Checkpoint(step, folder, files, dict(man.get("sha256") or {}))


def complete_checkpoints(run_dir: Path) -> list[Checkpoint]:
    """Every complete checkpoint under ``run_dir``, oldest first."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    out = [c for c in (read_checkpoint(p) for p in run_dir.iterdir() if p.is_dir()) if c]
    return sorted(out, key=lambda c: c.step)


def _write_manifest(folder: Path, step: int, files: dict[str, int], sha: dict[str, str] | None,
                    sync: bool) -> None:
    body = {"step": step, "files": files, "created": time.time()}
    if sha:
        body["sha256"] = sha
    tmp = folder / (MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(body, f, indent=1)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, folder / MANIFEST)


def _publish(partial: Path, final: Path, sync: bool) -> None:
    """Rename a finished ``.partial`` folder into place and make the rename durable."""
    if sync:
        _fsync_path(partial)
    os.replace(partial, final)
    if sync:
        _fsync_path(final.parent)


def _is_safe_on(slow_run: Path, ck: Checkpoint) -> bool:
    """Whether ``slow_run`` holds a complete, checksummed copy of ``ck`` with the same sizes."""
    s = read_checkpoint(slow_run / ck.name)
    return bool(s and s.files == ck.files and set(s.sha256) == set(ck.files))


# --- the drain: fast -> slow, verified ------------------------------------------------------

def _copy_hashing(src: Path, dst: Path, throttle_Bps: float) -> str:
    """Copy ``src`` to ``dst``; returns the SHA-256 of the bytes read from ``src``.
    ``throttle_Bps`` > 0 limits the copy rate (tests use it to kill a drain mid-copy)."""
    h = hashlib.sha256()
    t0, done = time.perf_counter(), 0
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        for chunk in iter(lambda: fi.read(_CHUNK), b""):
            h.update(chunk)
            fo.write(chunk)
            done += len(chunk)
            if throttle_Bps > 0:
                ahead = done / throttle_Bps - (time.perf_counter() - t0)
                if ahead > 0:
                    fo.flush()
                    time.sleep(ahead)
    return h.hexdigest()


def _read_back_sha(path: Path) -> str:
    """SHA-256 of ``path`` as stored: the file is synced and dropped from the page cache
    first, so the bytes come back from the device where the file system has one."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return sha256_of(path)


class DrainError(RuntimeError):
    """A copy on the slow tier did not match the fast tier's checkpoint."""


def drain_one(ck: Checkpoint, slow_run: Path, throttle_Bps: float = 0) -> Checkpoint:
    """Copy ``ck`` to ``slow_run``, verify size and checksum read back from the slow tier, and
    publish it there. Raises :class:`DrainError` on a mismatch (the partial copy is removed)."""
    partial = slow_run / (ck.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    sha = {}
    for name in sorted(ck.files):
        sha[name] = _copy_hashing(ck.path / name, partial / name, throttle_Bps)
    for name, size in ck.files.items():
        got_size = (partial / name).stat().st_size
        got_sha = _read_back_sha(partial / name)
        if got_size != size or got_sha != sha[name]:
            shutil.rmtree(partial, ignore_errors=True)
            raise DrainError(f"drain of {ck.name}: {name} on the slow tier has {got_size} B "
                             f"sha256 {got_sha[:12]}, expected {size} B sha256 {sha[name][:12]}")
    _write_manifest(partial, ck.step, ck.files, sha, sync=True)
    final = slow_run / ck.name
    shutil.rmtree(final, ignore_errors=True)
    _publish(partial, final, sync=True)
    out = read_checkpoint(final)
    assert out is not None
    return out


def evict(fast_run: Path, slow_run: Path, keep: int) -> list[int]:
    """Remove the oldest fast checkpoints beyond ``keep``, only those whose slow copy is safe.
    Returns the evicted steps. A checkpoint that is not yet safe stops the eviction."""
    evicted = []
    cks = complete_checkpoints(fast_run)
    while len(cks) > keep:
        ck = cks.pop(0)
        if not _is_safe_on(slow_run, ck):
            break
        gone = ck.path.with_name(ck.name + ".evicting")
        try:
            os.replace(ck.path, gone)
        except FileNotFoundError:   # the trainer and a drain may evict the same one at once
            continue
        shutil.rmtree(gone, ignore_errors=True)
        evicted.append(ck.step)
    return evicted


class _Lock:
    """An exclusive ``flock`` on ``<slow_run>/.drain.lock``; released by the kernel if the
    holder dies, so a killed drain never blocks the next one."""

    def __init__(self, slow_run: Path):
        slow_run.mkdir(parents=True, exist_ok=True)
        self.path = slow_run / ".drain.lock"
        self.fd = -1

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def drain(fast_run: Path, slow_run: Path, keep: int, throttle_Bps: float = 0,
          log: Path | None = None) -> list[dict]:
    """Drain every complete fast checkpoint the slow tier lacks, then evict down to ``keep``.

    Holds the drain lock throughout, so drains never overlap; safe to run again at any time
    (a drain of something already safe is skipped). Returns one event per copy (step, bytes,
    start and end wall-clock times, seconds). ``log`` appends the events as JSON lines.
    """
    fast_run, slow_run = Path(fast_run), Path(slow_run)
    events = []
    with _Lock(slow_run):
        for p in slow_run.glob("*.partial"):   # a killed drain's leftovers: we hold the lock
            shutil.rmtree(p, ignore_errors=True)
        for ck in complete_checkpoints(fast_run):
            if _is_safe_on(slow_run, ck):
                continue
            w0, t0 = time.time(), time.perf_counter()
            drain_one(ck, slow_run, throttle_Bps)
            events.append({"event": "drain", "step": ck.step, "bytes": ck.bytes, "wall_start": w0,
                           "wall_end": time.time(), "seconds": time.perf_counter() - t0})
        evicted = evict(fast_run, slow_run, keep)
        if evicted:
            events.append({"event": "evict", "steps": evicted, "wall_end": time.time()})
    if log is not None:
        with open(log, "a") as f:
            for e in events:
                f.write(json.dumps(e) + "\n")
    return events


# --- the manager the training loop calls ----------------------------------------------------

def _check_dir(role: str, path: Path) -> None:
    if not path.is_dir():
        raise ConfigError(f"checkpoint {role} tier directory {str(path)!r} does not exist; "
                          "create it (or mount the file system) or name another tier")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"checkpoint {role} tier directory {str(path)!r} is not writable")


class CheckpointManager:
    """Saves checkpoints to ``primary`` (a tier directory); with ``drain_to`` it is a burst
    buffer: after each save a background process copies the checkpoint to ``drain_to``.

    ``run`` names the sub-folder used on each tier. ``keep`` bounds the checkpoints held on
    ``primary`` when draining (without a drain every checkpoint is kept). ``capacity_bytes``
    caps what this run may use on ``primary`` (to emulate a small NVM device), on top of the
    file system's free space. ``sync`` is how a save is made durable (fsync, syncfs, none).
    """

    def __init__(self, primary: str | os.PathLike, drain_to: str | os.PathLike | None = None, *,
                 run: str = "alexnet", keep: int = 2, sync: str = "fsync",
                 capacity_bytes: int | None = None, throttle_MBps: float = 0,
                 drain_log: str | os.PathLike | None = None):
        if sync not in SYNC_METHODS:
            raise ConfigError(f"checkpoint sync = {sync!r}; allowed: {', '.join(SYNC_METHODS)}")
        if keep < 1:
            raise ConfigError(f"checkpoint keep = {keep}; must be >= 1")
        self.primary_tier, self.slow_tier = Path(primary), Path(drain_to) if drain_to else None
        _check_dir("fast" if drain_to else "target", self.primary_tier)
        if self.slow_tier is not None:
            _check_dir("slow", self.slow_tier)
        self.run_dir = self.primary_tier / run
        self.slow_run = self.slow_tier / run if self.slow_tier else None
        self.keep, self.sync, self.capacity = keep, sync, capacity_bytes
        self.throttle_Bps = throttle_MBps * 1e6
        self.drain_log = Path(drain_log) if drain_log else None
        self.drainers: list[subprocess.Popen] = []
        self.events: list[dict] = []

    # -- before training --
    def room_on_primary(self) -> int:
        """Bytes this run may still write on the primary tier."""
        free = free_bytes(self.primary_tier)
        if self.capacity is not None:
            free = min(free, self.capacity - (folder_bytes(self.run_dir) if self.run_dir.exists() else 0))
        return free

    def check(self, ckpt_bytes: int, n_checkpoints: int) -> None:
        """Stop before training if a checkpoint of ``ckpt_bytes`` cannot be taken: the primary
        tier too small for one, or the slow tier without room for all ``n_checkpoints``."""
        cap = self.capacity if self.capacity is not None else free_bytes(self.primary_tier)
        cap = min(cap, free_bytes(self.primary_tier))
        role = "fast" if self.slow_tier else "target"
        if not self.slow_tier:
            need = ckpt_bytes * n_checkpoints
            if need > cap:
                raise ConfigError(
                    f"checkpoint target tier {str(self.primary_tier)!r}: {n_checkpoints} checkpoints of "
                    f"{ckpt_bytes / 1e6:.1f} MB need {need / 1e6:.1f} MB but {cap / 1e6:.1f} MB are free")
            return
        if ckpt_bytes > cap:
            raise ConfigError(
                f"checkpoint {role} tier {str(self.primary_tier)!r} is too small for one checkpoint: "
                f"one needs {ckpt_bytes / 1e6:.1f} MB, the tier has {cap / 1e6:.1f} MB"
                + (" (capacity_MB)" if self.capacity is not None else " free"))
        need = ckpt_bytes * n_checkpoints
        free = free_bytes(self.slow_tier)
        if need > free:
            raise ConfigError(
                f"checkpoint slow tier {str(self.slow_tier)!r} is full: {n_checkpoints} checkpoints of "
                f"{ckpt_bytes / 1e6:.1f} MB need {need / 1e6:.1f} MB but only {free / 1e6:.1f} MB are free")

    def recover(self) -> Checkpoint | None:
        """At start: clear half-written saves, finish or redo an interrupted drain, and return
        the newest complete checkpoint on either tier (the fast copy when both have it)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for p in self.run_dir.glob("*.partial"):
            shutil.rmtree(p, ignore_errors=True)
        for p in self.run_dir.glob("*.evicting"):   # only ever made once the slow copy was safe
            shutil.rmtree(p, ignore_errors=True)
        if self.slow_run is not None:
            self.events += drain(self.run_dir, self.slow_run, self.keep, 0, self.drain_log)
        found = {c.step: c for c in complete_checkpoints(self.slow_run)} if self.slow_run else {}
        found.update({c.step: c for c in complete_checkpoints(self.run_dir)})
        return found[max(found)] if found else None

    # -- during training --
    def _make_room(self, need: int) -> float:
        """Wait (counted as stall) until the primary tier can take one more checkpoint."""
        t0 = time.perf_counter()
        if self.slow_run is None:
            return 0.0
        full = lambda: (len(complete_checkpoints(self.run_dir)) >= self.keep  # noqa: E731
                        or self.room_on_primary() < need)
        if full():   # evict what is already safe, without waiting for a drain in progress
            evict(self.run_dir, self.slow_run, self.keep - 1)
        if full():   # the oldest is not safe yet: wait for the drains, then evict
            self.wait()
            evict(self.run_dir, self.slow_run, self.keep - 1)
        if full():
            self.events += drain(self.run_dir, self.slow_run, self.keep - 1, 0, self.drain_log)
        if self.room_on_primary() < need:
            raise RuntimeError(f"checkpoint fast tier {self.primary_tier}: no room for a checkpoint "
                               f"of {need / 1e6:.1f} MB even after draining")
        return time.perf_counter() - t0

    def save(self, step: int, write: Callable[[str], object], expect_bytes: int = 0) -> dict:
        """Write checkpoint ``step`` with ``write(prefix)``, make it durable and publish it;
        with a slow tier, start a background drain. Returns the timings in seconds (``stall_s``
        is everything training waited for) and the bytes written."""
        t0, w0 = time.perf_counter(), time.time()
        wait_s = self._make_room(expect_bytes)
        final = self.run_dir / ckpt_name(step)
        partial = final.with_name(final.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        t1 = time.perf_counter()
        write(str(partial / PREFIX))
        t2 = time.perf_counter()
        make_durable(partial, self.sync)
        files = {f.name: f.stat().st_size for f in sorted(partial.iterdir()) if f.is_file()}
        _write_manifest(partial, step, files, None, sync=self.sync != "none")
        shutil.rmtree(final, ignore_errors=True)
        _publish(partial, final, sync=self.sync != "none")
        t3 = time.perf_counter()
        if self.slow_run is not None:
            self.drainers = [p for p in self.drainers if p.poll() is None]
            self.drainers.append(spawn_drain(self.run_dir, self.slow_run, self.keep,
                                             self.throttle_Bps / 1e6, self.drain_log))
        t4 = time.perf_counter()
        ev = {"event": "save", "step": step, "bytes": sum(files.values()), "wall_start": w0,
              "wall_end": time.time(), "wait_s": wait_s, "write_s": t2 - t1, "sync_s": t3 - t2,
              "spawn_s": t4 - t3, "stall_s": t4 - t0}
        self.events.append(ev)
        return ev

    def wait(self) -> None:
        """Wait for every background drain started so far."""
        for p in self.drainers:
            p.wait()
        self.drainers = []

    def drain_events(self) -> list[dict]:
        """The drain processes' events, from ``drain_log``."""
        if not self.drain_log or not self.drain_log.exists():
            return []
        return [json.loads(line) for line in self.drain_log.read_text().splitlines() if line.strip()]


def spawn_drain(fast_run: Path, slow_run: Path, keep: int, throttle_MBps: float = 0,
                log: Path | None = None) -> subprocess.Popen:
    """Start ``python -m experiments.chien.burst_buffer drain ...`` in the background (the paper's
    "process spawned in background to copy the just created files")."""
    from ..settings import paths

    cmd = [sys.executable, "-m", "experiments.chien.burst_buffer", "drain", "--fast", str(fast_run),
           "--slow", str(slow_run), "--keep", str(keep), "--throttle-MBps", str(throttle_MBps)]
    if log:
        cmd += ["--log", str(log)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "DLIO_ROOT": str(paths.root())}
    return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.chien.burst_buffer",
                                 description="Drain burst-buffer checkpoints to the slow tier.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("drain", help="copy, verify and publish fast checkpoints on the slow tier")
    d.add_argument("--fast", required=True)
    d.add_argument("--slow", required=True)
    d.add_argument("--keep", type=int, default=2)
    d.add_argument("--throttle-MBps", type=float, default=0)
    d.add_argument("--log")
    a = ap.parse_args(argv)
    try:
        os.nice(10)   # a background copy: training keeps priority on a box with few cores
    except OSError:
        pass
    drain(Path(a.fast), Path(a.slow), a.keep, a.throttle_MBps * 1e6, Path(a.log) if a.log else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
