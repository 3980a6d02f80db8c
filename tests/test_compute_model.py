import json

import numpy as np
import pytest

from experiments.settings import reference
from experiments.settings.config import ConfigError
from experiments.workloads import compute_model as cm


def test_thesis_v100_comes_from_reference():
    m = cm.load("thesis-v100")
    mu, sd = m.mean_std("unet3d", 8, 4)
    ref = reference.HOVON_COMPUTE_FITS["unet3d"]["mean"]
    assert mu == pytest.approx(ref["G"] * 8 + ref["B"] * 4 + ref["c"])
    assert m.mean_std("unet3d", 1, 1)[1] == 0.0  # Eq 5.2 is negative there: clipped


def test_sampler_follows_the_model(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"schema": cm.SCHEMA, "workloads": {"dlrm": {
        "mean": {"coef": {"G": 0.0, "B": 0.001, "c": 0.01}}, "std": {"coef": {"G": 0, "B": 0, "c": 0.002}}}}}))
    draw = cm.load(f).sampler("dlrm", 1, 10, seed=1)
    x = np.array([draw() for _ in range(4000)])
    assert x.mean() == pytest.approx(0.02, rel=0.02) and x.std() == pytest.approx(0.002, rel=0.1)
    assert (x >= 0).all()


@pytest.mark.parametrize("content,match", [
    (None, "no such file"),
    ("{not json", "not JSON"),
    (json.dumps({"schema": "other/2", "workloads": {}}), "schema = 'other/2'"),
    (json.dumps({"workloads": {"bert": {"mean": {"coef": {"G": 1, "B": 1}}, "std": {"coef": {"G": 0, "B": 0, "c": 0}}}}}),
     r"workloads\.bert\.mean\.coef\.c"),
])
def test_bad_model_files_name_file_and_key(tmp_path, content, match):
    f = tmp_path / "m.json"
    if content is not None:
        f.write_text(content)
    with pytest.raises(ConfigError, match=match) as e:
        cm.load(f)
    assert str(f) in str(e.value)


def test_missing_workload_is_named():
    with pytest.raises(ConfigError, match="no entry for workload 'resnet'"):
        cm.load("thesis-v100").require("resnet")


def test_accelerator_utilization_eq31_32():
    ideal = cm.ideal_compute_s(samples=800, batch_size=4, accelerators=2, sleep_s=0.5)
    assert ideal == 50.0 and cm.accelerator_utilization(ideal, 62.5) == 0.8


def test_bad_eval_entry_is_named(tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"schema": cm.SCHEMA, "workloads": {"unet3d": {
        "mean": {"coef": {"G": 0, "B": 1, "c": 0}}, "std": {"coef": {"G": 0, "B": 0, "c": 0}},
        "eval": {"mean_s": "slow"}}}}))
    with pytest.raises(ConfigError, match=r"workloads\.unet3d\.eval\.mean_s = 'slow'") as e:
        cm.load(f)
    assert str(f) in str(e.value)


def test_model_file_round_trips_through_as_file(tmp_path):
    m = cm.load("thesis-v100")
    f = tmp_path / "copy.json"
    f.write_text(json.dumps(m.as_file()))
    again = cm.load(f)
    assert again.mean_std("bert", 2, 3) == m.mean_std("bert", 2, 3)
    assert again.eval_mean_std("unet3d", 1, 1) == m.eval_mean_std("unet3d", 1, 1) == (8.403, 4.442, "eval")
