"""Page-cache eviction before a cold run: the one helper every experiment uses.

``/proc/sys/vm/drop_caches`` when this process may write it (root, not a read-only /proc);
otherwise ``posix_fadvise(POSIX_FADV_DONTNEED)`` on each file, as Chien et al. did on the
cluster where they had no root. Files on a memory-backed file system (tmpfs) cannot be
evicted: they *are* memory. The method used is returned and goes into ``env.json``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args

# The methods a parameter may name; every config section uses this type.
EvictionMethod = Literal["auto", "drop_caches", "fadvise", "none"]

DROP_CACHES = "/proc/sys/vm/drop_caches"
_said: set[str] = set()


def _say_once(msg: str) -> None:
    if msg not in _said:
        _said.add(msg)
        print(msg)


def drop_caches_allowed() -> bool:
    """Whether this process may write ``/proc/sys/vm/drop_caches``."""
    return os.access(DROP_CACHES, os.W_OK)


def _fadvise(files: Iterable[Path]) -> int:
    n = 0
    for f in files:
        try:
            fd = os.open(f, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)  # dirty pages are not dropped; make them clean first
        except OSError:
            pass
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            n += 1
        finally:
            os.close(fd)
    return n


def _walk(paths: Iterable[Path]) -> list[Path]:
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(q for q in p.rglob("*") if q.is_file())
        elif p.is_file():
            out.append(p)
    return out


def evict(paths: Iterable[str | os.PathLike], method: str = "auto") -> str:
    """Evict the files (or folders of files) in ``paths`` from the page cache.

    ``method`` is ``auto`` (drop_caches if allowed, else fadvise), ``drop_caches``, ``fadvise``
    or ``none``. Returns the method that ran: ``drop_caches``, ``fadvise`` or ``none``.
    """
    if method not in get_args(EvictionMethod):
        raise ValueError(f"evict: method = {method!r}; allowed: {', '.join(get_args(EvictionMethod))}")
    if method == "none":
        return "none"
    os.sync()
    if method in ("auto", "drop_caches") and drop_caches_allowed():
        try:
            with open(DROP_CACHES, "w") as f:
                f.write("3\n")
            return "drop_caches"
        except OSError as e:
            if method == "drop_caches":
                raise
            _say_once(f"cache: cannot write {DROP_CACHES} ({e.strerror}); using posix_fadvise(DONTNEED)")
    elif method == "auto":
        _say_once(f"cache: {DROP_CACHES} is not writable here; using posix_fadvise(DONTNEED) per file")
    _fadvise(_walk(paths))
    return "fadvise"
