import json
import math

import pandas as pd
import pytest

from experiments import claims
from experiments.output import results
from experiments.statistics.stats import Interval
from experiments.claims import table as claims_table

CI = Interval(1.0, 3.0, 5, "test")     # an interval around a value of 2, from 5 samples


def ci(lo, hi, n=5):
    return Interval(lo, hi, n, "test")


@pytest.mark.parametrize("rule,value,expected", [
    ("> 1.5", 1.6, True), ("> 1.5", 1.5, False), (">= 1.5", 1.5, True), ("< 1", 0.5, True),
    ("within 15% of 112", 100, True), ("within 15% of 112", 90, False),
    ("between 0.8 and 1.2", 1.3, False), ("between 0.8 and 1.2", 0.9, True),
])
def test_rules(rule, value, expected):
    assert claims.evaluate(rule, value) is expected


def test_bad_rule_is_an_error():
    with pytest.raises(ValueError, match="not understood"):
        claims.evaluate("about 3", 3)


def test_claim_verdict_is_computed_and_explained():
    c = claims.claim("x", "S", "Fig 1", "s", our_value=1.1, unit="x", rule="> 1.5",
                     paper_value=2.3, why_not="2 cores", kind="finding", interval=ci(1.0, 1.2))
    assert c["holds"] is False and c["verdict"] == "fails"
    assert "[1, 1.2] fails the rule '> 1.5'" in c["note"] and "2 cores" in c["note"]
    assert (c["ci_low"], c["ci_high"], c["n"]) == (1.0, 1.2, 5)
    nan = claims.claim("y", "S", "Fig 1", "s", our_value=math.nan, unit="x", rule="> 1",
                       why_not="no tracer here", kind="finding")
    assert nan["holds"] is None and nan["verdict"] == "not measured" and "no tracer here" in nan["note"]


def test_magnitude_is_a_second_verdict():
    kw = dict(id="x", source="S", figure="F", statement="s", unit="x", rule="> 1", paper_value=2.6,
              kind="finding", interval=ci(1.06, 3.0))
    assert claims.claim(our_value=2.0, magnitude="within 2x", **kw)["verdict"] == "holds"
    c = claims.claim(our_value=1.1, magnitude="within 2x", why_not="fio: 1.9 GB/s", **kw)
    assert (c["holds"], c["magnitude_holds"], c["verdict"]) == (True, False, "direction only")
    assert c["ratio"] == pytest.approx(1.1 / 2.6) and "fio: 1.9 GB/s" in c["note"]
    assert claims.claim(our_value=2.9, magnitude="within 20%", **kw)["magnitude_holds"] is True


def test_bad_rules_fail_without_data_too():
    with pytest.raises(ValueError, match="not understood"):
        claims.claim("x", "S", "F", "s", None, "u", "about 3", kind="finding")
    with pytest.raises(ValueError, match="needs a numeric paper_value"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", magnitude="within 2x", kind="finding")
    with pytest.raises(ValueError, match="not understood"):
        claims.claim("x", "S", "F", "s", None, "u", "> 0", paper_value=2, magnitude="about 2x",
                     kind="finding")
    with pytest.raises(TypeError, match="kind"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0")
    with pytest.raises(ValueError, match="kind"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", kind="guess")
    with pytest.raises(ValueError, match="basis = 'guess'.*stated, implied, extension"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", kind="finding", basis="guess")
    with pytest.raises(ValueError, match="basis = 'extension' with paper_value = 2"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", kind="finding", basis="extension", paper_value=2)
    with pytest.raises(ValueError, match="interval = .*Interval"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", kind="finding", interval=(0, 1))


@pytest.mark.parametrize("rule,lo,hi,holds,verdict", [
    ("> 1", 1.06, 1.2, True, "holds"), ("> 1", 0.9, 1.2, None, "inconclusive"),
    ("> 1", 0.8, 0.95, False, "fails"), ("> 1", 0.8, 1.0, False, "fails"),
    ("< 1", 0.5, 0.94, True, "holds"), (">= 1", 1.06, 1.3, True, "holds"),
    ("> 1", 1.01, 1.3, None, "inconclusive"), ("< 1", 0.5, 0.99, None, "inconclusive"),
    ("between 0.8 and 1.2", 0.9, 1.1, True, "holds"), ("between 0.8 and 1.2", 0.5, 1.5, None, "inconclusive"),
    ("between 0.8 and 1.2", 1.3, 1.5, False, "fails"), ("within 10% of 2", 1.7, 1.75, False, "fails"),
    ("within 10% of 2", 1.7, 1.9, None, "inconclusive"),
])
def test_direction_is_judged_on_the_interval(rule, lo, hi, holds, verdict):
    c = claims.claim("x", "S", "F", "s", (lo + hi) / 2, "u", rule, kind="finding", interval=ci(lo, hi))
    assert (c["holds"], c["verdict"]) == (holds, verdict)
    if verdict == "inconclusive":
        assert ("reaches into the margin" if rule[0] in "<>" and (lo > 1 or hi < 1) else "straddles the rule") in c["note"]


@pytest.mark.parametrize("interval", [None, ci(1.5, 2.5, n=1), ci(math.nan, math.nan, n=1),
                                      ci(math.nan, math.nan, n=4)])
def test_a_finding_on_one_sample_never_holds_nor_fails(interval):
    for value in (5.0, 0.1):     # far on each side of the rule
        c = claims.claim("x", "S", "F", "s", value, "u", "> 1", kind="finding", interval=interval,
                         paper_value=5.0, magnitude="within 2x")
        assert c["verdict"] == "inconclusive" and c["holds"] is None
        assert "no interval; a point value alone does not decide" in c["note"]
    assert claims.claim("x", "S", "F", "s", 5.0, "u", "> 1", kind="finding")["n"] == 1
    assert "n = 1: no interval" in claims.claim("x", "S", "F", "s", 5.0, "u", "> 1", kind="finding")["note"]


def test_magnitude_only_counts_when_the_direction_holds():
    kw = dict(id="x", source="S", figure="F", statement="s", unit="x", rule="> 1", paper_value=2.6,
              kind="finding", magnitude="within 20%")
    assert claims.claim(our_value=1.2, interval=ci(0.9, 1.5), **kw)["verdict"] == "inconclusive"
    assert claims.claim(our_value=0.5, interval=ci(0.4, 0.6), **kw)["verdict"] == "fails"


def test_a_check_keeps_its_point_verdict_and_shows_its_interval():
    c = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", kind="check", interval=ci(0.5, 3.0))
    assert c["verdict"] == "holds" and (c["ci_low"], c["ci_high"], c["n"]) == (0.5, 3.0, 5)
    assert claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", kind="check")["verdict"] == "holds"


def test_warm_runs_are_marked():
    c = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", resident_fraction=0.4, kind="finding", interval=CI)
    assert c["cold"] is False and "not a cold run: 40%" in c["note"] and c["resident_fraction"] == 0.4
    c = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", resident_fraction=0.01, kind="finding",
                     interval=ci(1.5, 2.5))
    assert c["cold"] is True and "cold" not in c["note"]
    m = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", resident_fraction=1.0, memory_backed=True,
                     kind="finding", interval=CI)
    assert m["cold"] is None and m["memory_backed"] and "memory-backed tier" in m["note"]


def test_cold_run_and_measured_reasons_come_from_env_and_fio():
    env = {"cpu": {"count": 4, "affinity": 2}, "memory_bytes": 24 * 2**30,
           "cold_runs": {"disk": {"resident_fraction_max": 0.02, "memory_backed": False},
                         "mem": {"resident_fraction_max": 1.0, "memory_backed": True}}}
    assert claims.cores(env) == 2 and claims.memory_gib(env) == 24
    assert claims.cold_run(env, "disk") == {"resident_fraction": 0.02, "memory_backed": False}
    assert claims.cold_run(env, "mem")["memory_backed"] is True
    assert claims.cold_run(env, "nfs") == {"resident_fraction": None, "memory_backed": False}
    fio = pd.DataFrame({"tier": ["disk", "disk"], "job": ["seqread", "randread"], "bw_MBps": [900.0, 300.0]})
    assert claims.fio_MBps(fio, "disk", "randread") == 300 and math.isnan(claims.fio_MBps(fio, "mem", "seqread"))


def test_missing_value_without_reason_says_so():
    c = claims.claim("x", "S", "F", "s", None, "u", "> 1", kind="check")
    assert c["verdict"] == "not measured" and "gave no reason" in c["note"]


def test_show_lists_verdicts_by_claim():
    cl = [claims.claim("a", "S", "F", "s", 2.0, "u", "> 1", kind="finding", interval=ci(1.5, 2.5)),
          claims.claim("b", "S", "F", "s", 2.0, "u", "> 1", paper_value=20, magnitude="within 2x",
                       kind="finding", interval=ci(1.5, 2.5)),
          claims.claim("c", "S", "F", "s", None, "u", "> 1", why_not="-", kind="finding"),
          claims.claim("d", "S", "F", "s", 2.0, "u", "> 1", kind="check"),
          claims.claim("e", "S", "F", "s", 2.0, "u", "> 1", kind="finding")]
    assert list(claims_table.show(cl)["verdict"]) == ["holds", "direction only", "not measured", "holds",
                                                "inconclusive"]


def test_results_writer_is_atomic_and_cleans(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    out = results.StageResults("s")
    out.summary(pd.DataFrame({"a": [1]}))
    out.claims([claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", kind="finding", interval=CI)])
    (out.dir / "keep.ipynb").write_text("{}")
    with pytest.raises(RuntimeError):
        results.atomic_write(out.path("metrics.json"), lambda p: (_ for _ in ()).throw(RuntimeError()))
    assert not out.path("metrics.json").exists()
    assert not [f for f in out.dir.iterdir() if f.name.endswith(".tmp")]
    results.StageResults("s")  # a new run of the stage removes the old results, not the notebook
    assert sorted(f.name for f in out.dir.iterdir()) == ["keep.ipynb"]


def test_gather_and_markdown(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    quoted = {**claims.claim("q", "S", "F", "quoted", 2.0, "u", "> 1", kind="finding", paper_value=2.6,
                             magnitude="within 2x", interval=ci(1.5, 2.5), basis="stated"),
              "quote": "A is  faster\nthan B.", "derived": "13 / 5"}     # as join writes it
    for stage, cl in (("a", [claims.claim("x", "S", "F", "st|x", 2.0, "u", "> 1", kind="finding",
                                          resident_fraction=0.5, interval=ci(1.5, 2.5), basis="stated"),
                             claims.claim("z", "S", "F", "gen", 1.0, "u", "> 0", kind="check")]),
                      ("b", [claims.claim("y", "S", "F", "st", 0.5, "u", "> 1", kind="finding",
                                          interval=ci(0.4, 0.6, n=7), basis="implied"),
                             claims.claim("w", "S", "F", "st", None, "u", "> 1", why_not="no disk tier",
                                          kind="finding", memory_backed=True),
                             claims.claim("v", "S", "F", "st", 1.1, "u", "> 1", kind="finding",
                                          interval=ci(0.9, 1.3), basis="extension"), quoted])):
        monkeypatch.setenv(results.PIPELINE_ENV, stage)   # as dvc repro runs each stage
        results.StageResults(stage).claims(cl)
    t = claims_table.gather()
    assert list(t["stage"]) == ["a", "a", "b", "b", "b", "b"]
    assert list(t["holds"]) == [True, True, False, None, None, True]
    assert list(t["basis"].fillna("-")) == ["stated", "-", "implied", "-", "extension", "stated"]
    assert list(t["n"].fillna(0)) == [5, 0, 7, 0, 5, 5] and t["ci_low"].iloc[0] == 1.5
    # the paper's side a stage wrote stays in the table: the quote and the derivation
    assert list(t["quote"].iloc[-1:]) == ["A is  faster\nthan B."] and t["derived"].iloc[-1] == "13 / 5"
    t = t.iloc[:-1]
    md = claims_table.to_markdown(pd.concat([t, claims_table.gather().iloc[-1:]]))
    assert '| quoted<br>*"A is faster than B."* | 2.6 (derived: 13 / 5) |' in md
    md = claims_table.to_markdown(t)
    assert md.startswith("# Claims: 4 findings (1 holds, 0 direction only, 1 inconclusive, 1 fails, "
                         "0 fails (negligible), 1 not measured); 1 checks (1 holds, 0 direction only, "
                         "0 inconclusive, 0 fails, 0 fails (negligible), 0 not measured)")
    assert "| > 1 (margin 5 %) |" in md
    assert "st\\|x" in md and "**fails**" in md and "**50% (warm)**" in md
    assert "tmpfs (not evictable)" in md and "not measured on this run: no disk tier" in md
    assert "| 2 [1.5, 2.5] n=5 |" in md and "| 0.5 [0.4, 0.6] n=7 |" in md
    # findings come first (failing ones on top, then inconclusive), then the checks
    assert md.index("| **fails** |") < md.index("| **inconclusive** | extension |") \
        < md.index("| holds | stated | S | F | st\\|x") < md.index("## Checks")
    # the csv keeps the new columns
    t.to_csv(tmp_path / "c.csv", index=False)
    assert {"basis", "ci_low", "ci_high", "n", "quote", "derived"} <= set(pd.read_csv(tmp_path / "c.csv").columns)


def test_gather_refuses_a_claims_file_with_a_bad_rule(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    monkeypatch.setenv(results.PIPELINE_ENV, "a")   # as dvc repro runs the stage
    c = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", kind="finding", interval=CI)
    results.StageResults("a").claims([{**c, "rule": "about 2"}])
    with pytest.raises(ValueError, match=r"claim 'x'.*not understood.*re-run the stage 'a'"):
        claims_table.gather()
    results.StageResults("a").claims([{**c, "kind": None}])
    with pytest.raises(ValueError, match="kind = None"):
        claims_table.gather()
    with pytest.raises(FileNotFoundError, match="run the stage 'zzz'"):
        claims_table.gather(["zzz"])


def test_json_writer_handles_numpy_and_nan(tmp_path):
    import numpy as np
    p = results.write_json(tmp_path / "m.json", {"a": np.float64(1.5), "b": float("nan"), "c": np.int64(2)})
    assert json.loads(p.read_text()) == {"a": 1.5, "b": None, "c": 2}


def test_closing_note_lists_the_verdicts_changed_against_the_run_before(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    assert claims_table.previous_table() is None
    monkeypatch.setenv(results.PIPELINE_ENV, "a")
    results.StageResults("a").claims([
        claims.claim("x", "S", "F", "s", 1.2, "u", "> 1", kind="finding", interval=ci(0.9, 1.5)),
        claims.claim("y", "S", "F", "s", 2.0, "u", "> 1", kind="finding", interval=ci(1.5, 2.5))])
    cur = claims_table.gather()
    prev = pd.DataFrame({"stage": ["a", "a", "a"], "id": ["x", "y", "gone"],
                         "verdict": ["holds", "holds", "fails"]})
    ch = claims_table.changes(prev, cur)
    assert list(zip(ch["id"], ch["before"], ch["after"])) == [("x", "holds", "inconclusive"),
                                                             ("gone", "fails", "–")]
    md = claims_table.to_markdown(cur, ch)
    assert "## Changed since the run before (2)" in md and "| x | a | holds | inconclusive | 1.2 [0.9, 1.5] n=5 |" in md
    assert "No verdict changed." in claims_table.to_markdown(cur, claims_table.changes(None, cur))
    # the run before's table is read from results/claims/claims.csv (kept by persist in dvc.yaml)
    (tmp_path / "results" / "claims").mkdir(parents=True)
    prev.to_csv(tmp_path / "results" / "claims" / "claims.csv", index=False)
    assert list(claims_table.previous_table()["id"]) == ["x", "y", "gone"]


def test_each_row_says_what_re_measuring_it_costs_on_the_reference_box(tmp_path, monkeypatch):
    """The cost columns (experiments.pipeline.forecast.cost, as the claims notebook adds them): the
    reference table's wall seconds of the stages `make repro STAGES="deepio"` re-runs (deepio,
    its report, the claims table), the data set it reads apart; the host named once; empty and
    said so without a reference table."""
    from experiments.pipeline import forecast

    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    out = lambda s: [{f"results/{s}": {"cache": False}}]   # noqa: E731
    st = {"gen": {"cmd": "x", "deps": ["n/g.ipynb"], "outs": [*out("gen"), {"data/gen": {"cache": False}}]},
          "deepio": {"cmd": "x", "deps": ["data/gen"], "outs": out("deepio")},
          "deepio_report": {"cmd": "x", "deps": ["results/deepio"], "outs": out("deepio_report")},
          "claims": {"cmd": "x", "deps": ["results/deepio_report/claims.json"], "outs": out("claims")}}
    for stage in ("deepio_report", "other"):
        monkeypatch.setenv(results.PIPELINE_ENV, stage)
        results.StageResults(stage).claims([
            claims.claim(f"x{stage}", "S", "F", "s", 2.0, "u", "> 1", kind="finding", interval=ci(1.5, 2.5)),
            claims.claim(f"c{stage}", "S", "F", "s", 1.0, "u", "> 0", kind="check")])
    t = claims_table.gather()
    md = claims_table.to_markdown(t)     # no reference table: not known, and said so
    assert "*re-measure*: not known here" in md and "## Re-measuring one claim" not in md
    rows = {s: forecast.reference_row(s, w, 0, 0.0, 0, None, "t")
            for s, w in (("gen", 30.0), ("deepio", 120.0), ("deepio_report", 30.0), ("claims", 6.0))}
    ref = forecast.Reference(rows, {"commit": "abc1234", "host": "refhost"})
    t = claims_table.with_costs(t, forecast.costs(set(t["stage"]), ref, st))
    assert list(t["remeasure_min"][:2]) == [2.6, 2.6] and list(t["data_min"][:2]) == [0.5, 0.5]   # (120 + 30 + 6) / 60
    assert list(t["remeasure_stages"][:2]) == ["deepio", "deepio"]
    assert t["remeasure_min"][2:].isna().all()      # a stage dvc.yaml lacks: no cost
    md = claims_table.to_markdown(t, reference=ref.meta)
    assert md.count("refhost") == 1 and "| 2.6 | deepio_report |" in md and "| – | other |" in md
    assert '| deepio_report | `make repro STAGES="deepio"` | 2.6 | 0.5 |' in md
    t.to_csv(tmp_path / "c.csv", index=False)
    assert {"remeasure_min", "data_min", "remeasure_stages"} <= set(pd.read_csv(tmp_path / "c.csv").columns)
