"""The real DLIO (dlio-benchmark 2.0.0 in .venv-dlio) on each workload at smoke size, asserting
on what it wrote. ``make test`` builds .venv-dlio first (env/setup-dlio.sh); these tests skip,
saying why, only where that environment could not be installed (see ``dlio.status()``)."""

import json
import struct
from pathlib import Path

import pandas as pd
import pytest

from experiments import dlio
from experiments.workloads.settings import (BertConfig, DlrmConfig, DlrmData, Unet3dConfig,
                                            Unet3dData)

pytestmark = pytest.mark.smoke

STATUS = dlio.status()
needs_dlio = pytest.mark.skipif(not STATUS.ok, reason=f"DLIO cannot run here: {STATUS.why}")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Our UNET3D and DLRM sets from the workloads' generators, and BERT-sized TFRecord files
    (DLIO generates its own BERT set; ours only sizes it)."""
    from experiments.workloads import data_dlrm, data_unet3d

    root = tmp_path_factory.mktemp("dlio-data")
    data_unet3d.generate(root / "unet3d", Unet3dData(train_cases=4, eval_cases=2, scale=0.1, workers=1), 3)
    data_dlrm.generate(root / "dlrm", DlrmData(train_samples=4096, eval_samples=256, workers=1), 3)
    (root / "bert" / "train").mkdir(parents=True)
    for k in range(2):
        with open(root / "bert" / "train" / f"part-{k:05d}-of-00002.tfrecord", "wb") as f:
            for _ in range(16):
                f.write(struct.pack("<Q", 600) + bytes(4) + bytes(600) + bytes(4))
    return root


def run(workload, section, ranks, B, data, tmp_path, ckpt_bytes, compute=0.01):
    return dlio.run(workload, section, ranks, tmp_path / "run", compute_time_s=compute,
                    batch_size=B, data_dir=data / workload, checkpoint_bytes=ckpt_bytes,
                    checkpoint_dir=tmp_path / "ckpt", generated_root=tmp_path / "gen", seed=5,
                    timeout_s=300)


def check_common(r, tmp_path, ranks):
    assert r["status"] == "measured", r.get("why", "") + "\n" + r.get("output_tail", "")
    out = Path(r["out_dir"])
    summary = json.loads((out / "dlio" / "summary.json").read_text())
    assert summary["num_accelerators"] == ranks
    assert sorted(p.name for p in (out / "dlio").glob("*_output.json")) == [f"{i}_output.json" for i in range(ranks)]
    assert (out / "config" / "workload").is_dir() and (out / "hydra" / ".hydra" / "config.yaml").exists()
    res = json.loads((out / "result.json").read_text())
    assert res["dlio_version"] == "2.0.0" and "mpiexec" in res["command"]
    steps = r["steps"]
    assert (steps[steps["phase"] == "train"]["compute_s"] == 0.01).all()
    assert r["row"]["samples_per_s"] > 0 and r["row"]["MBps"] > 0
    # the device audit from outside DLIO's processes: the bytes its training read (the basis
    # of its MB/s) beside the device's, in the row and in result.json
    row, a = r["row"], r["device_audit"]
    e, b = r["epochs"], r["config"]["reader"]["batch_size"]
    assert row["data_bytes"] == pytest.approx(e["steps"].sum() * b * ranks * r["bytes_per_dlio_sample"])
    # judged over the epochs its figures are the median of: those after the first, if several
    judged = e.iloc[1:] if len(e) > 1 else e
    assert row["audited_epochs"] == ", ".join(map(str, judged["epoch"]))
    assert a["job_read_bytes"] == pytest.approx(judged["steps"].sum() * b * ranks * r["bytes_per_dlio_sample"])
    assert a["job_read_bytes"] > 0 and row["read_from"] in ("device", "cache", "memory", "unknown")
    assert (row["read_from"] in ("device", "cache")) == (a["device"] is not None)
    assert res["row"]["read_from"] == row["read_from"]
    return out, summary


@needs_dlio
def test_unet3d_two_ranks_read_our_cases(data, tmp_path):
    sec = Unet3dConfig.model_validate({"data": {"train_cases": 4, "eval_cases": 2, "scale": 0.1},
                                       "model": {"crop": 8, "depth": 2},
                                       "train": {"epochs": 2, "workers": 1},
                                       "sweep": {"batch_sizes": [1], "ranks": [1, 2]}})
    r = run("unet3d", sec, 2, 1, data, tmp_path, ckpt_bytes=20_000)
    out, summary = check_common(r, tmp_path, 2)
    assert summary["epochs"] == 2 and summary["num_files_train"] == 8  # 4 cases = 8 .npy files
    e = r["epochs"]
    # 4 cases / (batch 1 x 2 ranks) = 2 steps per rank and epoch; DLIO's sample is a file
    assert list(e["steps"]) == [2, 2]
    assert e["samples_per_s"].tolist() == pytest.approx((e["dlio_samples_per_s"] / 2).tolist())
    st = r["steps"]
    ev = st[st["phase"] == "eval"]
    assert set(st["rank"]) == {0, 1} and sorted(ev["rank"]) == [0, 1]  # one eval case per rank
    ck = list((tmp_path / "ckpt").glob("model-2-*-0.pt"))  # rank 0, after the last epoch
    assert len(ck) == 1 and 20_000 <= ck[0].stat().st_size < 25_000
    assert r["row"]["checkpoint_bytes_written"] == ck[0].stat().st_size


@needs_dlio
def test_bert_reads_a_set_dlio_generated_with_our_sizes(data, tmp_path):
    sec = BertConfig.model_validate({"data": {"files": 2, "samples_per_file": 16, "seq_len": 64,
                                              "max_predictions": 8, "vocab_size": 1024},
                                     "train": {"steps": 3, "shuffle_buffer": 16},
                                     "sweep": {"batch_sizes": [2], "ranks": [1]}})
    r = run("bert", sec, 1, 2, data, tmp_path, ckpt_bytes=40_000)
    out, summary = check_common(r, tmp_path, 1)
    g = r["generation"]
    assert g["files"] == 2 and not g["reused"]
    ours = 600 + 16
    assert abs(g["bytes_per_sample"] - ours) / ours < 0.05  # DLIO's records ~ ours
    assert r["row"]["steps"] == 3 and r["epochs"]["steps"].tolist() == [3]
    # DLIO 2.0's TensorFlow checkpoint: tf.train.Checkpoint of plain tensors (not Variables)
    # writes an index and almost no data, whatever model_size says.
    assert list((tmp_path / "ckpt").glob("model-1-3-0.pb-1.index"))
    assert r["row"]["checkpoint_bytes_written"] < 40_000 / 10
    again = dlio.prepare("bert", sec, 1, tmp_path / "again", compute_time_s=0.0, batch_size=2,
                         data_dir=data / "bert", checkpoint_bytes=None, seed=5,
                         checkpoint_dir=tmp_path / "ckpt2", generated_root=tmp_path / "gen")
    assert again.generation["reused"] and again.data_folder == Path(g["folder"])


@needs_dlio
def test_dlrm_reads_our_file_through_its_index(data, tmp_path):
    sec = DlrmConfig.model_validate({"data": {"train_samples": 4096, "eval_samples": 256},
                                     "model": {"max_cardinality": 100},
                                     "train": {"steps": 4, "eval_every": 2, "eval_steps": 0},
                                     "sweep": {"batch_sizes": [256], "ranks": [1]}})
    r = run("dlrm", sec, 1, 256, data, tmp_path, ckpt_bytes=30_000)
    out, summary = check_common(r, tmp_path, 1)
    assert r["row"]["steps"] == 4 and r["row"]["checkpoints"] == 2
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("*.pt")) == ["model-1-2-0.pt", "model-1-4-0.pt"]
    log = (out / "dlio" / "dlio.log").read_text()
    assert "IndexedBinaryReaderQuietMap" in log  # DLIO loaded the reader plugin
    st = r["steps"]
    assert len(st) == 4 and st["proc_s"].notna().all()
    assert pd.isna(st.iloc[2]["load_s"])  # the load DLIO loses at a block's first step
