"""Collect the 2026-11-28 replication records from two fresh clones into one folder:
``python collect.py OUT CLONE_A CLONE_B`` (the clones were /tmp/r1 and /tmp/r2)."""
import sys, subprocess, shutil
from pathlib import Path
import pandas as pd

out = Path(sys.argv[1]).resolve(); out.mkdir(parents=True, exist_ok=True)
clones = {"A": Path(sys.argv[2]), "B": Path(sys.argv[3])}
STAGE_TIMES = (  # every stage's env.json "run" record, read by the clone's own experiments.ae_table.runs()
    "import sys, pandas as pd; from experiments import ae_table; "
    "pd.DataFrame([{'stage': k, 'wall_s': r.get('wall_s'), 'started_at': r.get('started_at'), "
    "'loadavg_start': (r.get('loadavg_start') or [None])[0], 'loadavg_end': (r.get('loadavg_end') or [None])[0], "
    "'host': r.get('host')} for k, r in ae_table.runs().items()]).sort_values('started_at').to_csv(sys.argv[1], index=False)")
STAGES = ["tfdata_read_report", "deepio_report", "lmdbio_report", "blog_report"]
for name, c in clones.items():
    subprocess.run([str(c / ".venv/bin/python"), "-c", STAGE_TIMES, str(out / f"stage_times_{name}.csv")],
                   cwd=c, check=True)
    subprocess.run([str(c / ".venv/bin/python"), "-c",
                    "import sys; from experiments.claims import table; "
                    f"table.gather({STAGES!r}).to_csv(sys.argv[1], index=False)", str(out / f"claims_{name}.csv")],
                   cwd=c, check=True)
    if (c / "results/claims/claims.csv").exists():
        shutil.copy(c / "results/claims/claims.csv", out / f"claims_full_{name}.csv")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=c, capture_output=True, text=True).stdout.strip()
    (out / f"commit_{name}.txt").write_text(head + "\n")
a = clones["A"]
v = subprocess.run([str(a / ".venv/bin/python"), "-m", "experiments.repeats.variance"], cwd=a, capture_output=True,
                   text=True, check=True).stdout
(out / "variance_A.md").write_text(v)
subprocess.run([str(a / ".venv/bin/python"), "-m", "experiments.ae_table"], cwd=a, check=True, capture_output=True)
shutil.copy(a / "docs/ae-table.md", out / "ae-table_A.md")
subprocess.run([str(clones["A"] / ".venv/bin/python"), "-m", "experiments.review.compare",
                str(out / "claims_A.csv"), str(out / "claims_B.csv"), "--every", "--out", str(out / "comparison.md")],
               cwd=clones["A"], check=True, capture_output=True)
cmp = out / "comparison.md"   # the table names files by path: keep them relative to this folder
cmp.write_text(cmp.read_text().replace(str(out) + "/", ""))
