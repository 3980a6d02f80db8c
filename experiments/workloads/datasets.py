"""What the three workload generators share: stating a data set's size and checking it fits
before writing, the ``.partial`` folder, and the facts that compare two contents of one data
set (per-file sizes, digest).

A generation writes into ``<out>.partial`` and renames it to ``<out>`` when complete, so a
later stage never reads half a data set. :func:`start` (called before any byte is written)
prints the planned size, stops with :func:`experiments.host.tiers.require_free` when it does not
fit (naming the data set, its size, the free space and the parameter to change), removes a
``.partial`` left by a generation that died, and removes the earlier ``<out>`` (its space is
counted as free): a generation that dies half way leaves only its ``.partial`` folder, which
the next run removes.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path


def partial(out: Path) -> Path:
    return Path(out).with_name(Path(out).name + ".partial")


def start(out: Path, planned_bytes: int, what: str, param: str) -> Path:
    """Check and clear the way for writing ``planned_bytes`` of ``what`` into ``out``; returns
    the ``.partial`` folder to write (not yet created)."""
    from ..host.tiers import require_free

    out = Path(out)
    print(f"{what}: {planned_bytes / 1e6:,.1f} MB to write into {out}", file=sys.stderr, flush=True)
    tmp = partial(out)
    shutil.rmtree(tmp, ignore_errors=True)
    require_free(out, planned_bytes, what, param)
    shutil.rmtree(out, ignore_errors=True)
    return tmp


def file_sizes(folder: Path) -> dict[str, int]:
    """Relative path -> size in bytes of every file under ``folder``."""
    folder = Path(folder)
    return {str(f.relative_to(folder)): f.stat().st_size for f in sorted(folder.rglob("*")) if f.is_file()}


def digest(folder: Path, skip: tuple[str, ...] = ("filelist.csv",)) -> str:
    """SHA-256 over the names and bytes of every data file under ``folder`` (the manifest,
    which records sizes only, is left out)."""
    folder = Path(folder)
    h = hashlib.sha256()
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.name not in skip:
            h.update(str(f.relative_to(folder)).encode())
            with open(f, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()


def checks(facts: dict, image_MB_at_paper_scale: float, cfg) -> list:
    """What ``workload_data`` (notebook 30) measures for its checks of the generators: sample
    sizes at paper scale as Table 4.1 and Sec 4.1 state them (MB, B), and RetinaNet's mean JPEG
    size against MLPerf Storage v3.0's record_length_bytes (B), as
    :class:`experiments.verdicts.measured.Measured` (the ``claims`` stage joins them with their
    declarations). ``facts``: what each generator returned; ``cfg``: the loaded sections."""
    from ..verdicts.measured import Measured

    return [
        Measured("unet3d-image-size", image_MB_at_paper_scale,
                 note=f"shape distribution at scale 1; the data set here is generated at scale "
                      f"{cfg.unet3d.data.scale}"),
        Measured("bert-sample-size", facts["bert"]["bytes_per_sample"],
                 note=f"seq_len {cfg.bert.data.seq_len}, max_predictions {cfg.bert.data.max_predictions}"),
        Measured("dlrm-sample-size", facts["dlrm"]["bytes"] / facts["dlrm"]["samples"]),
        Measured("retinanet-file-size", facts["retinanet"]["mean_file_bytes"],
                 note=f"{cfg.retinanet.data.train_files} training files of mean_bytes "
                      f"{cfg.retinanet.data.mean_bytes}, log-normal size_sigma {cfg.retinanet.data.size_sigma} "
                      f"(coefficient of variation {facts['retinanet']['cv_file_bytes']:.2f})"),
    ]
