"""Compute-time model files: what a ``sleep`` run, the emulator and DLIO's config read.

A compute model says how long one training step computes on some accelerator, per workload,
as a normal distribution whose mean and standard deviation are linear in the number of
accelerators G (ranks) and the batch size B (per rank for UNET3D and BERT, global for DLRM),
as the thesis fitted them (Eq 5.1-5.6)::

    {
      "schema": "compute-model/1",
      "host": "where it was measured (free text)",
      "workloads": {
        "unet3d": {"mean": {"coef": {"G": 0.0028, "B": 0.2755, "c": 0.2722}},
                   "std":  {"coef": {"G": 0.0080, "B": 0.0115, "c": -0.0487}}},
        ...
      }
    }

All values are seconds; other keys (``r2``, ``ci95``, ``thesis``, ...) are kept and ignored.
A drawn step time is ``max(0, Normal(mean(G, B), max(0, std(G, B))))``.

Evaluation steps (optional): a workload entry may hold ``"eval": {"mean_s": ..., "std_s": ...}``,
one evaluation step's time (UNET3D: one case's sliding window at batch 1, the thesis's
N(8.403, 4.442), Sec 5.1.3); the fit file's top-level ``unet3d_eval`` is read the same way.
Without one, an evaluation step draws from the training model, as the thesis approximated
BERT's and DLRM's evaluation (Sec 5.2.2, 5.3.2).

UNET3D's evaluation time may also grow with the case: ``"s_per_MB"`` and ``"intercept_s"``
beside ``mean_s`` (the fit's OLS of the window time on the image size, as the thesis found it
linear in the size); an evaluation step of a case of ``mb`` MB (float32 image) then has mean
``intercept_s + s_per_MB * mb`` and the entry's ``std_s``.

Sources :func:`load` accepts: a path to such a file; ``"fit"`` (or None), the model this box
fitted (``results/workload_fits/compute_model.json``); ``"thesis-v100"``, the thesis's V100
DGX-1 coefficients, built from :mod:`experiments.settings.reference` (never typed twice), so a laptop can
emulate a V100; ``"zero"``, 0 s for every step and evaluation (a storage-only load).
:func:`load` is the only reader of a model file. What a run is given is resolved once, at
launch, by :meth:`ComputeModel.run_facts` (:func:`resolve`: load and resolve) into the run's
``run.json`` (``compute``); the rank programs, the emulator's summary and the reports read
those numbers and never the file. ``python -m experiments.workloads.compute_model export thesis-v100 > my.json``
writes one to edit for another accelerator.

Accelerator utilization, MLPerf Storage's pass mark (thesis Eq 3.1, 3.2): ideal compute time =
samples / (B x G) x sleep time; AU = ideal compute time / total run time.
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..settings import paths, reference
from ..settings.config import ConfigError, check_schema_file, read_json_file

SCHEMA = "compute-model/1"
WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")
ZERO = "zero"  # 0 s per step and per evaluation: the storage-only load (benchmarks)
V3 = "mlperf-v3.0"  # MLPerf Storage v3.0's computation_time (RetinaNet's retinanet_b200.yaml)
BUILTIN = ("fit", "thesis-v100", ZERO, V3)
MLPERF_AU_PASS = 0.90  # MLPerf Storage: accelerator utilization >= 90 % (UNET3D; thesis Sec 3)


def au_pass_mark(workload: str) -> float:
    """The accelerator utilization a run of ``workload`` must reach: the v3.0 RetinaNet config's
    ``metric.au`` (0.85) for RetinaNet, MLPerf Storage's 90 % for the thesis's workloads."""
    return reference.MLPERF_V3_RETINANET["au"] if workload == "retinanet" else MLPERF_AU_PASS


def fit_file() -> Path:
    """The model this box fitted (written by the ``workload_fits`` stage)."""
    return paths.results_dir("workload_fits") / "compute_model.json"


def thesis_v100() -> dict:
    """The thesis's Eq 5.1-5.6 (V100 DGX-1) as a model file."""
    out = {"schema": SCHEMA, "host": "thesis: NVIDIA DGX-1, 8x V100 (Ho-Von 2023, Eq 5.1-5.6)",
           "workloads": {w: {s: {"coef": {k: m[s][k] for k in ("G", "B", "c")}, "r2": m[s]["r2"]}
                             for s in ("mean", "std")}
                         for w, m in reference.HOVON_COMPUTE_FITS.items()}}
    ev = reference.HOVON_UNET3D_EVAL_S
    out["workloads"]["unet3d"]["eval"] = {"mean_s": ev["mean"], "std_s": ev["std"]}
    return out


def zero_model() -> dict:
    """The ``zero`` model as a model file: every step and evaluation computes 0 s."""
    z = {"coef": {"G": 0.0, "B": 0.0, "c": 0.0}}
    return {"schema": SCHEMA, "host": "none: no compute (storage-only load)",
            "workloads": {w: {"mean": z, "std": z, "eval": {"mean_s": 0.0, "std_s": 0.0}} for w in WORKLOADS}}


@dataclass
class ComputeModel:
    """A validated model file; ``source`` names where it came from (for messages and env.json)."""

    source: str
    host: str
    workloads: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # other top-level keys of the file (unet3d_eval, ...)
    scale: dict = field(default_factory=dict)  # {workload: (factor, basis)} of :meth:`scaled`

    def require(self, workload: str) -> dict:
        if workload not in self.workloads:
            raise ConfigError(
                f"compute model {self.source}: no entry for workload {workload!r} under 'workloads'; "
                f"it has: {', '.join(sorted(self.workloads)) or 'none'}")
        return self.workloads[workload]

    def mean_std(self, workload: str, G: int, B: int) -> tuple[float, float]:
        """(mean, std) of one step's compute time in seconds; std clipped at 0, mean not."""
        m = self.require(workload)
        f = lambda c: c["G"] * G + c["B"] * B + c["c"]  # noqa: E731
        return float(f(m["mean"]["coef"])), max(0.0, float(f(m["std"]["coef"])))

    def measured_mean(self, workload: str, G: int, B: int) -> float | None:
        """The mean compute time (s) the model's own runs measured at (G, B) (the fit file's
        ``measured`` points, :func:`.fits.model_file`), None where it has none."""
        for p in self.require(workload).get("measured") or []:
            if int(p.get("G", -1)) == int(G) and int(p.get("B", -1)) == int(B):
                return float(p["mean_s"])
        return None

    def sampler(self, workload: str, G: int, B: int, seed: int):
        """A function drawing one step's compute time in seconds (floored at 0)."""
        mu, sd = self.mean_std(workload, G, B)
        rng = np.random.default_rng(seed)
        return lambda: max(0.0, float(rng.normal(mu, sd)) if sd > 0 else mu)

    def _eval_entry(self, workload: str) -> dict | None:
        m = self.require(workload)
        ev = m.get("eval") or self.extra.get(f"{workload}_eval")
        return ev if isinstance(ev, dict) and "mean_s" in ev else None

    def eval_mean_std(self, workload: str, G: int, B: int) -> tuple[float, float, str]:
        """(mean, std, where from) of one evaluation step in seconds (module docstring)."""
        ev = self._eval_entry(workload)
        if ev is not None:
            return float(ev["mean_s"]), max(0.0, float(ev.get("std_s", 0.0))), "eval"
        return (*self.mean_std(workload, G, B), "train")

    def run_facts(self, workload: str, G: int, B: int) -> dict:
        """The compute a run of ``workload`` at G accelerators and batch B is given, resolved to
        seconds (written into its ``run.json`` as ``compute``, so the rank programs and every
        reader need neither this module nor the file): ``mean_s``, ``std_s`` of a training
        step; ``eval_mean_s``, ``eval_std_s`` of an evaluation step and ``eval_from`` (``eval``:
        the model's evaluation entry, ``train``: the training model); with a per-MB evaluation
        entry also ``eval_s_per_MB`` and ``eval_intercept_s`` (module docstring); ``source`` and
        ``host`` of the model."""
        mu, sd = self.mean_std(workload, G, B)
        emu, esd, efrom = self.eval_mean_std(workload, G, B)
        out = {"mode": "sleep", "source": self.source, "host": self.host, "mean_s": mu, "std_s": sd,
               "eval_mean_s": emu, "eval_std_s": esd, "eval_from": efrom}
        ev = self._eval_entry(workload) or {}
        if "s_per_MB" in ev and "intercept_s" in ev:
            out |= {"eval_s_per_MB": float(ev["s_per_MB"]), "eval_intercept_s": float(ev["intercept_s"])}
        if workload in self.scale:
            out |= {"scale": self.scale[workload][0], "scale_from": self.scale[workload][1]}
        return out

    def scaled(self, workload: str, factor: float, basis: str) -> "ComputeModel":
        """This model with ``workload``'s every time (the mean's and std's coefficients, the
        evaluation entry's seconds) multiplied by ``factor``: the same shape over G and B at
        another speed of the box (:mod:`.hour_level`); ``basis`` says where the factor came
        from. Its :meth:`run_facts` carry ``scale`` and ``scale_from``."""
        if not (isinstance(factor, (int, float)) and np.isfinite(factor) and factor > 0):
            raise ValueError(f"compute model scale factor = {factor!r}; allowed: a finite number > 0")
        w = copy.deepcopy(self.require(workload))
        for stat in ("mean", "std"):
            w[stat]["coef"] = {k: float(v) * factor for k, v in w[stat]["coef"].items()}
        for p in w.get("measured") or []:
            p.update({k: float(p[k]) * factor for k in ("mean_s", "std_s") if k in p})
        extra = copy.deepcopy(self.extra)
        for ev in (w.get("eval"), extra.get(f"{workload}_eval")):
            if isinstance(ev, dict):
                for k in ("mean_s", "std_s", "s_per_MB", "intercept_s"):
                    if isinstance(ev.get(k), (int, float)):
                        ev[k] = float(ev[k]) * factor
        return ComputeModel(self.source, self.host, {**self.workloads, workload: w}, extra,
                            {**self.scale, workload: (float(factor), basis)})

    def facts(self) -> dict:
        """What env.json records about the model used."""
        return {"source": self.source, "host": self.host}

    def as_file(self) -> dict:
        """The model as a file of this schema (to keep a copy beside the runs that used it)."""
        out = {"schema": SCHEMA, "host": self.host, "source": self.source,
               "workloads": self.workloads, **self.extra}
        if self.scale:   # read back by load(): a scaled model keeps saying so
            out["scale"] = {w: {"factor": f, "from": b} for w, (f, b) in self.scale.items()}
        return out


def v3_model() -> dict:
    """MLPerf Storage v3.0's RetinaNet config as a model file: its one ``computation_time``
    (0.04755 s a step at batch 24 on a B200) with no G or B term and no spread (the config gives
    one point); RetinaNet only."""
    t = reference.MLPERF_V3_RETINANET["computation_time"]
    return {"schema": SCHEMA, "host": "MLPerf Storage v3.0 retinanet_b200.yaml (B200, batch 24)",
            "workloads": {"retinanet": {"mean": {"coef": {"G": 0.0, "B": 0.0, "c": t}},
                                        "std": {"coef": {"G": 0.0, "B": 0.0, "c": 0.0}}}}}


def _check(obj, source: str) -> ComputeModel:
    where = f"compute model {source}"
    for w, m in check_schema_file(obj, where, SCHEMA, "compute-model",
                                  "{mean: {coef: {G, B, c}}, std: ...}").items():
        for stat in ("mean", "std"):
            coef = (m or {}).get(stat, {}).get("coef") if isinstance(m, dict) else None
            if not isinstance(coef, dict):
                raise ConfigError(f"{where}: workloads.{w}.{stat}.coef is missing; "
                                  "allowed: a mapping with numbers G, B and c (seconds)")
            for k in ("G", "B", "c"):
                v = coef.get(k)
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
                    raise ConfigError(f"{where}: workloads.{w}.{stat}.coef.{k} = {v!r}; "
                                      "allowed: a finite number (seconds)")
        ev = m.get("eval")
        if ev is not None:
            for k in ("mean_s", "std_s"):
                v = ev.get(k) if isinstance(ev, dict) else None
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v):
                    raise ConfigError(f"{where}: workloads.{w}.eval.{k} = {v!r}; "
                                      "allowed: a finite number (seconds)")
    extra = {k: v for k, v in obj.items() if k not in ("schema", "host", "workloads", "source", "scale")}
    scale = {}
    for w, f in (obj.get("scale") or {}).items():
        if not (isinstance(f, dict) and isinstance(f.get("factor"), (int, float)) and f["factor"] > 0):
            raise ConfigError(f"{where}: scale.{w} = {f!r}; allowed: {{factor: a number > 0, from: text}} "
                              "(written by ComputeModel.as_file)")
        scale[w] = (float(f["factor"]), str(f.get("from", "")))
    return ComputeModel(source=source, host=str(obj.get("host", "unknown")),
                        workloads=obj["workloads"], extra=extra, scale=scale)


def load(source: str | Path | None = None) -> ComputeModel:
    """The model named by ``source`` (see the module docstring), validated.

    Raises :class:`ConfigError` naming the file and the key when the file is missing, is not
    JSON, or is of another schema.
    """
    if source in (None, "fit"):
        p = fit_file()
        if not p.exists():
            raise ConfigError(f"compute model {p}: missing; run `dvc repro workload_fits` first, "
                              f"or name a file or one of: {', '.join(BUILTIN)}")
        source = str(p)
    if source == "thesis-v100":
        return _check(thesis_v100(), "thesis-v100")
    if source == ZERO:
        return _check(zero_model(), ZERO)
    if source == V3:
        return _check(v3_model(), V3)
    p = paths.resolve(source)
    obj = read_json_file(p, "compute model", f"a compute-model JSON file or one of: {', '.join(BUILTIN)}")
    return _check(obj, str(p))


def resolve(source, workload: str, G: int, B: int) -> dict:
    """:meth:`ComputeModel.run_facts` of the model ``source`` names (:func:`load`) for
    ``workload`` at G accelerators and batch B: what goes into a run's ``run.json``."""
    return load(source).run_facts(workload, G, B)


def ideal_compute_s(samples: int, batch_size: int, accelerators: int, sleep_s: float) -> float:
    """Eq 3.2: the compute time a run would take with no I/O stall, seconds.

    ``samples`` are all accelerators' samples together; ``batch_size`` is per accelerator.
    """
    if batch_size < 1 or accelerators < 1:
        raise ValueError(f"batch_size = {batch_size}, accelerators = {accelerators}: both must be >= 1")
    return samples / (batch_size * accelerators) * sleep_s


def accelerator_utilization(ideal_s: float, run_s: float) -> float:
    """Eq 3.1 as a fraction (the thesis writes it x100): ideal compute time / total run time."""
    return float("nan") if run_s <= 0 else ideal_s / run_s


def parser():
    """The command line (``export SOURCE`` or ``show SOURCE [WORKLOAD G B]``)."""
    from ..settings import config

    ap = config.ArgumentParser(prog="python -m experiments.workloads.compute_model")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=config.ArgumentParser)
    sub.add_parser("export", help="print a model file").add_argument("source")
    s = sub.add_parser("show", help="validate a model, and print mean/std at one point")
    s.add_argument("source")
    s.add_argument("point", nargs="*", help="WORKLOAD G B")
    return ap


class _Point(BaseModel):
    """``show``'s point, validated as params.yaml's sections are."""
    workload: Literal["unet3d", "bert", "dlrm", "retinanet"]
    G: int = Field(ge=1, description="accelerators (ranks)")
    B: int = Field(ge=1, description="batch size")


def main(argv=None) -> int:
    """``python -m experiments.workloads.compute_model export thesis-v100`` (print a model file)
    or ``show SOURCE [WORKLOAD G B]`` (validate, and print mean/std in seconds)."""
    from ..settings import config

    ap = parser()
    a = ap.parse_args(argv)
    try:
        point = None
        if a.cmd == "show" and a.point:
            if len(a.point) != 3:
                raise ConfigError(f"point = {' '.join(a.point)!r}; allowed: WORKLOAD G B "
                                  "(e.g. dlrm 2 8192)")
            point = config.check_args(_Point, dict(zip(("workload", "G", "B"), a.point)))
        m = load(a.source)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.cmd == "export":
        print(json.dumps({"schema": SCHEMA, "host": m.host, "workloads": m.workloads}, indent=1))
        return 0
    print(f"{m.source} ({m.host}): workloads {', '.join(sorted(m.workloads))}")
    if point is not None:
        mu, sd = m.mean_std(point.workload, point.G, point.B)
        print(f"{point.workload} G={point.G} B={point.B}: mean {mu:.6g} s, std {sd:.6g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
