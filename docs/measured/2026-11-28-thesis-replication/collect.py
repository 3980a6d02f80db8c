"""Collect the thesis stages' replication records from two fresh clones into one folder:
``python collect.py OUT CLONE_A CLONE_B`` (the clones were /tmp/r1 and /tmp/r3)."""
import sys, subprocess, shutil
from pathlib import Path

out = Path(sys.argv[1]).resolve(); out.mkdir(parents=True, exist_ok=True)
clones = {"A": Path(sys.argv[2]), "B": Path(sys.argv[3])}
STAGE_TIMES = (  # every stage's env.json "run" record, read by the clone's own experiments.ae_table.runs()
    "import sys, pandas as pd; from experiments import ae_table; "
    "pd.DataFrame([{'stage': k, 'wall_s': r.get('wall_s'), 'started_at': r.get('started_at'), "
    "'loadavg_start': (r.get('loadavg_start') or [None])[0], 'loadavg_end': (r.get('loadavg_end') or [None])[0], "
    "'host': r.get('host')} for k, r in ae_table.runs().items()]).sort_values('started_at').to_csv(sys.argv[1], index=False)")
# the thesis's measured findings: the compute-time fits, the sleep and generated-data rows, the traced comparison
STAGES = ["workload_fits", "workload_validation", "traced_comparison_report"]
MEASURED = ["workload_data", "unet3d", "bert", "dlrm", "workload_fits", "workload_sleep", "workload_random",
            "workload_validation", "emulator_patterns", "traced_comparison", "traced_comparison_report"]
for name, c in clones.items():
    subprocess.run([str(c / ".venv/bin/python"), "-c", STAGE_TIMES, str(out / f"stage_times_{name}.csv")],
                   cwd=c, check=True)
    subprocess.run([str(c / ".venv/bin/python"), "-c",
                    "import sys; from experiments.claims import table; "
                    f"table.gather({STAGES!r}).to_csv(sys.argv[1], index=False)", str(out / f"claims_{name}.csv")],
                   cwd=c, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=c, capture_output=True, text=True).stdout.strip()
    (out / f"commit_{name}.txt").write_text(head + "\n")
for name in clones:   # the stages this comparison's findings come from, in each clone
    import pandas as pd
    t = pd.read_csv(out / f"stage_times_{name}.csv")
    t[t["stage"].isin(MEASURED)].to_csv(out / f"stage_times_{name}.csv", index=False)
subprocess.run([str(clones["A"] / ".venv/bin/python"), "-m", "experiments.repeats.compare",
                str(out / "claims_A.csv"), str(out / "claims_B.csv"), "--every", "--out", str(out / "comparison.md")],
               cwd=clones["A"], check=True, capture_output=True)
cmp = out / "comparison.md"   # the table names files by path: keep them relative to this folder
cmp.write_text(cmp.read_text().replace(str(out) + "/", ""))
