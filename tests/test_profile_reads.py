"""Only what is read is measured (issue 64): every configuration a measuring stage of the default
profile runs is selected by a finding's `compares` (the declarations, as the claim_rules stage
extracts them) or drawn by a figure its report declares (`DRAWS`; experiments.review.unread).
A configuration nothing reads costs runs and decides nothing: the test lists it and fails."""

from __future__ import annotations

import pytest

from experiments.pipeline import profile
from experiments.review import unread as U


@pytest.fixture(scope="module")
def default():
    return profile.render("default")


def test_every_configuration_of_the_default_profile_is_read(default):
    got = U.unread(default)
    listing = "\n".join(f"  {s}: {c}" for s, cs in got.items() for c in cs)
    assert not got, ("configurations of profiles/default.yaml that no finding compares and no figure draws "
                     "(remove them from the profile, or declare the figure that draws them in its report's "
                     f"DRAWS, or the finding that compares them):\n{listing}")


def test_the_paper_profile_reads_what_it_measures_too():
    """The paper profile's larger sweeps (more P, more threads) are read as well."""
    got = U.unread(profile.render("paper"))
    assert not got, got


def test_a_configuration_nothing_reads_is_listed(default):
    """The check can fail: with one finding comparing BERT's pass and no figure, the traced
    comparison's UNET3D, DLRM and RetinaNet passes are listed, and nothing else of that stage."""
    findings = {"traced_comparison": [{"id": "x", "compares": {"workload": "bert"}}]}
    got = U.unread(default, findings=findings, draws={})
    assert got["traced_comparison"] == [{"workload": "unet3d"}, {"workload": "dlrm"}, {"workload": "retinanet"}]


def test_the_memory_tier_of_lmdbio_is_read_by_its_figure_alone(default):
    """No LMDBIO finding compares the memory tier (they judge the storage tier); Fig 2's panel
    of each tier draws it. Without the figure's declaration those 40 runs would be unread."""
    got = U.unread(default, draws={})
    assert got["lmdbio"] and {c["tier"] for c in got["lmdbio"]} == {"mem"}
    assert "lmdbio" not in U.unread(default)


def test_named_values_fill_from_the_profile_and_id_fields_match_every_value(default):
    names = U.context(default)
    assert names["storage_tier"] == ["disk"]   # the first tier not under /dev/shm
    assert U._selects({"tier": "disk"}, {"tier": "{storage_tier}"}, names)
    assert not U._selects({"tier": "mem"}, {"tier": "{storage_tier}"}, names)
    assert U._selects({"tier": "mem"}, {"tier": "{tier}"}, names)            # an id's field: every tier
    assert not U._selects({"threads": 2}, {"threads": [1, 8]}, names)
    assert U._selects({"threads": 8}, {"threads": [1, "{threads}"]}, names)


def test_each_declared_figure_selects_configurations_that_exist(default):
    """A DRAWS entry with a misspelt stage, key or value would read nothing and hide nothing:
    each must name a measuring stage, its keys, and select at least one configuration."""
    configs = U.configurations(default)
    names = U.context(default)
    for fig, sel in U.figure_draws().items():
        for stage, s in sel.items():
            assert stage in configs, f"figure {fig}: {stage!r} is not a measuring stage"
            keys = set().union(*configs[stage])
            assert set(s) <= keys, f"figure {fig}: {sorted(set(s) - keys)} not keys of {stage}"
            assert any(U._selects(c, s, names) for c in configs[stage]), f"figure {fig}: selects nothing of {stage}"
