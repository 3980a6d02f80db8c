"""The variance table of a measuring stage (experiments.repeats.variance): between-run and
within-run variance per configuration, the costs of each level, Kalibera and Jones's units per run."""

import numpy as np
import pandas as pd
import pytest

from experiments.repeats import variance


def _runs(between_sd, within_sd, runs=8, units=50, seed=0):
    rng = np.random.default_rng(seed)
    rows, steps = [], []
    for r in range(runs):
        m = 1.0 + between_sd * rng.standard_normal()
        rows.append({"run": r, "config": "A", "warmup": False, "run_s": 10.0, "x": m})
        steps += [{"run": r, "step_ns": 0.1e9, "t": m + within_sd * rng.standard_normal()} for _ in range(units)]
    return pd.DataFrame(rows), pd.DataFrame(steps)


def test_between_and_within_run_variance_are_told_apart():
    rows, steps = _runs(0.2, 0.05)
    t = variance.table(rows, ["config"], ["x"], steps, ["t"], "step_ns").set_index("quantity")
    assert t.loc["t", "runs"] == 8 and t.loc["t", "units"] == 50
    assert t.loc["t", "within_var"] == pytest.approx(0.05 ** 2, rel=0.3)
    assert t.loc["t", "between_var"] == pytest.approx(0.2 ** 2, rel=0.8)
    assert t.loc["t", "between_share"] > 0.9          # almost all of the spread is between runs
    assert t.loc["t", "unit_s"] == pytest.approx(0.1) and t.loc["t", "setup_s"] == pytest.approx(5.0)
    # runs that vary much between each other want few units each; runs that barely do, many
    few = t.loc["t", "units_kj"]
    quiet = variance.table(*_runs(0.005, 0.2)[:1], ["config"], [], _runs(0.005, 0.2)[1], ["t"], "step_ns")
    assert few < 5 and (quiet["units_kj"].iloc[0] is None or quiet["units_kj"].iloc[0] > few)
    assert t.loc["x", "between_var"] == pytest.approx(np.var(rows["x"], ddof=1))


def test_units_kj_is_undefined_without_variation_between_runs():
    assert variance.units_kj(5.0, 0.1, 0.01, 0.0) is None
    assert variance.units_kj(5.0, 0.1, 0.01, 0.01) == pytest.approx(np.sqrt(50))


def test_summary_reads_every_stages_table_and_the_cli_refuses_a_missing_folder(tmp_path, capsys):
    rows, steps = _runs(0.2, 0.05)
    (tmp_path / "stage_a").mkdir()
    variance.table(rows, ["config"], ["x"], steps, ["t"], "step_ns").to_csv(tmp_path / "stage_a" / "variance.csv", index=False)
    s = variance.summary(tmp_path).set_index("quantity")
    assert list(s["stage"]) == ["stage_a", "stage_a"] and s.loc["t", "runs"] == 8 and s.loc["t", "units"] == 50
    assert s.loc["t", "between_share"] > 0.9 and s.loc["t", "kj_defined"] == "1 of 1"
    assert variance.main(["--results", str(tmp_path)]) == 0 and "stage_a" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        variance.main(["--results", str(tmp_path / "nowhere")])
    assert "--results" in capsys.readouterr().err
