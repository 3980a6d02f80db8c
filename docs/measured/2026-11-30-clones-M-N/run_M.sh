#!/bin/bash
# a fresh clone M of main, make repro on the default profile, then make decide MINUTES=30; results copied aside after each
c=$(git -C /work/main rev-parse --short HEAD)
d=/tmp/repM
rm -rf $d; git clone -q /work/main $d && cd $d && git checkout -q $c
echo "start M $c $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoM/times
make repro > /tmp/twoM/repro-M.log 2>&1
echo "end M rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoM/times
mkdir -p /tmp/repM-snap && cp -a results /tmp/repM-snap/ && cp params.yaml dvc.lock dvc.yaml /tmp/repM-snap/ && cp -a docs env profiles /tmp/repM-snap/
cp results/claims/claims.csv /tmp/twoM/claims-M.csv
echo "snap M $(date -u +%FT%TZ)" >> /tmp/twoM/times
make decide MINUTES=30 > /tmp/twoM/decide-M.log 2>&1
echo "decided M rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoM/times
cp results/claims/claims.csv /tmp/twoM/claims-M-decided.csv
