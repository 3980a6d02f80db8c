"""One rank of DeepIO's loader runs: ``python -m experiments.deepio.loader_rank --serve
HOST:PORT`` under ``mpiexec``/``srun``, started once per P and node count by
:class:`experiments.host.launcher.RankPool`; :func:`work` is one run, its spec from
:func:`experiments.deepio.experiment.run_loader`.

Rank p of P owns the contiguous share p of the packed samples (:func:`.randomization.partition`)
and serves one epoch of it from the packed file on the tier: ``ordered`` reads every sample of
its slice of a global shuffled order with its own ``pread``; ``opportunistic`` keeps a memory
buffer of R of its share and refills it with ``chunk``-sample sequential ``pread``s
(:func:`.randomization.opportunistic_schedule`). Its row: bytes read, requests, start and
finish (seconds from its host's first start, after one barrier of every rank), the order it
served and its draws' candidate counts.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import randomization as rz


def serve(p: int, procs: int, spec: dict, offsets, sizes, barrier=None) -> dict:
    """Rank ``p`` of ``procs`` serves its share of one epoch; ``barrier()`` (if given) right
    before its clock starts. Bytes read, requests, ``perf_counter`` start and finish, the order
    served and (opportunistic) each draw's candidate count."""
    mode, ratio, chunk, seed = spec["mode"], spec["ratio"], spec["chunk"], spec["seed"]
    n = len(offsets)
    lo, hi = rz.partition(n, procs, p)
    fd = os.open(spec["path"], os.O_RDONLY)
    if barrier is not None:
        barrier()
    t0 = time.perf_counter()
    nbytes = nreq = 0
    if mode == "ordered":
        order = np.random.default_rng([seed, 0]).permutation(n)[p::procs]
        for i in order:  # a miss: one pread per sample
            nbytes += len(os.pread(fd, int(sizes[i]), int(offsets[i])))
            nreq += 1
        choices = None
    else:
        mem = max(1, int(round(ratio * (hi - lo))))
        order, choices, reads = rz.opportunistic_schedule(lo, hi, mem, chunk,
                                                          np.random.default_rng([seed, 0, p]))
        for s, cnt in reads:  # one large sequential pread per refill
            length = int(offsets[s + cnt - 1] + sizes[s + cnt - 1] - offsets[s])
            nbytes += len(os.pread(fd, length, int(offsets[s])))
            nreq += 1
    t1 = time.perf_counter()
    os.close(fd)
    return {"p": p, "t0": t0, "t1": t1, "bytes": nbytes, "requests": nreq,
            "order": np.asarray(order).tolist(),
            "choices": None if choices is None else np.asarray(choices).tolist()}


def work(world, spec: dict) -> dict:
    """This rank's row (:func:`serve` after a barrier of every rank; times per host)."""
    from ..host.mpi_node import host_times

    row = serve(world.rank, world.size, spec, np.load(spec["offsets"]), np.load(spec["sizes"]),
                world.Barrier)
    row["t0"], row["t1"] = host_times(world, row["t0"], row["t1"])
    return row


if __name__ == "__main__":
    from ..host import mpi_node

    mpi_node.serve(work)
