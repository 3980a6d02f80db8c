"""One rank of LMDBIO's runs: ``python -m experiments.lmdbio.mpi_rank --serve HOST:PORT`` under
``mpiexec``/``srun``, started once per process count and node count by
:class:`experiments.host.launcher.RankPool`; :func:`work` is one run, its spec from
:func:`experiments.lmdbio.read.run`.

Nodes (:func:`experiments.host.mpi_node.node_comm`): the ranks of one host, in groups of
``ranks_per_node``; node n owns a contiguous slice of the records (:func:`node_plan`) and,
round by round, each of its ranks consumes one batch. The reader is the node's first rank.

- ``lmdb``: every rank maps the database and walks its batches with a cursor;
- ``lmm``, ``dio_prov``, ``coal``, ``stag``: the reader fills an MPI-3 shared-memory window
  (``MPI.Win.Allocate_shared`` on the node's communicator, the reader's segment only) with a
  cursor (lmm), one ``pread`` per record at its recorded offset (dio_prov), or ``preadv`` over
  ``coalesce`` rounds (coal, stag); every rank copies its batches out of the window. ``stag``:
  at most ``stagger_group`` readers in the file at a time, ``stagger_group`` tokens passed
  round the readers (``MPI.Comm.send``/``recv``).

Hand-over (the buffer is full; everyone is done with it): ``spin`` = ``MPI.Win.Fence`` on the
window (MPICH waits by polling shared memory: no sleep); ``sleep`` = ``MPI.Win.Sync`` (in a
``Win.Lock_all`` epoch) and a
:class:`experiments.host.mpi_node.PipeBarrier` (every waiter sleeps in the kernel: one voluntary
context switch per wait).

Each rank's row: start and finish (seconds from its host's first start), bytes copied out,
voluntary and involuntary context switches (``getrusage``) over the read and, of those, the
ones inside the hand-over and token waits (``cs_wait_*``: MPI's waits, not I/O), and, with
``verify``, a CRC-32 of every byte it consumed in order (tests; off in measurements).
"""

from __future__ import annotations

import math
import os
import resource
import socket
import time
import zlib

import numpy as np


def node_plan(records: int, nodes: int, n: int, members: int, batch: int) -> dict:
    """Node ``n`` of ``nodes`` with ``members`` ranks: its records [lo, hi), rounds, records
    per round (each member one batch of ``batch``)."""
    lo, hi = records * n // nodes, records * (n + 1) // nodes
    per_round = members * batch
    rounds = math.ceil((hi - lo) / per_round) if hi > lo else 0
    return {"node": n, "lo": lo, "hi": hi, "rounds": rounds, "per_round": per_round}


def _switches() -> tuple[int, int]:
    """(voluntary, involuntary) context switches of this process so far (getrusage)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw, r.ru_nivcsw


def _cursor_read(txn, first: int, count: int) -> list[bytes]:
    out = []
    if count <= 0:
        return out
    cur = txn.cursor()
    if cur.set_key(b"%010d" % first):
        for _, v in cur:
            out.append(bytes(v))
            if len(out) == count:
                break
    return out


_IOV_MAX = 1024


def _read_span(fd: int, offs, sizes, lo: int, hi: int, buf, size: int) -> int:
    """Read records lo..hi-1, which lie in one span of the file, with as few ``preadv`` calls
    as the iovec limit allows: each record lands in its slot of ``buf``, the page headers
    between records in a scratch buffer. Returns the requests issued."""
    scratch = bytearray(max(4096, int((offs[lo + 1:hi] - offs[lo:hi - 1] - size).max())
                            if hi - lo > 1 else 4096))
    sv = memoryview(scratch)
    requests, j = 0, lo
    while j < hi:
        start, iov = int(offs[j]), []
        pos = start
        while j < hi and len(iov) < _IOV_MAX - 1:
            gap = int(offs[j]) - pos
            if gap:
                iov.append(sv[:gap])
            iov.append(buf[(j - lo) * size:(j - lo + 1) * size])
            pos = int(offs[j] + sizes[j])
            j += 1
        os.preadv(fd, iov, start)
        requests += 1
    return requests


class _Tokens:
    """At most ``group`` of the ``n`` readers in the file at a time: ``group`` tokens go round
    the readers' communicator, reader i passing its token to reader (i + group) mod n after each
    step; every reader takes part in ``steps`` steps (one with nothing to read passes it on)."""

    def __init__(self, comm, group: int, steps: int):
        self.comm, self.n, self.i = comm, comm.size, comm.rank
        self.g, self.steps, self.sends = min(group, comm.size), steps, []
        self.on = self.g < self.n

    def acquire(self, s: int) -> None:
        if self.on and not (s == 0 and self.i < self.g):
            self.comm.recv(source=(self.i - self.g) % self.n, tag=29)

    def release(self, s: int) -> None:
        if self.on and not (s == self.steps - 1 and self.i + self.g >= self.n):
            self.sends.append(self.comm.isend(s, dest=(self.i + self.g) % self.n, tag=29))

    def close(self) -> None:
        from mpi4py import MPI
        MPI.Request.Waitall(self.sends)


def work(world, spec: dict) -> dict:
    """This rank's part of one run (see the module docstring); its row."""
    import lmdb
    from mpi4py import MPI

    from ..host.mpi_node import PipeBarrier, host_times, node_comm

    strategy, batch, size = spec["strategy"], spec["batch"], spec["size"]
    offs = np.load(spec["offsets"])
    sizes = np.load(spec["sizes"])
    node, nid, nnodes, members = node_comm(world, spec["ranks_per_node"])
    plan = node_plan(len(offs), nnodes, nid, len(members), batch)
    local, is_reader = node.rank, node.rank == 0
    step = spec["coalesce"] if strategy in ("coal", "stag") else 1
    win = buf = barrier = tokens = readers = None
    if strategy != "lmdb":
        win = MPI.Win.Allocate_shared(max(1, plan["per_round"] * step * size) if is_reader else 0,
                                      1, comm=node)
        buf = memoryview(win.Shared_query(0)[0]).cast("B")
        if spec["handover"] == "sleep":
            barrier = PipeBarrier(node, spec["pipes"], f"{spec['run_id']}-{nid}")
    if strategy == "stag":
        readers = world.Split(0 if is_reader else MPI.UNDEFINED, key=world.rank)
        if is_reader:
            steps = readers.allreduce(math.ceil(plan["rounds"] / step), op=MPI.MAX)
            tokens = _Tokens(readers, spec["stagger_group"], steps)

    waited = [0, 0]   # (voluntary, involuntary) switches inside the synchronization waits

    def waiting(fn, *a):
        """``fn(*a)``, its context switches added to ``waited``: the paper's switches are I/O
        wake-ups, these are MPI's waits (MPICH yields while it polls), counted apart."""
        c0 = _switches()
        fn(*a)
        for k, (x, y) in enumerate(zip(c0, _switches())):
            waited[k] += y - x

    def _handover():
        if barrier is None:
            win.Fence()
        else:
            win.Sync()
            barrier.wait()
            win.Sync()

    def handover():
        waiting(_handover)

    env = None
    if strategy == "lmdb" or (strategy == "lmm" and is_reader):
        env = lmdb.open(spec["path"], readonly=True, lock=False, readahead=True, max_readers=512)
    fd = os.open(spec["path"] + "/data.mdb", os.O_RDONLY) if is_reader and strategy in (
        "dio_prov", "coal", "stag") else None
    crc = 0 if spec.get("verify") else None
    if win is not None:  # opens the first access epoch (Win.Sync needs a passive-target one)
        win.Fence() if barrier is None else win.Lock_all(MPI.MODE_NOCHECK)
    world.Barrier()
    cs0 = _switches()
    t0 = time.perf_counter()
    nbytes = 0
    for s, r0 in enumerate(range(0, plan["rounds"], step)):
        rounds = range(r0, min(r0 + step, plan["rounds"]))
        if strategy == "lmdb":
            for r in rounds:
                first = plan["lo"] + r * plan["per_round"] + local * batch
                cnt = max(0, min(batch, plan["hi"] - first))
                with env.begin(buffers=True) as txn:
                    for v in _cursor_read(txn, first, cnt):
                        nbytes += len(v)
                        if crc is not None:
                            crc = zlib.crc32(v, crc)
            continue
        lo = plan["lo"] + r0 * plan["per_round"]
        hi = min(plan["hi"], plan["lo"] + rounds.stop * plan["per_round"])
        if is_reader:  # fill the shared window with records lo..hi-1
            _fill(strategy, env, fd, offs, sizes, lo, hi, buf, size, tokens, waiting, s)
        handover()  # the buffer is full
        for r in rounds:  # every rank copies its batch of each round out
            first = plan["lo"] + r * plan["per_round"] + local * batch
            cnt = max(0, min(batch, plan["hi"] - first))
            j = first - lo
            out = bytes(buf[j * size:(j + cnt) * size])
            nbytes += len(out)
            if crc is not None:
                crc = zlib.crc32(out, crc)
        handover()  # everyone is done with the buffer
    if tokens is not None:  # a reader with fewer steps than the others still passes its tokens
        for s in range(math.ceil(plan["rounds"] / step), tokens.steps):
            waiting(tokens.acquire, s)
            tokens.release(s)
    t1 = time.perf_counter()
    vol, invol = (b - a for a, b in zip(cs0, _switches()))
    if tokens is not None:
        tokens.close()
    t0, t1 = host_times(world, t0, t1)
    _release(env, fd, barrier, win, buf, readers, node)
    return {"proc": world.rank, "node": nid, "reader": bool(is_reader), "t0": t0, "t1": t1,
            "bytes": nbytes, "context_switches": vol + invol, "cs_voluntary": vol,
            "cs_involuntary": invol, "cs_wait_voluntary": waited[0], "cs_wait_involuntary": waited[1],
            "records": plan["hi"] - plan["lo"],
            "host": socket.gethostname(), **({"crc32": crc} if crc is not None else {})}


def _fill(strategy, env, fd, offs, sizes, lo: int, hi: int, buf, size: int, tokens, waiting, s: int) -> None:
    """The node's reader fills the shared window with records lo..hi-1: LMM through LMDB's
    cursor (mmap), DIO-PROV with one pread per record at its provenance offset, COAL and STAG
    with one span read (STAG holding its group's token, its wait counted by ``waiting``)."""
    if strategy == "lmm":
        with env.begin(buffers=True) as txn:
            for j, v in enumerate(_cursor_read(txn, lo, hi - lo)):
                buf[j * size:(j + 1) * size] = v
    elif strategy == "dio_prov":  # one pread per record, straight into the window
        for j in range(lo, hi):
            os.preadv(fd, [buf[(j - lo) * size:(j - lo + 1) * size]], int(offs[j]))
    else:
        if tokens is not None:
            waiting(tokens.acquire, s)
        _read_span(fd, offs, sizes, lo, hi, buf, size)
        if tokens is not None:
            tokens.release(s)


def _release(env, fd, barrier, win, buf, readers, node) -> None:
    """Close what a run opened: a pool's ranks serve hundreds of runs, so no file, window or
    communicator may leak."""
    from mpi4py import MPI

    if env is not None:
        env.close()
    if fd is not None:
        os.close(fd)
    if barrier is not None:
        barrier.close()
    if win is not None:
        win.Fence() if barrier is None else win.Unlock_all()
        buf.release()
        win.Free()
    if readers not in (None, MPI.COMM_NULL):
        readers.Free()
    node.Free()


if __name__ == "__main__":
    from ..host import mpi_node

    mpi_node.serve(work)
