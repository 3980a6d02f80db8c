"""Stopping a helper process (a tracer) the way it expects."""

from __future__ import annotations

import signal
import subprocess


def interrupt(proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """Stop a tracer the way it expects (SIGINT: it flushes and detaches), killing it only if
    it has not exited after ``timeout_s`` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
