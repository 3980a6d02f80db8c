"""The smoke profile's budget, as its header states it: the smoke run proves that every code path
runs once and measures nothing, so a sweep in it holds one value where a second would run the
same code, and at most two where the code differs (one rank and two: the barrier and sharding;
a memory tier and a disk tier: eviction). This test reads the smoke profile as the tests run it
(laid over default.yaml, so a sweep added to the default and not trimmed here is caught too)
and fails when a sweep grows past that, one parameter at a time."""

from __future__ import annotations

import pytest

from experiments.pipeline import profile

# Lists that are not sweeps of one quantity: each entry is its own code path (a read strategy,
# a side of the comparison, a workload) or a shape (layer widths), so their length is the
# number of code paths and not a budget. A new entry here needs the reason beside it.
CODE_PATH_LISTS = {
    "lmdbio.strategies": "each strategy is its own reader",
    "tfdata_read.variants": "full pipeline, read-only, raw reads: three programs",
    "alexnet.prefetch": "prefetch 0 vs 1: the overlap is the finding's code path",
    "workload_sleep.workloads": "three workloads, three data paths",
    "workload_random.workloads": "three workloads, three data paths",
    "workload_sleep.fig_a3.modes": "preprocessing none vs sleep: two step functions",
    "traced_comparison.sides": "real, emulator, DLIO: three programs (sleep is the real side's code); "
                               "fixed: the emulator on RetinaNet's fixed-size data (its own data set)",
    "traced_comparison.max_accelerators.workloads": "RetinaNet only: the one workload searched",
    "dlrm.model.bottom_mlp": "layer widths, not a sweep",
    "dlrm.model.top_mlp": "layer widths, not a sweep",
    "lmdbio.datasets": "record sizes of two kinds: small records share pages, large ones overflow",
}
MAX_PER_SWEEP = 2          # one rank and two; a memory tier and a disk tier
MAX_WORKLOAD_CONFIGS = 4   # ranks 1, 2 x two batch sizes, for the one workload whose fit gets a B term


def _leaves(x, path=""):
    """(dotted path, value) of every non-mapping value, lists included as one value."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, f"{path}.{k}" if path else k)
    else:
        yield path, x


def _lists(x):
    return ((p, v) for p, v in _leaves(x) if isinstance(v, list))


@pytest.fixture(scope="module")
def smoke():
    return profile.render("smoke")


def test_no_sweep_in_the_smoke_profile_has_more_than_two_values(smoke):
    over = {p: v for p, v in _lists(smoke) if p not in CODE_PATH_LISTS and len(v) > MAX_PER_SWEEP}
    assert not over, (f"smoke sweeps over the budget of {MAX_PER_SWEEP} values (profiles/smoke.yaml "
                      f"header; trim them there): {over}")


def test_the_smoke_profile_repeats_nothing(smoke):
    """One run per configuration: no warm-up, no repeat, one pass of the traced comparison (the
    default and paper profiles measure; a count the smoke profile does not set is the default's)."""
    bad = {p: v for p, v in _leaves(smoke)
           if (p.endswith(".runs") and v != 1) or (p.endswith(".warmup") and v != 0)
           or (p.endswith(".runs") and v != 1)
           or (p.endswith(".train_runs") and v != 1)}
    assert not bad, f"smoke profile runs: {bad}"


def test_each_workload_runs_few_configurations(smoke):
    for w in ("unet3d", "bert", "dlrm"):
        sweep = smoke[w]["sweep"]
        n = len(sweep["ranks"]) * len(sweep["batch_sizes"])
        assert n <= MAX_WORKLOAD_CONFIGS, f"{w}.sweep runs {n} (ranks x batch) configurations in smoke"
        assert sorted(sweep["ranks"]) == [1, 2], f"{w}.sweep.ranks: one rank and two (barrier, sharding)"
    batch_sweeps = [w for w in ("unet3d", "bert", "dlrm") if len(smoke[w]["sweep"]["batch_sizes"]) > 1]
    assert len(batch_sweeps) == 1, f"one workload sweeps its batch size in smoke (the fit's B term): {batch_sweeps}"


def test_the_budget_test_sees_a_sweep_that_grew():
    """The rule itself can fail: a third thread count is caught."""
    grown = {"tfdata_read": {"threads": [1, 2, 4]}}
    assert [p for p, v in _lists(grown) if len(v) > MAX_PER_SWEEP] == ["tfdata_read.threads"]


# The smoke profile's run lengths: the fewest steps each code path needs (issue 64: the same
# levers as the default's run lengths). UNET3D 2 epochs (the first is left out of the steady
# steps), BERT 3 steps (one left out, two for a spread), DLRM 4 (an evaluation after 2), the
# traced comparison's passes the same; 2 checkpoints (a write after a write), 4 AlexNet steps (a
# checkpoint every 2), 32 blog images, 2 DeepIO epochs. A default that grows leaks into smoke
# wherever smoke does not set the key: this catches it.
SMOKE_RUN_LENGTHS = {
    "unet3d.train.epochs": 2, "bert.train.steps": 3, "dlrm.train.steps": 4, "retinanet.train.epochs": 2,
    "traced_comparison.overrides.unet3d.train.epochs": 2, "traced_comparison.overrides.bert.train.steps": 3,
    "traced_comparison.overrides.dlrm.train.steps": 4,
    "alexnet_checkpoint.iterations": 4, "llm_checkpoint.checkpoints": 2, "llm_checkpoint.burst_buffer.checkpoints": 2,
    "blog.images": 32, "deepio.epochs": 2,
}


def _over_lengths(params) -> dict:
    got = dict(_leaves(params))
    return {k: got.get(k) for k, cap in SMOKE_RUN_LENGTHS.items() if got.get(k) is None or got[k] > cap}


def test_the_smoke_runs_are_as_short_as_their_code_paths_allow(smoke):
    over = _over_lengths(smoke)
    assert not over, f"smoke run lengths over their floor {SMOKE_RUN_LENGTHS} (trim in profiles/smoke.yaml): {over}"


def test_the_run_length_check_sees_a_default_leaking_into_smoke(smoke):
    """The rule can fail: the default's traced DLRM pass (20 steps) laid over smoke is caught."""
    import copy

    grown = copy.deepcopy(smoke)
    grown["traced_comparison"]["overrides"]["dlrm"]["train"]["steps"] = 20
    assert list(_over_lengths(grown)) == ["traced_comparison.overrides.dlrm.train.steps"]
