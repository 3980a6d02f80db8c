"""RetinaNet (PyTorch), one rank's training program: ``torchrun ... -m experiments.workloads.retinanet RUN_DIR``.

MLPerf Storage v3.0's RetinaNet workload (object detection on OpenImages) at CPU scale:
torchvision's ``retinanet_resnet50_fpn`` built with ``weights=None`` and
``weights_backbone=None`` (nothing downloaded; random initial weights, every layer trainable),
``data.num_classes`` classes, its transform fixed to ``model.image_size`` (``min_size`` =
``max_size``), SGD with momentum, DDP across ranks.

Loader: a ``Dataset`` of one JPEG per sample (:mod:`.data_retinanet`) that opens and reads the
file (``vfs_ns``), decodes it with PIL, resizes it to ``image_size`` x ``image_size`` and scales
its boxes (``prep_ns``), per sample; a ``DataLoader`` with ``train.read_threads`` worker
processes per rank (the v3.0 config's ``read_threads``; started with ``fork``, its
``multiprocessing_context``) and the default prefetch factor (2); a ``DistributedSampler``
seeded identically on every rank, so the files are split between ranks. The model's loss is the
sum of its classification and box-regression losses, computed inside its forward: ``loss_ns``
is the sum only.

Evaluation after the last epoch: each evaluation file once, batch 1, split over ranks (the
model's detections, nothing scored). A checkpoint at the end (rank 0): the model's and the
optimizer's state.

The loop (data wait, to-device, step, record, phases, evaluation and checkpoint points) is
:mod:`.loop`'s, shared with the sleep run and the emulator. ``train.compute: sleep``
(:mod:`.step_compute`): the same loader, to-device, phases, evaluation reads and checkpoint;
forward to optimizer become one ``sleep(t)`` then an all-reduce of one float per step. As the
emulator (``run.json`` with an ``emulator`` block) no model is built and the checkpoint replays
a traced pattern.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

from . import loop, step_compute
from . import rank as rk
from .data_retinanet import read_manifest
from .steptimer import LoaderLog


class JpegDataset:
    """A torch ``Dataset`` of (image tensor (3, S, S) float in [0, 1], target dict with ``boxes``
    (n, 4) float and ``labels`` (n,) int64) from one JPEG per sample, resized to S x S."""

    def __init__(self, folder, split: str, size: int, run_dir, rank: int):
        m = read_manifest(folder, split)
        self.paths = [str(Path(folder) / p) for p in m["path"]]
        self.boxes = list(m["boxes"])
        self.split, self.size, self.run_dir, self.rank, self.epoch = split, size, run_dir, rank, 0
        self.log = LoaderLog()

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import numpy as np
        import torch
        from PIL import Image

        t0 = time.perf_counter_ns()
        with open(self.paths[i], "rb") as f:
            data = f.read()
        t1 = time.perf_counter_ns()
        img = Image.open(io.BytesIO(data)).convert("RGB")
        w, h = img.size
        img = img.resize((self.size, self.size), Image.BILINEAR)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1).contiguous()
        b = np.array([bx[1:] for bx in self.boxes[i]], dtype=np.float32).reshape(-1, 4)
        b *= np.array([self.size / w, self.size / h] * 2, dtype=np.float32)
        target = {"boxes": torch.from_numpy(b),
                  "labels": torch.tensor([int(bx[0]) for bx in self.boxes[i]], dtype=torch.int64)}
        t2 = time.perf_counter_ns()
        self.log.add(t1 - t0, t2 - t1, file=i, epoch=self.epoch, bytes=len(data), split=self.split)
        self.log.flush_to(self.run_dir, self.rank)
        return x, target


def collate(batch):
    """A detection batch: (list of images, list of targets); the images are not stacked."""
    return tuple(zip(*batch))


def build_model(num_classes: int, image_size: int):
    """torchvision's RetinaNet (ResNet-50 FPN), nothing downloaded, inputs fixed to ``image_size``."""
    from torchvision.models.detection import retinanet_resnet50_fpn

    return retinanet_resnet50_fpn(weights=None, weights_backbone=None, num_classes=num_classes,
                                  min_size=image_size, max_size=image_size)


def summed_loss(losses: dict, _target):
    """The training loss: RetinaNet's forward returns its losses (classification, box regression)."""
    return sum(losses.values())


def main(argv=None, replay=None) -> None:
    """One rank of RetinaNet: the real model, a sleep run or the emulator (:mod:`.loop`)."""
    import torch
    from torch.utils.data import DataLoader, DistributedSampler

    run = loop.read_run(argv)
    cfg, B, seed = run["config"], run["batch_size"], run["seed"]
    tc, size = cfg["train"], cfg["model"]["image_size"]
    rank, world, _, device, sync = rk.setup_torch(run)
    barrier = step_compute.torch_barrier(device)
    lp = loop.RankLoop(run, rank, world, sync=sync, barrier=barrier)
    with lp.phase("init"):
        sleep = loop.sleep_step(run, barrier)
        net, model, opt = loop.torch_model(run, lambda: build_model(cfg["data"]["num_classes"], size), device,
                                           sleep, tc["lr"])
        train_ds = JpegDataset(run["data_dir"], "train", size, run["run_dir"], rank)
        sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True, seed=seed,
                                     drop_last=True)
        workers = tc["read_threads"]
        loader = DataLoader(train_ds, batch_size=B, sampler=sampler, num_workers=workers, drop_last=True,
                            collate_fn=collate, pin_memory=device.type == "cuda",
                            multiprocessing_context="fork" if workers else None)
        eval_ds = JpegDataset(run["data_dir"], "eval", size, run["run_dir"], rank)
        eval_sampler = DistributedSampler(eval_ds, num_replicas=world, rank=rank, shuffle=False)
        save = loop.torch_saver(rank, Path(run["checkpoint_dir"]) / "retinanet.pt",
                                lambda: {"model": net.state_dict(), "optimizer": opt.state_dict()})
        write_checkpoint = loop.checkpointer(run, rank, save, replay)
    lp.facts |= {"device": str(device), "steps_per_epoch": len(loader)}

    def to_device(batch):
        images, targets = batch
        return ([x.to(device, non_blocking=True) for x in images],
                [{k: v.to(device) for k, v in t.items()} for t in targets])

    def real_step(batch, t) -> dict:
        images, targets = batch
        return {"loss": float(loop.model_step(t, model, opt, summed_loss, (images, targets), targets).detach())}

    step = loop.slept(sleep) if sleep is not None else real_step
    lp.io_start()
    for epoch in range(tc["epochs"]):
        sampler.set_epoch(epoch)
        train_ds.epoch = epoch
        with lp.phase("train", epoch=epoch):
            lp.steps(((b, {}) for b in loader), step, epoch=epoch, to_device=to_device)
    with lp.phase("eval", epoch=tc["epochs"] - 1):
        if model is not None:
            model.eval()
        with torch.no_grad():
            for i in eval_sampler:
                t0 = time.perf_counter_ns()
                x, _ = eval_ds[i]
                x = x.to(device)
                t1 = time.perf_counter_ns()
                if sleep is not None:
                    sleep.evaluate()
                    found = 0
                else:
                    found = len(net([x])[0]["boxes"])
                lp.facts["evals"].append({"epoch": tc["epochs"] - 1, "file": int(i),
                                          "bytes": Path(eval_ds.paths[i]).stat().st_size,
                                          "load_s": (t1 - t0) / 1e9, "detect_s": (time.perf_counter_ns() - t1) / 1e9,
                                          "detections": found})
        if model is not None:
            model.train()
    lp.io_stop()
    lp.checkpoint(write_checkpoint, epoch=tc["epochs"] - 1)
    lp.finish(train_ds.log, eval_ds.log)
    rk.finish()


if __name__ == "__main__":
    main()
