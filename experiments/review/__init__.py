"""Reviewing a finished run: the commands a reviewer runs after ``make repro``, above the claims
(they read claims tables and the declarations' steering) and above the measuring loop
(:mod:`experiments.repeats`, whose purchases they buy).

- :mod:`.decide`: ``make decide``: price the inconclusive findings' purchases, edit
  ``params.yaml``'s ``decide`` section, run DVC.
- :mod:`.compare`: two runs' claims tables compared (flips, disjoint intervals, coverage);
  ``make compare-claims``.
- :mod:`.replicate`: ``make replicate``: measure again in a copy, compare the two tables.
- :mod:`.unread`: the configurations of a profile that no finding compares and no figure draws.
"""
