"""Every argument of every command line stops a bad value with one line naming it, exit 2,
before any work (experiments.settings.config.check_args: the same pydantic validation as params.yaml).

The table below has one bad value per argument; ``test_every_argument_has_a_bad_value`` fails
when a command grows an argument without one."""

import argparse

import pytest

from experiments.pipeline import profile
from experiments.emulator import __main__ as emu
from experiments.emulator import bench as emu_bench
from experiments.trace import __main__ as trace
from experiments.workloads import compute_model

# FILE and DIR are filled in by the test: an existing file, an existing folder
BAD = {  # (command, dest): (argv, text the error line must hold)
    ("emulator run", "workload"): (["run", "resnet"], "workload = 'resnet'"),
    ("emulator run", "batch_size"): (["run", "dlrm", "-G", "2", "-B", "-5"], "--batch-size = -5"),
    ("emulator run", "accelerators"): (["run", "dlrm", "-G", "0"], "--accelerators = 0"),
    ("emulator run", "data"): (["run", "dlrm", "--data", "/no/such/dir"], "--data = '/no/such/dir'"),
    ("emulator run", "params"): (["run", "dlrm", "--params", "/no/params.yaml"], "--params = "),
    ("emulator run", "set"): (["run", "dlrm", "--set", "epochs"], "--set = 'epochs'"),
    ("emulator run", "seed"): (["run", "dlrm", "--seed", "-1"], "--seed = -1"),
    ("emulator run", "nnodes"): (["run", "dlrm", "--nnodes", "0"], "--nnodes = 0"),
    ("emulator run", "compute_model"): (["run", "dlrm", "--compute-model", "v200"], "--compute-model = 'v200'"),
    ("emulator run", "checkpoint_pattern"): (["run", "dlrm", "--checkpoint-pattern", "x"], "--checkpoint-pattern = 'x'"),
    ("emulator run", "checkpoint_dir"): (["run", "dlrm", "--checkpoint-dir", ""], "--checkpoint-dir = ''"),
    ("emulator run", "out"): (["run", "dlrm", "--out", ""], "--out = ''"),
    ("emulator run", "node_rank"): (["run", "dlrm", "--node-rank", "1"], "--node-rank = 1"),
    ("emulator run", "rdzv_endpoint"): (["run", "dlrm", "--rdzv-endpoint", "node0"], "--rdzv-endpoint = 'node0'"),
    ("emulator run", "rdzv_id"): (["run", "dlrm", "--rdzv-id", "a b"], "--rdzv-id = 'a b'"),
    ("emulator run", "hosts"): (["run", "dlrm", "--hosts", "h0,,h1"], "--hosts = 'h0,,h1'"),
    ("emulator run", "launcher"): (["run", "dlrm", "--launcher", "pbs"], "--launcher"),
    ("emulator run", "tasks_per_node"): (["run", "dlrm", "--launcher", "slurm", "--tasks-per-node", "0"],
                                         "--tasks-per-node = 0"),
    ("emulator run", "partition"): (["run", "dlrm", "--partition", "a b"], "--partition = 'a b'"),
    ("emulator run", "time_limit"): (["run", "dlrm", "--time-limit", "soon"], "--time-limit = 'soon'"),
    ("emulator max-accelerators", "start"): (["max-accelerators", "dlrm", "--start", "0"], "--start = 0"),
    ("emulator max-accelerators", "limit"): (["max-accelerators", "dlrm", "--limit", "0"], "--limit = 0"),
    ("emulator datasize", "batch_size"): (["datasize", "unet3d", "-G", "8", "-B", "0"], "--batch-size = 0"),
    ("emulator datasize", "memory_gib"): (["datasize", "unet3d", "--memory-gib", "-1"], "--memory-gib = -1"),
    ("emulator datasize", "steps"): (["datasize", "unet3d", "--steps", "0"], "--steps = 0"),
    ("emulator datasize", "multiplier"): (["datasize", "unet3d", "--multiplier", "0"], "--multiplier = 0"),
    ("emulator pattern", "action"): (["pattern", "list", "traced"], "argument action"),
    ("emulator pattern", "source"): (["pattern", "show", "nope"], "source = 'nope'"),
    ("emulator pattern", "workload"): (["pattern", "derive", "FILE", "--workload", "resnet"], "--workload = 'resnet'"),
    ("emulator pattern", "checkpoint"): (["pattern", "derive", "FILE", "--checkpoint", "/no/ck"], "--checkpoint"),
    ("emulator pattern", "app_log"): (["pattern", "derive", "FILE", "--app-log", "/no/log"], "--app-log = '/no/log'"),
    ("emulator pattern", "ranks"): (["pattern", "trace", "dlrm", "--ranks", "0"], "--ranks = 0"),
    ("emulator pattern", "output"): (["pattern", "show", "traced", "-o", ""], "--output = ''"),
    ("emulator checkpoint", "model"): (["checkpoint", "--model", "llama3-7b", "--tier", "DIR"], "--model = 'llama3-7b'"),
    ("emulator checkpoint", "tier"): (["checkpoint", "--model", "llama3-8b", "--tier", ""], "--tier = ''"),
    ("emulator checkpoint", "ranks"): (["checkpoint", "--model", "llama3-70b", "--tier", "DIR", "--ranks", "12"], "--ranks = 12"),
    ("emulator checkpoint", "scale"): (["checkpoint", "--model", "llama3-8b", "--tier", "DIR", "--scale", "0.5"], "--scale = 0.5"),
    ("emulator checkpoint", "checkpoints"): (["checkpoint", "--model", "llama3-8b", "--tier", "DIR", "--checkpoints", "0"], "--checkpoints = 0"),
    ("emulator checkpoint", "pause_s"): (["checkpoint", "--model", "llama3-8b", "--tier", "DIR", "--pause-s", "-1"], "--pause-s = -1"),
    ("emulator checkpoint", "eviction"): (["checkpoint", "--model", "llama3-8b", "--tier", "DIR", "--eviction", "drop"], "--eviction = 'drop'"),
    ("emulator checkpoint", "nodes"): (["checkpoint", "--model", "llama3-8b", "--tier", "DIR", "--nodes", "0"], "--nodes = 0"),
    ("emulator checkpoint", "out"): (["checkpoint", "--model", "llama3-8b", "--tier", "DIR", "--out", ""], "--out = ''"),
    ("emulator gather", "run_dir"): (["gather", "DIR"], "run_dir = "),
    ("emulator summarize", "run_dir"): (["summarize", "DIR"], "run_dir = "),
    ("emulator bench", "workloads"): (["bench", "--workloads", "resnet"], "--workloads = 'resnet'"),
    ("emulator bench", "runs"): (["bench", "--runs", "0"], "--runs = 0"),
    ("trace run", "output"): (["run", "-o", "", "--", "true"], "--output = ''"),
    ("trace run", "backend"): (["run", "-o", "t.parquet", "--backend", "ebpf", "--", "true"], "--backend"),
    ("trace run", "watch"): (["run", "-o", "t.parquet", "--watch", "/no/dir", "--", "true"], "--watch"),
    ("trace run", "block_scope"): (["run", "-o", "t.parquet", "--block-scope", "all", "--", "true"], "--block-scope"),
    ("trace run", "mode"): (["run", "-o", "t.parquet", "--mode", "x", "--", "true"], "--mode"),
    ("trace run", "probes"): (["run", "-o", "t.parquet", "--probes", "fentry", "--", "true"], "--probes"),
    ("trace run", "files"): (["run", "-o", "t.parquet", "--files", "x", "--", "true"], "--files"),
    ("trace run", "dftracer_release"): (["run", "-o", "t.parquet", "--dftracer-release", "2.2", "--", "true"],
                                        "--dftracer-release"),
    ("trace run", "interval"): (["run", "-o", "t.parquet", "--interval", "-1", "--", "true"], "--interval = -1"),
    ("trace run", "phase_log"): (["run", "-o", "t.parquet", "--phase-log", "", "--", "true"], "--phase-log = ''"),
    ("trace run", "cmd"): (["run", "-o", "t.parquet"], "cmd = "),
    ("trace vector", "trace"): (["vector", "/no/t.parquet"], "trace = '/no/t.parquet'"),
    ("trace vector", "data"): (["vector", "FILE", "--data", ""], "--data = ''"),
    ("trace vector", "checkpoint"): (["vector", "FILE", "--checkpoint", ""], "--checkpoint = ''"),
    ("trace vector", "device"): (["vector", "FILE", "--device", "a/b"], "--device = 'a/b'"),
    ("trace vector", "block_file"): (["vector", "FILE", "--block-file", "/no/f"], "--block-file"),
    ("trace compare", "a"): (["compare", "/no/a", "FILE"], "a = '/no/a'"),
    ("trace compare", "b"): (["compare", "FILE", "/no/b"], "b = '/no/b'"),
    ("trace compare", "names"): (["compare", "FILE", "FILE", "--names", "", "x"], "--names = ''"),
    ("trace compare", "csv"): (["compare", "FILE", "FILE", "--csv", ""], "--csv = ''"),
    ("trace compare", "data"): (["compare", "FILE", "FILE", "--data", ""], "--data = ''"),
    ("trace compare", "checkpoint"): (["compare", "FILE", "FILE", "--checkpoint", ""], "--checkpoint = ''"),
    ("trace compare", "device"): (["compare", "FILE", "FILE", "--device", "a b"], "--device = 'a b'"),
    ("trace compare", "block_file"): (["compare", "FILE", "FILE", "--block-file", "/no/f"], "--block-file"),
    ("trace timeline", "trace"): (["timeline", "/no/t", "-o", "t.png"], "trace = '/no/t'"),
    ("trace timeline", "data"): (["timeline", "FILE", "-o", "t.png", "--data", ""], "--data = ''"),
    ("trace timeline", "checkpoint"): (["timeline", "FILE", "-o", "t.png", "--checkpoint", ""], "--checkpoint = ''"),
    ("trace timeline", "device"): (["timeline", "FILE", "-o", "t.png", "--device", "/"], "--device = '/'"),
    ("trace timeline", "block_file"): (["timeline", "FILE", "-o", "t.png", "--block-file", "/no/f"], "--block-file"),
    ("trace timeline", "output"): (["timeline", "FILE", "-o", ""], "--output = ''"),
    ("trace timeline", "phases"): (["timeline", "FILE", "-o", "t.png", "--phases", "/no/p"], "--phases = '/no/p'"),
    ("trace timeline", "bin"): (["timeline", "FILE", "-o", "t.png", "--bin", "0"], "--bin = 0"),
    ("trace chrome", "trace"): (["chrome", "/no/t", "-o", "t.json"], "trace = '/no/t'"),
    ("trace chrome", "output"): (["chrome", "FILE", "-o", ""], "--output = ''"),
    ("trace chrome", "phases"): (["chrome", "FILE", "-o", "t.json", "--phases", "/no/p"], "--phases = '/no/p'"),
    ("compute-model export", "source"): (["export", "v200"], "v200"),
    ("compute-model show", "source"): (["show", "/no/model.json"], "/no/model.json"),
    ("compute-model show", "point"): (["show", "thesis-v100", "dlrm", "x", "2"], "G = 'x'"),
    ("profile", "name"): (["fast"], "argument name"),
    ("profile", "out"): (["smoke", "--out", "/no/such/dir/params.yaml"], "--out = '/no/such/dir/params.yaml'"),
}
MAINS = {"emulator": emu.main, "trace": trace.main, "profile": profile.main, "compute-model": compute_model.main}
# arguments that cannot hold a bad value: flags (store_true) and --help
NO_BAD_VALUE = (argparse._HelpAction, argparse._StoreTrueAction, argparse._SubParsersAction)


def _parsers():
    """(command, parser) of every command line and subcommand."""
    # the emulator, its bench and profile build their parsers inside main(): capture them
    import experiments.settings.config as c
    seen = []
    orig = c.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):
        seen.append(self)
        raise SystemExit(0)
    c.ArgumentParser.parse_args = grab
    try:
        for f, argv in ((emu.main, ["run"]), (emu_bench.main, []), (profile.main, ["smoke"])):
            try:
                f(argv)
            except SystemExit:
                pass
    finally:
        c.ArgumentParser.parse_args = orig
    emu_top, bench_p, prof = seen
    return (_subs("emulator", emu_top) + [("emulator bench", bench_p), ("profile", prof)]
            + _subs("trace", trace.parser()) + _subs("compute-model", compute_model.parser()))


def _subs(name, top):
    subs = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return [(f"{name} {k}", p) for s in subs for k, p in s.choices.items() if k != "bench"]


def test_every_argument_has_a_bad_value():
    # max-accelerators and datasize share run's arguments (one model, CommonArgs / RunArgs)
    missing = [(cmd, a.dest) for cmd, p in _parsers() for a in p._actions
               if not isinstance(a, NO_BAD_VALUE) and (cmd, a.dest) not in BAD
               and not (cmd.endswith(("max-accelerators", "datasize")) and ("emulator run", a.dest) in BAD)]
    assert not missing, f"arguments without a bad value in BAD: {missing}"


@pytest.mark.parametrize("key", list(BAD), ids=[f"{c}:{d}" for c, d in BAD])
def test_bad_value_is_one_line_naming_the_argument(key, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = tmp_path / "file.parquet"
    f.write_bytes(b"")
    argv, text = BAD[key]
    argv = [str(f) if x == "FILE" else str(tmp_path) if x == "DIR" else x for x in argv]
    prog = key[0].split()[0]
    try:
        rc = MAINS[prog](argv)
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert text in err, err
