"""The grader's witness outside the sandbox, on tiny inputs (course/README.md, "Integrity").

- A span is timed on the witness's clock and counted from /proc/<pid>/io read outside; its
  ticks come in order, one at a time, after the sleeps it was started with; "end" is accepted
  early but then does not carry the digest of the tokens (``digest_ok`` false), and a tick
  after it is refused.
- Threads left are seen in /proc/<pid>/task; strace -f attached from outside sees fsync,
  rename and pread (its output parsed, resumed calls too).
- The witness reads a file itself, never through a link, only under the submission's folder,
  /tmp or /dev/shm; it keeps the bytes only where asked.
- The judge's ``_span`` refuses a span missing, started twice or never ended.
- Public tests have twins judged outside; one that uses the witness is refused at build.
- The witness can run as a process of its own and hands back what it kept.
- It counts the machine's page-cache drops around each residency measurement: lab 1's
  buffered-read test tries again after a try a drop fell in and judges the calm try (the
  solution passes), fails saying so when every try had one, and still fails a reader that
  empties the cache itself.
"""

from __future__ import annotations

import os
import shutil
import threading
import time

import nbformat
import pytest

from experiments.course import build as cb
from experiments.course import harness, hidden, lab, labkit
from experiments.course import witness as cw
from experiments.course.judge import _dropped, _span, judge_one, load_record
from experiments.course.witness import Witness, WitnessProcess, chain, parse_strace


@pytest.fixture
def witness(tmp_path, monkeypatch):
    with Witness(tmp_path) as w:
        monkeypatch.setenv(harness.WITNESS_ENV, str(w.path))
        harness._CURRENT.append("q1.1")
        try:
            yield w
        finally:
            harness._CURRENT.pop()


def test_span_ticks_in_order_after_the_sleeps_and_an_early_end_lacks_the_digest(witness):
    sid, nonce = harness.start("a", sleeps={"load": [0.05, 0.05], "step": [0.0, 0.0]})
    assert len(nonce) == 32
    with pytest.raises(RuntimeError, match="load 1 asked after 0"):
        harness.tick(sid, "load", 1)
    toks = [harness.tick(sid, "load", 0), harness.tick(sid, "load", 1),
            harness.tick(sid, "step", 0), harness.tick(sid, "step", 1)]
    harness.end(sid, harness.chain(toks))
    early, _ = harness.start("b", sleeps={"load": [0.05]})
    harness.end(early, "")
    with pytest.raises(RuntimeError, match="no open span"):
        harness.tick(early, "load", 0)
    spans = {s["label"]: s for s in witness.spans_of("q1.1")}
    assert spans["a"]["digest_ok"] and spans["a"]["seconds"] >= 0.1
    assert not spans["b"]["digest_ok"] and spans["b"]["seconds"] < 0.05
    assert chain(toks) == harness.chain(toks)
    with pytest.raises(RuntimeError, match="sleeps"):
        harness.start("c", sleeps={"load": [60]})


def test_loads_of_one_span_cannot_be_fetched_in_parallel(witness):
    """Two threads asking the same kind at once are served one after the other."""
    sid, _ = harness.start("p", sleeps={"load": [0.1, 0.1]})
    got = []
    t = threading.Thread(target=lambda: got.append(harness.tick(sid, "load", 0)))
    t.start()
    time.sleep(0.02)
    t0 = time.monotonic()
    harness.tick(sid, "load", 1)   # its turn comes once the first is answered, then its own sleep
    assert time.monotonic() - t0 >= 0.15
    t.join()
    assert got


def test_counters_and_threads_are_read_from_outside(witness, tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(os.urandom(200_000))
    sid, _ = harness.start("io")
    _ = f.read_bytes()
    harness.end(sid)
    stop = threading.Event()
    sid2, _ = harness.start("threads")
    t = threading.Thread(target=stop.wait)
    t.start()
    assert harness.settle(sid2, 0.1) is False   # a thread started in the span is still running
    harness.end(sid2)
    stop.set()
    t.join()
    s = {x["label"]: x for x in witness.spans_of("q1.1")}
    assert s["io"]["rchar"] >= 200_000
    assert t.native_id in s["threads"]["threads_left"]


def test_strace_output_is_parsed_with_resumed_calls():
    text = """12 fsync(3</d/.ck.tmp>) = 0
12 rename("/d/.ck.tmp", "/d/ck.bin") = 0
13 pread64(4</d/f.rec>, "ab"..., 4096, 0 <unfinished ...>
12 fsync(5</d>) = 0
13 <... pread64 resumed>) = 4096
12 renameat2(AT_FDCWD, "/e/a", 7</e>, "b", RENAME_NOREPLACE) = 0
12 fsync(9</x>) = -1 EBADF (Bad file descriptor)
"""
    assert parse_strace(text) == [["fsync", "/d/.ck.tmp"], ["rename", "/d/.ck.tmp", "/d/ck.bin"],
                                  ["fsync", "/d"], ["pread64", "/d/f.rec", 4096], ["renameat2", "/e/a", "/e/b"]]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_strace_attached_from_outside_sees_fsync_and_rename(witness, tmp_path):
    a = tmp_path / "a"
    sid, _ = harness.start("save", trace=True)
    fd = os.open(a, os.O_WRONLY | os.O_CREAT)
    os.fsync(fd)
    os.close(fd)
    os.replace(a, tmp_path / "b")
    harness.end(sid)
    s = witness.spans_of("q1.1")[0]
    if not s["observer"].startswith("strace"):
        pytest.skip(f"strace cannot attach here: {s['observer']}")
    assert [c[0] for c in s["calls"]] == ["fsync", "rename"] and s["calls"][1][2] == str(tmp_path / "b")


def test_witness_reads_files_itself_never_through_a_link(witness, tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(b"abc")
    tok = harness.witness_file(f, data=True)
    assert witness.files[tok]["data"] == b"abc" and witness.files[tok]["bytes"] == 3
    tok = harness.witness_file(f)   # its digest and size only, unless a judge reads the bytes
    assert witness.files[tok]["data"] is None and witness.files[tok]["bytes"] == 3
    (tmp_path / "link").symlink_to("/etc/hostname")
    with pytest.raises(RuntimeError, match="refused"):
        harness.witness_file(tmp_path / "link")
    with pytest.raises(RuntimeError, match="not a file of the submission's folder"):
        harness.witness_file("/etc/hostname")


def test_judge_span_refuses_missing_twice_and_unended():
    ended = {"label": "a", "seconds": 1.0}
    get = _span([ended, {"label": "b", "seconds": None}, ended | {"label": "c"}, ended | {"label": "c"}])
    assert get("a") is ended
    for label, why in (("z", "saw no span"), ("b", "never ended"), ("c", "started 2 times")):
        with pytest.raises(AssertionError, match=why):
            get(label)


def _master(cells: list[str]):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 2"),
                nbformat.v4.new_raw_cell("# BEGIN TESTS"),
                *[nbformat.v4.new_code_cell(c) for c in cells],
                nbformat.v4.new_raw_cell("# END TESTS"), nbformat.v4.new_raw_cell("# END QUESTION")]
    return nb


HEAD = '"""# BEGIN TEST CONFIG\npoints: 1\n"""  # END TEST CONFIG\n'


def test_public_tests_have_twins_judged_outside(tmp_path):
    pub = HEAD + f"x = 2\n{hidden.RUN_MARK}\n_rec['y'] = f(x)\n{hidden.JUDGE_MARK}\nassert _rec['y'] == 4\n"
    hid = HEAD.replace("points", "hidden: true\npoints") + f"{hidden.RUN_MARK}\n_rec['z'] = f(3)\n{hidden.JUDGE_MARK}\nassert _rec['z'] == 6\n"
    path = tmp_path / "m.ipynb"
    nbformat.write(_master([pub, hid]), path)
    tests = hidden.hidden_tests(path)
    assert [(h.key, h.public) for h in tests] == [("q1.p1", True), ("q1.1", False)]
    cells = ["".join(c.source) for c in hidden.harness_notebook(path).cells if c.cell_type == "code"]
    # the student's copy runs in a row (feedback), its twin and the hidden test record for the judge
    assert "_rec = {}\nx = 2\n" in cells[0] and "assert _rec['y'] == 4" in cells[0]
    assert "_gh.run('q1.p1'" in cells[1] and "_gh.run('q1.1'" in cells[2]
    bad = HEAD + f"{hidden.RUN_MARK}\n_rec['t'] = _gh.start('x')\n{hidden.JUDGE_MARK}\npass\n"
    nbformat.write(_master([bad]), path)
    with pytest.raises(ValueError, match="public test runs in the student's kernel too"):
        hidden.hidden_tests(path)


def test_witness_runs_as_a_process_of_its_own(tmp_path, monkeypatch):
    with WitnessProcess(tmp_path) as w:
        monkeypatch.setenv(harness.WITNESS_ENV, str(w.path))
        harness._CURRENT.append("q2.1")
        try:
            sid, _ = harness.start("x", sleeps={"load": [0.01]})
            harness.end(sid, harness.chain([harness.tick(sid, "load", 0)]))
        finally:
            harness._CURRENT.pop()
    (s,) = w.spans_of("q2.1")
    assert s["digest_ok"] and s["pid"] == os.getpid() and s["seconds"] >= 0.01


# lab 1's reader as its solution writes it; AFTER: what it does once it has read
READER = """
import mmap, os
from random import Random

def evict(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def cold_read(path, block, random=False, direct=False, seed=0):
    evict(path)
    offsets = list(range(0, os.path.getsize(path), block))
    if random:
        Random(seed).shuffle(offsets)
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    buf = mmap.mmap(-1, block)
    n = 0
    try:
        for off in offsets:
            n += os.preadv(fd, [buf], off)
    finally:
        buf.close()
        os.close(fd)
    AFTER
    return {"bytes": n, "seconds": 1.0, "MBps": n / 1e6}
"""


_REAL_DROPS = cw.cache_drops   # the machine's own count, before a test stands in for it


class _Drops:
    """A stand-in for /proc/vmstat's drop count (the witness reads it before and after each
    residency measurement, six reads a try of lab 1's q2.1): at the reads ``when`` picks, it
    counts a drop and drops ``path``'s pages, as another process's drop_caches would."""

    def __init__(self, path, when):
        self.path, self.when, self.reads, self.n = path, when, 0, 0

    def __call__(self) -> int:
        self.reads += 1
        if self.when(self.reads) and self.path.exists():
            self.n += 1
            fd = os.open(self.path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        return self.n


def _residency_try(where, monkeypatch, case, x, h):
    """One grading of lab 1's q2.1 with :class:`_Drops` as the machine's drop count."""
    where.mkdir(parents=True, exist_ok=True)
    f = where / x.name / "grader-q2" / "b.bin"
    # the 5th read of a try: just before the witness looks at the file after the read
    when = {"a drop in the first try": lambda r: r == 5, "a drop in every try": lambda r: r % 6 == 5,
            "a reader that evicts after": lambda r: False}[case]
    drops = _Drops(f, when)
    monkeypatch.setattr(cw, "cache_drops", drops)
    monkeypatch.setattr(time, "sleep", lambda s: None)   # the run's pause between tries
    monkeypatch.setenv(labkit.DIR_ENV, str(where))
    monkeypatch.setenv(harness.RECORD_ENV, str(where / "record.jsonl"))
    ns = {"__name__": "__main__"}
    exec(READER.replace("AFTER", "evict(path)" if case == "a reader that evicts after" else "pass"), ns)  # noqa: S102
    ns.update(labkit=labkit, LAB=x.name, _gh=harness)
    with Witness(where) as w:
        monkeypatch.setenv(harness.WITNESS_ENV, str(w.path))
        harness.run(h.key, ns, h.run)
        toks = sorted(w.log)
        assert harness.dropped(toks[0], toks[-1]) is (drops.n > 0)
        with pytest.raises(RuntimeError, match="measured after"):
            harness.dropped(toks[-1], toks[0])
    entry = load_record((where / "record.jsonl").read_bytes())[h.key]
    tries = [r["try"] for r in entry["values"]["reads"]]
    verdict = judge_one(h, entry, w)
    return drops, tries, verdict, entry, w


@pytest.mark.parametrize("case", ["a drop in the first try", "a drop in every try", "a reader that evicts after"])
def test_a_drop_of_the_page_cache_voids_a_try_of_lab1s_residency_test(tmp_path, monkeypatch, case):
    """The page cache is the machine's: another process's drop_caches (the suite's own cold runs,
    as root) emptied the grader's file between a correct buffered read and the witness's look,
    and lab 1's solution lost q2.1 (CI, 2026-11-29). The witness counts drops around each of its
    measurements; a try with one is tried again and not judged."""
    x = lab("lab01")
    h = next(t for t in hidden.hidden_tests(cb.master(x)) if t.key == "q2.1")
    real = _REAL_DROPS()
    for attempt in range(3):   # again where a real drop (another test's cold run, as root) fell in it
        drops, tries, verdict, entry, w = _residency_try(tmp_path / f"attempt{attempt}", monkeypatch, case, x, h)
        if _REAL_DROPS() == real:
            break
        real = _REAL_DROPS()
    if case == "a drop in the first try":
        assert tries == [0, 1, 0] and verdict == "", verdict   # sequential: tried again; random: calm
        first = entry["values"]["reads"][0]["window"]
        assert _dropped(w.log)(first[0], first[-1]) and w.log[first[-1]][1] == 0
    elif case == "a drop in every try":
        assert tries == list(range(8)) * 2 and "dropped the page cache during each of the 8 tries" in verdict, verdict
    else:
        assert tries == [0, 0] and "a buffered read leaves the pages in the cache (0/1024)" in verdict, verdict


def test_a_kept_connection_never_reaches_a_closed_witness(tmp_path, monkeypatch):
    """The harness keeps one connection per thread (a tick without a connect); a witness started
    again at the same folder (lab 4's test grades two notebooks in turn) must get every question
    of the second run, none going to the first through the kept connection (a CI of 2026-11-29
    lost a file token that way)."""
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 10)
    with Witness(tmp_path) as w1:
        monkeypatch.setenv(harness.WITNESS_ENV, str(w1.path))
        assert harness.witness_file(f) == 1
    with Witness(tmp_path) as w2:
        monkeypatch.setenv(harness.WITNESS_ENV, str(w2.path))
        assert harness.witness_file(f) == 1 and harness.witness_file(f) == 2
    assert list(w1.files) == [1] and list(w2.files) == [1, 2]
