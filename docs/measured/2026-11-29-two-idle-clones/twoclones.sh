#!/bin/bash
# two fresh clones of one commit, make repro back to back, nothing else of ours beside
for n in C D; do
  d=/tmp/rep$n
  git clone -q /work/main $d && cd $d && git checkout -q 2133ac0
  echo "start $n $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoclones.times
  make repro > /tmp/rep$n.log 2>&1
  echo "end $n rc=$? $(date -u +%FT%TZ) $(cat /proc/loadavg)" >> /tmp/twoclones.times
done
