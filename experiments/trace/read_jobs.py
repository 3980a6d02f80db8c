"""The Python read jobs the tracers are compared on (``python -m experiments.trace.bench``): every
file of an ImageNet-like folder read whole, ``epochs`` times, through

- ``dataloader``: a PyTorch ``DataLoader`` with ``workers`` worker processes (each sample one
  file, read with one ``read`` of Python's ``FileIO``, as an image folder does);
- ``tfdata``: ``tf.data`` (``from_tensor_slices(paths).map(tf.io.read_file)``, parallel calls):
  the reads happen in TensorFlow's C++ threads (``pread`` inside its runtime), not in Python.

``python -m experiments.trace.read_jobs {dataloader,tfdata} FOLDER [--epochs N] [--workers W]``
prints one JSON line: files and bytes read and the seconds the reading took (imports excluded).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

JOBS = ("dataloader", "tfdata")


def files_of(folder: Path) -> list[str]:
    """The folder's files (an ImageNet-like set: its manifest's; else every file), sorted."""
    folder = Path(folder)
    man = folder / "filelist.csv"
    if man.exists():
        import csv
        with open(man) as f:
            return [str(folder / r["path"]) for r in csv.DictReader(f)]
    return sorted(str(p) for p in folder.rglob("*") if p.is_file())


def dataloader(files: list[str], epochs: int, workers: int) -> int:
    """Bytes read through a DataLoader (batch 16, ``workers`` processes)."""
    import torch
    from torch.utils.data import DataLoader

    class Files(torch.utils.data.Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            with open(files[i], "rb", buffering=0) as f:
                return len(f.read())

    n = 0
    dl = DataLoader(Files(), batch_size=16, num_workers=workers, shuffle=False)
    for _ in range(epochs):
        for b in dl:
            n += int(b.sum())
    return n


def tfdata(files: list[str], epochs: int) -> int:
    """Bytes read by tf.data's ``read_file`` (parallel map, AUTOTUNE)."""
    import tensorflow as tf
    ds = tf.data.Dataset.from_tensor_slices(files).map(
        lambda p: tf.strings.length(tf.io.read_file(p)), num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.repeat(epochs).batch(64)
    return int(sum(int(tf.reduce_sum(b)) for b in ds))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.trace.read_jobs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("job", choices=JOBS)
    ap.add_argument("folder")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quiet", action="store_true", help="print nothing (the bench's runs)")
    a = ap.parse_args(argv)
    if a.epochs < 1 or a.workers < 0:
        ap.error(f"--epochs = {a.epochs}, --workers = {a.workers}: epochs >= 1, workers >= 0")
    files = files_of(Path(a.folder))
    if not files:
        ap.error(f"folder {a.folder}: no files to read")
    t = time.perf_counter()
    n = dataloader(files, a.epochs, a.workers) if a.job == "dataloader" else tfdata(files, a.epochs)
    if not a.quiet:
        print(json.dumps({"job": a.job, "files": len(files), "epochs": a.epochs, "bytes": n,
                          "read_s": time.perf_counter() - t}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
