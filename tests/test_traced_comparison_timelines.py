"""The traced comparison's timelines are drawn from the small timeline files the stage writes
beside its full traces (experiments/sidebyside/stage.py ``save_timeline_trace``), so that the
reference run ships those and not the full traces (stages.py ``unread``, refrun.record)."""

import json
from fnmatch import fnmatch

import matplotlib
import numpy as np
import pandas as pd

from experiments.review import refrun
from experiments.sidebyside import report, stage
from experiments.trace import schema, series, timeline

matplotlib.use("Agg")


def _trace(n: int = 4000) -> schema.Trace:
    """VFS and block reads over 9 s, the last event after the sampler's last row, CPU samples."""
    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0, 9.0, n))
    ev = pd.DataFrame({"timestamp": pd.to_datetime(1e9 + t, unit="s", utc=True), "t_s": t, "pid": 1, "tid": 1,
                       "comm": "x", "layer": np.where(np.arange(n) % 3, "vfs", "block"), "op": "read",
                       "path": "/data/f", "fd": 3, "offset": 0.0, "size": 4096.0, "latency_s": 1e-5,
                       "device": "vda", "sector": 8.0 * np.arange(n), "error": 0})
    cpu = pd.DataFrame({"t_s": np.arange(1.0, 9.0), "source": "cpu", "interval_s": 1.0,
                        "cpu_util_pct": rng.uniform(10, 90, 8), "tree_cpu_pct": rng.uniform(5, 50, 8)})
    return schema.Trace(schema.conform(ev), cpu, {"backend": "strace", "started": 1e9})


def _pixels(fig) -> np.ndarray:
    fig.canvas.draw()
    px = np.asarray(fig.canvas.buffer_rgba()).copy()
    matplotlib.pyplot.close(fig)
    return px


def test_the_report_draws_the_timeline_of_the_full_trace_from_the_small_file_alone(tmp_path):
    full = _trace()
    full.save(tmp_path / "trace_bert_real.parquet")
    names = stage.save_timeline_trace(tmp_path, "bert", "real", full)
    assert names == {"trace": "timeline_bert_real.parquet", "full_trace": "trace_bert_real.parquet"}
    io = series.io_series(full, 0.5, data=["/data"])
    io.to_csv(tmp_path / "timeline_bert_real.io.csv", index=False)
    (tmp_path / "timelines.json").write_text(json.dumps([{"name": "fig", "workload": "bert", "side": "real",
                                                          "title": "t", "bin_s": 0.5, **names,
                                                          "io": "timeline_bert_real.io.csv", "phases": None}]))
    small = tmp_path / names["trace"]
    assert small.stat().st_size < (tmp_path / names["full_trace"]).stat().st_size / 5
    # what the reference run leaves out of this folder: the full trace and its samples
    left = [f for f in tmp_path.iterdir() if any(fnmatch(f.name, p) for p in refrun.unread("traced_comparison"))]
    assert sorted(f.name for f in left) == ["trace_bert_real.parquet", "trace_bert_real.samples.parquet"]
    want = _pixels(timeline.plot(full, None, bin_s=0.5, io=pd.read_csv(tmp_path / "timeline_bert_real.io.csv"),
                                 title="t"))
    for f in left:
        f.unlink()
    [(name, fig)] = list(report.timelines(tmp_path))
    got = _pixels(fig)
    assert name == "fig" and got.shape == want.shape and (got == want).all()   # the same figure, pixel for pixel
