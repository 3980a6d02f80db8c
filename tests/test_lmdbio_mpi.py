"""LMDBIO's and DeepIO's MPI programs (mpich from the venv) on tiny inputs, and the launcher.

Each strategy at 1, 2 and 4 ranks must deliver to every rank exactly the records, in order, of
the plan the multiprocessing implementation followed (:func:`experiments.lmdbio.read.layout`):
the rank's CRC-32 over what it consumed against the records' bytes from the seed, and its
byte count. The node-count validation stops before any work, naming parameter, value and
allocation.
"""

import json
import zlib

import numpy as np
import pandas as pd
import pytest

from experiments.settings import config
from experiments.host import launcher
from experiments.settings.config import ConfigError
from experiments.deepio import experiment as dio
from experiments.deepio import loader_rank
from experiments.lmdbio import read as lm

RECORDS, SIZE, SEED, BATCH, RPN = 150, 3072, 3, 8, 2


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    dest = tmp_path_factory.mktemp("lmdbio") / "lmdbio-tiny"
    return dest, lm.build(dest, RECORDS, SIZE, 64 << 20, SEED)


@pytest.fixture(scope="module")
def pools():
    with launcher.Pools(lm.RANK_PROGRAM) as p:
        yield p


def _cfg(**kw):
    return lm.LMDBIOConfig(datasets=[{"name": "tiny", "records": RECORDS, "record_bytes": SIZE}],
                           ranks_per_node=RPN, batch_size=BATCH, coalesce=2, map_size_mib=64, **kw)


def expected(procs: int) -> dict[int, tuple[int, int]]:
    """Per rank: (CRC-32 of its records in the order it consumes them, bytes)."""
    out = {}
    for node in lm.layout(RECORDS, procs, RPN, BATCH):
        for local, me in enumerate(node["members"]):
            crc, n = 0, 0
            for r in range(node["rounds"]):
                first = node["lo"] + r * node["per_round"] + local * BATCH
                for i in range(first, min(first + BATCH, node["hi"])):
                    crc = zlib.crc32(lm.record_bytes(i, SIZE, SEED), crc)
                    n += 1
            out[me] = (crc, n * SIZE)
    return out


@pytest.mark.parametrize("procs", [1, 2, 4])
def test_every_strategy_gives_every_rank_its_records(db, pools, procs):
    dest, prov = db
    want = expected(procs)
    assert sum(b for _, b in want.values()) == RECORDS * SIZE
    for strategy in lm.STRATEGIES:  # the ranks started once serve every strategy, as in measure()
        per = lm.run(dest, prov, strategy, procs, _cfg(), SIZE, verify=True, pool=pools.get(procs))
        got = {int(r.proc): (int(r.crc32), int(r.bytes)) for r in per.itertuples()}
        assert got == want, strategy
        # nodes of RPN consecutive ranks, the first of each the reader
        assert per.sort_values("proc")["node"].tolist() == [p // RPN for p in range(procs)]
        if strategy != "lmdb":
            assert per.loc[per["reader"], "proc"].tolist() == list(range(0, procs, RPN))
        assert (per["t1"] >= per["t0"]).all() and per["t0"].min() == 0


def test_sleeping_hand_over_sleeps_and_delivers_the_same(db, pools):
    dest, prov = db
    per = lm.run(dest, prov, "lmm", 2, _cfg(handover="sleep"), SIZE, verify=True, pool=pools.get(2))
    assert {int(r.proc): (int(r.crc32), int(r.bytes)) for r in per.itertuples()} == expected(2)
    # every round's two hand-overs sleep at least once per rank pair (pipes), where Win.Fence polls
    rounds = lm.layout(RECORDS, 2, RPN, BATCH)[0]["rounds"]
    assert per["cs_voluntary"].sum() >= rounds
    # ... and those sleeps are counted as the hand-over's, apart from the switches of the reads
    assert per["cs_wait_voluntary"].sum() >= rounds
    assert (per["cs_wait_voluntary"] <= per["cs_voluntary"]).all()
    assert (per["cs_wait_involuntary"] <= per["cs_involuntary"]).all()


def test_stagger_tokens_with_more_readers_than_the_group(db):
    dest, prov = db
    cfg = _cfg().model_copy(update={"ranks_per_node": 1})  # 3 readers, 1 token
    per = lm.run(dest, prov, "stag", 3, cfg, SIZE, verify=True)
    assert per["reader"].all() and int(per["bytes"].sum()) == RECORDS * SIZE


def test_a_pool_closes_its_ranks(db):
    dest, prov = db
    pool = launcher.RankPool(2, lm.RANK_PROGRAM)
    lm.run(dest, prov, "coal", 2, _cfg(), SIZE, pool=pool)
    pool.close()
    assert pool._proc.poll() == 0  # every rank left at "exit", mpiexec with them


def test_a_failing_rank_stops_the_run_with_its_error(db, tmp_path):
    _, prov = db
    with pytest.raises(RuntimeError, match=r"(?s)lmdbio lmm P=2 nodes=1.*lmdb.Error.*No such file"):
        lm.run(tmp_path / "lmdbio-missing", prov, "lmm", 2, _cfg(), SIZE)


def test_deepio_ranks_serve_what_one_process_would(tmp_path):
    rng = np.random.default_rng(0)
    sizes = rng.integers(100, 400, 40)
    data = rng.integers(0, 256, int(sizes.sum()), dtype=np.uint8).tobytes()
    (tmp_path / "samples.bin").write_bytes(data)
    index = pd.DataFrame({"offset": np.concatenate([[0], np.cumsum(sizes)[:-1]]), "bytes": sizes})
    for mode in ("ordered", "opportunistic"):
        res = dio.run_loader(tmp_path / "samples.bin", index, mode, 2, 0.5, 4, 7)
        spec = {"path": str(tmp_path / "samples.bin"), "mode": mode, "ratio": 0.5, "chunk": 4, "seed": 7}
        alone = [loader_rank.serve(p, 2, spec, index["offset"].to_numpy(), sizes) for p in range(2)]
        assert res["served"] == 40 == sum(len(a["order"]) for a in alone)
        assert res["bytes"] == sum(a["bytes"] for a in alone)
        assert res["requests"] == sum(a["requests"] for a in alone)
    assert not list(tmp_path.glob(".deepio-run-*"))  # the run's folder is removed


def test_node_counts_beyond_the_allocation_stop_before_any_work(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    tiny = {"datasets": [{"name": "t", "records": 10, "record_bytes": 3072}]}
    with pytest.raises(ConfigError, match=r"lmdbio\.nodes = \[1, 2\].*nodes = 2 nodes.*only this host \(1 node\)"):
        config.validate("lmdbio", {**tiny, "nodes": [1, 2]})
    with pytest.raises(ConfigError, match=r"deepio\.nodes = \[4\].*nodes = 4 nodes"):
        config.validate("deepio", {"nodes": [4]})
    assert launcher.resolve_nodes(["all", 1]) == [1]
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    assert _cfg(nodes=[1, 2]).nodes == [1, 2]
    assert launcher.resolve_nodes([1, "all"]) == [1, 2]
    with pytest.raises(ConfigError, match=r"lmdbio\.nodes = \[4\].*nodes = 4 nodes, but the Slurm allocation 77 "
                                          r"holds 2 node\(s\)"):
        config.validate("lmdbio", {**tiny, "nodes": [4]})
    with pytest.raises(ConfigError, match=r"nodes = 0"):
        launcher.check_nodes([0], "lmdbio.nodes")


def test_launch_commands(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    cmd = launcher.mpi_command(4, ["-m", "x"])
    assert cmd[0].endswith("mpiexec") and cmd[1:3] == ["-n", "4"] and cmd[-2:] == ["-m", "x"]
    with pytest.raises(ConfigError, match="nodes = 2"):
        launcher.mpi_command(4, ["-m", "x"], nodes=2)
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    cmd = launcher.mpi_command(4, ["-m", "x"], nodes=2)
    assert cmd[:3] == ["srun", "--nodes=2", "--ntasks=4"] and "--mpi=pmi2" in cmd
    rec = launcher.record([1, 2], 4)
    assert rec["launcher"] == "srun" and rec["allocation_nodes"] == 2 and rec["ranks_per_node"] == 4
    assert rec["mpi"]["library"].startswith("MPICH") and rec["mpi"]["mpi4py"]
    t = launcher.torchrun(2, ["-m", "y"], nnodes=2, rdzv_endpoint="h:1", rdzv_id="i")
    assert "--rdzv-endpoint=h:1" in t and "--nproc-per-node=2" in t and "--standalone" not in t
    assert "--standalone" in launcher.torchrun(2, ["-m", "y"])
    json.dumps(rec)  # env.json
