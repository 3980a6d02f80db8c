"""DLIO with zero computation time, per tier, beside fio on the same files and request sizes:
the DLIO side of ``make bench``'s "emulator vs DLIO vs fio" table (not a test).

``python -m experiments.dlio.bench [--tiers mem,disk] [--workloads unet3d,bert,dlrm] [--ranks 1]``

Per tier and workload: the data set is put on the tier (our UNET3D cases and DLRM file are
copied with :func:`experiments.host.tiers.stage_copy`; BERT's is the TFRecord set DLIO generates,
written on the tier), evicted from the page cache (:func:`experiments.host.cache.evict`), DLIO runs
the workload's ``params.yaml`` settings with ``computation_time`` 0, and then fio reads the same
files, evicted again, with the requests DLIO makes (seen with strace on DLIO 2.0.0):

- UNET3D: ``np.load`` reads a 128 B and a 4 KiB header, then the rest of the file in one
  read -> fio sequential reads of each file (``bs`` = the smallest file, at most 1 MiB);
- BERT: ``TFRecordDataset`` with DLIO's ``transfer_size`` read buffer (256 KiB) -> fio
  sequential reads of that size;
- DLRM: a seek and a 4 KiB buffered read per 160 B sample, in a shuffled order -> fio random
  4 KiB reads of the file (as many as DLIO made).

Both buffered, synchronous (``psync``), ``ranks`` jobs. Bytes/s: DLIO's samples/s x the
measured bytes per sample; fio's ``bw_bytes``. DLRM is compared in requests/s (DLIO's samples/s
against fio's IOPS): DLIO reads 4 KiB to deliver a 160 B sample. Cold: DLIO's first epoch
(after eviction; it includes the DataLoader's start) against fio after eviction; warm: DLIO's
later epochs (a data set smaller than memory is then cached) against fio run again.
``dlio_fraction_of_fio`` is the cold ratio, ``dlio_warm_fraction_of_fio`` the warm one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from ..host import cache
from ..settings import paths
from ..settings.config import ConfigError
from . import runner
from .workload_config import WORKLOADS

FIO_MAX_BS = 1 << 20


def fio_job(workload: str, plan: runner.Plan, result: dict) -> dict:
    """fio arguments reading ``plan``'s data with DLIO's request pattern (module docstring)."""
    b = plan.built
    folder = Path(plan.data_folder)
    if workload == "unet3d":
        files = sorted((folder / "train").glob("*.npy"))
        smallest = min(p.stat().st_size for p in files)
        bs = max(4096, min(FIO_MAX_BS, smallest // 4096 * 4096))
        args = ["--rw=read", f"--bs={bs}", "--file_service_type=sequential"]
        desc = f"sequential {bs // 1024} KiB reads of each .npy file"
    elif workload == "bert":
        files = sorted((folder / "train").glob("*.tfrecord"))
        smallest = min(p.stat().st_size for p in files)
        bs = max(4096, min(int(b.config["reader"]["transfer_size"]), smallest // 4096 * 4096))
        args = ["--rw=read", f"--bs={bs}", "--file_service_type=sequential"]
        desc = f"sequential {bs // 1024} KiB reads of each TFRecord file"
    else:
        files = [p.resolve() for p in sorted((folder / "train").glob("*.indexed_binary"))]
        n = int(result["row"]["steps"]) * int(b.config["reader"]["batch_size"]) * plan.ranks
        args = ["--rw=randread", "--bs=4k", "--norandommap", f"--number_ios={max(1, n // plan.ranks)}"]
        desc = f"random 4 KiB reads of the file ({n} reads, as DLIO's samples)"
    names = [str(p.resolve()) for p in files]
    if any(":" in s for s in names):
        raise ConfigError(f"fio cannot take file names with ':' (fio separates files with it): {folder}")
    return {"args": ["--filename=" + ":".join(names), *args], "files": names, "desc": desc}


def run_fio(job: dict, ranks: int, warm: bool = False) -> dict:
    """One buffered psync fio run of ``job``; bytes/s, requests/s and bytes moved. ``warm``:
    keep the page cache (fio drops the files' cached pages before a job unless told not to)."""
    from ..chien.fio_baseline import fio_binary

    cmd = [fio_binary(), "--name=dlio-match", "--ioengine=psync", "--iodepth=1", "--direct=0",
           f"--invalidate={0 if warm else 1}",
           f"--numjobs={ranks}", "--group_reporting", "--output-format=json", *job["args"]]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"fio failed: {(p.stderr or p.stdout).strip()[-400:]}")
    r = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]["read"]
    return {"fio_Bps": float(r["bw_bytes"]), "fio_iops": float(r["iops"]),
            "fio_bytes": int(r["io_bytes"]), "fio_cmd": cmd}


def _staged(workload: str, tier) -> Path:
    from ..host.tiers import stage_copy

    src = paths.data_dir(workload)
    manifest = {"unet3d": "filelist.csv", "dlrm": "train_data.bin"}[workload]
    if not (src / manifest).exists():
        raise ConfigError(f"DLIO bench: {src / manifest} is missing; run `dvc repro workload_data`")
    return stage_copy(src, tier, manifest=manifest)


def measure(tiers=None, workloads=WORKLOADS, ranks: int = 1, out_root=None) -> pd.DataFrame:
    """One row per (tier, workload): DLIO's bytes/s and samples/s at zero computation time and
    fio's bytes/s on the same files; status 'not measured' with the reason when a side could not
    run (DLIO's environment, missing data, fio)."""
    from ..settings import config

    cfg = config.load(tiers=tiers if isinstance(tiers, list) else None)
    tier_list = cfg.tiers
    if isinstance(tiers, str):
        want = tiers.split(",")
        tier_list = [t for t in cfg.tiers if t.name in want]
        if not tier_list:
            raise ConfigError(f"DLIO bench tiers = {tiers!r}; allowed: {', '.join(t.name for t in cfg.tiers)}")
    for w in workloads:
        if w not in WORKLOADS:
            raise ConfigError(f"DLIO bench workload = {w!r}; allowed: {', '.join(WORKLOADS)}")
    out_root = Path(out_root) if out_root else Path(tempfile.mkdtemp(prefix="dlio-bench-"))
    rows = []
    for tier in tier_list:
        for w in workloads:
            row = {"tier": tier.name, "workload": w, "ranks": ranks}
            try:
                data_dir = None if w == "bert" else _staged(w, tier)
                plan = runner.prepare(w, None, ranks, out_root / f"{tier.name}-{w}", compute_time_s=0.0,
                                      data_dir=data_dir, checkpoint_bytes=None,
                                      generated_root=tier.dir / "dlio")
                row["eviction"] = cache.evict(plan.data_paths)
                r = runner.execute(plan)
                if r["status"] != "measured":
                    rows.append({**row, "status": r["status"], "why": r["why"]})
                    continue
                job = fio_job(w, plan, r)
                cache.evict(plan.data_paths)
                cold = run_fio(job, ranks)
                warm = run_fio(job, ranks, warm=True)  # again, from the page cache
                e = r["epochs"]
                per = r["row"]["samples_per_s"] and r["row"]["MBps"] * 1e6 / r["row"]["samples_per_s"]
                first, steady = e.iloc[0], e.iloc[1:] if len(e) > 1 else e
                # DLRM: DLIO makes one 4 KiB read per 160 B sample, so requests are compared
                basis = "requests" if w == "dlrm" else "bytes"
                dlio_cold = first["dlio_samples_per_s"] if basis == "requests" else first["MBps"] * 1e6
                dlio_warm = (steady["dlio_samples_per_s"] if basis == "requests"
                             else steady["MBps"] * 1e6).median()
                fio_cold = cold["fio_iops"] if basis == "requests" else cold["fio_Bps"]
                fio_warm = warm["fio_iops"] if basis == "requests" else warm["fio_Bps"]
                rows.append({**row, "status": "measured", "why": "", "basis": basis,
                             "dlio_samples_per_s": r["row"]["samples_per_s"],
                             "dlio_Bps": r["row"]["MBps"] * 1e6, "bytes_per_sample": per,
                             "dlio_epochs": len(e), "dlio_cold": float(dlio_cold),
                             "fio_cold": float(fio_cold), "dlio_warm": float(dlio_warm),
                             "fio_warm": float(fio_warm),
                             "dlio_fraction_of_fio": float(dlio_cold) / float(fio_cold),
                             "dlio_warm_fraction_of_fio": float(dlio_warm) / float(fio_warm),
                             "fio_Bps": cold["fio_Bps"], "fio_iops": cold["fio_iops"],
                             "fio_job": job["desc"], "dlio_steps": r["row"]["steps"],
                             "dlio_version": r["row"]["dlio_version"], "out_dir": r["out_dir"]})
            except runner.DlioUnavailable as e:
                rows.append({**row, "status": "not measured", "why": str(e)})
            except (ConfigError, RuntimeError) as e:
                rows.append({**row, "status": "not measured", "why": str(e)})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.dlio.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiers", default=None, help="tier names (comma list); default: every tier")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--out", default=None, help="folder for the DLIO runs (default: a temp folder)")
    a = ap.parse_args(argv)
    if a.ranks < 1:
        print(f"error: --ranks = {a.ranks}; allowed: an integer >= 1", file=sys.stderr)
        return 2
    try:
        t = measure(a.tiers, a.workloads.split(","), a.ranks, a.out)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\nDLIO 2.0 at computation_time 0 vs fio on the same files and request sizes; cold: "
          "DLIO's first epoch and fio after eviction, warm: DLIO's later epochs (median) and fio "
          "again; basis bytes/s, or requests/s for DLRM (one 4 KiB read per 160 B sample)")
    cols = [c for c in ("tier", "workload", "status", "basis", "dlio_samples_per_s", "dlio_cold",
                        "fio_cold", "dlio_fraction_of_fio", "dlio_warm", "fio_warm",
                        "dlio_warm_fraction_of_fio", "fio_job", "why") if c in t]
    with pd.option_context("display.max_colwidth", 80, "display.width", 200):
        print(t[cols].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
