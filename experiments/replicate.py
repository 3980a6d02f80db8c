"""Replication, as a reviewer does it: measure again, compare the two claims tables.

Across two whole runs (two fresh clones' ``results/claims/claims.csv``): ``python -m
experiments.replicate compare A.csv B.csv`` (``make compare-claims A=... B=...``) lists the
findings whose verdicts differ (:func:`stability`): holds/fails flips, each named as at a
margin's edge (both intervals touch a value where the verdict changes: :func:`edges`) or not,
and the moves to or from ``inconclusive``, with both intervals.

``make replicate STAGES="blog lmdbio"`` (``python -m experiments.replicate --stages ...``)
copies the project (code, params.yaml, dvc.yaml and dvc.lock, every results folder) into
``replicate/`` (git-ignored; its ``data/`` is a link to this checkout's, so the data sets are
not generated again), re-runs there the named measuring stages (default: every stage in
:data:`MEASURING`) and the report stages that read them (``dvc repro --single-item --force``,
``DLIO_ROOT`` = the copy: ``results/`` here is never touched), then prints one table
(:func:`compare`, :func:`markdown`) and writes it to ``replicate/replication.md``:

- per finding, both runs' values, 95 % intervals and verdicts;
- ``agree``: False only for a flip between ``holds`` and ``fails`` (``direction only`` counts
  as a holding direction, ``fails (negligible)`` as a fail); to or from ``inconclusive`` or
  ``not measured`` is not a disagreement;
- ``covers``: whether the first run's interval contains the second run's value, and the share
  of findings with an interval in both runs that do (for honest 95 % intervals of the same
  quantity, about 83 %: two independent intervals' chance that one holds the other's estimate);
- ``disjoint``: whether the two intervals do not overlap at all;
- ``same``: the same value and interval in both runs (nothing measured again: its samples come
  from a stage not re-run, or from seeded computations such as DeepIO's trainings), left out
  of ``covers``, its share and ``disjoint``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from . import claims, paths, stats
from .claims.rules import _parse

# stages that measure (their findings come from a report stage that reads their results, or
# from themselves); `--stages` takes any of these
MEASURING = ("fio_baseline", "tfdata_read", "deepio", "lmdbio", "blog", "alexnet_prefetch",
             "alexnet_checkpoint", "unet3d", "bert", "dlrm", "workload_sleep", "workload_random",
             "tracing_patterns", "emulator_patterns", "traced_comparison", "llm_checkpoint")
COLUMNS = ["stage", "id", "value_1", "low_1", "high_1", "verdict_1", "value_2", "low_2", "high_2",
           "verdict_2", "agree", "covers", "disjoint", "same"]


def _side(verdict, negligible=None) -> str | None:
    """holds / fails / None (undecided or not measured): what a flip compares."""
    if verdict in ("holds", "direction only"):
        return "holds"
    if verdict == "fails":
        return "fails"
    return None


def compare(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """One row per finding measured in both tables (:func:`experiments.claims.gather` of each
    run; checks left out): both values, intervals and verdicts, ``agree``, ``covers`` (None
    where the first has no interval or the second no value) and ``disjoint`` (None unless
    both have an interval)."""
    a = first[first["kind"] != "check"].set_index("id")
    b = second[second["kind"] != "check"].set_index("id")
    rows = []
    for i in [x for x in a.index if x in b.index]:
        r1, r2 = a.loc[i], b.loc[i]
        v1, v2 = stats.number(r1["our_value"]), stats.number(r2["our_value"])
        lo1, hi1, lo2, hi2 = (stats.number(r1["ci_low"]), stats.number(r1["ci_high"]), stats.number(r2["ci_low"]), stats.number(r2["ci_high"]))
        s1, s2 = _side(r1["verdict"]), _side(r2["verdict"])
        ci1, ci2 = lo1 is not None and hi1 is not None, lo2 is not None and hi2 is not None
        # the same value and interval in both runs: nothing was measured again (a stage not
        # re-run, or a seeded computation that gives the same bits); left out of the share
        same = bool(ci1 and ci2 and v1 is not None and (v1, lo1, hi1) == (v2, lo2, hi2))
        rows.append({
            "stage": r1.get("stage"), "id": i, "value_1": v1, "low_1": lo1, "high_1": hi1,
            "verdict_1": claims.shown_verdict(r1["verdict"], r1.get("negligible")),
            "value_2": v2, "low_2": lo2, "high_2": hi2,
            "verdict_2": claims.shown_verdict(r2["verdict"], r2.get("negligible")),
            "agree": not (s1 and s2 and s1 != s2),
            "covers": (lo1 <= v2 <= hi1) if ci1 and v2 is not None and not same else None,
            "disjoint": (hi1 < lo2 or hi2 < lo1) if ci1 and ci2 and not same else None,
            "same": same})
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(t: pd.DataFrame) -> dict:
    """Counts of a :func:`compare` table: findings, flips, intervals compared, how many of
    the first run's intervals contain the second value (and the share), disjoint pairs."""
    cov = t["covers"].dropna()
    return {"findings": int(len(t)), "flips": int((~t["agree"].astype(bool)).sum()),
            "compared": int(len(cov)), "covered": int(cov.astype(bool).sum()),
            "share": float(cov.astype(bool).mean()) if len(cov) else float("nan"),
            "disjoint": int(t["disjoint"].dropna().astype(bool).sum()),
            "same": int(t["same"].astype(bool).sum()) if "same" in t else 0}


def _ci(v, lo, hi) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3g} [{lo:.3g}, {hi:.3g}]" if lo is not None and not pd.isna(lo) else f"{v:.3g}"


def markdown(t: pd.DataFrame) -> str:
    """The replication table: a header with :func:`summary`, then one row per finding."""
    s = summary(t)
    share = "n/a" if math.isnan(s["share"]) else f"{s['share']:.0%}"
    lines = [f"# Replication: {s['findings']} findings, {s['flips']} holds/fails flip(s); "
             f"{s['covered']} of {s['compared']} first-run intervals contain the second run's value "
             f"({share}; about 83 % for honest 95 % intervals); {s['disjoint']} disjoint pair(s)"
             + (f"; {s['same']} with the same value and interval in both runs (not measured again: a "
                "stage not re-run, or seeded computations), left out of the share" if s["same"] else ""), "",
             "| stage | finding | run 1 [95 % CI] | verdict 1 | run 2 [95 % CI] | verdict 2 | agree | "
             "1st CI holds 2nd value | disjoint |", "|---|---|---|---|---|---|---|---|---|"]
    yn = {True: "yes", False: "**no**", None: "–"}
    for r in t.itertuples(index=False):
        lines.append(f"| {r.stage} | {r.id} | {_ci(r.value_1, r.low_1, r.high_1)} | {r.verdict_1} | "
                     f"{_ci(r.value_2, r.low_2, r.high_2)} | {r.verdict_2} | {yn[bool(r.agree)]} | "
                     f"{'same samples' if r.same else yn[None if pd.isna(r.covers) else bool(r.covers)]} | "
                     f"{yn[None if pd.isna(r.disjoint) else bool(r.disjoint)]} |")
    return "\n".join(lines) + "\n"


# verdicts across two whole runs (``compare A.csv B.csv``): how far from an interval an edge may
# lie and still count as touched, as a share of the interval's width
EDGE_REACH = 0.25
STABILITY_COLUMNS = ["stage", "id", "change", "verdict_1", "value_1", "low_1", "high_1", "verdict_2",
                     "value_2", "low_2", "high_2", "rule", "edge"]


def edges(rule, margin) -> list[float]:
    """The values where a finding's verdict changes: a comparison's threshold X and its margin's
    edges X -+ d (d = margin x |X|, or the margin itself when X = 0); a ``within P % of X``
    rule's ends; a ``between A and B`` rule's A and B. [] for a rule not understood. The rule
    is read by the claims' own parser (:mod:`experiments.claims.rules`)."""
    try:
        r = _parse(str(rule or ""))
    except ValueError:
        return []
    if r.threshold is None:
        return [r.lower, r.upper]
    band = r.band(stats.number(margin) or 0.0)
    return sorted({r.threshold, *(band or ())})


def _touches(e: float, lo, hi) -> bool:
    """Whether edge ``e`` lies within [lo, hi] widened by :data:`EDGE_REACH` of its width."""
    if lo is None or hi is None:
        return False
    w = EDGE_REACH * (hi - lo)
    return lo - w <= e <= hi + w


def _change(v1, v2) -> str | None:
    """How a verdict moved between two runs: ``flip`` (holds and fails, either way: what
    matters), ``to inconclusive``, ``from inconclusive``, ``measured in one`` (to or from
    ``not measured``), ``same side`` (holds and direction only; fails and fails
    (negligible)); None when unchanged."""
    if v1 == v2:
        return None
    s1, s2 = _side(v1), _side(v2)
    if s1 and s2:
        return "flip" if s1 != s2 else "same side"
    if "not measured" in (v1, v2):
        return "measured in one"
    return "to inconclusive" if v2 == "inconclusive" else "from inconclusive"


def stability(first: pd.DataFrame, second: pd.DataFrame) -> pd.DataFrame:
    """The findings whose verdicts differ between two claims tables (two whole runs' claims.csv),
    one row each: ``change`` (:func:`_change`), both shown verdicts, values and intervals, the
    rule and, for a flip, ``edge``: a verdict-changing value (:func:`edges`) that both runs'
    intervals touch (None: the flip is not explained by an interval at the margin's edge)."""
    a = first[first["kind"] != "check"].set_index("id")
    b = second[second["kind"] != "check"].set_index("id")
    rows = []
    for i in [x for x in a.index if x in b.index]:
        r1, r2 = a.loc[i], b.loc[i]
        v1 = "not measured" if pd.isna(r1["verdict"]) else r1["verdict"]
        v2 = "not measured" if pd.isna(r2["verdict"]) else r2["verdict"]
        ch = _change(v1, v2)
        if ch is None and claims.shown_verdict(v1, r1.get("negligible")) == \
                claims.shown_verdict(v2, r2.get("negligible")):
            continue
        lo1, hi1, lo2, hi2 = (stats.number(r1.get("ci_low")), stats.number(r1.get("ci_high")), stats.number(r2.get("ci_low")),
                              stats.number(r2.get("ci_high")))
        edge = None
        if ch == "flip":
            edge = next((e for e in edges(r1.get("rule"), r1.get("margin"))
                         if _touches(e, lo1, hi1) and _touches(e, lo2, hi2)), None)
        rows.append({"stage": r1.get("stage"), "id": i, "change": ch or "same side",
                     "verdict_1": claims.shown_verdict(v1, r1.get("negligible")),
                     "value_1": stats.number(r1.get("our_value")), "low_1": lo1, "high_1": hi1,
                     "verdict_2": claims.shown_verdict(v2, r2.get("negligible")),
                     "value_2": stats.number(r2.get("our_value")), "low_2": lo2, "high_2": hi2,
                     "rule": claims.rule_text(r1.get("rule"), r1.get("margin")) if r1.get("rule") else None,
                     "edge": edge})
    return pd.DataFrame(rows, columns=STABILITY_COLUMNS)


def _verdict_counts(df: pd.DataFrame) -> dict[str, int]:
    f = df[df["kind"] != "check"]
    shown = [claims.shown_verdict("not measured" if pd.isna(v) else v, n)
             for v, n in zip(f["verdict"], f.get("negligible", [None] * len(f)))]
    return pd.Series(shown, dtype=object).value_counts().to_dict()


def stability_markdown(t: pd.DataFrame, first: pd.DataFrame, second: pd.DataFrame,
                       names: tuple[str, str] = ("A", "B")) -> str:
    """Verdict stability across two whole runs: each table's count by verdict, then the
    holds/fails flips (each named as at the margin's edge, or not), then the moves to or from
    ``inconclusive`` and the rest, with both intervals."""
    c1, c2 = _verdict_counts(first), _verdict_counts(second)
    flips = t[t["change"] == "flip"]
    far = flips[flips["edge"].isna()]
    lines = [f"# Verdicts across two runs: {names[0]} and {names[1]}", "",
             "| verdict | " + " | ".join(names) + " |", "|---|---|---|"]
    for v in sorted(set(c1) | set(c2), key=lambda v: (v not in claims.VERDICTS, v)):
        lines.append(f"| {v} | {c1.get(v, 0)} | {c2.get(v, 0)} |")
    lines += ["", f"**{len(flips)} holds/fails flip(s)**, {len(flips) - len(far)} of them with both "
              f"intervals at a margin's edge (within {EDGE_REACH:.0%} of their width), "
              f"**{len(far)} not**; {int((t['change'] == 'to inconclusive').sum())} moved to and "
              f"{int((t['change'] == 'from inconclusive').sum())} from inconclusive.", ""]
    head = (f"| stage | finding | change | {names[0]} [CI] | verdict | {names[1]} [CI] | verdict | rule | "
            "edge both intervals touch |")
    order = {"flip": 0, "to inconclusive": 1, "from inconclusive": 2, "measured in one": 3, "same side": 4}
    lines += [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in t.sort_values("change", key=lambda s: s.map(order), kind="stable").itertuples(index=False):
        edge = "" if r.change != "flip" else ("**none**" if pd.isna(r.edge) else f"{r.edge:.4g}")
        lines.append(f"| {r.stage} | {r.id} | {r.change} | {_ci(r.value_1, r.low_1, r.high_1)} | {r.verdict_1} | "
                     f"{_ci(r.value_2, r.low_2, r.high_2)} | {r.verdict_2} | {r.rule or ''} | {edge} |")
    return "\n".join(lines) + "\n"


def plan(stages: list[str], dvc_yaml: dict) -> tuple[list[str], list[str]]:
    """(measuring stages, report stages to run after them) for ``stages`` (empty: all of
    :data:`MEASURING`): a report is a stage that reads ``results/<stage>`` and writes claims
    (a dependency of the ``claims`` stage). Unknown names stop, naming them."""
    bad = [s for s in stages if s not in MEASURING]
    if bad:
        raise SystemExit(f"replicate --stages: {' '.join(bad)} not a measuring stage; allowed: "
                         f"{', '.join(MEASURING)}")
    chosen = [s for s in MEASURING if s in stages] if stages else list(MEASURING)
    st = dvc_yaml["stages"]
    writes_claims = {Path(d).parts[1] for d in st["claims"]["deps"] if str(d).endswith("claims.json")}
    reports = []
    for name, v in st.items():
        deps = [str(d) for d in v.get("deps", [])]
        if name in writes_claims and name not in chosen and any(
                d == f"results/{s}" or d.startswith(f"results/{s}/") for s in chosen for d in deps):
            reports.append(name)
    return chosen, reports


def _copy_project(src: Path, dst: Path) -> None:
    """The tracked files, dvc.lock and every results folder of ``src`` into ``dst``; ``data``
    as a link to ``src``'s."""
    files = subprocess.run(["git", "ls-files"], cwd=src, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        if (src / f).is_file():
            shutil.copy2(src / f, dst / f)
    for f in ("params.yaml", "dvc.lock"):
        if (src / f).exists():
            shutil.copy2(src / f, dst / f)
    if (dst / "results").exists():
        shutil.rmtree(dst / "results")
    shutil.copytree(src / "results", dst / "results", symlinks=True)
    if (dst / "data").is_symlink() or (dst / "data").is_file():
        (dst / "data").unlink()
    elif (dst / "data").exists():
        shutil.rmtree(dst / "data")
    (dst / "data").symlink_to((src / "data").resolve(), target_is_directory=True)


def run(stages: list[str], into: Path) -> pd.DataFrame:
    """Re-measure ``stages`` and their reports in ``into`` (see the module docstring) and
    return :func:`compare` of this checkout's findings and the copy's."""
    import yaml

    src = paths.root()
    chosen, reports = plan(stages, yaml.safe_load((src / "dvc.yaml").read_text()))
    into = Path(into).resolve()
    if into == src.resolve() or into == (src / "results").resolve() or into in (src / "results").resolve().parents:
        raise SystemExit(f"replicate --into {into}: allowed: a folder that is neither this checkout nor "
                         "holds its results/")
    before = claims.gather()
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    _copy_project(src, into)
    env = {**os.environ, "DLIO_ROOT": str(into)}
    subprocess.run(["dvc", "config", "--local", "core.no_scm", "true"], cwd=into, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    for s in [*chosen, *reports]:
        print(f"replicate: dvc repro --single-item --force {s}", file=sys.stderr, flush=True)
        subprocess.run(["dvc", "repro", "--single-item", "--force", s], cwd=into, env=env, check=True)
    was = os.environ.get("DLIO_ROOT")
    os.environ["DLIO_ROOT"] = str(into)
    try:
        after = claims.gather()
    finally:
        if was is None:
            os.environ.pop("DLIO_ROOT")
        else:
            os.environ["DLIO_ROOT"] = was
    keep = set(reports) | set(chosen)
    t = compare(before[before["stage"].isin(keep)], after[after["stage"].isin(keep)])
    return t


def compare_main(argv) -> int:
    """``python -m experiments.replicate compare A.csv B.csv [--out F.md]``: :func:`stability`
    of two claims tables, printed (and written to ``--out``); exit status 0."""
    ap = argparse.ArgumentParser(prog="python -m experiments.replicate compare",
                                 description="verdicts of two runs' claims tables (claims.csv): holds/fails "
                                             "flips, named when at a margin's edge, and moves to or from "
                                             "inconclusive")
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--out", default=None, help="also write the table here (markdown)")
    a = ap.parse_args(argv)
    tables = []
    for f in (a.first, a.second):
        p = Path(f)
        if not p.is_file():
            raise SystemExit(f"replicate compare: {f}: no such file; allowed: a claims table "
                             "(results/claims/claims.csv of a run)")
        d = pd.read_csv(p)
        miss = {"id", "kind", "verdict"} - set(d.columns)
        if miss:
            raise SystemExit(f"replicate compare: {f} lacks the column(s) {', '.join(sorted(miss))}; allowed: "
                             "a claims table (results/claims/claims.csv)")
        tables.append(d)
    md = stability_markdown(stability(*tables), *tables, names=(a.first, a.second))
    if a.out:
        from .results import atomic_write
        atomic_write(Path(a.out), lambda tmp: tmp.write_text(md))
    print(md, end="")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["compare"]:
        return compare_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m experiments.replicate", description=__doc__.split("\n")[0])
    ap.add_argument("--stages", default="", help="measuring stages to re-run, space-separated (default: all)")
    ap.add_argument("--into", default=None, help="the second project folder (default: replicate/ here)")
    a = ap.parse_args(argv)
    into = Path(a.into) if a.into else paths.root() / "replicate"
    t = run(a.stages.split(), into)
    md = markdown(t)
    (into / "replication.md").write_text(md)
    t.to_csv(into / "replication.csv", index=False)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
