"""make replicate's comparison (experiments.replicate) on a tiny fake pair of results folders."""

import pytest
import yaml

from experiments import claims, replicate, results
from experiments.stats import Interval


def _write(root, monkeypatch, rows):
    monkeypatch.setenv("DLIO_ROOT", str(root))
    monkeypatch.setenv(results.PIPELINE_ENV, "blog_report")
    results.StageResults("blog_report").claims([
        claims.claim(i, "S", "F", "s", v, "u", "> 1", kind="finding", interval=Interval(lo, hi, 8, "t"))
        for i, v, lo, hi in rows] + [claims.claim("chk", "S", "F", "s", 1.0, "u", "> 0", kind="check")])
    return claims.gather()


def test_two_runs_compared_finding_by_finding(tmp_path, monkeypatch):
    first = _write(tmp_path / "a", monkeypatch, [
        ("same", 1.5, 1.3, 1.7), ("flip", 1.5, 1.3, 1.7), ("to_undecided", 1.5, 1.3, 1.7),
        ("apart", 1.2, 1.1, 1.3), ("negligible", 1.0, 0.99, 1.01), ("seeded", 1.4, 1.2, 1.6)])
    second = _write(tmp_path / "b", monkeypatch, [
        ("same", 1.6, 1.4, 1.8), ("flip", 0.8, 0.7, 0.9), ("to_undecided", 1.2, 0.9, 1.5),
        ("apart", 1.5, 1.4, 1.6), ("negligible", 1.005, 0.98, 1.02), ("seeded", 1.4, 1.2, 1.6)])
    t = replicate.compare(first, second).set_index("id")
    assert "chk" not in t.index and len(t) == 6
    # not measured again (a seeded computation, a stage not re-run): out of the share
    assert t.loc["seeded", "same"] and t.loc["seeded", "covers"] is None and not t.loc["same", "same"]
    assert t.loc["flip", "agree"] == False and t.loc["to_undecided", "agree"] == True  # noqa: E712
    assert t.loc["same", "covers"] and not t.loc["apart", "covers"] and t.loc["apart", "disjoint"]
    assert t.loc["negligible", "verdict_1"] == "fails (negligible)" and t.loc["negligible", "agree"]
    s = replicate.summary(t.reset_index())
    assert s == {"findings": 6, "flips": 1, "compared": 5, "covered": 2, "share": 0.4, "disjoint": 2,
                 "same": 1}
    md = replicate.markdown(t.reset_index())
    assert md.startswith("# Replication: 6 findings, 1 holds/fails flip(s); 2 of 5 first-run intervals")
    assert "1 with the same value and interval in both runs" in md and "| same samples |" in md
    assert "| blog_report | flip | 1.5 [1.3, 1.7] | holds | 0.8 [0.7, 0.9] | fails | **no** |" in md


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
