#!/bin/bash
# a second fresh clone, only the two report stages whose findings the change touched and what they
# read (dvc repro's upstream): usage partial.sh COMMIT NAME
c=$1; n=$2
d=/tmp/rep$n
rm -rf $d; git clone -q /work/main $d && cd $d && git checkout -q $c
echo "start $n $c $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoGH/times
make setup > /tmp/twoGH/rep$n.log 2>&1
PATH=$d/.venv/bin:$PATH dvc repro workload_validation traced_comparison_report >> /tmp/twoGH/rep$n.log 2>&1
echo "end $n rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoGH/times
