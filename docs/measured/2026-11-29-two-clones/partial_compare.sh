cd /work/main
PATH=$PWD/.venv/bin:$PATH python - <<'PY'
import json, pandas as pd
from pathlib import Path
A, B = Path('/tmp/repA/results'), Path('/tmp/repB/results')
stages = sorted(p.parent.name for p in B.glob('*/claims.json') if p.parent.name != 'claims')
print('stages in both:', stages)
for src, out in ((A, '/tmp/cmpA.csv'), (B, '/tmp/cmpB.csv')):
    rows = []
    for s in stages:
        for c in json.loads((src / s / 'claims.json').read_text()):
            rows.append({**c, 'stage': s})
    pd.DataFrame(rows).to_csv(out, index=False)
PY
PATH=$PWD/.venv/bin:$PATH python -m experiments.review.compare /tmp/cmpA.csv /tmp/cmpB.csv --out /tmp/cmp.md | head -60
