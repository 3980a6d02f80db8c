"""What the generated image sets (``imagenet_like``, ``caltech_like``) measure for their checks:
the sizes the papers state. They are checks: the generators draw sizes to match these numbers,
so the claims can fail only through a bug (or a tolerance set too tight), not because of this
host. The stage writes what it measured (``measured.json``); the ``claims`` stage joins it with
the papers' side (quotes, rules: within 15 %), declared in
``experiments/claims/papers/chien2018-tensorflow-io.yaml``."""

from __future__ import annotations

import pandas as pd

from ..verdicts.measured import Measured


def measure_imagenet(manifest: pd.DataFrame) -> list[Measured]:
    """The JPEG set's median file size, KB (1,000 B)."""
    return [Measured("imagenet-median-size",
                     manifest["bytes"].median() / 1000 if len(manifest) else None,
                     note="sizes drawn from the blog's bssplit mix, bucket B = [B, 2B)",
                     why_not="the generator wrote no images")]


def measure_caltech(sizes: pd.DataFrame) -> list[Measured]:
    """The image set's median and mean file size, kB, over every format."""
    s = sizes.set_index("format")
    overall = s.loc["all"] if "all" in s.index else pd.Series(dtype=float)
    return [Measured(f"caltech-{stat}-size", overall.get(f"{stat}_KB"),
                     note="log-normal sizes fixed by the median and mean" if stat == "median" else "",
                     why_not="the generator wrote no images")
            for stat in ("median", "mean")]
