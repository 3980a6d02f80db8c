"""Checkpoint patterns: how a framework writes one checkpoint, measured from a trace, replayed.

The thesis's emulation first wrote each checkpoint as one file of the right size, then broke it
up into multiple smaller writes that followed no distribution of the real run's (Sec 6.4); its
VFS write counts and size distributions stayed far off (Tables 5.1-5.3). Here a checkpoint is
replayed write by write from a **checkpoint pattern**, derived from the VFS write rows of a
trace of the real run (:mod:`experiments.trace`), and stored as a plain JSON file beside the
compute model, so a user can bring their own framework's.

Schema ``checkpoint-pattern/1`` (sizes in bytes)::

    {
      "schema": "checkpoint-pattern/1",
      "host": "where it was traced (free text)",
      "workloads": {
        "dlrm": {
          "writers": "rank0",              # which ranks write: "rank0" or "all" (each its own files)
          "reuse": "overwrite",            # later checkpoints rewrite the same names, or "new" names
          "files": [                       # one checkpoint of one writer, files in first-write order
            {"name": "dlrm.pt",            # relative to the checkpoint folder; may hold {tag}, {rank}
             "writes": [["write", 64, 1], ["write", 4096, 37], ["writev", 1003520, 1]]}
          ],                               # run-length encoded, in order: [op, size, repeat]
          "summary": {...},                # computed: files, writes, bytes, size quartiles, CDF
          "derived_from": {...}            # trace, back end, events seen, filter (free form)
        }
      }
    }

``op`` is the system call the framework used (``write``, ``pwrite64`` or ``writev``); replay
issues the same one. Instead of ``files``, an entry may give only a distribution (as the
thesis's tables do): ``{"writers", "reuse", "files": 1, "writes": 230, "bytes": 499153191,
"size_q1": 1280, "size_median": 3904, "size_q3": 1769472}`` (optionally ``"cdf": [[size,
fraction], ...]``); replay then draws that many sizes from the piecewise-linear quantile
function through the quartiles (the thesis's suggestion, Sec 6.4), scaled to the total.

Sources :func:`load` accepts: a path; ``"traced"`` (or None), the file the
``emulator_patterns`` stage derived from traces of the real runs here
(``results/emulator_patterns/checkpoint_pattern.json``); ``"thesis"``, distributions from the
thesis's Tables 5.1-5.3 at paper scale (from :mod:`experiments.settings.reference`); ``"none"``, no
checkpoint writes.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..settings import paths
from ..settings.config import ConfigError, check_schema_file, read_json_file

SCHEMA = "checkpoint-pattern/1"
BUILTIN = ("traced", "thesis", "none")
OPS = ("write", "pwrite64", "writev")
WRITERS = ("rank0", "all")
# Which ranks write a checkpoint in the real programs (experiments/workloads/): rank 0 for the
# PyTorch workloads, every worker for BERT (each writes its own files, as the thesis saw).
DEFAULT_WRITERS = {"unet3d": "rank0", "bert": "all", "dlrm": "rank0", "retinanet": "rank0"}
REUSE = ("overwrite", "new")


def traced_file() -> Path:
    """The patterns the ``emulator_patterns`` stage derived on this box."""
    return paths.results_dir("emulator_patterns") / "checkpoint_pattern.json"


# ----------------------------------------------------------------------------- model

def rle(seq) -> list[list]:
    """[(op, size), ...] -> [[op, size, repeat], ...] (consecutive equal pairs merged)."""
    out: list[list] = []
    for op, size in seq:
        size = int(size)
        if out and out[-1][0] == op and out[-1][1] == size:
            out[-1][2] += 1
        else:
            out.append([op, size, 1])
    return out


def unrle(writes) -> list[tuple[str, int]]:
    return [(op, int(size)) for op, size, n in writes for _ in range(int(n))]


def summarize(sizes, nfiles: int, ops=None) -> dict:
    """The components Table 4.2 compares for one checkpoint (of one writer): files, writes,
    bytes, size quartiles, min/max, an empirical CDF (at most 21 points) and the calls used."""
    s = np.sort(np.asarray(list(sizes), dtype=float))
    out = {"files": int(nfiles), "writes": int(len(s)), "bytes": int(s.sum()) if len(s) else 0}
    if len(s):
        q = np.quantile(s, [0.25, 0.5, 0.75])
        out.update(size_min=float(s[0]), size_q1=float(q[0]), size_median=float(q[1]),
                   size_q3=float(q[2]), size_max=float(s[-1]))
        pts = np.unique(np.quantile(s, np.linspace(0, 1, min(21, len(s)))))
        out["cdf"] = [[float(x), float(np.searchsorted(s, x, side="right") / len(s))] for x in pts]
    if ops is not None:
        out["ops"] = {op: int(n) for op, n in zip(*np.unique(list(ops), return_counts=True))}
    return out


@dataclass
class Pattern:
    """One workload's checkpoint: the writes of one writer for one checkpoint event."""

    workload: str
    writers: str
    reuse: str
    files: list[dict] = field(default_factory=list)   # [{"name", "writes": rle}]
    summary: dict = field(default_factory=dict)
    derived_from: dict = field(default_factory=dict)
    dist: dict | None = None                          # distribution-only entry

    def plan(self, seed: int = 0, scale: float = 1.0) -> list[tuple[str, list[tuple[str, int]]]]:
        """[(file name template, [(op, size), ...]), ...]: what one writer writes per checkpoint.
        ``scale`` multiplies every size (a larger or smaller model, same shape of writes)."""
        if self.dist is not None:
            files = plan_from_distribution(self.dist | {"reuse": self.reuse}, seed)
        else:
            files = [(f["name"], unrle(f["writes"])) for f in self.files]
        if scale != 1.0:
            files = [(n, [(op, max(1, int(round(s * scale)))) for op, s in w]) for n, w in files]
        return files

    def to_json(self) -> dict:
        if self.dist is not None:
            return {"writers": self.writers, "reuse": self.reuse, **self.dist}
        return {"writers": self.writers, "reuse": self.reuse, "files": self.files,
                "summary": self.summary, "derived_from": self.derived_from}


@dataclass
class PatternFile:
    source: str
    host: str
    workloads: dict = field(default_factory=dict)     # workload -> Pattern (or None: no writes)

    def require(self, workload: str) -> Pattern | None:
        if workload not in self.workloads:
            raise ConfigError(
                f"checkpoint pattern {self.source}: no entry for workload {workload!r} under "
                f"'workloads'; it has: {', '.join(sorted(self.workloads)) or 'none'}")
        return self.workloads[workload]

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "host": self.host,
                "workloads": {w: p.to_json() for w, p in self.workloads.items() if p is not None}}


def _check_entry(w: str, e, where: str) -> Pattern:
    if not isinstance(e, dict):
        raise ConfigError(f"{where}: workloads.{w} must be a mapping (see the schema)")
    for k, allowed in (("writers", WRITERS), ("reuse", REUSE)):
        if e.get(k) not in allowed:
            raise ConfigError(f"{where}: workloads.{w}.{k} = {e.get(k)!r}; allowed: {', '.join(allowed)}")
    if isinstance(e.get("files"), list):
        for i, f in enumerate(e["files"]):
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"] \
                    or Path(f["name"]).is_absolute() or ".." in Path(f["name"]).parts:
                raise ConfigError(f"{where}: workloads.{w}.files[{i}].name must be a relative file "
                                  "name inside the checkpoint folder (no '..')")
            for j, wr in enumerate(f.get("writes") or []):
                ok = (isinstance(wr, list) and len(wr) == 3 and wr[0] in OPS
                      and all(isinstance(x, int) and not isinstance(x, bool) for x in wr[1:])
                      and wr[1] >= 0 and wr[2] >= 1)
                if not ok:
                    raise ConfigError(f"{where}: workloads.{w}.files[{i}].writes[{j}] = {wr!r}; allowed: "
                                      f"[op, size >= 0, repeat >= 1] with op one of {', '.join(OPS)}")
        sizes = [s for f in e["files"] for _, s in unrle(f.get("writes") or [])]
        ops = [op for f in e["files"] for op, _ in unrle(f.get("writes") or [])]
        return Pattern(w, e["writers"], e["reuse"], e["files"], summarize(sizes, len(e["files"]), ops),
                       e.get("derived_from", {}))
    need = ("files", "writes", "bytes", "size_q1", "size_median", "size_q3")
    for k in need:
        v = e.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise ConfigError(f"{where}: workloads.{w}.{k} = {v!r}; an entry needs either 'files' "
                              f"(a list of files with writes) or the numbers {', '.join(need)} (>= 0)")
    if not e["size_q1"] <= e["size_median"] <= e["size_q3"]:
        raise ConfigError(f"{where}: workloads.{w}: size_q1 <= size_median <= size_q3 must hold")
    dist = {k: e[k] for k in e if k not in ("writers", "reuse")}
    return Pattern(w, e["writers"], e["reuse"], dist=dist,
                   summary={k: e[k] for k in need} | {"distribution_only": True})


def parse(obj, source: str) -> PatternFile:
    where = f"checkpoint pattern {source}"
    entries = check_schema_file(obj, where, SCHEMA, "checkpoint-pattern", "{writers, reuse, files}")
    return PatternFile(source, str(obj.get("host", "unknown")),
                       {w: _check_entry(w, e, where) for w, e in entries.items()})


def thesis() -> dict:
    """The thesis's checkpoints at paper scale as a distribution-only pattern file: per
    checkpoint of one writer, the VFS write components of Tables 5.1-5.3 (the real runs)
    divided by the number of checkpoints and writers the thesis describes."""
    from ..settings import reference

    out = {}
    for w, t in reference.HOVON_TABLES_5.items():
        r = t["workload"]
        ev = reference.HOVON_CHECKPOINT_EVENTS[w]
        n = ev["checkpoints"] * ev["writers"]
        out[w] = {"writers": "all" if ev["writers"] > 1 else "rank0", "reuse": ev["reuse"],
                  "files": max(1, round(r["unique_files_written"] / (ev["writers"] if ev["reuse"] == "overwrite" else n))),
                  "writes": max(1, round(r["vfs_writes"] / n)), "bytes": int(r["vfs_write_bytes"] / n),
                  "size_q1": r["vfs_write_size_q1"], "size_median": r["vfs_write_size_median"],
                  "size_q3": r["vfs_write_size_q3"],
                  "note": f"Table 5 row / ({ev['checkpoints']} checkpoints x {ev['writers']} writers)"}
    return {"schema": SCHEMA, "host": "thesis: NVIDIA DGX-1, 8x V100 (Ho-Von 2023, Tables 5.1-5.3)",
            "workloads": out}


def load(source: str | os.PathLike | None = None) -> PatternFile:
    """The patterns named by ``source`` (see the module docstring), validated; raises
    :class:`ConfigError` naming the file and the key."""
    if source == "none":
        return PatternFile("none", "no checkpoint writes", {w: None for w in ("unet3d", "bert", "dlrm", "retinanet")})
    if source == "thesis":
        return parse(thesis(), "thesis")
    if source in (None, "traced"):
        p = traced_file()
        if not p.exists():
            raise ConfigError(f"checkpoint pattern {p}: missing; run `dvc repro emulator_patterns` "
                              f"first, or name a pattern file or one of: {', '.join(BUILTIN)}")
    else:
        p = paths.resolve(source)
    obj = read_json_file(p, "checkpoint pattern", f"a checkpoint-pattern JSON file or one of: {', '.join(BUILTIN)}")
    return parse(obj, str(p))


# ----------------------------------------------------------------------------- distributions

def quantile_sizes(n: int, total: float, q1: float, med: float, q3: float,
                   cdf: list | None = None) -> np.ndarray:
    """``n`` write sizes (sorted) whose quartiles are (q1, median, q3) and whose sum is ``total``.

    Sizes are the piecewise-linear quantile function at u = i / (n - 1), through (0, lo),
    (0.25, q1), (0.5, median), (0.75, q3), (1, hi) (or through the points of ``cdf``); the two
    sizes around each quartile's position are set to the quartile, so the quartiles of the
    result are exact (numpy's linear quantiles); ``lo`` = q1 / 4, and ``hi`` is solved so the
    sizes add up to ``total`` (the largest writes of a checkpoint are few and carry most of its
    bytes). When even ``hi`` = q3 overshoots the total, every size is scaled down together
    (the quartiles then shrink with it).
    """
    if n < 1:
        return np.zeros(0)
    u = np.linspace(0, 1, n) if n > 1 else np.array([0.5])
    if cdf:
        xs = np.array([c[0] for c in cdf], float)
        fs = np.array([c[1] for c in cdf], float)
        sizes = np.interp(u, np.concatenate([[0.0], fs]), np.concatenate([[xs[0]], xs]))
    else:
        knots = [0, .25, .5, .75, 1]
        lo = q1 / 4
        pinned = np.zeros(n, bool)
        pins = {}
        for p, v in ((.25, q1), (.5, med), (.75, q3)):
            x = (n - 1) * p
            for i in {int(np.floor(x)), int(np.ceil(x))}:
                pins[i], pinned[i] = v, True

        def at(hi):
            out = np.interp(u, knots, [lo, q1, med, q3, hi])
            for i, v in pins.items():
                out[i] = v
            return out
        base = at(q3)
        w = np.where((u > 0.75) & ~pinned, (u - 0.75) / 0.25, 0.0)
        hi = q3 + (total - base.sum()) / w.sum() if w.sum() > 0 else q3
        sizes = at(max(hi, q3))
    if total > 0 and sizes.sum() > total * 1.001:
        sizes = sizes * (total / sizes.sum())
    return np.maximum(1, np.round(sizes)).astype(np.int64)


def plan_from_distribution(d: dict, seed: int = 0) -> list[tuple[str, list[tuple[str, int]]]]:
    """Files and writes from a distribution-only entry: sizes from :func:`quantile_sizes` in a
    seeded random order, dealt to ``files`` files in turn (names ``ckpt-{tag}-{i}.bin``)."""
    sizes = quantile_sizes(int(d["writes"]), float(d["bytes"]), float(d["size_q1"]),
                           float(d["size_median"]), float(d["size_q3"]), d.get("cdf"))
    rng = np.random.default_rng([seed, 0xC4])
    sizes = rng.permutation(sizes)
    nf = max(1, int(d["files"]))
    tag = "{tag}-" if d.get("reuse", "overwrite") == "new" else ""
    return [(f"ckpt-{tag}{i}.bin", [("write", int(s)) for s in sizes[i::nf]]) for i in range(nf)]


# ----------------------------------------------------------------------------- replay

class _Buffer:
    """Random bytes reused for every write (storage that compresses or deduplicates sees
    incompressible data), grown to the largest write asked for."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng([seed, 0xB0F])
        self.buf = memoryview(b"")

    def get(self, n: int) -> memoryview:
        if n > len(self.buf):
            self.buf = memoryview(self.rng.bytes(max(n, 1 << 20)))
        return self.buf[:n]


_BUFFERS: dict[int, _Buffer] = {}


def file_name(template: str, tag, rank: int, writers: str) -> str:
    name = template.replace("{tag}", str(tag)).replace("{rank}", str(rank))
    if writers == "all" and "{rank}" not in template:
        name = f"rank{rank}/{name}"   # a single-writer trace replayed by every rank: keep them apart
    return name


def replay(pattern: Pattern | None, folder, rank: int, tag="end", seed: int = 0,
           scale: float = 1.0) -> dict:
    """Write one checkpoint of ``pattern`` into ``folder`` as rank ``rank`` (nothing when this
    rank is not a writer or the pattern is None). Every file is opened with
    ``O_WRONLY|O_CREAT|O_TRUNC`` and written with the traced call and size, in order.

    Returns what was written: ``files``, ``writes``, ``bytes``, ``seconds``, ``names``.
    """
    out = {"files": 0, "writes": 0, "bytes": 0, "seconds": 0.0, "names": []}
    if pattern is None or (pattern.writers == "rank0" and rank != 0):
        return out
    buf = _BUFFERS.setdefault(seed, _Buffer(seed))
    plan = pattern.plan(seed, scale)
    big = max((s for _, w in plan for _, s in w), default=0)
    buf.get(big)                      # drawn before the clock starts
    folder = Path(folder)
    t0 = time.perf_counter()
    for template, writes in plan:
        name = file_name(template, tag, rank, pattern.writers)
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            pos = 0
            for op, size in writes:
                data = buf.get(size)
                if op == "pwrite64":
                    n = os.pwrite(fd, data, pos)
                elif op == "writev":
                    n = os.writev(fd, [data])
                else:
                    n = os.write(fd, data)
                pos += n
                out["writes"] += 1
                out["bytes"] += n
        finally:
            os.close(fd)
        out["files"] += 1
        out["names"].append(name)
    out["seconds"] = time.perf_counter() - t0
    return out


# ----------------------------------------------------------------------------- derivation

def replayer(run: dict, rank: int):
    """The checkpoint writer of an emulated rank (passed to the workload's program by
    :mod:`.rank`): each call ``write(**key)`` replays one checkpoint of the run's pattern
    (``run.json``'s ``emulator.checkpoint_pattern``) for this rank and returns the facts of what
    it wrote (files, writes, bytes, seconds, names), or None when it wrote nothing."""
    em = run["emulator"]
    pattern = load(em["checkpoint_pattern"]).require(run["workload"])

    def write(**key) -> dict | None:
        got = replay(pattern, run["checkpoint_dir"], rank, tag=key.get("tag", "end"), seed=run["seed"],
                     scale=em.get("checkpoint_scale", 1.0))
        return {k: got[k] for k in ("files", "writes", "bytes", "seconds", "names")} if got["writes"] else None
    return write


def checkpoint_events(app_records: list[dict]) -> list[dict]:
    """Checkpoint phases of an application log, merged across ranks: one ``{start, end, tag,
    key}`` per checkpoint (same ``tag``/``step``/``epoch`` on every rank), in time order."""
    from ..workloads.steptimer import phase_intervals

    ev: dict = {}
    for iv in phase_intervals(app_records):
        if iv["phase"] != "checkpoint":
            continue
        key = tuple((k, iv.get(k)) for k in ("tag", "step", "epoch") if iv.get(k) is not None)
        e = ev.setdefault(key, {"start": iv["start"], "end": iv["end"], "key": dict(key),
                                "tag": iv.get("tag")})
        e["start"], e["end"] = min(e["start"], iv["start"]), max(e["end"], iv["end"])
    return sorted(ev.values(), key=lambda e: e["start"])


def _rank_digits(names_by_writer: list[list[str]]) -> list[str]:
    """Writer 0's names, with ``{rank}`` where the writers' names hold their ranks: a run of
    digits that differs between writers and takes exactly the values 0 .. writers-1 (a
    framework's random temporary suffix differs too, but is kept as written)."""
    first = names_by_writer[0]
    n = len(names_by_writer)
    if n < 2:
        return first
    out = []
    for i, name in enumerate(first):
        parts = [re.split(r"(\d+)", w[i]) if i < len(w) else [] for w in names_by_writer]
        a = parts[0]
        template = []
        for j, part in enumerate(a):
            vals = {p[j] for p in parts if len(p) == len(a)}
            ranks = part.isdigit() and len(vals) == n and {int(v) for v in vals} == set(range(n))
            template.append("{rank}" if ranks else part)
        out.append("".join(template))
    return out


def derive(trace, checkpoint, workload: str, ranks: int = 1, app_log=None,
           root=None) -> tuple[Pattern, list[dict]]:
    """A :class:`Pattern` from the VFS write rows of ``trace`` (a :class:`~experiments.trace.
    Trace`, a parquet path or an events DataFrame) to the files under ``checkpoint`` (folders,
    files or globs, as :func:`experiments.trace.vector.vfs_writes` takes them).

    ``app_log``: the run's application-log records (a list, a file, or a run folder with
    ``app-r*.jsonl``): writes are split into checkpoints by its ``checkpoint`` phases (without
    it the whole trace is one checkpoint). ``ranks``: how many ranks the traced run had (with
    one, who writes is the workload's default: :data:`DEFAULT_WRITERS`). ``root``: the
    folder names are made relative to (default: the first ``checkpoint`` folder).

    The pattern is the **last** checkpoint's writes of its first writer (by first write); every
    checkpoint's and writer's summary goes into ``derived_from`` so they can be compared.
    Returns (pattern, per-checkpoint-and-writer summaries).
    """
    import pandas as pd

    from ..trace import schema, vector

    if isinstance(trace, (str, os.PathLike)):
        trace = schema.load(trace)
    events = trace.events if hasattr(trace, "events") else trace
    specs = [checkpoint] if isinstance(checkpoint, (str, os.PathLike)) else list(checkpoint)
    w = vector.vfs_writes(events, [str(s) for s in specs])
    if not len(w):
        raise ConfigError(f"checkpoint pattern: the trace has no VFS write to {', '.join(map(str, specs))}; "
                          "check the checkpoint folder (the real run's train.checkpoint_dir/<workload>)")
    root = Path(os.path.abspath(root or specs[0]))
    records = _app_records(app_log)
    cps = checkpoint_events(records) if records else []
    ts = w["timestamp"].astype("int64") / 1e9
    if cps:
        idx = np.full(len(w), -1)
        for i, e in enumerate(cps):
            idx[((ts >= e["start"] - 0.05) & (ts <= e["end"] + 0.05)).to_numpy()] = i
        outside = int((idx < 0).sum())
        w = w.assign(event=idx)[idx >= 0]
    else:
        outside = 0
        w = w.assign(event=0)
        cps = [{"tag": None, "key": {}}]
    rows = []
    per_event = []
    for i, g in w.groupby("event", sort=True):
        e = cps[int(i)]
        pids = list(pd.unique(g.sort_values("timestamp")["pid"]))
        writers, raw = [], []
        for pid in pids:
            gp = g[g["pid"] == pid].sort_values("timestamp", kind="stable")
            names = list(pd.unique(gp["path"]))
            files = []
            for name in names:
                rel = os.path.relpath(name, root)
                if e.get("tag") is not None:
                    rel = rel.replace(str(e["tag"]), "{tag}")
                gf = gp[gp["path"] == name]
                files.append({"name": rel, "writes": rle(zip(gf["op"], gf["size"]))})
            writers.append(files)
            raw.append(sorted(os.path.relpath(n, root) for n in names))
            s = summarize(gp["size"], len(names), gp["op"])
            rows.append({"checkpoint": int(i), **e["key"], "writer": len(writers) - 1, "pid": int(pid),
                         **{k: v for k, v in s.items() if k not in ("cdf", "ops")}})
        per_event.append({"writers": writers, "pids": pids, "raw": raw, "names": [
            [f["name"] for f in files] for files in writers]})
    last = per_event[-1]
    names = _rank_digits(last["names"])
    files = [{"name": n, "writes": f["writes"]} for n, f in zip(names, last["writers"][0])]
    npids = len(last["pids"])
    if ranks > 1:
        who = "all" if npids > 1 else "rank0"
    else:
        who = DEFAULT_WRITERS.get(workload, "rank0")
    if who == "all" and npids == 1:
        # one traced writer of a workload where every rank writes: a folder named like
        # ``worker-0`` is taken to be the rank's own
        for f in files:
            parts = Path(f["name"]).parts
            f["name"] = "/".join([re.sub(r"^(.*\D)0$", r"\1{rank}", q) for q in parts[:-1]] + [parts[-1]])
    if len(per_event) > 1:
        # the same file names as the previous checkpoint (before {tag} was put in): overwritten
        reuse = "overwrite" if set(per_event[-1]["raw"][0]) & set(per_event[-2]["raw"][0]) else "new"
    else:
        reuse = "new" if any("{tag}" in f["name"] for f in files) else "overwrite"
    sizes = [s for f in files for _, s in unrle(f["writes"])]
    ops = [op for f in files for op, _ in unrle(f["writes"])]
    meta = trace.meta if hasattr(trace, "meta") else {}
    p = Pattern(workload, who, reuse, files, summarize(sizes, len(files), ops),
                {"backend": meta.get("backend"), "command": meta.get("command"),
                 "checkpoint_filter": [str(s) for s in specs], "root": str(root),
                 "traced_ranks": ranks, "checkpoints": len(per_event), "writers_seen": npids,
                 "writes_outside_checkpoint_phases": outside, "per_checkpoint": rows})
    return p, rows


def _app_records(app_log) -> list[dict]:
    from ..workloads.steptimer import read_app_log

    if app_log is None:
        return []
    if isinstance(app_log, list):
        return app_log
    p = Path(app_log)
    files = sorted(p.glob("app-r*.jsonl")) or sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    return [r for f in files for r in read_app_log(f)]


def write_file(patterns: dict, path, host: str | None = None, merge: bool = True) -> Path:
    """Write ``{workload: Pattern}`` to ``path`` (atomically); with ``merge``, other workloads
    already in the file are kept."""
    from ..host.envinfo import host_label
    from ..output.results import write_json

    path = Path(path)
    old = {}
    if merge and path.exists():
        old = json.loads(path.read_text()).get("workloads", {})
    obj = {"schema": SCHEMA, "host": host or host_label(),
           "workloads": {**old, **{w: p.to_json() for w, p in patterns.items()}}}
    parse(obj, str(path))  # what we write must load
    return write_json(path, obj)
