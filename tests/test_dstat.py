import os

from experiments import dstat


def test_device_of_the_project_disk_and_tmpfs(tmp_path):
    assert dstat.device_of("/dev/shm") is None  # tmpfs has no block device
    dev = dstat.device_of(tmp_path)
    assert dev is None or dev in dstat.read_diskstats()


def test_sampler_sees_this_process_write(tmp_path):
    with dstat.Sampler(devices=[dstat.device_of(tmp_path)], pid=os.getpid(), interval_s=0.1) as s:
        with open(tmp_path / "f", "wb") as f:
            f.write(os.urandom(8 << 20))
            f.flush()
            os.fsync(f.fileno())
    df = s.frame()
    proc = df[df["source"] == "proc"]
    assert len(proc) >= 1
    written = (proc["vfs_write_MBps"] * proc["interval_s"]).sum()
    assert 8.0 <= written < 9.5  # 8 MiB = 8.39 MB through write()
