"""Where things live. Paths come from here, never from the working directory.

The project root is the folder that holds this package, unless ``DLIO_ROOT`` names another
one (the smoke tests run the pipeline in a temporary copy of the project that way).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

CHECKOUT = "{checkout}"


def root() -> Path:
    """The project root: ``$DLIO_ROOT`` if set, else the parent of the package folder."""
    env = os.environ.get("DLIO_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2]


def params_file() -> Path:
    """The parameter file the pipeline reads (``params.yaml`` at the root)."""
    return root() / "params.yaml"


def profiles_dir() -> Path:
    return root() / "profiles"


def data_dir(name: str | None = None) -> Path:
    d = root() / "data"
    return d / name if name else d


def results_dir(stage: str | None = None) -> Path:
    d = root() / "results"
    return d / stage if stage else d


def checkout_id(root_dir: Path | None = None) -> str:
    """A short name unique to this checkout (folder name + hash of its absolute path).

    Tier paths outside the project may contain ``{checkout}``; it becomes this name, so two
    clones on one host (a reviewer's and a student's, CI beside a developer) never share a tier.
    """
    r = Path(root_dir).resolve() if root_dir else root()
    return f"{r.name}-{hashlib.sha1(str(r).encode()).hexdigest()[:8]}"


def expand(path: str | os.PathLike, root_dir: Path | None = None) -> str:
    """``path`` with ``~`` and ``{checkout}`` expanded (nothing else)."""
    return os.path.expanduser(str(path)).replace(CHECKOUT, checkout_id(root_dir))


def resolve(path: str | os.PathLike) -> Path:
    """An absolute path (``~`` and ``{checkout}`` expanded); a relative one is taken relative
    to the project root."""
    p = Path(expand(path))
    return p if p.is_absolute() else root() / p


def shown(path: str | os.PathLike) -> str:
    """``path`` as a table read on another host shows it: relative to the project root where it
    lies inside, else its file name (a name that is not a path, such as a built-in model's
    ``thesis-v100``, as it is)."""
    p = Path(str(path))
    if not p.is_absolute():
        return str(path)
    try:
        return str(p.resolve().relative_to(root()))
    except ValueError:
        return p.name


DLIO_VENV = ".venv-dlio"


def dlio_venv() -> Path:
    """DLIO's environment (DLIO 2.0 and pydftracer): ``$DLIO_VENV`` if set, else ``.venv-dlio`` of
    the project root, else the one beside the running Python's environment (the smoke tests run
    the pipeline in a copy of the project, ``DLIO_ROOT``, that has no ``.venv-dlio`` of its own)
    or beside this package. Here, not in :mod:`experiments.dlio`, so that the tracer finds
    DFTracer's library without importing DLIO's driver."""
    if os.environ.get("DLIO_VENV"):
        return Path(os.environ["DLIO_VENV"])
    here = root() / DLIO_VENV
    for cand in (here, Path(sys.prefix).parent / DLIO_VENV, Path(__file__).resolve().parents[2] / DLIO_VENV):
        if (cand / "bin" / "dlio_benchmark").exists() or (cand / "UNAVAILABLE").exists():
            return cand
    return here
