"""The sleep row's compute throughput round by round: sleep run / the same round's real run (median per-step rate)."""
import sys, numpy as np, pandas as pd
from scipy import stats as ss
for snap in sys.argv[1:]:
    for st, row in (("workload_sleep", "sleep"), ("workload_random", "random")):
        try: d = pd.read_parquet(f"{snap}/results/{st}/raw.parquet")
        except Exception: continue
        d = d[d["steady"].fillna(False).astype(bool)]
        for col in ("compute_ns", "data_ns"):
            d = d.assign(rate=d["samples"] / (d[col].clip(lower=1) / 1e9))
            m = d.groupby(["workload", "variant", "ranks", "batch_size", "repeat"])["rate"].median().unstack("variant")
            if row not in m: continue
            for w, g in m.groupby(level=0):
                r = np.log((g[row] / g["real"]).dropna().to_numpy())
                n = len(r)
                if n < 2: continue
                h = ss.t.ppf(0.975, n - 1) * r.std(ddof=1) / np.sqrt(n)
                print(f"{snap.split('/')[-1]:10} {row:6} {col:10} {w:9} n={n} per-round {np.round(np.exp(r),3)} gmean {np.exp(r.mean()):.3f} [{np.exp(r.mean()-h):.3f}, {np.exp(r.mean()+h):.3f}]  corr(log) {np.corrcoef(np.log(g[row]),np.log(g['real']))[0,1]:+.2f}")
