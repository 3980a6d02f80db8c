import pytest
import yaml

from experiments.settings import config
from experiments.pipeline import profile
from experiments.settings.config import ConfigError


@pytest.fixture
def params(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    (tmp_path / "profiles").mkdir()
    from experiments.settings import paths
    src = paths.Path(__file__).resolve().parent.parent / "profiles"
    for f in src.glob("*.yaml"):
        (tmp_path / "profiles" / f.name).write_text(f.read_text())
    profile.write("default")
    return tmp_path / "params.yaml"


def test_default_profile_validates(params):
    cfg = config.load(tfdata_read=None, tiers=None, seed=None)
    assert cfg.tfdata_read.threads == [1, 2, 4, 8]
    assert [t.name for t in cfg.tiers] == ["mem", "disk"]


def test_thread_count_zero_names_parameter_value_and_rule(params):
    with pytest.raises(ConfigError, match=r"tfdata_read\.threads.*\[0\].*between 1 and 1024"):
        config.load(tfdata_read={"threads": [0]})


def test_unknown_key_lists_allowed_keys(params):
    with pytest.raises(ConfigError, match=r"tfdata_read\.thread = 4: unknown parameter; allowed: .*threads"):
        config.load(tfdata_read={"thread": 4})


def test_wrong_type(params):
    with pytest.raises(ConfigError, match=r"fio_baseline\.runs = 'many'"):
        config.load(fio_baseline={"runs": "many"})


def test_an_old_name_of_the_count_of_runs_stops_with_its_new_name(params):
    """Issue 68 renamed the count of runs (repeats -> runs, max_repeats -> max_runs, the workloads'
    sweep.repeats -> sweep.runs, deepio's train_seeds -> train_runs): a params.yaml that still
    says the old word stops at the load of any stage, naming the key, its value and the new name."""
    with pytest.raises(ConfigError, match=r"alexnet\.repeats = 6: renamed to 'runs'; allowed: alexnet\.runs = 6"):
        config.validate("alexnet", {"repeats": 6})   # the old word
    with pytest.raises(ConfigError, match=r"unet3d\.sweep\.repeats = 3: renamed to 'runs'"):
        config.validate("unet3d", {"sweep": {"batch_sizes": [1], "ranks": [1], "repeats": 3}})   # the old word
    data = yaml.safe_load(params.read_text())
    data["alexnet"]["repeats"] = data["alexnet"].pop("runs")   # the old word
    data["deepio"]["train_seeds"] = data["deepio"].pop("train_runs")   # the old word
    params.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"params\.yaml: alexnet\.repeats = 6: renamed to 'runs'.*"
                       r"deepio\.train_seeds = 6: renamed to 'train_runs'"):
        config.load(seed=None)   # a stage that reads neither section stops too: before any work


def test_unknown_section_in_file(params):
    data = yaml.safe_load(params.read_text())
    data["tfdata_reed"] = {}
    params.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="unknown section.*tfdata_reed"):
        config.load(seed=None)


def test_override_merges_over_file(params):
    cfg = config.load(tfdata_read={"runs": 7})
    assert cfg.tfdata_read.runs == 7 and cfg.tfdata_read.batch_size == 64


def test_duplicate_tier_names(params):
    with pytest.raises(ConfigError, match="tier names must be unique; repeated: a"):
        config.load(tiers=[{"name": "a", "path": "/tmp/x"}, {"name": "a", "path": "/tmp/y"}])


def test_bad_bssplit(params):
    with pytest.raises(ConfigError, match="add up to 99"):
        config.load(imagenet_size_mix="4K/50:8K/49")


def test_profiles_render_and_differ(params):
    smoke, default, paper = (profile.render(n) for n in ("smoke", "default", "paper"))
    assert smoke["imagenet_like"]["n_images"] < default["imagenet_like"]["n_images"]
    assert paper["imagenet_like"]["n_images"] == 16384
    # at least the paper's five timed runs, and the 6 a 95 % median interval needs
    assert paper["tfdata_read"]["runs"] == 6 and paper["tfdata_read"]["warmup"] == 1


def test_unknown_profile(params):
    with pytest.raises(ConfigError, match="profile = 'huge'; allowed: default, smoke, paper"):
        profile.render("huge")


def test_committed_params_match_default_profile():
    """params.yaml is generated from profiles/; a stale one would run other sizes than documented."""
    from experiments.settings import paths
    committed = yaml.safe_load(paths.params_file().read_text())
    assert committed == profile.render("default")
