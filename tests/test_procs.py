"""A group of helper processes: results in order, a child that dies (OOM killer: SIGKILL) stops
the group with an error naming it instead of hanging."""

import multiprocessing as mp
import os
import signal
import time

import pytest

from experiments import procs


def _square(a, reply):
    reply.put(a * a)


def _dies(a, reply):
    if a == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does
    time.sleep(30 if a == 2 else 0)            # a sibling that would otherwise run on
    reply.put(a)


def _sleeps(a, reply):
    time.sleep(a)
    reply.put(a)


def _big(a, reply):
    reply.put(b"x" * (8 << 20))  # larger than a pipe buffer


def test_results_come_back_in_order():
    ctx = mp.get_context("fork")
    assert procs.run_together(ctx, _square, [3, 1, 2]) == [9, 1, 4]
    assert [len(x) for x in procs.run_together(ctx, _big, [0, 1])] == [8 << 20] * 2


def test_a_killed_child_is_named_and_the_others_are_stopped():
    ctx = mp.get_context("fork")
    t0 = time.monotonic()
    with pytest.raises(procs.ChildDied, match=r"loader 1 of 3 \(pid \d+\) was killed by SIGKILL.*OOM"):
        procs.run_together(ctx, _dies, [0, 1, 2], what="loader")
    assert time.monotonic() - t0 < 20
    assert not mp.active_children()


def test_timeout_names_the_children_still_running():
    ctx = mp.get_context("fork")
    with pytest.raises(TimeoutError, match=r"helper processs? \[1\].*timeout_s = 0.5"):
        procs.run_together(ctx, _sleeps, [0, 5], timeout_s=0.5)
    assert not mp.active_children()
