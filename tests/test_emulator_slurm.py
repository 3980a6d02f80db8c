"""The emulator through Slurm for real: a one-node Slurm cluster started on this box
(slurmctld + slurmd from a generated slurm.conf in a temporary folder, node address 127.0.0.1,
no munge: auth/none), a two-task run submitted with ``--launcher slurm --submit``, and the
gathered summary checked (both tasks' steps and bytes), as the loopback rendezvous test does.

Skipped, with the reason, when not root or Slurm (``slurm-wlm``, installed by
``env/system-tools.sh`` when root) is missing. The daemons are stopped by the fixture's
finalizer whatever happens, and the test checks that their ports are closed after."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
import yaml

from experiments.emulator.launch import free_port_block

DLRM = {"data": {"train_samples": 4096, "eval_samples": 512}, "model": {"max_cardinality": 100},
        "train": {"steps": 4, "eval_every": 0, "eval_steps": 0, "threads_per_rank": 1},
        "sweep": {"batch_sizes": [64], "ranks": [1]}}
DAEMONS = ("slurmctld", "slurmd", "sbatch", "srun", "scontrol")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _need_slurm():
    if os.geteuid() != 0:
        pytest.skip("the Slurm test cluster needs root (slurmd runs jobs as their user)")
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurm-wlm "
                    "(env/system-tools.sh does when root)")


@contextlib.contextmanager
def one_node_cluster(tmp_path):
    """A running one-node cluster: yields its SLURM_CONF environment and ports; the daemons
    are stopped on the way out, whatever happened."""
    d = tmp_path / "slurm"
    for sub in ("state", "spool", "log"):
        (d / sub).mkdir(parents=True)
    host = socket.gethostname()
    ctl = free_port_block(2)
    sd = ctl + 1
    cpus = os.cpu_count() or 1
    conf = d / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=emutest", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={ctl}",
        f"SlurmdPort={sd}", "AuthType=auth/none", "CredType=cred/none", "SlurmUser=root",
        "SlurmdUser=root", f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d / 'slurmd.pid'}",
        f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SchedulerType=sched/builtin",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "MpiDefault=none",
        "ReturnToService=2", "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
        # `sbatch --wait` polls every 2 s, backing off to 32 s while the poll is under MinJobAge / 2
        # (default 300): 2, Slurm's least, keeps it at 2 s, so a short job is not waited on for 30 s more
        "MinJobAge=2",
        "MaxTasksPerNode=64",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
        f"PartitionName=emutest Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4", ""]))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = [subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.STDOUT, start_new_session=True),
             subprocess.Popen(["slurmd", "-D", "-f", str(conf), "-N", host], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.STDOUT, start_new_session=True)]
    try:
        t0 = time.time()
        while time.time() - t0 < 20:
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
            if p.returncode == 0 and p.stdout.strip() in ("idle", "mixed", "allocated"):
                break
            time.sleep(0.5)
        else:
            logs = "".join((d / "log" / f).read_text()[-1500:] for f in ("slurmctld.log", "slurmd.log")
                           if (d / "log" / f).exists())
            pytest.fail(f"the test cluster did not come up in 20 s: {logs}")
        yield {"conf": conf, "env": env, "ports": (ctl, sd)}
    finally:
        for p in procs:  # the daemons this fixture started, and their process groups
            try:
                os.killpg(p.pid, 15)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait(timeout=5)


@pytest.fixture
def slurm_cluster(tmp_path):
    _need_slurm()
    with one_node_cluster(tmp_path) as c:
        yield c


@pytest.fixture
def dlrm_small(tmp_path, dlrm_zero_data):
    d = dlrm_zero_data
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"seed": 1, "dlrm": DLRM}))
    return d, params


def test_two_tasks_through_slurm(slurm_cluster, dlrm_small, tmp_path):
    data, params = dlrm_small
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "experiments.emulator", "run", "dlrm", "-G", "2", "-B", "64",
                        "--params", str(params), "--data", str(data), "--compute-model", "zero",
                        "--checkpoint-pattern", "none", "--checkpoint-dir", str(tmp_path / "ck"),
                        "--launcher", "slurm", "--nodes", "1", "--tasks-per-node", "2", "--submit",
                        "--out", str(out)], env=slurm_cluster["env"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    script = (out / "emulator.sbatch").read_text()
    assert "srun --nodes=1 --ntasks=2 --ntasks-per-node=2" in script
    assert "scontrol show hostnames" in script and "experiments.emulator gather" in script
    s = json.loads((out / "summary.json").read_text())
    assert s["accelerators"] == 2 and s["nodes"] == 2
    assert set(s["data_bytes_by_rank"]) == {"0", "1"} and all(v > 0 for v in s["data_bytes_by_rank"].values())
    # each task is one emulator node with one rank: bytes per node are the ranks' bytes
    assert s["data_bytes_by_node"] == {"0": s["data_bytes_by_rank"]["0"], "1": s["data_bytes_by_rank"]["1"]}
    assert set(s["au_by_rank"]) == {"0", "1"} and s["bound"] in ("client", "storage", "undetermined")
    from experiments.emulator.report import steps_table
    st = steps_table(out)
    assert sorted(st["rank"].unique()) == [0, 1] and (st.groupby("rank").size() == 4).all()
    assert (out / "tasks" / "task0").is_dir() and (out / "tasks" / "task1").is_dir()


def test_daemons_are_stopped_and_nothing_listens_after(tmp_path):
    _need_slurm()
    with one_node_cluster(tmp_path) as c:
        ports = c["ports"]
        assert all(_listening(p) for p in ports)
    assert not any(_listening(p) for p in ports)


LMDBIO_UNDER_SLURM = """
import json, sys, zlib
from pathlib import Path
from experiments.host import launcher
from experiments.lmdbio import read as lm
dest = Path(sys.argv[1])
prov = lm.build(dest, 40, 3072, 64 << 20, 5)
cfg = lm.LMDBIOConfig(datasets=[{"name": "t", "records": 40, "record_bytes": 3072}], ranks_per_node=2,
                      batch_size=4, coalesce=2, map_size_mib=64, nodes=["all"])
per = lm.run(dest, prov, "coal", 2, cfg, 3072, nodes=1, verify=True)
want = {}
for node in lm.layout(40, 2, 2, 4):
    for local, me in enumerate(node["members"]):
        crc = 0
        for r in range(node["rounds"]):
            first = node["lo"] + r * node["per_round"] + local * 4
            for i in range(first, min(first + 4, node["hi"])):
                crc = zlib.crc32(lm.record_bytes(i, 3072, 5), crc)
        want[me] = crc
print(json.dumps({"rows": per.to_dict("records"), "want": want,
                  "launcher": launcher.record([1], 2), "cmd": launcher.mpi_command(2, ["-m", "x"])}))
"""


def test_an_lmdbio_strategy_over_srun(slurm_cluster, tmp_path):
    """One LMDBIO run (coal, 2 ranks) inside an allocation of the test cluster: the launcher
    takes srun (SLURM_JOB_ID is set), both ranks get their records, env.json's record says so."""
    p = subprocess.run(["salloc", "-N1", "-n2", "--overcommit", sys.executable, "-c", LMDBIO_UNDER_SLURM,
                        str(tmp_path / "lmdbio-t")], env=slurm_cluster["env"], capture_output=True,
                       text=True, timeout=180)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["cmd"][0] == "srun" and got["launcher"]["launcher"] == "srun"
    assert got["launcher"]["allocation_nodes"] == 1 and got["launcher"]["slurm_job_id"]
    rows = {r["proc"]: r for r in got["rows"]}
    assert sorted(rows) == [0, 1] and sum(r["bytes"] for r in rows.values()) == 40 * 3072
    assert {str(k): r["crc32"] for k, r in rows.items()} == got["want"]
