"""LLM checkpointing as MLPerf Storage defines it (experiments.emulator.llm_*)."""

import os

import pytest

from experiments.emulator import llm_layout as L


@pytest.mark.parametrize("name", sorted(L.PUBLISHED_GIB))
def test_full_size_totals_match_the_published_sizes(name):
    lo = L.layout(name)
    assert lo.total_bytes / 2**30 == pytest.approx(L.PUBLISHED_GIB[name], rel=0.01)
    # the optimizer is 12 B a parameter, the weights 2 B: 6 : 1 (norms replicated over TP aside)
    assert lo.kind_bytes("optim") / lo.kind_bytes("model") == pytest.approx(6, rel=0.02)


def test_zero3_names_and_counts_per_rank():
    lo = L.layout("llama3-70b")           # TP 8 x PP 1 x DP 8: 64 ranks, 2 files each
    assert lo.ranks == 64 and all(len(fs) == 2 for fs in lo.files)
    assert [f.name for f in lo.files[11]] == ["zero_pp_rank_1_mp_rank_3_model_states.pt",
                                              "zero_pp_rank_1_mp_rank_3_optim_states.pt"]
    # ZeRO-3 shards the weights over DP: every rank's model file is the same size
    assert len({fs[0].bytes for fs in lo.files}) == 1


def test_zero1_layer_files_are_written_by_dp_rank_0_only():
    lo = L.layout("llama3-405b", scale=4096)   # TP 8 x PP 32 x DP 2
    m = lo.model
    model_files = [f for fs in lo.files for f in fs if f.kind == "model"]
    # every layer (embedding, 126 transformer layers, head, norm) once per TP rank
    assert len(model_files) == (m.layers + 3) * m.tp
    assert all(len(fs) == 1 for fs in lo.files[m.mp:])          # DP rank 1: optimizer only
    assert [f.name for f in lo.files[0]][:2] == ["layer_0-model_0_model_states.pt",
                                                 "layer_1-model_0_model_states.pt"]
    last = lo.files[m.mp - 1]                                     # last stage, last TP rank
    assert last[-2].name == f"layer_{m.layers + 2}-model_{m.mp - 1}_model_states.pt"
    assert sum(len(fs) for fs in lo.files) == len(model_files) + lo.ranks


def test_scale_keeps_names_counts_and_mix():
    full, small = L.layout("llama3-8b"), L.layout("llama3-8b", scale=1000)
    assert [[f.name for f in fs] for fs in full.files] == [[f.name for f in fs] for fs in small.files]
    assert [len(f.tensors) for f in small.files[0]] == [len(f.tensors) for f in full.files[0]]
    assert small.total_bytes == pytest.approx(full.total_bytes / 1000, rel=0.001)
    # fewer ranks of the same model: same total, more bytes a rank
    four = L.layout("llama3-8b", ranks=4, scale=1000)
    assert four.total_bytes == pytest.approx(small.total_bytes, rel=0.001)


@pytest.mark.parametrize("kw, word", [({"name": "llama3-7b"}, "allowed: llama3-8b"),
                                      ({"name": "llama3-70b", "ranks": 12}, "multiple of 8"),
                                      ({"name": "llama3-8b", "scale": 0.5}, ">= 1")])
def test_bad_layout_input_names_value_and_allowed(kw, word):
    with pytest.raises(ValueError, match=word):
        L.layout(**kw)


# ---------------------------------------------------------------- checks before any write

def test_run_refused_for_disk_and_memory_before_writing(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from experiments.settings.config import ConfigError
    from experiments.emulator import llm_checkpoint as C

    lo = L.layout("llama3-8b", scale=1000)
    run_dir = tmp_path / "llm"
    monkeypatch.setattr(C.os, "statvfs", lambda p: SimpleNamespace(f_bavail=100, f_frsize=4096))
    with pytest.raises(ConfigError, match=r"--tier = .*need 0\.\d+ GB but 0\.00 GB are free"):
        C.check(lo, run_dir, 3)
    monkeypatch.undo()
    monkeypatch.setattr(C, "mem_available", lambda: 1 << 20)
    with pytest.raises(ConfigError, match=r"--ranks = 8: the ranks need .* GB of memory"):
        C.check(lo, run_dir, 3)
    assert not run_dir.exists()


@pytest.mark.parametrize("argv, word", [
    (["--model", "llama3-7b"], "--model = 'llama3-7b': unknown model; allowed: llama3-8b"),
    (["--model", "llama3-405b", "--ranks", "100"], "--ranks = 100: llama3-405b has TP 8 x PP 32"),
    (["--model", "llama3-8b", "--scale", "0.5"], "--scale = 0.5"),
    (["--model", "llama3-8b", "--tier", "FILE/sub"], "not a writable folder"),
])
def test_cli_bad_input_stops_with_one_line(argv, word, tmp_path, capsys):
    from experiments.emulator.__main__ import main

    f = tmp_path / "file"
    f.write_text("x")
    argv = [a.replace("FILE", str(f)) for a in argv]
    if "--tier" not in argv:
        argv += ["--tier", str(tmp_path)]
    assert main(["checkpoint", *argv, "--scale" if "--scale" not in argv else "--checkpoints",
                 "100000" if "--scale" not in argv else "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err
    assert not list(tmp_path.glob("llm-*"))


# ---------------------------------------------------------------- runs (2 MPI ranks, tiny)

@pytest.fixture(scope="module")
def pool():
    from experiments.host import launcher
    from experiments.emulator import llm_checkpoint as C

    with launcher.RankPool(2, C.RANK_PROGRAM) as p:
        yield p


def _pagecache_drops() -> int | None:
    """How many times the page cache was dropped since boot (/proc/vmstat; None where not kept)."""
    try:
        for line in open("/proc/vmstat"):
            if line.startswith("drop_pagecache "):
                return int(line.split()[1])
    except OSError:
        pass
    return None


@pytest.mark.parametrize("evict, expect", [("none", "cache-served"), ("fadvise", "cold")])
def test_read_phase_flagged_cache_served_without_eviction(evict, expect, pool, tmp_path, monkeypatch):
    from experiments.host import cache, dstat
    from experiments.emulator import llm_checkpoint as C

    if cache.memory_backed(tmp_path):
        pytest.skip("tmp_path is memory-backed: nothing can be evicted there")
    # The audit counts this process and its descendants as the job's processes. In the test
    # session those include the smoke pipeline's dvc and notebooks, whose reads on the same disk
    # would count as the job's (CI of fbe7425), and this process's own counters take in every
    # child it reaps: count the pool's ranks only, which do the reads.
    real, ranks = dstat.descendants, [r["pid"] for r in pool.ranks_info.values()]
    monkeypatch.setattr(dstat, "descendants", lambda pid: [q for r in ranks for q in real(r)]
                        if pid == os.getpid() else real(pid))
    lo = L.layout("llama3-8b", ranks=2, scale=50000)
    for attempt in range(3):
        # the smoke pipeline beside the unit tests drops the whole page cache (drop_caches) in
        # its stages: a run during which that happened says nothing of this one's eviction
        before = _pagecache_drops()
        work = tmp_path / f"llm{attempt}"
        r = C.run_variant(lo, work, evict=evict, checkpoints=2, pause_s=0, pool=pool)
        dropped = _pagecache_drops() != before
        # the device audit counts the whole device: another process's reads in this short window
        # (the smoke pipeline's, on the same disk) read as the device serving a warm phase; a
        # fault of ours runs in every attempt and still fails below
        heard = r["device"]["read"]["read_from"] == ("cache" if expect == "cache-served" else "device")
        if not dropped and heard:
            break
    else:
        if dropped:
            pytest.skip("another process dropped the page cache during the last of 3 runs")
    assert r["read"] == expect
    assert (r["resident_fraction"] > cache.COLD_LIMIT) == (expect == "cache-served")
    assert C.verdict(r["read"]).startswith("no storage verdict") == (expect == "cache-served")
    # the device audit agrees with the residency: the device served none of a warm read phase
    # and all of a cold one; the fsynced writes reached it
    a = r["device"]
    assert a["read"]["read_from"] == ("cache" if expect == "cache-served" else "device"), a["read"]
    assert a["read"]["job_read_bytes"] == r["steps"].query("op == 'read'")["bytes"].sum() > 0
    assert a["write"]["written_to"] == "device", a["write"]
    f = r["files"]
    # both phases, every rank's files of every checkpoint, with their sizes on disk
    assert len(f) == 2 * 2 * 2 * 2 and (f["bytes"] >= f.groupby("file")["bytes"].transform("min")).all()
    w = f[f["op"] == "write"]
    assert (w["fsync_s"] > 0).all() and (w["open_to_close_s"] >= w["fsync_s"]).all()
    per, run = C.metrics(r["steps"])
    # the rules' duration is the slowest rank's; DLIO's figure uses rank 0's
    assert (per["duration_s"] >= per["rank0_s"]).all()
    assert run["run_throughput_GiBps"].gt(0).all() and set(run["op"]) == {"write", "read"}
    assert not work.exists()


def test_metrics_follow_the_rules():
    import pandas as pd

    from experiments.emulator import llm_checkpoint as C

    s = pd.DataFrame({"op": "write", "step": [1, 1, 2, 2], "rank": [0, 1, 0, 1],
                      "io_s": [1.0, 2.0, 1.0, 1.0], "bytes": [C.GiB] * 4})
    per, run = C.metrics(s)
    assert list(per["duration_s"]) == [2.0, 1.0] and list(per["throughput_GiBps"]) == [1.0, 2.0]
    assert run["run_throughput_GiBps"].item() == pytest.approx(4 / 3)      # 4 GiB over 3 s
    assert run["dlio_rank0_mean_GiBps"].item() == pytest.approx(2.0)       # mean of 2/1, 2/1


def test_burst_buffer_stalls_when_the_drain_lags(tmp_path):
    from experiments.emulator import llm_burst_buffer as B

    lo = L.layout("llama3-8b", scale=100000)       # ~1.5 MB a checkpoint, 16 files
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir(), slow.mkdir()
    # the slow tier at 8 MB/s: a drain takes ~0.2 s, longer than the 0.02 s step interval
    df = B.stalls(lo, fast, slow, [1, 2], 0.02, 2, slow_MBps=8)
    d, k1 = df[df["mode"] == "direct"], df[df["keep"] == 1]
    assert (d["stall_s"] >= d["bytes"] / 8e6 * 0.95).all()      # held to the slow rate
    assert k1["wait_s"].iloc[1:].min() > 0.1                     # keep 1: waits for the drain
    assert B.smallest_keep(df) == 2
    assert not any(fast.iterdir()) and not any(slow.iterdir())


def test_burst_buffer_runs_in_rounds_and_a_decide_run_keeps_them(tmp_path, monkeypatch):
    """The burst buffer on the one loop: direct and each keep once a round in a seeded order, its
    rows one per checkpoint with their run; when make decide appends to the stage (it buys
    variant runs), the burst buffer's rows of before are kept and nothing runs."""
    from experiments.emulator import llm_burst_buffer as B, llm_checkpoint as C, llm_stage as S
    from experiments.output import results
    from experiments.repeats import purchases as P
    from experiments.settings import paths

    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    dirs = {"mem": tmp_path / "fast", "disk": tmp_path / "slow"}
    for d in dirs.values():
        d.mkdir()
    cfg = C.LLMCheckpointConfig(scale=100000, checkpoints=2, runs=2, pause_s=0,
                                burst_buffer={"keeps": [1, 2], "interval_s": 0, "checkpoints": 2})
    df = S.burst_buffer(cfg, dirs, seed=3)
    assert len(df) == 2 * 3 * 2 and df.groupby(["mode", "keep"], dropna=False)["run"].nunique().eq(2).all()
    assert list(df["mode"][:4]) == ["direct"] * 4 and sorted(df["keep"].dropna().unique()) == [1, 2]
    assert df["run"].nunique() == 6 and {"repeat", "round_order", "made_by"} <= set(df)
    d = paths.results_dir("llm_checkpoint")
    d.mkdir(parents=True)
    df.to_csv(d / "burst_buffer.csv", index=False)
    results.write_json(d / "rounds.json", {})
    monkeypatch.setenv(P.ENV, "llm_checkpoint")
    monkeypatch.setattr(B, "run_mode", lambda *a, **k: pytest.fail("a decide run ran the burst buffer again"))
    again = S.burst_buffer(cfg, dirs, seed=3)
    assert again[["mode", "run", "stall_s"]].equals(df[["mode", "run", "stall_s"]])


def test_bound_verdict_against_fio_and_none_for_cache_served_reads():
    import pandas as pd

    from experiments.emulator import llm_checkpoint as C, llm_report as R

    rows = [{"tier": "disk", "variant": v, "read": rd, "op": op, "step": k, "rank": r,
             "io_s": 1.0, "bytes": C.GiB // 2, "cpu_s": 0.5, "demand_s": 0.95}
            for v, rd in (("fsync", "cold"), ("no-fsync", "cache-served")) for op in ("write", "read")
            for k in (1, 2) for r in (0, 1)]
    per, run = R.summarize(pd.DataFrame(rows))
    fio = pd.DataFrame({"tier": "disk", "job": ["seqwrite", "seqread"], "bw_MBps": [1000.0, 5000.0]})
    b = R.bounds(run, pd.DataFrame(rows), fio).set_index(["variant", "op"])
    # 1 GiB/s against fio's 1,000 MB/s: the storage's pace
    assert b.loc[("fsync", "write"), "bound"] == "storage"
    assert b.loc[("fsync", "write"), "client_fraction_of_fio"] == pytest.approx(1.0737, rel=1e-3)
    # 0.21 of fio's read with every rank's one thread wanting 95 % of a core: the client's CPU
    assert b.loc[("fsync", "read"), "bound"] == "client"
    assert b.loc[("no-fsync", "read"), "bound"] == "no verdict"
    rows_ = R.engineer_rows(b.reset_index(), "llama3-8b")
    assert len(rows_) == 3 and rows_["workload"].str.startswith("llama3-8b checkpoint").all()
