"""The pipeline's papermill (experiments.pipeline.run_notebook) and the results writer's two modes:
the pipeline writes results/<stage>/, anything else explores under explore/."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from experiments.settings import config
from experiments.output import results
from experiments.pipeline import run_notebook

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A tiny project: params.yaml with a seed and figures, and a dvc.yaml naming one stage."""
    (tmp_path / "params.yaml").write_text("seed: 7\nfigures: {dpi: 100, formats: [png], context: notebook}\n")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"s": {
        "cmd": "python -m experiments.pipeline.run_notebook notebooks/01-s.ipynb results/s/s.ipynb",
        "deps": ["notebooks/01-s.ipynb"], "params": ["seed"], "outs": [{"results/s": {"cache": False}}]}}}))
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    monkeypatch.delenv(results.PIPELINE_ENV, raising=False)
    return tmp_path


def test_results_files_are_readable_by_others(project, monkeypatch):
    monkeypatch.setenv(results.PIPELINE_ENV, "s")
    old = os.umask(0o022)
    try:
        out = results.StageResults("s")
        paths_written = [out.metrics({"seconds": 1.0}), out.summary(__import__("pandas").DataFrame({"a": [1]}))]
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.set_xlabel("x (s)")
        from experiments.figures import style
        paths_written += style.save(out, fig, "f", formats=("png",))
    finally:
        os.umask(old)
    for p in paths_written:
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p


def test_exploring_writes_a_folder_named_after_the_overrides(project, capsys):
    config.load(seed=11, figures={"dpi": 72})
    out = results.StageResults("s")
    out.metrics({"seconds": 1.0})
    assert out.exploring
    assert out.dir == project / "explore" / "01-s" / "figures.dpi=72,seed=11"
    assert not (project / "results" / "s").exists()
    assert "explore/01-s/figures.dpi=72,seed=11" in capsys.readouterr().out
    assert out.data_dir("d") == out.dir / "data" / "d"
    config.load(seed=None, figures=None)
    assert results.StageResults("s").dir.name == "as-params"


def test_pipeline_writes_the_tracked_folder_and_only_its_own(project, monkeypatch):
    monkeypatch.setenv(results.PIPELINE_ENV, "s")
    config.load(seed=11)   # an override under the pipeline is still the pipeline's run
    out = results.StageResults("s")
    assert not out.exploring and out.dir == project / "results" / "s"
    assert out.data_dir("d") == project / "data" / "d"
    with pytest.raises(RuntimeError, match="writes only its own results/s/"):
        results.StageResults("other")


def test_long_overrides_get_a_short_stable_name():
    a = results._slug({"tiers": [{"name": "mem", "path": "/dev/shm/x" * 10}]})
    assert len(a) <= 80 and a == results._slug({"tiers": [{"name": "mem", "path": "/dev/shm/x" * 10}]})


def _notebook(path: Path, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    p = nbformat.v4.new_code_cell("seed = None\nfigures = None")
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(body)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def test_run_notebook_passes_declared_parameters_and_keeps_the_log_quiet(project):
    _notebook(project / "notebooks" / "01-s.ipynb", (
        "import os\n"
        "from experiments.output import results\n"
        "from experiments.settings import config\n"
        "cfg = config.load(seed=seed)\n"
        "noise = b'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\\n'\n"
        "noise += b'I0000 00:00:1795387682.404322   16121 cudart_stub.cc:31] Could not find cuda drivers\\n'\n"
        "os.write(2, noise + b'a real problem\\n')\n"
        "out = results.StageResults('s')\n"
        "out.metrics({'seconds': cfg.seed})\n"
        "out.env(params=config.as_dict(cfg))\n"))
    env = {**os.environ, "DLIO_ROOT": str(project), "DVC_STAGE": "s",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop(results.PIPELINE_ENV, None)
    r = subprocess.run([sys.executable, "-m", "experiments.pipeline.run_notebook", "notebooks/01-s.ipynb",
                        "results/s/s.ipynb"], cwd=project, env=env, capture_output=True, text=True)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log
    assert "parameters: seed, figures" in log and "Passed unknown parameter" not in log
    assert "without encryption" not in log and "absl" not in log and "cudart_stub" not in log
    assert "a real problem" in log and "s: done in" in log and "seconds=7" in log
    kept = (project / "results" / "s" / run_notebook.STDERR_LOG).read_text()
    assert "absl::InitializeLog" in kept and "a real problem" in kept
    nb = json.loads((project / "results" / "s" / "s.ipynb").read_text())
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert "seed = 7" in "".join(injected[0]["source"])
    run = json.loads((project / "results" / "s" / "env.json").read_text())["run"]
    assert run["wall_s"] > 0 and run["outs_bytes"]["results/s"] > 0 and "host" in run


def test_run_notebook_runs_only_under_dvc(project):
    env = {k: v for k, v in os.environ.items() if k != "DVC_STAGE"} | {"DLIO_ROOT": str(project)}
    r = subprocess.run([sys.executable, "-m", "experiments.pipeline.run_notebook", "notebooks/01-s.ipynb",
                        "results/s/s.ipynb"], cwd=project, env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "dvc repro s" in r.stderr and "explore/" in r.stderr
    assert not (project / "results").exists()


def test_every_stage_uses_the_one_cmd_form_and_tracks_what_its_notebook_declares():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name, st in stages.items():
        parts = st["cmd"].split()
        assert parts[:3] == ["python", "-m", "experiments.pipeline.run_notebook"], (name, st["cmd"])
        nb, out = parts[3:5]
        assert out == f"results/{name}/{name}.ipynb" and nb in st["deps"], name
        tracked = {p.split(".")[0] for p in st.get("params", [])}
        missing = set(run_notebook.declared_parameters(ROOT / nb)) - tracked
        assert not missing, f"stage {name}: notebook declares {sorted(missing)} but dvc.yaml params omit them"


def test_stage_times_round_to_the_second_before_splitting_minutes():
    from experiments.pipeline.run_notebook import fmt_seconds
    assert fmt_seconds(42.4) == "42 s" and fmt_seconds(59.6) == "1 min 0 s"
    assert fmt_seconds(119.6) == "2 min 0 s" and fmt_seconds(187.2) == "3 min 7 s"


def test_two_stages_kernels_get_separate_sockets(tmp_path, monkeypatch):
    """Two stages started together (the parallel smoke run) must not share IPC socket paths:
    jupyter_client's default, "kernel-ipc-N" in the working directory, gave both the same N."""
    import shutil

    monkeypatch.chdir(tmp_path)
    paths, dirs = [], []
    for _ in range(2):
        cfg, d = run_notebook.kernel_settings()
        dirs.append(d)
        km = cfg.NotebookClient.kernel_manager_class(config=cfg)
        km.write_connection_file()
        info = json.loads(Path(km.connection_file).read_text())
        paths.append({f"{info['ip']}-{info[k]}" for k in
                      ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")})
        assert info["transport"] == "ipc"
        km.cleanup_connection_file()
    try:
        assert not paths[0] & paths[1]
        assert all(not p.startswith(str(tmp_path)) for p in paths[0] | paths[1])
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def test_a_decide_run_keeps_the_repro_time_and_appends_its_own(project, monkeypatch):
    """The AE table reads a stage's ``env.json`` ``"run"``: after ``make decide`` re-ran the
    stage it is still the ``make repro`` run's; the decide run's facts go to ``decide_runs``."""
    from experiments.settings import paths
    from experiments.repeats import purchases

    assert run_notebook.DECIDE_ENV == purchases.ENV
    env_path = paths.results_dir("lmdbio") / "env.json"
    env_path.parent.mkdir(parents=True, exist_ok=True)
    results.write_json(env_path, {"params": {}, "run": {"wall_s": 60.0}})
    before = run_notebook.runs_before("lmdbio")
    results.write_json(env_path, {"params": {"new": 1}})          # the notebook rewrites env.json
    run_notebook.record_run("lmdbio", {"wall_s": 5.0}, before)
    got = results.read_json(env_path)
    assert got["run"] == {"wall_s": 60.0} and got["decide_runs"] == [{"wall_s": 5.0}] and got["params"] == {"new": 1}
    run_notebook.record_run("lmdbio", {"wall_s": 7.0}, run_notebook.runs_before("lmdbio"))
    assert [r["wall_s"] for r in results.read_json(env_path)["decide_runs"]] == [5.0, 7.0]
    run_notebook.record_run("lmdbio", {"wall_s": 50.0})             # a dvc repro: its own time
    assert results.read_json(env_path)["run"] == {"wall_s": 50.0}
