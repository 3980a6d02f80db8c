import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from experiments.datasets import caltech_like as cl
from experiments.settings import config
from experiments.settings.config import ConfigError


def test_sizes_have_the_asked_median_and_mean():
    s = cl.sample_sizes(50_000, 12_000, 14_000, seed=1)
    assert abs(np.median(s) / 12_000 - 1) < 0.02
    assert abs(s.mean() / 14_000 - 1) < 0.02
    assert s.min() >= 1500


def test_formats_are_exact_and_seeded():
    f = cl.formats_for(1000, 0.1, seed=3)
    assert (f == "png").sum() == 100 and list(f) == list(cl.formats_for(1000, 0.1, seed=3))
    assert (cl.formats_for(10, 0.0, 1) == "jpg").all()


@pytest.mark.parametrize("target", [3000, 12_000, 40_000])
def test_png_is_decodable_and_near_target(target):
    data = cl.make_png(target, seed=2, index=5, tol=0.05)
    img = Image.open(io.BytesIO(data))
    img.load()
    assert img.format == "PNG" and img.mode == "RGB"
    assert abs(len(data) / target - 1) < 0.1


def test_generation_is_deterministic_and_atomic(tmp_path, digest):
    c1 = cl.CaltechLikeConfig(n_images=20, n_classes=5, png_fraction=0.25, workers=1)
    c2 = c1.model_copy(update={"workers": 2})
    facts = cl.generate(tmp_path / "a" / "ds", c1, 9)
    cl.generate(tmp_path / "b" / "ds", c2, 9)
    assert digest(tmp_path / "a" / "ds") == digest(tmp_path / "b" / "ds")
    m = cl.read_manifest(tmp_path / "a" / "ds")
    assert len(m) == 20 and set(m["label"]) == set(range(5)) and facts["png_images"] == 5
    assert set(m.loc[m["format"] == "png", "path"].str[-4:]) == {".png"}
    assert not (tmp_path / "a" / "ds.partial").exists()
    s = cl.size_summary(m.drop(columns="abspath"))
    assert list(s["format"]) == ["all", "jpg", "png"] and s["images"].iloc[0] == 20


def test_both_formats_decode_with_the_pipelines_decoder(tmp_path):
    import tensorflow as tf

    cl.generate(tmp_path / "ds", cl.CaltechLikeConfig(n_images=6, n_classes=2, png_fraction=0.5), 4)
    m = cl.read_manifest(tmp_path / "ds")
    for p in m["abspath"]:
        img = tf.io.decode_png(tf.io.read_file(p), channels=3)
        assert img.shape[-1] == 3 and img.shape[0] >= 8


def test_histogram_sums_to_100():
    h = cl.size_histogram(pd.Series([1000, 5000, 12_000, 90_000]))
    assert abs(h["files_percent"].sum() - 100) < 1e-9 and h["files_percent"].iloc[-1] == 25


def test_bad_input_names_parameter():
    with pytest.raises(ConfigError, match="caltech_like.png_fraction = 1.5"):
        config.validate("caltech_like", {"png_fraction": 1.5})
    with pytest.raises(ConfigError, match="mean_KB = 10.0 must be >= median_KB"):
        config.validate("caltech_like", {"median_KB": 12, "mean_KB": 10})


def test_data_set_bigger_than_free_disk_stops_first(tmp_path):
    with pytest.raises(ConfigError, match=r"Caltech-like set \(10000000 images\): needs [\d.]+ GB in .* GB are free there; lower caltech_like\.n_images"):
        cl.generate(tmp_path / "ds", cl.CaltechLikeConfig(n_images=10_000_000, mean_KB=9000, median_KB=10), 1)
    assert not any(tmp_path.iterdir())
