#!/bin/bash
# waits for M's make repro to finish and its results to be copied aside, stops M's make decide
# (the pair of fresh clones is worth more than M's decide in this session), then a fresh clone N
# of main: make repro on the default profile, results copied aside
while ! grep -q "^snap M" /tmp/twoM/times 2>/dev/null; do sleep 20; done
sleep 5
kill -TERM -- -15606  # M's process group (run_M.sh and its make decide)
sleep 10; kill -KILL -- -15606 2>/dev/null
for p in /proc/[0-9]*; do case "$(readlink $p/cwd 2>/dev/null)" in /tmp/repM|/tmp/repM/*) kill -KILL ${p#/proc/} 2>/dev/null;; esac; done   # its kernels (a session of their own)
sleep 20
c=$(git -C /work/main rev-parse --short HEAD)
d=/tmp/repN
rm -rf $d; git clone -q /work/main $d && cd $d && git checkout -q $c
echo "start N $c $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoN/times
make repro > /tmp/twoN/repro-N.log 2>&1
echo "end N rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoN/times
mkdir -p /tmp/repN-snap && cp -a results /tmp/repN-snap/ && cp params.yaml dvc.lock dvc.yaml /tmp/repN-snap/ && cp -a docs env profiles /tmp/repN-snap/
cp results/claims/claims.csv /tmp/twoN/claims-N.csv
echo "snap N $(date -u +%FT%TZ)" >> /tmp/twoN/times
