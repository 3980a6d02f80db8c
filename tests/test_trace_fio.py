"""A fio job with a known pattern, traced: counts, sizes, unique files and the random/sequential
split match what fio was told to do, with every back end that can run here."""

import pytest

from experiments import trace
from experiments.trace import patterns, vector
from experiments.trace.tracer import backend_status

STATUS = backend_status()


def _check_vfs(tr, p):
    exp = patterns.expected(p)
    d = vector.describe(tr, data=[str(p.data_file)], block_files=[p.data_file])
    info = f"measured {d}; expected {exp}; meta {tr.meta}"
    for k in ("vfs_reads", "vfs_read_bytes", "unique_files_read", "vfs_read_size_q1",
              "vfs_read_size_median", "vfs_read_size_q3"):
        assert d[k] == exp[k], f"{k}: {info}"
    reads = vector.vfs_reads(tr.events, [str(p.data_file)])
    assert set(reads["op"]) == {"pread64"}  # ioengine=psync
    assert sorted(reads["size"].unique()) == sorted({p.seq_bs, p.rand_bs})
    rnd, seq, unknown = vector.vfs_sequentiality(reads)
    assert unknown == 0
    # a random offset may, rarely, follow the previous one: allow 2 of 200
    assert seq == pytest.approx(exp["vfs_sequential_reads"], abs=2)
    assert rnd == pytest.approx(exp["vfs_random_reads"], abs=2)
    assert d["vfs_writes"] == 0  # nothing was written to the data file
    return d, exp


@pytest.mark.skipif(not STATUS["bpftrace"]["ok"], reason=f"bpftrace: {STATUS['bpftrace']['why']}")
def test_fio_pattern_bpftrace(tmp_path):
    p = patterns.fio_pattern(tmp_path, file_mib=16, seq_mib=8, rand_ios=200)
    for _ in range(3):
        tr, rc = trace.run(p.command(), backend="bpftrace", watch=[tmp_path], block_scope="tree", quiet=True)
        # a request's latency needs its completion event: a loaded box (a CI beside two
        # simulations) once left 30 % of them unmatched; a fault of ours does so every time
        if not (tr.meta.get("block_traced") and p.direct) or tr.block()["latency_s"].notna().mean() > 0.9:
            break
    assert rc == 0 and tr.backend == "bpftrace"
    d, exp = _check_vfs(tr, p)
    assert len(set(vector.vfs_reads(tr.events, [str(p.data_file)])["pid"])) == 2  # one process per job
    if tr.meta["block_traced"] and p.direct:
        # direct I/O: one block request per read, but a read across an extent boundary of the
        # temporary file is two (pattern_check's tolerance); the bytes stay exact. Listing A.1
        # split as fio was told
        info = f"measured {d}; expected {exp}; meta {tr.meta}"
        assert abs(d["bio_reads"] - exp["vfs_reads"]) <= max(1, round(0.05 * exp["vfs_reads"])), info
        assert d["bio_read_bytes"] == exp["vfs_read_bytes"], info
        assert d["bio_sequential_reads"] == pytest.approx(exp["bio_sequential_reads"], abs=3)
        assert d["bio_random_reads"] == pytest.approx(exp["bio_random_reads"], abs=3)
        lat = tr.block()["latency_s"]
        assert lat.notna().mean() > 0.9 and (lat.dropna() > 0).all()


@pytest.mark.skipif(not STATUS["strace"]["ok"], reason=f"strace: {STATUS['strace']['why']}")
def test_fio_pattern_strace(tmp_path):
    p = patterns.fio_pattern(tmp_path, file_mib=16, seq_mib=8, rand_ios=200)
    tr, rc = trace.run(p.command(), backend="strace", watch=[tmp_path], quiet=True)
    assert rc == 0 and tr.backend == "strace"
    d, _ = _check_vfs(tr, p)
    assert len(tr.block()) == 0 and not tr.meta["block_traced"]
    import math
    assert math.isnan(d["bio_reads"])  # not measured by strace


def test_proc_backend_always_runs(tmp_path):
    p = patterns.fio_pattern(tmp_path, file_mib=4, seq_mib=4, rand_ios=10)
    tr, rc = trace.run(p.command(), backend="proc", interval_s=0.05, quiet=True)
    assert rc == 0 and tr.backend == "proc" and len(tr.events) == 0
    assert set(tr.samples["source"]) >= {"proc", "cpu"}


def test_pattern_check_allows_a_split_block_read_not_a_missing_pattern():
    """A direct read crossing an extent boundary of a fragmented file is two block requests:
    three extra in 66 (seen in CI) match, four do not; the bytes must match exactly."""
    import pandas as pd

    from experiments.trace.stage import pattern_check

    exp = {"vfs_reads": 66, "vfs_read_bytes": 1, "unique_files_read": 1, "vfs_read_size_q1": 1,
           "vfs_read_size_median": 1, "vfs_read_size_q3": 1, "vfs_random_reads": 51,
           "vfs_sequential_reads": 15, "bio_random_reads": 51}
    vec = pd.Series({**{k: exp[k] for k in ("vfs_reads", "vfs_read_bytes", "unique_files_read",
                                           "vfs_read_size_q1", "vfs_read_size_median", "vfs_read_size_q3")},
                     "vfs_random_read_pct": 100 * 51 / 66, "bio_random_read_pct": 100 * 51 / 66})
    got = lambda n, b=1: pattern_check(pd.concat([vec, pd.Series({"bio_reads": n, "bio_read_bytes": b})]),  # noqa: E731
                                       exp, True).set_index("quantity")["match"]
    assert got(67)["bio_reads"] and got(69)["bio_reads"]   # 3 splits in 66 (seen in CI): 5 %
    assert not got(70)["bio_reads"]
    # bytes never split; a cold open's metadata reads add whole 4 KiB blocks, at most one per allowed extra request
    assert got(69)["bio_read_bytes"] and got(69, b=1 + 4096)["bio_read_bytes"]
    assert not got(69, b=1 + 4096 * 3 + 1)["bio_read_bytes"]
