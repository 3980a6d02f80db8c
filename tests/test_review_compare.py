"""Two runs' claims tables compared (experiments.review.compare), as make compare-claims, make
replicate and make decide use it; make replicate's plan (experiments.review.replicate)."""

import pandas as pd
import pytest
import yaml

from experiments import claims
from experiments.output import results
from experiments.review import compare as C
from experiments.review import replicate
from experiments.statistics.stats import Interval
from experiments.claims import table as claims_table


def _write(root, monkeypatch, rows):
    monkeypatch.setenv("DLIO_ROOT", str(root))
    monkeypatch.setenv(results.PIPELINE_ENV, "blog_report")
    results.StageResults("blog_report").claims([
        claims.claim(i, "S", "F", "s", v, "u", "> 1", kind="finding", interval=Interval(lo, hi, 8, "t"))
        for i, v, lo, hi in rows] + [claims.claim("chk", "S", "F", "s", 1.0, "u", "> 0", kind="check")])
    return claims_table.gather()


def test_two_runs_compared_finding_by_finding(tmp_path, monkeypatch):
    first = _write(tmp_path / "a", monkeypatch, [
        ("same", 1.5, 1.3, 1.7), ("flip", 1.5, 1.3, 1.7), ("to_undecided", 1.5, 1.3, 1.7),
        ("apart", 1.2, 1.1, 1.3), ("negligible", 1.0, 0.99, 1.01), ("seeded", 1.4, 1.2, 1.6)])
    second = _write(tmp_path / "b", monkeypatch, [
        ("same", 1.6, 1.4, 1.8), ("flip", 0.8, 0.7, 0.9), ("to_undecided", 1.2, 0.9, 1.5),
        ("apart", 1.5, 1.4, 1.6), ("negligible", 1.005, 0.98, 1.02), ("seeded", 1.4, 1.2, 1.6)])
    t = C.compare(first, second).set_index("id")
    assert "chk" not in t.index and len(t) == 6
    # not measured again (a seeded computation, a stage not re-run): out of the share
    assert t.loc["seeded", "same"] and t.loc["seeded", "covers"] is None and not t.loc["same", "same"]
    assert t.loc["flip", "change"] == "flip" and t.loc["to_undecided", "change"] == "to inconclusive"
    assert t.loc["same", "covers"] and not t.loc["apart", "covers"] and t.loc["apart", "disjoint"]
    assert t.loc["negligible", "verdict_1"] == "fails (negligible)" and pd.isna(t.loc["negligible", "change"])
    s = C.summary(t.reset_index())
    assert {k: s[k] for k in ("findings", "flips", "compared", "covered", "share", "disjoint", "same")} == {
        "findings": 6, "flips": 1, "compared": 5, "covered": 2, "share": 0.4, "disjoint": 2, "same": 1}
    md = C.markdown(t.reset_index(), first, second)
    assert "6 findings in both. **1 holds/fails flip(s)**" in md and "2 of 5 first-run intervals" in md
    assert "**2 disjoint pair(s)**" in md and "1 with the same value and interval in both" in md
    assert "| blog_report | flip | flip | 1.5 [1.3, 1.7] | holds | 0.8 [0.7, 0.9] | fails |" in md
    assert "| blog_report | same |" not in md          # unchanged, covered, not disjoint: left out
    assert "| blog_report | same |" in C.markdown(t.reset_index(), every=True)


def test_plan_names_the_reports_and_refuses_unknown_stages():
    dvc = yaml.safe_load(open("dvc.yaml"))
    chosen, reports = replicate.plan(["blog", "lmdbio"], dvc)
    assert chosen == ["lmdbio", "blog"] and set(reports) == {"blog_report", "lmdbio_report"}
    chosen, reports = replicate.plan(["traced_comparison"], dvc)
    assert "traced_comparison" not in reports and "workload_validation" in reports
    assert replicate.plan([], dvc)[0] == list(replicate.MEASURING)
    with pytest.raises(SystemExit, match="blog_report not a measuring stage"):
        replicate.plan(["blog_report"], dvc)


def test_into_this_checkout_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    (tmp_path / "dvc.yaml").write_text(open("dvc.yaml").read())
    with pytest.raises(SystemExit, match="neither this checkout"):
        replicate.run(["blog"], tmp_path)


def _table(path, rows):
    """A tiny claims.csv: (id, value, low, high) findings on '> 1' (5 % margin), None: not measured."""
    import pandas as pd

    cs = [claims.claim(i, "S", "F", "s", v, "u", "> 1", kind="finding",
                       interval=Interval(lo, hi, 8, "t") if v is not None else None,
                       why_not=None if v is not None else "not here")
          for i, v, lo, hi in rows] + [claims.claim("chk", "S", "F", "s", 1.0, "u", "> 0", kind="check")]
    pd.DataFrame(cs).assign(stage="blog_report").to_csv(path, index=False)
    return path


def test_compare_two_claims_tables_splits_flips_from_moves(tmp_path, capsys):
    """``python -m experiments.review.compare A.csv B.csv``: a holds/fails flip whose two
    intervals both touch the margin's edge (1.05) is named as such, one far from every edge is
    not; moves to and from inconclusive are apart from the flips; unchanged findings are left out."""
    a = _table(tmp_path / "a.csv", [("edge_flip", 1.1, 1.06, 1.2), ("far_flip", 1.7, 1.5, 2.0),
                                    ("to_inc", 1.5, 1.3, 1.7), ("from_inc", 1.0, 0.8, 1.3),
                                    ("stay", 1.5, 1.3, 1.7), ("gone", 1.5, 1.3, 1.7)])
    b = _table(tmp_path / "b.csv", [("edge_flip", 1.0, 0.97, 1.04), ("far_flip", 0.6, 0.5, 0.8),
                                    ("to_inc", 1.2, 0.9, 1.5), ("from_inc", 0.7, 0.6, 0.8),
                                    ("stay", 1.6, 1.4, 1.8), ("gone", None, None, None)])
    import pandas as pd

    t = C.compare(pd.read_csv(a), pd.read_csv(b)).set_index("id")
    assert set(t.index[t["change"].notna()]) == {"edge_flip", "far_flip", "to_inc", "from_inc", "gone"}
    assert t.loc["edge_flip", "change"] == "flip" and t.loc["edge_flip", "edge"] == pytest.approx(1.05)
    assert t.loc["edge_flip", "verdict_2"] == "fails (negligible)"
    assert t.loc["far_flip", "change"] == "flip" and pd.isna(t.loc["far_flip", "edge"])
    assert t.loc["to_inc", "change"] == "to inconclusive" and t.loc["from_inc", "change"] == "from inconclusive"
    assert t.loc["gone", "change"] == "measured in one"
    assert C.edges("> 1", 0.05) == pytest.approx([0.95, 1.0, 1.05])
    assert C.edges("between 2 and 3", None) == [2.0, 3.0]
    out = tmp_path / "stability.md"
    assert C.main([str(a), str(b), "--out", str(out)]) == 0
    md = capsys.readouterr().out
    assert md == out.read_text()
    assert "**2 holds/fails flip(s)**, 1 of them with both intervals at a margin's edge" in md and "**1 not**" in md
    assert "1 moved to and 1 from inconclusive" in md
    assert "| blog_report | far_flip | flip | 1.7 [1.5, 2] | holds | 0.6 [0.5, 0.8] | fails |" in md and "**none**" in md
    assert "| blog_report | stay |" not in md
    assert "| holds | 5 | 1 |" in md and "| inconclusive | 1 | 1 |" in md   # the count by verdict in each table
    with pytest.raises(SystemExit, match="no such file"):
        C.main([str(a), str(tmp_path / "missing.csv")])
