"""``max-accelerators``: the most emulated accelerators this storage (and this client) feeds at
accelerator utilization >= 90 % (MLPerf Storage's headline figure; RetinaNet: >= 85 %, its v3.0
config's ``metric.au``).

The search runs the emulation at G = start, 2 start, 4 start, ... until a run fails the mark or
a limit is reached, then bisects between the last G that passed and the first that failed. It
assumes AU falls with G (more accelerators ask more of the storage and the client); every run
it made is in the answer, so a non-monotonic case shows. Limits, said in ``stopped_because``:
the data set (each accelerator needs its own files / batch: :func:`.config.max_accelerators_for`),
``limit`` (default 64), and the client's memory (the first run's peak RSS per rank times G must
stay under 80 % of the available memory), and the client's CPU: a run that was client-bound
(its summary's ``bound``, the verdict of :mod:`.bound` that the storage engineer's table uses
too) stops the search there, since more accelerators on this client measure the client, not
the storage (``client_bound`` in the answer; the answer is the client's limit).

Every trial starts from a cold cache (the data set evicted, :func:`experiments.host.cache.evict`):
a trial that read what the last one left in memory measured the page cache. Each trial carries
its run's device audit (``read_from``, ``device_read_ratio``: :mod:`experiments.host.device_audit`);
trials whose reads were the page cache's are listed in ``cache_served``, and an answer decided
by one gives no storage verdict (:func:`row`).
"""

from __future__ import annotations

from pathlib import Path

from ..settings.config import ConfigError
from .config import EmulatorConfig, check_config, max_accelerators_for


def _available_memory() -> int:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cold_run(cfg: EmulatorConfig, folder) -> dict:
    """One trial: the data set evicted from the page cache, then :func:`.runner.run`."""
    from ..host import cache
    from .runner import run

    cache.evict([Path(cfg.data_dir)], label=str(cfg.data_dir))
    return run(cfg, folder)


def max_accelerators(cfg: EmulatorConfig, out_dir, start: int = 1, limit: int = 64,
                     run=None, say=print) -> dict:
    """Search as the module docstring says; run folders go to ``out_dir/G<g>``. ``run``:
    a function ``(cfg, folder) -> summary`` (default :func:`cold_run`; tests pass a stub).

    Returns ``{"max_accelerators": G or 0, "trials": [{accelerators, au, au_pass, ...}],
    "stopped_because": "...", "limit": ...}`` and writes ``search.json`` and ``search.md``."""
    from ..output.results import atomic_write, write_json

    run = run or cold_run
    if start < 1 or limit < 1:
        raise ConfigError(f"start = {start}, limit = {limit}: both must be >= 1")
    layout = check_config(cfg)
    data_limit = max_accelerators_for(cfg.workload, cfg.batch_size, layout)
    hi = min(limit, data_limit)
    if start > hi:
        raise ConfigError(f"start = {start}: above the most accelerators allowed here ({hi}: "
                          f"data set {data_limit}, limit {limit})")
    out_dir = Path(out_dir)
    trials: dict[int, dict] = {}
    mem_per_rank = None

    def trial(g: int) -> bool:
        nonlocal mem_per_rank
        c = cfg.model_copy(update={"accelerators": g, "nodes": 1})
        s = run(c, out_dir / f"G{g}")
        row = {"accelerators": g, "au": s["au"], "au_pass": bool(s["au_pass"]),
               "throughput_samples_per_s": s["throughput_samples_per_s"],
               "data_bytes_per_s": s["data_bytes_per_s"], "train_s": s["train_s"],
               "bound": s.get("bound", "undetermined"), "bound_why": s.get("bound_why", ""),
               "where_time_went": s.get("where_time_went", ""),
               "read_from": (s.get("device_audit") or {}).get("read_from", "unknown"),
               "device_read_ratio": (s.get("device_audit") or {}).get("read_ratio"),
               "run_dir": str(out_dir / f"G{g}")}
        trials[g] = row
        mem_per_rank = max(mem_per_rank or 0, s.get("peak_rss_bytes_per_rank", 0))
        say(f"max-accelerators: G = {g}: AU {100 * s['au']:.1f} % -> {'pass' if row['au_pass'] else 'fail'}")
        return row["au_pass"]

    why = ""
    good, bad = 0, None
    client = None  # the first G whose run was client-bound
    g = start
    while True:
        ok = trial(g)
        if trials[g]["bound"] == "client":
            client = g
            good = g if ok else good
            break
        if ok:
            good = g
        else:
            bad = g
            break
        if g >= hi:
            why = (f"reached the data set's limit ({data_limit} accelerators at batch {cfg.batch_size})"
                   if hi == data_limit else f"reached limit = {limit}")
            break
        nxt = min(2 * g, hi)
        avail = _available_memory()
        if mem_per_rank and avail and nxt * mem_per_rank > 0.8 * avail:
            cap = int(0.8 * avail // mem_per_rank)
            if cap <= g:
                why = (f"client memory: {nxt} ranks x {mem_per_rank / 1e6:.0f} MB peak RSS per rank "
                       f"> 80 % of {avail / 1e9:.1f} GB available")
                break
            nxt = cap
        g = nxt
    if client is not None:
        why = (f"client-bound at {client} accelerators: {trials[client]['bound_why']}; the answer is "
               "this client's limit, not the storage's")
    elif bad is not None:
        lo = good
        while bad - lo > 1:
            mid = (lo + bad) // 2
            if trial(mid):
                lo = mid
            else:
                bad = mid
            if trials[mid]["bound"] == "client":
                client = mid
                break
        good = lo
        if client is not None:
            why = (f"client-bound at {client} accelerators: {trials[client]['bound_why']}; the answer "
                   "is this client's limit, not the storage's")
        mark = 100 * cfg_threshold(cfg.workload)
        why = why or (f"AU < {mark:.0f} % at {bad} accelerators" if good
                      else f"AU < {mark:.0f} % already at {start} accelerator(s)")
    rows = [trials[k] for k in sorted(trials)]
    res = {"workload": cfg.workload, "batch_size": cfg.batch_size, "compute_model": cfg.compute_model,
           "data_dir": cfg.data_dir, "max_accelerators": good, "stopped_because": why,
           "client_bound": client is not None, "au_mark": cfg_threshold(cfg.workload),
           "cache_served": [t["accelerators"] for t in rows if t.get("read_from") == "cache"],
           "limit": hi, "trials": rows}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "search.json", res)
    atomic_write(out_dir / "search.md", lambda p: p.write_text(markdown(res)))
    return res


def cfg_threshold(workload: str) -> float:
    """The AU ``workload``'s runs must reach (:func:`experiments.workloads.compute_model.au_pass_mark`)."""
    from ..workloads.compute_model import au_pass_mark
    return au_pass_mark(workload)


def markdown(res: dict) -> str:
    lines = [f"# Max accelerators, {res['workload'].upper()} batch {res['batch_size']} "
             f"({res['compute_model']})", "",
             f"**{res['max_accelerators']} emulated accelerator(s)** at AU >= {100 * cfg_threshold(res['workload']):.0f} %; "
             f"search stopped: {res['stopped_because']}.", "",
             "| accelerators | AU % | pass | samples/s | data MB/s | bound | reads from (device / job bytes) |",
             "|---|---|---|---|---|---|---|"]
    for t in res["trials"]:
        ratio = t.get("device_read_ratio")
        lines.append(f"| {t['accelerators']} | {100 * t['au']:.1f} | {'yes' if t['au_pass'] else 'no'} | "
                     f"{t['throughput_samples_per_s']:.4g} | {t['data_bytes_per_s'] / 1e6:.4g} | {t.get('bound', '')} | "
                     f"{t.get('read_from', 'unknown')}{'' if ratio is None else f' ({ratio:.2f})'} |")
    if res.get("cache_served"):
        gs = ", ".join(map(str, res["cache_served"]))
        lines += ["", f"Served from the page cache (device audit): G = {gs}; those runs say nothing about the storage."]
    return "\n".join(lines) + "\n"


def row(res: dict) -> dict:
    """One line of a table from a search's answer: the most accelerators at AU >= 90 %, the
    compute model, ``bound`` (client when the search stopped at a client-bound run, else the
    bound of the run that decided: the first failing one, or the largest passing one; ``no
    verdict`` when that run's reads were the page cache's, ``read_from`` its device audit) with
    where that run's time went, why it stopped and every G tried with its AU."""
    t = res["trials"]
    fail = [x for x in t if not x["au_pass"]]
    client = [x for x in t if x.get("bound") == "client"]
    decided = client[0] if res.get("client_bound") and client else fail[0] if fail else (t[-1] if t else {})
    cached = decided.get("read_from") == "cache"   # the deciding run measured the page cache
    return {"compute_model": res["compute_model"], "max_accelerators": res["max_accelerators"],
            "bound": "no verdict" if cached else "client" if res.get("client_bound")
            else decided.get("bound", "undetermined"),
            "read_from": decided.get("read_from", "unknown"),
            "where_time_went": decided.get("where_time_went", ""),
            "stopped_because": res["stopped_because"],
            "tried": ", ".join(f"G={x['accelerators']}: {100 * x['au']:.1f} %" for x in t)}


def tier_table(tiers, workloads, limit: int, out_root, models=("fit",), cfg=None):
    """Per tier, workload and compute model of ``models``: the most emulated accelerators at its
    AU mark (:func:`experiments.workloads.compute_model.au_pass_mark`: 90 %, RetinaNet 85 %),
    searched up to ``limit``, at the traced_comparison point's batch size with its ``overrides``
    (``cfg``: the sections ``seed``, ``traced_comparison`` and the workloads'; default: params.yaml);
    each row :func:`row`'s, or ``not measured`` with the reason."""
    import shutil

    import pandas as pd

    from ..settings import config
    from .bench import stage_data
    from .config import from_params

    cfg = cfg or config.load(seed=None, traced_comparison=None, **{w: None for w in workloads})
    tc = cfg.traced_comparison
    rows = []
    for tier in tiers:
        for w in workloads:
            pt = tc.points.get(w)
            data = stage_data(w, tier)
            for m in models:
                line = {"tier": tier.name, "workload": w, "compute_model": m,
                        "batch_size": pt.batch_size if pt else None, "limit": limit}
                try:
                    c = from_params(w, getattr(cfg, w), pt.batch_size if pt else None, 1, compute_model=m,
                                    checkpoint_pattern="traced", data_dir=data,
                                    checkpoint_dir=tier.dir / "bench-checkpoints" / w, seed=cfg.seed,
                                    overrides=tc.overrides.get(w))
                    res = max_accelerators(c, Path(out_root) / f"{tier.name}-{w}-{m}", limit=limit, say=lambda *_: None)
                    line.update(row(res), au_mark=res["au_mark"])
                except (ConfigError, RuntimeError) as e:
                    line.update(max_accelerators=None, stopped_because=f"not measured: {e}")
                rows.append(line)
        shutil.rmtree(tier.dir / "bench-checkpoints", ignore_errors=True)
    return pd.DataFrame(rows)
