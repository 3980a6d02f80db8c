"""Known I/O patterns to check the tracer against (used by the tests and the teaching notebook).

:func:`fio_pattern` writes a data file and a two-job fio file: sequential reads of
``seq_bs_kib`` KiB over the first ``seq_mib`` MiB, then (``stonewall``) ``rand_ios`` random reads
of ``rand_bs_kib`` KiB, with ``ioengine=psync`` (``pread64``) and ``direct=1`` where the file
system allows it (so each read is one block request). :func:`expected` says what a tracer must
see: counts, bytes, sizes, one unique file, and the random/sequential split (each fio job is its
own process, so Listing A.1 counts the first read of each job as random).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class FioPattern:
    data_file: Path
    job_file: Path
    seq_reads: int
    seq_bs: int
    rand_reads: int
    rand_bs: int
    direct: bool

    def command(self) -> list[str]:
        fio = shutil.which("fio")
        if fio is None:
            raise FileNotFoundError("fio is not installed")
        return [fio, str(self.job_file), "--output=/dev/null"]


def direct_io_ok(directory: Path) -> bool:
    """Whether O_DIRECT opens work in ``directory`` (not on tmpfs)."""
    p = Path(directory) / ".direct-probe"
    try:
        p.write_bytes(b"\0" * 4096)
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
        os.close(fd)
        return hasattr(os, "O_DIRECT")
    except OSError:
        return False
    finally:
        p.unlink(missing_ok=True)


def fio_pattern(directory: str | os.PathLike, file_mib: int = 32, seq_mib: int = 16, seq_bs_kib: int = 256,
                rand_bs_kib: int = 4, rand_ios: int = 200, seed: int = 42, direct: bool | None = None) -> FioPattern:
    """Write the data file (deterministic bytes from ``seed``, fsynced) and the job file."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    if seq_mib > file_mib:
        raise ValueError(f"seq_mib = {seq_mib}; must be <= file_mib = {file_mib}")
    data = d / "pattern.bin"
    if not data.exists() or data.stat().st_size != file_mib << 20:
        rng = np.random.default_rng(seed)
        tmp = d / "pattern.bin.partial"
        with open(tmp, "wb") as f:
            for _ in range(file_mib):
                f.write(rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes())
            f.flush()
            os.fsync(f.fileno())
        tmp.rename(data)
    os.sync()  # no dirty pages left for O_DIRECT to flush inside the traced run
    direct = direct_io_ok(d) if direct is None else direct
    job = d / "pattern.fio"
    job.write_text(f"""[global]
filename={data}
ioengine=psync
direct={int(direct)}
size={file_mib}m
randrepeat=1
randseed={seed}

[seq]
rw=read
bs={seq_bs_kib}k
io_size={seq_mib}m

[rand]
stonewall
rw=randread
bs={rand_bs_kib}k
number_ios={rand_ios}
""")
    return FioPattern(data, job, (seq_mib << 10) // seq_bs_kib, seq_bs_kib << 10, rand_ios,
                      rand_bs_kib << 10, direct)


def expected(p: FioPattern) -> dict[str, float]:
    """What the trace of ``p`` must show, by the definitions of :mod:`.vector`."""
    n = p.seq_reads + p.rand_reads
    sizes = np.array([p.seq_bs] * p.seq_reads + [p.rand_bs] * p.rand_reads, dtype=float)
    random = 1 + p.rand_reads  # the first sequential read (new pid) + every random one
    return {"vfs_reads": n, "vfs_read_bytes": float(sizes.sum()), "unique_files_read": 1,
            "vfs_read_size_q1": float(np.quantile(sizes, .25)),
            "vfs_read_size_median": float(np.quantile(sizes, .5)),
            "vfs_read_size_q3": float(np.quantile(sizes, .75)),
            "vfs_random_reads": random, "vfs_sequential_reads": p.seq_reads - 1,
            "bio_random_reads": random, "bio_sequential_reads": p.seq_reads - 1}
