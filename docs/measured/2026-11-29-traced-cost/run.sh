#!/bin/bash
# usage: run.sh PROJ WORKLOADS TAG... ; TAG a* = deferred TF import, b* = before, c* = deferred + eviction fadvise
PROJ=$1; WL=$2; shift 2
cd $PROJ
export PATH=/work/main/.venv/bin:$PATH DLIO_ROOT=$PWD PYTHONPATH=$PWD WARM=1
P=experiments/dlio/plugins/sitecustomize.py
for tag in "$@"; do
  OV='{}'
  case $tag in
    a*) cp /work/wt/traced64c/$P $P ;;
    b*) rm -f $P ;;
    c*) cp /work/wt/traced64c/$P $P; OV='{"eviction": "fadvise"}' ;;
  esac
  echo "$tag start $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) wl $WL ov $OV"
  nice -n 19 python /tmp/traced64c/drive2.py /tmp/traced64c/$tag $WL "$OV" > /tmp/traced64c/$tag.log 2>&1
  echo "$tag end $(date -u +%T) rc $? load $(cut -d' ' -f1 /proc/loadavg)"
done
rm -f $P
