"""The one figure style: the layout check and the host stamp on tiny figures."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402

from experiments.figures import style  # noqa: E402


def test_overlapping_labels_are_reported_and_a_clean_figure_is_not():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2], [1, 2])
    assert style.layout_problems(fig) == []
    ax.text(1.5, 1.5, "a long label here")
    ax.text(1.5, 1.5, "another long label")
    assert style.layout_problems(fig)
    plt.close(fig)


def test_a_closed_figure_can_still_be_stamped_and_checked():
    """Jupyter's inline backend closes a cell's figures; a later cell saving one must work."""
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2], [1, 2])
    plt.close(fig)
    FigureCanvasBase(fig)  # what a closed figure can be left with
    style.stamp_host(fig)
    assert any(t.get_text().startswith("host: ") for t in fig.texts)
    assert style.layout_problems(fig) == []


def test_log_axis_labels_do_not_crowd_within_a_decade():
    for hi in (1.5, 30.0, 1e4):
        fig, ax = plt.subplots(figsize=(3, 2.5))
        ax.plot(np.linspace(1, 4, 8), np.geomspace(1000, 1000 * hi, 8))
        style.log_axis(ax, "y")
        fig.canvas.draw()
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert 1 <= len(labels) <= 8, labels
        assert style.layout_problems(fig) == [], hi
        plt.close(fig)


def test_a_title_wider_than_its_panel_clears_a_tick_on_the_top_edge():
    """CI failure of stop 37: bars whose autoscaled top lands on a tick (286 -> 0..300.3) put
    the tick label half above the axes, under a title wider than the panel."""
    style.apply()
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.bar([0], [286.0])
    ax.set_title("a title much wider than this narrow panel is")
    fig.tight_layout()
    assert abs(ax.get_ylim()[1] - 300.3) < 1e-6 and 300 in ax.get_yticks()   # the tick on the edge
    assert style.layout_problems(fig) == []
    plt.close(fig)


def test_the_fio_ceiling_label_stays_inside_its_panel():
    """CI failure of stop 37: a fio ceiling at the top of the bars drew its label into the title."""
    import pandas as pd

    from experiments.chien import tfdata_read_report as R

    style.apply()
    rows = [dict(variant=v, tier="mem", threads=t, images_per_s=y, images_per_s_ci_low=0.9 * y,
                 images_per_s_ci_high=1.1 * y, images_per_s_max=1.1 * y, mean_image_bytes=1e5)
            for v in ("read_only", "raw") for t, y in ((1, 100), (2, 120), (4, 140), (8, 160))]
    fio = pd.DataFrame([dict(tier="mem", job="randread", bw_MBps=160 * 1.1 * 1.05 * 1e5 / 1e6)])
    fig = R.plot_scaling(pd.DataFrame(rows), fio, "read_only", "t")
    assert style.layout_problems(fig) == []
    plt.close(fig)
