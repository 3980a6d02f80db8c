"""Which configurations of a profile nothing reads: no finding's ``compares`` selects them and
no figure declares that it draws them (issue 64: only what is read is measured).

A measuring stage's **configurations** are the dicts over its keys that its rounds run once each
(:class:`experiments.repeats.MeasuringStage`); :func:`configurations` lists them from a rendered
profile (``experiments.pipeline.profile.render``) as each stage builds them: each stage's registry entry
names a function of its own module that lists them (``configs``, :func:`experiments.stages.configs_of`).

A configuration is **read** when

- a finding's ``compares`` selects it (the declarations' steering part, as the ``claim_rules``
  stage extracts it: :func:`experiments.claims.steering.extract`). A ``{name}`` value is filled
  from the profile where the stage fills it from its parameters (``{storage_tier}``: the first
  tier not memory-backed (:func:`experiments.host.cache.memory_backed`), as :func:`experiments.host.tiers.storage_tier_of` picks the first
  that reaches a device; AlexNet's ``{batch_threads}``, ``{batch_tiers}``; the checkpoint
  stage's ``{fast}``, ``{slow}``, ``{burst}``); any other ``{name}`` is a field of the finding's
  id, made for every value its report measures (``..._{tier}``), or a value the stage picks from
  its runs (LMDBIO's ``{claim_p}``, ``{switch_ps}``), and matches every value;
- or a report declares a figure that draws it: ``DRAWS`` in the report module, {figure file:
  {stage: selection}} with selections as in ``compares`` ({} = every configuration of the
  stage), listed in :data:`REPORTS`.

What this does not cover: sweeps that are not a measuring stage's configurations (DeepIO's
training orders, the fio and tracing stages, AlexNet's dstat runs, the emulator's points).
"""

from __future__ import annotations

import importlib
import re

from ..host import cache
from .. import stages

# the report modules whose DRAWS declare the configurations their figures draw
REPORTS = ("experiments.blog.report", "experiments.deepio.report", "experiments.lmdbio.report",
           "experiments.emulator.llm_report")

_FIELD = re.compile(r"\{(\w+)\}")


def storage_tier(params: dict) -> str:
    """The tier the storage findings are judged on, from the profile: the first not
    memory-backed (:func:`experiments.host.cache.memory_backed`), else the first (the run picks it from its rows the same way)."""
    tiers = params["tiers"]
    disk = [t["name"] for t in tiers if not cache.memory_backed(t["path"])]
    return (disk or [tiers[0]["name"]])[0]


def configurations(params: dict) -> dict[str, list[dict]]:
    """{measuring stage: its configurations} of a rendered profile, from each stage's registry
    entry (:func:`experiments.stages.configs_of`: the stage's own function, in its module)."""
    return {s.name: stages.configs_of(s.name, params) for s in stages.STAGES if s.configs}


def context(params: dict) -> dict[str, list]:
    """The ``{name}`` values a stage fills from its parameters (module docstring)."""
    ck = params["alexnet_checkpoint"]
    a = params["alexnet"]
    return {"storage_tier": [storage_tier(params)], "batch_threads": [a["batch_threads"]],
            "batch_tiers": list(a["batch_tiers"]), "fast": [ck["fast"]], "slow": [ck["slow"]],
            "burst": [f"{ck['fast']}>{ck['slow']}"]}


def _selects(c: dict, sel: dict, names: dict[str, list]) -> bool:
    """Whether configuration ``c`` takes one of the values ``sel`` allows on each key, as
    :func:`experiments.repeats.findings.matching` compares them; a ``{name}`` is filled from
    ``names``, and a key whose value names one not there (an id's field, a value picked at run
    time) allows every value."""
    from ..repeats.findings import matching

    filled = {}
    for k, v in sel.items():
        allowed = []
        for x in v if isinstance(v, list) else [v]:
            m = _FIELD.fullmatch(x) if isinstance(x, str) else None
            if m and m.group(1) not in names:
                allowed = None
                break
            allowed += names[m.group(1)] if m else [x]
        if allowed is not None and k in c:
            filled[k] = allowed
    return bool(matching([c], filled))


def readers(stage: str, findings=None, draws=None) -> list[tuple[str, dict]]:
    """(who, selection) of everything that reads ``stage``: each finding whose ``compares``
    names it (``findings``: {stage: [steering rows]}, default the declarations'), then each
    declared figure (``draws``: {figure: {stage: selection}}, default :func:`figure_draws`)."""
    from ..claims import steering

    rows = steering.extract(stage) if findings is None else findings.get(stage, [])
    draws = figure_draws() if draws is None else draws
    return ([(f"finding {r['id']}", r["compares"] or {}) for r in rows]
            + [(f"figure {f}", s[stage]) for f, s in draws.items() if stage in s])


def figure_draws() -> dict[str, dict[str, dict]]:
    """{figure: {stage: selection}} from every report module of :data:`REPORTS`."""
    out = {}
    for m in REPORTS:
        out.update(importlib.import_module(m).DRAWS)
    return out


def unread(params: dict, findings=None, draws=None) -> dict[str, list[dict]]:
    """{stage: the configurations of ``params`` (a rendered profile) that nothing reads}
    (stages where every configuration is read are left out)."""
    names = context(params)
    draws = figure_draws() if draws is None else draws
    out = {}
    for stage, configs in configurations(params).items():
        who = readers(stage, findings, draws)
        left = [c for c in configs if not any(_selects(c, sel, names) for _, sel in who)]
        if left:
            out[stage] = left
    return out


def read_by(params: dict, stage: str) -> list[tuple[dict, list[str]]]:
    """Each configuration of ``stage`` with who reads it (for a reader of the profile)."""
    names = context(params)
    who = readers(stage)
    return [(c, [w for w, sel in who if _selects(c, sel, names)]) for c in configurations(params)[stage]]


def main(argv=None) -> int:
    """Print the unread configurations of a profile (``python -m experiments.review.unread [profile]``)."""
    import sys

    from ..pipeline import profile

    name = (argv if argv is not None else sys.argv[1:] or ["default"])[0]
    got = unread(profile.render(name))
    for stage, cs in got.items():
        print(f"{stage}: {len(cs)} configuration(s) nothing reads")
        for c in cs:
            print("   ", c)
    if not got:
        print(f"profile {name}: every configuration of every measuring stage is read by a finding or a figure")
    return 1 if got else 0


if __name__ == "__main__":
    raise SystemExit(main())
