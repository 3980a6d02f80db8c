"""Tables of docs/statistics.md's 2026-11-29 two-rank check, computed from this folder's records:
``python docs/measured/2026-11-29-warm-launch-2rank/scripts/summarize.py`` (writes summary.md)."""
import collections
import json
import statistics as st
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parents[1]


def rounds(b: str) -> pd.DataFrame:
    s = pd.read_csv(HERE / b / "steps.csv")
    r = pd.read_csv(HERE / b / "runs.csv")
    s = s[s.step > 0]   # the warm-up step left out, as compare.csv does
    r["compute_ms"] = r.run.map(s.groupby("run").compute_ns.median() / 1e6)
    p = r.pivot(index="repeat", columns="launch", values="compute_ms")
    p["warm_slower"] = p.warm > p.fresh
    return p


def colocation(b: str) -> pd.DataFrame:
    """Per run, over its training steps' window: the share of samples (every 50-200 ms) in which
    both ranks' main threads were on the same CPU's run queue, and both runnable there."""
    f = HERE / b / "sched_samples.json"
    d = json.loads(f.read_text())
    s = pd.read_csv(HERE / b / "steps.csv")
    r = pd.read_csv(HERE / b / "runs.csv").set_index("run")
    s = s[s.step > 0]
    by_t = collections.defaultdict(list)
    for t, pid, k, cpu, state in d["tl"]:
        by_t[t].append((k, cpu, state))
    out = []
    for run, g in s.groupby("run"):
        lo, hi, k = g.end_wall.min(), g.end_wall.max(), r.loc[run, "launch"]
        n = same = same_r = 0
        for t, rows in by_t.items():
            rows = [x for x in rows if x[0] == k]
            if lo <= t <= hi and len(rows) == 2:
                n += 1
                same += rows[0][1] == rows[1][1]
                same_r += rows[0][1] == rows[1][1] and rows[0][2] == rows[1][2] == "R"
        out.append({"run": run, "launch": k, "compute_ms": round(g.compute_ns.median() / 1e6, 1), "samples": n,
                    "same_cpu": round(same / n, 2) if n else None,
                    "both_runnable_same_cpu": round(same_r / n, 2) if n else None})
    return pd.DataFrame(out)


def probe() -> pd.DataFrame:
    out = []
    for f in sorted((HERE / "probe").glob("*.json")):
        d = json.loads(f.read_text())
        out.append({"run": f.stem, "intra_op": d["threads"], "interop": d["interop"], "affinity": d["affinity"],
                    "nice": d["nice"], "omp_env": d["env"].get("OMP_NUM_THREADS"),
                    "pools": ",".join(f"{p['internal_api']}:{p['num_threads']}" for p in d["pools"]),
                    "threads": d["status1"]["Threads"], "dynamo_loaded": d["dynamo"],
                    "fwd_wall_ms": round(st.median(x["fwd_ms"] for x in d["steps"][2:]), 1),
                    "fwd_cpu_ms": round(st.median(x["fwd_cpu_ms"] for x in d["steps"][2:]), 1),
                    "bwd_wall_ms": round(st.median(x["bwd_ms"] for x in d["steps"][2:]), 1),
                    "bwd_cpu_ms": round(st.median(x["bwd_cpu_ms"] for x in d["steps"][2:]), 1)})
    return pd.DataFrame(out)


def simultaneous() -> pd.DataFrame:
    """A fresh and a warm 2-rank run at the same time (scripts/simul.py): median compute and
    forward over the steps both were training (step 0 left out)."""
    out = []
    for i in range(2):
        f, w = ([pd.read_csv(x) for x in sorted((HERE / "simultaneous" / f"{m}{i}").glob("steps-r*.csv"))]
                for m in ("fresh", "warm"))
        f, w = pd.concat(f), pd.concat(w)
        f, w = f[f.step > 0], w[w.step > 0]
        lo, hi = max(f.end_wall.min(), w.end_wall.min()), min(f.end_wall.max(), w.end_wall.max())
        f, w = f[f.end_wall.between(lo, hi)], w[w.end_wall.between(lo, hi)]
        out.append({"rep": i, "overlap_s": round(hi - lo, 1), "fresh_steps": len(f) // 2, "warm_steps": len(w) // 2}
                   | {f"{m}_{q}_ms": round(d[f"{q}_ns"].median() / 1e6, 1)
                      for q in ("compute", "forward", "backward") for m, d in (("fresh", f), ("warm", w))})
    return pd.DataFrame(out)


if __name__ == "__main__":
    parts = ["# Summary (computed by scripts/summarize.py)\n"]
    slower = total = 0
    for b in ("dlrm-b1", "dlrm-b2", "dlrm-b3"):
        p = rounds(b)
        slower += int(p.warm_slower.sum())
        total += len(p)
        parts += [f"## {b}: median compute ms a step per run, by round\n", p.round(1).to_markdown(), ""]
    parts += [f"Warm slower in {slower} of {total} rounds.\n"]
    for b in ("dlrm-b2", "dlrm-b3"):
        parts += [f"## {b}: co-location of the two ranks in the training window\n",
                  colocation(b).to_markdown(index=False), ""]
    parts += ["## simultaneous: a fresh and a warm run at once (the same load)\n",
              simultaneous().to_markdown(index=False), ""]
    parts += ["## probe: what each rank sees (scripts/probe64.py under scripts/drive.py)\n",
              probe().to_markdown(index=False), ""]
    (HERE / "summary.md").write_text("\n".join(parts))
    print("\n".join(parts))
