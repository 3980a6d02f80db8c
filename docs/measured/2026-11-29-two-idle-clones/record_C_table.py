"""C's reference table (experiments.pipeline.forecast.record --source /tmp/repC), its calibration
taken from C's own plan (measured on the idle box just before C's first stage) instead of a new
benchmark: the table and its calibration then describe the same moment of the box. Written to
the path given (not env/): python record_C_table.py OUT.csv"""
import json
import sys
from pathlib import Path

from experiments.pipeline import forecast as F

src = Path("/tmp/repC")
here = json.loads((src / "results/plan.json").read_text())
F._calibration_meta = lambda: {**here["calibration"]["here"], "calibrated_at": here["made_at"]}
ref = F.record(Path(sys.argv[1]), src)
print(f"wrote {sys.argv[1]}: {len(ref.rows)} stages, commit {ref.meta['commit'][:10]}, calibration {here['calibration']['here']}")
