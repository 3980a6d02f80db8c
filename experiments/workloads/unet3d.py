"""UNET3D (PyTorch), one rank's training program: ``torchrun ... -m experiments.workloads.unet3d RUN_DIR``.

As the MLPerf reference (Section 4.1.1): a 3D U-Net (conv-norm-LeakyReLU blocks, strided
convolutions down, transposed convolutions up, skip connections; ``base_channels`` and
``depth`` scale it), Dice + cross-entropy loss, SGD with momentum, DDP. The Dataset reads a
case's .npy pair and preprocesses it on the CPU as the reference's transforms: the balanced
crop (``RandBalancedCrop``: with probability ``oversampling`` a crop around one of the two
largest connected objects of a random foreground class, found with ``scipy.ndimage.label``
and ``find_objects``; else a random crop), random flip, cast, random brightness, random noise.
The balanced crop is why preprocessing depends on the content (thesis Sec 5.1.3): a real
mask has a few objects, a mask without structure has tens of thousands.
A ``DataLoader`` with ``workers`` worker processes per rank and the default prefetch factor
(2); a ``DistributedSampler`` seeded identically on every rank (the thesis found the original
seeded each rank differently, so files were not split). After each step the loss is
all-reduced across ranks (the "cumulative loss" of Fig 5.2, ``allreduce_ns``).
Evaluation: sliding-window inference at batch 1 over the evaluation cases, split over ranks;
a checkpoint at the end (rank 0).

The loop (data wait, to-device, step, record, phases, evaluation and checkpoint points) is
:mod:`.loop`'s, shared with the sleep run and the emulator. ``train.compute: sleep``
(:mod:`.step_compute`): the same loader, to-device, phases,
evaluation reads and checkpoint; forward to optimizer become one ``sleep(t)``, then an
all-reduce of one float per step (the real step's DDP gradient all-reduce and cumulative
loss are the collectives that keep ranks in step). Evaluation reads each case and sleeps one
evaluation step instead of the sliding window (per MB of the case when the compute model has
it). As the emulator (``run.json`` with an ``emulator`` block) no model is built and the
checkpoint replays a traced pattern. ``train.preprocessing``: ``none`` keeps only a
plain random crop (a benchmark that skips preprocessing), ``sleep`` adds ``prep_sleep_s`` of
sleep per sample in its place (Fig A.3).

Loader records: ``vfs_ns`` is ``np.load`` of both files, ``prep_ns`` the preprocessing, per sample.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from . import loop, step_compute
from . import rank as rk
from .data_unet3d import N_LABELS, read_manifest
from .steptimer import LoaderLog

N_CLASSES = N_LABELS  # background, kidney, tumour (KiTS19)
PREPROCESSING = ("real", "none", "sleep")


def random_crop(x, y, crop: int, rng):
    """A crop^3 window at a uniformly random position (views, no copy)."""
    starts = [int(rng.integers(0, s - crop + 1)) for s in x.shape[1:]]
    sl = (slice(None), *(slice(s, s + crop) for s in starts))
    return x[sl], y[sl]


def balanced_crop(x, y, crop: int, rng, oversampling: float):
    """The reference's ``RandBalancedCrop``: with probability ``oversampling``, a crop^3 window
    placed over one of the two largest connected objects of a random foreground class (its
    bounding box widened or narrowed at random to the patch), else :func:`random_crop`."""
    if rng.random() >= oversampling:
        return random_crop(x, y, crop, rng)
    from scipy import ndimage

    classes = np.unique(y[y > 0])
    if not len(classes):
        return random_crop(x, y, crop, rng)
    cl = classes[int(rng.integers(len(classes)))]
    objs = [o for o in ndimage.find_objects(ndimage.label(y == cl)[0]) if o is not None]
    vols = [np.prod([s.stop - s.start for s in o]) for o in objs]   # per object, as the reference
    objs = [objs[i] for i in np.argsort(vols)[-2:]]
    if not objs:
        return random_crop(x, y, crop, rng)
    o = objs[int(rng.integers(len(objs)))]

    def adjust(ax):
        diff = crop - (o[ax].stop - o[ax].start)
        sign, diff = (-1 if diff < 0 else 1), abs(diff)
        ladj = int(rng.integers(diff)) if diff else 0
        low = max(0, o[ax].start - sign * ladj)
        high = min(y.shape[ax], o[ax].stop + sign * (diff - ladj))
        short = crop - (high - low)
        if short > 0 and low == 0:
            high += short
        elif short > 0:
            low -= short
        return slice(low, high)

    sl = (slice(None), adjust(1), adjust(2), adjust(3))
    return x[sl], y[sl]


class CaseDataset:
    """A torch ``Dataset`` of (image, mask) crops with the reference's preprocessing.

    ``preprocessing``: ``real`` (balanced crop and augmentations), ``none`` (a plain random
    crop, nothing else) or ``sleep`` (``none`` plus ``prep_sleep_s`` seconds of sleep per
    sample standing in for the preprocessing, Fig A.3). ``oversampling``: the balanced crop's
    share of foreground-centred crops (the reference's 0.4).
    """

    def __init__(self, folder, split, crop, seed, run_dir, rank, train=True, preprocessing="real",
                 prep_sleep_s=0.0, oversampling=0.4):
        if preprocessing not in PREPROCESSING:
            raise ValueError(f"preprocessing = {preprocessing!r}; allowed: {', '.join(PREPROCESSING)}")
        m = read_manifest(folder, split)
        self.x = [str(Path(folder) / p) for p in m["path_x"]]
        self.y = [str(Path(folder) / p) for p in m["path_y"]]
        self.crop, self.seed, self.train = crop, seed, train
        self.preprocessing, self.prep_sleep_s, self.oversampling = preprocessing, prep_sleep_s, oversampling
        self.run_dir, self.rank, self.epoch = run_dir, rank, 0
        self.log = LoaderLog()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        import torch

        t0 = time.perf_counter_ns()
        x, y = np.load(self.x[i]), np.load(self.y[i])
        t1 = time.perf_counter_ns()
        if self.train and self.preprocessing != "real":
            rng = np.random.default_rng([self.seed, self.epoch, i])
            x, y = random_crop(x, y, self.crop, rng)
            if self.preprocessing == "sleep":
                time.sleep(self.prep_sleep_s)
        elif self.train:
            rng = np.random.default_rng([self.seed, self.epoch, i])
            x, y = balanced_crop(x, y, self.crop, rng, self.oversampling)
            for ax in (1, 2, 3):                                   # random flip
                if rng.random() < 1 / 3:
                    x, y = np.flip(x, ax), np.flip(y, ax)
            x, y = x.astype(np.float32), y.astype(np.uint8)        # cast
            if rng.random() < 0.1:                                 # random brightness
                x = x * rng.uniform(0.7, 1.3)
            if rng.random() < 0.1:                                 # random Gaussian noise
                x = x + rng.normal(0, 0.1, size=x.shape).astype(np.float32)
            x, y = np.ascontiguousarray(x, np.float32), np.ascontiguousarray(y)
        t2 = time.perf_counter_ns()
        self.log.add(t1 - t0, t2 - t1, case=i, epoch=self.epoch, bytes=x.nbytes + y.nbytes,
                     split="train" if self.train else "eval")
        self.log.flush_to(self.run_dir, self.rank)
        return torch.from_numpy(x), torch.from_numpy(y)


def build_model(base: int, depth: int):
    import torch
    from torch import nn

    def block(a, b, stride=1):
        return nn.Sequential(nn.Conv3d(a, b, 3, stride, 1, bias=False), nn.InstanceNorm3d(b, affine=True),
                             nn.LeakyReLU(0.01, inplace=True),
                             nn.Conv3d(b, b, 3, 1, 1, bias=False), nn.InstanceNorm3d(b, affine=True),
                             nn.LeakyReLU(0.01, inplace=True))

    class UNet3D(nn.Module):
        def __init__(self):
            super().__init__()
            ch = [base * 2 ** i for i in range(depth)]
            self.down = nn.ModuleList([block(1, ch[0])] + [block(ch[i - 1], ch[i], 2) for i in range(1, depth)])
            self.up = nn.ModuleList(nn.ConvTranspose3d(ch[i], ch[i - 1], 2, 2) for i in range(depth - 1, 0, -1))
            self.dec = nn.ModuleList(block(2 * ch[i - 1], ch[i - 1]) for i in range(depth - 1, 0, -1))
            self.out = nn.Conv3d(ch[0], N_CLASSES, 1)

        def forward(self, x):
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
            for up, dec, skip in zip(self.up, self.dec, reversed(skips[:-1])):
                x = dec(torch.cat([up(x), skip], dim=1))
            return self.out(x)

    return UNet3D()


def dice_ce_loss(logits, y):
    """Cross-entropy plus (1 - mean soft Dice over classes), as the reference's DiceCELoss."""
    import torch.nn.functional as F

    y = y.long().squeeze(1)
    ce = F.cross_entropy(logits, y)
    p = logits.softmax(1)
    oh = F.one_hot(y, N_CLASSES).permute(0, 4, 1, 2, 3).float()
    inter = (p * oh).sum((0, 2, 3, 4))
    dice = (2 * inter + 1e-6) / (p.sum((0, 2, 3, 4)) + oh.sum((0, 2, 3, 4)) + 1e-6)
    return ce + 1 - dice.mean()


def sliding_window(model, x, crop: int, overlap: float):
    """Class logits of a whole case from crop^3 windows (stride crop * (1 - overlap)), averaged."""
    import torch
    import torch.nn.functional as F

    shape = x.shape[2:]
    pad = [max(0, crop - s) for s in shape]
    x = F.pad(x, [0, pad[2], 0, pad[1], 0, pad[0]])
    full = x.shape[2:]
    step = max(1, int(crop * (1 - overlap)))
    starts = [sorted({*range(0, s - crop + 1, step), s - crop}) for s in full]
    acc = torch.zeros((1, N_CLASSES, *full), device=x.device)
    cnt = torch.zeros((1, 1, *full), device=x.device)
    for a in starts[0]:
        for b in starts[1]:
            for c in starts[2]:
                sl = (slice(None), slice(None), slice(a, a + crop), slice(b, b + crop), slice(c, c + crop))
                acc[sl] += model(x[sl])
                cnt[sl] += 1
    out = acc / cnt
    return out[:, :, :shape[0], :shape[1], :shape[2]]


def main(argv=None, replay=None) -> None:
    """One rank of UNET3D: the real model, a sleep run or the emulator (:mod:`.loop`)."""
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler

    run = loop.read_run(argv)
    cfg, B, seed = run["config"], run["batch_size"], run["seed"]
    tc, mc = cfg["train"], cfg["model"]
    rank, world, _, device, sync = rk.setup_torch(run)
    barrier = step_compute.torch_barrier(device)
    lp = loop.RankLoop(run, rank, world, sync=sync, barrier=barrier)
    with lp.phase("init"):
        sleep = loop.sleep_step(run, barrier)
        net, model, opt = loop.torch_model(run, lambda: build_model(mc["base_channels"], mc["depth"]), device,
                                           sleep, tc["lr"])
        train_ds = CaseDataset(run["data_dir"], "train", mc["crop"], seed, run["run_dir"], rank,
                               preprocessing=tc.get("preprocessing", "real"),
                               prep_sleep_s=tc.get("prep_sleep_s", 0.0), oversampling=tc.get("oversampling", 0.4))
        # The same seed on every rank: the sampler splits the files between ranks.
        sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True, seed=seed,
                                     drop_last=True)
        loader = DataLoader(train_ds, batch_size=B, sampler=sampler, num_workers=tc["workers"],
                            drop_last=True, pin_memory=device.type == "cuda")
        eval_ds = CaseDataset(run["data_dir"], "eval", mc["crop"], seed, run["run_dir"], rank, train=False)
        eval_sampler = DistributedSampler(eval_ds, num_replicas=world, rank=rank, shuffle=False)
        save = loop.torch_saver(rank, Path(run["checkpoint_dir"]) / "unet3d.pt",
                                lambda: {"model": net.state_dict(), "optimizer": opt.state_dict()})
        write_checkpoint = loop.checkpointer(run, rank, save, replay)
    lp.facts |= {"device": str(device), "steps_per_epoch": len(loader)}

    def real_step(batch, t) -> dict:
        x, y = batch
        loss = loop.model_step(t, model, opt, dice_ce_loss, (x,), y)
        cum = loss.detach().clone()     # the cumulative loss of Fig 5.2, all-reduced every step
        if dist.is_initialized():
            dist.all_reduce(cum)
        t.mark("allreduce_ns")
        return {"loss": float(cum) / world}

    step = loop.slept(sleep) if sleep is not None else real_step
    lp.io_start()
    for epoch in range(tc["epochs"]):
        sampler.set_epoch(epoch)
        train_ds.epoch = epoch
        with lp.phase("train", epoch=epoch):
            lp.steps(((b, {}) for b in loader), step, epoch=epoch,
                     to_device=lambda b: tuple(v.to(device, non_blocking=True) for v in b))
        last = epoch == tc["epochs"] - 1
        if last or (tc["eval_every"] and (epoch + 1) % tc["eval_every"] == 0):
            with lp.phase("eval", epoch=epoch):
                if model is not None:
                    model.eval()
                with torch.no_grad():
                    for i in eval_sampler:
                        t0 = time.perf_counter_ns()
                        x, y = eval_ds[i]
                        x = x.unsqueeze(0).to(device)
                        t1 = time.perf_counter_ns()
                        if sleep is not None:
                            sleep.evaluate(mb=x.numel() * 4 / 1e6)
                            dice = float("nan")
                        else:
                            pred = sliding_window(net, x, mc["crop"], tc["eval_overlap"]).argmax(1).cpu()
                            inter = float(((pred == 1) & (y == 1)).sum())
                            dice = 2 * inter / max(1.0, float((pred == 1).sum() + (y == 1).sum()))
                        lp.facts["evals"].append({"epoch": epoch, "case": int(i), "bytes": int(x.numel() * 4),
                                                  "load_s": (t1 - t0) / 1e9,
                                                  "window_s": (time.perf_counter_ns() - t1) / 1e9, "dice": dice})
                if model is not None:
                    model.train()
    lp.io_stop()
    lp.checkpoint(write_checkpoint, epoch=tc["epochs"] - 1)
    lp.finish(train_ds.log)
    rk.finish()


if __name__ == "__main__":
    main()
