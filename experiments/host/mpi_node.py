"""The rank side of the MPI experiments (LMDBIO, DeepIO): nodes, hand-overs, clocks, results.

Imported by the rank programs (``python -m experiments.lmdbio.mpi_rank``,
``python -m experiments.deepio.loader_rank``) only, after ``mpi4py`` started MPI; light on
purpose (numpy and the standard library), as every rank imports it.

- :func:`node_comm`: this rank's node, ``COMM_WORLD.Split_type(COMM_TYPE_SHARED)`` (the ranks
  of one host), split further into groups of ``ranks_per_node`` consecutive ranks of the host:
  on one host the emulated node size still groups ranks, on a cluster a real node is at most
  ``ranks_per_node`` ranks. Nodes are numbered by their first rank.
- :class:`PipeBarrier`: a barrier of one node's ranks whose waiters sleep in the kernel
  (``read`` on a FIFO): one voluntary context switch per wait, as ``multiprocessing.Barrier``.
- :func:`host_times`: (start, finish) on one clock per host, 0 = the host's first start.
- :func:`serve`: run a rank function for each spec the parent sends
  (:class:`experiments.host.launcher.RankPool`), gather every rank's row at rank 0, send them back;
  a failing rank aborts the job (the others would wait for it forever).
- :func:`shm_segments`: the MPI library's named shared-memory files this rank has mapped (what
  the pool removes after a forced stop: MPICH unlinks them only in ``MPI_Finalize``).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path


def node_comm(world, ranks_per_node: int):
    """(node communicator, node index, number of nodes, world ranks of the node's members)."""
    from mpi4py import MPI

    shared = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.rank)
    node = shared.Split(color=shared.rank // ranks_per_node, key=world.rank)
    shared.Free()
    first = node.bcast(world.rank, root=0)
    firsts = sorted(set(world.allgather(first)))
    return node, firsts.index(first), len(firsts), node.allgather(world.rank)


class PipeBarrier:
    """A barrier of the ranks of ``node`` (one host) through named pipes in ``folder``: the
    members write a byte to the first rank's pipe and sleep in ``read`` on their own; the first
    rank reads one byte per member, then wakes each. Made collectively (every rank of ``node``)."""

    def __init__(self, node, folder: str, tag: str):
        self.n, self.me = node.size, node.rank
        base = Path(folder) / f"pipes-{tag}"
        if self.me == 0:
            base.mkdir(parents=True, exist_ok=True)
            for r in range(self.n):
                os.mkfifo(base / f"to{r}")
        node.Barrier()
        # O_RDWR: opening a FIFO this way never blocks on Linux (no waiting for the other end)
        self._arrive = os.open(base / "to0", os.O_RDWR)
        self._go = [os.open(base / f"to{r}", os.O_RDWR) for r in range(self.n)] if self.me == 0 \
            else [os.open(base / f"to{self.me}", os.O_RDWR)]
        node.Barrier()
        if self.me == 0:
            for r in range(self.n):
                os.unlink(base / f"to{r}")
            base.rmdir()

    def wait(self) -> None:
        if self.n == 1:
            return
        if self.me == 0:
            got = 0
            while got < self.n - 1:
                got += len(os.read(self._arrive, self.n - 1 - got))
            for fd in self._go[1:]:
                os.write(fd, b"g")
        else:
            os.write(self._arrive, b"a")
            os.read(self._go[0], 1)

    def close(self) -> None:
        for fd in {self._arrive, *self._go}:
            os.close(fd)


def host_times(world, t0: float, t1: float) -> tuple[float, float]:
    """(t0, t1) in seconds from the first start on this rank's host (``perf_counter`` is one
    clock per host, not across hosts). All ranks start right after one barrier, so the
    first start to the last finish over every host is max(t1) - min(t0)."""
    from mpi4py import MPI

    shared = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.rank)
    first = shared.allreduce(t0, op=MPI.MIN)
    shared.Free()
    return t0 - first, t1 - first


SHM_PREFIX = "/dev/shm/mpich_shm_"  # MPICH's node segment, made at MPI_Init, unlinked at Finalize


def shm_segments(maps: str = "/proc/self/maps") -> list[str]:
    """Paths of the MPICH shared-memory files mapped in ``maps`` that still have a name (the
    windows' files are unlinked at once and read ``(deleted)``); sorted."""
    try:
        lines = Path(maps).read_text().splitlines()
    except OSError:  # not Linux
        return []
    return sorted({ln.split()[-1] for ln in lines if ln.split()[-1].startswith(SHM_PREFIX)})


def serve(work) -> None:
    """``python -m MODULE --serve HOST:PORT`` (started by :class:`experiments.host.launcher.RankPool`):
    every rank connects to HOST:PORT and says its rank, host, pid and MPI shared-memory files
    (:func:`shm_segments`, for the pool to remove should it have to kill the ranks), then runs ``work(world, spec) -> dict``
    for each spec (a JSON line) it receives, until ``exit``; rank 0 sends back the list of rows,
    in rank order, as one JSON line. A failing rank aborts the job (the others would wait for
    it forever); between specs every rank sleeps in ``recv``."""
    import socket

    from mpi4py import MPI

    world = MPI.COMM_WORLD
    try:
        host, port = sys.argv[sys.argv.index("--serve") + 1].rsplit(":", 1)
        conn = socket.create_connection((host, int(port)))
        f = conn.makefile("rw")
        f.write(f"{world.rank} " + json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                                "shm": shm_segments()}) + "\n")
        f.flush()
        for line in f:  # the parent gone (EOF) ends the loop as "exit" does: MPI_Finalize runs
            if line.strip() == "exit":
                break
            rows = world.gather(work(world, json.loads(line)), root=0)
            if world.rank == 0:
                f.write(json.dumps(rows) + "\n")
                f.flush()
        f.close()
        conn.close()
    except BaseException:
        # one write, then a moment before the abort: MPI_Abort kills every rank and the
        # launcher's output forwarding at once, and a traceback printed line by line (or the
        # other ranks' tracebacks, when all of them fail alike) was cut off on a loaded box
        os.write(2, traceback.format_exc().encode(errors="replace"))
        time.sleep(0.5)
        world.Abort(1)
