"""Command line of the tracing toolkit: ``python -m experiments.trace --help``."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..settings.config import ArgumentParser, ConfigError, check_args, matching
from .schema import TraceError

EXIT_BAD_INPUT = 2

# ----------------------------------------------------------------------------- argument models
# Every argument of every subcommand, validated as params.yaml's sections are, before any work
# (experiments.settings.config.check_args: one line naming the argument, the value, what is allowed).

_Text = Annotated[str, Field(min_length=1)]
_Device = matching(r"[\w\-]+", "a block device name, e.g. vda or nvme0n1")


def _existing(v):
    if v is not None and not Path(v).exists():
        raise ValueError("no such file or folder")
    return v


class _Filters(BaseModel):
    model_config = ConfigDict(extra="ignore")
    data: list[_Text] | None = None
    checkpoint: list[_Text] | None = None
    device: list[_Device] | None = None
    block_file: list[_Text] | None = None

    @field_validator("block_file")
    @classmethod
    def _bf(cls, v):
        for f in v or []:
            if not Path(f).is_file():
                raise ValueError(f"{f}: no such file")
        return v


def _trace_file(v):
    if not Path(v).is_file():
        raise ValueError("no such trace file; allowed: a trace (parquet) `trace run` wrote")
    return v


class _OneTrace(_Filters):
    trace: _Text

    _t = field_validator("trace")(_trace_file)


class RunArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    output: _Text
    backend: Literal["auto", "bpftrace", "strace", "dftracer", "proc"] = "auto"
    watch: list[_Text] = []
    block_scope: Literal["device", "tree"] = "device"
    mode: Literal["timeline", "vector"] = "timeline"
    files: Literal["auto", "kernel", "descriptors"] = "auto"
    interval: float = Field(1.0, gt=0, le=3600)
    phase_log: _Text | None = None
    cmd: list[str] = Field(min_length=1)

    @field_validator("watch")
    @classmethod
    def _w(cls, v):
        for f in v:
            if not Path(f).exists():
                raise ValueError(f"{f}: no such file or folder")
        return v

    @field_validator("cmd", mode="before")
    @classmethod
    def _cmd(cls, v):
        v = [c for c in (v or []) if c != "--"]
        if not v:
            raise ValueError("allowed: -- CMD [ARGS...] (the command to trace)")
        return v


class VectorArgs(_OneTrace):
    pass


class CompareArgs(_Filters):
    a: _Text
    b: _Text
    names: list[_Text] | None = None
    csv: _Text | None = None

    @field_validator("a", "b")
    @classmethod
    def _ab(cls, v):
        if v.lstrip().startswith("{") or Path(v).is_file():
            return v
        raise ValueError("no such file; allowed: a trace (parquet), a vector (.json) or an inline JSON object")


class TimelineArgs(_OneTrace):
    output: _Text
    phases: _Text | None = None
    bin: float = Field(1.0, gt=0, le=86400)

    _p = field_validator("phases")(_existing)


class ChromeArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    trace: _Text
    output: _Text
    phases: _Text | None = None

    _t = field_validator("trace")(_trace_file)
    _p = field_validator("phases")(_existing)


class StatusArgs(BaseModel):
    pass


MODELS = {"status": StatusArgs, "run": RunArgs, "vector": VectorArgs, "compare": CompareArgs,
          "timeline": TimelineArgs, "chrome": ChromeArgs}


def _keys_help() -> str:
    from .vector import COMPONENTS
    lines = ["components of a JSON vector (Table 4.2; weight 2 = read, 1 = write; sizes in bytes,",
             "percentages 0-100; a missing key or null = not measured, left out):"]
    lines += [f"  {k:<26} w={w}  {label}" for k, label, w in COMPONENTS]
    return "\n".join(lines)


def _vector_of(arg: str, data, checkpoint, devices, block_files=None) -> tuple[dict, str]:
    """A vector from a trace file, a JSON file, or an inline JSON object."""
    from . import schema, vector
    text = None
    p = Path(arg)
    if arg.lstrip().startswith("{"):
        text, name = arg, "inline JSON"
    elif p.suffix.lower() == ".json":
        if not p.is_file():
            raise TraceError(f"vector file {p} does not exist")
        text, name = p.read_text(), str(p)
    if text is not None:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise TraceError(f"{name}: not valid JSON ({e})") from None
        return vector.from_mapping(obj, name), name
    tr = schema.load(p)
    return vector.characteristic_vector(tr, data, checkpoint, devices, block_files), str(p)


def _check_out(path: str) -> Path:
    out = Path(path)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise TraceError(f"output {out}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise TraceError(f"output {out}: folder {parent} is not writable")
    return out


def cmd_status(a) -> int:
    from .tracer import backend_status
    for name, s in backend_status().items():
        state = "ok" if s["ok"] else f"unavailable: {s['why']}"
        extra = " (block layer too)" if s.get("block") else ""
        print(f"{name:<9} {state}{extra}")
    from . import dftracer_backend
    ok, why = dftracer_backend.available("current")   # the row above is DLIO's release
    print(f"{'dftracer (current)':<9} {'ok' if ok else f'unavailable: {why}'} "
          f"({dftracer_backend.version('current') if ok else 'dftracer'}; --dftracer-release current)")
    return 0


def cmd_run(a) -> int:
    from . import phases, tracer
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    cmd = tracer.check_command(cmd)
    out = _check_out(a.output)
    env = {}
    if a.phase_log:
        pl = _check_out(a.phase_log)
        env[phases.ENV] = str(pl.resolve())
    t = tracer.Tracer(backend=a.backend, watch=a.watch, block_scope=a.block_scope,
                      interval_s=a.interval, sample=not a.no_sample, block=not a.no_block,
                      mode=a.mode, files=a.files, dftracer_release=a.dftracer_release, probes=a.probes)
    tr, rc = t.run(cmd, env=env)
    if a.phase_log:
        tr.meta["phase_log"] = env[phases.ENV]
    tr.save(out)
    calls = f", {int(tr.counts['calls'].sum())} calls counted in the kernel" if tr.counts is not None else ""
    hooks = f", {tr.meta['probes']} probes" if tr.meta.get("probes") and tr.mode == "vector" else ""
    print(f"trace: {len(tr.events)} events{calls} ({tr.backend}, {tr.mode} mode{hooks}) -> {out}; "
          f"command exit status {rc}", file=sys.stderr)
    return rc


def cmd_vector(a) -> int:
    from . import schema, vector
    tr = schema.load(a.trace)
    v = vector.describe(tr, a.data, a.checkpoint, a.device, a.block_file) if a.extra else \
        vector.characteristic_vector(tr, a.data, a.checkpoint, a.device, a.block_file)
    print(json.dumps({k: (None if isinstance(x, float) and math.isnan(x) else x) for k, x in v.items()}, indent=2))
    for k, why in vector.not_measured(tr, a.data, a.checkpoint, a.device, a.block_file).items():
        print(f"not measured: {k}: {why}", file=sys.stderr)
    return 0


def cmd_compare(a) -> int:
    from . import similarity
    u, na = _vector_of(a.a, a.data, a.checkpoint, a.device, a.block_file)
    v, nb = _vector_of(a.b, a.data, a.checkpoint, a.device, a.block_file)
    names = tuple(a.names) if a.names else ("A", "B")
    if names[0] == names[1]:
        raise TraceError(f"--names: the two names must differ; got {names[0]!r} twice")
    table = similarity.component_table(u, v, names)
    sim = similarity.weighted_cosine(u, v)
    if a.csv:
        out = _check_out(a.csv)
        from ..output.results import atomic_write
        atomic_write(out, lambda p: table.to_csv(p, index=False))
    print(f"A = {na}\nB = {nb}")
    print(similarity.format_table(table, names))
    print("similarity: n/a" if math.isnan(sim) else f"similarity: {sim:.4f}")
    return 0


def cmd_timeline(a) -> int:
    from . import phases, schema, timeline
    tr = schema.load(a.trace)
    ph = phases.read(a.phases) if a.phases else _phases_of(tr)
    out = _check_out(a.output)
    from ..figures import style
    style.apply()
    fig = timeline.plot(tr, ph, a.bin, a.data, a.checkpoint)
    from ..output.results import atomic_write
    atomic_write(out, lambda p: fig.savefig(p, format=out.suffix.lstrip(".") or "png", dpi=120,
                                            bbox_inches="tight"))
    print(f"timeline -> {out}", file=sys.stderr)
    return 0


def _phases_of(tr):
    from . import phases
    p = tr.meta.get("phase_log")
    return phases.read(p) if p and Path(p).is_file() else None


def cmd_chrome(a) -> int:
    from . import chrome, phases, schema
    tr = schema.load(a.trace)
    ph = phases.read(a.phases) if a.phases else _phases_of(tr)
    out = _check_out(a.output)
    chrome.export(tr, out, ph)
    print(f"chrome trace -> {out} (open in https://ui.perfetto.dev)", file=sys.stderr)
    return 0


def parser() -> argparse.ArgumentParser:
    top = ArgumentParser(
        prog="python -m experiments.trace",
        description="Trace VFS and block I/O of a command and its children, build Table 4.2 "
                    "vectors, compare them (Eq 4.1/4.2), draw Fig 5.1-style timelines.",
        epilog="Bad input (a trace of the wrong schema, an unknown component, a missing command) "
               "exits with status 2 and writes nothing.\n\n" + _keys_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)

    def filters(p):
        p.add_argument("--data", action="append", metavar="DIR|FILE|GLOB",
                       help="count reads of these files only (repeatable; default: every regular file)")
        p.add_argument("--checkpoint", action="append", metavar="DIR|FILE|GLOB",
                       help="count writes to these files only (repeatable; default: every regular file)")
        p.add_argument("--device", action="append", metavar="NAME",
                       help="count block requests on these devices only (e.g. vda)")
        p.add_argument("--block-file", action="append", metavar="FILE",
                       help="count block requests touching these files' disk extents only")

    p = sub.add_parser("status", help="which back ends can run here, and why not")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("run", help="trace a command and all its children",
                       description="python -m experiments.trace run -o trace.parquet [options] -- CMD [ARGS...]")
    p.add_argument("-o", "--output", required=True, help="trace file to write (parquet)")
    p.add_argument("--backend", default="auto", choices=["auto", "bpftrace", "strace", "dftracer", "proc"])
    p.add_argument("--watch", action="append", default=[], metavar="PATH",
                   help="file/dir the command uses: its device is traced at the block level")
    p.add_argument("--block-scope", default="device", choices=["device", "tree"],
                   help="block requests: every one on the device (thesis) or only the tree's")
    p.add_argument("--no-block", action="store_true", help="do not trace the block layer")
    p.add_argument("--mode", default="timeline", choices=["timeline", "vector"],
                   help="timeline: one row per call; vector: calls counted in the kernel (Table 4.2 "
                        "only, far cheaper; bpftrace)")
    p.add_argument("--dftracer-release", default="dlio", choices=["dlio", "current"],
                   help="--backend dftracer: the pydftracer 1.0.2 DLIO pins (.venv-dlio) or the "
                        "current dftracer release (.venv-dftracer)")
    p.add_argument("--probes", default="auto", choices=["auto", "kfunc", "tracepoint"],
                   help="vector mode's hooks: kfunc (fentry/fexit of the system-call functions) where "
                        "the kernel allows, else the system-call tracepoints (default auto; recorded "
                        "in the trace's meta: probes, why_not_kfunc)")
    p.add_argument("--files", default="auto", choices=["auto", "kernel", "descriptors"],
                   help="bpftrace: name files from the kernel's struct file (auto where BTF allows) "
                        "or from descriptor numbers")
    p.add_argument("--interval", type=float, default=1.0, help="sampler period in s (default 1)")
    p.add_argument("--no-sample", action="store_true", help="do not run the /proc sampler")
    p.add_argument("--phase-log", metavar="FILE",
                   help="exported to the command as DLIO_PHASE_LOG (see experiments/trace/phases.py)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("vector", help="print a trace's Table 4.2 vector as JSON")
    p.add_argument("trace")
    p.add_argument("--extra", action="store_true",
                   help="add VFS sequentiality and Listing A.1 counts (not accepted by compare)")
    filters(p)
    p.set_defaults(func=cmd_vector)

    p = sub.add_parser("compare", help="weighted cosine similarity of two traces or vectors",
                       description="A and B: a trace file (parquet), a JSON file (.json) or an inline "
                                   "JSON object of components. Prints the per-component table and, "
                                   "on the last line, 'similarity: 0.NNNN'.",
                       epilog=_keys_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--names", nargs=2, metavar=("NAME_A", "NAME_B"), help="column names")
    p.add_argument("--csv", help="also write the table to this CSV file")
    filters(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("timeline", help="draw a Fig 5.1-style timeline")
    p.add_argument("trace")
    p.add_argument("-o", "--output", required=True, help="figure file (.png, .svg, .pdf)")
    p.add_argument("--phases", help="phase log (default: the one recorded with the trace)")
    p.add_argument("--bin", type=float, default=1.0, help="bin width in s (default 1)")
    filters(p)
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("chrome", help="export to Chrome trace / Perfetto JSON")
    p.add_argument("trace")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--phases")
    p.set_defaults(func=cmd_chrome)
    return top


def main(argv=None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    try:
        check_args(MODELS[a.command], a, ap)
        return a.func(a)
    except (TraceError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
