"""A program that reads and writes known amounts through every path a tracer must attribute.

Used by the attribution tests (``tests/test_trace_attribution.py``) and handy to check a tracer
on a new machine::

    python -m experiments.trace.known_io prepare DIR        # data files (before tracing)
    python -m experiments.trace run -o t.parquet -- python -m experiments.trace.known_io run DIR
    python -m experiments.trace.known_io check DIR t.parquet   # expected vs traced, per case

Each case reads its own data file ``DIR/data/<case>.bin`` and writes its own output file
``DIR/out/<case>.out``, so a vector filtered to one case's files must show exactly what that
case did. The cases (:data:`CASES`):

============== ================================================================================
plain          ``open`` + ``read`` in 4 KiB chunks to the end; ``write`` of 8 KiB + 100 B
dup2           the descriptor duplicated with ``dup2`` onto 20, the original closed, reads and
               writes through the duplicate
dup3           the same with ``dup3`` (``os.dup2(..., inheritable=False)``)
fcntl_dupfd    the same with ``fcntl(F_DUPFD_CLOEXEC)`` (``os.dup``)
redirect       a shell redirection: ``sh -c 'exec python ... < data > out'``; the child reads
               descriptor 0 and writes descriptor 1 (both set up with ``dup2`` by the shell)
fork_inherit   descriptors opened by the parent, first used by a ``fork``-ed child
exec_inherit   descriptors opened by the parent, passed through ``exec`` to a new program
readv          ``readv`` of two 4 KiB buffers to the end; ``writev`` of 100 + 200 B
preadv         ``preadv`` / ``pwritev`` (through libc, so the ``preadv`` system call)
preadv2        ``preadv2`` / ``pwritev2`` (``os.preadv``/``os.pwritev``, which use them)
sendfile       ``sendfile`` of the whole data file into the output file
copy_file_range ``copy_file_range`` of the whole data file into the output file
splice         ``splice`` data file -> pipe -> output file
mmap           the data file mapped shared and read-only (``mmap.ACCESS_READ``), every page
               touched, the mapping held ``hold_s`` seconds (so a sampler can see it)
============== ================================================================================

``run`` writes what it did, call by call (operation, file, bytes returned), to ``DIR/log.json``
(outside ``data/`` and ``out/``); :func:`expected` turns that log into the per-file counts,
bytes and sizes a tracer must find.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CASES = ("plain", "dup2", "dup3", "fcntl_dupfd", "redirect", "fork_inherit", "exec_inherit", "readv",
         "preadv", "preadv2", "sendfile", "copy_file_range", "splice", "mmap")
# more ways in (issue 42's coverage table, :mod:`experiments.trace.coverage`), not in CASES: the
# attribution tests leave them out. pread: ``pread`` in 4 KiB chunks and a ``pwrite``;
# raw_syscall: ``read``/``write`` by ``syscall(2)``, past libc's wrappers; dataloader_worker: a
# PyTorch DataLoader worker process reads the file whole; tfdata: tf.data's ``read_file`` reads
# it in TensorFlow's C++ threads. The last two run in a child Python with site-packages, and
# their call counts are not known (``calls_known`` False in the log).
EXTRA_CASES = ("pread", "raw_syscall", "dataloader_worker", "tfdata")
FILE_BYTES = 3 * 4096 + 1000  # three full 4 KiB reads, a short one, then end of file
CHUNK = 4096

# the child programs of redirect/exec_inherit: no imports beyond os, no site (quick, quiet)
_CHILD = """
import os, sys, json
rfd, wfd, nbytes, chunk = (int(x) for x in sys.argv[1:5])
sizes = []
while True:
    b = os.read(rfd, chunk)
    sizes.append(len(b))
    if not b:
        break
os.write(wfd, b"w" * nbytes)
"""


def data_file(d: Path, case: str) -> Path:
    return Path(d) / "data" / f"{case}.bin"


def out_file(d: Path, case: str) -> Path:
    return Path(d) / "out" / f"{case}.out"


def prepare(directory: str | os.PathLike, cases=CASES) -> Path:
    """Write each case's data file (``FILE_BYTES`` seeded bytes, fsynced) and an empty
    ``out/``; returns the directory. Run it before tracing: its writes are not the pattern."""
    d = Path(directory)
    (d / "data").mkdir(parents=True, exist_ok=True)
    (d / "out").mkdir(parents=True, exist_ok=True)
    for i, c in enumerate(cases):
        p = data_file(d, c)
        if not p.exists() or p.stat().st_size != FILE_BYTES:
            with open(p, "wb") as f:
                f.write(bytes((i * 7 + k) % 251 for k in range(FILE_BYTES)))
                f.flush()
                os.fsync(f.fileno())
        out_file(d, c).unlink(missing_ok=True)
    (d / "log.json").unlink(missing_ok=True)
    os.sync()
    return d


def read_sizes(total: int, chunk: int) -> list[int]:
    """Bytes returned by ``read(chunk)`` calls on a file of ``total`` bytes, up to and including
    the 0-byte read at its end."""
    out = [chunk] * (total // chunk)
    if total % chunk:
        out.append(total % chunk)
    return out + [0]


class _Log:
    def __init__(self):
        self.calls: list[dict] = []

    def add(self, case: str, op: str, path: Path, size: int, pid: int | None = None,
            calls_known: bool = True) -> int:
        self.calls.append({"case": case, "op": op, "path": str(path), "size": int(size),
                           "pid": pid or os.getpid(), "calls_known": calls_known})
        return size


def _read_all(log: _Log, case: str, fd: int, path: Path) -> None:
    while True:
        n = log.add(case, "read", path, len(os.read(fd, CHUNK)))
        if n == 0:
            break


def _libc_vec(name: str):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fn = getattr(libc, name)
    fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_long]
    fn.restype = ctypes.c_ssize_t

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    def call(fd: int, buffers: list, offset: int) -> int:
        iov = (IoVec * len(buffers))(*[IoVec(ctypes.addressof(b), ctypes.sizeof(b)) for b in buffers])
        n = fn(fd, iov, len(buffers), offset)
        if n < 0:
            raise OSError(ctypes.get_errno(), f"{name} failed")
        return n
    return call


def run(directory: str | os.PathLike, cases=CASES, hold_s: float = 0.0) -> list[dict]:
    """Do every case in ``cases`` (see the module docstring); write and return the call log."""
    import ctypes
    import mmap

    d = Path(directory)
    log = _Log()
    wflags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for case in cases:
        src, dst = data_file(d, case), out_file(d, case)
        if case == "plain":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            _read_all(log, case, fd, src)
            log.add(case, "write", dst, os.write(w, b"p" * 8192))
            log.add(case, "write", dst, os.write(w, b"q" * 100))
            os.close(fd), os.close(w)
        elif case in ("dup2", "dup3", "fcntl_dupfd"):
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            if case == "fcntl_dupfd":
                r2, w2 = os.dup(fd), os.dup(w)  # fcntl(F_DUPFD_CLOEXEC)
            else:
                r2, w2 = 20, 21
                os.dup2(fd, r2, inheritable=case == "dup2")  # dup2, or dup3(O_CLOEXEC)
                os.dup2(w, w2, inheritable=case == "dup2")
            os.close(fd), os.close(w)
            _read_all(log, case, r2, src)
            log.add(case, "write", dst, os.write(w2, b"d" * 4096))
            os.close(r2), os.close(w2)
        elif case == "redirect":
            subprocess.run(["/bin/sh", "-c", 'exec "$0" -S -c "$1" 0 1 5000 4096 < "$2" > "$3"',
                            sys.executable, _CHILD, str(src), str(dst)], check=True)
            for n in read_sizes(FILE_BYTES, CHUNK):
                log.add(case, "read", src, n, pid=-1)
            log.add(case, "write", dst, 5000, pid=-1)
        elif case == "fork_inherit":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            pid = os.fork()
            if pid == 0:  # the child: first use of both descriptors
                try:
                    while os.read(fd, CHUNK):
                        pass
                    os.write(w, b"f" * 3000)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            for n in read_sizes(FILE_BYTES, CHUNK):
                log.add(case, "read", src, n, pid=pid)
            log.add(case, "write", dst, 3000, pid=pid)
            os.close(fd), os.close(w)
        elif case == "exec_inherit":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            subprocess.run([sys.executable, "-S", "-c", _CHILD, str(fd), str(w), "2500", str(CHUNK)],
                           pass_fds=(fd, w), check=True)
            for n in read_sizes(FILE_BYTES, CHUNK):
                log.add(case, "read", src, n, pid=-1)
            log.add(case, "write", dst, 2500, pid=-1)
            os.close(fd), os.close(w)
        elif case == "readv":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            while log.add(case, "readv", src, os.readv(fd, [bytearray(CHUNK), bytearray(CHUNK)])):
                pass
            log.add(case, "writev", dst, os.writev(w, [b"a" * 100, b"b" * 200]))
            os.close(fd), os.close(w)
        elif case == "preadv":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            preadv, pwritev = _libc_vec("preadv"), _libc_vec("pwritev")
            bufs = [ctypes.create_string_buffer(CHUNK), ctypes.create_string_buffer(CHUNK)]
            log.add(case, "preadv", src, preadv(fd, bufs, 0))
            log.add(case, "preadv", src, preadv(fd, bufs, 2 * CHUNK))
            log.add(case, "pwritev", dst, pwritev(w, bufs[:1], 0))
            os.close(fd), os.close(w)
        elif case == "preadv2":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            log.add(case, "preadv2", src, os.preadv(fd, [bytearray(6000)], 0, os.RWF_HIPRI))
            log.add(case, "preadv2", src, os.preadv(fd, [bytearray(6000), bytearray(2000)], 6000))
            log.add(case, "pwritev2", dst, os.pwritev(w, [b"v" * 700], 0, os.RWF_DSYNC))
            os.close(fd), os.close(w)
        elif case in ("sendfile", "copy_file_range"):
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            left = FILE_BYTES
            while left:
                n = os.sendfile(w, fd, None, left) if case == "sendfile" else os.copy_file_range(fd, w, left)
                log.add(case, f"{case}_in", src, n)
                log.add(case, f"{case}_out", dst, n)
                if n == 0:
                    break
                left -= n
            os.close(fd), os.close(w)
        elif case == "splice":
            fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
            pr, pw = os.pipe()
            left = FILE_BYTES
            while left:
                n = os.splice(fd, pw, min(left, 4096))
                log.add(case, "splice_in", src, n)
                log.add(case, "splice_out", f"pipe:[{os.fstat(pw).st_ino}]", n)
                m = os.splice(pr, w, n)
                log.add(case, "splice_in", f"pipe:[{os.fstat(pr).st_ino}]", m)
                log.add(case, "splice_out", dst, m)
                left -= n
            for x in (fd, w, pr, pw):
                os.close(x)
        elif case == "mmap":
            fd = os.open(src, os.O_RDONLY)
            m = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)  # MAP_SHARED, PROT_READ
            log.add(case, "mmap", src, len(m))
            touched = sum(m[i] for i in range(0, len(m), 4096))
            time.sleep(hold_s)
            m.close()
            os.close(fd)
            del touched
        elif case in EXTRA_CASES:
            _extra(log, case, src, dst)
        else:
            raise ValueError(f"unknown case {case!r}; allowed: {', '.join(CASES + EXTRA_CASES)}")
    with open(d / "log.json", "w") as f:
        json.dump(log.calls, f)
    return log.calls


_LOADER = """
import sys, torch
from torch.utils.data import DataLoader, Dataset
class One(Dataset):
    def __len__(self): return 1
    def __getitem__(self, i):
        with open(sys.argv[1], "rb", buffering=0) as f: return len(f.read())
print(int(next(iter(DataLoader(One(), num_workers=1)))[0]))
"""
_TFDATA = """
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf
ds = tf.data.Dataset.from_tensor_slices([sys.argv[1]]).map(tf.io.read_file, num_parallel_calls=2)
print(sum(len(x.numpy()) for x in ds))
"""


def _extra(log: _Log, case: str, src: Path, dst: Path) -> None:
    """The cases of :data:`EXTRA_CASES`."""
    import ctypes
    import platform
    wflags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    if case == "pread":
        fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
        off = 0
        while log.add(case, "pread64", src, len(os.pread(fd, CHUNK, off))):
            off += CHUNK
        log.add(case, "pwrite64", dst, os.pwrite(w, b"r" * 1500, 0))
        os.close(fd), os.close(w)
    elif case == "raw_syscall":
        nr = {"x86_64": (0, 1), "aarch64": (63, 64)}[platform.machine()]  # SYS_read, SYS_write
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        fd, w = os.open(src, os.O_RDONLY), os.open(dst, wflags)
        buf = ctypes.create_string_buffer(CHUNK)
        while log.add(case, "read", src, libc.syscall(nr[0], fd, buf, ctypes.c_size_t(CHUNK))):
            pass
        log.add(case, "write", dst, libc.syscall(nr[1], w, buf, ctypes.c_size_t(1234)))
        os.close(fd), os.close(w)
    else:  # a child Python with site-packages: torch / tensorflow
        code = _LOADER if case == "dataloader_worker" else _TFDATA
        p = subprocess.run([sys.executable, "-c", code, str(src)], capture_output=True, text=True)
        # a tracer that crashes the child (it happens) must not cost the other cases: the
        # intended read is logged with the child's exit status
        n = int(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else FILE_BYTES
        log.add(case, "read", src, n, pid=-1, calls_known=False)
        log.calls[-1]["child_exit"] = p.returncode


def expected(directory: str | os.PathLike, cases=CASES) -> dict[str, dict]:
    """Per case: what a tracer must find on its data file (reads) and output file (writes):
    ``reads``/``read_bytes``/``read_sizes``, ``writes``/``write_bytes``/``write_sizes`` (read
    and write calls only), ``copy_reads``/``copy_read_bytes`` (copies out of the data file),
    ``copy_writes``/``copy_write_bytes`` (copies into the output file), ``mapped``."""
    from .schema import COPY_IN, COPY_OUT, VFS_READS, VFS_WRITES
    d = Path(directory)
    calls = json.loads((d / "log.json").read_text())
    out = {}
    for c in cases:
        src, dst = str(data_file(d, c)), str(out_file(d, c))
        mine = [x for x in calls if x["case"] == c]
        r = [x["size"] for x in mine if x["path"] == src and x["op"] in VFS_READS]
        w = [x["size"] for x in mine if x["path"] == dst and x["op"] in VFS_WRITES]
        ci = [x["size"] for x in mine if x["path"] == src and x["op"] in COPY_IN]
        co = [x["size"] for x in mine if x["path"] == dst and x["op"] in COPY_OUT]
        out[c] = {"data": src, "out": dst, "reads": len(r), "read_bytes": sum(r), "read_sizes": r,
                  "writes": len(w), "write_bytes": sum(w), "write_sizes": w,
                  "copy_reads": len(ci), "copy_read_bytes": sum(ci),
                  "copy_writes": len(co), "copy_write_bytes": sum(co),
                  "mapped": any(x["op"] == "mmap" for x in mine)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.trace.known_io", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["prepare", "run", "check"])
    ap.add_argument("directory")
    ap.add_argument("trace", nargs="?", help="check: the trace file")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES + EXTRA_CASES)
    ap.add_argument("--hold-s", type=float, default=0.0, help="run: seconds to keep the mapping")
    a = ap.parse_args(argv)
    if a.action == "prepare":
        prepare(a.directory, a.cases)
    elif a.action == "run":
        run(a.directory, a.cases, a.hold_s)
    else:
        if not a.trace:
            ap.error("check needs the trace file")
        from . import schema
        tr = schema.load(a.trace)
        print(check(tr, a.directory, a.cases).to_string(index=False))
    return 0


def check(trace, directory, cases=CASES):
    """Expected vs traced per case and quantity (a table; ``match`` True/False, or None where
    the trace says the quantity is not measured)."""
    import math

    import numpy as np
    import pandas as pd

    from . import vector
    exp = expected(directory, cases)
    rows = []
    for c, e in exp.items():
        d = vector.describe(trace, data=[e["data"]], checkpoint=[e["out"]])
        sizes_r = np.array(e["read_sizes"] or [0.0], dtype=float)
        sizes_w = np.array(e["write_sizes"] or [0.0], dtype=float)
        want = {"vfs_reads": e["reads"], "vfs_read_bytes": e["read_bytes"],
                "unique_files_read": 1 if e["reads"] else 0,
                "vfs_read_size_median": float(np.quantile(sizes_r, .5)) if e["reads"] else 0.0,
                "vfs_writes": e["writes"], "vfs_write_bytes": e["write_bytes"],
                "unique_files_written": 1 if e["writes"] else 0,
                "vfs_write_size_median": float(np.quantile(sizes_w, .5)) if e["writes"] else 0.0,
                "copy_reads": e["copy_reads"], "copy_read_bytes": e["copy_read_bytes"],
                "copy_writes": e["copy_writes"], "copy_write_bytes": e["copy_write_bytes"],
                "mapped_data_files": 1 if e["mapped"] else 0}
        for k, x in want.items():
            got = d.get(k, float("nan"))
            rows.append({"case": c, "quantity": k, "expected": x, "traced": got,
                         "match": None if (isinstance(got, float) and math.isnan(got)) else got == x})
    return pd.DataFrame(rows)


if __name__ == "__main__":
    sys.exit(main())
