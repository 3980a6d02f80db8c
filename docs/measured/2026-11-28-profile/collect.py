"""Collect the records of one clone's `make repro` (and, with --decide, of the `make decide`
after it) into this folder: ``python collect.py OUT CLONE [--decide]``.

Writes stage_times.csv (every stage's env.json "run" record: wall seconds, start, load
averages, host, and the commit the clone had when it ran), ae-table.md (`experiments.pipeline.ae_table`
in the clone), claims_repro.csv (the clone's results/claims/claims.csv), variance.md
(`experiments.repeats.variance`), inconclusive.md (the verdicts of the measured findings
counted); with --decide, claims_decide.csv and decide-comparison.md (`experiments.review.compare`
of the two claims tables)."""
import sys, subprocess, shutil
from pathlib import Path
import pandas as pd

out, clone = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
decide = "--decide" in sys.argv[3:]
out.mkdir(parents=True, exist_ok=True)
py = str(clone / ".venv/bin/python")
STAGE_TIMES = (  # every stage's env.json "run" record, read by the clone's own experiments.pipeline.ae_table.runs()
    "import sys, pandas as pd; from experiments.pipeline import ae_table; "
    "pd.DataFrame([{'stage': k, 'wall_s': r.get('wall_s'), 'started_at': r.get('started_at'), "
    "'loadavg_start': (r.get('loadavg_start') or [None])[0], 'loadavg_end': (r.get('loadavg_end') or [None])[0], "
    "'host': r.get('host')} for k, r in ae_table.runs().items()]).sort_values('started_at').to_csv(sys.argv[1], index=False)")


def counts(csv: Path) -> str:
    df = pd.read_csv(csv)
    f = df[(df["kind"] == "finding") & (df["verdict"] != "not measured")]
    inc = f[f["verdict"] == "inconclusive"]
    by = inc.groupby("stage").size().to_dict()
    return (f"{csv.name}: {len(f)} measured findings, {len(inc)} inconclusive "
            f"({100 * len(inc) / max(len(f), 1):.1f} %); verdicts {f['verdict'].value_counts().to_dict()}; "
            f"inconclusive by stage {by}\n")


if not decide:
    subprocess.run([py, "-c", STAGE_TIMES, str(out / "stage_times.csv")], cwd=clone, check=True)
    subprocess.run([py, "-m", "experiments.pipeline.ae_table"], cwd=clone, check=True, capture_output=True)
    shutil.copy(clone / "docs/ae-table.md", out / "ae-table.md")
    shutil.copy(clone / "results/claims/claims.csv", out / "claims_repro.csv")
    v = subprocess.run([py, "-m", "experiments.repeats.variance"], cwd=clone, capture_output=True, text=True,
                       check=True).stdout
    (out / "variance.md").write_text(v)
    (out / "inconclusive.md").write_text(counts(out / "claims_repro.csv"))
    head = subprocess.run(["git", "log", "--oneline", "-3"], cwd=clone, capture_output=True, text=True).stdout
    (out / "commit.txt").write_text(head)
else:
    shutil.copy(clone / "results/claims/claims.csv", out / "claims_decide.csv")
    with open(out / "inconclusive.md", "a") as fh:
        fh.write(counts(out / "claims_decide.csv"))
    subprocess.run([py, "-m", "experiments.review.compare", str(out / "claims_repro.csv"),
                    str(out / "claims_decide.csv"), "--every", "--out", str(out / "decide-comparison.md")],
                   cwd=clone, check=True, capture_output=True)
    cmp = out / "decide-comparison.md"
    cmp.write_text(cmp.read_text().replace(str(out) + "/", ""))
