"""How much two configurations measured in the same round of a stage move together: for each
pair of configurations a finding of a stage compares (below), the correlation over rounds of
their runs' log values, and the widths of three 95 % intervals of their ratio (Welch t on the
runs' logs, unpaired; Student t on the per-round log ratios, paired). Usage:
round_correlation.py PROJECT (a make repro checkout, e.g. a fresh clone's)."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

R = Path(sys.argv[1]) / "results"


def welch(a, b):
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    return 2 * stats.t.ppf(0.975, df) * np.sqrt(va + vb)


def paired(a, b):
    lr = np.log(a / b)
    return 2 * stats.t.ppf(0.975, len(lr) - 1) * lr.std(ddof=1) / np.sqrt(len(lr))


PAIRS = [   # (stage, column, filter, the column that differs, num, den)
    *[("deepio", "seconds", {"tier": "disk", "R": r, "P": 8}, "mode", "ordered", "opportunistic") for r in (0.25, 0.5, 1.0)],
    *[("lmdbio", "seconds", {"tier": "disk", "dataset": ds, "P": 8}, "strategy", n, d)
      for ds in ("imagenet", "cifar") for n, d in (("dio_prov", "coal"), ("coal", "stag"), ("lmm", "lmdb"))],
    *[("alexnet_prefetch", "seconds", {"experiment": "prefetch", "tier": t, "threads": 4}, "prefetch", 0, 1) for t in ("mem", "disk")],
]
rows = []
for st, col, eq, k, n, d in PAIRS:
    x = pd.read_parquet(R / st / "raw.parquet")
    x = x[~x["warmup"].fillna(False).astype(bool)]
    for c, v in eq.items():
        x = x[x[c] == v]
    a = x[x[k] == n].set_index("repeat")[col]
    b = x[x[k] == d].set_index("repeat")[col]
    j = a.index.intersection(b.index)
    if len(j) < 3:
        continue
    rows.append({"stage": st, **eq, "num": n, "den": d, "rounds": len(j),
                 "corr_of_logs": round(float(np.corrcoef(np.log(a[j]), np.log(b[j]))[0, 1]), 2),
                 "log_width_welch": round(float(welch(a[j].values, b[j].values)), 3),
                 "log_width_paired": round(float(paired(a[j].values, b[j].values)), 3)})
t = pd.DataFrame(rows)
print(t.to_markdown(index=False))
