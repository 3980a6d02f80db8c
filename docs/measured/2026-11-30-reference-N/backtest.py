"""Back-test of env/reference-times.csv re-recorded from clone N: forecast each stage of another
clone's make repro (same params) from the table and that clone's own calibration before its first
stage, against the stage's wall time. Usage: python backtest.py /tmp/repM [/tmp/repL ...]"""
import json, sys
from pathlib import Path
import yaml
from experiments.pipeline import forecast as fc

ref = fc.read_reference()
for src in map(Path, sys.argv[1:]):
    plan = json.loads((src / "results/plan.json").read_text())
    here = plan["calibration"]["here"]
    params = yaml.safe_load((src / "params.yaml").read_text())
    ratios = fc.ratios_of(here, ref.meta)
    tot_f = tot_a = 0.0
    out, over = [], []
    for st in ref.rows:
        env = src / "results" / st / "env.json"
        if not env.exists():
            continue
        a = json.loads(env.read_text())["run"]["wall_s"]
        f = fc.forecast(st, ref, params, ratios).seconds
        tot_f += f; tot_a += a
        if a > 120:
            ok = abs(a / f - 1) <= 0.2
            over.append(ok)
            out.append(f"{st:22s} forecast {f:6.0f} s  actual {a:6.0f} s  {a / f:5.2f}  {'yes' if ok else 'NO'}")
    print(f"{src}: factor x{fc.weighted(ratios, 0.5):.2f} against the table; whole: forecast {tot_f / 60:.1f} min, "
          f"actual {tot_a / 60:.1f} min ({tot_a / tot_f - 1:+.0%}); stages over 2 min within 20 %: {sum(over)} of {len(over)}")
    print("\n".join(out))
