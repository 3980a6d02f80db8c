#!/bin/bash
# a fresh clone O of main: make repro on the default profile (its setup, plan, stages, ae-table
# summary), results copied aside; nothing else of ours runs beside it
c=$(git -C /work/main rev-parse --short HEAD)
d=/tmp/repO
rm -rf $d /tmp/repO-snap; git clone -q /work/main $d && cd $d && git checkout -q $c
echo "start O $c $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoO/times
make repro > /tmp/twoO/repro-O.log 2>&1
echo "end O rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoO/times
mkdir -p /tmp/repO-snap && cp -a results /tmp/repO-snap/ && cp params.yaml dvc.lock dvc.yaml /tmp/repO-snap/ && cp -a docs env profiles /tmp/repO-snap/
cp results/claims/claims.csv /tmp/twoO/claims-O.csv
echo "snap O $(date -u +%FT%TZ)" >> /tmp/twoO/times
