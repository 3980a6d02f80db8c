#!/bin/bash
# claims-<X>-replayed.csv: a stored run's measurements (its snapshot's results/ and params.yaml),
# the report stages named after it re-run by main's committed code; nothing re-measured.
# Usage: replay.sh X /tmp/repX-snap [stage ...]   (default: workload_validation)
set -e
X=$1; SNAP=$2; shift 2; STAGES=${*:-workload_validation}
OUT=$(cd "$(dirname "$0")" && pwd)
rm -rf /tmp/replay$X && git clone -q /work/main /tmp/replay$X && cd /tmp/replay$X
cp -a $SNAP/results . && cp $SNAP/params.yaml . && ln -s /work/main/.venv .venv
export PATH=$PWD/.venv/bin:$PATH DLIO_PAPERS=/work/shared/papers DLIO_ROOT=/tmp/replay$X
for s in $STAGES claims; do
  nb=$(python -c "import yaml;print(yaml.safe_load(open('dvc.yaml'))['stages']['$s']['cmd'].split()[3])")
  DVC_STAGE=$s python -m experiments.pipeline.run_notebook $nb results/$s/$s.ipynb
done
cp results/claims/claims.csv $OUT/claims-$X-replayed.csv
