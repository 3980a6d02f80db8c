import os

import pytest

from experiments import cache, tiers
from experiments.config import ConfigError


def test_prepare_reports_free_space_and_fstype(tmp_path):
    info = tiers.prepare(tiers.Tier(name="t", path=str(tmp_path / "d")))
    assert (tmp_path / "d").is_dir() and info.free_bytes > 0 and info.fstype != ""


def test_not_writable_tier_is_refused(tmp_path):
    if os.geteuid() == 0:
        target = "/proc/dlio-cannot-exist"  # root may write anywhere on disk, not in /proc
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = str(ro / "x")
    with pytest.raises(ConfigError, match=r"tiers\[t\]\.path = .*(cannot create|not writable)"):
        tiers.prepare(tiers.Tier(name="t", path=target))


def test_too_little_space_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"needs .* MB but only .* MB are free"):
        tiers.prepare(tiers.Tier(name="t", path=str(tmp_path)), need_bytes=1 << 62)


def test_stage_copy_is_verified_and_reused(tmp_path):
    src = tmp_path / "ds"
    (src / "train").mkdir(parents=True)
    (src / "train" / "a.bin").write_bytes(b"a" * 100)
    (src / "filelist.csv").write_text("path\ntrain/a.bin\n")
    t = tiers.Tier(name="t", path=str(tmp_path / "tier"))
    dst = tiers.stage_copy(src, t)
    assert (dst / "train" / "a.bin").read_bytes() == b"a" * 100
    (dst / "train" / "marker").write_text("kept")
    assert tiers.stage_copy(src, t) == dst and (dst / "train" / "marker").exists()
    (src / "filelist.csv").write_text("path\ntrain/a.bin\n# changed\n")
    tiers.stage_copy(src, t)
    assert not (dst / "train" / "marker").exists()


def test_evict_reports_a_method(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x" * 4096)
    assert cache.evict([f]) in ("drop_caches", "fadvise")
    assert cache.evict([f], "fadvise") == "fadvise"
    assert cache.evict([f], "none") == "none"
    with pytest.raises(ValueError, match="allowed: auto, drop_caches, fadvise, none"):
        cache.evict([f], "sometimes")


def test_unmounted_tier_outside_the_project_is_refused(tmp_path):
    gone = tmp_path / "not-mounted" / "dlio"
    with pytest.raises(ConfigError, match=r"tiers\[nvme\]\.path = .*does not exist, nor its parent"):
        tiers.prepare(tiers.Tier(name="nvme", path=str(gone)))
    assert not gone.parent.exists()


def test_checkout_placeholder_gives_each_clone_its_own_tier(tmp_path, monkeypatch):
    from experiments import paths, tiers

    a, b = tmp_path / "a" / "proj", tmp_path / "b" / "proj"
    ids = {paths.checkout_id(a), paths.checkout_id(b)}
    assert len(ids) == 2 and all(i.startswith("proj-") for i in ids)
    monkeypatch.setenv("DLIO_ROOT", str(a))
    t = tiers.Tier(name="mem", path=str(tmp_path / "shm" / "x-{checkout}"))
    assert t.dir == tmp_path / "shm" / f"x-{paths.checkout_id(a)}"
    mine = tiers.Tier(name="nfs", path=str(tmp_path / "nfs"))  # a user's own tier: never removed
    assert tiers.outside_dirs([t, mine]) == [t.dir]


def test_require_free_names_data_set_size_and_parameter(tmp_path):
    assert tiers.require_free(tmp_path / "new" / "set", 1, "bert data", "bert.data.files") > 0
    with pytest.raises(ConfigError, match=r"bert data: needs .* GB in .* only .* GB are free.*lower bert\.data\.files"):
        tiers.require_free(tmp_path / "set", 1 << 62, "bert data", "bert.data.files")
