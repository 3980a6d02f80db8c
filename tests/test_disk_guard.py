"""Every data set the non-workload stages write states its size and stops, before writing,
when the file system lacks the room: the message names the data set, its size, the free
space and the parameter to change (tiers.require_free). The file system is made to look
almost full (40 KB free) for the test's folder only, so nothing large is ever written."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from experiments.host import tiers
from experiments.blog import tfrecord as blog_tfrecord
from experiments.datasets import caltech_like
from experiments.deepio import experiment as deepio
from experiments.chien import fio_baseline
from experiments.datasets import imagenet_like
from experiments.lmdbio import read as lmdbio
from experiments.settings.config import ConfigError

MIX = "64K/100"


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """``tmp_path`` on a file system with 40 KB free (os.statvfs answers so for it alone)."""
    real = os.statvfs

    def statvfs(p):
        st = real(p)
        if str(os.fspath(p)).startswith(str(tmp_path)):
            return os.statvfs_result((st.f_bsize, 4096, st.f_blocks, 10, 10, st.f_files, st.f_ffree,
                                      st.f_favail, st.f_flag, st.f_namemax))
        return st
    monkeypatch.setattr(os, "statvfs", statvfs)
    return tmp_path


def refused(match: str):
    return pytest.raises(ConfigError, match=match + r": needs [\d.]+ GB in .* but only 0\.00 GB are free there; lower ")


def files_in(folder):
    return [p for p in folder.rglob("*") if p.is_file()]


def test_imagenet_like_refuses_and_clears_a_dead_runs_partial(full_disk):
    (full_disk / "ds.partial").mkdir()
    (full_disk / "ds.partial" / "half.JPEG").write_bytes(b"x")
    with refused(r"the ImageNet-like set \(200 JPEGs\)") as e:
        imagenet_like.generate(full_disk / "ds", imagenet_like.ImageNetLikeConfig(n_images=200), MIX, 1)
    assert "imagenet_like.n_images" in str(e.value)
    assert files_in(full_disk) == []


def test_caltech_like_refuses(full_disk):
    with refused(r"the Caltech-like set \(500 images\)") as e:
        caltech_like.generate(full_disk / "ds", caltech_like.CaltechLikeConfig(n_images=500), 1)
    assert "caltech_like.n_images" in str(e.value) and files_in(full_disk) == []


def test_tier_copy_refuses(full_disk, tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "imagenet_like"
    src.mkdir()
    (src / "a.JPEG").write_bytes(b"x" * 100_000)
    (src / "filelist.csv").write_text("path,label,bytes\na.JPEG,0,100000\n")
    t = tiers.Tier(name="disk", path=str(full_disk / "tier"))
    with refused(r"the copy of imagenet_like on tier disk") as e:
        tiers.stage_copy(src, t)
    assert "tiers[disk].path" in str(e.value) and files_in(full_disk) == []


def test_deepio_pack_refuses(full_disk, tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    (src / "a").write_bytes(b"x" * 100_000)
    m = pd.DataFrame({"abspath": [str(src / "a")], "bytes": [100_000]})
    with refused(r"deepio's packed samples \(1 files\)") as e:
        deepio.pack(m, full_disk / "deepio-pack")
    assert "deepio.loader_samples" in str(e.value) and files_in(full_disk) == []


def test_lmdbio_refuses_every_build_before_the_first(full_disk, tmp_path_factory):
    with refused(r"lmdbio's cifar LMDB \(1000 x 3072 B\)") as e:
        lmdbio.build(full_disk / "lmdbio-cifar", 1000, 3072, 64 << 20, 1)
    assert "lmdbio.datasets[cifar]" in str(e.value) and files_in(full_disk) == []
    ok = tmp_path_factory.mktemp("roomy")
    cfg = lmdbio.LMDBIOConfig.model_validate({"datasets": [{"name": "small", "records": 4, "record_bytes": 16},
                                                           {"name": "big", "records": 1000, "record_bytes": 3072}]})
    with refused(r"lmdbio's (small|big) LMDB \([^)]*\)"):
        lmdbio.measure([tiers.Tier(name="roomy", path=str(ok)), tiers.Tier(name="full", path=str(full_disk))], cfg, 1)
    assert files_in(ok) == []   # nothing was built on the tier that had room


def test_blog_tfrecords_refuse(full_disk, tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    (src / "a").write_bytes(b"x" * 100_000)
    m = pd.DataFrame({"path": ["a"], "abspath": [str(src / "a")], "bytes": [100_000], "label": [0]})
    with refused(r"the blog's TFRecords \(1 JPEGs in 1 shards\)") as e:
        blog_tfrecord.convert(m, full_disk / "blog-tfrecords", 1)
    assert "blog.images" in str(e.value) and files_in(full_disk) == []


def test_fio_test_files_refuse_on_any_tier_before_the_first(full_disk, tmp_path_factory):
    if not fio_baseline.shutil.which("fio"):
        pytest.skip("fio is not installed")
    ok = tmp_path_factory.mktemp("roomy")
    ts = [tiers.Tier(name="roomy", path=str(ok)), tiers.Tier(name="full", path=str(full_disk))]
    with refused(r"fio's test file on tier full") as e:
        fio_baseline.measure(ts, fio_baseline.FioConfig(size_mib=64), MIX)
    assert "fio_baseline.size_mib" in str(e.value)
    assert files_in(ok) == [] and files_in(full_disk) == []


def test_a_fitting_data_set_states_its_size_first(tmp_path, capsys):
    imagenet_like.generate(tmp_path / "ds", imagenet_like.ImageNetLikeConfig(n_images=4, n_classes=2, workers=1), MIX, 1)
    said = capsys.readouterr().out
    assert said.startswith("the ImageNet-like set (4 JPEGs): writing about ") and " free)" in said
