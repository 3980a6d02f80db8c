"""The claims of the two report stages a partial clone ran (results/<stage>/claims.json), as one
CSV the compare tool reads: usage partial_claims.py CLONE OUT.csv"""
import json, sys
from pathlib import Path
import pandas as pd
rows = []
for st in ("workload_validation", "traced_comparison_report"):
    for c in json.loads((Path(sys.argv[1]) / "results" / st / "claims.json").read_text()):
        rows.append({**c, "stage": c.get("stage") or st})
pd.DataFrame(rows).to_csv(sys.argv[2], index=False)
print(len(rows))
