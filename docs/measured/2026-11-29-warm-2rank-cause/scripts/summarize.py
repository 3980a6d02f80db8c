"""summary.md from the records here: per probe round, each launch's per-step CPU and wall time against the fresh
pair's of the same round (the pairs ran at the same time: ab.py's go barrier), page faults and memory, and the
real DLRM's same-load pairs (simul2.py). Run from this folder: python scripts/summarize.py > summary.md"""
import pandas as pd

QS = ("fwd_cpu", "bwd_cpu", "proc_cpu", "fwd_ms", "bwd_ms", "step_ms")
print("# Summary (computed by scripts/summarize.py from the records here)\n")
for name, what in (("probe-sequential", "one round, the three launches one after another (quiet box, load 0.4 to 1.8)"),
                   ("probe-noddp", "probe without DDP, 4 launches at the same time a round"),
                   ("probe-ddp", "probe under DDP (gloo all-reduce of 64 MiB of gradients a step), 3 launches at the same time a round")):
    s, r = pd.read_csv(f"{name}/steps.csv"), pd.read_csv(f"{name}/runs.csv")
    s = s[s.step >= 3]   # the first steps (allocations, copy-on-write of the parent's pages) left out
    # per run (mode, round): the median over its steps of each rank, averaged over its two ranks
    per = s.groupby(["mode", "round", "rank"])[[q for q in QS if q in s] + ["fwd_flt", "bwd_flt"]].median().groupby(["mode", "round"]).mean()
    qs = [q for q in QS if q in per]
    print(f"## {name}: {what}\n")
    print("Median a step (ms; faults: minor page faults of the rank's main thread), per launch, over its runs:\n")
    print(per.groupby("mode").median().round(1).to_markdown(), "\n")
    fresh = per.xs("fresh", level="mode")
    rows = []
    for mode in sorted(set(per.index.get_level_values("mode")) - {"fresh"}):
        m = per.xs(mode, level="mode")
        rat = (m[qs] / fresh.loc[m.index, qs])
        rows.append({"launch": mode, "rounds": len(rat)} | {f"{q} ratio median": round(rat[q].median(), 3) for q in qs}
                    | {f"{q} slower in": f"{int((rat[q] > 1).sum())}/{len(rat)}" for q in qs}
                    | {f"{q} ratio range": f"{rat[q].min():.3f}-{rat[q].max():.3f}" for q in ("fwd_cpu", "bwd_cpu")})
    print("Against the fresh pair of the same round (ratio > 1: slower):\n")
    print(pd.DataFrame(rows).set_index("launch").T.to_markdown(), "\n")
    mem = r.groupby("mode")[["modules", "gc_frozen", "after_AnonHugePages_kB", "after_Private_Dirty_kB", "after_Shared_Dirty_kB"]].median()
    print("Per rank (median): modules loaded, objects frozen (gc.freeze), transparent huge pages, private and shared dirty memory after the steps:\n")
    print(mem.to_markdown(), "\n")
d = pd.read_csv("dlrm-same-load/simultaneous.csv")
print("## dlrm-same-load: the real DLRM, B = 2048, G = 2, a fresh (torchrun) and a forked run at the same time\n")
print(d.round(3).to_markdown(index=False), "\n")
print(f"Forked slower in {int((d.ratio > 1).sum())} of {len(d)} pairs; compute ratio forked/fresh {d.ratio.min():.3f} to {d.ratio.max():.3f}.")

print("\n## launch-test: launch_bench, DLRM at the default profile (B = 512, G = 2, 20 steps), 10 alternating rounds\n")
c = pd.read_csv("launch-test/compare.csv")
print(c[["quantity", "fresh_share", "fresh_share_lo", "fresh_share_hi", "warm_share", "warm_share_lo", "warm_share_hi",
         "warm_share_not_smaller", "intervals_overlap", "fresh_startup_s", "warm_startup_s", "fresh_wall_s", "warm_wall_s"]]
      .round(3).to_markdown(index=False), "\n")
runs, st = pd.read_csv("launch-test/runs.csv"), pd.read_csv("launch-test/steps.csv")
runs["compute_ms"] = runs["run"].map(st[st.step > 0].groupby("run").compute_ns.median() / 1e6)
p = runs.pivot_table(index="repeat", columns="launch", values="compute_ms")
p["ratio"] = p["warm"] / p["fresh"]
print("Median compute a step per run (ms), by round (the launches one after another, not at the same time):\n")
print(p.round(3).to_markdown(), "\n")
print(f"Forked slower in {int((p.ratio > 1).sum())} of {len(p)} rounds; ratio median {p.ratio.median():.3f} "
      f"[{p.ratio.min():.3f}, {p.ratio.max():.3f}].")
