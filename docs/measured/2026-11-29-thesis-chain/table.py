import json, csv, sys
from pathlib import Path
root = Path('/tmp/ci6/results')
ref = {r['stage']: r for r in csv.DictReader(l for l in open('/work/main/env/reference-times.csv') if not l.startswith('#'))}
plan = json.load(open(root / 'plan.json'))
pl = plan['stages']
rows = []
for st in ['claim_rules', 'workload_data', 'unet3d', 'bert', 'dlrm', 'retinanet', 'workload_fits', 'emulator_patterns',
           'traced_comparison', 'workload_validation', 'traced_comparison_report', 'claims']:
    f = root / st / 'env.json'
    w = json.load(open(f))['run']['wall_s'] if f.exists() else None
    fc = pl.get(st, {}).get('forecast_s') if pl else None
    rows.append((st, float(ref[st]['wall_s']) if st in ref else None, fc, w))
print('| stage | reference run of 2f0be98 (s) | plan (s) | this run (s) |')
print('|---|---:|---:|---:|')
for st, r, fc, w in rows:
    f = lambda x: '' if x is None else f'{x:.0f}'
    print(f'| `{st}` | {f(r)} | {f(fc)} | {f(w)} |')
