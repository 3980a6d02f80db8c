"""The plan counts a run's length as well as the runs (issue 64: runs that cost what they
measure): a shorter run costs its set-up and fewer steps; the workload rows count the
configurations they run; an inconclusive row without an interval says what would give one."""
import pandas as pd
import pytest

from experiments.pipeline import forecast
from experiments.verdicts.verdict import claim
from experiments.statistics.stats import MIN_N

P = {"unet3d": {"train": {"epochs": 4}, "sweep": {"batch_sizes": [1, 2, 4], "ranks": [1, 2], "runs": 3}},
     "bert": {"train": {"steps": 20}, "sweep": {"batch_sizes": [1, 2, 4], "ranks": [1, 2], "runs": 3}},
     "dlrm": {"train": {"steps": 20}, "sweep": {"batch_sizes": [512, 2048, 8192], "ranks": [1, 2], "runs": 3}},
     "workload_sleep": {"workloads": ["unet3d", "bert", "dlrm"], "ranks": None, "batch_sizes": "ends",
                        "fig_a3": {"modes": ["none", "sleep"], "ranks": [1]}},
     "workload_random": {"workloads": ["unet3d", "bert", "dlrm"], "ranks": [1], "batch_sizes": "ends"},
     "traced_comparison": {"points": {"bert": {"ranks": 2}, "dlrm": {"ranks": 2}},
                           "overrides": {"bert": {"train": {"steps": 30}}}}}


def _with(**changes):
    import copy

    p = copy.deepcopy(P)
    for path, v in changes.items():
        d = p
        *head, last = path.split("__")
        for k in head:
            d = d[k]
        d[last] = v
    return p


def test_the_workload_rows_count_the_configurations_they_run():
    # the sleep row: 3 workloads x 2 ranks x 2 batch sizes, as many real runs beside them, and Fig
    # A.3's 2 modes x 1 rank x 2; the random row and its real runs likewise
    assert forecast.size_of("workload_sleep", P) == (2 * 12 + 4) * 3
    assert forecast.size_of("workload_sleep", _with(workload_sleep__ranks=[1])) == (2 * 6 + 4) * 3
    assert forecast.size_of("workload_random", P) == 2 * 6 * 3
    assert forecast.size_of("workload_random", _with(workload_random__batch_sizes="largest")) == 2 * 3 * 3


def test_a_shorter_run_saves_its_steps_not_its_set_up():
    ref = forecast.Reference({"bert": {"stage": "bert", "runs": 18.0, "size": 18.0, "run_s": 20.0, "fixed_s": 10.0,
                                       "wall_s": 370.0, "cpu_share": 1.0, "bytes": 0, "source": "",
                                       "unit_share": 0.25}}, {}, P)
    same = forecast.forecast("bert", ref, P, 1.0)
    assert same.seconds == pytest.approx(18 * 20 + 10) and "as long" not in same.note
    half = forecast.forecast("bert", ref, _with(bert__train__steps=10), 1.0)
    assert half.run_s == pytest.approx(20 * (0.75 + 0.25 * 0.5)) and "0.50 x as long" in half.note
    assert "UNKNOWN" not in half.note   # the length rule reads the steps: forecast, not unknown
    ref.rows["bert"]["unit_share"] = None   # no set-up split recorded: said, not guessed
    assert "UNKNOWN run length" in forecast.forecast("bert", ref, _with(bert__train__steps=10), 1.0).note
    # the traced comparison's overrides set its passes' length, the workload's own train the rest
    assert forecast.length_of("traced_comparison", P) == {"bert": 30.0, "dlrm": 20.0}
    assert forecast.length_ratio({"bert": 15.0, "dlrm": 10.0}, {"bert": 30.0, "dlrm": 20.0}) == 0.5


def test_the_unit_share_counts_one_ranks_steps_of_a_run(tmp_path):
    f = tmp_path / "variance.csv"
    pd.DataFrame({"quantity": ["x", "x", "y"], "configuration": ["ranks=1, b=1", "ranks=2, b=1", "ranks=1, b=1"],
                  "runs": [3, 3, 3], "units": [10, 20, 10], "run_s": [10.0, 10.0, 10.0],
                  "unit_s": [0.5, 0.5, 0.5], "setup_s": [5.0, 0.0, 5.0]}).to_csv(f, index=False)
    # 10 x 0.5 = 5 s of a 10 s run; the 2-rank run's 20 units are 10 steps a rank: 5 s too
    assert forecast.unit_share(f) == pytest.approx(0.5)
    assert forecast.unit_share(f, runs_s=6 * 20.0) == pytest.approx(0.25)   # a stage run of 20 s
    assert forecast.unit_share(tmp_path / "missing.csv") is None


def test_the_reference_table_keeps_its_head_once(tmp_path):
    ref = forecast.Reference({"bert": {"stage": "bert", "runs": 1.0, "size": 1.0, "run_s": 1.0, "fixed_s": 0.0,
                                       "wall_s": 1.0, "cpu_share": None, "bytes": 0, "source": "",
                                       "unit_share": 0.3}}, {"commit": "abc", "cpu_s": 1.0, "io_s": 1.0}, None)
    path = tmp_path / "t.csv"
    forecast.write_reference(ref, path)
    forecast.write_reference(forecast.read_reference(path), path)
    text = path.read_text()
    assert text.count("Re-record on the reference box") == 1
    assert forecast.read_reference(path).rows["bert"]["unit_share"] == 0.3


def test_an_inconclusive_row_without_an_interval_says_what_would_give_one():
    c = claim("x", "s", "f", "st", 1.2, "x", "> 1", kind="finding", basis="stated")
    assert c["verdict"] == "inconclusive"
    assert "at least 2 independent samples" in c["note"] and f"a median's 95 % interval {MIN_N}" in c["note"]


def test_every_stage_with_a_length_rule_has_a_size_rule_and_reads_its_length_from_params():
    from experiments import stages

    with_length = [s.name for s in stages.STAGES if s.length]
    assert {"unet3d", "bert", "dlrm", "workload_sleep", "workload_random", "traced_comparison"} <= set(with_length)
    assert all(stages.BY_NAME[n].size for n in with_length)
    assert "bert.train.steps" in forecast.counted("bert", P)
