"""The one results writer: every stage writes its folder ``results/<stage>/`` through it.

Each file is written under a temporary name and renamed into place, so a stage interrupted
half way never leaves a file a later stage could mistake for a result; it is then made
readable like any other output (``0666`` less the umask: ``0644`` under the usual ``022``).
Opening a stage's writer removes the result files of an earlier run of that stage, so old
and new never mix.

Only the pipeline writes the tracked folder ``results/<stage>/``: ``dvc repro`` runs each
notebook through :mod:`experiments.pipeline.run_notebook`, which sets ``DLIO_PIPELINE_STAGE=<stage>``.
A notebook run any other way (JupyterLab, papermill by hand) is *exploring*: its writer goes
to ``explore/<notebook>/<overrides>/``, named after the notebook and the parameters that differ
from ``params.yaml`` (``as-params`` when none do), says so, and leaves the pipeline's results
(and ``dvc status``) untouched. Data a notebook generates goes the same way
(:meth:`StageResults.data_dir`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..settings import config, paths
from ..host import envinfo

PIPELINE_ENV = "DLIO_PIPELINE_STAGE"   # set by experiments.pipeline.run_notebook under `dvc repro`
EXPLORE_DIR = "explore"
RESULT_FILES = ("raw.parquet", "summary.csv", "metrics.json", "env.json", "claims.json", "figures.json")
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


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else by setting it back."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    m = os.umask(0o022)
    os.umask(m)
    return m


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``,
    readable like a file the user created (the temporary file is private until then)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())
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


def _slug(overrides: dict[str, Any]) -> str:
    """A folder name for a set of overridden parameters: ``tfdata_read.threads=1-2,...``."""
    if not overrides:
        return "as-params"

    def short(v: Any) -> str:
        if isinstance(v, (list, tuple)) and all(not isinstance(x, (dict, list)) for x in v):
            return "-".join(map(str, v))
        return json.dumps(v, separators=(",", ":"), sort_keys=True) if isinstance(v, (dict, list)) else str(v)

    text = ",".join(f"{k}={short(v)}" for k, v in sorted(overrides.items()))
    slug = re.sub(r"[^A-Za-z0-9._=,+-]+", "-", text).strip("-")
    if len(slug) > 80:
        slug = f"{slug[:60]}--{hashlib.sha1(text.encode()).hexdigest()[:8]}"
    return slug


def notebook_of(stage: str) -> str:
    """The notebook a stage runs (its first ``.ipynb`` dependency in dvc.yaml), without
    ``.ipynb``; the stage name when dvc.yaml does not say."""
    import yaml

    try:
        deps = yaml.safe_load((paths.root() / "dvc.yaml").read_text())["stages"][stage]["deps"]
        return next(Path(d).stem for d in deps if isinstance(d, str) and d.endswith(".ipynb"))
    except (OSError, KeyError, TypeError, StopIteration, yaml.YAMLError):
        return stage


def explore_dir(stage: str, overrides: dict[str, Any] | None = None) -> Path:
    """Where an exploring run of ``stage`` writes: ``explore/<notebook>/<overrides>/``."""
    ov = config.last_overrides() if overrides is None else overrides
    return paths.root() / EXPLORE_DIR / notebook_of(stage) / _slug(ov)


class StageResults:
    """Writer for one stage's results folder.

    >>> out = StageResults("tfdata_read")
    >>> out.raw(df); out.summary(summary_df); out.metrics({...}); out.env(params=...)

    Under ``dvc repro`` (``DLIO_PIPELINE_STAGE`` names this stage) it writes the tracked
    ``results/<stage>/``; otherwise it writes :func:`explore_dir` (``exploring`` is True) and
    prints where. A pipeline run of one stage cannot write another stage's folder.
    """

    def __init__(self, stage: str, clean: bool = True):
        self.stage = stage
        running = os.environ.get(PIPELINE_ENV)
        if running and running != stage:
            raise RuntimeError(
                f"dvc repro is running stage {running!r}, but its notebook opened the results of "
                f"stage {stage!r}: a stage writes only its own results/{running}/ folder")
        self.exploring = not running
        self.dir = explore_dir(stage) if self.exploring else paths.results_dir(stage)
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.exploring:
            print(f"exploring (not a `dvc repro` run): {stage}'s results go to "
                  f"{self.dir.relative_to(paths.root())}/; the pipeline's results/{stage}/ is untouched")
        if clean:
            for f in self.dir.iterdir():
                if f.name in RESULT_FILES or f.suffix in FIGURE_SUFFIXES or f.name.endswith(".tmp"):
                    f.unlink()

    def path(self, name: str) -> Path:
        return self.dir / name

    def data_dir(self, name: str) -> Path:
        """Where this run writes the data set ``name``: ``data/<name>`` in the pipeline, inside
        the exploring folder otherwise (so exploring never replaces the pipeline's data)."""
        return self.dir / "data" / name if self.exploring else paths.data_dir(name)

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
        """Headline numbers (DVC metrics): a flat mapping of a few keys from the one vocabulary
        (:data:`experiments.output.headline.KEYS`); tables go in ``.csv`` files. Floats keep 4
        significant digits (more is noise between runs, and widens ``dvc metrics show``)."""
        from .headline import KEYS  # the one vocabulary (headline imports nothing from here)

        flat = {}
        for k, v in metrics.items():
            if k not in KEYS:
                raise ValueError(f"metrics key {k!r} is not in the headline vocabulary "
                                 f"(experiments/output/headline.py KEYS: {', '.join(KEYS)}); use one of "
                                 "those, or add a key there when none says it")
            if isinstance(v, (dict, list, tuple)):
                raise ValueError(f"metrics[{k!r}] is a {type(v).__name__}: headline metrics are flat "
                                 "numbers; put tables in a .csv (StageResults.table)")
            v = _jsonable(v)
            flat[k] = float(f"{v:.4g}") if isinstance(v, float) else v
        return write_json(self.path("metrics.json"), flat)

    def env(self, **facts) -> Path:
        """Host, software, git revision and the stage's facts (parameters, eviction, tracer)."""
        return write_json(self.path("env.json"), envinfo.capture(stage=self.stage, **facts))

    def claims(self, claims: list[dict]) -> Path:
        return write_json(self.path("claims.json"), claims)

    def measured(self, measured: list) -> Path:
        """What a stage that reads no declaration measured for its declared claims
        (:class:`experiments.verdicts.measured.Measured`), as ``measured.json``: the ``claims`` stage
        joins it with the declarations (:func:`experiments.claims.table.gather`), so that a data
        or measuring stage never re-runs for an edit of what a paper says."""
        return write_json(self.path("measured.json"), [m.as_dict() for m in measured])


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
