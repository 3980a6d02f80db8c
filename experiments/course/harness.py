"""The hidden tests' side in the sandbox: run the student's code on the grader's inputs, record what it gave.

Step 1 of grading (:mod:`experiments.course.grade`). Each hidden test of a lab is split by
``make course`` (:mod:`experiments.course.hidden`): the values of its inputs (data, in
``inputs/<key>.json``) and its run go into the autograder zip; the code that made the inputs and its
judge stay with the grader. In the sandbox, otter runs each test in the student's kernel after
the question's cell, as before, as ``gradeharness.run("q1.2", globals(), run_source)``: with
the inputs and a dict ``_rec`` in the test's namespace,

    _rec["vectors"] = [characteristic_vector(r, "/g/data", "/g/ck") for r in _rows]

and it appends one JSON line to the record file (``$DLIO_GRADE_RECORD``): the values put in ``_rec``,
the exception the run raised (the student's, or :func:`check_own`'s), what it printed and its
seconds. Nothing here judges, and nothing here knows an expected value: the grader judges the
record outside the sandbox (:mod:`experiments.course.judge`) with the package's references.

:func:`resident` asks the grader's witness outside the sandbox (:mod:`experiments.course.witness`)
to measure a file's page-cache residency now; the answer stays outside (a token comes back), so
that no mincore reader is in the student's process (lab 1 grades one). :func:`ask` puts a
question to a hidden test's oracle, which the witness answers from outside (lab 8's AU curves:
their thresholds, the answers the student's search must find, never enter the sandbox).

Standalone (the standard library, numpy and pandas when the values hold them): ``make course``
copies it into the zip as ``gradeharness/__init__.py``, beside ``integrity.py``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import linecache
import os
import socket
import threading
import time
import traceback

from .integrity import check_own  # noqa: F401 (a run calls it first: the graded functions are the notebook's)

RECORD_ENV = "DLIO_GRADE_RECORD"     # the record file (the grader sets it; a file in the submission's folder)
WITNESS_ENV = "DLIO_GRADE_WITNESS"   # the witness's socket (a file in the submission's folder)
DEFAULT_RECORD = "harness-record.jsonl"
TAG = "__kind__"                     # how a value that JSON lacks is written: {TAG: kind, ...}


def encode(x, depth: int = 0):
    """``x`` as JSON-ready data, losslessly for what the hidden tests record: numbers (NaN and
    infinities kept; numpy scalars as Python's), strings, ``bytes``, lists and tuples (as lists),
    dicts (with other keys than strings as pairs), numpy arrays, pandas Series and DataFrames
    (columns, index and dtypes). Anything else is written as its type and ``repr`` (a judge then
    fails on it, naming what it got)."""
    if depth > 50:
        return {TAG: "repr", "type": type(x).__name__, "repr": "(nested too deep)"}
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, (bytes, bytearray, memoryview)):
        return {TAG: "bytes", "b64": base64.b64encode(bytes(x)).decode()}
    if isinstance(x, (list, tuple)):
        return [encode(v, depth + 1) for v in x]
    if isinstance(x, dict):
        if all(isinstance(k, str) for k in x):
            if TAG in x:
                return {TAG: "pairs", "items": [[k, encode(v, depth + 1)] for k, v in x.items()]}
            return {k: encode(v, depth + 1) for k, v in x.items()}
        return {TAG: "pairs", "items": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]}
    mod = type(x).__module__ or ""
    if mod.startswith("numpy"):
        import numpy as np
        if isinstance(x, np.generic):
            return encode(x.item(), depth + 1)
        if isinstance(x, np.ndarray):
            if x.dtype.kind in "biuf":
                return {TAG: "ndarray", "dtype": x.dtype.str, "shape": list(x.shape), "data": x.ravel().tolist()}
            return {TAG: "ndarray", "dtype": "object", "shape": list(x.shape),
                    "data": [encode(v, depth + 1) for v in x.ravel().tolist()]}
    if mod.startswith("pandas"):
        import pandas as pd
        if isinstance(x, pd.DataFrame):
            return {TAG: "frame", "columns": [encode(c, depth + 1) for c in x.columns],
                    "dtypes": [str(t) for t in x.dtypes], "index": _index(x.index, depth),
                    "data": [encode(x[c].tolist(), depth + 1) for c in x.columns]}
        if isinstance(x, pd.Series):
            return {TAG: "series", "name": encode(x.name, depth + 1), "dtype": str(x.dtype),
                    "index": _index(x.index, depth), "data": encode(x.tolist(), depth + 1)}
        if isinstance(x, pd.Timestamp):
            return {TAG: "repr", "type": "Timestamp", "repr": x.isoformat()}
    return {TAG: "repr", "type": type(x).__name__, "repr": repr(x)[:2000]}


def _index(ix, depth: int) -> dict:
    return {"names": [encode(n, depth + 1) for n in ix.names], "dtype": str(ix.dtype),
            "data": encode(ix.tolist(), depth + 1)}


def decode(x):
    """The value :func:`experiments.course.harness.encode` wrote (arrays and frames rebuilt;
    what it could not write stays a dict naming its type and ``repr``)."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    kind = x.get(TAG)
    if kind is None:
        return {k: decode(v) for k, v in x.items()}
    if kind == "bytes":
        return base64.b64decode(x["b64"])
    if kind == "pairs":
        return {_hashable(decode(k)): decode(v) for k, v in x["items"]}
    if kind == "ndarray":
        import numpy as np
        if x["dtype"] == "object":
            return np.array([decode(v) for v in x["data"]], dtype=object).reshape(x["shape"])
        return np.array(x["data"], dtype=np.dtype(x["dtype"])).reshape(x["shape"])
    if kind in ("frame", "series"):
        import pandas as pd
        ix = x["index"]
        names = [decode(n) for n in ix["names"]]
        data = [_hashable(v) for v in decode(ix["data"])]
        index = (pd.MultiIndex.from_tuples(data, names=names) if len(names) > 1
                 else pd.Index(data, name=names[0], dtype=_dtype(ix["dtype"], data)))
        if kind == "series":
            values = decode(x["data"])
            return pd.Series(values, index=index, name=decode(x["name"]), dtype=_dtype(x["dtype"], values))
        cols = [_hashable(decode(c)) for c in x["columns"]]
        frame = pd.DataFrame({i: decode(col) for i, col in enumerate(x["data"])}, index=index)
        for i, t in enumerate(x["dtypes"]):
            if _dtype(t, None) is not None:
                frame[i] = frame[i].astype(t)
        frame.columns = cols
        return frame
    return x   # a "repr": the judge fails on it, naming what it got


def _hashable(v):
    return tuple(_hashable(e) for e in v) if isinstance(v, list) else v


def _dtype(name: str, values):
    """``name`` when pandas can rebuild it from plain values, else None (object, strings)."""
    if name.startswith(("int", "uint", "float", "bool", "datetime64")):
        return name
    return None


def digest(data) -> str:
    """The SHA-256 of ``data`` (bytes, or a numpy array's bytes), in hex: what a run records of
    a large output, to compare with the digest of what it should be."""
    if hasattr(data, "tobytes"):
        data = data.tobytes()
    return hashlib.sha256(bytes(data)).hexdigest()


def _record_path() -> str:
    return os.environ.get(RECORD_ENV) or os.path.abspath(DEFAULT_RECORD)


def _append(line: dict) -> None:
    text = json.dumps(line, allow_nan=True) + "\n"
    fd = os.open(_record_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@contextlib.contextmanager
def case(key: str):
    """Run the body (a hidden test's inputs and run) with a dict to fill, and append its record:
    ``{"case": key, "values": ..., "error": None or {type, message, traceback}, "output": ...,
    "seconds": ...}``. The body's exception (the student's code failing, :func:`check_own`
    refusing it, ``SystemExit``) is recorded, not raised: the judge fails the test on it. What
    the body prints is kept in the record instead of reaching the test's output."""
    rec: dict = {}
    out = io.StringIO()
    err = None
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            yield rec
    except (Exception, SystemExit) as e:   # noqa: BLE001 (the student's failure is the record's)
        err = {"type": type(e).__name__, "message": str(e)[:4000],
               "traceback": "".join(traceback.format_exception(e))[-6000:]}
    seconds = time.perf_counter() - t0
    try:
        values = encode(rec)
    except Exception as e:  # noqa: BLE001 (a value that cannot be written: the judge says so)
        values, err = {}, err or {"type": type(e).__name__, "message": f"the run's values could not be recorded: {e}",
                                  "traceback": ""}
    _append({"case": key, "values": values, "error": err, "output": out.getvalue()[-4000:], "seconds": seconds})


INPUTS = "inputs"   # beside this file in the zip: <key>.json, {name: encoded value}, made by make course


def inputs(key: str) -> dict:
    """The grader's inputs of the hidden test ``key``: ``{name: value}`` (data only: the code
    that made them stays with the grader)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), INPUTS, f"{key}.json")
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {k: decode(v) for k, v in json.load(f).items()}


def run(key: str, namespace: dict, source: str) -> None:
    """Execute ``source`` (a hidden test's run) in ``namespace`` (the test's copy of the
    notebook's), with the test's :func:`inputs` and ``_rec`` (to fill) in it, inside
    :func:`case` ``(key)``."""
    filename = f"<hidden test {key}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)   # its lines in tracebacks
    _CURRENT.append(key)
    try:
        with case(key) as rec:
            namespace.update(inputs(key))
            namespace["_rec"] = rec
            exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (the grader's own test code)
    finally:
        _CURRENT.pop()


_CURRENT: list[str] = []   # the key of the hidden test running (its oracles are asked under it)


_CONN = threading.local()   # this thread's connection to the witness: (pid, (path, inode), socket, reader)


def _connection(where: str, fresh: bool = False):
    """This thread's open connection to the witness (a new one in a forked child, or ``fresh``):
    the witness reads a connection's counters from the process that opened it."""
    c = getattr(_CONN, "c", None)
    try:
        ident = (where, os.stat(where).st_ino)   # a witness started again at the same path is another
    except OSError:
        ident = (where, None)
    if c is not None and (fresh or c[0] != os.getpid() or c[1] != ident):
        if c[0] == os.getpid():
            c[3].close()
            c[2].close()
        c = None
    if c is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(where)
        c = _CONN.c = (os.getpid(), ident, s, s.makefile("rb"))
    return c


def _question(q: dict) -> dict:
    """Send ``q`` to the grader's witness (one JSON line) and return its answer."""
    where = os.environ.get(WITNESS_ENV)
    if not where:
        raise RuntimeError(f"no witness: {WITNESS_ENV} is not set (the grader sets it)")
    answer = b""
    for attempt in range(2):   # once more on a new connection where the kept one was closed unread
        _, _, s, reader = _connection(where, fresh=attempt > 0)
        try:
            s.sendall(json.dumps(q).encode() + b"\n")
            answer = reader.readline(1 << 20)
        except (BrokenPipeError, ConnectionResetError):
            answer = b""
        if answer:
            break
    try:
        got = json.loads(answer)
    except ValueError:
        got = None
    if not isinstance(got, dict) or "refused" in got:
        raise RuntimeError(f"the grader's witness refused {q}: {got.get('refused') if isinstance(got, dict) else 'no answer'}")
    return got


def resident(path) -> int:
    """Ask the grader's witness, outside the sandbox, to measure now how much of ``path`` is in
    the page cache; returns the token under which it keeps the measurement (the number itself
    stays outside). RuntimeError when the witness cannot be reached or refuses the path."""
    return int(_question({"resident": os.path.abspath(os.fspath(path))})["token"])


def dropped(first: int, last: int) -> bool:
    """Whether the machine's page cache was dropped (another process's ``drop_caches``) between
    the witness's residency measurements ``first`` and ``last`` (tokens of :func:`resident`):
    a run then tries again (its judge sets aside a window a drop fell in). False where the
    kernel does not count drops."""
    return bool(_question({"dropped": [int(first), int(last)]})["value"])


def start(label: str, sleeps: dict | None = None, trace: bool = False) -> tuple[int, str]:
    """Have the grader's witness start a span ``label`` of the running hidden test, on its own
    clock, reading this process's counters from outside (``trace``: with ``strace -f`` attached
    from outside for the span's length). ``sleeps``: ``{kind: [seconds, ...]}`` the witness
    sleeps before answering the j-th :func:`tick` of a kind. Returns (span, nonce)."""
    got = _question({"start": label, "key": _CURRENT[-1] if _CURRENT else None, "sleeps": sleeps or {},
                     "trace": bool(trace)})
    return int(got["span"]), str(got["nonce"])


def tick(span: int, kind: str, j: int) -> str:
    """The token of the ``j``-th ``kind`` of ``span`` (the witness sleeps its seconds first;
    a kind's ticks come in order, one at a time)."""
    return str(_question({"tick": span, "kind": kind, "j": int(j)})["token"])


def chain(tokens) -> str:
    """The digest that ends a span: the SHA-256 of its tokens joined, in the order consumed."""
    return hashlib.sha256("".join(tokens).encode()).hexdigest()


def end(span: int, digest: str = "") -> None:
    """End ``span`` on the witness's clock (``digest``: :func:`chain` of the tokens consumed)."""
    _question({"end": span, "digest": digest})


def settle(span: int, seconds: float = 3.0) -> bool:
    """Wait (the witness watching this process's threads from outside) until this process runs
    no thread that ``span`` did not start with, ``seconds`` at most; whether it does not."""
    return bool(_question({"settle": span, "seconds": seconds})["ok"])


def witness_file(path, data: bool = False) -> int:
    """Have the witness read ``path`` (a file of the submission's folder, ``/tmp`` or
    ``/dev/shm``, as this process sees it) itself; the token under which it keeps its size,
    digest and (``data``: a judge reads it, up to 4 MiB) content for the judge."""
    return int(_question({"file": os.path.abspath(os.fspath(path)), "data": bool(data)})["token"])


def ask(name: str, *args):
    """The answer of the running hidden test's oracle ``name`` to ``args``, made by the grader
    outside the sandbox (what the oracle knows stays there); the witness keeps every question."""
    return _question({"ask": name, "key": _CURRENT[-1] if _CURRENT else None, "args": list(args)})["value"]
