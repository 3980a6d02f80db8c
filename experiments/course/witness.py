"""The grader's witness outside the sandbox: what a hidden test's run asks the grader while it runs.

Two kinds of question come from the harness (:mod:`experiments.course.harness`) over a Unix
socket in the submission's folder, one JSON line each:

- ``{"resident": path}``: how much of the file is in the page cache now. Lab 1 grades a mincore
  reader (``resident_fraction``), so no mincore reader may be in the student's process; the
  witness measures with the package's :func:`experiments.host.cache.resident_pages` (the page cache
  is one for the machine: it sees what the submission's reads and evictions did) and answers
  with a token only. The measurement stays here, in :attr:`Witness.log`, for the judge
  (``_witnessed(token)``). Only regular files under the submission's folder are measured.
  With each measurement it keeps the machine's count of page-cache drops (``drop_pagecache`` of
  ``/proc/vmstat``, just before and just after it): another process's ``drop_caches`` (the
  suite's own cold runs, as root) empties every file's pages, the grader's too.
  ``{"dropped": [first, last]}`` answers whether the page cache was dropped between the
  measurements ``first`` and ``last`` (None where the kernel does not count): a test that
  judges residency or device bytes tries again instead of judging a window a drop fell in.
- ``{"ask": name, "key": test, "args": [...]}``: the answer of the hidden test's oracle
  ``name`` (an input ``_ask_*``, :mod:`experiments.course.hidden`) to ``args``, made here: what
  it knows (lab 8's AU curves and their thresholds, which the student's search must find) never
  enters the sandbox. Every question and answer is kept, per test, in :attr:`Witness.asked`
  for the judge (``_asked``).

- ``{"start": label, "key": test, ...}`` / ``{"end": span, "digest": d}``: a witnessed span
  (:class:`Span`) of a timed or counted test. The witness notes its own monotonic clock, the
  process counters of the asking process (its pid from the socket's peer credentials, its
  ``/proc/<pid>/io`` and ``/proc/<pid>/task`` read from here) at each, and gives a nonce at
  "start"; the judge uses these numbers, never the record's, for anything timed or counted.
  ``{"tick": span, "kind": k, "j": j}``: the j-th item (``load``) or step (``step``) of a span,
  which the witness serves itself, in order, after sleeping the seconds the span was started
  with; it answers with a random token, and the span's "end" must carry the SHA-256 of the
  tokens consumed (:func:`chain`): only the finished work can produce it, so "end" cannot be
  sent early. ``{"settle": span, "seconds": s}`` waits until the process runs no thread the
  span did not start with (seen in ``/proc/<pid>/task``). A span started with ``"trace"``
  has ``strace -f`` attached from here for its length (the ``fsync``, ``rename`` and ``pread``
  calls it sees, in order); where strace cannot attach, the span says why (``observer``).
- ``{"file": path, "data": bool}``: the witness reads a file of the submission's folder itself
  (its size, SHA-256 and, where ``data`` asks and up to :data:`FILE_KEEP` bytes, its content:
  lab 4's checkpoints, 67 MB a submission, need their digests only): the judge compares outputs with
  the grader's copy, never with what the sandbox says it wrote.

A question the submission sends itself learns nothing the grader did not mean to answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

SOCKET_NAME = "witness.sock"
MAX_ASKED = 100_000   # answers kept per test: a run that asks more is refused (and fails its test)
MAX_SPANS = 1_000     # spans per test; ticks per span
MAX_TICKS = 100_000
FILE_KEEP = 4 << 20   # bytes of a witnessed file kept for the judge (larger: its digest only)
TRACED = ("fsync", "fdatasync", "rename", "renameat", "renameat2", "pread64")


def chain(tokens) -> str:
    """The digest a span's "end" carries: the SHA-256 (hex) of its tokens joined, in order (the
    witness expects its ticks' tokens kind by kind, kinds in alphabetical order, each in index
    order: ``load`` 0, 1, ..., then ``step`` 0, 1, ...)."""
    return hashlib.sha256("".join(tokens).encode()).hexdigest()


def proc_io(pid: int) -> dict[str, int] | None:
    """``/proc/<pid>/io`` as ``{counter: int}`` (rchar, wchar, syscr, syscw, read_bytes,
    write_bytes, cancelled_write_bytes), read from outside the process; None when unreadable."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    return {k.strip(): int(v) for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)}


def cache_drops() -> int | None:
    """How many times the machine's page cache was dropped since boot (``drop_pagecache`` of
    ``/proc/vmstat``: every write to ``/proc/sys/vm/drop_caches``, by any process); None where
    the kernel does not count them (before Linux 4.15)."""
    try:
        text = Path("/proc/vmstat").read_text()
    except OSError:
        return None
    m = re.search(r"^drop_pagecache (\d+)$", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def proc_tasks(pid: int) -> list[int]:
    """The thread ids of process ``pid`` now (``/proc/<pid>/task``), read from outside."""
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


@dataclass
class Span:
    """What the witness saw of one span: its ``label``, the asking process's ``pid``, its own
    monotonic clock at "start" and "end" (``t0``, ``t1``: ``seconds`` is their difference), the
    process's ``/proc/<pid>/io`` counters and thread ids at each, the ``nonce`` it gave, the
    seconds it was asked to sleep per tick kind (``sleeps``), every tick it served (``ticks``:
    ``[kind, j, witness time begun, witness time answered, token]``), the digest "end" carried
    and whether it is :func:`chain` of the tokens served (``digest_ok``), and what strace saw
    (``calls``: ``[call, args...]``) with ``observer`` saying what observed the calls."""
    label: str
    key: str
    pid: int
    nonce: str
    t0: float
    io0: dict | None
    tasks0: list
    sleeps: dict = field(default_factory=dict)
    ticks: list = field(default_factory=list)
    t1: float | None = None
    io1: dict | None = None
    tasks1: list = field(default_factory=list)
    digest: str = ""
    digest_ok: bool = False
    observer: str = "none (not asked)"
    calls: list = field(default_factory=list)
    settled: bool | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.t1 is None else self.t1 - self.t0

    def io(self, counter: str) -> int | None:
        """The change of ``counter`` of ``/proc/<pid>/io`` over the span (None: unreadable)."""
        if not self.io0 or not self.io1:
            return None
        return self.io1[counter] - self.io0[counter]

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["seconds"] = self.seconds
        d["threads_left"] = sorted(set(self.tasks1) - set(self.tasks0)) if self.t1 is not None else None
        for c in ("rchar", "wchar", "syscr", "read_bytes", "write_bytes"):
            d[c] = self.io(c)
        return d


class Witness:
    """A witness for the submission folder ``work``, serving ``work/witness.sock`` until
    :meth:`close` (a context manager). ``oracles``: ``{test key: {name: function}}``. ``log``:
    ``{token: (path, resident pages, pages, page-cache drops before, after)}`` (:func:`cache_drops`);
    ``asked``: ``{test key: [[name, args, answer], ...]}``."""

    def __init__(self, work: Path, oracles: dict[str, dict] | None = None):
        self.work = Path(os.path.realpath(work))
        self.path = self.work / SOCKET_NAME
        self.oracles = oracles or {}
        self.log: dict[int, tuple[str, int, int]] = {}
        self.asked: dict[str, list] = {}
        self.spans: list[Span] = []
        self.files: dict[int, dict] = {}
        self._lock = threading.Lock()
        self._tick_locks: dict[tuple[int, str], threading.Lock] = {}
        self._strace: dict[int, tuple[subprocess.Popen, Path]] = {}
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.path.unlink(missing_ok=True)
        self._sock.bind(str(self.path))
        os.chmod(self.path, 0o666)   # the submission may run as another user (nobody)
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()   # the askers' open connections, closed with the witness
        self._thread = threading.Thread(target=self._serve, name="grade-witness", daemon=True)
        self._thread.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()
        with self._lock:   # an asker's kept connection ends here: it must not reach a later witness's
            conns, self._conns = list(self._conns), set()   # questions through this one's thread
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.path.unlink(missing_ok=True)
        for sid in list(self._strace):   # a span never ended: its strace stops with the witness
            self._stop_strace(sid)

    def _serve(self) -> None:
        # one thread per question: a tick sleeps, and a prefetch's load and step overlap
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        # one connection per asking thread, kept open for its questions (a tick's round trip
        # without a connect and a new thread here: under load those made lab 3's serial epochs
        # longer than its overlap test allows), answered in turn until the asker closes it
        with self._lock:
            if self._stop.is_set():
                conn.close()
                return
            self._conns.add(conn)
        with conn:
            try:
                pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                          struct.calcsize("3i")))[0]
                with conn.makefile("rb") as lines:
                    while True:
                        line = lines.readline(65536)
                        if not line or self._stop.is_set():   # closed, or asked of a closed witness
                            break
                        conn.sendall((json.dumps(self.answer(line, pid)) + "\n").encode())
            except (OSError, TypeError, ValueError):
                pass
            finally:
                with self._lock:
                    self._conns.discard(conn)

    def answer(self, request: bytes, pid: int | None = None) -> dict:
        """The answer to one question (a JSON line) from the process ``pid`` (the socket's
        peer): ``{"token": n}``, ``{"value": v}``, ``{"span": n, "nonce": s}``, ``{"ok": ...}``
        or ``{"refused": why}``."""
        try:
            q = json.loads(request)
        except ValueError:
            return {"refused": "not a JSON question"}
        if not isinstance(q, dict):
            return {"refused": "not a JSON question"}
        if "resident" in q:
            return self._resident(q["resident"])
        if "dropped" in q:
            return self._dropped(q["dropped"])
        if "ask" in q:
            return self._ask(q.get("key"), q.get("ask"), q.get("args"))
        if "start" in q:
            return self._start(q, pid if pid is not None else os.getpid())
        if "tick" in q:
            return self._tick(q)
        if "end" in q:
            return self._end(q, pid if pid is not None else os.getpid())
        if "settle" in q:
            return self._settle(q)
        if "file" in q:
            return self._file(q["file"], pid if pid is not None else os.getpid(), q.get("data") is True)
        return {"refused": "not a question the witness answers"}

    # ---- spans ---------------------------------------------------------------------------------

    def spans_of(self, key: str) -> list[dict]:
        """The spans of the test ``key``, as dicts (:meth:`Span.as_dict`), in the order started."""
        with self._lock:
            return [s.as_dict() for s in self.spans if s.key == key]

    def _span(self, sid) -> Span | None:
        if not isinstance(sid, int) or not 1 <= sid <= len(self.spans):
            return None
        return self.spans[sid - 1]

    def _start(self, q: dict, pid: int) -> dict:
        label, key = q.get("start"), q.get("key")
        sleeps = q.get("sleeps") or {}
        if not isinstance(label, str) or not isinstance(key, str):
            return {"refused": "a span has a label and a test's key (strings)"}
        if not (isinstance(sleeps, dict) and all(isinstance(k, str) and isinstance(v, list) and len(v) <= MAX_TICKS
                                                 and all(isinstance(x, (int, float)) and 0 <= x <= 5 for x in v)
                                                 for k, v in sleeps.items())):
            return {"refused": "sleeps: {kind: [seconds between 0 and 5, ...]}"}
        with self._lock:
            if sum(s.key == key for s in self.spans) >= MAX_SPANS:
                return {"refused": f"more than {MAX_SPANS} spans"}
            span = Span(label, key, pid, secrets.token_hex(16), 0.0, proc_io(pid), proc_tasks(pid),
                        {k: [float(x) for x in v] for k, v in sleeps.items()})
            self.spans.append(span)
            sid = len(self.spans)
        if q.get("trace"):
            span.observer = self._start_strace(sid, pid)
        span.t0 = time.monotonic()   # the clock starts once the observer is attached
        return {"span": sid, "nonce": span.nonce}

    def _tick(self, q: dict) -> dict:
        span, kind, j = self._span(q.get("tick")), q.get("kind"), q.get("j")
        if span is None or span.t1 is not None:
            return {"refused": "no open span of that number"}
        if not isinstance(kind, str) or not isinstance(j, int):
            return {"refused": "a tick has a kind (a string) and an index"}
        with self._lock:
            lock = self._tick_locks.setdefault((id(span), kind), threading.Lock())
        with lock:   # a kind's ticks one at a time, in order: they cannot be fetched in parallel
            done = sum(t[0] == kind for t in span.ticks)
            if j != done or done >= MAX_TICKS:
                return {"refused": f"{kind} {j} asked after {done} {kind}s (they come in order, once each)"}
            sleeps = span.sleeps.get(kind, [])
            begun = time.monotonic()
            if j < len(sleeps):
                time.sleep(sleeps[j])
            token = secrets.token_hex(8)
            span.ticks.append([kind, j, begun - span.t0, time.monotonic() - span.t0, token])
        return {"token": token}

    def _end(self, q: dict, pid: int) -> dict:
        sid = q.get("end")
        span = self._span(sid)
        if span is None or span.t1 is not None:
            return {"refused": "no open span of that number"}
        if pid != span.pid:
            return {"refused": "a span ends in the process that started it"}
        t1 = time.monotonic()
        span.io1, span.tasks1 = proc_io(span.pid), proc_tasks(span.pid)
        span.t1 = t1
        digest = q.get("digest")
        span.digest = digest if isinstance(digest, str) else ""
        span.digest_ok = span.digest == chain(t[4] for t in sorted(span.ticks, key=lambda t: (t[0], t[1])))
        if sid in self._strace:
            span.calls = self._stop_strace(sid)
        return {"ok": True}

    def _settle(self, q: dict) -> dict:
        span, seconds = self._span(q.get("settle")), q.get("seconds", 3)
        if span is None or span.t1 is not None or not isinstance(seconds, (int, float)):
            return {"refused": "no open span of that number"}
        end = time.monotonic() + min(max(float(seconds), 0.0), 10.0)
        while True:
            extra = set(proc_tasks(span.pid)) - set(span.tasks0)
            if not extra or time.monotonic() >= end:
                break
            time.sleep(0.01)
        span.settled = not extra
        return {"ok": span.settled}

    def _start_strace(self, sid: int, pid: int) -> str:
        """Attach ``strace -f`` to ``pid`` for the span ``sid``; what observes, in words."""
        exe = shutil.which("strace")
        if exe is None:
            return "none: strace is not installed"
        out = Path(tempfile.mkstemp(prefix="dlio-witness-strace-")[1])
        p = subprocess.Popen([exe, "-f", "-qq", "-y", "-s", "4096", "-e", "trace=" + ",".join(TRACED),
                              "-o", str(out), "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and p.poll() is None:
            if all(_tracer(pid, t) for t in proc_tasks(pid)):
                self._strace[sid] = (p, out)
                return f"strace -f attached from outside (pid {pid})"
            time.sleep(0.005)
        why = p.stderr.read().decode(errors="replace").strip()[-300:] if p.poll() is not None else "no attach in 10 s"
        with _quiet():
            p.kill()
        p.wait()
        out.unlink(missing_ok=True)
        return f"none: strace could not attach ({why or 'exit ' + str(p.returncode)})"

    def _stop_strace(self, sid: int) -> list:
        p, out = self._strace.pop(sid)
        with _quiet():
            p.send_signal(signal.SIGINT)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        try:
            return parse_strace(out.read_text(errors="replace"))
        finally:
            out.unlink(missing_ok=True)

    # ---- files ---------------------------------------------------------------------------------

    def _file(self, where, pid: int, data: bool = False) -> dict:
        if not isinstance(where, str) or not where.startswith("/"):
            return {"refused": "a path is an absolute path (a string)"}
        parts = [x for x in where.split("/") if x and x != "."]
        if ".." in parts or not any(where == r or where.startswith(r + "/") for r in (str(self.work), "/tmp", "/dev/shm")):
            return {"refused": "not a file of the submission's folder, /tmp or /dev/shm"}
        try:   # the path as the asking process sees it (its own /tmp and /dev/shm in the sandbox),
            # component by component without following a link (one could point out of it)
            fd = _open_nofollow(f"/proc/{pid}/root", parts)
        except OSError as e:
            return {"refused": e.strerror or str(e)}
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return {"refused": "not a regular file"}
            h, size, kept = hashlib.sha256(), 0, bytearray()
            while chunk := os.read(fd, 1 << 20):
                h.update(chunk)
                size += len(chunk)
                if data and size <= FILE_KEEP:
                    kept += chunk
        finally:
            os.close(fd)
        path = where
        with self._lock:
            token = len(self.files) + 1
            self.files[token] = {"path": str(path), "bytes": size, "sha256": h.hexdigest(),
                                 "data": bytes(kept) if data and size <= FILE_KEEP else None}
        return {"token": token}

    def _resident(self, where) -> dict:
        from ..host.cache import resident_pages
        if not isinstance(where, str):
            return {"refused": "a path is a string"}
        try:
            path = Path(os.path.realpath(where))
        except (ValueError, OSError) as e:
            return {"refused": str(e)}
        if self.work not in path.parents:
            return {"refused": "not a file of the submission's folder"}
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as e:
            return {"refused": e.strerror or str(e)}
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {"refused": "not a regular file"}
            before = cache_drops()
            got = resident_pages(f"/proc/self/fd/{fd}")
            after = cache_drops()
        except OSError as e:
            return {"refused": e.strerror or str(e)}
        finally:
            os.close(fd)
        with self._lock:
            token = len(self.log) + 1
            self.log[token] = (str(path), *got, before, after)
        return {"token": token}

    def _dropped(self, tokens) -> dict:
        if not (isinstance(tokens, list) and len(tokens) == 2 and all(isinstance(t, int) for t in tokens)):
            return {"refused": "dropped: [first, last] (two tokens of residency measurements)"}
        try:
            return {"value": dropped_between(self.log, *tokens)}
        except AssertionError as e:
            return {"refused": str(e)}

    def _ask(self, key, name, args) -> dict:
        fn = self.oracles.get(key, {}).get(name) if isinstance(key, str) and isinstance(name, str) else None
        if fn is None or not isinstance(args, list):
            return {"refused": f"no oracle {name!r} for the test {key!r}"}
        kept = self.asked.setdefault(key, [])
        if len(kept) >= MAX_ASKED:
            return {"refused": f"more than {MAX_ASKED} questions"}
        try:
            value = fn(*args)
            json.dumps(value)
        except Exception as e:  # noqa: BLE001 (a bad question: its answer says why)
            return {"refused": f"{type(e).__name__}: {e}"}
        kept.append([name, args, value])
        return {"value": value}


def dropped_between(log: dict, first, last) -> bool | None:
    """Whether the machine's page cache was dropped (another process's ``drop_caches``) from just
    before the residency measurement ``first`` to just after ``last`` (tokens of ``log``,
    ``first <= last``); None where the kernel does not count drops. AssertionError for tokens
    the witness did not give, or out of order."""
    assert first in log and last in log, f"the witness measured nothing under token {first!r} or {last!r}"
    assert first <= last, f"token {first} was measured after token {last}"
    before, after = log[first][3], log[last][4]
    return None if before is None or after is None else before != after


def _open_nofollow(root: str, parts: list[str]) -> int:
    """An fd of the regular file ``root/parts...``, opened one component at a time without
    following a symbolic link; OSError otherwise."""
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = (os.O_RDONLY | os.O_NONBLOCK) if last else (os.O_PATH | os.O_DIRECTORY)
            nxt = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not parts:
            raise IsADirectoryError("a folder, not a file")
        return fd
    except BaseException:
        os.close(fd)
        raise


def _tracer(pid: int, tid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    except OSError:
        return True   # a thread that ended needs no tracer
    m = re.search(r"^TracerPid:\s*(\d+)", text, re.MULTILINE)
    return bool(m and int(m.group(1)))


class _quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], (ProcessLookupError, OSError))


_CALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
_FD = re.compile(r"^-?\d+<(.*)>$")


def parse_strace(text: str) -> list:
    """The calls of ``strace -f -y -o`` output that returned 0 or more, in order:
    ``[call, path, ...]`` (an fd as the path strace shows for it; a path relative to a directory
    fd joined to it; ``AT_FDCWD`` dropped), e.g. ``["fsync", "/d/.ck.tmp"]``,
    ``["rename", "/d/.ck.tmp", "/d/ck.bin"]``, ``["pread64", "/d/f.rec", 4096]``."""
    out, pending = [], {}
    for line in text.splitlines():
        line = line.strip()
        u = re.match(r"^(\d+)\s+(.*) <unfinished \.\.\.>$", line)
        if u:   # a call another thread interrupted: its end comes in a "resumed" line
            pending[u.group(1)] = u.group(2)
            continue
        r = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line)
        if r:
            line = f"{r.group(1)} {pending.pop(r.group(1), '')}{r.group(2)}"
        m = _CALL.match(line)
        if not m or int(m.group(4)) < 0:
            continue
        call, args = m.group(2), _split_args(m.group(3))
        if call in ("fsync", "fdatasync"):
            fd = _FD.match(args[0]) if args else None
            out.append([call, fd.group(1) if fd else args[0] if args else ""])
        elif call == "pread64":
            fd = _FD.match(args[0]) if args else None
            out.append([call, fd.group(1) if fd else "", int(m.group(4))])
        elif call in ("rename", "renameat", "renameat2"):
            paths = []
            rest = args if call == "rename" else args[:4]
            if call == "rename":
                paths = [_unquote(a) for a in rest[:2]]
            else:
                for d, p in ((rest[0], rest[1]), (rest[2], rest[3])):
                    p = _unquote(p)
                    fd = _FD.match(d)
                    paths.append(os.path.join(fd.group(1), p) if fd and not p.startswith("/") else p)
            out.append([call, *paths])
    return out


def _split_args(s: str) -> list[str]:
    out, cur, quote, depth = [], "", False, 0
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            cur += c
            if c == "\\" and i + 1 < len(s):
                cur += s[i + 1]
                i += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote, cur = True, cur + c
        elif c in "<[{(":
            depth, cur = depth + 1, cur + c
        elif c in ">]})":
            depth, cur = depth - 1, cur + c
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    if cur.strip():
        out.append(cur.strip())
    return out


def _unquote(a: str) -> str:
    a = a.strip()
    if a.startswith('"') and a.endswith('"'):
        try:
            return json.loads(a)
        except ValueError:
            return a[1:-1]
    return a


# ---- the witness as a process of its own ----------------------------------------------------

class WitnessProcess:
    """A :class:`Witness` for ``work`` served by a process of its own (``python -m
    experiments.course.witness``), so that its clock and its answers wait on nothing the
    grader's process does (a judge of another submission holding the interpreter's lock); the
    oracles of ``lab``'s hidden tests are made there. After :meth:`close` (a context manager)
    it holds what the witness kept: ``log``, ``asked``, ``spans`` (dicts) and ``files``."""

    def __init__(self, work: Path, lab: str | None = None, timeout_s: float = 120):
        self.work = Path(os.path.realpath(work))
        self.path = self.work / SOCKET_NAME
        self.log: dict[int, tuple] = {}
        self.asked: dict[str, list] = {}
        self.spans: list[dict] = []
        self.files: dict[int, dict] = {}
        self._out = Path(tempfile.mkdtemp(prefix="dlio-witness-")) / "kept.json"   # the grader's, not the submission's
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH", "")) if x))
        import sys
        self._p = subprocess.Popen([sys.executable, "-m", "experiments.course.witness", str(self.work), str(self._out),
                                    *([lab] if lab else [])], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        line = _ready(self._p, timeout_s)
        if line != b"ready\n":
            self._p.kill()
            self._p.wait()
            raise RuntimeError(f"the grader's witness did not start (it said {line!r})")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._p.poll() is None:
            self._p.stdin.close()
            try:
                self._p.wait(30)
            except subprocess.TimeoutExpired:
                self._p.kill()
                self._p.wait()
        try:
            kept = json.loads(self._out.read_text())
        except (OSError, ValueError):
            kept = {}
        finally:
            shutil.rmtree(self._out.parent, ignore_errors=True)
        import base64
        self.log = {int(k): tuple(v) for k, v in kept.get("log", {}).items()}
        self.asked = kept.get("asked", {})
        self.spans = kept.get("spans", [])
        self.files = {int(k): {**v, "data": None if v.get("data") is None else base64.b64decode(v["data"])}
                      for k, v in kept.get("files", {}).items()}

    def spans_of(self, key: str) -> list[dict]:
        return [s for s in self.spans if s["key"] == key]


def _ready(p: subprocess.Popen, timeout_s: float) -> bytes:
    box: list[bytes] = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout_s)
    return box[0] if box else b""


def _serve_main(argv: list[str]) -> int:
    """``python -m experiments.course.witness WORK KEPT.json [LAB]``: serve WORK's witness until
    stdin closes, then write what it kept to KEPT.json."""
    import base64
    import sys
    work, out = Path(argv[0]), Path(argv[1])
    oracles = {}
    if len(argv) > 2:
        from . import lab as find_lab
        from .hidden import inputs_namespace, judges
        from .hidden import oracles as make_oracles
        oracles = {h.key: make_oracles(h, inputs_namespace(h)) for h in judges(find_lab(argv[2])) if "_ask_" in h.inputs}
    w = Witness(work, oracles)
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.read()
    finally:
        w.close()
        kept = {"log": {str(k): list(v) for k, v in w.log.items()}, "asked": w.asked,
                "spans": [s.as_dict() for s in w.spans],
                "files": {str(k): {**v, "data": None if v["data"] is None else base64.b64encode(v["data"]).decode()}
                          for k, v in w.files.items()}}
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(kept))
        os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_serve_main(sys.argv[1:]))
