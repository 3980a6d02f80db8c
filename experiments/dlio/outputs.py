"""Read what DLIO 2.0 wrote into its output folder, as tidy tables.

DLIO writes (rank 0) ``summary.json`` (per-epoch lists ``metric.train_au_percentage`` and
``metric.train_throughput_samples_per_second``, their means, and DLIO's I/O MB/s) and
``per_epoch_stats.json`` (ISO start/end timestamps, microseconds, of each epoch, training
block (the steps between two checkpoints), checkpoint and evaluation; its ``duration`` strings
are rounded to 10 ms, so durations here come from the timestamps), and every rank writes
``<rank>_output.json`` with, per epoch and block, one entry per step: ``load`` (seconds from
asking for the batch to having it), ``proc`` (the whole step: load + compute sleep), and
``compute`` (the sleep drawn). DLIO loses the ``load`` of the first step of every block after
the first (it is recorded, then ``start_block`` empties the list): those are NaN here.

How DLIO counts (from its ``utils/statscounter.py``):

- a block's throughput is (steps in the block x batch size) / block wall time, per rank; an
  epoch's is the step-weighted mean over its blocks, summed over ranks
  (``train_throughput_samples_per_second``, samples of DLIO: files for our UNET3D);
- a block's AU (%) is (sum of the sleeps of all steps but the first) / (block time minus the
  first step), averaged over ranks; with computation_time 0 DLIO reports AU 0;
- ``train_io_mean_MB_per_second`` is throughput x the *configured* ``record_length`` / 2^20
  (MiB/s, not the bytes read).

Ours, beside DLIO's: samples/s in our samples (cases for UNET3D), MB/s (10^6 B) from the
measured bytes per sample, and AU by the thesis's Eq 3.1/3.2 over the epoch's training time.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd

SUMMARY = "summary.json"
PER_EPOCH = "per_epoch_stats.json"
LOG = "dlio.log"


class OutputError(RuntimeError):
    """DLIO's output folder is missing a file or holds something this parser cannot read."""


def _ts(s: str) -> float:
    return datetime.fromisoformat(s).timestamp()


def _span(d: dict) -> float:
    return _ts(d["end"]) - _ts(d["start"]) if "start" in d and "end" in d else float("nan")


def read_json(folder: Path, name: str) -> dict:
    p = Path(folder) / name
    if not p.exists():
        raise OutputError(f"DLIO output: {p} is missing (DLIO did not finish; see {Path(folder) / LOG})")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise OutputError(f"DLIO output: {p} is not JSON ({e.msg} at line {e.lineno})") from None


def rank_files(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("*_output.json"), key=lambda p: int(p.name.split("_")[0]))


def steps_table(folder: Path) -> pd.DataFrame:
    """One row per (rank, epoch, phase, block, step): load_s, proc_s, compute_s (seconds)."""
    rows = []
    for p in rank_files(folder):
        rank = int(p.name.split("_")[0])
        out = json.loads(p.read_text())
        for ep, d in out.items():
            if not ep.isdigit() or not isinstance(d, dict):
                continue
            load, proc, comp = d.get("load", {}), d.get("proc", {}), d.get("compute", {})
            if not isinstance(proc, dict):  # DLIO's batch_processed can replace the dict by a list
                continue
            for key in dict.fromkeys([*load, *proc]):
                phase = "eval" if key == "eval" else "train"
                block = 0 if key == "eval" else int(key.removeprefix("block"))
                loads, procs = load.get(key, []), proc.get(key, [])
                comps = comp.get(key, []) if isinstance(comp, dict) else []
                # DLIO records a block's first load before start_block() empties the list, so
                # blocks after the first lack the load of their first step: align at the end.
                lag = max(0, len(procs) - len(loads))
                for i in range(max(len(loads), len(procs))):
                    j = i - lag
                    rows.append({"rank": rank, "epoch": int(ep), "phase": phase, "block": block,
                                 "step": i + 1,
                                 "load_s": float(loads[j]) if 0 <= j < len(loads) else float("nan"),
                                 "proc_s": float(procs[i]) if i < len(procs) else float("nan"),
                                 "compute_s": float(comps[i]) if i < len(comps) else float("nan")})
    cols = ["rank", "epoch", "phase", "block", "step", "load_s", "proc_s", "compute_s"]
    return pd.DataFrame(rows, columns=cols)


def epochs_table(folder: Path, batch_size: int, ranks: int, per_sample: int = 1,
                 bytes_per_dlio_sample: float = float("nan"), compute_mean_s: float = 0.0,
                 record_length: float = float("nan")) -> pd.DataFrame:
    """One row per epoch: DLIO's numbers and ours (see the module docstring).

    ``batch_size`` is DLIO's (per rank, in DLIO samples); ``per_sample`` DLIO samples make one
    of ours; ``compute_mean_s`` is the mean sleep per step (for Eq 3.2).
    """
    summary = read_json(folder, SUMMARY)
    stats = read_json(folder, PER_EPOCH)
    m = summary.get("metric", {})
    thr = m.get("train_throughput_samples_per_second", [])
    au = m.get("train_au_percentage", [])
    steps = steps_table(folder)
    rows = []
    for i, (ep, d) in enumerate(sorted(stats.items(), key=lambda kv: int(kv[0]))):
        blocks = [v for k, v in d.items() if k.startswith("block")]
        ckpts = [v for k, v in d.items() if k.startswith("ckpt")]
        train_s = sum(_span(b) for b in blocks)
        st = steps[(steps["epoch"] == int(ep)) & (steps["phase"] == "train")]
        n_steps = int(st.groupby("rank").size().max()) if len(st) else 0
        dlio_sps = float(thr[i]) if i < len(thr) else float("nan")
        ideal = n_steps * compute_mean_s  # Eq 3.2: samples / (B G) x sleep, per rank
        rows.append({
            "epoch": int(ep), "steps": n_steps, "train_s": train_s, "epoch_s": _span(d),
            "start": _ts(d["start"]) if "start" in d else float("nan"),   # epoch seconds (the device audit's window)
            "end": _ts(d["end"]) if "end" in d else float("nan"),
            "checkpoint_s": sum(_span(c) for c in ckpts), "checkpoints": len(ckpts),
            "eval_s": _span(d["eval"]) if "eval" in d else 0.0,
            "dlio_samples_per_s": dlio_sps,
            "dlio_au_pct": float(au[i]) if i < len(au) else float("nan"),
            "dlio_io_MiBps": dlio_sps * record_length / 2**20,
            "samples_per_s": dlio_sps / per_sample,
            "MBps": dlio_sps * bytes_per_dlio_sample / 1e6,
            "au_eq31": ideal / train_s if train_s > 0 and compute_mean_s > 0 else float("nan"),
            "data_wait_median_s": float(st["load_s"].median()) if len(st) else float("nan"),
        })
    return pd.DataFrame(rows)


def headline(summary: dict) -> dict:
    """DLIO's own averaged metrics (as it prints them in its ``[METRIC]`` block)."""
    m = summary.get("metric", {})
    keys = ("train_au_mean_percentage", "train_au_meet_expectation",
            "train_throughput_mean_samples_per_second", "train_io_mean_MB_per_second")
    out = {k: m.get(k) for k in keys}
    out.update({"num_accelerators": summary.get("num_accelerators"), "epochs": summary.get("epochs"),
                "start": summary.get("start"), "end": summary.get("end")})
    return out


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a text file ('' if missing)."""
    p = Path(path)
    if not p.exists():
        return ""
    return "\n".join(p.read_text(errors="replace").splitlines()[-lines:])
