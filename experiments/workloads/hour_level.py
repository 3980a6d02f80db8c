"""The compute model carried to the hour of the real runs it is compared with.

Why: the sleep row (``workload_sleep``) and the traced comparison's sleep, emulator and DLIO
sides sleep for the fitted compute time (:func:`.compute_model.fit_file`), and their findings
set them against real runs made beside them. The fit was made from runs of another hour, and
this shared box computes at another speed from one hour to the next: in a fresh clone K,
BERT's stage ran 31 % slower than in J, the fit gave 0.304 s a step against J's 0.227, while the
traced comparison's real BERT side took 0.223 and 0.227 s in both. The sides that slept for the
fit then computed 30 % "slower" than the real run beside them, two verdicts flipped between the
clones and six intervals did not overlap (docs/measured/2026-11-30-clone-7f6eb37,
``fit-drift.txt``). No interval over a stage's runs can hold that: every run of the fit was slow.

``compute_level: hour`` (the default): the fit is kept, line and error, and carried to this
hour's speed. Each run that sleeps is given the fit with its workload's times multiplied by the
**hour factor** (:meth:`.compute_model.ComputeModel.scaled`): the median, over the real runs made
just before it in the same stage (the same round of ``workload_sleep``, whose real runs beside the
row open each round; the same pass of ``traced_comparison``, whose real side runs first), of each
run's steady mean compute time over the mean the fit's own runs measured at that run's (G, B)
(:func:`ratio`). Against the fit's line instead, one point's factor would also take away the
line's error there (in a fresh clone L the sleep row's single points gave 0.62-1.47, most of it
the line's misfit), and the row would no longer test the fit. What the findings then test is the
fit and the emulation (a sleep, the emulator, DLIO's ``computation_time``), not whether the box
kept its speed since the fit. ``compute_level: fit``: the fit as it is, the thesis's way, right on a box whose speed
holds. Only the model ``fit`` (this box's) is carried; another model (``thesis-v100``, a file)
is another accelerator's time and is given as it is.

A run's ``run.json`` (``compute.scale``, ``compute.scale_from``) and its stage's rows
(``compute_scale``) record the factor it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

LEVELS = ("hour", "fit")


def applies(level: str, source) -> bool:
    """Whether runs sleeping on the model ``source`` at ``level`` are carried to the hour: only
    this box's fit (``fit``, or None, its default) at ``hour``. Raises ValueError on a level
    other than :data:`LEVELS`."""
    if level not in LEVELS:
        raise ValueError(f"compute_level = {level!r}; allowed: {', '.join(LEVELS)}")
    return level == "hour" and source in (None, "fit")


def ratio(steps: pd.DataFrame, model, workload: str) -> list[float]:
    """Per configuration (G, B) of ``workload`` in ``steps`` (real runs' step records, columns
    ``ranks``, ``batch_size``, ``compute_ns``, ...): the steady steps' mean compute time (the
    statistic the fit models, :func:`.fits.normal_fits`) over the mean the fit's own runs
    measured at that (G, B) (:meth:`.compute_model.ComputeModel.measured_mean`): how much faster
    or slower the box computes now than when the fit was made, at the same configuration, so
    that the fit's own error at a point (a line through the sweep) stays in what the findings
    test. Where the file has no such point (a configuration outside the fit's sweep, a file
    written before the points were kept), over the fit's mean there. Empty when no steady step
    computed or the denominator is not positive."""
    from .fits import normal_fits

    if steps is None or not len(steps):
        return []
    s = steps.assign(workload=workload) if "workload" not in steps else steps[steps["workload"] == workload]
    for k in ("ranks", "batch_size"):
        if k not in s:
            raise ValueError(f"hour_level.ratio: the steps lack column {k!r}")
    s = s.assign(repeat=s["repeat"] if "repeat" in s else 0)
    out = []
    for r in normal_fits(s).itertuples():
        then = model.measured_mean(workload, int(r.ranks), int(r.batch_size))
        if then is None:
            then = model.mean_std(workload, int(r.ranks), int(r.batch_size))[0]
        if then > 0 and np.isfinite(r.mean_s) and r.mean_s > 0:
            out.append(float(r.mean_s) / then)
    return out


def was_carried(factors) -> bool:
    """Whether sleeping runs slept for the fit carried to their hour, from the factors they
    recorded (``compute_scale``, or the time given over the fit's line): any factor finite and
    not 1. A factor of 1 is the fit as it is (no real run before the run, or the fit's level), so
    the ratio then holds the line alone, not the point's measured mean
    (:func:`experiments.workloads.intervals.fit_spread`)."""
    f = np.asarray(factors, dtype=float)
    return bool((np.isfinite(f) & (np.abs(f - 1) > 1e-9)).any())


def carried(model, workload: str, ratios: list[float], basis: str):
    """``model`` carried to the hour the ``ratios`` (:func:`ratio`) were measured in: scaled by
    their median; ``model`` itself when there is none (and the reason in ``basis`` is lost: the
    caller records that the run was given the fit as it is)."""
    if not ratios:
        return model
    return model.scaled(workload, float(np.median(ratios)), basis)


@dataclass
class Rounds:
    """The hour factors of a stage's rounds: :meth:`add` each real run's :func:`ratio` as it ends,
    :meth:`model` for a run that sleeps (its round's real runs, made before it; a round with none,
    as a focused or bought round may be, takes the latest round's that had some; none yet: the
    fit as it is, factor 1, and says so)."""

    base: object                                   # the fit (ComputeModel)
    got: dict = field(default_factory=dict)        # {(workload, repeat): [ratios]}

    def add(self, workload: str, repeat: int, steps: pd.DataFrame) -> None:
        self.got.setdefault((workload, int(repeat)), []).extend(ratio(steps, self.base, workload))

    def model(self, workload: str, repeat: int):
        """The fit carried to round ``repeat``'s hour for ``workload`` (:func:`carried`)."""
        have = sorted(r for (w, r), v in self.got.items() if w == workload and v and r <= repeat)
        if not have:   # recorded: such a run was given the fit as it is
            return self.base.scaled(workload, 1.0, "the fit as it is: no real run of the workload before "
                                                   "this one in this stage run")
        r = have[-1]
        basis = (f"median of {len(self.got[(workload, r)])} real run(s) of round {r}, each over the fit's runs "
                 "at its (G, B)"
                 + ("" if r == repeat else f" (round {repeat} had none before this run)"))
        return carried(self.base, workload, self.got[(workload, r)], basis)
