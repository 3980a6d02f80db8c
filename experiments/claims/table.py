"""The claims table: every stage's ``claims.json`` gathered (:func:`gather`) and rendered for a
reviewer (:func:`to_markdown`), with the verdicts that changed since the run before and the
forecast of what would decide the inconclusive findings."""

from __future__ import annotations

import math

import pandas as pd

from ..settings import paths
from ..output import results
from ..host.cache import COLD_LIMIT
from ..verdicts.rules import MAX_TO_DECIDE, rule_text, NEVER_DECIDES, _missing, _parse, _parse_magnitude
from ..verdicts.verdict import COLUMNS, KINDS, VERDICTS

# the paper's side a reviewer reads beside each claim: the sentence of the text a finding rests on
# (verbatim) and how a paper value was derived where the quote does not hold it as written, both
# from experiments/claims/papers/<source>.yaml, written into each stage's claims.json by join
PAPER_SIDE = ["quote", "derived"]
TABLE_COLUMNS = ["stage", *COLUMNS, *PAPER_SIDE]
# what re-measuring a row costs on the reference box (with_costs): the minutes of
# `make repro STAGES="<remeasure_stages>"`, and of generating the data sets they read (a fresh clone)
COST_COLUMNS = ["remeasure_min", "data_min", "remeasure_stages"]


def outside_own_interval(df: pd.DataFrame) -> pd.DataFrame:
    """The claims (rows of :func:`gather` or a claims.json as a table) whose value lies outside
    their own interval: a value and an interval from different computations."""
    d = df[df["our_value"].notna() & df["ci_low"].notna() & df["ci_high"].notna()]
    v, lo, hi = (d[c].astype(float) for c in ("our_value", "ci_low", "ci_high"))
    tol = 1e-9 * (v.abs() + 1)
    return d[(v < lo - tol) | (v > hi + tol)]


def show(claim_list: list[dict]) -> pd.DataFrame:
    """The claims of a stage as a table for its notebook: verdict first."""
    cols = ["verdict", "kind", "basis", "id", "statement", "paper_value", "our_value", "ci_low",
            "ci_high", "n", "ratio", "rule", "magnitude", "resident_fraction", "note"]
    return pd.DataFrame(claim_list, columns=COLUMNS)[cols]



def joined(folder) -> list[dict]:
    """The claims of a stage that wrote what it measured but not its claims (``measured.json``:
    :meth:`experiments.output.results.StageResults.measured`), joined here with its declarations."""
    from .declared import join
    from ..verdicts.measured import from_dict

    return join(folder.name, [from_dict(d) for d in results.read_json(folder / "measured.json")])


def gather(stages: list[str] | None = None) -> pd.DataFrame:
    """Every ``results/*/claims.json`` (or those of ``stages``) as one table (:data:`TABLE_COLUMNS`):
    the stage, the verdict's columns and the paper side (the quote, how a paper value was
    derived); a stage that wrote ``measured.json`` instead has its claims joined with its
    declarations here (:func:`joined`)."""
    root = paths.results_dir()
    files = ([root / s / "claims.json" for s in stages] if stages
             else sorted({*root.glob("*/claims.json"), *(f.with_name("claims.json") for f in root.glob("*/measured.json"))}))
    rows = []
    # how the measuring stages' rounds went for each finding (rounds.json), by finding
    seq = {k: v for d in sorted(root.glob("*/")) for k, v in rounds_notes(d).items()}
    for f in files:
        if f.parent.name == "claims":
            continue
        if not f.exists() and (f.parent / "measured.json").exists():
            listed = joined(f.parent)
        elif not f.exists():
            if stages:
                raise FileNotFoundError(f"{f} is missing: run the stage {f.parent.name!r} first")
            continue
        else:
            listed = results.read_json(f)
        for c in listed:
            if c.get("id") in seq and seq[c["id"]] not in (c.get("note") or ""):
                c = {**c, "note": "; ".join(x for x in (c.get("note"), seq[c["id"]]) if x)}
            try:  # a claims file written by older code must still hold rules that parse
                _parse(c["rule"])
                if c.get("magnitude"):
                    _parse_magnitude(c["magnitude"])
                if c.get("kind") not in KINDS:
                    raise ValueError(f"kind = {c.get('kind')!r}; allowed: {', '.join(KINDS)}")
            except (KeyError, ValueError) as e:
                raise ValueError(f"{f}: claim {c.get('id')!r}: {e}; re-run the stage "
                                 f"{f.parent.name!r}") from None
            rows.append({"stage": f.parent.name, **{k: c.get(k) for k in (*COLUMNS, *PAPER_SIDE)}})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def with_costs(df: pd.DataFrame, costs: dict) -> pd.DataFrame:
    """The table with :data:`COST_COLUMNS`: per row, its stage's cost of being re-measured
    (``costs``: stage -> :class:`experiments.pipeline.forecast.Cost`, from the reference table), in
    minutes; empty for a stage without one."""
    get = lambda f: df["stage"].map(lambda s: f(costs[s]) if s in costs else None)   # noqa: E731
    return df.assign(remeasure_min=get(lambda c: round(c.minutes, 1)), data_min=get(lambda c: round(c.data_s / 60, 1)),
                     remeasure_stages=get(lambda c: " ".join(c.stages)))


def _is_negligible(x) -> bool:
    return x is True or (isinstance(x, str) and x.lower() == "true") or (
        not isinstance(x, (bool, str)) and not _missing(x) and bool(x))


def shown_verdict(verdict, negligible) -> str:
    """The verdict as the table and its header count it: a ``fails`` whose interval lies within
    the margin of no effect is ``fails (negligible)``."""
    return "fails (negligible)" if verdict == "fails" and _is_negligible(negligible) else verdict


from ..repeats.stage import ROUNDS_FILE  # noqa: E402 (a measuring stage's rounds and purchases)


def rounds_notes(folder) -> dict[str, str]:
    """{finding: how many rounds it took and why they stopped} from a measuring stage's
    ``rounds.json`` (:mod:`experiments.repeats.rounds`); {} without one."""
    import json
    from pathlib import Path

    f = Path(folder) / ROUNDS_FILE
    if not f.exists():
        return {}
    return {k: v.get("note", "") for k, v in json.loads(f.read_text()).get("findings", {}).items()}


def _counts(df: pd.DataFrame) -> str:
    """Each verdict counted separately, in the order of :data:`VERDICTS`, with the ``fails``
    whose interval lies within the margin counted apart as ``fails (negligible)``."""
    neg = df["negligible"] if "negligible" in df else pd.Series([None] * len(df), index=df.index)
    shown = [shown_verdict(v, g) for v, g in zip(df["verdict"], neg)]
    order = [*VERDICTS[:4], "fails (negligible)", *VERDICTS[4:]]
    # "not comparable" (the traced comparison's unlike sides) only where a row has it
    return ", ".join(f"{shown.count(v)} {v}" for v in order if v != "not comparable" or v in shown)


def _fmt(v) -> str:
    if _missing(v):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _ours(r) -> str:
    """Our value with its interval and sample count: "1.2 [1.1, 1.3] n=5"."""
    txt = _fmt(r.our_value)
    if _missing(r.our_value):
        return txt
    n = r.n
    n = None if _missing(n) else int(n)
    if not _missing(r.ci_low) and r.ci_high is not None:
        return f"{txt} [{float(r.ci_low):.3g}, {float(r.ci_high):.3g}] n={n}"
    return txt if n is None else f"{txt} n={n}"


def _statement(r) -> str:
    """The statement with the text it rests on, quoted (experiments/claims/papers/)."""
    q = getattr(r, "quote", None)
    return _fmt(r.statement) + (f"<br>*\"{_fmt(' '.join(str(q).split()))}\"*" if not _missing(q) and q else "")


def _paper(r) -> str:
    """The paper's value, marked *derived* (with how) where its quote does not hold it."""
    d = getattr(r, "derived", None)
    return _fmt(r.paper_value) + (f" (derived: {_fmt(d)})" if not _missing(d) and d else "")


def _resident(r) -> str:
    """The residency column: measured fraction after eviction, or why there is none."""
    rf = getattr(r, "resident_fraction", None)
    if r.memory_backed is True:
        return "tmpfs (not evictable)"
    if _missing(rf):
        return "–"
    txt = f"{rf:.0%}"
    return txt if rf <= COLD_LIMIT else f"**{txt} (warm)**"


def previous_table() -> pd.DataFrame | None:
    """The claims table of the run before (``results/claims/claims.csv``, kept by ``persist`` in
    dvc.yaml until this run overwrites it), or None when there is none. Read it before
    ``results.StageResults("claims")`` cleans the folder."""
    f = paths.results_dir("claims") / "claims.csv"
    return pd.read_csv(f) if f.exists() else None


def changes(previous: pd.DataFrame | None, current: pd.DataFrame) -> pd.DataFrame:
    """Claims whose verdict differs from the run before (``previous``, a claims.csv; None: no
    run before), with this run's value and interval: one row per changed, new or dropped claim
    (``before``/``after`` ``–`` when absent)."""
    cols = ["stage", "id", "before", "after", "our_value", "ci_low", "ci_high", "n"]
    if previous is None or not len(previous):
        return pd.DataFrame(columns=cols)
    prev = previous.set_index("id")["verdict"].to_dict()
    rows = []
    for r in current.itertuples(index=False):
        before = prev.pop(r.id, "–")
        if before != r.verdict:
            rows.append({"stage": r.stage, "id": r.id, "before": before, "after": r.verdict,
                         "our_value": r.our_value, "ci_low": getattr(r, "ci_low", None),
                         "ci_high": getattr(r, "ci_high", None), "n": getattr(r, "n", None)})
    stage_of = previous.set_index("id")["stage"].to_dict() if "stage" in previous else {}
    rows += [{"stage": stage_of.get(i), "id": i, "before": v, "after": "–"} for i, v in prev.items()]
    return pd.DataFrame(rows, columns=cols)


def to_markdown(df: pd.DataFrame, changed: pd.DataFrame | None = None, reference: dict | None = None,
                measured: list[dict] | None = None) -> str:
    """The reviewer's table: findings first (with the paper's number, ours, the ratio and both
    verdicts, and the page-cache residency measured after the cold-run eviction), then
    checks; the header counts each kind by verdict. ``changed`` (:func:`changes`): a closing
    section lists the verdicts that changed against the run before, with their intervals.
    ``reference``: the reference table's host and commit (``experiments.pipeline.forecast.Reference.meta``),
    which the *re-measure* column's minutes (:func:`with_costs`) come from. ``measured``
    (:func:`experiments.output.provenance.measured_by`): the hosts and commits that measured the values,
    named under the title (after ``make figures``: the reference box's)."""
    df = df.copy()
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df = df.astype(object).where(df.notna(), None)
    df["verdict"] = df["verdict"].fillna("not measured")
    for c in COST_COLUMNS:
        if c not in df:
            df[c] = None
    find, chk = df[df["kind"] != "check"], df[df["kind"] == "check"]
    lines = [f"# Claims: {len(find)} findings ({_counts(find)}); {len(chk)} checks ({_counts(chk)})", "",
             *([_measured_line(measured), ""] if measured is not None else []),
             "A *finding* is a paper's result measured again here; a *check* is a property of our own "
             "generators, metric or tools (it could only fail through a bug). *basis*: whether the paper "
             "*states* the finding, only *implies* it (we read it from its figures or argument), or it is "
             "our *extension* (a configuration the paper did not run, no paper value); under a statement, in "
             "italics, the sentence of the text it rests on, verbatim (declared with the paper's value, "
             "rule and margin in experiments/claims/papers/<source>.yaml, and checked against the texts "
             "by tests/test_claims_declared.py); a paper value *derived* from the text says how. *ours*: our value "
             "with its 95 % confidence interval and the number of samples it came from (runs, steps "
             "or reads; docs/statistics.md). *direction*: the effect exists here (the rule), judged on "
             "the interval: *holds* when the whole interval satisfies the rule (with a margin: lies past its "
             "edge, so more samples never turn it into a fail), *fails* when none of it "
             "does, *fails (negligible)* when the whole interval lies within the rule's margin of no "
             "effect (the smallest effect the statement means, beside the rule: 5 % for a ratio against "
             "1), and *fails* also when it straddles the threshold but ends short of the margin's edge on "
             "the side the statement claims (the effect it means is ruled out), *inconclusive* when it "
             "straddles the threshold reaching beyond the margin on both sides or satisfies the rule "
             "but reaches into the margin, when there "
             "is no interval (n = 1: a point value alone never decides) or when its method cannot reach "
             "95 % with so few samples; *not comparable*: a comparison of two sides that read from "
             "different places (the device audit: one from the device, one from the page cache), its "
             "value shown, not judged; *magnitude*: ours / paper within the stated tolerance "
             "(on the point, when the direction holds); *resident*: the share of the data set still in "
             "the page cache after the eviction before "
             f"the run (measured with mincore; over {COLD_LIMIT:.0%} the run was not cold). Verdicts are "
             "computed from this run's measurements; a claim whose data is missing stays as "
             "*not measured*, with the reason. A check is judged on its point value. " + _cost_header(reference), "",
             f"## Findings ({len(find)}: {_counts(find)})", "",
             "| verdict | basis | source | figure | statement | paper | ours [95 % CI] n | unit | ours/paper | "
             "direction rule | direction | magnitude rule | magnitude | resident | note | re-measure, min | stage |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {v: i for i, v in enumerate(["fails", "direction only", "inconclusive", "not comparable",
                                         "not measured", "holds"])}
    find = find.assign(_o=find["verdict"].map(order)).sort_values(["_o", "stage"], kind="stable")
    for r in find.itertuples(index=False):
        sv = shown_verdict(r.verdict, r.negligible)
        v = sv if sv == "holds" else f"**{sv}**"
        lines.append("| " + " | ".join([v] + [_fmt(x) for x in (
            r.basis, r.source, r.figure)] + [_statement(r), _paper(r), _ours(r)] + [_fmt(x) for x in (
            r.unit, r.ratio, rule_text(r.rule, r.margin), r.holds, r.magnitude, r.magnitude_holds)] + [_resident(r)] + [
            _fmt(r.note), _minutes(r), _fmt(r.stage)]) + " |")
    lines += ["", f"## Checks ({len(chk)}: {_counts(chk)})", "",
              "| verdict | figure | statement | ours | unit | rule | note | re-measure, min | stage |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in chk.itertuples(index=False):
        v = r.verdict if r.verdict == "holds" else f"**{r.verdict}**"
        lines.append("| " + " | ".join([v, _fmt(r.figure), _statement(r), _ours(r)] + [
            _fmt(x) for x in (r.unit, r.rule, r.note)] + [_minutes(r), _fmt(r.stage)]) + " |")
    lines += _remeasure_lines(df)
    lines += _forecast_lines(find)
    if changed is not None:
        lines += ["", f"## Changed since the run before ({len(changed)})", ""]
        if len(changed):
            lines += ["| claim | stage | before | now | ours [95 % CI] n |", "|---|---|---|---|---|"]
            c = changed.astype(object).where(changed.notna(), None)
            lines += [f"| {r.id} | {_fmt(r.stage)} | {r.before} | {r.after} | {_ours(r)} |"
                      for r in c.itertuples(index=False)]
        else:
            lines.append("No verdict changed.")
    return "\n".join(lines) + "\n"


def _measured_line(who: list[dict]) -> str:
    """Who measured the values (:func:`experiments.output.provenance.measured_by`) and where the table
    was written: after ``make figures`` the values are the reference run's, from another box."""
    from ..host.envinfo import git_revision, host_label
    from ..output.provenance import words

    if not who:
        return "**Measured on**: nothing measured yet (no measuring stage's env.json)."
    n = sum(len(w["stages"]) for w in who)
    return (f"**Measured on** {words(who)} (the env.json of the {n} measuring and data stages these claims "
            f"read); this table written on {host_label()} at commit {git_revision()['commit'][:7]}.")


def _minutes(r) -> str:
    """The row's cost of being re-measured, minutes on the reference box (:data:`COST_COLUMNS`)."""
    m = getattr(r, "remeasure_min", None)
    return "–" if _missing(m) else f"{float(m):.1f}"


def _cost_header(m: dict | None) -> str:
    """The *re-measure* column's sentence, naming the reference host once."""
    if not m:
        return "*re-measure*: not known here (no reference table, env/reference-times.csv)."
    return ("*re-measure*: what re-measuring the claim costs, the minutes its stages took in the reference run "
            f"on {m.get('host')} (commit {str(m.get('commit'))[:10]}, env/reference-times.csv): the stages "
            "`make repro STAGES=...` re-runs for it (the section *Re-measuring one claim* names them).")


def _remeasure_lines(df: pd.DataFrame) -> list[str]:
    """Per stage that judges claims: the ``make repro STAGES=...`` that re-measures them and its
    minutes (:func:`experiments.pipeline.forecast.cost`), with the data sets' where they are not generated."""
    d = df[df["remeasure_stages"].notna()].drop_duplicates("stage")
    if not len(d):
        return []
    lines = ["", "## Re-measuring one claim", "",
             "`make repro STAGES=\"...\"` re-runs the named stages (forced) and every stage downstream of one "
             "(the reports that judge them, the claims table), after the stale stages upstream of them "
             "(`python -m experiments.pipeline.forecast plan --stages ...` prints the plan first). The minutes are the "
             "reference run's wall times of those stages; *data*: the minutes of generating the data sets they "
             "read, where they are not generated yet (a fresh clone).", "",
             "| claims of stage | command | minutes | + data, min |", "|---|---|---|---|"]
    for r in d.sort_values("remeasure_min", kind="stable").itertuples(index=False):
        lines.append(f"| {r.stage} | `make repro STAGES=\"{r.remeasure_stages}\"` | {_minutes(r)} | "
                     f"{float(r.data_min):.1f} |")
    return lines


def _forecast_lines(find: pd.DataFrame) -> list[str]:
    """The inconclusive findings with the samples that would decide each
    (:func:`samples_to_decide`), fewest first: which runs a longer run should buy."""
    inc = find[find["verdict"] == "inconclusive"]
    if not len(inc):
        return []
    m = pd.to_numeric(inc["n_to_decide"], errors="coerce")
    n = pd.to_numeric(inc["n"], errors="coerce")
    inc = inc.assign(times=(m / n).where(m.notna(), math.inf)).sort_values(["times", "stage"], kind="stable")
    near = int((inc["times"] <= 2).sum())
    lines = ["", f"## What would decide the inconclusive findings ({len(inc)}; {near} within twice "
             "their samples)", "",
             "A forecast, not a verdict: the samples (of the kind *n* counts) at which the interval, "
             "around the same value with its width shrinking as 1/sqrt(n), would no longer straddle "
             "the rule or its margin; *never*: the value sits at the rule's edge (more than "
             f"{MAX_TO_DECIDE} x the samples would not decide it); *–*: the interval could not decide "
             "as it is (too few samples for its method, or no interval).", "",
             "| claim | stage | ours [95 % CI] n | rule | samples to decide | x taken |", "|---|---|---|---|---|---|"]
    for r in inc.itertuples(index=False):
        # no count: "never" where the forecast ran and found none (its note says so), "–" where
        # the finding could not be forecast (too few samples, no interval)
        k = f"{int(r.n_to_decide)}" if not _missing(r.n_to_decide) else \
            ("never" if NEVER_DECIDES in str(r.note) else "–")
        x = f"{r.times:.1f}" if math.isfinite(r.times) else "–"
        lines.append(f"| {r.id} | {_fmt(r.stage)} | {_ours(r)} | {rule_text(r.rule, r.margin)} | {k} | {x} |")
    return lines

