"""Nelson's blog, the PyTorch side: a DataLoader over the individual JPEG files.

Each item: read the file's bytes, ``torchvision.io.decode_jpeg``, resize to ``image_size``
square (antialiased bilinear), as torchvision's ImageFolder pipeline does minus augmentation.
The DataLoader shuffles (seeded) and batches; ``num_workers`` is the parallelism swept (0 means
the main process loads). One epoch per run, the cache evicted before each cold run, the device
sampled meanwhile. Throughput: images/s and MB/s (10^6 B/s of JPEG bytes).
"""

from __future__ import annotations


import pandas as pd

from .. import cache, dstat
from .tfrecord import BlogConfig, timed_run
from ..progress import progress


class JpegFiles:
    """A map-style dataset of (image tensor C x H x W uint8, label) from a list of JPEG paths."""

    def __init__(self, paths: list[str], labels: list[int], image_size: int):
        self.paths, self.labels, self.size = list(paths), list(labels), image_size

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        import torch
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms.v2 import functional as F

        with open(self.paths[i], "rb") as f:
            data = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)
        img = decode_jpeg(data, mode=ImageReadMode.RGB)
        return F.resize(img, [self.size, self.size], antialias=True), self.labels[i]


def make_loader(paths: list[str], labels: list[int], workers: int, batch_size: int,
                image_size: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(JpegFiles(paths, labels, image_size), batch_size=batch_size,
                                       shuffle=True, generator=g, num_workers=workers,
                                       multiprocessing_context="fork" if workers else None)


def _count(loader) -> int:
    return sum(int(x.shape[0]) for x, _ in loader)


def measure(staged: dict[str, pd.DataFrame], tiers, cfg: BlogConfig,
            seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """DataLoader epochs for each tier and ``num_workers``, cold; each repeat of the cold run at
    the most workers is followed at once by the same run warm (no eviction).
    Returns (one row per run, dstat rows tagged with the run, facts)."""
    import torch

    torch.set_num_threads(1)  # parallelism comes from the workers, as in the blog's runs
    plan = []
    for t in tiers:
        for w in cfg.workers:
            for i in range(cfg.repeats):
                plan.append((t, w, i, "cold"))
                if w == max(cfg.workers):  # right after a cold pass
                    plan.append((t, w, i, "warm"))
    rows, samples, evictions = [], [], {}
    first = staged[tiers[0].name]  # prime torchvision's decoder, untimed
    _count(make_loader(list(first["abspath"][:8]), list(first["label"][:8]), 0, 8,
                       cfg.image_size, seed))
    for run_id, (tier, workers, i, cache_state) in enumerate(progress(plan, desc="blog torch")):
        m = staged[tier.name]
        paths = list(m["abspath"])
        loader = make_loader(paths, list(m["label"]), workers, cfg.batch_size, cfg.image_size, seed)
        if cache_state == "cold":
            evictions[tier.name] = cache.evict(paths, cfg.eviction, label=tier.name)
            resident = evictions[tier.name].resident_fraction
        else:  # right after a cold pass: measure what is still cached
            resident = cache.residency(paths)["resident_fraction"]
        device = dstat.device_of(paths[0])
        seconds, n, frame = timed_run(lambda: _count(loader), device, cfg.dstat_interval_s)
        nbytes = int(m["bytes"].sum())
        rows.append({"run": 10_000 + run_id, "framework": "pytorch", "tier": tier.name,
                     "format": "jpeg", "workers": workers, "repeat": i, "cache": cache_state,
                     "seconds": seconds, "images": n, "bytes": nbytes,
                     "images_per_s": n / seconds, "MBps": nbytes / 1e6 / seconds,
                     "device": device or "",
                     "eviction": evictions.get(tier.name, "none") if cache_state == "cold" else "none",
                     "resident_fraction": resident})
        if len(frame):
            samples.append(frame.assign(run=10_000 + run_id, framework="pytorch", tier=tier.name,
                                        format="jpeg", workers=workers, cache=cache_state))
    return pd.DataFrame(rows), (pd.concat(samples, ignore_index=True) if samples
                                else pd.DataFrame()), {"eviction": evictions}
