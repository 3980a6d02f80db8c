#!/bin/bash
# fresh clones of one commit, make repro, nothing else of ours beside; usage: run.sh COMMIT NAME...
c=$1; shift
for n in "$@"; do
  d=/tmp/rep$n
  rm -rf $d; git clone -q /work/main $d && cd $d && git checkout -q $c
  echo "start $n $c $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoGH/times
  make repro > /tmp/twoGH/rep$n.log 2>&1
  echo "end $n rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoGH/times
done
