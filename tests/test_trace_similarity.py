"""Eq 4.1/4.2 properties and Listing A.1 on tiny inputs."""

import math
import random

import pandas as pd
import pytest

from experiments.trace import similarity as S
from experiments.trace import vector as V
from experiments.trace.schema import TraceError


def rand_vector(rng, zeros=0.2):
    return {k: (0.0 if rng.random() < zeros else rng.uniform(0, 1e9)) for k in V.KEYS}


def test_table_4_2_has_19_components_with_weights_2_read_1_write():
    assert len(V.COMPONENTS) == 19
    assert [w for _, _, w in V.COMPONENTS] == [2] * 11 + [1] * 8


@pytest.mark.parametrize("seed", range(20))
def test_self_similarity_is_one_and_symmetric(seed):
    rng = random.Random(seed)
    u, v = rand_vector(rng), rand_vector(rng)
    assert S.weighted_cosine(u, u) == pytest.approx(1.0)
    assert S.weighted_cosine(u, v) == pytest.approx(S.weighted_cosine(v, u))
    assert 0.0 <= S.weighted_cosine(u, v) <= 1.0


def test_scaling_changes_similarity_and_differences_are_penalized():
    u = {k: 100.0 for k in V.KEYS}
    v = dict(u, vfs_reads=50.0)
    assert S.weighted_cosine(u, v) < 1.0
    assert S.weighted_cosine(u, {k: 2 * x for k, x in u.items()}) == pytest.approx(1.0)  # all ratios equal


def test_zero_on_both_sides_is_left_out():
    u = {k: 0.0 for k in V.KEYS}
    u.update(vfs_reads=10.0, vfs_read_bytes=40960.0)
    v = dict(u, vfs_reads=5.0)
    reads_only = {k: u[k] for k in ("vfs_reads", "vfs_read_bytes")}
    w_only = {k: v[k] for k in ("vfs_reads", "vfs_read_bytes")}
    # the 17 zero-on-both components change nothing: same as a two-component vector
    expect = (2 * 0.5 + 2 * 1) / (math.sqrt(2 * 1 + 2 * 1) * math.sqrt(2 * 0.25 + 2 * 1))
    assert S.weighted_cosine(u, v) == pytest.approx(expect)
    assert S.weighted_cosine(reads_only, w_only) == pytest.approx(expect)  # missing keys: NaN, left out
    t = S.component_table(u, v)
    assert (t.set_index("key").loc["vfs_writes", "note"]).startswith("zero on both")
    assert not t.set_index("key").loc["vfs_writes", "used"]


def test_zero_on_one_side_gets_the_full_penalty():
    u = {k: 1.0 for k in V.KEYS}
    v = dict(u, bio_writes=0.0)
    n = S.normalized(u, v)["bio_writes"]
    assert n == (1.0, 0.0)
    total = sum(V.WEIGHTS.values())
    expect = (total - 1) / (math.sqrt(total) * math.sqrt(total - 1))
    assert S.weighted_cosine(u, v) == pytest.approx(expect)


def test_weights_read_twice_write():
    base = {k: 1.0 for k in V.KEYS}
    read_off = dict(base, vfs_reads=0.0)
    write_off = dict(base, vfs_writes=0.0)
    assert S.weighted_cosine(base, read_off) < S.weighted_cosine(base, write_off)


def test_all_zero_vectors_are_identical_and_one_zero_side_is_zero():
    z = {k: 0.0 for k in V.KEYS}
    assert S.weighted_cosine(z, z) == 1.0
    one = dict(z, vfs_reads=3.0)
    assert S.weighted_cosine(z, one) == 0.0


def test_difference_pct_as_in_table_5_1():
    u = {k: 1.0 for k in V.KEYS}
    u["vfs_reads"], v_reads = 80745.0, 80960.0
    v = dict(u, vfs_reads=v_reads)
    t = S.component_table(u, v, ("UNET3D", "MLPerf")).set_index("key")
    assert t.loc["vfs_reads", "difference_pct"] == pytest.approx(0.27, abs=0.005)  # the thesis's 0.27 %
    text = S.format_table(t.reset_index(), ("UNET3D", "MLPerf"))
    assert "80,745" in text and "0.27 %" in text


def test_from_mapping_rejects_unknown_and_bad_values():
    with pytest.raises(TraceError, match="unknown component"):
        V.from_mapping({"vfs_reads": 1, "reads": 2})
    with pytest.raises(TraceError, match="must be a number"):
        V.from_mapping({"vfs_reads": "many"})
    with pytest.raises(TraceError, match=">= 0"):
        V.from_mapping({"vfs_reads": -1})
    assert math.isnan(V.from_mapping({"vfs_reads": 1})["bio_reads"])


def test_listing_a1_counts():
    rows = [  # pid 1 sequential run of 3, then a jump; pid 2 interleaved, sequential on its own
        {"PID": 1, "SECTOR": 0, "BYTES": 4096},
        {"PID": 2, "SECTOR": 1000, "BYTES": 512},
        {"PID": 1, "SECTOR": 8, "BYTES": 4096},
        {"PID": 2, "SECTOR": 1001, "BYTES": 512},
        {"PID": 1, "SECTOR": 16, "BYTES": 4096},
        {"PID": 1, "SECTOR": 100, "BYTES": 4096},
    ]
    assert V.num_ranseq_accesses(rows) == (3, 3)
    df = pd.DataFrame({"pid": [r["PID"] for r in rows], "sector": [r["SECTOR"] for r in rows],
                       "size": [r["BYTES"] for r in rows]})
    assert V.num_ranseq_accesses(df) == (3, 3)


def test_vfs_sequentiality_per_pid_and_file():
    df = pd.DataFrame({"pid": [1, 1, 1, 1, 2], "path": ["/a", "/a", "/b", "/a", "/a"],
                       "offset": [0.0, 10.0, 0.0, 20.0, float("nan")], "size": [10.0] * 5})
    assert V.vfs_sequentiality(df) == (2, 2, 1)


def test_file_filters(tmp_path):
    s = pd.Series([str(tmp_path / "data" / "x.npy"), str(tmp_path / "ckpt" / "m.pt"), "/proc/self/io",
                   "pipe:[1]", None, str(tmp_path / "data2" / "y.npy")])
    assert V.file_filter(s, None).tolist() == [True, True, False, False, False, True]
    assert V.file_filter(s, [tmp_path / "data"]).tolist() == [True, False, False, False, False, False]
    assert V.file_filter(s, ["*.npy"]).tolist() == [True, False, False, False, False, True]


@pytest.mark.parametrize("workload", ["unet3d", "bert", "dlrm"])
def test_eq41_on_the_thesis_tables_gives_its_similarity(workload):
    from experiments.settings import reference as R
    t = R.HOVON_TABLES_5[workload]
    sim = S.weighted_cosine(t["workload"], t["emulation"])
    assert round(sim, 2) == R.HOVON_SIMILARITY[workload]


def test_difference_column_of_table_5_1():
    from experiments.settings import reference as R
    t = R.HOVON_TABLES_5["unet3d"]
    d = S.component_table(t["workload"], t["emulation"]).set_index("key")["difference_pct"]
    printed = {"vfs_read_bytes": 7.99, "unique_files_read": -20.0, "vfs_read_size_q1": 44.05,
               "vfs_write_size_median": 2724.47, "bio_writes": -9.13}  # (percent rows were rounded in print)
    for k, v in printed.items():
        assert d[k] == pytest.approx(v, abs=0.01), k
