"""The launcher's pools leave nothing behind, and the one torchrun command builder.

MPICH makes one named shared-memory file per node and job at ``MPI_Init``
(``/dev/shm/mpich_shm_*``) and unlinks it in ``MPI_Finalize``: a rank that is killed, or a pool
stopped by force, used to leave it in /dev/shm (2 MB each). Each case checks the files the
pool's own ranks reported: other jobs on the box (a smoke run beside the tests) have their own.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from experiments.host import launcher

PROGRAM = "experiments.lmdbio.mpi_rank"  # any rank program of experiments.host.mpi_node.serve


def _session_alive(sid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.getsid(int(d)) == sid:
                    out.append(int(d))
            except OSError:
                pass
    return out


def _started(ranks: int) -> launcher.RankPool:
    pool = launcher.RankPool(ranks, PROGRAM)
    segs = pool.shm_segments()
    assert segs and all(os.path.exists(p) for p in segs), pool.ranks_info  # else the test is vacuous
    assert all(p.startswith("/dev/shm/mpich_shm_") for p in segs)
    return pool


def test_a_closed_pool_finalizes_its_ranks_and_leaves_no_shm():
    pool = _started(2)
    pool.close()
    assert pool._proc.returncode == 0
    assert pool.removed_shm == []  # MPI_Finalize unlinked it: nothing for the pool to remove
    assert not any(os.path.exists(p) for p in pool.shm_segments())


def test_a_killed_rank_leaves_no_shm_and_no_process():
    pool = _started(2)
    os.kill(pool.ranks_info[1]["pid"], signal.SIGKILL)  # the OOM killer, or someone
    with pytest.raises(RuntimeError, match="exit"):
        pool.call({})
    pool.close()
    assert pool._proc.returncode != 0
    assert pool.removed_shm == pool.shm_segments()
    assert not any(os.path.exists(p) for p in pool.shm_segments())
    assert _session_alive(pool._proc.pid) == []


def test_ranks_that_do_not_exit_are_stopped_by_force_and_their_shm_removed():
    pool = _started(2)
    os.kill(pool.ranks_info[0]["pid"], signal.SIGSTOP)  # hears no "exit"; its peer waits in Finalize
    t0 = time.monotonic()
    pool.close(grace_s=1)
    assert time.monotonic() - t0 < 20
    assert _session_alive(pool._proc.pid) == []
    assert not any(os.path.exists(p) for p in pool.shm_segments())


def test_pools_close_every_pool(tmp_path):
    with launcher.Pools(PROGRAM) as pools:
        a, b = pools.get(1), pools.get(2)
        assert pools.get(2) is b
        segs = a.shm_segments() + b.shm_segments()
    assert a._proc.returncode == 0 == b._proc.returncode
    assert len(segs) == 2 and not any(os.path.exists(p) for p in segs)


def test_remove_shm_leaves_a_file_in_use(tmp_path):
    used, unused = tmp_path / "used", tmp_path / "unused"
    used.write_bytes(b"x")
    unused.write_bytes(b"x")
    with open(used):
        assert launcher.remove_shm([str(used), str(unused), str(tmp_path / "gone")]) == [str(unused)]
    assert used.exists() and not unused.exists()


def test_the_workloads_torchrun_command_reads_as_the_launchers(tmp_path):
    """Two builders of one torchrun command: the thesis's workloads' own
    (:func:`experiments.workloads.launch.command`: importing the MPI launcher would tie the
    workload stages to it in dvc.yaml) and :func:`launcher.torchrun` (the emulator's). torchrun's
    own parser must read them as the same configuration: ``--nnodes=1`` is its default ``1:1``
    and ``--nproc_per_node`` the same option as ``--nproc-per-node``. One rank: no torchrun."""
    from torch.distributed.run import get_args_parser, parse_min_max_nnodes

    from experiments.workloads import launch

    program = ["-m", "experiments.workloads.dlrm", str(tmp_path)]
    ours = launch.command("dlrm", 4, tmp_path)
    theirs = launcher.torchrun(4, program)
    assert ours[:3] == theirs[:3] == [sys.executable, "-m", "torch.distributed.run"]
    parse = get_args_parser().parse_args
    a, b = vars(parse(ours[3:])), vars(parse(theirs[3:]))
    assert parse_min_max_nnodes(a.pop("nnodes")) == parse_min_max_nnodes(b.pop("nnodes")) == (1, 1)
    assert a == b and b["standalone"] and b["nproc_per_node"] == "4"
    assert b["training_script"] == "experiments.workloads.dlrm" and b["module"]
    assert launch.command("dlrm", 1, tmp_path) == [sys.executable, *program]


def test_the_paper_profile_spreads_lmdbio_and_deepio_over_the_allocation(monkeypatch):
    """profiles/paper.yaml's ``nodes: [1, all]``: one node off Slurm (as the default profile);
    in an allocation of 4 nodes each run once on 1 node and, where P >= 4, on 4 through srun."""
    from experiments.settings import config
    from experiments.pipeline import profile

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    params = profile.render("paper")
    for section in ("lmdbio", "deepio"):
        assert params[section]["nodes"] == [1, "all"]
        assert launcher.resolve_nodes(config.validate(section, params[section]).nodes) == [1]
    monkeypatch.setenv("SLURM_JOB_ID", "9")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "4")
    for section in ("lmdbio", "deepio"):
        cfg = config.validate(section, profile.render("paper")[section])
        assert launcher.resolve_nodes(cfg.nodes) == [1, 4]
        assert [(p, n) for p in cfg.procs for n in (1, 4) if n <= p][-1] == (max(cfg.procs), 4)
    assert launcher.mpi_command(8, ["-m", "x"], 4)[:3] == ["srun", "--nodes=4", "--ntasks=8"]


SBATCH = Path(__file__).resolve().parent.parent / "env" / "slurm" / "paper.sbatch"


def test_the_sbatch_script_stops_outside_an_allocation():
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    p = subprocess.run(["bash", str(SBATCH)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "SLURM_JOB_ID is not set" in p.stderr


def test_the_sbatch_script_keeps_only_tiers_every_node_sees(tmp_path):
    """Its params.yaml step on the paper profile: the /dev/shm tier out, SHARED_TIER in."""
    from experiments.pipeline import profile

    text = SBATCH.read_text()
    code = text.split("<<'PYEOF'\n", 1)[1].split("\nPYEOF\n", 1)[0]
    shutil.copytree(Path(__file__).resolve().parent.parent / "profiles", tmp_path / "profiles")
    env = {**os.environ, "DLIO_ROOT": str(tmp_path), "SHARED_TIER": "/lustre/me/dlio"}
    profile.write("paper", tmp_path / "params.yaml")
    assert any(t["path"].startswith("/dev/shm") for t in yaml.safe_load((tmp_path / "params.yaml").read_text())["tiers"])
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = yaml.safe_load((tmp_path / "params.yaml").read_text())
    assert out["tiers"] == [{"name": "disk", "path": "data/tiers/disk"},
                            {"name": "shared", "path": "/lustre/me/dlio"}]
    assert out["lmdbio"]["nodes"] == [1, "all"] and out["lmdbio"]["procs"][-1] == 32


def _rank_env(pool) -> list[dict]:
    out = []
    for info in pool.ranks_info.values():
        raw = Path(f"/proc/{info['pid']}/environ").read_bytes().split(b"\0")
        out.append(dict(x.decode().split("=", 1) for x in raw if b"=" in x))
    return out


def test_ranks_that_outnumber_the_cores_wait_by_sleeping(monkeypatch):
    """More ranks than cores: MPICH's waits yield by sleeping (its heavy yield), else the polling
    ranks take the cores from the one with work; as many ranks as cores keep MPICH's default;
    a value the user set is kept; env.json says which."""
    monkeypatch.delenv(launcher.HEAVY_YIELD, raising=False)
    cores = len(os.sched_getaffinity(0))
    with launcher.RankPool(cores + 1, PROGRAM) as pool:
        assert {e.get(launcher.HEAVY_YIELD) for e in _rank_env(pool)} == {"1"}
    with launcher.RankPool(1, PROGRAM) as pool:
        assert {e.get(launcher.HEAVY_YIELD) for e in _rank_env(pool)} == {None}
    assert "outnumber this host's" in launcher.record([1])["oversubscribed_waits"]
    monkeypatch.setenv(launcher.HEAVY_YIELD, "0")
    with launcher.RankPool(cores + 1, PROGRAM) as pool:
        assert {e.get(launcher.HEAVY_YIELD) for e in _rank_env(pool)} == {"0"}
    assert launcher.record([1])["oversubscribed_waits"].endswith("(set by the user)")
