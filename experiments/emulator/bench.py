"""Benchmark (not a test): the load one client drives with the emulator vs fio on the same files.

Per tier and workload, in the same run: the data set is staged on the tier and evicted from the
page cache (on a memory tier it stays in memory), the emulator runs with **zero compute time**
(``compute_model="zero"``, no checkpoint) at one accelerator, long enough to read the data set
about once (:func:`long_enough`), and fio reads the same files with the same request sizes and
as many readers as the emulator has (buffered, like the frameworks):

- UNET3D: ``np.load`` reads each .npy file with one large read after a 4 KiB header; fio
  reads the cases of the first epoch sequentially, the images and then the masks, each with
  the smallest file's size (rounded down to 4 KiB: fio needs the block within the file) as
  block size, so most files take one or two requests; one job per DataLoader worker (files
  dealt in turn); the emulator's bytes/s is taken over its first (cold) epoch, without the
  first batch (its wait is mostly the DataLoader worker starting);
- BERT: ``TFRecordDataset`` reads with a 256 KiB buffer; fio reads the shard's files
  sequentially at 256 KiB (or the smallest file's size, if smaller), one job per interleaved
  file (``cycle_length``);
- DLRM: one ``pread`` of ``batch x 160`` B per step at a random offset; fio ``randread`` with
  that block size, one job, as many requests as steps.

Cold against cold: the emulator's bytes/s (UNET3D's first epoch, BERT's and DLRM's one pass)
against fio after the same eviction (``emulator_MBps``, ``fio_MBps``, ``fraction_of_fio``);
warm against warm: UNET3D's second epoch against fio run again right after, from the page cache
(``emulator_warm_MBps``, ``fio_warm_MBps``, ``warm_fraction_of_fio``; NaN for BERT and DLRM,
which read once). Each row also has the run's ``bound`` (storage, client or undetermined:
:func:`.bound.verdict` of the cold bytes/s against this fio job, the per-thread CPU and the data
wait; ``bound_why``) and ``where_time_went``.

The ratio ``emulator / fio`` (bytes/s, cold) is the goal of issue 12 (>= 0.8): a storage benchmark is
only as good as the load one client can drive. Numbers on a shared or loaded box are noisy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, Field

from ..settings import paths
from ..settings.config import matching

TFRECORD_BUFFER = 256 * 1024  # tf.data's TFRecordDataset default buffer (thesis Table 5.2: 262,144 B reads)


def _files(workload: str, data_dir: Path) -> list[Path]:
    d = Path(data_dir)
    if workload == "unet3d":
        from ..workloads.data_unet3d import read_manifest
        m = read_manifest(d)
        return [d / p for p in list(m["path_x"]) + list(m["path_y"])]
    if workload == "bert":
        return sorted((d / "train").glob("*.tfrecord")) + [d / "eval" / "eval.tfrecord"]
    if workload == "retinanet":
        from ..workloads.data_retinanet import read_manifest
        return [d / p for p in read_manifest(d)["path"]]
    return [d / "train_data.bin", d / "test_data.bin"]


def stage_data(workload: str, tier) -> Path:
    """The workload's data set copied onto ``tier`` (once; verified by a manifest), via
    :func:`experiments.host.tiers.stage_copy`. UNET3D and RetinaNet (and RetinaNet's fixed-size
    variant, ``retinanet-fixed``) have their own manifests (``filelist.csv``); BERT
    and DLRM are staged through ``data/emulator_stage/<workload>``, a folder of links to the
    data files plus a manifest of their names, sizes and SHA-256 (the data folders themselves
    are DVC outputs and are not touched)."""
    import hashlib

    from ..host.tiers import stage_copy

    src = paths.data_dir(workload)
    if workload in ("unet3d", "retinanet", "retinanet-fixed"):   # each has its own manifest, filelist.csv
        return stage_copy(src, tier)
    st = paths.data_dir("emulator_stage") / workload
    lines = ["name,bytes,sha256"]
    want = []
    for f in _files(workload, src):
        rel = f.relative_to(src)
        h = hashlib.sha256()
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
        lines.append(f"{rel},{f.stat().st_size},{h.hexdigest()}")
        want.append(rel)
    man = "\n".join(lines) + "\n"
    if not (st / "filelist.csv").exists() or (st / "filelist.csv").read_text() != man:
        import shutil
        shutil.rmtree(st, ignore_errors=True)
        for rel in want:
            (st / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(src / rel, st / rel)
        (st / "filelist.csv").write_text(man)
    return stage_copy(st, tier)


def _fio_json(jobfile: str) -> dict:
    from ..chien.fio_baseline import fio_binary

    p = subprocess.run([fio_binary(), "--output-format=json", jobfile], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"fio failed ({p.returncode}): {p.stderr[-2000:]}")
    data = json.loads(p.stdout[p.stdout.index("{"):])
    io = sum(j["read"]["io_bytes"] for j in data["jobs"])
    # jobs of a group run together (its time: the longest job's); groups run one after another
    groups: dict = {}
    for j in data["jobs"]:
        groups[j.get("groupid", 0)] = max(groups.get(j.get("groupid", 0), 0), j["read"]["runtime"])
    secs = sum(groups.values()) / 1e3
    return {"io_bytes": io, "seconds": secs, "bw_bytes": io / secs if secs else float("nan"),
            "jobs": len(data["jobs"])}


def _block(nbytes: int) -> int:
    """A fio block size no larger than ``nbytes`` (fio needs bs <= the file), 4 KiB multiple."""
    return max(4096, nbytes // 4096 * 4096)


def _esc(f) -> str:
    """A file name for fio's ``filename=a:b`` list (':' escaped)."""
    return str(f).replace(":", "\\:")


def fio_same_files(workload: str, data_dir: Path, cfg, seed: int = 1) -> dict:
    """fio reading what the emulator of ``cfg`` (one accelerator) reads; see the module docstring."""
    d = Path(data_dir)
    sec = cfg.section
    head = "[global]\nioengine=psync\ndirect=0\nrandrepeat=1\nfile_service_type=sequential\n"
    jobs = []
    if workload == "unet3d":
        from ..workloads.data_unet3d import read_manifest
        m = read_manifest(d, "train")
        steps = len(m) // cfg.batch_size
        cases = m.iloc[: steps * cfg.batch_size]
        n = max(1, sec["train"]["workers"])
        nfiles = 0
        # images, then masks (a second group): a block size per group close to its file sizes
        for g, col in enumerate(("path_x", "path_y")):
            files = [d / p for p in cases[col]]
            nfiles += len(files)
            bs = _block(min(f.stat().st_size for f in files))
            for k in range(min(n, len(files))):
                mine = ":".join(_esc(f) for f in files[k::n])
                jobs.append(f"[{col[-1]}{k}]\n{'stonewall' + chr(10) if g and not k else ''}rw=read\n"
                            f"bs={bs}\nfilename={mine}\n")
        what = f"{nfiles} files (images, then masks), {n} reader(s)"
    elif workload == "bert":
        files = sorted((d / "train").glob("*.tfrecord"))
        n = max(1, min(sec["train"]["cycle_length"], len(files)))
        bs = _block(min(TFRECORD_BUFFER, min(f.stat().st_size for f in files)))
        for k in range(n):
            mine = ":".join(_esc(f) for f in files[k::n])
            jobs.append(f"[r{k}]\nrw=read\nbs={bs}\nfilename={mine}\n")
        what = f"{len(files)} files, bs {bs} B, {n} job(s)"
    else:
        from ..workloads.data_dlrm import SAMPLE_BYTES
        bs = cfg.batch_size * SAMPLE_BYTES
        f = d / "train_data.bin"
        jobs.append(f"[r0]\nrw=randread\nbs={bs}\nblockalign={SAMPLE_BYTES}\nnorandommap=1\n"
                    f"randseed={seed}\nfilename={_esc(f)}\nnumber_ios={sec['train']['steps']}\n")
        what = f"randread bs {bs} B, {sec['train']['steps']} requests"
    with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as fh:
        fh.write(head + "".join(jobs))
        job = fh.name
    try:
        out = _fio_json(job)
    finally:
        os.unlink(job)
    return out | {"fio_job": what}


def emulator_bytes_per_s(summary: dict, epoch: int = 0) -> tuple[float, float, float]:
    """(bytes, seconds, bytes/s) the emulator read. UNET3D: over epoch ``epoch`` (0: the first,
    cold one; 1: the second, warm where the data set fits in the page cache); BERT and DLRM read
    the data set once, cold: their whole training (NaN for ``epoch`` > 0)."""
    rd = Path(summary["run_dir"])
    if summary["workload"] != "unet3d":
        if epoch:
            return float("nan"), float("nan"), float("nan")
        return summary["data_bytes"], summary["train_s"], summary["data_bytes_per_s"]
    from ..workloads.data_unet3d import read_manifest
    from ..workloads.launch import collect

    got = collect(rd)
    run = json.loads((rd / "run.json").read_text())
    m = read_manifest(run["data_dir"], "train")
    size = (m["bytes_x"] + m["bytes_y"]).to_numpy()
    lo = got["loader"]
    lo = lo[(lo["split"] == "train") & (lo["epoch"] == epoch)]
    st = got["steps"]
    first = st[(st["epoch"] == epoch) & (st["step"] == 0)]
    ph = got["phases"]
    ph = ph[(ph["phase"] == "train") & (ph["epoch"] == epoch)]
    if not len(lo) or not len(ph):
        return float("nan"), float("nan"), float("nan")
    # the first batch's wait is mostly the DataLoader worker starting (fio's job start-up is
    # not in its time either): leave out that wait and the first batch's cases
    skip = int(first["samples"].max()) if len(first) else 0
    nbytes = float(size[lo["case"].astype(int)].sum() - size[lo["case"].astype(int).iloc[:skip]].sum())
    secs = float(ph["end"].max() - ph["start"].min()) - float(first["data_ns"].max()) / 1e9
    return nbytes, secs, nbytes / secs


def long_enough(workload: str, section: dict, batch_size: int, layout: dict) -> dict:
    """Overrides so a benchmark run reads the data set about once: BERT and DLRM run one pass
    of steps (BERT's default 20 steps read little beyond the shuffle buffer's first fill);
    UNET3D two epochs (the first is measured). Evaluation off where it can be."""
    if workload == "bert":
        n = section["data"]["samples_per_file"] * layout["train_files"]
        return {"train": {"steps": max(3, min(20000, n // batch_size)), "eval_steps": 0}}
    if workload == "dlrm":
        return {"train": {"steps": max(3, min(5000, layout["train_samples"] // batch_size)),
                          "eval_every": 0, "eval_steps": 0}}
    return {"train": {"epochs": 2, "eval_every": 0}}


def measure(tiers=None, workloads=("unet3d", "bert", "dlrm"), runs: int = 1,
            out_root=None) -> pd.DataFrame:
    """The table (see the module docstring); one row per tier, workload and repeat. Batch sizes
    are the ``emulator.points`` of ``params.yaml`` (the sweep's smallest for a workload without
    a point), at one accelerator."""
    from ..host import cache
    from ..settings import config
    from .config import data_layout, from_params

    cfg_all = config.load(seed=None, tiers=None, emulator=None)
    tiers = cfg_all.tiers if tiers is None else tiers
    out_root = Path(out_root or paths.data_dir("emulator_bench"))
    from .runner import run
    rows = []
    for tier in tiers:
        for w in workloads:
            data = stage_data(w, tier)
            pt = cfg_all.emulator.points.get(w)
            base = from_params(w, None, pt.batch_size if pt else None, 1, compute_model="zero",
                               checkpoint_pattern="none", data_dir=data, seed=cfg_all.seed, check=False)
            cfg = from_params(w, None, base.batch_size, 1, compute_model="zero", checkpoint_pattern="none",
                              data_dir=data, checkpoint_dir=tier.dir / "emulator-checkpoints" / w,
                              seed=cfg_all.seed,
                              overrides=long_enough(w, base.section, base.batch_size, data_layout(w, data)))
            for r in range(runs):
                method = cache.evict([data])
                s = run(cfg, out_root / f"{tier.name}-{w}-{r}")
                eb, es, ebps = emulator_bytes_per_s(s)
                warm_bps = emulator_bytes_per_s(s, epoch=1)[2]
                cache.evict([data])
                f = fio_same_files(w, data, cfg, seed=cfg_all.seed + r)
                fw = fio_same_files(w, data, cfg, seed=cfg_all.seed + r)  # again: from the page cache
                rows.append({"tier": tier.name, "workload": w, "repeat": r, "eviction": method,
                             "batch_size": cfg.batch_size, "emulator_bytes": eb, "emulator_s": es,
                             "emulator_MBps": ebps / 1e6, "fio_bytes": f["io_bytes"], "fio_s": f["seconds"],
                             "fio_MBps": f["bw_bytes"] / 1e6, "fio_job": f["fio_job"],
                             "fraction_of_fio": ebps / f["bw_bytes"],
                             "emulator_warm_MBps": warm_bps / 1e6, "fio_warm_MBps": fw["bw_bytes"] / 1e6,
                             "warm_fraction_of_fio": warm_bps / fw["bw_bytes"],
                             **_judged(s, ebps, f)})
    return pd.DataFrame(rows)


def _judged(s: dict, client_bps: float, fio: dict) -> dict:
    """A bench row's verdict: the run's figures judged against the fio job on the same files."""
    from .bound import rejudge

    j = rejudge(s, client_bps, {"bytes_per_s": fio["bw_bytes"], "how": f"fio on the same files: {fio['fio_job']}"})
    c = s.get("client_cpu") or {}
    return {"bound": j["bound"], "bound_why": j["why"], "where_time_went": s.get("where_time_went", ""),
            "client_cpu_share": c.get("cpu_share"), "busiest_thread_demand": (c.get("threads") or {}).get("busiest_demand")}


def repeats_bound(verdicts: pd.Series) -> str:
    """One verdict for the runs of a configuration: client when any was client-bound, storage when all
    were storage-bound, else undetermined."""
    if (verdicts == "client").any():
        return "client"
    return "storage" if len(verdicts) and (verdicts == "storage").all() else "undetermined"


def combined_bound(search_bound, load_bound) -> str:
    """One row's verdict from the search's (:func:`.search.row`) and the zero-compute load run's
    (:func:`measure`, against fio on the same files), both by :func:`.bound.verdict`: client when
    either was client-bound; storage only when the load run reached the storage (its client /
    fio fraction at least :data:`.bound.STORAGE_CLOSE`) and the search did not say otherwise;
    no verdict when the search was decided by a run the page cache served (its device audit);
    not measured when neither ran; else undetermined."""
    b = search_bound if isinstance(search_bound, str) else None
    lb = load_bound if isinstance(load_bound, str) else None
    if b == "no verdict":
        return b
    if "client" in (b, lb):
        return "client"
    if lb == "storage" and b in (None, "storage", "undetermined"):
        return "storage"
    return "not measured" if b is None and lb is None else "undetermined"


def engineer_table(found: pd.DataFrame, load: pd.DataFrame) -> pd.DataFrame:
    """The storage engineer's table: per tier, workload and compute model, the most emulated
    accelerators at AU >= 90 % (``found``: rows with ``tier``, ``workload`` and
    :func:`.search.row`'s columns), the bytes/s one client drove at zero compute against fio on
    the same files, both cold (``load``: :func:`measure`'s rows, median over runs), the
    row's ``bound`` (:func:`combined_bound`) and ``where_time_went`` (the load run's, else the
    search's). A client-bound row's ``max_accelerators`` is the client's limit
    (``limit_of``: client), not the storage's. MB/s = 10^6 B/s."""
    keep = ["tier", "workload", "compute_model", "max_accelerators", "bound", "where_time_went", "stopped_because"]
    f = found.reindex(columns=keep)
    if len(load):
        lo = load.reindex(columns=["tier", "workload", "emulator_MBps", "fio_MBps", "bound", "where_time_went"])
        lo = lo.groupby(["tier", "workload"], as_index=False).agg(
            client_cold_MBps=("emulator_MBps", "median"), fio_cold_MBps=("fio_MBps", "median"),
            load_bound=("bound", repeats_bound),
            load_where=("where_time_went", "first"))
        t = f.merge(lo, on=["tier", "workload"], how="left")
    else:
        t = f.assign(client_cold_MBps=float("nan"), fio_cold_MBps=float("nan"), load_bound=None, load_where=None)
    t["client_fraction_of_fio_cold"] = t["client_cold_MBps"] / t["fio_cold_MBps"]
    t["bound"] = [combined_bound(b, lb) for b, lb in zip(t["bound"], t["load_bound"])]
    t["limit_of"] = t["bound"].map({"client": "client", "storage": "storage"}).fillna("neither for certain")
    t["where_time_went"] = [lw if isinstance(lw, str) and lw else w if isinstance(w, str) and w else "not measured"
                            for lw, w in zip(t["load_where"], t["where_time_went"])]
    return t[["tier", "workload", "compute_model", "max_accelerators", "limit_of", "client_cold_MBps",
              "fio_cold_MBps", "client_fraction_of_fio_cold", "bound", "where_time_went", "stopped_because"]]


def engineer_markdown(t: pd.DataFrame) -> str:
    """:func:`engineer_table` as the markdown table a storage engineer reads first."""
    from .bound import STORAGE_CLOSE

    lines = ["**Per tier: the most accelerators at AU >= 90 % and what one client drove (cold)**", "",
             f"storage: the client drove >= {STORAGE_CLOSE} of fio on the same files; client: below it with a "
             "thread of the data path near a full core (or the ranks near their cores), so the max "
             "accelerators is the client's limit; undetermined: neither, see where the time went.", "",
             "| tier | workload | compute model | max accelerators | client MB/s | fio MB/s | client / fio "
             "| bound | where the client's time went |", "|---|---|---|---|---|---|---|---|---|"]
    num = lambda v, f: "n/a" if v is None or v != v else format(v, f)  # noqa: E731 - NaN: not measured
    for r in t.itertuples():
        g = num(r.max_accelerators, '.0f')
        g = g + " (client's limit)" if r.bound == "client" and g != "n/a" else g
        lines.append(f"| {r.tier} | {r.workload} | {r.compute_model} | {g} | "
                     f"{num(r.client_cold_MBps, '.4g')} | {num(r.fio_cold_MBps, '.4g')} | "
                     f"{num(r.client_fraction_of_fio_cold, '.2f')} | {r.bound} | {r.where_time_went} |")
    return "\n".join(lines) + "\n"


class BenchArgs(BaseModel):
    """The bench's command line, validated as params.yaml's sections are."""

    workloads: matching(r"(unet3d|bert|dlrm)(,(unet3d|bert|dlrm))*",
                        "workloads separated by commas, from unet3d, bert, dlrm") = "unet3d,bert,dlrm"
    runs: int = Field(3, ge=1, le=100)


def main(argv=None) -> int:
    """``python -m experiments.emulator bench [--workloads unet3d,bert] [--runs N]``."""
    import argparse

    from ..settings.config import ArgumentParser, ConfigError, check_args

    ap = ArgumentParser(prog="python -m experiments.emulator bench", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="unet3d,bert,dlrm")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args(argv)
    try:
        check_args(BenchArgs, a, ap)
        ws = a.workloads.split(",")
        t = measure(workloads=ws, runs=a.runs)
    except (ConfigError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from ..output.results import atomic_write
    raw = paths.data_dir("emulator_bench") / "bench.csv"
    atomic_write(raw, lambda p: t.to_csv(p, index=False))
    g = t.groupby(["tier", "workload"], as_index=False)
    med = g[["emulator_MBps", "fio_MBps", "fraction_of_fio"]].median().merge(
        g.agg(bound=("bound", repeats_bound),
              where_time_went=("where_time_went", "first")), on=["tier", "workload"])
    print("\nemulator (zero compute, 1 accelerator) vs fio on the same files and request sizes, "
          f"median of {a.runs} (MB/s = 10^6 B/s; goal: fraction >= 0.8); bound: experiments/emulator/bound.py")
    with pd.option_context("display.width", 250, "display.max_colwidth", 200):
        print(med.round(3).to_string(index=False))
    print(f"every run: {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
