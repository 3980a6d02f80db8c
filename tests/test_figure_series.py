"""A figure's series are its data: each figure that plots a summary table is drawn from a small
synthetic summary whose series have distinct known values, with data sets (panels) that list
their categories in different orders, and the line labelled X must carry X's values in every
panel; the figure must pass :func:`experiments.figures.style.series_problems` (one look per label and
one label per look across panels, every labelled series in a legend, no log axis over one x).

LMDBIO's Fig 2 drew each data set's strategies in the colour cycle's order of its rows while
its one legend came from the first row: the CIFAR row's LMDB line was labelled "(b) LMM"."""

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from experiments.figures import style  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _ci(df: pd.DataFrame, col: str) -> pd.DataFrame:
    return df.assign(**{f"{col}_ci_low": df[col] * 0.95, f"{col}_ci_high": df[col] * 1.05})


def _check(fig, expected):
    """Every labelled series of ``fig`` carries ``expected(title, label)`` = (x, y); returns how
    many series were checked."""
    ser = style.series(fig)
    for s in ser:
        x, y = expected(s["title"], s["label"])
        order = np.argsort(s["x"])
        assert np.allclose(s["x"][order], x), (s["title"], s["label"], s["x"], x)
        assert np.allclose(s["y"][order], y), (s["title"], s["label"], s["y"], y)
    assert style.series_problems(fig) == [], style.series_problems(fig)
    return len(ser)


def test_lmdbio_fig2_lines_are_their_strategies_in_every_row():
    from experiments.lmdbio import report

    strategies = ["lmdb", "lmm", "dio_prov", "coal", "stag"]
    orders = {"imagenet": strategies, "cifar": ["dio_prov", "lmdb", "stag", "lmm", "coal"]}
    Ps = [1, 2, 4, 8]
    secs = {(ds, s, p): (10 + 3 * i + 0.7 * j + (50 if ds == "cifar" else 0)) * (1 + 0.1 * p)
            for j, ds in enumerate(orders) for i, s in enumerate(strategies) for p in Ps}
    rows = []
    for ds, order in orders.items():
        for s, p in itertools.product(order, Ps):
            rows.append({"tier": "disk", "dataset": ds, "strategy": s, "P": p, "seconds": secs[(ds, s, p)],
                         "speedup_vs_lmdb": secs[(ds, "lmdb", p)] / secs[(ds, s, p)],
                         "cs_per_proc": 100 + 10 * strategies.index(s) + p, "cs_vol_per_proc": 1.0,
                         "cs_invol_per_proc": 1.0})
    summary = _ci(_ci(pd.DataFrame(rows), "seconds"), "speedup_vs_lmdb")
    fig = report.plot_fig2(summary, "disk")
    strategy_of = {v: k for k, v in report.LABELS.items()}

    def expected(title, label):
        ds, panel = title.split(": ")
        s = strategy_of[label]
        d = summary[(summary["dataset"] == ds) & (summary["strategy"] == s)].sort_values("P")
        col = {"(a) read time": "seconds", "(b) speed-up": "speedup_vs_lmdb", "(c) switches": "cs_per_proc"}[panel]
        return d["P"].to_numpy(float), d[col].to_numpy(float)

    assert _check(fig, expected) == 2 * 3 * 5
    # the series the speed-up panel must hold at 1.0 is the one labelled (a) LMDB, in both rows
    for s in style.series(fig):
        if s["title"].endswith("(b) speed-up") and s["label"] == report.LABELS["lmdb"]:
            assert np.allclose(s["y"], 1.0)


def test_tfdata_fig4_bars_are_their_tiers_values():
    from experiments.chien import tfdata_read_report as rep

    rows = []
    for tier, order in (("mem", [4, 1, 2]), ("disk", [2, 4, 1])):
        for t in order:
            v = (100 if tier == "mem" else 40) * t + 7
            rows.append({"variant": "full", "tier": tier, "threads": t, "images_per_s": v, "images_per_s_max": v * 1.1,
                         "mean_image_bytes": 110_000})
    reads = _ci(pd.DataFrame(rows), "images_per_s")
    fio = pd.DataFrame({"tier": ["mem", "disk"], "job": ["randread"] * 2, "bw_MBps": [5000.0, 30.0]})
    fig = rep.plot_scaling(reads, fio, "full", "Fig 4")
    seen = 0
    for ax in fig.axes:
        if not ax.get_title().startswith("tier "):
            continue
        tier = ax.get_title().removeprefix("tier ")
        want = reads[reads["tier"] == tier].sort_values("threads")
        bars = [c for c in ax.containers if hasattr(c, "patches")][0]
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(t) for t in want["threads"]]
        assert np.allclose([p.get_height() for p in bars.patches], want["images_per_s"])
        seen += 1
    assert seen == 2 and style.series_problems(fig) == []


def test_deepio_fig10_lines_are_their_mode_and_ratio_in_every_tier():
    from experiments.deepio import report

    combos = list(itertools.product(["ordered", "opportunistic"], [1.0, 0.5, 0.25]))
    rows = []
    for tier, order in (("mem", combos), ("disk", combos[::-1])):
        for (mode, r), p in itertools.product(order, [1, 2, 4]):
            v = (300 if tier == "mem" else 30) + 50 * (mode == "opportunistic") + 100 * r + 3 * p
            rows.append({"tier": tier, "mode": mode, "R": r, "P": p, "MBps": v, "MBps_max": v})
    loader = _ci(pd.DataFrame(rows), "MBps")
    fio = pd.DataFrame({"tier": [], "job": [], "bw_MBps": []})
    fig = report.plot_bandwidth(loader, fio)

    def expected(title, label):
        mode, r = label.split(", R = ")
        d = loader[(loader["tier"] == title.removeprefix("tier ")) & (loader["mode"] == mode)
                   & (loader["R"] == float(r))].sort_values("P")
        return d["P"].to_numpy(float), d["MBps"].to_numpy(float)

    assert _check(fig, expected) == 2 * 6


@pytest.mark.parametrize("which", ["tf_threads", "torch_workers"])
def test_blog_lines_are_their_tier_and_format(which):
    from experiments.blog import report

    rows = []
    for (fw, fmt, key), tier in itertools.product(
            (("tensorflow", "tfrecord", "threads"), ("tensorflow", "jpeg", "threads"), ("pytorch", "jpeg", "workers")),
            ("disk", "mem")):
        for n in ((4, 1, 2) if tier == "disk" else (1, 2, 4)):
            rows.append({"framework": fw, "format": fmt, "tier": tier, "cache": "cold", key: n,
                         "images_per_s": 10 * n + (100 if tier == "mem" else 0) + (5 if fmt == "jpeg" else 0)})
    summary = _ci(pd.DataFrame(rows), "images_per_s")
    if which == "tf_threads":
        fig, key = report.plot_tf_threads(summary), "threads"
    else:
        fig, key = report.plot_torch_workers(summary), "workers"

    def expected(title, label):
        parts = label.split()
        d = summary[(summary["tier"] == parts[0]) & summary[key].notna()]
        d = d[d["framework"] == ("tensorflow" if which == "tf_threads" else "pytorch")]
        if len(parts) > 1:
            d = d[d["format"] == parts[1]]
        d = d.sort_values(key)
        return d[key].to_numpy(float), d["images_per_s"].to_numpy(float)

    assert _check(fig, expected) == (4 if which == "tf_threads" else 2)


def test_the_check_names_a_label_drawn_in_two_colours_and_a_log_axis_over_one_x():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2], [1, 2], color="C0", label="(a) LMDB")
    b.plot([1, 2], [2, 1], color="C1", label="(a) LMDB")     # the same label, another colour
    b.plot([1, 2], [3, 3], color="C0", label="(b) LMM")      # C0 now stands for two labels
    b.plot([4], [1], "o", color="C2", label="lonely")
    b.set_xscale("log")
    a.legend()
    got = style.series_problems(fig)
    assert any("'(a) LMDB' is drawn in 2 looks" in p for p in got), got
    assert any("stands for 2 labels" in p and "(b) LMM" in p for p in got), got
    assert any("in no legend" in p and "lonely" in p for p in got), got
    c = plt.figure().add_subplot()
    c.plot([8], [1], "o", label="x")
    c.set_xscale("log")
    c.legend()
    assert any("log-scaled x axis with 1 x value" in p for p in style.series_problems(c.figure))
    # one point in a panel whose log x axis is shared with panels over several batch sizes: fine
    fig, (top, one) = plt.subplots(2, 1, sharex=True)
    top.plot([1, 4, 16], [1, 2, 3], "o-")
    one.plot([4], [2], "o")
    top.set_xscale("log")
    assert style.series_problems(fig) == []


def test_unfilled_steps_are_told_apart_by_their_edge():
    """Two unfilled stairs (a timeline's CPU rows) share the default face colour: their look is
    their line's colour."""
    fig, ax = plt.subplots()
    ax.stairs([1, 2, 3], [0, 1, 2, 3], color="#555555", label="CPU (machine)")
    ax.stairs([1, 2, 1], [0, 1, 2, 3], color="#7b2cbf", label="CPU (traced tree)")
    ax.legend()
    assert style.series_problems(fig) == []


def test_one_look_per_category_everywhere():
    assert style.category("strategy", "lmdb") == style.category("strategy", "lmdb")
    assert style.category("strategy", "lmdb")["color"] != style.category("strategy", "lmm")["color"]
    assert style.category("tier", "nfs") == style.category("tier", "nfs")       # a user's own tier: stable
    with pytest.raises(KeyError, match="unknown kind 'colour'"):
        style.category("colour", "red")
