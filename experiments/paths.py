"""Where things live. Paths come from here, never from the working directory.

The project root is the folder that holds this package, unless ``DLIO_ROOT`` names another
one (the smoke tests run the pipeline in a temporary copy of the project that way).
"""

from __future__ import annotations

import os
from pathlib import Path


def root() -> Path:
    """The project root: ``$DLIO_ROOT`` if set, else the parent of the package folder."""
    env = os.environ.get("DLIO_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parent.parent


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


def resolve(path: str | os.PathLike) -> Path:
    """An absolute path; a relative one is taken relative to the project root."""
    p = Path(os.path.expanduser(str(path)))
    return p if p.is_absolute() else root() / p
