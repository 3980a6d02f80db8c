"""A trace's I/O as time series (MB/s per bin): what a timeline draws (:mod:`.timeline`), computed
apart from any figure so that a stage that traces writes them without depending on how they
look. MB/s is 10^6 B/s; ``t_s`` is seconds since the trace started."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schema import VFS_READS, VFS_WRITES, Trace
from .vector import block_rows, file_filter, file_sectors

SERIES = ("vfs_read", "block_read", "vfs_write", "block_write")


def io_series(trace: Trace, bin_s: float = 1.0, data=None, checkpoint=None, block_files=None) -> pd.DataFrame:
    """MB/s per bin: columns ``t_s`` (bin start) and the four series of :data:`SERIES`.
    ``block_files``: count only block requests touching these files' extents."""
    ev = trace.events
    if len(ev):
        t_end = float(ev["t_s"].max())
        edges = np.arange(0.0, max(t_end, 0.0) + bin_s, bin_s)
        if len(edges) < 2:
            edges = np.array([0.0, bin_s])
        out = pd.DataFrame({"t_s": edges[:-1]})
        blk = ev["layer"] == "block"
        if block_files:
            keep = block_rows(ev, "read", sectors=file_sectors(block_files)).index.union(
                block_rows(ev, "write", sectors=file_sectors(block_files)).index)
            blk = blk & ev.index.isin(keep)
        sel = {
            "vfs_read": (ev["layer"] == "vfs") & ev["op"].isin(VFS_READS) & file_filter(ev["path"], data),
            "vfs_write": (ev["layer"] == "vfs") & ev["op"].isin(VFS_WRITES) & file_filter(ev["path"], checkpoint),
            "block_read": blk & (ev["op"] == "read"),
            "block_write": blk & (ev["op"] == "write"),
        }
        for name, m in sel.items():
            e = ev[m & (ev["error"] == 0)]
            h, _ = np.histogram(e["t_s"], bins=edges, weights=e["size"].fillna(0))
            out[name] = h / 1e6 / bin_s
        end = pd.DataFrame({"t_s": [edges[-1]], **{k: [0.0] for k in sel}})  # closes the last bin
        return pd.concat([out, end], ignore_index=True)
    s = trace.samples
    if not len(s):
        return pd.DataFrame(columns=["t_s", *SERIES])
    proc = s[s["source"] == "proc"].set_index("t_s")
    dev = s[s["source"].astype(str).str.startswith("dev:")].groupby("t_s")[["read_MBps", "write_MBps"]].sum()
    out = pd.DataFrame({"vfs_read": proc.get("vfs_read_MBps"), "vfs_write": proc.get("vfs_write_MBps")})
    out = out.join(dev.rename(columns={"read_MBps": "block_read", "write_MBps": "block_write"}), how="outer")
    return out.fillna(0).reset_index().rename(columns={"index": "t_s"})


def auto_bin(trace: Trace, bins: int = 80) -> float:
    """A bin width giving about ``bins`` bins over the trace (1, 2 or 5 x 10^k seconds)."""
    t = float(trace.events["t_s"].max()) if len(trace.events) else 1.0
    raw = max(t / bins, 1e-3)
    k = 10 ** np.floor(np.log10(raw))
    return float(min((m * k for m in (1, 2, 5, 10) if m * k >= raw), default=raw))
