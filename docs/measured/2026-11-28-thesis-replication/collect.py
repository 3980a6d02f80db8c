"""Collect the thesis's and AlexNet's replication records from two fresh clones into one folder:
``python collect.py OUT CLONE_A CLONE_B A_CLAIMS`` (the clones were /tmp/r1 and /tmp/r3;
A_CLAIMS: clone A's whole claims table after its ``make repro``, before its ``make decide``,
``../2026-11-28-profile/claims_repro.csv``)."""
import sys, subprocess
from pathlib import Path

import pandas as pd

out = Path(sys.argv[1]).resolve(); out.mkdir(parents=True, exist_ok=True)
clones = {"A": Path(sys.argv[2]), "B": Path(sys.argv[3])}
a_claims = Path(sys.argv[4]).resolve()
STAGE_TIMES = (  # every stage's env.json "run" record, read by the clone's own experiments.ae_table.runs()
    "import sys, pandas as pd; from experiments import ae_table; "
    "pd.DataFrame([{'stage': k, 'wall_s': r.get('wall_s'), 'started_at': r.get('started_at'), "
    "'loadavg_start': (r.get('loadavg_start') or [None])[0], 'loadavg_end': (r.get('loadavg_end') or [None])[0], "
    "'host': r.get('host')} for k, r in ae_table.runs().items()]).sort_values('started_at').to_csv(sys.argv[1], index=False)")
# the reports of the findings compared: the thesis's (compute-time fits, sleep and generated-data
# rows, traced comparison), AlexNet's and LLM checkpointing's
STAGES = ["workload_fits", "workload_validation", "traced_comparison_report", "alexnet_report",
          "llm_checkpoint_report"]
MEASURED = ["workload_data", "unet3d", "bert", "dlrm", "workload_fits", "workload_sleep", "workload_random",
            "workload_validation", "emulator_patterns", "traced_comparison", "traced_comparison_report",
            "caltech_like", "alexnet_prefetch", "alexnet_checkpoint", "alexnet_report", "fio_baseline",
            "llm_checkpoint", "llm_checkpoint_report"]
for name, c in clones.items():
    subprocess.run([str(c / ".venv/bin/python"), "-c", STAGE_TIMES, str(out / f"stage_times_{name}.csv")],
                   cwd=c, check=True)
    t = pd.read_csv(out / f"stage_times_{name}.csv")
    t[t["stage"].isin(MEASURED)].to_csv(out / f"stage_times_{name}.csv", index=False)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=c, capture_output=True, text=True).stdout.strip()
    (out / f"commit_{name}.txt").write_text(head + "\n")
# A: its table after make repro (its later make decide bought AlexNet checkpoint and LLM runs)
a = pd.read_csv(a_claims)
a[a["stage"].isin(STAGES)].to_csv(out / "claims_A.csv", index=False)
subprocess.run([str(clones["B"] / ".venv/bin/python"), "-c",
                "import sys; from experiments.claims import table; "
                f"table.gather({STAGES!r}).to_csv(sys.argv[1], index=False)", str(out / "claims_B.csv")],
               cwd=clones["B"], check=True)
subprocess.run([str(clones["A"] / ".venv/bin/python"), "-m", "experiments.review.compare",
                str(out / "claims_A.csv"), str(out / "claims_B.csv"), "--every", "--out", str(out / "comparison.md")],
               cwd=clones["A"], check=True, capture_output=True)
cmp = out / "comparison.md"   # the table names files by path: keep them relative to this folder
cmp.write_text(cmp.read_text().replace(str(out) + "/", ""))
