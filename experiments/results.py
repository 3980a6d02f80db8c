"""The one results writer: every stage writes its folder ``results/<stage>/`` through it.

Each file is written under a temporary name and renamed into place, so a stage interrupted
half way never leaves a file a later stage could mistake for a result. Opening a stage's
writer removes the result files of an earlier run of that stage, so old and new never mix.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from . import envinfo, paths

RESULT_FILES = ("raw.parquet", "summary.csv", "metrics.json", "env.json", "claims.json")
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Path):
        return str(x)
    return x


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path, obj: Any) -> Path:
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=False) + "\n"
    return atomic_write(path, lambda p: p.write_text(text))


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


class StageResults:
    """Writer for one stage's results folder.

    >>> out = StageResults("tfdata_read")
    >>> out.raw(df); out.summary(summary_df); out.metrics({...}); out.env(params=...)
    """

    def __init__(self, stage: str, clean: bool = True):
        self.stage = stage
        self.dir = paths.results_dir(stage)
        self.dir.mkdir(parents=True, exist_ok=True)
        if clean:
            for f in self.dir.iterdir():
                if f.name in RESULT_FILES or f.suffix in FIGURE_SUFFIXES or f.name.endswith(".tmp"):
                    f.unlink()

    def path(self, name: str) -> Path:
        return self.dir / name

    def raw(self, df: pd.DataFrame) -> Path:
        """Every measured row (one per repeat, step or trace event)."""
        return atomic_write(self.path("raw.parquet"), lambda p: df.to_parquet(p, index=False))

    def summary(self, df: pd.DataFrame) -> Path:
        """The tidy table a figure plots."""
        return atomic_write(self.path("summary.csv"), lambda p: df.to_csv(p, index=False))

    def table(self, name: str, df: pd.DataFrame) -> Path:
        """An extra tidy table (``name.csv``) when one summary is not enough."""
        return atomic_write(self.path(f"{name}.csv"), lambda p: df.to_csv(p, index=False))

    def metrics(self, metrics: dict) -> Path:
        """Headline numbers (DVC metrics)."""
        return write_json(self.path("metrics.json"), metrics)

    def env(self, **facts) -> Path:
        """Host, software, git revision and the stage's facts (parameters, eviction, tracer)."""
        return write_json(self.path("env.json"), envinfo.capture(stage=self.stage, **facts))

    def claims(self, claims: list[dict]) -> Path:
        return write_json(self.path("claims.json"), claims)

    def figure(self, fig, name: str, formats=("png", "svg"), dpi: int = 150) -> list[Path]:
        """Save ``fig`` as ``name.<fmt>`` for each format (the figure style adds the host)."""
        from . import style

        style.stamp_host(fig)
        out = []
        for fmt in formats:
            out.append(atomic_write(
                self.path(f"{name}.{fmt}"),
                lambda p, fmt=fmt: fig.savefig(p, format=fmt, dpi=dpi, bbox_inches="tight"),
            ))
        return out


def load(stage: str, name: str = "summary.csv"):
    """Read a result file of an upstream stage (csv/parquet as a DataFrame, json as data)."""
    p = paths.results_dir(stage) / name
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: run the stage {stage!r} first (dvc repro {stage})")
    if p.suffix == ".csv":
        return pd.read_csv(p)
    if p.suffix == ".parquet":
        return pd.read_parquet(p)
    return read_json(p)
