#!/bin/bash
# claims-M-replayed.csv: M's measurements, the workload_validation and claims notebooks re-run by
# main's code after 18a841c (the sleep row's compute throughput round by round); nothing re-measured
set -e
rm -rf /tmp/repM2 && git clone -q /work/main /tmp/repM2 && cd /tmp/repM2
cp -a /tmp/repM-snap/results . && cp /tmp/repM-snap/params.yaml . && ln -s /work/main/.venv .venv
export PATH=$PWD/.venv/bin:$PATH DLIO_PAPERS=/work/shared/papers DLIO_ROOT=/tmp/repM2
DVC_STAGE=workload_validation python -m experiments.pipeline.run_notebook notebooks/37-workload-validation.ipynb results/workload_validation/workload_validation.ipynb
DVC_STAGE=claims python -m experiments.pipeline.run_notebook notebooks/99-claims.ipynb results/claims/claims.ipynb
cp results/claims/claims.csv /tmp/twoM/claims-M-replayed.csv
