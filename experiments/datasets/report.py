"""Claims of the generated image sets (``imagenet_like``, ``caltech_like``) against the sizes the
papers state. They are checks: the generators draw sizes to match these numbers, so the claims
can fail only through a bug (or a tolerance set too tight), not because of this host."""

from __future__ import annotations

import pandas as pd

from .. import reference
from ..claims import claim

SOURCE = "Chien 2018"
TOLERANCE_PERCENT = 15


def imagenet_claims(manifest: pd.DataFrame) -> list[dict]:
    """The JPEG set's median file size (KB = 1,000 B) against the ImageNet subset's."""
    paper = reference.CHIEN_IMAGENET_MEDIAN_KB
    return [claim(
        "imagenet-median-size", SOURCE, "Sec. IV-A",
        f"The JPEG set's median file size is near the ImageNet subset's {paper} KB",
        our_value=manifest["bytes"].median() / 1000 if len(manifest) else None, unit="KB",
        rule=f"within {TOLERANCE_PERCENT}% of {paper}", paper_value=paper,
        note="sizes drawn from the blog's bssplit mix, bucket B = [B, 2B)",
        why_not="the generator wrote no images", kind="check")]


def caltech_claims(sizes: pd.DataFrame) -> list[dict]:
    """The image set's median and mean file size (kB) against Caltech 101's; ``sizes`` is
    :func:`experiments.datasets.caltech_like.size_summary` (a row ``format == "all"``)."""
    s = sizes.set_index("format")
    overall = s.loc["all"] if "all" in s.index else pd.Series(dtype=float)
    out = []
    for stat, paper in (("median", reference.CHIEN_CALTECH_MEDIAN_KB),
                        ("mean", reference.CHIEN_CALTECH_MEAN_KB)):
        out.append(claim(
            f"caltech-{stat}-size", SOURCE, "Sec. IV-B",
            f"The image set's {stat} file size is near Caltech 101's {paper} kB",
            our_value=overall.get(f"{stat}_KB"), unit="kB",
            rule=f"within {TOLERANCE_PERCENT}% of {paper}", paper_value=paper,
            note="log-normal sizes fixed by the median and mean" if stat == "median" else "",
            why_not="the generator wrote no images", kind="check"))
    return out
