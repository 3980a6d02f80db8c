"""Progress bars for long loops: tqdm, quiet enough for papermill's log and CI."""

from __future__ import annotations

import os
import sys

from tqdm import tqdm


def progress(iterable=None, desc: str = "", total: int | None = None, **kw):
    """A tqdm bar on stderr; in CI it refreshes at most every 30 s to keep logs short."""
    return tqdm(iterable, desc=desc, total=total, file=sys.stderr,
                mininterval=30 if os.environ.get("CI") else 2, **kw)
