"""The measuring loop, written once for every measuring stage: runs repeated in rounds, the
looks, the forecast and the futility stop, the runs ``make decide`` buys. It imports nothing of
:mod:`experiments.claims` (a stage's findings are judged by a ``judge`` the stage passes in,
:func:`experiments.verdicts.looks.judge`); what reviews a finished run (``make decide``,
``make replicate``, ``make compare-claims``) is :mod:`experiments.review`, above the claims.

A newcomer's map (each module small enough to read in one sitting):

- :mod:`.stage`: the one interface a measuring stage fills in (:class:`MeasuringStage`: its
  configuration keys, how to run one configuration once, what it keeps) and :func:`measure`,
  the loop that runs it, rounds first, then purchases.
- :mod:`.rounds`: the rounds in a seeded order and their looks (:class:`RoundsPlan`).
- :mod:`.futility`: the forecast that steers the rounds and stops findings out of reach.
- :mod:`.levels`: the one alpha and the one Bonferroni level of every look.
- :mod:`.findings`: a stage's findings as its rounds see them (rules, margins and the
  configurations each compares, from the declarations' steering part) and the rounds' focus.
- :mod:`.purchases`: the runs ``make decide`` bought (``params.yaml``'s ``decide``) and the
  level they are judged at.
- :mod:`.variance`: the between-run and within-run variance of each compared quantity, and what
  a run and a step cost (how the runs and steps of each stage were chosen).
"""

from .futility import Judged  # noqa: F401
from .levels import ALPHA, level, level_of  # noqa: F401
from .purchases import FIRST, DecideParams, Purchase  # noqa: F401
from .rounds import RoundsPlan  # noqa: F401
from .stage import Measurement, MeasuringStage, Run, measure  # noqa: F401
