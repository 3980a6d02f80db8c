#!/usr/bin/env bash
# workload_sleep's smoke stage, alternately at main's smoke value (ranks [2]) and this branch's ([1]),
# in one smoke project whose upstream stages ran once (dvc repro workload_fits); niced.
set -euo pipefail
cd /tmp/test64/proj
export PATH=/work/wt/test64/.venv/bin:$PATH DLIO_ROOT=/tmp/test64/proj DLIO_PAPERS=/work/shared/papers
out=/tmp/test64/ab/times.csv
[ -f $out ] || echo "order,ranks,wall_s,cpu_s,load1_start,load1_end,runs,startup_s_sum" > $out
i=0
for r in "$@"; do
  i=$((i+1))
  python - "$r" <<'PY'
import sys, yaml
p = yaml.safe_load(open("params.yaml")); p["workload_sleep"]["ranks"] = [int(sys.argv[1])]
open("params.yaml", "w").write(yaml.safe_dump(p, sort_keys=False))
PY
  nice -n 19 dvc repro -s -f workload_sleep > /tmp/test64/ab/run-$i-ranks$r.log 2>&1
  python - "$i" "$r" >> $out <<'PY'
import sys, json, csv
e = json.load(open("results/workload_sleep/env.json"))["run"]
runs = list(csv.DictReader(open("results/workload_sleep/runs.csv")))
print(f"{sys.argv[1]},{sys.argv[2]},{e['wall_s']:.1f},{e['cpu_s']:.1f},{e['loadavg_start'][0]},{e['loadavg_end'][0]},{len(runs)},{sum(float(r['startup_s']) for r in runs):.1f}")
PY
  cp results/workload_sleep/runs.csv /tmp/test64/ab/runs-$i-ranks$r.csv
done
