"""``python -m experiments.pipeline.quietrun COMMAND ...``: run one of ``make bench``'s commands with its
stderr routed as the pipeline routes a notebook kernel's (:mod:`experiments.pipeline.run_notebook`):
TensorFlow's start-up lines that are not errors (``run_notebook.NOISE``: absl's notice, the CUDA
stub's info line, the CPU-feature info, and on a host without a GPU the ``failed call to cuInit``
line) stay off the console; every line the command and its children write to stderr is kept in
``data/bench/<name>.stderr.log`` (``<name>``: the command's ``-m`` module, else its program).
Exits with the command's status.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def log_name(cmd: list[str]) -> str:
    """``python -m experiments.pipeline.bench`` -> ``experiments.pipeline.bench``; ``fio job`` -> ``fio``."""
    if "-m" in cmd[:-1]:
        return cmd[cmd.index("-m") + 1]
    return Path(cmd[0]).name


def run(cmd: list[str], log_dir: Path | None = None) -> int:
    """Run ``cmd`` (stdout untouched, stderr routed: module docstring); its exit status."""
    from ..host import envinfo
    from ..settings import paths
    from .run_notebook import _StderrTee, noise_filter

    log = Path(log_dir or paths.data_dir("bench")) / f"{log_name(cmd)}.stderr.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    tee = _StderrTee(log, noise_filter(bool(envinfo.gpus())))
    try:
        code = subprocess.run(cmd).returncode
    finally:
        tee.close()
    if tee.hidden:
        print(f"({tee.hidden} lines of TensorFlow start-up noise kept off the console: {log})", file=sys.stderr)
    return code


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-"):
        print(f"usage: python -m experiments.pipeline.quietrun COMMAND ...; got {argv!r}", file=sys.stderr)
        return 2
    return run(list(argv))


if __name__ == "__main__":
    sys.exit(main())
