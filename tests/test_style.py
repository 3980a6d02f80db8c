"""The one figure style: the layout check and the host stamp on tiny figures."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402

from experiments import style  # noqa: E402


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
