"""The launcher's pools leave nothing behind, and the one torchrun command builder.

MPICH makes one named shared-memory file per node and job at ``MPI_Init``
(``/dev/shm/mpich_shm_*``) and unlinks it in ``MPI_Finalize``: a rank that is killed, or a pool
stopped by force, used to leave it in /dev/shm (2 MB each). Each case checks the files the
pool's own ranks reported: other jobs on the box (a smoke run beside the tests) have their own.
"""

import os
import signal
import sys
import time

import pytest

from experiments import launcher

PROGRAM = "experiments.lmdbio.mpi_rank"  # any rank program of experiments.mpi_node.serve


def _session_alive(sid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.getsid(int(d)) == sid:
                    out.append(int(d))
            except OSError:
                pass
    return out


def _started(ranks: int) -> launcher.RankPool:
    pool = launcher.RankPool(ranks, PROGRAM)
    segs = pool.shm_segments()
    assert segs and all(os.path.exists(p) for p in segs), pool.ranks_info  # else the test is vacuous
    assert all(p.startswith("/dev/shm/mpich_shm_") for p in segs)
    return pool


def test_a_closed_pool_finalizes_its_ranks_and_leaves_no_shm():
    pool = _started(2)
    pool.close()
    assert pool._proc.returncode == 0
    assert pool.removed_shm == []  # MPI_Finalize unlinked it: nothing for the pool to remove
    assert not any(os.path.exists(p) for p in pool.shm_segments())


def test_a_killed_rank_leaves_no_shm_and_no_process():
    pool = _started(2)
    os.kill(pool.ranks_info[1]["pid"], signal.SIGKILL)  # the OOM killer, or someone
    with pytest.raises(RuntimeError, match="exit"):
        pool.call({})
    pool.close()
    assert pool._proc.returncode != 0
    assert pool.removed_shm == pool.shm_segments()
    assert not any(os.path.exists(p) for p in pool.shm_segments())
    assert _session_alive(pool._proc.pid) == []


def test_ranks_that_do_not_exit_are_stopped_by_force_and_their_shm_removed():
    pool = _started(2)
    os.kill(pool.ranks_info[0]["pid"], signal.SIGSTOP)  # hears no "exit"; its peer waits in Finalize
    t0 = time.monotonic()
    pool.close(grace_s=1)
    assert time.monotonic() - t0 < 20
    assert _session_alive(pool._proc.pid) == []
    assert not any(os.path.exists(p) for p in pool.shm_segments())


def test_pools_close_every_pool(tmp_path):
    with launcher.Pools(PROGRAM) as pools:
        a, b = pools.get(1), pools.get(2)
        assert pools.get(2) is b
        segs = a.shm_segments() + b.shm_segments()
    assert a._proc.returncode == 0 == b._proc.returncode
    assert len(segs) == 2 and not any(os.path.exists(p) for p in segs)


def test_remove_shm_leaves_a_file_in_use(tmp_path):
    used, unused = tmp_path / "used", tmp_path / "unused"
    used.write_bytes(b"x")
    unused.write_bytes(b"x")
    with open(used):
        assert launcher.remove_shm([str(used), str(unused), str(tmp_path / "gone")]) == [str(unused)]
    assert used.exists() and not unused.exists()
