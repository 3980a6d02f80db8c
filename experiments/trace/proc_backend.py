"""The always-available back end: :class:`experiments.dstat.Sampler` on the traced tree.

Per interval (default 1 s): ``/proc/<pid>/io`` of the process tree (``rchar``/``wchar``: the VFS
view; ``read_bytes``/``write_bytes``: what it made the storage do), ``/proc/diskstats`` of the
devices holding the traced files, whole-machine and tree CPU utilization, and GPUs where
``nvidia-smi`` exists. No per-call events: a proc-only trace yields the amounts of Table 4.2
(VFS and block bytes read and written) but no counts, sizes, files or sequentiality.
"""

from __future__ import annotations

import pandas as pd

from .. import dstat


def sampler(pid: int, devices: list[str] | None, interval_s: float = 1.0) -> dstat.Sampler:
    return dstat.Sampler(devices=devices, pid=pid, interval_s=interval_s, cpu=True, gpu=True)


def totals(samples: pd.DataFrame) -> dict[str, float]:
    """Bytes over the whole run from a samples frame: ``vfs_read_bytes``, ``vfs_write_bytes``
    (process tree, rchar/wchar: every read/write, pipes included), ``bio_read_bytes``,
    ``bio_write_bytes`` (process tree, read_bytes/write_bytes: what it made the storage do) and
    ``device_read_bytes``, ``device_write_bytes`` (the devices, every process on them).
    I/O a process did after the last sample before it exited is not seen (see dstat)."""
    out = {}
    if samples is None or not len(samples):
        return out
    proc = samples[samples["source"] == "proc"]
    if len(proc):
        out["vfs_read_bytes"] = float((proc["vfs_read_MBps"] * proc["interval_s"]).sum() * 1e6)
        out["vfs_write_bytes"] = float((proc["vfs_write_MBps"] * proc["interval_s"]).sum() * 1e6)
        out["bio_read_bytes"] = float((proc["read_MBps"] * proc["interval_s"]).sum() * 1e6)
        out["bio_write_bytes"] = float((proc["write_MBps"] * proc["interval_s"]).sum() * 1e6)
    dev = samples[samples["source"].astype(str).str.startswith("dev:")]
    if len(dev):
        out["device_read_bytes"] = float((dev["read_MBps"] * dev["interval_s"]).sum() * 1e6)
        out["device_write_bytes"] = float((dev["write_MBps"] * dev["interval_s"]).sum() * 1e6)
    return out
