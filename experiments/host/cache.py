"""Page-cache eviction before a cold run, and a check that it worked: the one helper every
experiment uses.

``/proc/sys/vm/drop_caches`` when this process may write it (root, not a read-only /proc);
otherwise ``posix_fadvise(POSIX_FADV_DONTNEED)`` on each file, as Chien et al. did on the
cluster where they had no root. Files on a memory-backed file system (tmpfs) cannot be
evicted: they *are* memory; they are recorded as such.

After evicting, :func:`evict` measures how much of the data set is still in the page cache
(``mincore(2)`` on every file, or on an even sample of ``RESIDENCY_SAMPLE`` files of a large
set, weighted by bytes) and returns an :class:`Eviction`: it compares and serializes as the
method that ran (``drop_caches``, ``fadvise`` or ``none``) and carries the measurement
(``resident_fraction``, ``memory_backed``, ``missing``, ``unreadable``). Missing or
unreadable files are reported (a warning, and in the result), never skipped in silence; a
method is reported only when it evicted something.

Every eviction of this process is also kept in a log; :func:`summary` condenses it per label
(a tier name, or the evicted folder) and ``env.json`` records it as ``cold_runs`` through
:func:`experiments.host.envinfo.capture`, so every stage that evicts records its measured
residency without code of its own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args

# The methods a parameter may name; every config section uses this type.
EvictionMethod = Literal["auto", "drop_caches", "fadvise", "none"]

DROP_CACHES = "/proc/sys/vm/drop_caches"
RESIDENCY_SAMPLE = 256   # files whose residency is measured when a data set has more
COLD_LIMIT = 0.05        # more of the data set resident than this after eviction: not a cold run
_said: set[str] = set()
_log: list[dict] = []


def _say_once(msg: str) -> None:
    if msg not in _said:
        _said.add(msg)
        print(msg)


def drop_caches_allowed() -> bool:
    """Whether this process may write ``/proc/sys/vm/drop_caches``."""
    return os.access(DROP_CACHES, os.W_OK)


# ---------------------------------------------------------------- residency (mincore)

_libc = None


def _c():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                             ctypes.c_int, ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        _libc = lib
    return _libc


def resident_pages(path: str | os.PathLike) -> tuple[int, int]:
    """(pages of ``path`` in the page cache, pages of ``path``), from ``mincore(2)`` on a
    read-only shared mapping (mapping a file does not read it). OSError if it cannot be
    opened or mapped."""
    page = mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0, 0
        libc = _c()
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            e = ctypes.get_errno()
            raise OSError(e, f"mmap: {os.strerror(e)}", str(path))
        try:
            n = (size + page - 1) // page
            vec = ctypes.create_string_buffer(n)
            if libc.mincore(addr, size, vec) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"mincore: {os.strerror(e)}", str(path))
            return sum(b & 1 for b in vec.raw[:n]), n
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def _sample(files: list[Path], k: int) -> list[Path]:
    """An even, deterministic sample of ``k`` files (all of them when there are fewer)."""
    if len(files) <= k:
        return files
    step = len(files) / k
    return [files[int(i * step)] for i in range(k)]


def residency(files: Iterable[str | os.PathLike], sample: int = RESIDENCY_SAMPLE) -> dict:
    """Page-cache residency of ``files`` (or of an even sample of ``sample`` of them).

    Returns ``resident_fraction`` (resident pages / pages over the files measured, so big
    files weigh more; None when there was nothing to measure), ``files_measured``,
    ``bytes_measured`` and ``unreadable`` (paths whose residency could not be measured).
    """
    files = sorted(map(Path, files))
    res = tot = nbytes = 0
    bad = []
    chosen = _sample(files, sample)
    for f in chosen:
        try:
            r, n = resident_pages(f)
        except OSError as e:
            bad.append(f"{f}: {e.strerror or e}")
            continue
        res, tot = res + r, tot + n
        nbytes += n * mmap.PAGESIZE
    return {"resident_fraction": res / tot if tot else None, "files_measured": len(chosen) - len(bad),
            "bytes_measured": nbytes, "unreadable": bad}


# ---------------------------------------------------------------- eviction

def memory_backed(path: str | os.PathLike) -> bool:
    """Whether ``path`` lies on a memory-backed file system (tmpfs, ramfs): no eviction there."""
    from .tiers import MEMORY_FS, mount_of  # the one place that reads the mount table

    return mount_of(Path(path))[0] in MEMORY_FS


def _walk(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """Every file under ``paths``, and the paths that do not exist."""
    out, missing = [], []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(q for q in p.rglob("*") if q.is_file())
        elif p.is_file():
            out.append(p)
        else:
            missing.append(str(p))
    return out, missing


def _fadvise(files: Iterable[Path]) -> tuple[int, list[str]]:
    """``POSIX_FADV_DONTNEED`` on each file; (files advised, files that could not be)."""
    n, bad = 0, []
    for f in files:
        try:
            fd = os.open(f, os.O_RDONLY)
        except OSError as e:
            bad.append(f"{f}: {e.strerror}")
            continue
        try:
            try:
                os.fdatasync(fd)  # dirty pages are not dropped; make them clean first
            except OSError:
                pass
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            n += 1
        except OSError as e:
            bad.append(f"{f}: {e.strerror}")
        finally:
            os.close(fd)
    return n, bad


class Eviction(str):
    """What :func:`evict` did: equal to (and written as) the method that ran, ``drop_caches``,
    ``fadvise`` or ``none``, so it fits a table column or a JSON value; the attributes hold
    the measurement (see :meth:`facts`)."""

    label: str
    files: int
    bytes: int
    memory_backed: bool
    requested: str
    resident_fraction: float | None
    missing: list[str]
    unreadable: list[str]

    def __new__(cls, method: str, **facts):
        self = super().__new__(cls, method)
        self.__dict__.update(facts)
        return self

    @property
    def method(self) -> str:
        return str(self)

    @property
    def cold(self) -> bool | None:
        """Whether the data set was out of the page cache after eviction (at most 5 %
        resident); False on a memory-backed file system; None when no eviction was asked
        for or nothing could be measured."""
        if self.memory_backed:
            return False
        if self.requested == "none" or self.resident_fraction is None:
            return None
        return self.resident_fraction <= COLD_LIMIT

    def facts(self) -> dict:
        return {"method": str(self), **{k: v for k, v in self.__dict__.items()}, "cold": self.cold}

    def __reduce__(self):  # pickles (multiprocessing, pandas) with its measurement
        return (_rebuild, (str(self), dict(self.__dict__)))


def _rebuild(method, facts):
    return Eviction(method, **facts)


def evict(paths: Iterable[str | os.PathLike], method: str = "auto", *,
          label: str | None = None) -> Eviction:
    """Evict the files (or folders of files) in ``paths`` from the page cache, then measure
    what is still resident.

    ``method`` is ``auto`` (drop_caches if allowed, else fadvise), ``drop_caches``, ``fadvise``
    or ``none``. ``label`` (a tier name) groups the eviction in :func:`summary`; by default
    the first path. Returns an :class:`Eviction`, equal to the method that ran: ``none`` when
    asked, when the files are memory-backed (tmpfs: nothing to evict, ``memory_backed`` is
    set) or when nothing could be evicted (every file missing or unreadable). A missing
    path or unreadable file is printed and listed in the result.
    """
    if method not in get_args(EvictionMethod):
        raise ValueError(f"evict: method = {method!r}; allowed: {', '.join(get_args(EvictionMethod))}")
    paths = [Path(p) for p in paths]
    files, missing = _walk(paths)
    label = label or (str(paths[0]) if paths else "")
    where = {p if p.is_dir() else p.parent for p in paths if p.exists()}  # one lookup per folder
    mem = bool(files) and all(memory_backed(d) for d in where)
    ran, unreadable = "none", []
    if method != "none" and files and mem:
        _say_once(f"cache: {label} is on a memory-backed file system: it cannot be evicted "
                  "(recorded as memory_backed, method none)")
    if method != "none" and files and not mem:
        os.sync()
        if method in ("auto", "drop_caches") and drop_caches_allowed():
            try:
                with open(DROP_CACHES, "w") as f:
                    f.write("3\n")
                ran = "drop_caches"
            except OSError as e:
                if method == "drop_caches":
                    raise
                _say_once(f"cache: cannot write {DROP_CACHES} ({e.strerror}); using posix_fadvise(DONTNEED)")
        elif method == "auto":
            _say_once(f"cache: {DROP_CACHES} is not writable here; using posix_fadvise(DONTNEED) per file")
        elif method == "drop_caches":
            raise PermissionError(f"evict: method = 'drop_caches' but {DROP_CACHES} is not writable "
                                  "here (not root?); use 'auto' or 'fadvise'")
        if ran == "none":
            n, unreadable = _fadvise(files)
            ran = "fadvise" if n else "none"
    measured = residency(files) if files else {"resident_fraction": None, "unreadable": []}
    unreadable = sorted(set(unreadable) | set(measured["unreadable"]))
    if missing or unreadable:
        what = [f"{len(missing)} missing path(s) ({', '.join(missing[:3])})"] if missing else []
        what += [f"{len(unreadable)} unreadable file(s) ({'; '.join(unreadable[:3])})"] if unreadable else []
        print(f"cache: evict {label}: " + ", ".join(what) + (f"; evicted with {ran}" if ran != "none"
                                                              else "; nothing was evicted"))
    if method != "none" and not files:
        print(f"cache: evict {label}: no files found; nothing was evicted")
    ev = Eviction(ran, label=label, files=len(files), bytes=sum(f.stat().st_size for f in files
                                                                  if f.exists()),
                  memory_backed=mem, resident_fraction=measured["resident_fraction"],
                  missing=missing, unreadable=unreadable, requested=method)
    _log.append(ev.facts())
    return ev


# ---------------------------------------------------------------- the log, for env.json

def log() -> list[dict]:
    """Every eviction of this process, in order (:meth:`Eviction.facts`)."""
    return list(_log)


def reset_log() -> None:
    _log.clear()


def summary() -> dict:
    """Per label (tier): evictions, methods, the median and largest resident fraction measured
    after eviction, whether every run was cold, memory-backed, missing and unreadable files.
    Empty when this process evicted nothing."""
    out: dict[str, dict] = {}
    for label in dict.fromkeys(e["label"] for e in _log):
        es = [e for e in _log if e["label"] == label]
        # residency after every eviction asked for (on a memory-backed tier: all of it)
        fr = [e["resident_fraction"] for e in es if e["resident_fraction"] is not None
              and e["requested"] != "none"]
        out[label] = {
            "evictions": len(es),
            "methods": sorted({e["method"] for e in es}),
            "requested": sorted({e["requested"] for e in es}),
            "files": max(e["files"] for e in es),
            "memory_backed": any(e["memory_backed"] for e in es),
            "resident_fraction_median": statistics.median(fr) if fr else None,
            "resident_fraction_max": max(fr) if fr else None,
            "all_cold": (all(f <= COLD_LIMIT for f in fr) and not any(e["memory_backed"] for e in es))
            if fr else None,
            "missing": sorted({m for e in es for m in e["missing"]})[:20],
            "unreadable": sorted({u for e in es for u in e["unreadable"]})[:20],
        }
    return out
