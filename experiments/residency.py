"""Which pages of a file are in the page cache: ``mincore(2)`` on a read-only shared mapping.

Standard library only (it imports nothing of the package), so that the course's autograder
bundle can carry it as the grader's side of a hidden test (experiments/course/build.py);
:mod:`experiments.cache` measures residency with it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

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
