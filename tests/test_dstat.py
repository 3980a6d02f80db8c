import json
import subprocess
import sys
from pathlib import Path

from experiments.host import dstat

ROOT = Path(__file__).resolve().parents[1]

# The sampler counts a process and its descendants; pytest's own tree holds the smoke pipeline
# (a child that writes results), so the write is measured in a fresh process with no children.
_WRITE_8MIB = """
import json, os, sys
from experiments.host import dstat
path = sys.argv[1]
with dstat.Sampler(devices=[dstat.device_of(path)], pid=os.getpid(), interval_s=0.1) as s:
    with open(os.path.join(path, "f"), "wb") as f:
        f.write(os.urandom(8 << 20))
        f.flush()
        os.fsync(f.fileno())
df = s.frame()
proc = df[df["source"] == "proc"]
print(json.dumps({"rows": len(proc),
                  "written": float((proc["vfs_write_MBps"] * proc["interval_s"]).sum())}))
"""


def test_device_of_the_project_disk_and_tmpfs(tmp_path):
    assert dstat.device_of("/dev/shm") is None  # tmpfs has no block device
    dev = dstat.device_of(tmp_path)
    assert dev is None or dev in dstat.read_diskstats()


def test_sampler_sees_this_process_write(tmp_path):
    out = subprocess.run([sys.executable, "-c", _WRITE_8MIB, str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rows"] >= 1
    assert 8.0 <= got["written"] < 9.5  # 8 MiB = 8.39 MB through write()
