"""Helper processes: start a group that must run at once (they share barriers), and stop one.

``multiprocessing.Pool`` does not fit the loaders here: their workers wait on a shared
``Barrier``, which must be inherited at fork, and every worker must run at the same time.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from multiprocessing.connection import wait


class ChildDied(RuntimeError):
    """A process of a group exited without reporting (killed, e.g. by the OOM killer)."""


class _Reply:
    """The child's end: ``put(obj)`` once (the interface of a queue)."""

    def __init__(self, conn):
        self._conn = conn

    def put(self, obj) -> None:
        self._conn.send(obj)


def _how(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (SIGKILL: the kernel's OOM killer, or someone, killed it)" if code == -9 else ""
        return f"was killed by {name}{hint}"
    return f"exited with status {code}"


def run_together(ctx, target: Callable, args: list, timeout_s: float | None = None,
                 what: str = "helper process") -> list:
    """Start one ``ctx.Process`` per item of ``args``, calling ``target(item, reply)``, where
    ``reply.put(obj)`` sends the child's one result; return the results in the order of
    ``args``, after all exit.

    A child that exits without sending its result (killed by the OOM killer, a signal,
    ``os._exit``) stops the group at once: the others are terminated and :class:`ChildDied`
    names the child, its pid and how it ended. ``timeout_s`` bounds the whole group
    (TimeoutError naming the children still running); None waits as long as they run.
    """
    pipes = [ctx.Pipe(duplex=False) for _ in args]
    procs = [ctx.Process(target=target, args=(a, _Reply(w))) for a, (_, w) in zip(args, pipes)]
    for p in procs:
        p.start()
    for _, w in pipes:
        w.close()  # the parent keeps only the read ends: a dead child's end closes with it
    out: dict[int, object] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while len(out) < len(procs):
            pending = [i for i in range(len(procs)) if i not in out]
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait([pipes[i][0] for i in pending] + [procs[i].sentinel for i in pending], left)
            if not ready:
                raise TimeoutError(
                    f"{what}s {pending} (pids {[procs[i].pid for i in pending]}) did not report "
                    f"within timeout_s = {timeout_s} s")
            for i in pending:
                r = pipes[i][0]
                if r.poll():
                    try:
                        out[i] = r.recv()
                        continue
                    except EOFError:  # its end closed with nothing sent: it is gone
                        procs[i].join(5)
                elif procs[i].is_alive() or r.poll():
                    continue  # still working, or it just sent: read on the next turn
                procs[i].join(5)
                raise ChildDied(
                    f"{what} {i} of {len(procs)} (pid {procs[i].pid}) {_how(procs[i].exitcode)} "
                    "before reporting its result; the others were stopped")
    except BaseException:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        raise
    finally:
        for r, _ in pipes:
            r.close()
    for p in procs:
        p.join()
    return [out[i] for i in range(len(procs))]


def interrupt(proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """Stop a tracer the way it expects (SIGINT: it flushes and detaches), killing it only if
    it has not exited after ``timeout_s`` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
