"""Kalibera and Jones's counts of the shipped reference run (results/*/variance.csv; default
/tmp/ref1, read only) per stage and quantity, and the check that every inconclusive finding of
its claims.csv says why (a forecast of the samples that would decide it, or that more samples
would not: the value at a rule's edge, or the samples its method needs).
Usage: python kj_and_why.py [REFERENCE_CHECKOUT]"""
import sys
from pathlib import Path

import pandas as pd

from experiments.verdicts.rules import NEVER_DECIDES

ref = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ref1")
pd.set_option("display.width", 200)
print("# Kalibera and Jones's counts (units a run), quantities counted in units")
for f in sorted((ref / "results").glob("*/variance.csv")):
    v = pd.read_csv(f)
    v = v[v.units > 1]
    if v.empty:
        continue
    g = v.groupby("quantity").agg(configurations=("configuration", "size"), units=("units", "median"),
                                  between_share=("between_share", "median"), kj_min=("units_kj", "min"),
                                  kj_median=("units_kj", "median"), kj_max=("units_kj", "max"),
                                  run_s=("run_s", "median"), setup_s=("setup_s", "median"))
    print(f"\n## {f.parent.name}\n{g.round(3).to_string()}")

d = pd.read_csv(ref / "results/claims/claims.csv")
inc = d[d.verdict == "inconclusive"]
forecast = inc.note.str.contains("would decide it", regex=False)
never = inc.note.str.contains(NEVER_DECIDES, regex=False)
needs = inc.note.str.contains("too few", regex=False) | inc.note.str.contains("needs", regex=False)
print(f"\n# inconclusive rows: {len(inc)}; with a forecast of the samples that decide: {int(forecast.sum())}; "
      f"'{NEVER_DECIDES}' (straddles an edge): {int(never.sum())}; neither: {int((~forecast & ~never).sum())}")
for r in inc[~forecast & ~never].itertuples():
    print("  no reason:", r.id, "|", r.note[:200])
