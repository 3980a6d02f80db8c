"""../2026-11-29-traced-startup/drive.py with warm parents that serve two ranks: the same timed
pass, WARM=1 giving ``Parents(multi_rank=True)`` (the stage's parents since 1e43638).

usage: python drive.py OUT_PREFIX WORKLOAD[,WORKLOAD..] [profile-overrides-json]
"""
import functools
import runpy
import sys
from pathlib import Path

from experiments.host import warm_launch

warm_launch.Parents = functools.partial(warm_launch.Parents, multi_rank=True)
sys.argv[0] = str(Path(__file__).resolve().parent.parent / "2026-11-29-traced-startup" / "drive.py")
runpy.run_path(sys.argv[0], run_name="__main__")
