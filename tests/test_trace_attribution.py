"""Every read and write is attributed to the right file, whatever system call or descriptor
carries it (issue 15), on each back end that can run here.

One traced run of :mod:`experiments.trace.known_io` per back end configuration: plain reads,
``dup2``/``dup3``/``fcntl(F_DUPFD)`` duplicates, a shell redirection, descriptors inherited
across ``fork`` and ``exec``, ``readv``/``preadv``/``preadv2`` and their writes, the copies
``sendfile``/``copy_file_range``/``splice`` and an ``mmap``. Each case has its own data and
output file, so the vector filtered to one case's files must match what the program logged
it did (counts, bytes, unique files, sizes), or say "not measured" where the back end cannot
see it. Plus a traced LMDBIO ``dio_prov`` run, whose reader reads with ``preadv``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from experiments.trace import bpftrace_backend as bt
from experiments.trace import known_io, tracer, vector
from experiments.trace.tracer import backend_status

STATUS = backend_status()
KERNEL_FILES, WHY_NO_KERNEL_FILES = bt.kernel_files_available()
PROGRAM = Path(known_io.__file__)  # run as a script: no package imports inside the traced run
CALL_CASES = [c for c in known_io.CASES if c != "mmap"]

CONFIGS = {  # name -> (Tracer keywords, skip reason or "")
    "bpftrace_timeline": ({"backend": "bpftrace", "mode": "timeline", "files": "kernel"},
                          STATUS["bpftrace"]["why"] or ("" if KERNEL_FILES else WHY_NO_KERNEL_FILES)),
    "bpftrace_vector": ({"backend": "bpftrace", "mode": "vector", "files": "kernel", "vfs_sequential": True},
                        STATUS["bpftrace"]["why"] or ("" if KERNEL_FILES else WHY_NO_KERNEL_FILES)),
    "bpftrace_descriptors": ({"backend": "bpftrace", "mode": "timeline", "files": "descriptors"},
                             STATUS["bpftrace"]["why"]),
    "strace": ({"backend": "strace"}, STATUS["strace"]["why"]),
    "proc": ({"backend": "proc", "interval_s": 0.1}, STATUS["proc"]["why"]),
}
EVENT_CONFIGS = [c for c in CONFIGS if c != "proc"]


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """``traced(name)`` -> (trace, directory): the known program traced once per configuration."""
    done = {}

    def get(name: str):
        kw, skip = CONFIGS[name]
        if skip:
            pytest.skip(f"{name}: {skip}")
        if name not in done:
            d = known_io.prepare(tmp_path_factory.mktemp(name))
            from experiments.host import cache
            cache.evict([known_io.data_file(d, "mmap")], "fadvise")  # its pages come from the disk
            tr, rc = tracer.run([sys.executable, "-S", str(PROGRAM), "run", str(d), "--hold-s", "0.4"],
                                watch=[d], quiet=True, **kw)
            assert rc == 0, tr.meta
            done[name] = (tr, d)
        return done[name]
    return get


def _sizes_q(sizes, q):
    return float(np.quantile(np.array(sizes, dtype=float), q)) if sizes else 0.0


@pytest.mark.parametrize("config", EVENT_CONFIGS)
@pytest.mark.parametrize("case", CALL_CASES)
def test_each_path_is_attributed_to_its_file(traced, config, case):
    tr, d = traced(config)
    e = known_io.expected(d, [case])[case]
    v = vector.describe(tr, data=[e["data"]], checkpoint=[e["out"]])
    info = f"{config}/{case}: traced {v}; expected {e}; meta {tr.meta.get('file_naming')}"
    want = {"vfs_reads": e["reads"], "vfs_read_bytes": e["read_bytes"],
            "unique_files_read": 1 if e["reads"] else 0,
            "vfs_read_size_q1": _sizes_q(e["read_sizes"], .25),
            "vfs_read_size_median": _sizes_q(e["read_sizes"], .5),
            "vfs_read_size_q3": _sizes_q(e["read_sizes"], .75),
            "vfs_writes": e["writes"], "vfs_write_bytes": e["write_bytes"],
            "unique_files_written": 1 if e["writes"] else 0,
            "vfs_write_size_median": _sizes_q(e["write_sizes"], .5),
            "copy_reads": e["copy_reads"], "copy_read_bytes": e["copy_read_bytes"],
            "copy_writes": e["copy_writes"], "copy_write_bytes": e["copy_write_bytes"],
            "mapped_data_files": 0}
    for k, x in want.items():
        assert v[k] == x, f"{k}: {info}"
    if case in ("plain", "dup2", "dup3", "fcntl_dupfd", "readv"):
        # one process reads the file front to back: the first read random, the rest sequential
        assert v["vfs_sequential_read_pct"] == pytest.approx(100 * (e["reads"] - 1) / e["reads"]), info


@pytest.mark.parametrize("config", EVENT_CONFIGS)
def test_whole_run_files_and_the_mapped_file_is_not_measured(traced, config):
    tr, d = traced(config)
    exp = known_io.expected(d)
    read_files = [e["data"] for c, e in exp.items() if e["reads"]]
    v = vector.characteristic_vector(tr, data=read_files)
    assert v["unique_files_read"] == len(read_files)
    assert v["vfs_reads"] == sum(e["reads"] for e in exp.values())
    assert v["vfs_read_bytes"] == sum(e["read_bytes"] for e in exp.values())
    # the data folder holds the mapped file: VFS reads are "not measured", with the reason
    data_dir = [str(Path(d) / "data")]
    v = vector.characteristic_vector(tr, data=data_dir)
    why = vector.not_measured(tr, data=data_dir)
    for k in vector.VFS_READ_KEYS:
        assert math.isnan(v[k]) and "mmap.bin" in why[k] and "memory-mapped" in why[k], (k, why)
    assert math.isnan(v["bio_vfs_read_pct"]) and "bio_vfs_read_pct" in why
    assert not math.isnan(v["vfs_writes"])  # writes are still measured
    if tr.meta.get("block_traced"):
        # block reads stay real: the mapped file's pages were evicted, so they came from the disk
        mm = known_io.data_file(d, "mmap")
        b = vector.characteristic_vector(tr, data=data_dir, block_files=[mm])
        assert b["bio_read_bytes"] >= known_io.FILE_BYTES - 4096, b
    else:
        assert math.isnan(v["bio_reads"]) and "bio_reads" in vector.not_measured(tr, data=data_dir)
    assert vector.describe(tr, data=data_dir)["mapped_data_files"] == 1
    # libraries and locale files the interpreter mapped are not data mappings
    assert vector.mapped(tr, None) == [str(known_io.data_file(d, "mmap"))]


@pytest.mark.parametrize("config", ["bpftrace_timeline", "bpftrace_vector", "bpftrace_descriptors"])
def test_bpftrace_output_fully_parsed_and_named(traced, config):
    tr, _ = traced(config)
    assert tr.meta["unparsed_lines"] == 0, tr.meta["unparsed_examples"]
    assert tr.meta["lost_events"] == 0
    assert tr.meta["mode"] == CONFIGS[config][0]["mode"]
    if config == "bpftrace_vector":
        assert tr.meta["agg_lost_calls"] == 0
        assert len(tr.counts) and not len(tr.vfs()[tr.vfs()["op"] != "mmap"])  # no per-call rows
        assert tr.meta["vfs_calls_counted"] == int(tr.counts["calls"].sum())


def test_vector_mode_equals_timeline_mode(traced):
    a, da = traced("bpftrace_timeline")
    b, db = traced("bpftrace_vector")
    for case in CALL_CASES:
        ea, eb = known_io.expected(da, [case])[case], known_io.expected(db, [case])[case]
        va = vector.characteristic_vector(a, [ea["data"]], [ea["out"]])
        vb = vector.characteristic_vector(b, [eb["data"]], [eb["out"]])
        for k in vector.VFS_READ_KEYS + vector.VFS_WRITE_KEYS:
            assert va[k] == vb[k], (case, k, va[k], vb[k])


def test_proc_backend_says_what_it_cannot_see(traced):
    tr, d = traced("proc")
    exp = known_io.expected(d)
    e = exp["plain"]
    v = vector.characteristic_vector(tr, data=[e["data"]], checkpoint=[e["out"]])
    why = vector.not_measured(tr, data=[e["data"]], checkpoint=[e["out"]])
    for k in ("vfs_reads", "unique_files_read", "vfs_read_size_median", "vfs_writes", "bio_reads"):
        assert math.isnan(v[k]) and "/proc" in why[k], (k, v[k], why)
    # the amounts: the whole tree's exact /proc/<pid>/io totals (not filtered by file)
    assert tr.meta["proc_io_totals"]["rchar"] == v["vfs_read_bytes"]
    moved = sum(x["read_bytes"] + x["copy_read_bytes"] for x in exp.values())
    assert v["vfs_read_bytes"] >= moved
    assert v["vfs_write_bytes"] >= sum(x["write_bytes"] for x in exp.values())
    # the mapping was alive while the sampler looked: the data folder's reads are not measured
    data_dir = [str(Path(d) / "data")]
    assert vector.mapped(tr, data_dir) == [str(known_io.data_file(d, "mmap"))]
    assert "memory-mapped" in vector.not_measured(tr, data=data_dir)["vfs_read_bytes"]


def test_resolver_shares_the_position_of_duplicated_and_inherited_descriptors():
    import pandas as pd

    from experiments.trace import resolve
    t = iter(range(1, 100))
    rows = lambda *r: [dict(timestamp_ns=next(t), pid=p, tid=p, op=o, fd=f, ret=ret, pos=pos,  # noqa: E731
                            latency_s=0.0, filename=n, dfd=-100) for p, o, f, ret, pos, n in r]
    raw = pd.DataFrame(rows(
        (1, "openat", -100, 3, -1, "/d/a"),
        (1, "read", 3, 100, -1, ""),
        (1, "fcntl", 3, 7, 1030, ""),          # F_DUPFD_CLOEXEC -> 7
        (1, "dup2", 7, 0, -1, ""),             # 7 -> 0
        (1, "close", 3, 0, -1, ""),
        (1, "read", 0, 50, -1, ""),            # the shared position: 100
        (2, "read", 0, 10, -1, ""),            # the forked child: same description, position 150
        (1, "lseek", 7, 0, -1, ""),
        (1, "read", 7, 5, -1, ""),
        (1, "dup3", 0, 9, -1, ""),
        (1, "preadv2", 9, 4, -1, ""),          # offset -1: the current position (5)
    ))
    raw.loc[raw.index[6], "timestamp_ns"] = 7  # after the fork below
    out = resolve.resolve(raw, forks=[(6, 1, 2)], initial={}, cwd="/")
    io = out[out["op"].isin(["read", "preadv2"])]
    assert list(io["path"]) == ["/d/a"] * 5
    assert list(io["offset"]) == [0.0, 100.0, 150.0, 0.0, 5.0]


def test_kernel_names_put_paths_together_with_the_mount_table():
    from experiments.trace.resolve import KernelNames
    mi = ("27 1 254:0 / / rw - ext4 /dev/vda rw\n"
          "30 25 0:27 / /dev/shm rw - tmpfs tmpfs rw\n"
          "31 27 254:0 /srv/data /mnt/my\\040data rw - ext4 /dev/vda rw\n")
    k = KernelNames(mi)
    vda, shm = 254 << 20, 27
    k.add(vda, 2, 0, 2, 0, 0o40755, "/")
    k.add(vda, 10, 1, 2, 0, 0o40755, "srv")
    k.add(vda, 11, 1, 10, 1, 0o40755, "data")
    k.add(vda, 12, 5, 11, 1, 0o100644, "x.bin")
    k.add(vda, 13, 5, 2, 0, 0o100644, "y")
    k.add(shm, 1, 0, 1, 0, 0o41777, "/")
    k.add(shm, 40, 3, 1, 0, 0o100644, "z")
    k.add(8, 99, 0, 1, 0, 0o10600, "")
    assert k.path(vda, 12, 5) == "/mnt/my data/x.bin"  # the bind mount of the subtree wins
    assert k.path(vda, 13, 5) == "/y"
    assert k.path(shm, 40, 3) == "/dev/shm/z"
    assert k.path(8, 99, 0) == "pipe:[99]"
    assert k.path(vda, 12, 6) is None  # another generation of that inode: never seen


def test_weighted_quantiles_equal_numpy_on_the_expanded_list():
    rng = np.random.default_rng(3)
    for _ in range(50):
        vals = rng.choice([0, 512, 4096, 131072, 1000], size=rng.integers(1, 5), replace=False)
        cnt = rng.integers(1, 20, size=len(vals))
        full = np.repeat(vals, cnt).astype(float)
        for q in (.25, .5, .75):
            assert vector.weighted_quantile(vals, cnt, q) == pytest.approx(np.quantile(full, q))


def test_table_4_2_weights_come_from_reference():
    from experiments.settings import reference
    assert {w for k, w in vector.WEIGHTS.items() if k in vector.VFS_READ_KEYS} == {reference.HOVON_WEIGHT_READ}
    assert {w for k, w in vector.WEIGHTS.items() if k in vector.VFS_WRITE_KEYS} == {reference.HOVON_WEIGHT_WRITE}


def test_unparsed_bpftrace_lines_are_counted(tmp_path):
    out = tmp_path / "bt.out"
    out.write_text("Attaching 3 probes...\nREADY\t1\n"
                   "V\t1\t10\t5\t42\t42\t3\t0\t0\t0\t4096\t0\n"
                   "V\t1\t11\tgarbage\n"
                   "something unexpected\n"
                   "Lost 3 events\n")
    from experiments.trace.bpftrace_output import parse_output

    p = parse_output(out, 0)
    assert len(p.vfs) == 1 and p.unparsed == 2
    assert p.unparsed_examples == ["V\t1\t11\tgarbage", "something unexpected"]


@pytest.mark.skipif(not (STATUS["bpftrace"]["ok"] and KERNEL_FILES),
                    reason=f"bpftrace with kernel file naming: {STATUS['bpftrace']['why'] or WHY_NO_KERNEL_FILES}")
@pytest.mark.parametrize("mode", ["timeline", "vector"])
def test_lmdbio_dio_prov_shows_its_preadv_bytes(tmp_path, mode):
    from experiments.lmdbio import read as lmdbio
    from experiments.trace import lmdb_runs
    cfg = lmdb_runs.config(records=256, record_bytes=3072, procs=2, batch=16)
    db, prov = lmdb_runs.build(tmp_path, cfg, seed=1)
    tr, info = lmdb_runs.traced_run(db, prov, cfg, "dio_prov", mode=mode, watch=[tmp_path])
    data = [str(db / "data.mdb")]
    v = vector.describe(tr, data=data)
    reads = vector.counts_of(tr)
    reads = reads[reads["op"].isin(["preadv", "preadv2"]) & (reads["path"] == data[0])]
    assert int(reads["calls"].sum()) == len(prov), reads
    assert v["vfs_reads"] == len(prov) and v["vfs_read_bytes"] == int(prov["bytes"].sum()), v
    assert v["unique_files_read"] == 1 and v["vfs_read_size_median"] == 3072
    if mode == "vector":  # VFS sequentiality is not counted in the kernel unless asked for
        assert math.isnan(v["vfs_sequential_read_pct"]) and v["vfs_reads_offset_unknown"] == len(prov)
    assert info["strategy"] == "dio_prov" and lmdbio.STRATEGIES


# a descriptor number reused for another file after each way the vector mode's descriptor cache
# must notice (issue 56): close, dup2 onto it, exec closing a close-on-exec descriptor, close_range
_REUSE = r"""
import os, sys
d = sys.argv[1]
def rd(fd, n):
    assert os.read(fd, n) and True
def op(name, flags=0):
    return os.open(os.path.join(d, name), os.O_RDONLY | flags)
a = op("a"); rd(a, 1000); os.close(a)
b = op("b"); assert b == a; rd(b, 2000)
c = op("c"); rd(c, 3000); os.dup2(b, c, inheritable=True); rd(c, 100)   # c's number now names b
os.close(c); os.close(b)
e = op("e", os.O_CLOEXEC); rd(e, 4000)
pid = os.fork()
if pid == 0:   # exec closes e; the new program's first open gets its number
    os.execv(sys.executable, [sys.executable, "-S", "-c",
             f"import os; f = os.open({os.path.join(d, 'f')!r}, 0); assert f == {e}; os.read(f, 5000)"])
assert os.waitpid(pid, 0)[1] == 0
os.close(e)
g = op("g"); rd(g, 6000); os.closerange(g, g + 1)   # close_range(2) where the kernel has it
h = op("h"); assert h == g; rd(h, 7000)
"""


def test_vector_mode_descriptor_cache_follows_reused_numbers(tmp_path):
    kw, skip = CONFIGS["bpftrace_vector"]
    if skip:
        pytest.skip(f"bpftrace_vector: {skip}")
    for n in "abcefgh":
        (tmp_path / n).write_bytes(b"x" * 8000)
    tr, rc = tracer.run([sys.executable, "-S", "-c", _REUSE, str(tmp_path)], watch=[tmp_path], quiet=True,
                        **{**kw, "vfs_sequential": False})
    assert rc == 0 and tr.mode == "vector"
    c = vector.counts_of(tr)
    r = c[c["op"] == "read"].assign(b=lambda x: x["size"] * x["calls"]).groupby("path")["b"].sum()
    got = {n: int(r.get(str(tmp_path / n), 0)) for n in "abcefgh"}
    assert got == {"a": 1000, "b": 2100, "c": 3000, "e": 4000, "f": 5000, "g": 6000, "h": 7000}
