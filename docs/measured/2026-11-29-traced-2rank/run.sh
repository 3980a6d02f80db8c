export DLIO_ROOT=/tmp/probe PYTHONPATH=/work/main PATH=/work/main/.venv/bin:$PATH DLIO_QUIET=1
cd /tmp/probe
for i in 1 2; do
  python drive.py fresh$i dlrm,unet3d > fresh$i.log 2>&1
  WARM=1 python drive.py warm$i dlrm,unet3d > warm$i.log 2>&1
done
echo done > finished
