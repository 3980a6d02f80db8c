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
    """Write the data file (deterministic bytes from ``seed``, fsynced) and the job file
    (``seq_mib=0``: the random job only)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    if not 0 <= seq_mib <= file_mib:
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
    seq_job = (f"[seq]\nrw=read\nbs={seq_bs_kib}k\nio_size={seq_mib}m\n\n" if seq_mib else "")
    stone = "stonewall\n" if seq_mib else ""
    job.write_text(f"""[global]
filename={data}
ioengine=psync
direct={int(direct)}
size={file_mib}m
randrepeat=1
randseed={seed}

{seq_job}[rand]
{stone}rw=randread
bs={rand_bs_kib}k
number_ios={rand_ios}
""")
    return FioPattern(data, job, (seq_mib << 10) // seq_bs_kib, seq_bs_kib << 10, rand_ios,
                      rand_bs_kib << 10, direct)


def expected(p: FioPattern) -> dict[str, float]:
    """What the trace of ``p`` must show, by the definitions of :mod:`.vector`."""
    n = p.seq_reads + p.rand_reads
    sizes = np.array([p.seq_bs] * p.seq_reads + [p.rand_bs] * p.rand_reads, dtype=float)
    random = (1 if p.seq_reads else 0) + p.rand_reads  # first sequential read (new pid) + random ones
    return {"vfs_reads": n, "vfs_read_bytes": float(sizes.sum()), "unique_files_read": 1,
            "vfs_read_size_q1": float(np.quantile(sizes, .25)),
            "vfs_read_size_median": float(np.quantile(sizes, .5)),
            "vfs_read_size_q3": float(np.quantile(sizes, .75)),
            "vfs_random_reads": random, "vfs_sequential_reads": max(p.seq_reads - 1, 0),
            "bio_random_reads": random, "bio_sequential_reads": max(p.seq_reads - 1, 0)}


def loader_files(directory: str | os.PathLike, n_files: int, file_kib: int, seed: int) -> list[Path]:
    """``n_files`` files of ``file_kib`` KiB of seeded random bytes (``sample_00000.bin``...),
    written once (kept when already there with the right size), fsynced."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_files):
        p = d / f"sample_{i:05d}.bin"
        data = rng.integers(0, 256, file_kib << 10, dtype=np.uint8).tobytes()
        if not p.exists() or p.stat().st_size != len(data):
            tmp = p.with_suffix(".partial")
            tmp.write_bytes(data)
            tmp.rename(p)
        out.append(p)
    os.sync()
    return out


class _FileDataset:
    """One sample = one whole file, read with a single ``read`` (as a PyTorch image folder)."""

    def __init__(self, files: list[Path]):
        self.files = [str(f) for f in files]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        import torch
        with open(self.files[i], "rb", buffering=0) as f:
            b = f.read()
        return torch.frombuffer(bytearray(b), dtype=torch.uint8)[:64].float().mean()


def run_loader(files: list[Path], workers: int, batch_size: int, epochs: int, checkpoint_dir: Path,
               phase_log=None, seed: int = 0, checkpoint_kib: int = 1024) -> dict:
    """A small PyTorch training loop over ``files`` with a DataLoader (``workers`` processes,
    shuffled), writing the phase log (init, train per epoch, checkpoint) and, after the last
    epoch, a ``torch.save`` checkpoint of ``checkpoint_kib`` KiB into ``checkpoint_dir``.
    Returns what it did: samples read per epoch, checkpoint path and bytes."""
    import torch
    from torch.utils.data import DataLoader

    from .phases import PhaseLog
    log = phase_log if phase_log is not None else PhaseLog(None)
    with log.phase("init"):
        g = torch.Generator().manual_seed(seed)
        dl = DataLoader(_FileDataset(files), batch_size=batch_size, shuffle=True, num_workers=workers,
                        generator=g, persistent_workers=False)
        model = torch.nn.Linear(checkpoint_kib, 256, bias=False)  # checkpoint_kib KiB of float32
    seen = []
    for epoch in range(1, epochs + 1):
        n = 0
        with log.phase("train", epoch=epoch):
            for x in dl:
                n += len(x)
        seen.append(n)
    checkpoint_dir = Path(checkpoint_dir)
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    ck = checkpoint_dir / "model.pt"
    with log.phase("checkpoint", epoch=epochs):
        torch.save(model.state_dict(), ck)
        with open(ck, "rb+") as f:
            os.fsync(f.fileno())
    return {"samples_per_epoch": seen, "checkpoint": str(ck), "checkpoint_bytes": ck.stat().st_size}
