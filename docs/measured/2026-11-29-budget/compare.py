"""Verdicts of subsample.py scenarios against the reference run's claims.csv and against the
control (the same report code on every reference row). Usage: python compare.py control.json X.json ..."""
import json
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

ref = pd.read_csv("/tmp/ref1/results/claims/claims.csv").set_index("id")
control = json.loads(Path(sys.argv[1]).read_text())["verdicts"]
for f in sys.argv[1:]:
    s = json.loads(Path(f).read_text())
    print(f"== {s['scenario']}")
    for stage, v in s["verdicts"].items():
        c = control[stage]
        moved = {i: (c.get(i), x) for i, x in v.items() if c.get(i) != x}
        shipped = {i: (ref.verdict.get(i), c.get(i)) for i in c if ref.verdict.get(i) != c.get(i)} if f == sys.argv[1] else {}
        cnt = Counter(x for x in v.values() if x != "not measured")
        print(f"  {stage}: measured {sum(cnt.values())}: " + ", ".join(f"{k} {n}" for k, n in sorted(cnt.items())))
        for i, (a, b) in moved.items():
            print(f"    {i}: {a} -> {b}")
        for i, (a, b) in shipped.items():
            print(f"    (control differs from the shipped claims.csv) {i}: {a} -> {b}")
