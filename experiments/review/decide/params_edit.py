"""``make decide``'s edit of ``params.yaml``: the purchases appended to its ``decide`` section
(the rest of the file, comments included, as it was), and a purchase the minutes cut short
recorded as the runs it made."""

from __future__ import annotations

from pathlib import Path

import yaml

from ...repeats.purchases import Purchase


def read(root: Path) -> tuple[str, dict]:
    text = (root / "params.yaml").read_text()
    return text, yaml.safe_load(text)


def write(root: Path, text: str) -> None:
    from ...output.results import atomic_write

    atomic_write(root / "params.yaml", lambda t: t.write_text(text))


def next_run(params: dict) -> int:
    """The number of the next decide run (1 after none)."""
    runs = [p.get("run", 0) for ps in (params.get("decide") or {}).values() for p in (ps or [])]
    return max(runs, default=0) + 1


def with_purchases(text: str, params: dict, offers, run: int) -> str:
    """``params.yaml`` with ``offers`` (:class:`.pricing.Offer`) appended to its ``decide``
    section as purchases of run ``run``."""
    dec = dict(params.get("decide") or {})
    for o in offers:
        p = Purchase(run=run, configs=o.configs, runs=o.runs, top_up=o.top_up, top_up_runs=o.top_up_runs)
        dec[o.stage] = list(dec.get(o.stage) or []) + [p.record()]
    return replace_section(text, "decide", dec)


def with_runs_made(text: str, params: dict, made: dict[str, int], run: int) -> str:
    """``params.yaml`` with run ``run``'s purchase of each stage in ``made`` recorded as the runs
    it made ({stage: runs}; 0 removes it): its bought runs first, then whole rounds of its
    top-up (the runs of a top-up round cut short are rows no re-run from scratch runs)."""
    dec = dict(params.get("decide") or {})
    for stage, n in made.items():
        mine = [Purchase(**p) for p in dec.get(stage) or [] if p["run"] == run]
        keep = [p for p in dec.get(stage) or [] if p["run"] != run]
        if mine and n:
            p = mine[0]
            top = (n - p.runs) // len(p.top_up) if p.top_up and n > p.runs else 0
            keep.append(p.model_copy(update={"runs": min(n, p.runs), "top_up_runs": top}).record())
        dec[stage] = keep
    return replace_section(text, "decide", dec)


def replace_section(text: str, name: str, value: dict) -> str:
    """``text`` (a YAML file of top-level sections) with section ``name`` replaced by ``value``
    (appended when absent); the other sections' lines, comments included, kept."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"{name}:")), None)
    new = yaml.safe_dump({name: value}, sort_keys=False, default_flow_style=False, width=100)
    if start is None:
        return text + ("" if text.endswith("\n") else "\n") + new
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\n", "#", "-")),
               len(lines))
    return "".join(lines[:start]) + new + "".join(lines[end:])
