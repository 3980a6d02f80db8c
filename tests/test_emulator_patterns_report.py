"""Notebook 50's figure and claim, from the package (experiments.emulator.patterns_report)."""

import numpy as np
import pandas as pd
import pytest


class _Pattern:
    def __init__(self, files):
        self._files = files

    def plan(self, seed=0):
        return self._files


def test_write_sizes_are_every_write_of_one_checkpoint_sorted():
    from experiments.emulator import patterns_report as pr
    p = _Pattern([("a.pt", [("write", 4096), ("writev", 64)]), ("b.pt", [("pwrite64", 1_000_000)])])
    assert list(pr.write_sizes(p)) == [64, 4096, 1_000_000]


def test_write_size_figure_has_a_cdf_panel_per_workload():
    import matplotlib.pyplot as plt

    from experiments.emulator import patterns_report as pr
    pats = {"unet3d": _Pattern([("m.pt", [("write", 10), ("write", 1000)])]),
            "dlrm": _Pattern([("d.pt", [("write", 5)] * 4)])}
    fig = pr.write_size_figure(pats)
    axes = fig.get_axes()
    assert [a.get_title() for a in axes] == ["unet3d: 2 writes, 0.00101 MB", "dlrm: 4 writes, 2e-05 MB"]
    y = axes[0].get_lines()[0].get_ydata()
    assert y[-1] == 1.0 and np.all(np.diff(y) >= 0)
    plt.close(fig)


@pytest.mark.parametrize("match,value,verdict_ok", [([True, True, True], 1.0, True), ([True, False, True], 2 / 3, False)])
def test_replay_claim_is_computed_from_the_check(match, value, verdict_ok):
    from experiments.emulator import patterns_report as pr
    [c] = pr.claims(pd.DataFrame({"workload": ["unet3d", "bert", "dlrm"], "match": match}), "strace", 2)
    assert c["id"] == "emulator-checkpoint-replay" and c["our_value"] == pytest.approx(value)
    # the thesis's benchmark broke its checkpoint into smaller writes (Sec 6.4), not one file only
    assert "broken up into multiple smaller writes" in c["note"] and "Table 5.2" in c["note"]
    assert "traced with strace" in c["note"]
    [none] = pr.claims(pd.DataFrame({"workload": [], "match": []}), "strace", 2)
    assert none["our_value"] is None or none["our_value"] != none["our_value"]


def test_notebook_51_grid_comes_from_the_emulator_section():
    from types import SimpleNamespace

    from experiments.settings.config import ConfigError
    from experiments.emulator import stage

    class Pt(dict):
        def model_dump(self):
            return dict(self)

    cfg = SimpleNamespace(emulator=SimpleNamespace(points={"bert": Pt(batch_size=2, accelerators=1),
                                                           "dlrm": Pt(batch_size=8, accelerators=2)}),
                          bert="bert-section", dlrm="dlrm-section")
    assert stage.points(cfg) == [
        {"workload": "bert", "section": "bert-section", "batch_size": 2, "accelerators": 1},
        {"workload": "dlrm", "section": "dlrm-section", "batch_size": 8, "accelerators": 2}]
    assert [p["workload"] for p in stage.points(cfg, ["dlrm"])] == ["dlrm"]
    with pytest.raises(ConfigError, match=r"workloads = \['resnet'\]; allowed: bert, dlrm"):
        stage.points(cfg, ["resnet"])
    assert stage.search_all({"dlrm": object()}, "/nonexistent", 0) == {}
