"""Environment capture for ``env.json``: which host, which software, which parameters."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import shutil
import socket
import subprocess
import sys
from datetime import datetime, timezone

from ..settings import paths

LIBRARIES = (
    "tensorflow", "keras", "torch", "torchvision", "numpy", "pandas", "scipy", "statsmodels",
    "seaborn", "matplotlib", "papermill", "dvc", "pillow", "lmdb", "pyarrow", "pydantic",
)


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory_bytes() -> int:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def gpus() -> list[str]:
    """GPU names from nvidia-smi, without importing a framework; empty when there is none."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def git_revision() -> dict:
    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=paths.root(), capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    return {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))}


def versions() -> dict[str, str]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def host_label() -> str:
    """A short label for figures: host, CPU count and model."""
    return f"{socket.gethostname()} · {os.cpu_count()} CPUs · {cpu_model()}"


def host_cores() -> int:
    """Cores this process may run on (the affinity mask, which containers and Slurm set); the
    machine's count where the platform has no affinity."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def capture(**extra) -> dict:
    """Everything ``env.json`` records; ``extra`` adds stage facts (parameters, eviction, tracer).

    ``cold_runs`` (when this process evicted a data set before a run): per tier, the eviction
    method and the page-cache residency measured after it (:func:`experiments.host.cache.summary`).
    ``device_audit`` (when this process audited a run): the device's bytes beside the job's and
    each run's verdict (:func:`experiments.host.device_audit.summary`).
    """
    from . import cache

    cold = cache.summary()
    # loaded only by a stage that audits its runs (not imported here, so the stages that audit
    # nothing do not depend on the module)
    audited = sys.modules.get(f"{__package__}.device_audit")
    audit = audited.summary() if audited else {}
    return {
        "captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "cpu": {"model": cpu_model(), "count": os.cpu_count(),
                "affinity": host_cores() if hasattr(os, "sched_getaffinity") else None},
        "memory_bytes": memory_bytes(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "gpus": gpus(),
        "libraries": versions(),
        "git": git_revision(),
        "is_root": os.geteuid() == 0,
        **({"cold_runs": cold} if cold else {}),
        **({"device_audit": audit} if audit else {}),
        **extra,
    }
