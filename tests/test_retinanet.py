"""MLPerf Storage v3.0's RetinaNet workload on tiny inputs: its JPEG set (sizes, determinism,
boxes), its settings' refusals, its loader, and one rank's run through the shared loop (real
compute and sleep)."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments.settings import config
from experiments.settings.config import ConfigError
from experiments.workloads import data_retinanet as dr


def _data(**over):
    base = dict(content="realistic", train_files=4, eval_files=1, mean_bytes=16384, size_sigma=0.5,
                size_tolerance=0.05, jpeg_quality=90, max_boxes=3, num_classes=5, workers=1)
    return SimpleNamespace(**(base | over))


# ------------------------------------------------------------------ the data set

def test_sizes_have_the_configured_mean_and_spread_or_one_fixed_size():
    s = dr.target_sizes(2000, dr.V3_RECORD_BYTES, 0.5, seed=1)
    assert not np.array_equal(s, dr.target_sizes(2000, dr.V3_RECORD_BYTES, 0.5, seed=1, stream=1))
    assert abs(s.mean() / dr.V3_RECORD_BYTES - 1) < 1e-4        # scaled to the mean, whatever the count
    assert 0.4 < s.std() / s.mean() < 0.65                      # a log-normal of sigma 0.5: CV ~0.53
    assert (s >= dr.V3_RECORD_BYTES / 17).all() and (s <= dr.V3_RECORD_BYTES * 17).all()
    assert np.array_equal(s, dr.target_sizes(2000, dr.V3_RECORD_BYTES, 0.5, seed=1))
    assert not np.array_equal(s, dr.target_sizes(2000, dr.V3_RECORD_BYTES, 0.5, seed=2))
    fixed = dr.target_sizes(10, dr.V3_RECORD_BYTES, 0.0, seed=1)
    assert set(fixed.tolist()) == {dr.V3_RECORD_BYTES}           # DLIO's one size


def test_generated_set_is_deterministic_sized_and_boxed(tmp_path, digest):
    a = dr.generate(tmp_path / "a", _data(workers=1), seed=7)
    b = dr.generate(tmp_path / "b", _data(workers=2), seed=7)
    assert b["files"] == a["files"] and b["bytes"] == a["bytes"]   # the same set reported by both
    assert digest(tmp_path / "a") == digest(tmp_path / "b")      # same bytes whatever the workers
    assert a["files"] == 5 and a["bytes"] > 0 and not (tmp_path / "a.partial").exists()
    m = dr.read_manifest(tmp_path / "a")
    assert sorted(m["split"]) == ["eval", "train", "train", "train", "train"]
    assert (abs(m["bytes"] / m["target_bytes"] - 1) <= 0.05 + 1e-9).all()
    for split in ("train", "eval"):                                  # each split has the configured mean
        assert abs(m[m["split"] == split]["target_bytes"].mean() / 16384 - 1) < 1e-3
    assert not set(m[m["split"] == "eval"]["path"].str[5:]) & set(m[m["split"] == "train"]["path"].str[6:])
    for r in m.itertuples():
        from PIL import Image
        with Image.open(tmp_path / "a" / r.path) as im:
            assert im.format == "JPEG" and im.size == (r.width, r.height)
        assert 1 <= len(r.boxes) <= 3
        for label, x0, y0, x1, y1 in r.boxes:
            assert 0 <= label < 5 and 0 <= x0 < x1 <= r.width and 0 <= y0 < y1 <= r.height


def test_random_content_and_oversized_batches_are_refused(tmp_path):
    with pytest.raises(ValueError, match="realistic"):
        dr.generate(tmp_path / "r", _data(content="random"), seed=1)
    with pytest.raises(ConfigError, match="train_files"):
        config.validate("retinanet", {"data": {"train_files": 3}, "sweep": {"batch_sizes": [2], "ranks": [1, 2]}})
    with pytest.raises(ConfigError, match="content"):
        config.validate("retinanet", {"data": {"content": "random"}})


def test_profiles_carry_the_v3_sizes():
    from experiments.pipeline import profile

    paper = profile.render("paper")["retinanet"]
    assert paper["data"]["train_files"] == dr.V3_TRAIN_FILES and paper["data"]["mean_bytes"] == dr.V3_RECORD_BYTES
    assert paper["train"]["read_threads"] == 8 and 24 in paper["sweep"]["batch_sizes"]
    for name in ("default", "smoke"):
        config.validate("retinanet", profile.render(name)["retinanet"])


# ------------------------------------------------------------------ the loader and one rank

def test_dataset_decodes_resizes_scales_boxes_and_logs(tmp_path):
    from experiments.workloads.retinanet import JpegDataset, collate

    dr.generate(tmp_path / "d", _data(), seed=3)
    ds = JpegDataset(tmp_path / "d", "train", 64, tmp_path, rank=0)
    x, t = ds[0]
    assert tuple(x.shape) == (3, 64, 64) and 0 <= float(x.min()) and float(x.max()) <= 1
    b = t["boxes"].numpy()
    assert b.shape == (len(t["labels"]), 4) and (b >= 0).all() and (b <= 64 + 1e-4).all()
    assert (b[:, 2] > b[:, 0]).all() and (b[:, 3] > b[:, 1]).all()
    images, targets = collate([ds[0], ds[1]])
    assert len(images) == 2 and len(targets) == 2
    lines = [json.loads(l) for f in tmp_path.glob("loader-r0-*.jsonl") for l in f.read_text().splitlines()]
    assert len(lines) == 3 and all(r["vfs_ns"] > 0 and r["prep_ns"] > 0 and r["bytes"] > 0 for r in lines)


@pytest.mark.parametrize("compute", [None, {"mode": "sleep", "mean_s": 0.01, "std_s": 0.0, "source": "test"}])
def test_one_rank_trains_through_the_shared_loop(tmp_path, compute):
    """One rank at 64 px, batch 1 (batch norm's smallest case): the phases, the step records, the loader records and a checkpoint;
    with a compute model, the steps sleep and no loss is computed."""
    from experiments.workloads import launch

    cfg = config.validate("retinanet", {"data": {"train_files": 4, "eval_files": 1, "mean_bytes": 8192},
                                        "model": {"image_size": 64},
                                        "train": {"epochs": 2, "read_threads": 1, "threads_per_rank": 1,
                                                  "checkpoint_dir": str(tmp_path / "ckpt")}})
    dr.generate(tmp_path / "data", cfg.data, seed=5)
    run = tmp_path / "run"
    launch.run_config("retinanet", cfg.model_dump(mode="json"), 1, 1, 5, tmp_path / "data", run,
                      compute=compute, variant="sleep" if compute else "real")
    got = launch.collect(run)
    steps = got["steps"]
    assert len(steps) == 8 and set(steps["epoch"]) == {0, 1}           # 4 files / batch 1, 2 epochs
    assert {"init", "train", "eval", "checkpoint"} <= set(got["phases"]["phase"])
    train_reads = got["loader"][got["loader"]["split"] == "train"]
    assert len(train_reads) == 8 and (train_reads["vfs_ns"] > 0).all()
    rank = got["ranks"][0]
    assert rank["checkpoints"][0]["bytes"] > 10e6 and len(rank["evals"]) == 1   # ResNet-50 FPN's weights
    if compute:
        assert steps["loss"].isna().all() and (steps["sleep_drawn_ns"] > 0).all()
    else:
        assert np.isfinite(steps["loss"]).all() and (steps["forward_ns"] > 0).all()


# ------------------------------------------------------------------ DLIO on the v3.0 config

def test_dlio_config_has_the_v3_fields_from_our_section_and_data(tmp_path):
    from experiments.settings import reference
    from experiments.dlio import dataset as dd, workload_config as wc

    dr.generate(tmp_path / "d", _data(train_files=4, eval_files=2), seed=3)
    facts = dd.facts("retinanet", tmp_path / "d")
    section = config.validate("retinanet", {"data": {"train_files": 4, "eval_files": 2},
                                            "train": {"epochs": 3, "read_threads": 2}})
    v3 = reference.MLPERF_V3_RETINANET
    b = wc.build("retinanet", section, 2, 2, facts, wc.compute_time("retinanet", 2, 2, v3["computation_time"]),
                 data_folder="/v", checkpoint_folder="/ck", checkpoint_bytes=1000, seed=7, output_folder="/o")
    c = b.config
    assert (c["framework"], c["dataset"]["format"], c["reader"]["data_loader"]) == ("pytorch", "jpeg", "pytorch")
    assert c["reader"]["multiprocessing_context"] == "fork" and c["reader"]["read_threads"] == 2
    assert c["reader"]["batch_size"] == 2 and c["train"]["epochs"] == 3 and c["metric"] == {"au": 0.85}
    assert c["train"]["computation_time"] == 0.04755 and c["dataset"]["num_files_train"] == 4
    assert c["dataset"]["record_length"] == round(facts.bytes_per_sample) and "record_length_bytes" not in c["dataset"]
    assert c["dataset"]["num_files_eval"] == 2 and c["checkpoint"]["type"] == "rank_zero"
    assert any("record_length_bytes" in n for n in b.notes)
    with pytest.raises(ConfigError, match="batch 4 x 2 ranks"):
        wc.build("retinanet", section, 2, 4, facts, wc.compute_time("retinanet", 2, 4, 0.0), data_folder="/v",
                 checkpoint_folder="/ck", checkpoint_bytes=None, seed=7, output_folder="/o")
    v = dd.make_view(facts, tmp_path / "view")
    got = sorted(p.name for p in (v / "train").iterdir())
    assert got == [f"img_{i:07d}.jpeg" for i in range(4)] and len(list((v / "valid").glob("*.jpeg"))) == 2
    assert (v / "train" / "img_0000000.jpeg").resolve() == (tmp_path / "d" / "train" / "img_0000000.jpg").resolve()


# ------------------------------------------------------------------ the emulator's RetinaNet

def test_emulator_runs_retinanet_data_path_with_the_v3_compute_time(tmp_path):
    """One emulated accelerator: the real loader reads every training JPEG once an epoch, each
    step sleeps the v3.0 config's 0.04755 s (a compute-model file), no model is built."""
    from experiments.settings import reference
    from experiments.emulator import config as ecfg, launch as elaunch, report

    dr.generate(tmp_path / "data", _data(train_files=4, eval_files=1, mean_bytes=8192), seed=2)
    t = reference.MLPERF_V3_RETINANET["computation_time"]
    model = tmp_path / "v3.json"
    zero = {"G": 0.0, "B": 0.0, "c": 0.0}
    model.write_text(json.dumps({"schema": "compute-model/1", "host": "MLPerf Storage v3.0 retinanet_b200.yaml",
                                 "workloads": {"retinanet": {"mean": {"coef": zero | {"c": t}}, "std": {"coef": zero}}}}))
    section = {"data": {"train_files": 4, "eval_files": 1, "mean_bytes": 8192, "num_classes": 5},
               "train": {"epochs": 2, "read_threads": 1, "threads_per_rank": 1},
               "sweep": {"batch_sizes": [2], "ranks": [1]}}
    c = ecfg.from_params("retinanet", section, 2, 1, compute_model=str(model), checkpoint_pattern="none",
                         data_dir=tmp_path / "data", checkpoint_dir=tmp_path / "ck", seed=1)
    with pytest.raises(ConfigError, match="accelerators <= 2"):
        ecfg.from_params("retinanet", section, 2, 3, compute_model=str(model), checkpoint_pattern="none",
                         data_dir=tmp_path / "data", checkpoint_dir=tmp_path / "ck", seed=1)
    elaunch.execute(c, tmp_path / "run")
    s = report.summarize(tmp_path / "run")
    steps = pd.read_csv(tmp_path / "run" / "steps-r0.csv")
    assert len(steps) == 4 and steps["loss"].isna().all()
    assert np.allclose(steps["sleep_drawn_ns"] / 1e9, t)
    m = dr.read_manifest(tmp_path / "data", "train")
    assert s["data_bytes"] == 2 * int(m["bytes"].sum())              # every training file, each epoch
    assert 0 < s["au"] <= 1
