import json
import math

import pandas as pd
import pytest

from experiments import claims, results


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
                     paper_value=2.3, why_not="2 cores")
    assert c["holds"] is False and c["verdict"] == "fails"
    assert "fails the rule '> 1.5'" in c["note"] and "2 cores" in c["note"]
    nan = claims.claim("y", "S", "Fig 1", "s", our_value=math.nan, unit="x", rule="> 1",
                       why_not="no tracer here")
    assert nan["holds"] is None and nan["verdict"] == "not measured" and "no tracer here" in nan["note"]


def test_magnitude_is_a_second_verdict():
    kw = dict(id="x", source="S", figure="F", statement="s", unit="x", rule="> 1", paper_value=2.6)
    assert claims.claim(our_value=2.0, magnitude="within 2x", **kw)["verdict"] == "holds"
    c = claims.claim(our_value=1.1, magnitude="within 2x", why_not="fio: 1.9 GB/s", **kw)
    assert (c["holds"], c["magnitude_holds"], c["verdict"]) == (True, False, "direction only")
    assert c["ratio"] == pytest.approx(1.1 / 2.6) and "fio: 1.9 GB/s" in c["note"]
    assert claims.claim(our_value=2.9, magnitude="within 20%", **kw)["magnitude_holds"] is True


def test_bad_rules_fail_without_data_too():
    with pytest.raises(ValueError, match="not understood"):
        claims.claim("x", "S", "F", "s", None, "u", "about 3")
    with pytest.raises(ValueError, match="needs a numeric paper_value"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", magnitude="within 2x")
    with pytest.raises(ValueError, match="kind"):
        claims.claim("x", "S", "F", "s", 1.0, "u", "> 0", kind="guess")


def test_warm_runs_are_marked():
    c = claims.claim("x", "S", "F", "s", 2.0, "u", "> 1", resident_fraction=0.4)
    assert c["cold"] is False and "not a cold run: 40%" in c["note"]


def test_results_writer_is_atomic_and_cleans(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    out = results.StageResults("s")
    out.summary(pd.DataFrame({"a": [1]}))
    out.claims([claims.claim("x", "S", "F", "s", 2.0, "u", "> 1")])
    (out.dir / "keep.ipynb").write_text("{}")
    with pytest.raises(RuntimeError):
        results.atomic_write(out.path("metrics.json"), lambda p: (_ for _ in ()).throw(RuntimeError()))
    assert not out.path("metrics.json").exists()
    assert not [f for f in out.dir.iterdir() if f.name.endswith(".tmp")]
    results.StageResults("s")  # a new run of the stage removes the old results, not the notebook
    assert sorted(f.name for f in out.dir.iterdir()) == ["keep.ipynb"]


def test_gather_and_markdown(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    for stage, c in (("a", claims.claim("x", "S", "F", "st|x", 2.0, "u", "> 1")),
                     ("b", claims.claim("y", "S", "F", "st", 0.5, "u", "> 1"))):
        monkeypatch.setenv(results.PIPELINE_ENV, stage)   # as dvc repro runs each stage
        results.StageResults(stage).claims([c])
    t = claims.gather()
    assert list(t["stage"]) == ["a", "b"] and list(t["holds"]) == [True, False]
    md = claims.to_markdown(t)
    assert md.startswith("# Claims: 2 findings (1 holds, 1 fails, 0 not measured)")
    assert "st\\|x" in md and "**fails**" in md


def test_json_writer_handles_numpy_and_nan(tmp_path):
    import numpy as np
    p = results.write_json(tmp_path / "m.json", {"a": np.float64(1.5), "b": float("nan"), "c": np.int64(2)})
    assert json.loads(p.read_text()) == {"a": 1.5, "b": None, "c": 2}
