"""Run once, on 2026-11-29, on a copy of the reference run's checkout (the manifest's ``derived``):
the timeline files of ``results/traced_comparison/`` derived after the run from that run's own
full first-pass traces, with the function the stage now calls when it writes them
(:func:`experiments.sidebyside.stage.save_timeline_trace`), and ``timelines.json`` naming them
as the stage now does. The run had written only the full traces (2-8 MB each), which the
reference run no longer ships (stages.py ``unread``). Nothing is measured again.

    python reference/derive_timelines.py CHECKOUT   # then: python -m experiments.review.refrun record --source CHECKOUT
"""

from __future__ import annotations

import sys
from pathlib import Path

from experiments.output.results import read_json, write_json
from experiments.sidebyside.stage import save_timeline_trace
from experiments.trace import schema


def derive(checkout: Path) -> list[dict]:
    d = Path(checkout) / "results" / "traced_comparison"
    if not (d / "timelines.json").is_file():
        raise SystemExit(f"derive_timelines: CHECKOUT = {checkout}: no results/traced_comparison/timelines.json "
                         "there; allowed: a checkout where traced_comparison ran")
    listed = []
    for t in read_json(d / "timelines.json"):
        full = t.get("full_trace", t["trace"])   # a listing the stage wrote before names the full trace as "trace"
        names = save_timeline_trace(d, t["workload"], t["side"], schema.load(d / full))
        listed.append({k: t[k] for k in ("name", "workload", "side", "title", "bin_s")} | names
                      | {"io": t["io"], "phases": t["phases"]})
    write_json(d / "timelines.json", listed)
    return listed


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python reference/derive_timelines.py CHECKOUT")
    for t in derive(Path(sys.argv[1])):
        print(t["trace"], "from", t["full_trace"])
