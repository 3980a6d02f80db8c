"""The compute rows that sleep for the fit, before (stored / replayed by 7de8c48's code) and after
(replayed by this change's), per clone: python rows.py > rows.txt"""
import pandas as pd

HERE = "docs/measured/2026-11-30-fit-spread"
BEFORE = {"M": "docs/measured/2026-11-30-clones-M-N/claims-M-replayed.csv",
          "N": "docs/measured/2026-11-30-clones-M-N/claims-N.csv"}
for x, before in BEFORE.items():
    a = pd.read_csv(before).set_index("id")
    b = pd.read_csv(f"{HERE}/claims-{x}-replayed.csv").set_index("id")
    ids = [i for i in b.index if ("sleep-compute-throughput" in i or i.startswith("traced-compute-throughput"))]
    for i in ids:
        f = lambda d: f"{d.at[i, 'our_value']:.3g} [{d.at[i, 'ci_low']:.3g}, {d.at[i, 'ci_high']:.3g}] {d.at[i, 'verdict']}"  # noqa: E731
        print(f"{x}  {i:42s} before {f(a):44s} after {f(b)}")
    print(f"{x}: inconclusive {int((a.verdict == 'inconclusive').sum())} -> {int((b.verdict == 'inconclusive').sum())} "
          f"of {int(((a.kind == 'finding') & (a.verdict != 'not measured')).sum())} measured findings\n")
