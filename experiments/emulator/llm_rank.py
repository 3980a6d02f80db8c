"""One rank of the LLM checkpoint workload: ``python -m experiments.emulator.llm_rank --serve
HOST:PORT`` under ``mpiexec``/``srun``, started by :class:`experiments.host.launcher.RankPool`;
:func:`work` is one phase (the writes or the reads of every checkpoint of a run), its spec
from :func:`experiments.emulator.llm_checkpoint.run_variant`.

Before each checkpoint: a barrier, an untimed pause, a barrier (the rules'). Then the rank
saves (or loads) its files of that checkpoint (:func:`experiments.emulator.llm_layout.rank_files`)
one after another:

- save: the file's tensors are generated (``torch.rand`` in the file's dtype; not timed), then
  ``open``, ``torch.save``, ``fsync`` of the file (unless ``fsync`` is off), ``close``; after
  its last file the rank ``fsync``s the checkpoint folder (its new names made durable);
- load: ``torch.load`` of the file (default), or with ``direct`` the file read with
  ``O_DIRECT`` into an aligned buffer and ``torch.load`` from that buffer.

A rank's time for a checkpoint (``io_s``) is the sum of its files' open-to-close times and the
folder's fsync: the I/O it waited for, without the generation of the state. Only one file's
state is in memory at a time: the peak RSS (``ru_maxrss``) is recorded.

Each rank's row: ``rank``, ``host``, ``peak_rss_bytes`` and ``files``, one dict per file and
checkpoint (``step``, ``file``, ``kind``, ``bytes`` on disk, ``t_open``/``t_close`` in s from the
checkpoint's start barrier, ``open_to_close_s``, ``fsync_s``, ``gen_s``, ``cpu_s``: the rank's CPU
seconds from open to close, ``demand_s``: its thread's on-CPU and run-queue seconds), and
``steps``, one dict per checkpoint (``step``, ``io_s``, ``dir_fsync_s``, ``span_s``: first open
to last close, ``bytes``, ``cpu_s``, ``demand_s``).
"""

from __future__ import annotations

import io
import mmap
import os
import resource
import socket
import time
from pathlib import Path

_ALIGN = 4096
_CHUNK = 8 << 20


def _demand() -> float:
    """This thread's on-CPU plus run-queue seconds so far (``/proc/thread-self/schedstat``): what
    it wanted of a core, waiting for one included; its CPU time where schedstat is missing."""
    try:
        on, queued = open("/proc/thread-self/schedstat").read().split()[:2]
        return (int(on) + int(queued)) / 1e9
    except (OSError, ValueError):
        return time.thread_time()


def _state(f, gen) -> dict:
    import torch

    dt = torch.float16 if f.dtype_bytes == 2 else torch.float32
    return {str(i): torch.rand(b // f.dtype_bytes, dtype=dt, generator=gen) for i, b in enumerate(f.tensors)}


def _fsync_dir(path: Path) -> float:
    """fsync of the checkpoint folder (its new names made durable); seconds it took."""
    from ..chien.burst_buffer import _fsync_path   # the project's one fsync of a path

    t = time.perf_counter()
    _fsync_path(path)
    return time.perf_counter() - t


def _save(path: Path, f, gen, fsync: bool, t_base: float) -> dict:
    import torch

    g0 = time.perf_counter()
    state = _state(f, gen)
    d0, c0, t0 = _demand(), time.process_time(), time.perf_counter()
    with open(path, "wb") as fh:
        torch.save(state, fh)
        fh.flush()
        t1 = t2 = time.perf_counter()
        if fsync:
            os.fsync(fh.fileno())
            t2 = time.perf_counter()
    t3, c3, d3 = time.perf_counter(), time.process_time(), _demand()
    del state
    return {"t_open": t0 - t_base, "t_close": t3 - t_base, "open_to_close_s": t3 - t0,
            "fsync_s": t2 - t1, "gen_s": t0 - g0, "cpu_s": c3 - c0, "demand_s": d3 - d0}


def _read_direct(path: Path) -> bytes | memoryview:
    """The file's bytes, read with O_DIRECT (page cache bypassed) into an aligned buffer."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        size = os.fstat(fd).st_size
        buf = mmap.mmap(-1, max(_ALIGN, -(-size // _ALIGN) * _ALIGN))   # page-aligned
        view, off = memoryview(buf), 0
        while off < size:
            n = os.preadv(fd, [view[off:off + _CHUNK]], off)
            if n <= 0:
                break
            off += n
        return view[:size]
    finally:
        os.close(fd)


def _load(path: Path, direct: bool, t_base: float) -> dict:
    import torch

    d0, c0, t0 = _demand(), time.process_time(), time.perf_counter()
    if direct:
        state = torch.load(io.BytesIO(_read_direct(path)), weights_only=True)
    else:
        state = torch.load(path, weights_only=True)
    t1, c1, d1 = time.perf_counter(), time.process_time(), _demand()
    assert state, f"{path}: empty checkpoint file"
    del state
    return {"t_open": t0 - t_base, "t_close": t1 - t_base, "open_to_close_s": t1 - t0,
            "fsync_s": 0.0, "gen_s": 0.0, "cpu_s": c1 - c0, "demand_s": d1 - d0}


def work(world, spec: dict) -> dict:
    """One phase of one run on this rank (see the module's docstring)."""
    import torch

    from .llm_layout import checkpoint_dir, rank_files, MODELS

    torch.set_num_threads(1)   # ranks share the host's cores, as DLIO's one process a rank
    m, rank = MODELS[spec["model"]], world.rank
    files = rank_files(m, rank, world.size, spec["scale"])
    run = Path(spec["run_dir"])
    gen = torch.Generator().manual_seed(spec.get("seed", 0) * 100003 + rank)
    out_files, out_steps = [], []
    for step in spec["steps"]:
        folder = run / checkpoint_dir(step)
        if spec["op"] == "write":
            folder.mkdir(parents=True, exist_ok=True)
        world.Barrier()
        time.sleep(spec.get("pause_s", 0))   # untimed, as the rules' pause between checkpoints
        world.Barrier()
        t_base = time.perf_counter()
        rows = []
        for f in files:
            p = folder / f.name
            r = (_save(p, f, gen, spec["fsync"], t_base) if spec["op"] == "write"
                 else _load(p, spec.get("direct", False), t_base))
            rows.append({"step": step, "file": f.name, "kind": f.kind, "bytes": p.stat().st_size, **r})
        dir_s = _fsync_dir(folder) if spec["op"] == "write" and spec["fsync"] else 0.0
        io_s = sum(r["open_to_close_s"] for r in rows) + dir_s
        out_files += rows
        out_steps.append({"step": step, "io_s": io_s, "dir_fsync_s": dir_s,
                          "span_s": (rows[-1]["t_close"] - rows[0]["t_open"]) + dir_s if rows else 0.0,
                          "bytes": sum(r["bytes"] for r in rows),
                          "cpu_s": sum(r["cpu_s"] for r in rows),
                          "demand_s": sum(r["demand_s"] for r in rows)})
    world.Barrier()
    return {"rank": rank, "host": socket.gethostname(), "op": spec["op"],
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "largest_file_bytes": max(f.bytes for f in files), "files": out_files, "steps": out_steps}


if __name__ == "__main__":
    from ..host import mpi_node

    mpi_node.serve(work)
