"""Device baseline (Table I of Chien et al.): fio on every tier, the ceiling other figures draw.

Per tier: sequential write and sequential read with 1 MiB blocks, random read with the
ImageNet size mix of the blog (``bssplit``) and random read of 16 KiB blocks (the blog's "16K
IOPS" job, set against its large reads), direct I/O where the file system allows it
(otherwise buffered, with the file evicted before each read run). ``warmup`` rounds, then
``runs`` rounds of every (tier, job) in a seeded order, through the one measuring-stage
interface (:func:`measuring_stage`); the summary reports the median bandwidth in MB/s (10^6 B/s)
and IOPS.

Every run is audited (:mod:`experiments.host.device_audit`): the bytes fio moved beside the bytes the
tier's device read or wrote (``device_ratio``, ``served_by``: device, cache, memory). A job whose
runs the page cache served (a buffered read of a file that stayed in memory, a write never
synced) is ``cache`` in the summary, and gives no storage reference (:func:`experiments.verdicts.reasons.fio_MBps`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
from pydantic import Field

from ..host import cache, device_audit
from ..settings.config import ConfigError, Section
from ..host.tiers import Tier, prepare, require_free
from ..stages import Stage, rounds, tier_names

JOBS = ("seqwrite", "seqread", "randread", "randread16k")


class FioConfig(Section):
    size_mib: int = Field(256, ge=4, description="test file size per tier, MiB")
    runtime_s: float = Field(3, gt=0, le=600, description="seconds per fio run")
    runs: int = Field(3, ge=1, le=50)
    warmup: int = Field(1, ge=0, le=5)
    seq_block: str = Field("1M", pattern=r"^\d+[KMkm]?$")
    ioengine: str = Field("libaio", pattern="^(libaio|psync|io_uring|sync)$")
    iodepth: int = Field(16, ge=1, le=1024)
    direct: str = Field("auto", pattern="^(auto|on|off)$")


def fio_binary() -> str:
    exe = shutil.which("fio")
    if not exe:
        raise ConfigError("fio_baseline: fio is not on PATH; `make setup` installs it as root "
                          "(apt-get install fio), or install it with your package manager")
    return exe


def _job_args(job: str, cfg: FioConfig, bssplit: str) -> list[str]:
    if job == "seqwrite":
        return ["--rw=write", f"--bs={cfg.seq_block}", "--end_fsync=1"]
    if job == "seqread":
        return ["--rw=read", f"--bs={cfg.seq_block}"]
    if job == "randread":
        return ["--rw=randread", f"--bssplit={bssplit}", "--norandommap"]
    if job == "randread16k":
        return ["--rw=randread", "--bs=16K", "--norandommap"]
    raise ValueError(job)


def _parse(stdout: str, job: str) -> dict:
    """Bandwidth (bytes/s), IOPS and bytes moved of the single job in fio's JSON output."""
    data = json.loads(stdout[stdout.index("{"):])
    j = data["jobs"][0]["write" if job == "seqwrite" else "read"]
    return {"bw_bytes": float(j["bw_bytes"]), "iops": float(j["iops"]),
            "io_bytes": int(j["io_bytes"]), "runtime_ms": int(j["runtime"])}


def run_job(path: Path, job: str, cfg: FioConfig, bssplit: str, direct: bool) -> dict:
    """One fio run of ``job`` on the file ``path``; raises CalledProcessError on failure."""
    cmd = [fio_binary(), "--name=" + job, f"--filename={path}", f"--size={cfg.size_mib}M",
           f"--ioengine={cfg.ioengine}", f"--iodepth={cfg.iodepth}", f"--direct={int(direct)}",
           "--time_based", f"--runtime={cfg.runtime_s}", "--output-format=json",
           "--randrepeat=1", "--randseed=1", *_job_args(job, cfg, bssplit)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, cmd, p.stdout, p.stderr)
    return _parse(p.stdout, job)


KEYS = ("tier", "job")   # the columns that name a configuration
FILE = "fio-baseline.testfile"   # each tier's test file, removed after the stage's runs
SEED = 0   # the rounds' order (the stage reads no seed section: its runs do not depend on one)


def measuring_stage(cfg: FioConfig, tiers: list[Tier], bssplit: str, facts: dict | None = None):
    """Every fio job of :data:`JOBS` on every tier as one measuring stage
    (:class:`experiments.repeats.MeasuringStage`), built, not run: fio found, every tier checked
    (writable, its test file fits) before the first is written; ``warmup`` rounds, then
    ``runs`` rounds, every (tier, job) once a round in a seeded order (a fixed count, looked
    at once). A run is one fio run of the job on the tier's test file (fio lays it out when a
    read comes first), direct I/O unless the file system refuses it (``direct: auto``: buffered
    from then on, with the file evicted before each read run, said once), audited against the
    device (:func:`_audited`). ``facts`` gets each tier's eviction and direct I/O (env.json)."""
    from .. import repeats

    fio_binary()
    infos = {t.name: prepare(t) for t in tiers}
    for t in tiers:   # every tier's test file fits, before the first is written
        require_free(t.dir / FILE, cfg.size_mib * 2**20,
                     f"fio's test file on tier {t.name}", "fio_baseline.size_mib", say=True)
    facts = facts if facts is not None else {}
    facts.setdefault("eviction", {})
    facts.setdefault("direct", {})
    by_name = {t.name: t for t in tiers}
    direct = {t.name: cfg.direct != "off" for t in tiers}

    def run_one(c: dict, i: int) -> dict:
        name, job = c["tier"], c["job"]
        path = by_name[name].dir / FILE
        if not direct[name] and job != "seqwrite":
            facts["eviction"][name] = cache.evict([path], label=name)
        with device_audit.Span(path, f"fio {name} {job} {i}") as span:
            try:
                r = run_job(path, job, cfg, bssplit, direct[name])
            except subprocess.CalledProcessError as e:
                if direct[name] and cfg.direct == "auto":
                    # e.g. tmpfs without O_DIRECT: fall back to buffered I/O, say so once
                    print(f"fio: direct I/O refused on tier {name} ({infos[name].fstype}); "
                          "using buffered I/O with eviction before reads")
                    direct[name] = False
                    facts["eviction"][name] = cache.evict([path], label=name)
                    r = run_job(path, job, cfg, bssplit, False)
                else:
                    raise RuntimeError(f"fio failed on tier {name}: {e.stderr.strip()[-400:]}") from e
        facts["direct"][name] = direct[name]
        return {"fstype": infos[name].fstype, "direct": direct[name],
                "bw_MBps": r["bw_bytes"] / 1e6, "iops": r["iops"],
                "io_bytes": r["io_bytes"], "runtime_ms": r["runtime_ms"],
                **_audited(span, job, r["io_bytes"])}

    configs = [{"tier": t.name, "job": job} for t in tiers for job in JOBS]
    facts["tiers"] = {k: vars(v) for k, v in infos.items()}
    return repeats.MeasuringStage("fio_baseline", KEYS, configs, run_one,
                                  repeats.RoundsPlan(cfg.runs, cfg.runs), SEED, warmup=cfg.warmup,
                                  progress="fio_baseline rounds", quantities=("bw_MBps",))


def measure(tiers: list[Tier], cfg: FioConfig, bssplit: str) -> tuple[pd.DataFrame, dict]:
    """:func:`measuring_stage` measured, each tier's test file removed after its runs (a killed
    run's leftover before them). Returns (one row per run, in tier and job order, facts for
    env.json)."""
    from .. import repeats

    for t in tiers:
        (t.dir / FILE).unlink(missing_ok=True)   # a killed run's leftover
    facts: dict = {}
    try:
        m = repeats.measure(measuring_stage(cfg, tiers, bssplit, facts))
    finally:
        for t in tiers:
            (t.dir / FILE).unlink(missing_ok=True)
    # in the order of the tiers and jobs (the rounds ran them in a seeded order)
    order = {c: k for k, c in enumerate((t.name, job) for t in tiers for job in JOBS)}
    raw = m.rows.assign(_order=[order[c] for c in zip(m.rows["tier"], m.rows["job"])])
    raw = raw.sort_values(["_order", "repeat"], kind="stable").drop(columns="_order").reset_index(drop=True)
    first = ["tier", "fstype", "job", "repeat", "warmup"]   # the columns as before the loop's own
    return raw[first + [c for c in raw if c not in first]], facts


def _audited(span, job: str, io_bytes: int) -> dict:
    """A run's device audit as columns: ``device`` and the device's bytes (MB) for what fio read
    (or wrote: seqwrite), ``device_ratio`` and ``served_by``."""
    w = job == "seqwrite"
    a = span.judge(None if w else io_bytes, io_bytes if w else None)
    c = device_audit.columns(a)
    ratio, by = (c["device_write_ratio"], c["written_to"]) if w else (c["device_read_ratio"], c["read_from"])
    return {"device": c["device"], "device_MB": c["device_written_MB" if w else "device_read_MB"],
            "device_ratio": ratio, "served_by": by}


def summarize(raw: pd.DataFrame) -> pd.DataFrame:
    """Median, min and max bandwidth (MB/s) and median IOPS per tier and job, warm-ups left out;
    ``served_by`` from the device audit (``cache`` when any run's bytes were the page cache's,
    else what served them all) with the median ``device_ratio``."""
    d = raw[~raw["warmup"]]
    g = d.groupby(["tier", "job"], sort=False)
    out = g.agg(bw_MBps=("bw_MBps", "median"), bw_min=("bw_MBps", "min"),
                bw_max=("bw_MBps", "max"), iops=("iops", "median"), runs=("bw_MBps", "size"),
                direct=("direct", "all")).reset_index()
    if "served_by" in d:
        by = g["served_by"].agg(lambda s: "cache" if (s == "cache").any() else s.iloc[0])
        out = out.join(by, on=["tier", "job"]).join(g["device_ratio"].median(), on=["tier", "job"])
    return out


# ----------------------------------------------------------------------------- the registry's entry

def size(p: dict, name: str) -> float:
    """The forecast's size of the stage (:func:`experiments.stages.size_of`): tiers x rounds."""
    return len(tier_names(p)) * rounds(p["fio_baseline"])


STAGE = Stage("fio_baseline", "notebooks/01-device-baseline.ipynb", "measuring", {"fio_baseline": "FioConfig"},
              ("tiers", "fio_baseline", "imagenet_size_mix"), report="tfdata_read_report", size="size")
