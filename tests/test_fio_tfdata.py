import shutil

import pytest

from experiments.chien import fio_baseline as fb
from experiments.datasets import imagenet_like as il
from experiments.chien import tfdata_read as tr
from experiments.settings.reference import NELSON_IMAGENET_BSSPLIT as MIX
from experiments.host.tiers import Tier

FIO_JSON = """fio: some warning
{"jobs": [{"read": {"bw_bytes": 2000000, "iops": 100.5, "io_bytes": 4096, "runtime": 2000},
           "write": {"bw_bytes": 0, "iops": 0, "io_bytes": 0, "runtime": 0}}]}"""


def test_fio_json_parse_skips_leading_warnings():
    r = fb._parse(FIO_JSON, "randread")
    assert r["bw_bytes"] == 2e6 and r["iops"] == 100.5


@pytest.mark.skipif(not shutil.which("fio"), reason="fio not installed")
def test_fio_measures_every_job_on_a_tier(tmp_path):
    cfg = fb.FioConfig(size_mib=4, runtime_s=0.2, runs=1, warmup=0)
    raw, facts = fb.measure([Tier(name="t", path=str(tmp_path))], cfg, MIX)
    s = fb.summarize(raw)
    assert set(s["job"]) == set(fb.JOBS) and (s["bw_MBps"] > 0).all()
    assert not (tmp_path / "fio-baseline.testfile").exists()
    # the device audit: direct I/O on a block device is the device's, byte for byte; tmpfs says memory
    if raw["direct"].all() and raw["device"].notna().all():
        assert (s["served_by"] == "device").all() and (s["device_ratio"] >= 0.9).all(), s
    assert set(raw["served_by"]) <= {"device", "memory"}


def test_tfdata_pipeline_counts_every_image(tmp_path):
    ds_dir = tmp_path / "imagenet_like"
    il.generate(ds_dir, il.ImageNetLikeConfig(n_images=10, n_classes=2, workers=1), MIX, 1)
    m = il.read_manifest(ds_dir)
    cfg = tr.TFDataReadConfig(threads=[1, 2], batch_size=4, runs=2, warmup=1, image_size=32)
    measured, facts = tr.measure({"t": m}, [Tier(name="t", path=str(tmp_path))], cfg, seed=1)
    raw = measured.rows
    assert len(raw) == 18 and (raw["batches"] == 3).all() and (raw["images"] == 10).all()
    # rounds: every configuration once a round, the warm-up round first, the order recorded
    per_round = raw.groupby("repeat").apply(lambda g: sorted(zip(g["variant"], g["threads"])))
    assert list(per_round.index) == [0, 1, 2] and len({tuple(x) for x in per_round}) == 1
    assert raw["warmup"].tolist() == [True] * 6 + [False] * 12
    assert measured.course["seed"] == 1 and len(measured.course["order"]) == 18
    s = tr.summarize(raw)
    assert set(s["variant"]) == {"full", "read_only", "raw"}
    assert (s[s["threads"] == 1]["speedup_vs_min_threads"] == 1).all()
    batch = next(iter(tr.build_dataset(list(m["abspath"]), 1, 4, "full", 32, 1)))
    assert tuple(batch.shape) == (4, 32, 32, 3)


@pytest.mark.parametrize("threads", [1, 3])
def test_raw_reads_read_every_file_whole(tmp_path, threads):
    """DeepIO's Raw: every byte of every file read once, outside TensorFlow (the process's
    read-bytes counter rises by at least the data set's size)."""
    files = []
    for i in range(7):
        f = tmp_path / f"{i}.bin"
        f.write_bytes(bytes([i]) * (1000 + 500 * i))
        files.append(str(f))
    def rchar():
        return int(next(l for l in open("/proc/self/io") if l.startswith("rchar")).split()[1])
    before = rchar()
    seconds, batches = tr.raw_epoch(files, threads, 3, seed=5)
    assert batches == 3 and seconds > 0
    assert rchar() - before >= sum(1000 + 500 * i for i in range(7))
