"""Warm launch (experiments.host.warm_launch): each run a process of its own, forked from a parent
that imported the framework once, with the environment, threads and random state a fresh
process has; failures and exit codes reported; PyTorch ranks of one run forked with torchrun's
environment and meeting in one process group."""

import json
import os
import threading
import time

import pytest

from experiments.host import warm_launch
from experiments.workloads import launch


@pytest.fixture(scope="module")
def torch_parent():
    with warm_launch.Parent("torch") as p:
        yield p


def _probe(parent, tmp_path, name, omp):
    out, log = tmp_path / f"{name}.json", tmp_path / f"{name}.txt"
    run = parent.start("experiments.host.warm_launch", ["probe", str(out)], {**os.environ, "OMP_NUM_THREADS": str(omp)}, log)
    assert run.wait(120) == 0, log.read_text()
    return json.loads(out.read_text()), log.read_text(), run


def test_each_run_is_a_process_of_its_own_with_its_environment_and_random_state(torch_parent, tmp_path):
    a, log_a, run_a = _probe(torch_parent, tmp_path, "a", 1)
    b, _, _ = _probe(torch_parent, tmp_path, "b", 2)
    assert a["pid"] != b["pid"] and a["ppid"] == b["ppid"] == torch_parent.info["pid"]
    assert (a["omp"], a["torch_threads"]) == ("1", 1) and (b["omp"], b["torch_threads"]) == ("2", 2)
    assert a["np_draw"] != b["np_draw"] and a["torch_draw"] != b["torch_draw"]   # re-seeded per run
    assert "probe written" in log_a and run_a.cpu_s >= 0
    # nothing but the allowed threads was alive in the parent when it forked
    assert set(torch_parent.info["threads_at_fork"]) <= set(warm_launch.ALLOWED_THREADS)


def test_a_failing_run_reports_its_exit_code_and_output(torch_parent, tmp_path):
    log = tmp_path / "bad.txt"
    run = torch_parent.start("experiments.host.warm_launch", ["no-such-framework"], dict(os.environ), log)
    assert run.wait(120) == 1 and "usage: python -m experiments.host.warm_launch" in log.read_text()


def test_an_unknown_framework_is_refused():
    with pytest.raises(ValueError, match="framework = 'jax'; allowed: torch, tensorflow"):
        warm_launch.Parent("jax")


def test_thread_names_sees_a_running_thread():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert len(warm_launch.thread_names()) >= 1
    finally:
        stop.set()
        t.join()


class _Proc:
    def __init__(self, code_after):
        self.code_after, self.t0, self.killed = code_after, time.monotonic(), False

    def poll(self):
        if self.killed:
            return -9
        c, after = self.code_after
        return c if time.monotonic() - self.t0 >= after else None

    def kill(self):
        self.killed = True

    def wait(self):
        return self.poll()


def test_wait_all_stops_the_other_ranks_when_one_fails():
    procs = [_Proc((0, 60)), _Proc((2, 0))]
    t0 = time.monotonic()
    assert launch.wait_all(procs, time.monotonic() + 60) == [-9, 2] and time.monotonic() - t0 < 5


def test_torch_ranks_get_torchruns_environment():
    envs = launch.rank_envs("dlrm", 2, 1, torchrun_env=True)
    assert [e["RANK"] for e in envs] == ["0", "1"] and {e["WORLD_SIZE"] for e in envs} == {"2"}
    assert {e["LOCAL_WORLD_SIZE"] for e in envs} == {"2"} and len({e["MASTER_PORT"] for e in envs}) == 1
    tf = launch.rank_envs("bert", 2, 1, torchrun_env=False)
    assert [json.loads(e["TF_CONFIG"])["task"]["index"] for e in tf] == [0, 1]


def test_two_dlrm_ranks_forked_from_a_warm_parent_train_in_one_process_group(tmp_path):
    from experiments.settings import config
    from experiments.workloads import data_dlrm

    cfg = config.validate("dlrm", {"data": {"train_samples": 1024, "eval_samples": 256},
                                   "model": {"max_cardinality": 50},
                                   "train": {"steps": 3, "eval_every": 3, "eval_steps": 1},
                                   "sweep": {"batch_sizes": [32], "ranks": [2], "runs": 1}})
    data_dlrm.generate(tmp_path / "data", cfg.data, 1)
    sec = cfg.model_dump(mode="json")
    sec["train"]["checkpoint_dir"] = str(tmp_path / "ck")
    with warm_launch.Parents(multi_rank=True) as ps:
        launch.run_config("dlrm", sec, 32, 2, 1, tmp_path / "data", tmp_path / "run", parents=ps)
    got = launch.collect(tmp_path / "run")
    assert sorted(got["steps"]["rank"].unique()) == [0, 1] and len(got["steps"]) == 6
    assert got["usage"]["launch"] == "warm" and got["usage"]["cpu_s"] > 0
    assert 0 <= launch.startup_seconds(tmp_path / "run") < got["usage"]["wall_s"]
    assert len({r["pid"] for r in got["ranks"]}) == 2


def test_runs_of_several_ranks_start_fresh_unless_the_parents_fork_them():
    assert warm_launch.Parents().serves(1) and not warm_launch.Parents().serves(2)
    assert warm_launch.Parents(multi_rank=True).serves(2)
