"""The grader's witness outside the sandbox: what a hidden test's run asks the grader while it runs.

Two kinds of question come from the harness (:mod:`experiments.course.harness`) over a Unix
socket in the submission's folder, one JSON line each:

- ``{"resident": path}``: how much of the file is in the page cache now. Lab 1 grades a mincore
  reader (``resident_fraction``), so no mincore reader may be in the student's process; the
  witness measures with the package's :func:`experiments.cache.resident_pages` (the page cache
  is one for the machine: it sees what the submission's reads and evictions did) and answers
  with a token only. The measurement stays here, in :attr:`Witness.log`, for the judge
  (``_witnessed(token)``). Only regular files under the submission's folder are measured.
- ``{"ask": name, "key": test, "args": [...]}``: the answer of the hidden test's oracle
  ``name`` (an input ``_ask_*``, :mod:`experiments.course.hidden`) to ``args``, made here: what
  it knows (lab 8's AU curves and their thresholds, which the student's search must find) never
  enters the sandbox. Every question and answer is kept, per test, in :attr:`Witness.asked`
  for the judge (``_asked``).

A question the submission sends itself learns nothing the grader did not mean to answer.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path
from typing import Self

SOCKET_NAME = "witness.sock"
MAX_ASKED = 100_000   # answers kept per test: a run that asks more is refused (and fails its test)


class Witness:
    """A witness for the submission folder ``work``, serving ``work/witness.sock`` until
    :meth:`close` (a context manager). ``oracles``: ``{test key: {name: function}}``. ``log``:
    ``{token: (path, resident pages, pages)}``; ``asked``: ``{test key: [[name, args, answer], ...]}``."""

    def __init__(self, work: Path, oracles: dict[str, dict] | None = None):
        self.work = Path(os.path.realpath(work))
        self.path = self.work / SOCKET_NAME
        self.oracles = oracles or {}
        self.log: dict[int, tuple[str, int, int]] = {}
        self.asked: dict[str, list] = {}
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.path.unlink(missing_ok=True)
        self._sock.bind(str(self.path))
        os.chmod(self.path, 0o666)   # the submission may run as another user (nobody)
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
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
        self.path.unlink(missing_ok=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(5)
                try:
                    conn.sendall((json.dumps(self.answer(_read_line(conn))) + "\n").encode())
                except (OSError, TypeError, ValueError):
                    pass

    def answer(self, request: bytes) -> dict:
        """The answer to one question (a JSON line): ``{"token": n}``, ``{"value": v}`` or
        ``{"refused": why}``."""
        try:
            q = json.loads(request)
        except ValueError:
            return {"refused": "not a JSON question"}
        if not isinstance(q, dict):
            return {"refused": "not a JSON question"}
        if "resident" in q:
            return self._resident(q["resident"])
        if "ask" in q:
            return self._ask(q.get("key"), q.get("ask"), q.get("args"))
        return {"refused": "neither resident nor ask"}

    def _resident(self, where) -> dict:
        from ..cache import resident_pages
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
            got = resident_pages(f"/proc/self/fd/{fd}")
        except OSError as e:
            return {"refused": e.strerror or str(e)}
        finally:
            os.close(fd)
        token = len(self.log) + 1
        self.log[token] = (str(path), *got)
        return {"token": token}

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


def _read_line(conn: socket.socket, limit: int = 65536) -> bytes:
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data
