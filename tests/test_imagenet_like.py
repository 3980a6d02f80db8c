import io

import numpy as np
import pytest
from PIL import Image

from experiments.datasets import imagenet_like as il
from experiments.settings.common_config import parse_bssplit
from experiments.settings.config import ConfigError
from experiments.settings.reference import NELSON_IMAGENET_BSSPLIT as MIX


def test_bssplit_parse():
    assert parse_bssplit("4K/50:1M/50") == [(4096, 50), (1 << 20, 50)]


def test_sizes_follow_the_mix():
    s = il.sample_sizes(20000, MIX, seed=1)
    hist = il.size_histogram(__import__("pandas").Series(s), MIX)
    assert np.allclose(hist["files_percent"], hist["mix_percent"], atol=1.0)


def test_jpeg_is_decodable_and_near_target():
    data = il.make_jpeg(50_000, seed=3, index=7, quality=90, tol=0.05)
    img = Image.open(io.BytesIO(data))
    img.load()
    assert img.format == "JPEG" and img.mode == "RGB"
    assert abs(len(data) / 50_000 - 1) < 0.1


def test_generation_is_deterministic_whatever_the_workers(tmp_path, digest):
    a = il.generate(tmp_path / "a" / "ds", il.ImageNetLikeConfig(n_images=12, n_classes=3, workers=1), MIX, 5)
    il.generate(tmp_path / "b" / "ds", il.ImageNetLikeConfig(n_images=12, n_classes=3, workers=2), MIX, 5)
    assert digest(tmp_path / "a" / "ds") == digest(tmp_path / "b" / "ds")
    m = il.read_manifest(tmp_path / "a" / "ds")
    assert len(m) == 12 and set(m["label"]) == {0, 1, 2} and a["bytes"] == m["bytes"].sum()
    assert not (tmp_path / "a" / "ds.partial").exists()


def test_data_set_bigger_than_free_disk_stops_first(tmp_path):
    with pytest.raises(ConfigError, match=r"ImageNet-like set \(10000000 JPEGs\): needs [\d.]+ GB in .* GB are free there; lower imagenet_like\.n_images"):
        il.generate(tmp_path / "ds", il.ImageNetLikeConfig(n_images=10_000_000), "256M/100", 1)
    assert not any(tmp_path.iterdir())
