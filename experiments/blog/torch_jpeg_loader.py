"""Nelson's blog, the PyTorch side: a DataLoader over the individual JPEG files.

Each item: read the file's bytes, ``torchvision.io.decode_jpeg``, resize to ``image_size``
square (antialiased bilinear), as torchvision's ImageFolder pipeline does minus augmentation.
The DataLoader shuffles (seeded) and batches; ``num_workers`` is the parallelism swept (0 means
the main process loads). Its runs (one epoch each, the cache evicted before each cold run, the
device sampled meanwhile; images/s and MB/s of JPEG bytes) go in the same seeded rounds as the
tf.data runs: :func:`experiments.blog.tfrecord.measure`.
"""

from __future__ import annotations


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


def count(loader) -> int:
    """Images one epoch of ``loader`` gives (the run that :func:`experiments.blog.tfrecord.measure` times)."""
    return sum(int(x.shape[0]) for x, _ in loader)
