"""The one figure style: seaborn's theme, units on axes, and the host in the corner."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns

from ..host import envinfo

PALETTE = "colorblind"
_STAMP = "_dlio_host_stamp"


def apply(context: str = "notebook") -> None:
    """Set the project's figure style (call once per notebook)."""
    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    # titlepad 10 pt: a y tick label that lands on the axes' top edge reaches half its height
    # above it, and a title wider than its panel (6 pt by default) then sits on it
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "axes.titleweight": "bold",
                         "axes.titlepad": 10.0})


def _drawn_renderer(fig):
    """Draw ``fig`` and return its renderer. A figure whose pyplot window was closed (Jupyter's
    inline backend closes each cell's figures) is left with a bare canvas that cannot draw;
    it gets an Agg canvas, the one savefig uses for PNG."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def stamp_host(fig, text: str | None = None) -> None:
    """Write which host made the figure under its bottom-right corner (once), below every
    other artist, so it never sits on a label (the figure is saved with a tight box).
    ``text``: the stamp (:func:`experiments.output.provenance.label`: who measured what it draws);
    default ``host: <this box>``."""
    if getattr(fig, _STAMP, False):
        return
    bb = fig.get_tightbbox(_drawn_renderer(fig))   # inches
    w, h = fig.get_size_inches()
    fig.text(min(bb.x1 / w, 1.0), bb.y0 / h - 0.02 / h, text or f"host: {envinfo.host_label()}",
             ha="right", va="top", fontsize=7, color="0.45")
    setattr(fig, _STAMP, True)


def legend_beside(ax, axes=None, fontsize: int = 8, **kw):
    """One legend to the right of ``ax``, outside its plotting area, so it never covers data;
    entries gathered (once per label) from ``axes`` (default: ``ax`` alone). Call before
    ``fig.tight_layout()``, which then makes room for it."""
    handles, labels = [], []
    for a in (axes if axes is not None else [ax]):
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0,
                     fontsize=fontsize, **kw)


def _short_number(v: float, digits: int = 3) -> str:
    """A tick label: ``digits`` significant digits, thousands separated, no exponent between
    1e-4 and 1e9."""
    import math

    if v == 0 or not 1e-4 <= abs(v) < 1e9:
        return f"{v:.{max(2, digits - 1)}g}"
    r = float(f"{v:.{digits}g}")   # rounded to ``digits`` significant digits
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(r))))
    return f"{r:,.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{r:,.0f}"


def _distinct_labels(values) -> list[str]:
    """Labels for ``values`` with the fewest significant digits (3 to 8) that tell them apart."""
    for d in range(3, 9):
        labels = [_short_number(v, d) for v in values]
        if len(set(labels)) == len(labels):
            return labels
    return labels


class _FewLogTicks:
    """Major ticks of a log axis chosen when the axis is drawn, from its view limits (shared
    axes included): decades over two decades or more, 1-2-5 of each decade over one to two,
    and a few plain numbers spread in log space within a decade."""

    def __new__(cls):
        from matplotlib import ticker

        class Locator(ticker.Locator):
            def __call__(self):
                vmin, vmax = self.axis.get_view_interval()
                return self.tick_values(vmin, vmax)

            def tick_values(self, vmin, vmax):
                import numpy as np

                vmin, vmax = sorted((vmin, vmax))
                if vmin <= 0 or vmax / vmin >= 10:   # decades, or 1-2-5 of each; only those shown
                    subs = (1.0,) if vmin <= 0 or vmax / vmin >= 100 else (1.0, 2.0, 5.0)
                    ticks = ticker.LogLocator(base=10, subs=subs).tick_values(max(vmin, 1e-300), vmax)
                    return [t for t in ticks if vmin <= t <= vmax]
                cand = [t for t in ticker.MaxNLocator(nbins=4).tick_values(vmin, vmax) if vmin <= t <= vmax and t > 0]
                keep, gap = [], 0.2 * np.log(vmax / vmin)   # at least a fifth of the axis apart
                for t in cand:
                    if not keep or np.log(t / keep[-1]) >= gap:
                        keep.append(t)
                return keep

        return Locator()


def _ShortLabels():
    from matplotlib import ticker

    class Formatter(ticker.Formatter):
        def format_ticks(self, values):
            return _distinct_labels(values)

        def __call__(self, x, pos=None):
            return _short_number(x)

    return Formatter()


def log_axis(ax, axis: str = "y", base: int = 10) -> None:
    """A log scale on ``axis`` whose tick labels never crowd: matplotlib labels minor ticks when
    the data span less than a decade, and on a small panel those labels overlap. Here minor
    ticks carry no label and the major ticks follow the drawn range (:class:`_FewLogTicks`)."""
    from matplotlib import ticker

    getattr(ax, f"set_{axis}scale")("log", base=base)
    a = getattr(ax, f"{axis}axis")
    if base == 10:
        a.set_major_locator(_FewLogTicks())
        a.set_major_formatter(_ShortLabels())
    a.set_minor_formatter(ticker.NullFormatter())


def few_ticks(ax, axis: str = "x", n: int = 3) -> None:
    """At most ``n`` + 1 labelled ticks on a linear ``axis``, labels just precise enough to tell
    them apart: for small panels whose data span a narrow range (long labels such as 0.023855)."""
    from matplotlib import ticker

    a = getattr(ax, f"{axis}axis")
    a.set_major_locator(ticker.MaxNLocator(nbins=n))
    a.set_major_formatter(_ShortLabels())


def ci_yerr(df, col: str):
    """Error bars of the medians in ``df[col]``: the 95 % interval in ``{col}_ci_low`` and
    ``{col}_ci_high`` (from :func:`experiments.statistics.stats.with_median_ci`, or a ratio's bootstrap),
    as matplotlib's ``yerr``; a point without an interval (one sample) gets no bar. Every
    figure of a compared quantity draws its spread this way, so a bar means the same
    everywhere: the interval the claims are judged on."""
    import numpy as np

    mid = np.asarray(df[col], dtype=float)
    lo = np.asarray(df[f"{col}_ci_low"], dtype=float)
    hi = np.asarray(df[f"{col}_ci_high"], dtype=float)
    return [np.nan_to_num(np.clip(mid - lo, 0, None)), np.nan_to_num(np.clip(hi - mid, 0, None))]


CI_LABEL = "median, bars: 95 % CI"


# ---------------------------------------------------------------- one style per category

# Every category a figure distinguishes, in a fixed order per kind: its colour, marker and line
# style follow from its place here, so a category looks the same in every panel and every figure
# (a colour taken from the cycle's order follows the order the rows come in, and a legend built
# from one panel then names another panel's lines wrongly). A key not listed (a user's own tier)
# gets a style from its name, the same in every figure.
CATEGORIES: dict[str, tuple] = {
    "tier": ("mem", "disk"),
    "strategy": ("lmdb", "lmm", "dio_prov", "coal", "stag"),          # LMDBIO
    "side": ("real", "sleep", "emulator", "dlio", "fixed"),           # four sides; fixed: emulator, fixed-size files
    "run": ("real", "random", "sleep", "emulator", "prep-none", "prep-sleep"),   # workload_validation's rows
    "loader": ("sleep", "prep-none", "prep-sleep"),                   # Fig A.3's loader variants
    "prefetch": ("prefetch", "no prefetch"),                          # AlexNet
    "mode": ("ordered", "opportunistic"),                             # DeepIO
    "ratio": (1.0, 0.5, 0.25, 0.75, 0.125),                           # DeepIO's memory ratio R
    "block": (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),                 # DeepIO's shuffle block size k
    "format": ("tfrecord", "jpeg"),                                   # the blog
    "cache": ("cold", "warm"),
    "ranks": (1, 2, 4, 8, 16, 32, 64),                                # accelerators G
    "source": ("ours", "paper"),
    "fio_job": ("seqread", "seqwrite", "randread", "randread16k"),
    "llm_variant": ("fsync", "no-fsync", "direct"),                   # LLM checkpointing's variants
    "checkpoint_file": ("model", "optim"),
    "bb_keep": ("direct", 1, 2, 3, 4, 5, 6, 7, 8),                    # straight to the slow tier, or keep k
}
_MARKERS = "osD^vP*X<>"
_LINES = ("-", "--", ":", "-.")


def _index(kind: str, key) -> int:
    import zlib

    if kind not in CATEGORIES:
        raise KeyError(f"style.category: unknown kind {kind!r}; known: {', '.join(CATEGORIES)}")
    known = CATEGORIES[kind]
    norm = key.lower() if isinstance(key, str) else (float(key) if kind == "ratio" else key)
    if norm in known:
        return known.index(norm)
    if isinstance(norm, (int, float)) and kind == "ranks":
        return len(known) + int(norm)
    return len(known) + zlib.crc32(str(key).encode()) % 7


def category(kind: str, key) -> dict:
    """The one style of category ``key`` of ``kind`` (:data:`CATEGORIES`): ``color`` (RGB),
    ``marker`` and ``ls``, the same in every panel and figure of the artifact."""
    i = _index(kind, key)
    pal = sns.color_palette(PALETTE, n_colors=10)
    return {"color": pal[i % len(pal)], "marker": _MARKERS[i % len(_MARKERS)], "ls": _LINES[(i // len(pal)) % len(_LINES)]}


def colors(kind: str, keys) -> dict:
    """{key: colour} of :func:`category` for each of ``keys``."""
    return {k: category(kind, k)["color"] for k in keys}


def tier_colors(tiers: list[str]) -> dict[str, tuple]:
    """A stable color per tier name, the same in every figure (:func:`category`)."""
    return colors("tier", tiers)


# ---------------------------------------------------------------- layout check

def _text_boxes(fig, renderer) -> list[tuple[str, object]]:
    """(name, display bbox) of every visible, non-empty text a reader must be able to read:
    suptitle and figure texts, figure legends, and per axes its titles, axis labels, tick
    labels, legend and texts."""
    boxes, seen = [], set()

    def add(artist, name):
        if artist is None or not artist.get_visible() or id(artist) in seen:
            return
        seen.add(id(artist))
        if hasattr(artist, "get_text") and not artist.get_text().strip():
            return
        bb = artist.get_window_extent(renderer)
        if bb.width > 0 and bb.height > 0:
            boxes.append((name, _corners(artist, bb, renderer)))

    for attr in ("_suptitle", "_supxlabel", "_supylabel"):
        add(getattr(fig, attr, None), attr.strip("_"))
    for t in fig.texts:
        add(t, f"figure text {t.get_text()[:40]!r}")
    for lg in fig.legends:
        add(lg, "figure legend")
    for k, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison and not ax.get_title():
            continue
        who = f"panel {ax.get_title()[:30]!r}" if ax.get_title() else f"panel {k}"
        for t in (ax.title, ax._left_title, ax._right_title):
            add(t, f"{who} title")
        add(ax.xaxis.label, f"{who} x label")
        add(ax.yaxis.label, f"{who} y label")
        for axis, xy in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(abs(hi - lo), 1e-300)
            for tl in axis.get_ticklabels(which="both"):
                pos = tl.get_position()[0 if xy == "x" else 1]
                if lo - eps <= pos <= hi + eps:      # ticks beyond the view are not drawn
                    add(tl, f"{who} {xy} tick {tl.get_text()!r}")
        add(ax.get_legend(), f"{who} legend")
        for t in ax.texts:
            add(t, f"{who} text {t.get_text()[:40]!r}")
    return boxes


def _corners(artist, bb, renderer):
    """The four corners (display pixels) of the box around ``artist``: for rotated text the
    box turned with the text (its axis-aligned box is much larger than the letters)."""
    import numpy as np

    rot = artist.get_rotation() % 180 if hasattr(artist, "get_rotation") else 0
    if not rot:
        return np.array([[bb.x0, bb.y0], [bb.x1, bb.y0], [bb.x1, bb.y1], [bb.x0, bb.y1]])
    artist.set_rotation(0)
    flat = artist.get_window_extent(renderer)
    artist.set_rotation(rot)
    w, h, a = flat.width / 2, flat.height / 2, np.deg2rad(rot)
    turn = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    return np.array([[bb.x0 + bb.x1, bb.y0 + bb.y1]]) / 2 + np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) @ turn.T


def _overlap(p, q, min_px: float) -> bool:
    """Whether two convex quadrilaterals overlap by more than ``min_px`` along every axis that
    could separate them (the separating-axis test)."""
    import numpy as np

    for poly in (p, q):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            n = np.array([-edge[1], edge[0]])
            if not np.any(n):
                continue
            n = n / np.hypot(*n)
            a, b = p @ n, q @ n
            if min(a.max(), b.max()) - max(a.min(), b.min()) <= min_px:
                return False
    return True


def _data_points(ax, renderer):
    """Display coordinates of an axes' data: bar rectangles and the vertices of lines and
    scatter points drawn in data coordinates (reference lines such as axhline are left out)."""
    import numpy as np

    rects, points = [], []
    for p in ax.patches:
        if p.get_visible() and type(p).__name__ == "Rectangle" and p.get_data_transform() == ax.transData:
            bb = p.get_window_extent(renderer)
            if bb.width > 0.5 and bb.height > 0.5:
                rects.append(bb)
    for ln in ax.get_lines():
        if ln.get_visible() and ln.get_transform() == ax.transData and len(ln.get_xydata()):
            points.append(ax.transData.transform(ln.get_xydata()))
    for c in ax.collections:
        if type(c).__name__ == "PathCollection" and c.get_visible() and len(c.get_offsets()):
            points.append(c.get_offset_transform().transform(c.get_offsets()))
    pts = np.concatenate(points) if points else np.empty((0, 2))
    return rects, pts[np.isfinite(pts).all(axis=1)]


def layout_problems(fig, min_px: float = 1.0) -> list[str]:
    """What a reviewer would send back about ``fig``'s text: any two texts (titles, suptitle,
    axis and tick labels, legends, texts) whose boxes overlap by more than ``min_px`` pixels
    both ways, and a legend drawn over the data (bars, points) of its own panel. Empty when
    the figure is clean."""
    import numpy as np

    r = _drawn_renderer(fig)
    boxes = _text_boxes(fig, r)
    out = []
    for i, (a, pa) in enumerate(boxes):
        for b, pb in boxes[i + 1:]:
            if _overlap(pa, pb, min_px):
                out.append(f"{a} overlaps {b}")
    for ax in fig.axes:
        lg = ax.get_legend()
        if lg is None or not lg.get_visible() or not ax.get_visible():
            continue
        lb = lg.get_window_extent(r)
        who = f"panel {ax.get_title()[:30]!r}" if ax.get_title() else "a panel"
        rects, pts = _data_points(ax, r)
        inside = lambda p: lb.x0 + min_px < p[0] < lb.x1 - min_px and lb.y0 + min_px < p[1] < lb.y1 - min_px  # noqa: E731
        hidden = sum(1 for bb in rects if min(bb.x1, lb.x1) - max(bb.x0, lb.x0) > min_px
                     and min(bb.y1, lb.y1) - max(bb.y0, lb.y0) > min_px)
        hidden += int(np.sum([inside(p) for p in pts])) if len(pts) else 0
        if hidden:
            out.append(f"{who} legend covers {hidden} of its bars or data points")
    return out


# ---------------------------------------------------------------- series check

def _hex(c) -> str:
    from matplotlib.colors import to_hex

    try:
        return to_hex(c, keep_alpha=False)
    except (ValueError, TypeError):
        import numpy as np

        a = np.asarray(c)
        return to_hex(a[0], keep_alpha=False) if a.ndim == 2 and len(a) else "none"


def _look(h) -> tuple:
    """What tells a legend entry's series apart on the page: colour, marker, line style, hatch."""
    from matplotlib.collections import Collection
    from matplotlib.container import BarContainer, ErrorbarContainer
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if isinstance(h, ErrorbarContainer):
        line = h.lines[0]
        if line is not None:
            return _look(line)
        return (_hex(h.lines[2][0].get_color()), "", "", "")
    if isinstance(h, BarContainer):
        return _look(h.patches[0]) if len(h.patches) else ("none", "", "", "")
    if isinstance(h, Line2D):
        ls = h.get_linestyle()
        return (_hex(h.get_color()), str(h.get_marker()) if h.get_marker() not in (None, "None", "") else "",
                "" if ls in ("None", "none", " ", "") else ls, "")
    if isinstance(h, Patch):   # an unfilled patch (stairs, an outline) shows its edge's colour
        return (_hex(h.get_facecolor() if h.get_fill() else h.get_edgecolor()), "", "", h.get_hatch() or "")
    if isinstance(h, Collection):
        fc = h.get_facecolor()
        return (_hex(fc if len(fc) else h.get_edgecolor()), "", "", h.get_hatch() or "")
    return (type(h).__name__, "", "", "")


def series(fig) -> list[dict]:
    """Every labelled series of ``fig`` (what a legend could name): per axes, its ``label``,
    ``look`` (:func:`_look`), ``x`` and ``y`` (data coordinates; bars: centres and heights;
    empty for what has no points, e.g. a span)."""
    import numpy as np
    from matplotlib.container import BarContainer, ErrorbarContainer
    from matplotlib.lines import Line2D

    out = []
    for k, ax in enumerate(fig.axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            x = y = np.array([])
            if isinstance(h, ErrorbarContainer) and h.lines[0] is not None:
                x, y = np.asarray(h.lines[0].get_xdata(), float), np.asarray(h.lines[0].get_ydata(), float)
            elif isinstance(h, Line2D) and h.get_transform() == ax.transData:
                x, y = np.asarray(h.get_xdata(), float), np.asarray(h.get_ydata(), float)
            elif isinstance(h, BarContainer):
                x = np.array([p.get_x() + p.get_width() / 2 for p in h.patches])
                y = np.array([p.get_height() for p in h.patches])
            out.append({"axes": k, "title": ax.get_title(), "label": lab, "look": _look(h), "x": x, "y": y})
    return out


def series_problems(fig) -> list[str]:
    """What makes ``fig`` say something its data does not: a legend label drawn in more than
    one look (colour, marker, line, hatch) across its panels, one look standing for more than
    one label, a labelled series that no legend of the figure shows, and a log-scaled x axis
    with a single x value. Empty when the figure is clean."""
    import numpy as np

    ser = series(fig)
    out = []
    looks, labels = {}, {}
    for s in ser:
        looks.setdefault(s["label"], set()).add(s["look"])
        labels.setdefault(s["look"], set()).add(s["label"])
    for lab, ls in looks.items():
        if len(ls) > 1:
            out.append(f"legend label {lab!r} is drawn in {len(ls)} looks across panels: "
                       + ", ".join(sorted("/".join(x for x in look if x) for look in ls)))
    for look, labs in labels.items():
        if len(labs) > 1:
            out.append(f"one look ({'/'.join(x for x in look if x)}) stands for {len(labs)} labels: "
                       + ", ".join(sorted(map(repr, labs))))
    shown = set()
    for lg in [ax.get_legend() for ax in fig.axes] + list(fig.legends):
        if lg is not None and lg.get_visible():
            shown |= {t.get_text() for t in lg.get_texts()}
    missing = sorted({s["label"] for s in ser} - shown)
    if missing:
        out.append("labelled series in no legend: " + ", ".join(map(repr, missing)))
    for k, ax in enumerate(fig.axes):
        if ax.get_visible() and ax.get_xscale() == "log":
            # the x values of every panel sharing this axis: a panel with one point on an axis
            # shared with panels that span several is placed on their scale, which is fine
            group = ax.get_shared_x_axes().get_siblings(ax)
            xs = [ln.get_xdata() for a in group for ln in a.get_lines() if ln.get_transform() == a.transData]
            xs += [[p.get_x() + p.get_width() / 2] for a in group for c in a.containers if hasattr(c, "patches")
                   for p in c.patches]
            x = np.unique(np.concatenate([np.asarray(v, float).ravel() for v in xs])) if xs else np.array([])
            x = x[np.isfinite(x)]
            if len(x) <= 1:
                who = f"panel {ax.get_title()[:30]!r}" if ax.get_title() else f"panel {k}"
                out.append(f"{who}: log-scaled x axis with {len(x)} x value(s)")
    return out


def save(out, fig, name: str, formats=("png", "svg"), dpi: int = 150) -> list:
    """Save ``fig`` into ``out`` (a :class:`experiments.output.results.StageResults`) as ``name.<fmt>``
    for each format, with the host stamped on it (:func:`stamp_host`): the host and commit that
    measured what the stage draws (:func:`experiments.output.provenance.label`, from the env.json of the
    measuring stages upstream of it), so a figure drawn from the restored reference run
    (``make figures``) names the reference box.

    Before saving, the figure's layout is checked (:func:`layout_problems`: overlapping text, a
    legend over the data), and its series (:func:`series_problems`: a label in two colours, a
    colour for two labels, a series in no legend, a log axis over one x value); ``figures.json``
    lists every figure the stage drew with the problems found (none, in a clean figure), and
    they are printed. Here, not in :mod:`experiments.output.results`, so that a stage that measures
    never depends on how figures look."""
    from ..output.results import atomic_write, write_json

    from ..output.provenance import label

    stamp_host(fig, label(out.stage))
    problems = layout_problems(fig) + series_problems(fig)
    out._figures = getattr(out, "_figures", {}) | {name: problems}
    write_json(out.path("figures.json"), out._figures)
    if problems:
        print(f"figure {name}: layout problems: " + "; ".join(problems))
    return [atomic_write(out.path(f"{name}.{fmt}"),
                         lambda p, fmt=fmt: fig.savefig(p, format=fmt, dpi=dpi, bbox_inches="tight"))
            for fmt in formats]
