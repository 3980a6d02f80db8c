"""Papermill for the pipeline: ``python -m experiments.pipeline.run_notebook NOTEBOOK OUTPUT``.

Every stage in ``dvc.yaml`` runs its notebook through this command. It is papermill
(``papermill.execute_notebook`` on ``NOTEBOOK``, the executed copy saved as ``OUTPUT``,
``results/<stage>/<stage>.ipynb``, kernel ``python3``), with what a plain
``papermill NOTEBOOK OUTPUT -f params.yaml`` gets wrong on this project:

- **Parameters**: only the sections of ``params.yaml`` that the notebook's ``parameters`` cell
  declares are injected (papermill warns "Passed unknown parameter" for every other one).
- **The pipeline's run**: it runs only under ``dvc repro`` (DVC sets ``DVC_STAGE`` for a
  stage's command) and sets ``DLIO_PIPELINE_STAGE=<stage>`` for the kernel; only then does
  the notebook's results writer write the tracked folder ``results/<stage>/`` (see
  :class:`experiments.output.results.StageResults`). A notebook run any other way (JupyterLab,
  papermill by hand) explores: it writes under ``explore/`` and says where.
- **A quiet log**: the kernel talks to papermill over IPC sockets, not TCP (ipykernel warns
  "Kernel is running over TCP without encryption" otherwise), and is shut down without the
  SIGINT that makes ipykernel log "KeyboardInterrupt caught in kernel". TensorFlow 2.21's C++
  start-up lines are not errors: absl's "All log messages before absl::InitializeLog()"
  notice and the CUDA stub's ``I...`` info line are printed before TensorFlow reads
  ``TF_CPP_MIN_LOG_LEVEL`` (no setting silences them); the CPU-feature info and, on a host
  without a GPU, the ``failed call to cuInit`` error go only at ``TF_CPP_MIN_LOG_LEVEL=3``,
  which would hide every real TensorFlow C++ error too. So they are kept out of the console
  by :data:`NOISE` and written, with every other line the kernel and its children print to
  stderr, to ``results/<stage>/kernel-stderr.log``; every other line passes through.
- **What it cost**: the stage's wall time, the load average, and the disk its outputs and
  its tier copies take are added to its ``env.json`` under ``"run"`` (the AE table,
  ``python -m experiments.pipeline.ae_table``, is made from them), and the headline metrics are
  printed when the stage ends.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import shutil
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

PIPELINE_ENV = "DLIO_PIPELINE_STAGE"
KERNEL = "python3"
STDERR_LOG = "kernel-stderr.log"

# Lines that look like errors but are not, each with why it is safe to keep off the console.
def _cxx(level: str) -> str:
    """A C++ log line of TensorFlow/XLA at ``level`` (I, W, E): absl's format
    (``I0000 00:00:1795387682.404322   16121 cudart_stub.cc:31] ...``) or the older one
    (``2025-01-01 12:00:00.000000: I external/x.cc:31] ...``)."""
    return (rf"^(?:{level}\d{{4}} [\d:.]+\s+\d+ [\w.]+:\d+\] "
            rf"|\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: {level} \S+\] )")


NOISE: list[tuple[str, str]] = [
    (r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$",
     "absl's notice that TensorFlow logs before it set up logging"),
    (_cxx("I"), "TensorFlow/XLA C++ info lines (start-up: CUDA stub, CPU features, oneDNN)"),
    (r"^To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.$",
     "second line of TensorFlow's CPU-feature info"),
    (_cxx("E") + r".*Unable to register cu(?:DNN|FFT|BLAS) factory",
     "TensorFlow and XLA both register the CUDA plugins; harmless"),
]
# Only on a host without a GPU: TensorFlow's CUDA probe failing is then the expected answer.
NO_GPU_NOISE: list[tuple[str, str]] = [
    (_cxx("E") + r".*failed call to cuInit", "TensorFlow probing for a GPU on a host that has none"),
]


def noise_filter(gpu: bool):
    """A predicate: True for a stderr line that is known start-up noise (see :data:`NOISE`)."""
    pats = [re.compile(p) for p, _ in NOISE + ([] if gpu else NO_GPU_NOISE)]
    return lambda line: any(p.search(line) for p in pats)


class _StderrTee:
    """Point file descriptor 2 at a pipe (the kernel and its children inherit it); a thread
    writes every line to ``log_path`` and passes the lines that are not noise to the console."""

    def __init__(self, log_path: Path, is_noise):
        self.log_path, self.is_noise = log_path, is_noise
        self.console = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self._r = r
        # papermill's progress bar and our own messages go to the console directly
        sys.stderr = open(os.dup(self.console), "w", buffering=1, closefd=True)
        self.hidden = 0
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        buf = b""
        with open(self.log_path, "ab") as log:
            while True:
                chunk = os.read(self._r, 65536)
                if not chunk:
                    break
                log.write(chunk)
                log.flush()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    self._forward(line + b"\n")
            if buf:
                self._forward(buf)

    def _forward(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\n").split("\r")[-1]
        if self.is_noise(text):
            self.hidden += 1
        else:
            os.write(self.console, raw)

    def close(self) -> None:
        os.dup2(self.console, 2)        # closes the pipe's last write end: the pump sees EOF
        self._thread.join(timeout=10)
        os.close(self._r)


def _kernel_manager_class():
    """jupyter_client 8's kernel manager, shutting the kernel down by request alone.

    Its shutdown first sends SIGINT (to stop a running cell); papermill shuts down only after
    the last cell, and a SIGINT that lands while the kernel is still inside a message handler
    makes ipykernel log "ERROR | KeyboardInterrupt caught in kernel" after a clean run.
    """
    from jupyter_client import AsyncKernelManager

    class KernelManager(AsyncKernelManager):
        _shutting_down = False

        async def _async_interrupt_kernel(self) -> None:
            if not self._shutting_down:
                await super()._async_interrupt_kernel()

        async def _async_shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            self._shutting_down = True
            try:
                await super()._async_shutdown_kernel(now=now, restart=restart)
            finally:
                self._shutting_down = False

        shutdown_kernel = _async_shutdown_kernel

    return KernelManager


def kernel_settings():
    """papermill's kernel configuration for one stage, and the folder of its kernel's sockets
    (the caller removes it).

    The kernel talks over IPC sockets, not TCP (no unencrypted-TCP warning). Their paths:
    jupyter_client's default is "kernel-ipc-N" in the working directory, N the first free
    number, so two stages whose kernels start at the same moment (the parallel smoke run) bind
    the same sockets and read each other's messages ("Invalid Signature"); a folder of this
    run's own keeps them apart."""
    from traitlets.config import Config

    config = Config()
    config.KernelManager.transport = "ipc"
    ipc_dir = tempfile.mkdtemp(prefix="dlio-kernel-")
    config.KernelManager.ip = os.path.join(ipc_dir, "ipc")
    config.NotebookClient.kernel_manager_class = _kernel_manager_class()
    return config, ipc_dir


def declared_parameters(notebook: Path) -> list[str]:
    """The names the notebook's ``parameters`` cell assigns."""
    import papermill

    return list(papermill.inspect_notebook(str(notebook)))


def parameters_for(notebook: Path) -> dict:
    """The sections of ``params.yaml`` the notebook declares (a declared name ``params.yaml``
    lacks keeps the notebook's default)."""
    from ..settings import config

    raw = config.read_params()
    return {name: raw[name] for name in declared_parameters(notebook) if name in raw}


def stage_of(output: Path) -> str:
    """The stage an output notebook belongs to: ``results/<stage>/<stage>.ipynb``."""
    from ..settings import paths

    out = (Path.cwd() / output).resolve() if not output.is_absolute() else output
    if out.parent.parent != paths.results_dir().resolve() or out.suffix != ".ipynb":
        raise SystemExit(f"run_notebook: OUTPUT must be results/<stage>/<stage>.ipynb, got {output}")
    return out.parent.name


def disk_bytes(path: Path) -> int:
    """Bytes a file or folder takes on its file system (allocated blocks, like ``du``)."""
    try:
        st = path.lstat()
    except OSError:
        return 0
    if not path.is_dir():
        return st.st_blocks * 512
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        for n in filenames + dirnames:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_blocks * 512
            except OSError:
                pass
    return total


def stage_outs(stage: str) -> list[str]:
    """The ``outs`` of ``stage`` in dvc.yaml (its results folder if dvc.yaml does not say)."""
    import yaml

    from ..settings import paths

    try:
        st = yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"][stage]
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in st.get("outs", [])]
    except (OSError, KeyError, TypeError):
        outs = []
    return outs or [f"results/{stage}"]


def tier_dirs() -> dict[str, Path]:
    """This checkout's tier directories from ``params.yaml`` (none if it has no tiers)."""
    from ..settings import config

    try:
        return {t.name: t.dir for t in config.load(tiers=None).tiers}
    except Exception:  # noqa: BLE001 - a stage without tiers in params.yaml still runs
        return {}


def headline(metrics: dict) -> str:
    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    return ", ".join(f"{k}={fmt(v)}" for k, v in metrics.items())


def human(n: float) -> str:
    """Bytes as a reader says them (10^3 multiples)."""
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n:.0f} B"


def children_cpu_s() -> float:
    """User and system CPU seconds of this process's waited-for descendants so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fmt_seconds(s: float) -> str:
    """``42 s`` or ``3 min 7 s``, rounded to the second first (59.6 s is ``1 min 0 s``, never ``60 s``)."""
    s = round(s)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60} s"


DECIDE_ENV = "DLIO_DECIDE"   # experiments.repeats.purchases.ENV, set while make decide re-runs stages (not
                             # imported: it pulls in pandas, and this process starts every stage)


def runs_before(stage: str) -> dict:
    """The ``"run"`` and ``"decide_runs"`` records of the stage's ``env.json`` before this run
    (the notebook rewrites the file), kept when a ``make decide`` run re-runs the stage."""
    from ..settings import paths
    from ..output import results

    env_path = paths.results_dir(stage) / "env.json"
    try:
        env = results.read_json(env_path)
    except (OSError, ValueError):
        return {}
    return {k: env[k] for k in ("run", "decide_runs") if k in env}


def record_run(stage: str, facts: dict, before: dict | None = None) -> None:
    """Add ``facts`` to the stage's ``env.json`` under ``"run"`` (atomically). In a ``make
    decide`` run (``before``: :func:`runs_before`, taken before the notebook ran) the
    ``make repro`` record stays under ``"run"`` (the AE table's time of the stage) and this run's
    facts are appended to ``"decide_runs"``."""
    from ..settings import paths
    from ..output import results

    env_path = paths.results_dir(stage) / "env.json"
    if env_path.exists():
        env = results.read_json(env_path)
        if before and before.get("run"):
            env["run"] = before["run"]
            env["decide_runs"] = list(before.get("decide_runs") or []) + [facts]
        else:
            env["run"] = facts
        results.write_json(env_path, env)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.pipeline.run_notebook",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("notebook", type=Path, help="notebooks/NN-name.ipynb")
    ap.add_argument("output", type=Path, help="results/<stage>/<stage>.ipynb")
    a = ap.parse_args(argv)
    # jsonschema (under nbformat, under papermill) imports rfc3987_syntax where it is installed
    # (jupyter-events needs it), and that module builds a grammar at import: about 1 s of every
    # stage's start-up. Validating a notebook uses no IRI format, so this process goes without.
    sys.modules.setdefault("rfc3987_syntax", None)

    from ..host import envinfo
    from ..settings import paths

    stage = stage_of(a.output)
    if not os.environ.get("DVC_STAGE"):
        print(f"run_notebook writes the pipeline's tracked results/{stage}/ and runs only under "
              f"`dvc repro` (no DVC_STAGE here). Run `dvc repro {stage}`, or explore without touching "
              f"the pipeline: open {a.notebook} in JupyterLab (`make lab`) or run "
              f"`papermill {a.notebook} /tmp/out.ipynb -p SECTION '{{...}}'` (it writes under explore/).",
              file=sys.stderr)
        return 2
    params = parameters_for(a.notebook)
    os.environ[PIPELINE_ENV] = stage
    a.output.parent.mkdir(parents=True, exist_ok=True)

    outs = stage_outs(stage)
    before = runs_before(stage) if os.environ.get(DECIDE_ENV) else None   # a make decide run
    tiers = tier_dirs()
    tier_before = {n: disk_bytes(d) for n, d in tiers.items()}
    gpu = bool(envinfo.gpus())

    print(f"{stage}: papermill {a.notebook} {a.output} -k {KERNEL} "
          f"(parameters: {', '.join(params) or 'none'})", flush=True)

    import papermill
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    kernel_config, ipc_dir = kernel_settings()
    log_path = a.output.parent / STDERR_LOG
    log_path.unlink(missing_ok=True)
    started = datetime.now(timezone.utc)
    load_start = os.getloadavg()
    cpu0 = children_cpu_s()
    t0 = time.monotonic()
    tee = _StderrTee(log_path, noise_filter(gpu))
    try:
        papermill.execute_notebook(str(a.notebook), str(a.output), parameters=params,
                                   kernel_name=KERNEL, progress_bar=True, config=kernel_config)
    except papermill.PapermillExecutionError as e:
        tee.close()
        print(f"{stage}: FAILED in cell {e.exec_count}: {e.ename}: {e.evalue}\n"
              f"  the executed notebook with the traceback: {a.output}\n"
              f"  the kernel's stderr: {log_path}", file=sys.stderr, flush=True)
        return 1
    finally:
        if tee._thread.is_alive():
            tee.close()
        shutil.rmtree(ipc_dir, ignore_errors=True)
    wall = time.monotonic() - t0

    root = paths.root()
    facts = {
        "wall_s": round(wall, 1),
        "started_at": started.isoformat(timespec="seconds"),
        "host": envinfo.host_label(),
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        # CPU seconds of the kernel and every process it started and waited for (the plan's
        # share of a stage's time that a faster CPU shortens: experiments.pipeline.forecast)
        "cpu_s": round(children_cpu_s() - cpu0, 1),
        "outs_bytes": {o: disk_bytes(root / o) for o in outs},
        "tier_bytes_added": {n: disk_bytes(d) - tier_before[n] for n, d in tiers.items()},
        "kernel_stderr_lines_hidden": tee.hidden,
    }
    record_run(stage, facts, before)
    metrics_path = paths.results_dir(stage) / "metrics.json"
    head = headline(json.loads(metrics_path.read_text())) if metrics_path.exists() else ""
    size = sum(facts["outs_bytes"].values()) + sum(max(0, v) for v in facts["tier_bytes_added"].values())
    print(f"{stage}: done in {fmt_seconds(wall)}, {human(size)} on disk"
          + (f"; {head}" if head else ""), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
