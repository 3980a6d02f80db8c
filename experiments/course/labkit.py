"""Helpers the course's labs call: where a lab writes, its size, a timed file read.

A lab writes only under ``explore/course/<lab>/`` (and, for a memory-backed tier, under
``/dev/shm/dlio-artifact-<checkout>/explore-course/<lab>/``): never the pipeline's ``results/``
or ``data/``. Its size comes from ``DLIO_COURSE_PROFILE``: ``smoke`` (seconds, for the tests
and the grader) or ``default`` (the sizes the time table in ``course/README.md`` was measured
with).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np

from .. import paths

PROFILE_ENV = "DLIO_COURSE_PROFILE"
PROFILES = ("smoke", "default")


def profile() -> str:
    """``smoke`` or ``default`` (from ``$DLIO_COURSE_PROFILE``; ``default`` when unset)."""
    p = os.environ.get(PROFILE_ENV, "default")
    if p not in PROFILES:
        raise ValueError(f"{PROFILE_ENV} = {p!r}; allowed: {', '.join(PROFILES)}")
    return p


def sizes(table: dict[str, dict]) -> dict:
    """The row of ``table`` (``{"smoke": {...}, "default": {...}}``) for the active profile."""
    return dict(table[profile()])


def lab_dir(lab: str, sub: str = "") -> Path:
    """``explore/course/<lab>/<sub>``, created: the only folder a lab writes to on disk."""
    d = paths.root() / "explore" / "course" / lab / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def mem_dir(lab: str) -> Path | None:
    """A folder on the memory-backed tier (``/dev/shm``) for ``lab``, created; None without one."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    d = shm / f"dlio-artifact-{paths.checkout_id()}" / "explore-course" / lab
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_file(path: Path, mib: int, seed: int = 0) -> Path:
    """Write ``mib`` MiB of random bytes to ``path`` (incompressible), fsync it, return it."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.writelines(rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes() for _ in range(mib))
        f.flush()
        os.fsync(f.fileno())
    return path


def timed_read(path: Path, block: int, random: bool, seed: int = 0) -> dict:
    """Read ``path`` once in ``block``-byte ``pread`` calls, in order or in a random order of
    block offsets. Returns ``bytes``, ``seconds`` (wall, ``perf_counter``), ``MBps`` (10^6 B/s)
    and ``iops`` (reads per second)."""
    if block <= 0:
        raise ValueError(f"block = {block!r}; allowed: a positive number of bytes")
    size = os.path.getsize(path)
    offsets = np.arange(0, size, block)
    if random:
        offsets = np.random.default_rng(seed).permutation(offsets)
    fd = os.open(path, os.O_RDONLY)
    try:
        # no read-ahead advice for the random pattern would still leave the kernel's default:
        # POSIX_FADV_RANDOM makes a random 4 KiB read fetch 4 KiB, as fio's does
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM if random else os.POSIX_FADV_SEQUENTIAL)
        n = 0
        t0 = time.perf_counter()
        for off in offsets:
            n += len(os.pread(fd, block, int(off)))
        s = time.perf_counter() - t0
    finally:
        os.close(fd)
    return {"bytes": n, "seconds": s, "MBps": n / s / 1e6, "iops": len(offsets) / s}


def emulate(path: Path, accelerators: int, batch_bytes: int, compute_s: float, steps: int,
            seed: int = 0) -> dict:
    """A minimal emulated training run (lab 8): ``accelerators`` threads, each doing ``steps``
    steps of one random ``batch_bytes`` ``pread`` of ``path`` (its data wait) then
    ``sleep(compute_s)`` (the compute model's step). No prefetch, as the thesis's emulator.
    Returns ``run_s`` (wall seconds of the whole run), ``read_s`` (mean data wait per step,
    seconds) and ``steps`` per accelerator; the ideal compute time is ``steps * compute_s``."""
    import threading

    if accelerators < 1 or steps < 1 or batch_bytes < 1 or compute_s < 0:
        raise ValueError(f"accelerators = {accelerators}, steps = {steps}, batch_bytes = {batch_bytes}, "
                         f"compute_s = {compute_s}: counts must be >= 1 and compute_s >= 0")
    size = os.path.getsize(path)
    slots = max(1, size // batch_bytes)
    waits: list[float] = []
    fd = os.open(path, os.O_RDONLY)

    def rank(r: int) -> None:
        rng = np.random.default_rng([seed, r])
        for _ in range(steps):
            t = time.perf_counter()
            os.pread(fd, batch_bytes, int(rng.integers(slots)) * batch_bytes)
            waits.append(time.perf_counter() - t)
            time.sleep(compute_s)

    try:
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(accelerators)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        run_s = time.perf_counter() - t0
    finally:
        os.close(fd)
    return {"run_s": run_s, "read_s": float(np.mean(waits)), "steps": steps}


def release_memory(lab: str) -> int:
    """Remove ``lab``'s folder on the memory-backed tier (its files hold RAM until deleted: a
    tmpfs file cannot be evicted). Returns the bytes freed."""
    d = mem_dir(lab)
    if d is None:
        return 0
    freed = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    shutil.rmtree(d, ignore_errors=True)
    return freed
