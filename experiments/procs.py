"""Helper processes: start a group that must run at once (they share barriers), and stop one.

``multiprocessing.Pool`` does not fit the loaders here: their workers wait on a shared
``Barrier``, which must be inherited at fork, and every worker must run at the same time.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable


def run_together(ctx, target: Callable, args: list) -> list:
    """Start one ``ctx.Process`` per item of ``args``, calling ``target(item, queue)``; return
    what each put on its queue (one object each), in the order of ``args``, after all exit."""
    queues = [ctx.SimpleQueue() for _ in args]
    procs = [ctx.Process(target=target, args=(a, q)) for a, q in zip(args, queues)]
    for p in procs:
        p.start()
    out = [q.get() for q in queues]
    for p in procs:
        p.join()
    return out


def interrupt(proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """Stop a tracer the way it expects (SIGINT: it flushes and detaches), killing it only if
    it has not exited after ``timeout_s`` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
