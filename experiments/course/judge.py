"""Step 2 of grading: judge a submission's record outside the sandbox, with the package's references.

The sandbox's run (:mod:`experiments.course.harness`) leaves a record: per hidden test (and per
public test's twin), what the student's code gave on the grader's inputs (or the exception it
raised). What is timed or counted comes from the witness (:mod:`experiments.course.witness`),
never from the record: a judge reads it as ``_span(label)`` and ``_seen_file(token)``. Here, in the grader's
own process, where ``experiments`` imports, each hidden test's judge
(:mod:`experiments.course.hidden`) runs on it: its inputs made again, ``_rec`` the values the run
recorded, its assertions comparing them with the package's references. A test passes when its
judge raises nothing; its points are then the test's.

The record is the submission's writing, so it is read as data only (JSON: no pickle, nothing
executed) and a test without its record (the notebook stopped before it, or the record was
altered: a test recorded twice) fails, saying so.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass

from .harness import decode
from .hidden import Hidden, judge_namespace


@dataclass
class Verdict:
    """One hidden test's result: points earned of ``points``, and what failed (empty when it passed)."""
    key: str
    question: str
    points: float
    earned: float
    message: str


def load_record(data: bytes | None) -> dict[str, dict]:
    """``{key: entry}`` of a record file's bytes (None: no record); a key written twice maps to
    an entry whose ``error`` says so (a run writes each key once). Lines that are not a record's
    JSON are skipped."""
    out: dict[str, dict] = {}
    twice: set[str] = set()
    for line in (data or b"").decode("utf-8", errors="replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict) or not isinstance(e.get("case"), str):
            continue
        key = e["case"]
        if key in out:
            twice.add(key)
        out[key] = e
    for key in twice:
        out[key] = {"case": key, "values": {}, "error": {"type": "RecordError", "message":
                    "this test was recorded more than once (a run records each test once): the record was altered",
                    "traceback": ""}}
    return out


def _points(tests: list[Hidden], qpoints: dict[str, float]) -> dict[str, float]:
    """Each test's points: its own, or an equal share of what its question leaves (as otter does)."""
    out = {h.key: h.points for h in tests if h.points is not None}
    for q in {h.question for h in tests}:
        free = [h.key for h in tests if h.question == q and h.points is None]
        if free:
            left = qpoints.get(q, 0.0) - sum(p for k, p in out.items() if k.startswith(q + "."))
            out.update({k: max(left, 0.0) / len(free) for k in free})
    return out


def judge_one(h: Hidden, entry: dict | None, witness=None) -> str:
    """Judge one hidden test on its record ``entry`` (and what the :class:`~.witness.Witness`
    measured and answered for it): '' when it passes, else what failed."""
    if entry is None:
        return ("no record of this test from the run in the sandbox: the notebook stopped before it "
                "(an error, a missing name) or the record was removed")
    err = entry.get("error")
    if err:
        tb = (err.get("traceback") or "").strip()
        return (f"in the sandbox, the test's run raised {err.get('type')}: {err.get('message')}"
                + (f"\n{tb[-2500:]}" if tb else ""))
    from . import harness
    try:
        ns = judge_namespace(h)   # the inputs made again, or their values kept at build
        ns.update({k: decode(v) for k, v in h.given.items()})   # exactly what the sandbox's run got
        ns.update(_gh=harness, _rec=decode(entry.get("values") or {}),
                  _witnessed=_witnessed(witness.log if witness else {}),
                  _dropped=_dropped(witness.log if witness else {}),
                  _asked=list(witness.asked.get(h.key, [])) if witness else [],
                  _span=_span(witness.spans_of(h.key) if witness else []),
                  _seen_file=_seen_file(witness.files if witness else {}))
        exec(compile(h.judge, f"<judge of {h.key}>", "exec"), ns)  # noqa: S102 (the grader's own code)
    except AssertionError as e:
        line = _failed_line(e, h)
        return f"{line}AssertionError: {e}" if str(e) else f"{line}AssertionError"
    except Exception as e:  # noqa: BLE001 (what the student's values made the judge trip on)
        return (f"the judge could not use what your code gave ({type(e).__name__}: {e})\n"
                + "".join(traceback.format_exception(e)[-3:])[-1500:])
    return ""


def _failed_line(e: BaseException, h: Hidden) -> str:
    """'check: <the judge's line that failed>\\n' (empty when it cannot be found)."""
    tb = e.__traceback__
    lineno = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == f"<judge of {h.key}>":
            lineno = tb.tb_lineno
        tb = tb.tb_next
    lines = h.judge.splitlines()
    return f"check: {lines[lineno - 1].strip()}\n" if lineno and lineno <= len(lines) else ""


def _witnessed(log: dict):
    """The judge's ``_witnessed(token)``: (path, resident pages, pages) the witness measured
    under ``token`` (:mod:`experiments.course.witness`); AssertionError for an unknown token."""
    def get(token):
        assert token in log, f"the witness measured nothing under token {token!r}"
        return tuple(log[token][:3])
    return get


def _dropped(log: dict):
    """The judge's ``_dropped(first, last)``: whether another process dropped the machine's page
    cache between the witness's residency measurements ``first`` and ``last`` (its own count,
    :func:`~.witness.dropped_between`): a window a drop fell in judges nothing of residency."""
    from .witness import dropped_between
    return lambda first, last: dropped_between(log, first, last)


def _span(spans: list[dict]):
    """The judge's ``_span(label)``: the one span ``label`` the witness saw for this test, ended
    (:meth:`~.witness.Span.as_dict`: ``seconds`` on the witness's clock, ``rchar``,
    ``read_bytes``, ``wchar``, ``syscr`` from ``/proc/<pid>/io`` read outside, ``threads_left``,
    ``digest_ok``, ``calls`` seen by strace, ``observer``); AssertionError when the witness saw
    none, more than one (a span tried again), or one never ended."""
    def get(label):
        mine = [s for s in spans if s["label"] == label]
        assert mine, f"the witness saw no span {label!r} (it times and counts this test from outside)"
        assert len(mine) == 1, f"the witness saw the span {label!r} started {len(mine)} times (once is allowed)"
        assert mine[0]["seconds"] is not None, f"the span {label!r} was never ended"
        return mine[0]
    return get


def _seen_file(files: dict):
    """The judge's ``_seen_file(token)``: what the witness read of a file itself (``path``,
    ``bytes``, ``sha256``, ``data``); AssertionError for an unknown token."""
    def get(token):
        assert token in files, f"the witness read no file under token {token!r}"
        return files[token]
    return get


def judge_all(tests: list[Hidden], record: dict[str, dict], qpoints: dict[str, float],
              witness=None) -> list[Verdict]:
    """A :class:`Verdict` per hidden test of ``tests`` on ``record`` (:func:`load_record`)."""
    pts = _points(tests, qpoints)
    out = []
    for h in tests:
        msg = judge_one(h, record.get(h.key), witness)
        out.append(Verdict(h.key, h.question, pts[h.key], 0.0 if msg else pts[h.key], msg))
    return out
