"""Claims: a paper's statement, our measured value, and a verdict computed by a written rule.

The rule language, the verdict of one claim, the host's reasons, what a stage measured and a
finding's judge at each look are :mod:`experiments.verdicts`' (what measuring stages import: no
measuring stage depends on this package); the package's code imports them from there, and the
names re-exported below serve the tests that judge through ``claims.claim``. The final
``claims`` stage gathers every stage's ``claims.json`` into ``results/claims/claims.md`` and
``claims.csv``.

The package, by job: :mod:`.declared` (the papers' side of every claim, declared per source
in ``papers/<source>.yaml``, and :func:`join` of a stage's measurements with it),
:mod:`.steering` (the declarations' part that steers measuring), :mod:`.report_levels` (a
report's findings, each at the level of its own looks) and :mod:`.table` (the claims table).
The package sits above :mod:`experiments.verdicts` and the measuring loop
(:mod:`experiments.repeats`) and below what reviews a run (:mod:`experiments.review`).
"""

from __future__ import annotations

from ..verdicts.reasons import cold_run, cores, fio_MBps, memory_gib, one_node, scale_had  # noqa: F401
from ..verdicts.rules import (DEFAULT_MARGIN, MAX_TO_DECIDE, NEVER_DECIDES, _decide, _missing,  # noqa: F401
                              _parse, _parse_magnitude, _Rule, default_margin, evaluate, rule_text,
                              samples_to_decide)
from ..verdicts.verdict import BASES, COLUMNS, KINDS, NO_INTERVAL, VERDICTS, claim  # noqa: F401
