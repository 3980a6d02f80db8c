"""labkit: the plumbing a course lab calls (where it writes, its sizes, synthetic data, a timer).

One standalone module, copied into every student bundle beside the notebook (``import labkit``):
it imports nothing from ``experiments`` and holds none of the mechanisms the labs grade (no
eviction, no O_DIRECT reader, no residency, no checkpoint writer, no AU): the student writes
those. Python >= 3.9, numpy.

Where a lab writes: ``$DLIO_COURSE_DIR/<lab>/`` when that is set (the grader gives each
submission its own), else ``./lab-output/<lab>/`` beside the notebook (the kernel's working
folder); a memory-backed folder under ``/dev/shm`` named after that folder and the user id, so two
students, two submissions or two checkouts on one host never share it. Sizes come from
``$DLIO_COURSE_PROFILE``: ``smoke`` (seconds: the tests and the grader) or ``default`` (what a
student runs; the course guide's time table).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np

PROFILE_ENV = "DLIO_COURSE_PROFILE"
DIR_ENV = "DLIO_COURSE_DIR"
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


def base_dir() -> Path:
    """The course's scratch root: ``$DLIO_COURSE_DIR``, else ``./lab-output`` (absolute)."""
    env = os.environ.get(DIR_ENV)
    return Path(env).resolve() if env else (Path.cwd() / "lab-output").resolve()


def lab_dir(lab: str, sub: str = "") -> Path:
    """``<base>/<lab>/<sub>``, created: the only folder a lab writes to on disk."""
    d = base_dir() / lab / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def mem_root(base: str | os.PathLike | None = None) -> Path:
    """``/dev/shm/dlio-course-<uid>-<hash of the scratch root>``: the memory folder of ``base``
    (default :func:`base_dir`)."""
    h = hashlib.sha1(str(Path(base).resolve() if base else base_dir()).encode()).hexdigest()[:10]
    return Path("/dev/shm") / f"dlio-course-{os.getuid()}-{h}"


def mem_dir(lab: str) -> Path | None:
    """A folder on the memory-backed tier (``/dev/shm``) for ``lab``, created; None without one."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    d = mem_root() / lab
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_file(path: str | os.PathLike, mib: int, seed: int = 0) -> Path:
    """Write ``mib`` MiB of random bytes (incompressible) to ``path``, fsync it, return it."""
    if mib < 1:
        raise ValueError(f"mib = {mib!r}; allowed: a whole number of MiB >= 1")
    rng = np.random.default_rng(seed)
    path = Path(path)
    with open(path, "wb") as f:
        f.writelines(rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes() for _ in range(mib))
        f.flush()
        os.fsync(f.fileno())
    return path


class timer:
    """``with labkit.timer() as t: ...`` then ``t.seconds`` (wall, ``perf_counter``)."""

    def __enter__(self):
        self.seconds = float("nan")
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False


def timed_read(path: str | os.PathLike, block: int, random: bool, seed: int = 0) -> dict:
    """Read ``path`` once, buffered, in ``block``-byte ``pread`` calls, in order or in a random
    order of block offsets (plumbing for labs whose subject is not the reader itself; lab 1's
    student writes a cold reader of their own, with eviction and O_DIRECT). Returns ``bytes``,
    ``seconds`` (wall, ``perf_counter``), ``MBps`` (10^6 B/s) and ``iops`` (reads per second)."""
    if block <= 0:
        raise ValueError(f"block = {block!r}; allowed: a positive number of bytes")
    size = os.path.getsize(path)
    offsets = np.arange(0, size, block)
    if random:
        offsets = np.random.default_rng(seed).permutation(offsets)
    fd = os.open(path, os.O_RDONLY)
    try:
        # POSIX_FADV_RANDOM makes a random 4 KiB read fetch 4 KiB (no read-ahead), as fio's does
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM if random else os.POSIX_FADV_SEQUENTIAL)
        n = 0
        t0 = time.perf_counter()
        for off in offsets:
            n += len(os.pread(fd, block, int(off)))
        s = time.perf_counter() - t0
    finally:
        os.close(fd)
    return {"bytes": n, "seconds": s, "MBps": n / s / 1e6, "iops": len(offsets) / s}


def emulate(path: str | os.PathLike, accelerators: int, batch_bytes: int, compute_s: float, steps: int,
            seed: int = 0) -> dict:
    """A minimal emulated training run (lab 8): ``accelerators`` threads, each doing ``steps``
    steps of one random ``batch_bytes`` read of ``path`` (its data wait) then
    ``sleep(compute_s)`` (the compute model's step). No prefetch, as the thesis's emulator.
    Each thread reads into one buffer of its own, allocated once (``preadv``), as a loader
    fills its pinned buffers: a new ``bytes`` each step made the wait the allocator's page
    faults too (on a loaded 2-core VM, 2026-11-29: 7 ms a 2.6 MB batch of a 512 MiB tmpfs
    file, 3 ms into a reused buffer).
    Returns ``run_s`` (wall seconds of the whole run), ``read_s`` (mean data wait per step,
    seconds), ``steps`` per accelerator and ``bytes`` read in all. It measures; it does not
    compute utilization (the lab's student does)."""
    if accelerators < 1 or steps < 1 or batch_bytes < 1 or compute_s < 0:
        raise ValueError(f"accelerators = {accelerators}, steps = {steps}, batch_bytes = {batch_bytes}, "
                         f"compute_s = {compute_s}: counts must be >= 1 and compute_s >= 0")
    size = os.path.getsize(path)
    slots = max(1, size // batch_bytes)
    waits: list[float] = []
    got: list[int] = []
    fd = os.open(path, os.O_RDONLY)

    def rank(r: int) -> None:
        rng = np.random.default_rng([seed, r])
        buf = bytearray(batch_bytes)
        for _ in range(steps):
            t = time.perf_counter()
            got.append(os.preadv(fd, [buf], int(rng.integers(slots)) * batch_bytes))
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
    return {"run_s": run_s, "read_s": float(np.mean(waits)), "steps": steps, "bytes": int(sum(got))}


def release_memory(lab: str) -> int:
    """Remove ``lab``'s folder on the memory-backed tier (its files hold RAM until deleted: a
    tmpfs file cannot be evicted). Returns the bytes freed."""
    d = mem_dir(lab)
    if d is None:
        return 0
    freed = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    shutil.rmtree(d, ignore_errors=True)
    with contextlib.suppress(OSError):
        d.parent.rmdir()   # the scratch root's memory folder, once its last lab is gone
    return freed
