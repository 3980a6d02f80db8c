"""Verdicts: what a measuring stage needs to judge its findings at each look and to write what it
measured, below the claims table and its declarations (:mod:`experiments.claims`), so that a
change to the table's code re-measures no stage.

A rule is a short string kept next to the claim, evaluated on our value:

    "> 1.5"   ">= 0.9"   "< 1"   "<= 0.1"   "within 15% of 112"   "between 0.8 and 1.2"

A finding whose paper states a number also has a magnitude rule on ours / paper:

    "within 2x"   "within 25%"

Every claim has a ``kind``: ``finding`` (a paper's result, measured again here) or ``check``
(a property of our generators, metric or tools). A claim whose data is missing is still
written, with the verdict ``not measured`` and the reason; a rule that does not parse is an
error in the stage that writes it, with or without data. A failing finding's reason
(``why_not``) is computed from this host's measurements (:func:`.reasons.cores`,
:func:`.reasons.fio_MBps`, :func:`.reasons.memory_gib`), and a claim measured after an eviction
that left more than 5 % of the data set in the page cache is marked as warm
(:func:`.reasons.cold_run`).

A finding's direction is judged on the 95 % confidence interval of our value
(:mod:`experiments.statistics.stats`, from the stage's runs or per-step/per-read samples): it holds when
the whole interval satisfies the rule (with a margin, below: lies past the margin's edge),
fails when the whole interval violates it, and is ``inconclusive`` when the interval straddles
the rule's threshold (or satisfies it but reaches into the margin). Each direction rule carries a
margin of no material effect (:func:`.rules.default_margin`: 5 % for a ratio against 1): an interval
inside it ``fails`` as ``negligible`` (shown and counted as ``fails (negligible)``); an interval
that straddles the threshold but ends short of the margin's edge on the side the statement
claims (``> 1`` with its high end at most 1.05) ``fails`` too: the effect the statement means is
ruled out (:func:`.verdict._short_of_margin`). A finding
with a value but no interval (one sample), with too few samples for its interval's level, or
whose value lies outside its own interval is ``inconclusive``: a point value alone never holds
or fails. A check
keeps its verdict on the point value. Each finding says whether its paper states it, only
implies it, or is our extension (``basis``).

``holds`` (direction), ``magnitude_holds`` and ``verdict`` (``holds``, ``direction only``,
``inconclusive``, ``fails``, ``not measured``, and ``not comparable`` for a comparison of two
sides whose reads came from different places by the device audit) are never typed in;
:func:`.verdict.claim` computes them.

The package, by job: :mod:`.rules` (the rule language, margins, the forecast), :mod:`.verdict`
(:func:`.verdict.claim`: the verdict of one claim), :mod:`.reasons` (the host's reasons and the
rows a finding is judged on), :mod:`.measured` (:class:`.measured.Measured`: what a stage
measured for one claim, written as ``measured.json``) and :mod:`.looks` (a stage's findings
judged at each look of its rounds: the measuring loop's ``judge``, reading no declaration). It
sits above the measuring loop (:mod:`experiments.repeats`, whose findings' steering
:mod:`.looks` reads) and below the claims (:mod:`experiments.claims`), which it imports nothing
of: a measuring stage depends on this package and on no module of ``claims/``
(``tests/test_stages.py``).
"""
