"""Where DLIO lives and whether it can run: the ``.venv-dlio`` environment of ``env/setup-dlio.sh``.

DLIO (``dlio-benchmark`` 2.0.0, the base of MLPerf Storage) runs in a virtual environment of
its own, built from the pinned ``env/dlio.lock`` by ``env/setup-dlio.sh`` (which
``make setup`` / ``make test`` call). :func:`status` says, without starting Python in it,
whether it is installed and up to date with the lock, and if not, why: the reason the
set-up script wrote to ``.venv-dlio/UNAVAILABLE`` (an unsupported platform), a missing or
out-of-date environment, or a missing ``mpiexec``. Every DLIO number is then "not measured"
with that reason.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ..settings import paths

VENV = paths.DLIO_VENV
LOCK = "env/dlio.lock"
PACKAGE = "dlio_benchmark"


@dataclass(frozen=True)
class Status:
    """Whether DLIO can run here; ``why`` is one line when it cannot."""

    ok: bool
    why: str
    version: str | None
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def dlio_benchmark(self) -> Path:
        return self.bin / "dlio_benchmark"

    @property
    def mpiexec(self) -> Path:
        return self.bin / "mpiexec"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def facts(self) -> dict:
        """What a result records about the environment."""
        return {"dlio_version": self.version, "dlio_venv": str(self.venv), "dlio_ok": self.ok,
                "dlio_why_not": self.why, "dlio_lock": LOCK}


def venv_dir() -> Path:
    """DLIO's environment (:func:`experiments.settings.paths.dlio_venv`)."""
    return paths.dlio_venv()


def installed_version(venv: Path) -> str | None:
    """The version of ``dlio_benchmark`` installed in ``venv`` (from its dist-info), or None."""
    for meta in sorted(venv.glob(f"lib/python3*/site-packages/{PACKAGE}-*.dist-info/METADATA")):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


def _lock_hash(checkout: Path) -> str | None:
    p = checkout / LOCK if (checkout / LOCK).exists() else paths.root() / LOCK
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None


def status() -> Status:
    """Whether DLIO's environment is installed and matches ``env/dlio.lock`` (no subprocess)."""
    v = venv_dir()
    version = installed_version(v)
    why_file = v / "UNAVAILABLE"
    if why_file.exists():
        return Status(False, f"DLIO's environment could not be installed here: "
                             f"{why_file.read_text().strip()}", version, v)
    if not (v / "bin" / "dlio_benchmark").exists() or version is None:
        return Status(False, f"DLIO's environment {VENV} is not set up; run `make setup` "
                             f"(or `bash env/setup-dlio.sh`)", version, v)
    stamp = v / ".dlio-lock-sha256"
    want = _lock_hash(v.parent)
    if want and (not stamp.exists() or stamp.read_text().strip() != want):
        return Status(False, f"DLIO's environment {VENV} is out of date with {LOCK}; run "
                             f"`make setup` (or `bash env/setup-dlio.sh`)", version, v)
    if not os.access(v / "bin" / "mpiexec", os.X_OK):
        return Status(False, f"{VENV}/bin/mpiexec is missing (the mpich wheel); run "
                             f"`bash env/setup-dlio.sh`", version, v)
    return Status(True, "", version, v)
