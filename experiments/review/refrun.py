"""The reference run shipped with the artifact: ``python -m experiments.review.refrun`` (``make figures``,
``make reference``, ``make compare-claims``).

``reference/run/`` holds the default profile's measured outputs of one whole ``make repro`` on the
reference box: per measuring and data stage that a report or the claims table reads, its
``results/<stage>/`` folder (raw rows, ``env.json`` with the host and commit, ``variance.csv``,
``rounds.json``, what the timelines draw of the traces) less the files no report stage reads
(:func:`unread`: the executed notebook, the kernel's stderr log and what the registry declares,
such as ``traced_comparison``'s full traces), and the claims table that run wrote
(``claims/claims.csv``, what ``make compare-claims`` sets a reviewer's against). No data set, no
tier copy. DVC tracks it (``reference/run.dvc``) and its files are pushed to the DVC remote
``reference``, a folder of the repository (``reference/store``, committed to git): ``dvc pull
reference/run.dvc`` restores it on a fresh clone. ``reference/manifest.json`` (git) says which commit, host, profile and date made it
and its size.

- ``figures`` (``make figures``): pulls it, copies each stage's folder into ``results/``, runs only
  the report stages and ``claims`` (``dvc repro --single-item --force``, one stage each: DVC runs
  nothing upstream of them; one per core side by side, each after the reports it reads), then checks that every restored file is still the reference's own
  bytes, which it could not be had a measuring stage run, and says so.
- ``record --source CHECKOUT`` (``make reference``): re-records ``reference/run/`` from a checkout
  where a whole ``make repro`` ran (only read), ``dvc add`` and ``dvc push`` to the in-repository
  remote, old objects collected. Run it on the reference box after a change to what a measuring
  stage writes (a file, a column, a trace format), with the forecast's table from the same run.
- ``clear`` (``make repro``, ``make paper``): the measuring stages' folders ``make figures``
  restored are removed first, so that every measuring stage measures on this box; ``guard``
  (``make decide``, ``make replicate``) stops while ``results/`` holds them.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from fnmatch import fnmatch
from pathlib import Path

from ..settings import paths
from ..output import provenance
from ..stages import BY_NAME

RUN = "reference/run"                 # the tracked folder (git-ignored; reference/run.dvc tracks it)
MANIFEST = "reference/manifest.json"  # which run it is (in git, readable without a pull)
REMOTE = "reference"                  # the DVC remote (.dvc/config) ...
STORE = "reference/store"             # ... a folder of this repository, committed to git
MARKER = ".reference.json"            # in results/: the stages make figures restored there
SKIP = ("kernel-stderr.log",)         # not read by any report: the kernel's full stderr
CLAIMS_FILES = ("claims.csv", "claims.md")   # the reference's own claims table, for compare-claims



def short(commit: str | list[str]) -> str:
    """The manifest's commit (a list when the stages were measured at more than one) as short ids."""
    return " and ".join(c[:7] for c in ([commit] if isinstance(commit, str) else commit))


def reports(st: dict[str, dict] | None = None) -> list[str]:
    """The stages ``make figures`` runs, in dvc.yaml's order: every report stage (it reads a
    measuring stage's results and writes claims; :func:`experiments.review.replicate.plan`), then
    ``claims``."""
    from .replicate import plan

    st = st if st is not None else provenance.stages()
    return plan([], {"stages": st})[1] + ["claims"]


def restored(st: dict[str, dict] | None = None) -> list[str]:
    """The stages whose ``results/`` folder the reference run ships (dvc.yaml's order): every stage
    upstream of a report or of ``claims`` that is neither (the measuring and data stages, and
    the rules they read)."""
    st = st if st is not None else provenance.stages()
    rep = reports(st)
    up = {u for r in rep for u in provenance.upstream(r, st)}
    return [s for s in st if s in up and s not in rep]


def unread(stage: str) -> tuple[str, ...]:
    """Globs of the file names in ``results/<stage>/`` that no report stage reads, which the
    reference run leaves out: :data:`SKIP`, the executed notebook and the registry's ``unread``
    for the stage (:class:`experiments.stages.Stage`: a measuring stage's full traces, whose
    timelines its report draws from smaller files the stage writes beside them)."""
    return (*SKIP, f"{stage}.ipynb", *(BY_NAME[stage].unread if stage in BY_NAME else ()))


def _shipped(stage: str, f: Path) -> bool:
    return f.is_file() and not any(fnmatch(f.name, p) for p in unread(stage))


def _left_out(stages: list[str]) -> str:
    """The manifest's words on what the reference run does not hold."""
    own = [f"{s}/{p}" for s in stages if s in BY_NAME for p in BY_NAME[s].unread]
    return ("data sets, tier copies, each stage's executed notebook and kernel-stderr.log"
            + (f", and the files no report reads ({', '.join(own)}; stages.py unread)" if own else ""))


def _size(folder: Path) -> tuple[int, int]:
    files = [f for f in folder.rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def _dvc(*args: str, quiet: bool = False) -> None:
    subprocess.run(["dvc", *args], cwd=paths.root(), check=True,
                   stdout=subprocess.DEVNULL if quiet else None)


# ----------------------------------------------------------------------------- record (make reference)

def record(source: Path, dest: Path | None = None, push: bool = True, derived: str | None = None) -> dict:
    """Copy the shipped part of ``source``'s results (a checkout where a whole ``make repro``
    ran; only read) into ``dest`` (default :data:`RUN`), write :data:`MANIFEST`, and (``push``)
    track it with DVC and push it to the in-repository remote. Stops before copying anything when
    a stage's folder or its ``env.json`` is missing there. ``derived``: the manifest's words on
    files written into ``source`` after the run from that run's own files (which, how)."""
    from ..pipeline.forecast import _profile

    source = Path(source).resolve()
    res = source / "results"
    st = provenance.stages()
    stages = restored(st)
    missing = [s for s in stages if not (res / s / "env.json").is_file()]
    if not (res / "claims" / "claims.csv").is_file():
        missing.append("claims")
    if missing:
        raise SystemExit(f"refrun record --source {source}: no results/<stage>/env.json (or claims.csv) for "
                         f"{', '.join(missing)}; allowed: a checkout where a whole make repro finished")
    dest = Path(dest) if dest else paths.root() / RUN
    if dest.resolve() == res.resolve() or res.resolve() in dest.resolve().parents:
        raise SystemExit(f"refrun record: destination {dest} lies in the source's results/; allowed: reference/run")
    shutil.rmtree(dest, ignore_errors=True)
    for s in stages:
        for f in sorted((res / s).rglob("*")):
            if _shipped(s, f):
                to = dest / s / f.relative_to(res / s)
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, to)
    for name in CLAIMS_FILES:
        (dest / "claims").mkdir(parents=True, exist_ok=True)
        shutil.copy2(res / "claims" / name, dest / "claims" / name)
    envs = {s: json.loads((res / s / "env.json").read_text()) for s in stages}
    measured = [s for s in stages if s in provenance.MEASURING]
    first = min((envs[s].get("run") or {}).get("started_at", "~") for s in measured)
    last = max((envs[s].get("run") or {}).get("started_at", "") for s in measured)
    hosts = sorted({(envs[s].get("run") or {}).get("host") or envs[s].get("host", "") for s in measured})
    commits = sorted({str((envs[s].get("git") or {}).get("commit")) for s in measured})
    dirty = any((envs[s].get("git") or {}).get("dirty") for s in measured)
    n, nbytes = _size(dest)
    manifest = {"commit": commits[0] if len(commits) == 1 else commits,
                "dirty": dirty, "host": hosts[0] if len(hosts) == 1 else hosts,
                "profile": _profile(source / "params.yaml"),
                "started_at": first, "last_stage_started_at": last,
                "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "stages": stages, "files": n, "bytes": nbytes,
                "left_out": _left_out(stages)}
    if derived:
        manifest["derived"] = derived
    if len(commits) > 1 or len(hosts) > 1:
        print(f"refrun record: WARNING the stages were measured at {len(commits)} commit(s) on {len(hosts)} host(s): "
              f"{commits} {hosts}; a reference is one run of one commit", file=sys.stderr)
    from ..output.results import write_json

    write_json(paths.root() / MANIFEST, manifest)
    if push:
        _dvc("add", "-q", RUN)
        _dvc("push", "-q", "-r", REMOTE, f"{RUN}.dvc")
        # the objects of an earlier reference, no longer used by the workspace, out of the store
        _dvc("gc", "-q", "--workspace", "--cloud", "--remote", REMOTE, "--force")
        manifest["store_bytes"] = _size(paths.root() / STORE)[1]
        write_json(paths.root() / MANIFEST, manifest)
        update_readme(manifest)
    print(f"refrun record: {len(stages)} stages of {source} ({manifest['host']}, commit {short(manifest['commit'])}, "
          f"profile {manifest['profile']}) into {RUN}: {n} files, {nbytes / 1e6:.1f} MB"
          + ("; pushed to reference/store, its size in README.md. Commit reference/ (git add reference README.md) "
             "with env/reference-times.csv and env/reference-params.yaml" if push else ""))
    return manifest


README_MARKS = ("<!-- reference:size -->", "<!-- /reference:size -->")


def size_words(m: dict, git_bytes: int) -> str:
    """README's sentence on the reference run's size (:data:`README_MARKS`), from its manifest and
    the bytes of the repository's git objects when it was recorded."""
    host = m["host"] if isinstance(m["host"], str) else ", ".join(m["host"])
    total = git_bytes + m["store_bytes"]
    return (f"{m['bytes'] / 1e6:.1f} MB in {m['files']} files (the store: {m['store_bytes'] / 1e6:.1f} MB), "
            f"measured on {host} at commit {short(m['commit'])} ({m['profile']} profile, {m['started_at'][:10]}); "
            f"the repository with it about {total / 1e6:.0f} MB (git's objects {git_bytes / 1e6:.0f} MB when it was "
            "recorded, and the store).")


def _git_bytes() -> int:
    """The bytes of the repository's git objects (``git count-objects -v``: loose and packed)."""
    out = subprocess.run(["git", "count-objects", "-v"], cwd=paths.root(), capture_output=True, text=True).stdout
    kib = {k: int(v) for k, v in (line.split(": ") for line in out.splitlines() if ": " in line)
           if k in ("size", "size-pack")}
    return 1024 * sum(kib.values())


def update_readme(m: dict) -> None:
    from ..pipeline.ae_table import _replace_block
    from ..output.results import atomic_write

    f = paths.root() / "README.md"
    text = _replace_block(f.read_text(), README_MARKS, size_words(m, _git_bytes()))
    atomic_write(f, lambda p: p.write_text(text))


# ----------------------------------------------------------------------------- make figures

def manifest() -> dict:
    f = paths.root() / MANIFEST
    if not f.is_file():
        raise SystemExit(f"refrun: {MANIFEST} is missing: this checkout ships no reference run; record one on "
                         "the reference box (make reference SOURCE=<checkout of a whole make repro>)")
    return json.loads(f.read_text())


def pull() -> Path:
    """``reference/run/`` as the manifest says, pulled from the in-repository remote when absent
    or incomplete (``dvc pull``: a fresh clone has only ``reference/run.dvc``)."""
    m = manifest()
    run = paths.root() / RUN
    if not run.is_dir() or _size(run) != (m["files"], m["bytes"]):
        _dvc("pull", "-q", "-r", REMOTE, f"{RUN}.dvc")
    if _size(run) != (m["files"], m["bytes"]):
        raise SystemExit(f"refrun: {RUN} holds {_size(run)} (files, bytes) after dvc pull, the manifest "
                         f"{m['files'], m['bytes']}: the store and the manifest disagree (re-record with make reference)")
    return run


def restore(into: Path | None = None) -> list[str]:
    """Copy each stage's folder of the reference run into ``results/`` (replacing what is there)
    and mark them (:data:`MARKER`); returns the stages."""
    into = Path(into) if into else paths.results_dir()
    stages = manifest()["stages"]
    ours = [s for s in stages if (into / s / "env.json").exists()]
    if ours and not (into / MARKER).is_file():   # measured here (make repro): never overwritten
        raise SystemExit(f"make figures: results/ holds this box's own measurements ({', '.join(ours[:4])}"
                         f"{' ...' if len(ours) > 4 else ''}), which restoring the reference run would replace; "
                         "allowed: make compare-claims to set them against the reference's, or make clean first")
    run = pull()
    for s in stages:
        shutil.rmtree(into / s, ignore_errors=True)
        shutil.copytree(run / s, into / s)
    (into / MARKER).write_text(json.dumps({"stages": stages, "reference": manifest()}, indent=1) + "\n")
    return stages


def unchanged(stages: list[str], results: Path | None = None) -> list[str]:
    """The stages among ``stages`` whose ``results/`` folder is no longer the reference run's:
    a file missing, added or with other bytes. Empty: nothing rewrote them."""
    run, results = paths.root() / RUN, Path(results) if results else paths.results_dir()
    moved = []
    for s in stages:
        a = sorted(f.relative_to(run / s) for f in (run / s).rglob("*") if f.is_file())
        b = sorted(f.relative_to(results / s) for f in (results / s).rglob("*") if f.is_file()) \
            if (results / s).is_dir() else []
        if a != b or not all(filecmp.cmp(run / s / f, results / s / f, shallow=False) for f in a):
            moved.append(s)
    return moved


def jobs() -> int:
    """Report stages run side by side: one per core, at most :data:`MAX_JOBS` (each is one kernel,
    mostly one core busy)."""
    import os

    return max(1, min(MAX_JOBS, os.cpu_count() or 1))


MAX_JOBS = 4


def needs(rep: list[str], st: dict[str, dict] | None = None) -> dict[str, set[str]]:
    """Per report stage, the report stages it must follow: those whose results it reads, directly
    or through another report (not through a restored stage: that one does not run)."""
    st = st if st is not None else provenance.stages()
    cut = {n: ({**v, "deps": []} if n not in rep else v) for n, v in st.items()}
    return {s: set(provenance.upstream(s, cut)) & set(rep) - {s} for s in rep}


def run_reports(rep: list[str], n: int | None = None) -> int:
    """``dvc --wait-for-lock repro --single-item --force`` of each stage of ``rep``, :func:`jobs`
    at a time (DVC holds its lock only to check and record a stage, not while the stage's command
    runs), each once the stages it reads are done (:func:`needs`), those others wait for first and
    then the longest (the reference table's seconds); each stage's log printed whole when it ends.
    Returns the first non-zero exit status, after the stages already running have ended."""
    import tempfile

    n = n or jobs()
    need = needs(rep)
    try:
        from ..pipeline.forecast import read_reference

        wall = {k: r["wall_s"] for k, r in read_reference().rows.items()}
    except SystemExit:   # no reference table: dvc.yaml's order
        wall = {}
    waited = {s: sum(s in v for v in need.values()) for s in rep}
    done, running, rc = set(), {}, 0
    while len(done) < len(rep) and not (rc and not running):
        for s, (p, log) in list(running.items()):
            if p.poll() is not None:
                log.seek(0)
                print(log.read(), end="", flush=True)
                log.close()
                rc = rc or p.returncode
                done.add(s)
                del running[s]
        ready = sorted((s for s in rep if s not in done and s not in running and need[s] <= done),
                       key=lambda s: (-waited[s], -wall.get(s, 0.0)))
        while ready and len(running) < n and not rc:
            s = ready.pop(0)
            print(f"dvc repro --single-item --force {s}", flush=True)
            log = tempfile.TemporaryFile("w+")
            running[s] = (subprocess.Popen(["dvc", "--wait-for-lock", "repro", "--single-item", "--force", s],
                                           cwd=paths.root(), stdout=log, stderr=subprocess.STDOUT, text=True), log)
        time.sleep(0.2)
    return rc


def figures() -> int:
    """``make figures``: restore, the report stages and ``claims`` only, the check, the summary."""
    t0 = time.monotonic()
    m = manifest()
    stages = restore()
    rep = reports()
    print(f"make figures: the reference run ({m['host']}, commit {short(m['commit'])}, profile {m['profile']}, "
          f"{m['started_at'][:10]}) restored into results/ for {len(stages)} stages; now only the {len(rep)} report "
          f"stages and claims: {' '.join(rep)}", flush=True)
    rc = run_reports(rep)
    if rc:
        return rc
    moved = unchanged(stages)
    if moved:
        print(f"make figures: FAILED: the results of {', '.join(moved)} are no longer the reference run's: "
              "something rewrote them", file=sys.stderr)
        return 1
    figs = sorted(paths.results_dir().glob("*/*.png"))
    who = provenance.words(provenance.measured_by("claims"))
    print(f"make figures: no measuring stage ran: the results of all {len(stages)} measuring and data stages are "
          f"the reference run's own files, byte for byte ({', '.join(stages)}). {len(rep)} stages ran, "
          f"{jobs()} at a time, in "
          f"{time.monotonic() - t0:.0f} s: {len(figs)} figures (results/<stage>/*.png, each stamped with the host "
          f"that measured it: {who}) and results/claims/claims.md. Next: make repro measures on this box "
          "(it first removes these restored results), then make compare-claims sets its verdicts against the "
          "reference's.")
    return 0


# ----------------------------------------------------------------------------- make repro, decide, replicate

def clear() -> None:
    """Before ``make repro``: remove the measuring stages' folders ``make figures`` restored, so that
    DVC finds them missing and every one measures here (their reports re-run after them)."""
    mark = paths.results_dir() / MARKER
    if not mark.is_file():
        return
    stages = json.loads(mark.read_text())["stages"]
    for s in stages:
        shutil.rmtree(paths.results_dir(s), ignore_errors=True)
    mark.unlink()
    print(f"make repro: removed the reference run's results that make figures restored ({len(stages)} stages): "
          "every measuring stage measures on this box")


def guard(what: str) -> None:
    """Stop ``what`` (decide, replicate) while ``results/`` holds the restored reference run: it
    would add this box's runs to the reference box's rows."""
    if (paths.results_dir() / MARKER).is_file():
        raise SystemExit(f"make {what}: results/ holds the reference run restored by make figures (measured on "
                         f"another box); allowed: after make repro has measured here")


def reference_claims() -> Path:
    """The reference run's claims table (pulled when absent), for ``make compare-claims``."""
    return pull() / "claims" / "claims.csv"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.review.refrun", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("figures", help="make figures: restore the reference run, run only the report stages and claims")
    r = sub.add_parser("record", help="make reference: re-record reference/run from a checkout's whole make repro")
    r.add_argument("--source", type=Path, required=True, metavar="CHECKOUT")
    r.add_argument("--no-push", action="store_true", help="copy and write the manifest only (no dvc add/push)")
    r.add_argument("--derived", metavar="WORDS", help="files written into the checkout after its run from that "
                   "run's own files: which and how (the manifest's 'derived')")
    sub.add_parser("clear", help="make repro: remove the restored reference results first")
    g = sub.add_parser("guard", help="stop while results/ holds the restored reference run")
    g.add_argument("what")
    sub.add_parser("claims", help="print the path of the reference's claims.csv (pulled when absent)")
    sub.add_parser("stages", help="print the report stages make figures runs and the stages it restores")
    a = ap.parse_args(argv)
    if a.cmd == "figures":
        return figures()
    if a.cmd == "record":
        if not (a.source / "results").is_dir():
            raise SystemExit(f"refrun record --source {a.source}: no results/ folder there; allowed: a checkout "
                             "where a whole make repro ran")
        record(a.source, push=not a.no_push, derived=a.derived)
    elif a.cmd == "clear":
        clear()
    elif a.cmd == "guard":
        guard(a.what)
    elif a.cmd == "claims":
        print(reference_claims().relative_to(paths.root()))
    elif a.cmd == "stages":
        print("reports:", " ".join(reports()))
        print("restored:", " ".join(restored()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
