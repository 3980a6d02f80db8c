"""Which configurations of a profile nothing reads: no finding's ``compares`` selects them and
no figure declares that it draws them (issue 64: only what is read is measured).

A measuring stage's **configurations** are the dicts over its keys that its rounds run once each
(:class:`experiments.repeats.MeasuringStage`); :func:`configurations` lists them from a rendered
profile (``experiments.profile.render``) as each stage builds them, through the stage's own
helper where it has one (AlexNet's sweeps and checkpoint modes, the blog's runs, the workload
rows' grids) and by the same product where the stage builds them inline (tf.data, DeepIO,
LMDBIO, the workloads' sweeps, the traced comparison, LLM checkpointing).

A configuration is **read** when

- a finding's ``compares`` selects it (the declarations' steering part, as the ``claim_rules``
  stage extracts it: :func:`experiments.claims.steering.extract`). A ``{name}`` value is filled
  from the profile where the stage fills it from its parameters (``{storage_tier}``: the first
  tier not memory-backed (:func:`experiments.cache.memory_backed`), as :func:`experiments.tiers.storage_tier_of` picks the first
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

from .. import cache

# the report modules whose DRAWS declare the configurations their figures draw
REPORTS = ("experiments.blog.report", "experiments.deepio.report", "experiments.lmdbio.report",
           "experiments.emulator.llm_report")

_FIELD = re.compile(r"\{(\w+)\}")


def _tiers(params: dict, names=None) -> list[str]:
    every = [t["name"] for t in params["tiers"]]
    return every if names is None else [t for t in names if t in every]


def storage_tier(params: dict) -> str:
    """The tier the storage findings are judged on, from the profile: the first not
    memory-backed (:func:`experiments.cache.memory_backed`), else the first (the run picks it from its rows the same way)."""
    tiers = params["tiers"]
    disk = [t["name"] for t in tiers if not cache.memory_backed(t["path"])]
    return (disk or [tiers[0]["name"]])[0]


def configurations(params: dict) -> dict[str, list[dict]]:
    """{measuring stage: its configurations} of a rendered profile (module docstring)."""
    from .. import config
    from ..chien import alexnet, alexnet_checkpoint
    from ..blog.tfrecord import run_configs

    sec = lambda name: config.validate(name, params[name])   # noqa: E731
    tiers = _tiers(params)
    out: dict[str, list[dict]] = {}
    t = params["tfdata_read"]
    out["tfdata_read"] = [{"tier": x, "variant": v, "threads": n} for x in tiers for v in t["variants"]
                          for n in t["threads"]]
    a = sec("alexnet")
    pre = alexnet.prefetch_configs(_tiers(params, a.tiers), a)
    out["alexnet_prefetch"] = ([{"experiment": "prefetch", **c} for c in pre]
                               + [{"experiment": "batch", **c} for c in alexnet.batch_configs(a, pre)])
    out["alexnet_checkpoint"] = [{"mode": m["mode"], "target": m["target"]}
                                 for m in alexnet_checkpoint.checkpoint_modes(sec("alexnet_checkpoint"))]
    d = params["deepio"]
    nodes = [n for n in d.get("nodes", [1]) if n != "all"] or [1]
    out["deepio"] = [{"tier": x, "mode": m, "R": r, "P": p, "nodes": n} for x in tiers
                     for m in ("ordered", "opportunistic") for r in d["ratios"] for p in d["procs"]
                     for n in nodes if n <= p]
    lm = params["lmdbio"]
    nodes = [n for n in lm.get("nodes", [1]) if n != "all"] or [1]
    out["lmdbio"] = [{"tier": x, "dataset": ds["name"], "strategy": s, "P": p, "nodes": n} for x in tiers
                     for ds in lm["datasets"] for s in lm["strategies"] for p in lm["procs"] for n in nodes]
    b = params["blog"]
    out["blog"] = [{k: c.get(k) for k in ("framework", "tier", "format", "threads", "workers")}
                   for c in run_configs(tiers, b["threads"], b["workers"])]
    for w in ("unet3d", "bert", "dlrm"):
        s = params[w]["sweep"]
        out[w] = [{"workload": w, "variant": "real", "ranks": g, "batch_size": n}
                  for g in s["ranks"] for n in s["batch_sizes"]]
    ws = sec("workload_sleep")
    out["workload_sleep"] = []
    for w in ws.workloads:
        g, bs = ws.grid(sec(w).sweep, "workload_sleep")
        out["workload_sleep"] += [{"workload": w, "variant": "sleep", "ranks": r, "batch_size": n} for r in g for n in bs]
        if w == "unet3d":
            out["workload_sleep"] += [{"workload": w, "variant": f"prep-{m}", "ranks": r, "batch_size": n}
                                      for m in ws.fig_a3.modes for r in (ws.fig_a3.ranks or g) for n in bs]
    wr = sec("workload_random")
    out["workload_random"] = []
    for w in wr.workloads:
        g, bs = wr.grid(sec(w).sweep, "workload_random")
        out["workload_random"] += [{"workload": w, "variant": "random", "ranks": r, "batch_size": n} for r in g for n in bs]
    out["traced_comparison"] = [{"workload": w} for w in params["traced_comparison"]["points"]]
    lc = params["llm_checkpoint"]
    memory = {t["name"] for t in params["tiers"] if cache.memory_backed(t["path"])}
    out["llm_checkpoint"] = [{"tier": x, "variant": v} for x in lc["tiers"] for v in ("fsync", "no-fsync", "direct")
                             if not (v == "direct" and (x in memory or not lc.get("read_direct", True)))]
    return out


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

    from .. import profile

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
