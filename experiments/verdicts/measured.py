"""What a stage measured for a declared finding (:class:`Measured`): what its measure functions
return, whether a report joins it with the finding's declaration (:func:`.declared.join`) or a
measuring stage's rounds judge it by the rule alone (:mod:`experiments.repeats.findings`). Kept
apart from the declarations, so that code measuring a finding never reads what a paper says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..statistics.stats import Interval


@dataclass
class Measured:
    """What a stage measured for a declared claim: ``value`` (None/NaN: not measured, and
    ``why_not`` says why), its ``interval``, a ``note`` on how it was taken, ``why_not`` (what
    on this host bounds it, shown when the verdict is not a holds), ``context`` (the run's
    configuration, added to the statement: "cifar, P = 2, tier disk"), and the cold-run facts
    (:func:`experiments.verdicts.reasons.cold_run`)."""

    id: str
    value: Any = None
    interval: Interval | None = None
    note: str = ""
    why_not: str = ""
    context: str = ""
    resident_fraction: float | None = None
    memory_backed: bool = False
    # this run's configuration is one the paper did not run (a memory-backed tier where the
    # paper read from storage): the claim is our extension whatever its declared basis, with no
    # paper value, quote or magnitude
    extension: bool = False
    # a comparison of two sides that read from different places (the device audit): where each
    # read from ("real read from the page cache in 3 passes, DLIO from the device in 3"); the
    # claim is then "not comparable", its value shown, never judged
    not_comparable: str = ""

    def as_dict(self) -> dict:
        """As ``measured.json`` holds it (the interval as its fields)."""
        from dataclasses import asdict

        d = asdict(self)
        return d


def from_dict(d: dict) -> Measured:
    """A :class:`Measured` read back from ``measured.json``."""
    iv = d.get("interval")
    return Measured(**{**d, "interval": Interval(**iv) if isinstance(iv, dict) else None})
