"""The emulator end to end on the smoke profile: the ``emulator_patterns`` stage, then each
workload emulated with one and two ranks (the two-rank runs traced), the two-node rendezvous on
loopback, and the storage engineers' notebook; asserting on what they wrote: steps, bytes read
per rank against the rank's share of the data set, AU from the given compute model, checkpoint
writes against the stored pattern (from a trace of the emulator), phases against the real run's.

``SMOKE_STAGES="emulator_patterns" python -m pytest -m smoke tests/test_smoke_emulator.py``
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import Background, smoke_stage
from experiments.workloads.steptimer import PARTS

pytestmark = pytest.mark.smoke
ROOT = Path(__file__).resolve().parent.parent

MEAN, STD = 0.02, 0.002   # the test's compute model: every workload 20 ms +- 2 ms per step


@pytest.fixture(scope="module")
def emu(smoke_run, tmp_path_factory):
    """The smoke project as the package's root, a compute-model file, and the SHORT overrides
    the traced real runs of ``emulator_patterns`` used (so phases can be compared)."""
    smoke_root = smoke_run.root   # the pipeline may still run its later stages there
    if not smoke_run.wait_for("emulator_patterns").exists():
        pytest.skip("stage emulator_patterns not in SMOKE_STAGES")
    mp = pytest.MonkeyPatch()
    mp.setenv("DLIO_ROOT", str(smoke_root))
    tmp = tmp_path_factory.mktemp("emu")
    got = {"root": smoke_root, "tmp": tmp, "model": _model(tmp)}
    yield got
    started = [got.get("engineer")] + [p for k, v in got.items() if isinstance(k, tuple) for p in v[1]]
    for p in started:   # started beside the tests, whose test did not run
        if p is not None and p.poll() is None:
            p.kill()
            p.communicate()
    mp.undo()


def _cfg(emu, w, G, **kw):
    from experiments.emulator import config
    from experiments.emulator.stage import SHORT

    return config.from_params(w, None, None, G, compute_model=emu["model"], checkpoint_pattern="traced",
                              checkpoint_dir=emu["tmp"] / f"ck-{w}-G{G}", overrides=SHORT[w], **kw)


def _model(folder: Path) -> str:
    """The test's compute-model file in ``folder``: every workload MEAN +- STD per step."""
    model = folder / "model.json"
    lin = lambda c: {"coef": {"G": 0.0, "B": 0.0, "c": c}}  # noqa: E731
    model.write_text(json.dumps({"schema": "compute-model/1", "host": "test",
                                 "workloads": {w: {"mean": lin(MEAN), "std": lin(STD)}
                                               for w in ("unet3d", "bert", "dlrm")}}))
    return str(model)


def _traced_runs(emu) -> dict:
    """Each workload at G = 1 and G = 2 (G = 2 traced): {(w, G): (cfg, summary, trace)}."""
    from experiments.host import cache
    from experiments.emulator import run
    from experiments.trace import Tracer

    out = {}
    for w in ("unet3d", "bert", "dlrm"):
        c = _cfg(emu, w, 1)
        if w == "dlrm":   # the device audit's cold run: its data evicted (per file: the box is shared)
            cache.evict([c.data_dir], "fadvise")
        out[(w, 1)] = (c, run(c, emu["tmp"] / f"{w}-G1"), None)
        c = _cfg(emu, w, 2)
        if w == "dlrm":   # and its warm run: the whole data set read twice just before
            for f in sorted(Path(c.data_dir).rglob("*")) * 2:
                if f.is_file():
                    f.read_bytes()
        Path(c.checkpoint_dir).mkdir(parents=True, exist_ok=True)
        with Tracer(watch=[c.data_dir, c.checkpoint_dir], block=False, sample=False, quiet=True) as t:
            s = run(c, emu["tmp"] / f"{w}-G2")
        out[(w, 2)] = (c, s, t.trace)
    return out


def _emulator_runs(base: Path, env: dict) -> dict:
    """:func:`_traced_runs` on the smoke project in a child process (its tracer traces that
    process's children, not the suite's), in ``base``: its result, unpickled (``runs``); then
    the storage engineer's notebook and the two-node runs, started (``started``: what the
    ``emu`` fixture keeps of them)."""
    import pickle

    root = smoke_stage("emulator_patterns").parent.parent
    out = base / "runs.pickle"
    model = _model(base)
    child = {**env, "DLIO_ROOT": str(root), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, __file__, "--traced-runs", str(root), str(base), model, str(out)],
                       cwd=root, env=child, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, (p.stdout + p.stderr)[-6000:]
    started = {"root": root, "tmp": base, "model": model, "env": env}
    started["engineer"] = _start_engineer_notebook(started)
    for w in LOOPBACK:
        started[("loopback", w)] = _start_two_nodes(started, w)
    return {"runs": pickle.loads(out.read_bytes()), "started": started}


# about a minute (160 s in one CI) of emulated training that needs only emulator_patterns: run
# beside the unit tests as soon as that stage is done, instead of at the head of the smoke tests
RUNS = Background(_emulator_runs)


@pytest.fixture(scope="module")
def runs(emu):
    """Each workload at G = 1 and G = 2 (G = 2 traced): {(w, G): (cfg, summary, trace)}."""
    got = RUNS.result()
    # the storage engineer's notebook and the two-node runs need no tracer: the job started them
    # after its runs, to run side by side beside the tests that follow
    for k, v in got["started"].items():
        if k == "engineer" or isinstance(k, tuple):
            emu.setdefault(k, v)
    if "engineer" not in emu:
        emu["engineer"] = _start_engineer_notebook(emu)
    for w in LOOPBACK:
        if ("loopback", w) not in emu:
            emu[("loopback", w)] = _start_two_nodes(emu, w)
    return got["runs"]


def _start_engineer_notebook(emu) -> subprocess.Popen:
    """papermill on notebooks/51-emulator.ipynb (DLRM on the mem tier, a search of 2), started."""
    nb = emu["root"] / "notebooks" / "51-emulator.ipynb"
    out = emu["tmp"] / "51.ipynb"
    env = {**emu.get("env", os.environ), "DLIO_ROOT": str(emu["root"])}
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "papermill"), str(nb), str(out), "-k", "python3", "-f", "params.yaml",
         "-p", "tier", "mem", "-y", "workloads: [dlrm]", "-p", "compute_model", emu["model"],
         "-p", "search_limit", "2", "--log-level", "WARNING"],
        cwd=emu["root"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _steps(run_dir):
    from experiments.emulator.report import steps_table
    return steps_table(run_dir)


def test_patterns_stage_traced_every_workload(stage_results):
    d = stage_results("emulator_patterns")
    from experiments.emulator import checkpoint
    pf = checkpoint.load(str(d / "checkpoint_pattern.json"))
    assert set(pf.workloads) == {"unet3d", "bert", "dlrm", "retinanet"}
    assert pf.require("bert").writers == "all" and pf.require("dlrm").writers == "rank0"
    # RetinaNet (issue 69): rank 0's torch.save of model and optimizer, one file rewritten
    assert pf.require("retinanet").writers == "rank0" and pf.require("retinanet").reuse == "overwrite"
    assert pf.require("dlrm").reuse == "overwrite" and pf.require("bert").reuse == "new"
    assert all(p.summary["writes"] > 0 and p.summary["bytes"] > 0 for p in pf.workloads.values())
    check = pd.read_csv(d / "replay_check.csv")
    assert check["match"].all(), check
    rep = stage_results("emulator_patterns_report")
    cl = json.loads((rep / "claims.json").read_text())
    assert cl[0]["kind"] == "check" and cl[0]["verdict"] == "holds"
    assert (rep / "checkpoint_write_sizes.png").stat().st_size > 5000
    assert not list(d.glob("*.png")) and not (d / "claims.json").exists()   # it measures only


@pytest.mark.background(RUNS)
@pytest.mark.parametrize("w", ["unet3d", "bert", "dlrm"])
@pytest.mark.parametrize("G", [1, 2])
def test_steps_and_compute_follow_the_model(runs, w, G):
    c, s, _ = runs[(w, G)]
    st = _steps(s["run_dir"])
    tc = c.section["train"]
    per_rank = tc["epochs"] * (8 // G // c.batch_size) if w == "unet3d" else tc["steps"]
    assert sorted(st["rank"].unique()) == list(range(G))
    assert (st.groupby("rank").size() == per_rank).all()
    assert set(PARTS) | {"sleep_ns", "sleep_drawn_ns", "epoch", "step", "samples"} <= set(st.columns)
    assert (st["sleep_ns"] >= st["sleep_drawn_ns"]).all() and (st["compute_ns"] >= st["sleep_ns"]).all()
    drawn = st.loc[st["rank"] == 0, "sleep_drawn_ns"] / 1e9
    # every rank draws the same times (a synchronized group), from Normal(MEAN, STD)
    assert (st.groupby("step" if w != "unet3d" else ["epoch", "step"])["sleep_drawn_ns"].nunique() == 1).all()
    assert abs(drawn.mean() - MEAN) < 5 * STD / np.sqrt(len(drawn)) + 1e-9
    if G == 2:   # the per-step barrier ran: the two-rank sleep step (the smoke sleep row runs one rank)
        assert (st["allreduce_ns"] > 0).all()
    assert s["compute_model"]["mean_s"] == pytest.approx(MEAN)
    # Eq 3.2 and 3.1 from the records
    samples = per_rank * c.batch_size * (1 if w == "dlrm" else G)
    assert s["samples"] == samples
    assert s["ideal_compute_s"] == pytest.approx(per_rank * drawn.mean(), rel=1e-6)
    assert s["au"] == pytest.approx(s["ideal_compute_s"] / s["train_s"], rel=1e-9)
    assert 0 < s["au"] <= 1.0 and s["au_pass"] == (s["au"] >= 0.9)
    rd = Path(s["run_dir"])
    assert (rd / "summary.md").read_text().startswith(f"# Emulated {w.upper()}")
    assert not rd.with_name(rd.name + ".partial").exists()


@pytest.mark.background(RUNS)
@pytest.mark.parametrize("G", [1, 2])
def test_unet3d_ranks_read_their_share_of_the_cases(runs, G):
    from experiments.workloads.data_unet3d import read_manifest
    from experiments.workloads.launch import collect

    c, s, _ = runs[("unet3d", G)]
    m = read_manifest(c.data_dir, "train")
    size = (m["bytes_x"] + m["bytes_y"]).to_numpy()
    lo = collect(s["run_dir"])["loader"]
    lo = lo[lo["split"] == "train"]
    per_epoch = 8 // G // c.batch_size * c.batch_size
    for epoch, g in lo.groupby("epoch"):
        sets = [set(x["case"]) for _, x in g.groupby("rank")]
        assert all(len(x) == per_epoch for x in sets) and len(set.union(*sets)) == per_epoch * G
    for r, g in lo.groupby("rank"):
        assert s["data_bytes_by_rank"][str(r)] == int(size[g["case"].astype(int)].sum())


@pytest.mark.background(RUNS)
@pytest.mark.parametrize("G", [1, 2])
def test_dlrm_every_rank_reads_the_global_batches(runs, G):
    c, s, _ = runs[("dlrm", G)]
    assert s["data_bytes_by_rank"] == {str(r): c.section["train"]["steps"] * c.batch_size * 160 for r in range(G)}


@pytest.mark.background(RUNS)
def test_bert_ranks_read_only_their_shard(runs):
    from experiments.trace import vector

    c, s, tr = runs[("bert", 2)]
    files = sorted(str(p) for p in (Path(c.data_dir) / "train").glob("*.tfrecord"))
    pid2rank = {json.loads(f.read_text())["pid"]: json.loads(f.read_text())["rank"]
                for f in Path(s["run_dir"]).glob("rank-r*.json")}
    if tr.backend == "proc":
        pytest.skip("no VFS events with the /proc back end")
    r = vector.vfs_reads(tr.events, [str(Path(c.data_dir) / "train")])
    assert set(r["pid"]) == set(pid2rank)
    facts = {json.loads(f.read_text())["rank"]: json.loads(f.read_text()) for f in Path(s["run_dir"]).glob("rank-r*.json")}
    for pid, g in r.groupby("pid"):
        rank = pid2rank[pid]
        assert set(g["path"]) <= set(files[rank::2])
        # rchar over the first batch + training holds the reads traced inside those two windows
        # (tf.data reads ahead between them too) and a few small /proc, /dev reads
        ns = g["timestamp"].astype("int64")
        inside = sum(((ns >= a) & (ns <= b)) for a, b in facts[rank]["io_windows"].values())
        traced = g.loc[inside > 0, "size"].sum()
        got = s["data_bytes_by_rank"][str(rank)] + facts[rank]["io_first_batch"]["rchar"]
        assert traced > 0 and 0.99 * traced <= got <= traced + 65536


@pytest.mark.background(RUNS)
@pytest.mark.parametrize("w", ["unet3d", "bert", "dlrm"])
def test_checkpoint_writes_follow_the_stored_pattern(runs, emu, w):
    from experiments.emulator import checkpoint
    from experiments.emulator.checkpoint import file_name

    pat = checkpoint.load("traced").require(w)
    c, s, tr = runs[(w, 2)]
    ranks = [json.loads(f.read_text()) for f in sorted(Path(s["run_dir"]).glob("rank-r*.json"))]
    events = {"unet3d": 1, "bert": 2, "dlrm": 2}[w]
    for r in ranks:
        writes = r["checkpoints"]
        if pat.writers == "rank0" and r["rank"] != 0:
            assert writes == []
            continue
        assert len(writes) == events
        for e in writes:
            assert (e["files"], e["writes"], e["bytes"]) == (pat.summary["files"], pat.summary["writes"],
                                                            pat.summary["bytes"])
            for (tmpl, ws), name in zip(pat.plan(0), e["names"]):
                assert name == file_name(tmpl, e.get("tag", "end"), r["rank"], pat.writers)
    if tr.backend == "proc":
        pytest.skip("no VFS events with the /proc back end")
    # the emulator's own trace gives back the stored pattern
    again, _ = checkpoint.derive(tr, [c.checkpoint_dir], w, ranks=2, app_log=s["run_dir"])
    assert (again.writers, again.reuse) == (pat.writers, pat.reuse)
    want = [(f["name"], f["writes"]) for f in pat.files]
    if pat.writers == "all" and not any("{rank}" in n for n, _ in want):
        want = [(f"rank{{rank}}/{n}", ws) for n, ws in want]
    assert [(f["name"], f["writes"]) for f in again.files] == want


@pytest.mark.background(RUNS)
@pytest.mark.parametrize("w", ["unet3d", "bert", "dlrm"])
def test_phases_are_those_of_the_real_run(runs, emu, w):
    """The emulator's phase log (rank 0) has the real run's phases at the same points: the real
    run traced by emulator_patterns used the same schedule (SHORT)."""
    from experiments.workloads.steptimer import read_app_log

    real_dir = emu["root"] / "data" / "emulator_patterns" / w / "run"
    if not real_dir.exists():
        pytest.skip("no real run folder")
    real = json.loads((real_dir / "run.json").read_text())
    c, s, _ = runs[(w, real["ranks"])]
    keys = ("phase", "event", "epoch", "step", "tag")
    seq = lambda f: [tuple(r.get(k) for k in keys) for r in read_app_log(f)]  # noqa: E731
    assert seq(Path(s["run_dir"]) / "app-r0.jsonl") == seq(real_dir / "app-r0.jsonl")


def _cli(emu, *args, wait=True):
    env = {**emu.get("env", os.environ), "DLIO_ROOT": str(emu["root"])}
    cmd = [sys.executable, "-m", "experiments.emulator", *args]
    p = subprocess.Popen(cmd, cwd=emu["root"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p


LOOPBACK = ("unet3d", "bert")


def _start_two_nodes(emu, w: str) -> tuple[Path, list[subprocess.Popen]]:
    """Two launchers of ``w`` on 127.0.0.1 with --nnodes 2 (node ranks 0 and 1), started; and
    the results folder they share."""
    from experiments.emulator.launch import free_port_block

    taken = emu.setdefault("ports", [])   # blocks handed to launchers still starting
    port = free_port_block(4)
    while any(abs(port - q) < 4 for q in taken):
        port = free_port_block(4)
    taken.append(port)
    out = emu["tmp"] / f"two-nodes-{w}"
    common = ["run", w, "-G", "2", "--nnodes", "2", "--rdzv-endpoint", f"127.0.0.1:{port}",
              "--rdzv-id", f"t-{w}", "--compute-model", emu["model"], "--checkpoint-pattern", "traced",
              "--checkpoint-dir", str(emu["tmp"] / f"ck-2n-{w}"), "--out", str(out)]
    if w == "bert":
        common += ["--hosts", "127.0.0.1,127.0.0.1"]
    return out, [_cli(emu, *common, "--node-rank", str(k)) for k in (0, 1)]


@pytest.mark.parametrize("w", LOOPBACK)
def test_two_nodes_on_loopback(emu, w):
    """Two launchers on 127.0.0.1 with --nnodes 2: torchrun's c10d rendezvous (UNET3D), a
    TF_CONFIG over both 'hosts' (BERT); one results folder."""
    if ("loopback", w) not in emu:   # the traced runs did not start it (a selection of tests)
        emu[("loopback", w)] = _start_two_nodes(emu, w)
    out, procs = emu[("loopback", w)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if [p.returncode for p in procs] != [0, 0]:   # each node's whole output: a repr is cut short
        pytest.fail("".join(f"\n--- node {k}: exit {p.returncode}\n{o[-12000:]}"
                            for k, (p, o) in enumerate(zip(procs, outs))), pytrace=False)
    assert "node 1: ranks done" in outs[1] and "Accelerator utilization" in outs[0]
    s = json.loads((out / "summary.json").read_text())
    assert s["accelerators"] == 2 and s["nodes"] == 2 and set(s["data_bytes_by_rank"]) == {"0", "1"}
    assert (out / "output-node0.txt").exists() and (out / "output-node1.txt").exists()
    st = _steps(out)
    assert sorted(st["rank"].unique()) == [0, 1]


@pytest.mark.background(RUNS)
def test_device_audit_flags_the_warm_run_not_the_cold_one(emu, runs):
    """DLRM at G = 1 right after its data was evicted, at G = 2 right after it was read twice,
    on the smoke project's data folder (a real device): the device audit of the first says its
    reads came from the device, of the second from the page cache, which then gives no storage
    verdict. Another process dropping the page cache during the cold run only makes it colder;
    during a warm one it makes it cold, so that one is run again (G = 1, untraced), twice at most.
    The warm run is judged only where the data set is at least 1 MB (the smoke one is not: its
    few kB are outweighed by any other file the ranks read)."""
    from experiments.host import device_audit
    from experiments.emulator import run

    cold, warm = runs[("dlrm", 1)][1], runs[("dlrm", 2)][1]
    a = cold["device_audit"]
    if a["read_from"] == "memory" or not a["device"]:
        pytest.skip(f"the smoke data lies on {a['fstype']}: no block device to audit")
    assert a["read_from"] == "device" and a["read_ratio"] >= device_audit.THRESHOLD, a
    assert a["read_measured_by"] in ("processes", "device") and a["job_read_bytes"] == cold["data_bytes"] > 0
    assert cold["bound"] != "no verdict"
    if warm["device_audit"]["job_read_bytes"] < 2**20:
        # the ranks' block reads count every file they read: a library paged back in after memory
        # pressure (not a drop, which the span detects) outweighs a smoke data set of a few kB, so
        # the warm verdict is asserted on an 8 MB file by tests/test_device_audit.py instead
        return
    tries = 1
    while warm["device_audit"]["cache_dropped_during"] and tries < 3:
        c = _cfg(emu, "dlrm", 1)
        for f in sorted(Path(c.data_dir).rglob("*")) * 2:
            if f.is_file():
                f.read_bytes()
        warm, tries = run(c, emu["tmp"] / f"dlrm-warm-{tries}"), tries + 1
    if warm["device_audit"]["cache_dropped_during"]:
        pytest.skip("another process dropped the page cache during each of 3 warm runs")
    b = warm["device_audit"]
    assert b["read_from"] == "cache" and b["read_ratio"] < device_audit.THRESHOLD, b
    assert warm["bound"] == "no verdict" and warm["bound_unaudited"] in ("storage", "client", "undetermined")
    md = (Path(warm["run_dir"]) / "summary.md").read_text()
    assert "served from the page cache, no storage verdict" in md


def test_storage_engineer_notebook(emu):
    if "engineer" not in emu:
        emu["engineer"] = _start_engineer_notebook(emu)
    p = emu["engineer"]
    log = p.communicate(timeout=600)[0]
    assert p.returncode == 0, log[-4000:]
    s = json.loads((emu["root"] / "data" / "emulator_runs" / "notebook" / "mem-dlrm" / "summary.json").read_text())
    assert s["workload"] == "dlrm" and 0 < s["au"] <= 1
    # tmpfs delivers far more than one small client reads: never storage-bound; the launcher
    # sampled the ranks' threads, and DLRM's time splits into its read and its preprocessing
    assert s["bound"] in ("client", "undetermined"), s["bound_why"]
    assert (Path(s["run_dir"]) / "threads.csv").exists() and s["client_cpu"]["threads"]["groups"]
    assert "read syscalls" in s["where_time_went"] and "preprocessing" in s["where_time_went"]
    found = json.loads((emu["root"] / "data" / "emulator_runs" / "notebook-search" / "dlrm" / "search.json").read_text())
    assert found["trials"] and found["trials"][0]["accelerators"] == 1


if __name__ == "__main__" and sys.argv[1:2] == ["--traced-runs"]:   # _emulator_runs's child process
    import pickle

    _root, _tmp, _model_file, _out = sys.argv[2:6]
    _got = _traced_runs({"root": Path(_root), "tmp": Path(_tmp), "model": _model_file})
    Path(_out).write_bytes(pickle.dumps(_got))
