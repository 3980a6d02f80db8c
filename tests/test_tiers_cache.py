import os

import pytest

from experiments.host import cache, tiers
from experiments.settings.config import ConfigError


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


@pytest.fixture
def disk_dir(tmp_path):
    """A folder on a real disk (page cache), not tmpfs: the test's tmp_path, or one in the
    project when /tmp is memory-backed."""
    if not cache.memory_backed(tmp_path):
        yield tmp_path
        return
    from experiments.settings import paths
    d = paths.root() / "data" / f".cache-test-{os.getpid()}"
    d.mkdir(parents=True, exist_ok=True)
    yield d
    import shutil
    shutil.rmtree(d, ignore_errors=True)


def _read(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def test_evict_reports_a_method(disk_dir):
    f = disk_dir / "f"
    f.write_bytes(b"x" * 4096)
    assert cache.evict([f]) in ("drop_caches", "fadvise")
    assert cache.evict([f], "fadvise") == "fadvise"
    assert cache.evict([f], "none") == "none"
    with pytest.raises(ValueError, match="allowed: auto, drop_caches, fadvise, none"):
        cache.evict([f], "sometimes")


@pytest.mark.parametrize("method", ["auto", "fadvise"])
def test_eviction_empties_the_cache_of_a_file_just_read(disk_dir, method):
    f = disk_dir / "data.bin"
    f.write_bytes(os.urandom(8 << 20))
    os.sync()
    _read(f)
    res, pages = cache.resident_pages(f)
    assert pages == 2048 and res > pages * 0.9, "the file just read should be in the page cache"
    ev = cache.evict([disk_dir], method, label="disk")
    assert ev in ("drop_caches", "fadvise") and ev.files == 1 and not ev.memory_backed
    assert ev.resident_fraction is not None and ev.resident_fraction <= cache.COLD_LIMIT
    assert cache.resident_pages(f)[0] <= pages * cache.COLD_LIMIT and ev.cold is True


def test_residency_agrees_with_fincore(disk_dir):
    import shutil
    import subprocess
    if not shutil.which("fincore"):
        pytest.skip("util-linux fincore not installed")
    f = disk_dir / "half.bin"
    f.write_bytes(os.urandom(4 << 20))
    cache.evict([f], "fadvise")
    with open(f, "rb") as h:
        h.read(2 << 20)  # the first half (readahead may add a little)
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "PAGES", str(f)],
                         capture_output=True, text=True, check=True).stdout
    assert cache.resident_pages(f)[0] == pytest.approx(int(out.split()[0]), abs=64)


def test_missing_and_unreadable_files_are_reported_not_skipped(disk_dir, monkeypatch, capsys):
    good = disk_dir / "good.bin"
    good.write_bytes(b"g" * 8192)
    locked = disk_dir / "locked.bin"
    locked.write_bytes(b"l" * 8192)
    gone = disk_dir / "gone"
    real_open = os.open

    def deny(path, *a, **kw):  # EACCES for one file, even for root
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(cache.os, "open", deny)
    ev = cache.evict([disk_dir, gone], "fadvise", label="disk")
    assert ev == "fadvise" and ev.missing == [str(gone)]
    assert any(str(locked) in u and "Permission denied" in u for u in ev.unreadable)
    out = capsys.readouterr().out
    assert "1 missing path(s)" in out and "1 unreadable file(s)" in out and str(gone) in out
    # nothing evicted at all: the method is "none", not "fadvise"
    only = cache.evict([locked], "fadvise")
    assert only == "none" and only.unreadable
    assert cache.evict([gone], "auto") == "none"


def test_a_memory_backed_file_is_recorded_as_such(tmp_path):
    shm = tmp_path
    if not cache.memory_backed(shm):
        shm = __import__("pathlib").Path("/dev/shm")
        if not shm.is_dir() or not cache.memory_backed(shm):
            pytest.skip("no tmpfs here")
    f = shm / f"cache-test-{os.getpid()}.bin"
    try:
        f.write_bytes(b"m" * 65536)
        cache.reset_log()
        ev = cache.evict([f], "auto", label="mem")
        assert ev == "none" and ev.memory_backed and ev.resident_fraction == 1.0 and ev.cold is False
        s = cache.summary()["mem"]
        assert s["memory_backed"] and s["resident_fraction_max"] == 1.0 and s["all_cold"] is False
        cache.reset_log()
    finally:
        f.unlink(missing_ok=True)


def test_every_eviction_lands_in_env_json(disk_dir, tmp_path, monkeypatch):
    from experiments.host import envinfo
    cache.reset_log()
    assert "cold_runs" not in envinfo.capture()
    f = disk_dir / "e.bin"
    f.write_bytes(b"e" * 4096)
    for _ in range(2):
        cache.evict([f], "auto", label="disk")
    cold = envinfo.capture()["cold_runs"]["disk"]
    assert cold["evictions"] == 2 and cold["resident_fraction_max"] <= cache.COLD_LIMIT
    assert cold["all_cold"] is True and cold["methods"] in (["drop_caches"], ["fadvise"])
    cache.reset_log()


def test_unmounted_tier_outside_the_project_is_refused(tmp_path):
    gone = tmp_path / "not-mounted" / "dlio"
    with pytest.raises(ConfigError, match=r"tiers\[nvme\]\.path = .*does not exist, nor its parent"):
        tiers.prepare(tiers.Tier(name="nvme", path=str(gone)))
    assert not gone.parent.exists()


def test_checkout_placeholder_gives_each_clone_its_own_tier(tmp_path, monkeypatch):
    from experiments.settings import paths
    from experiments.host import tiers

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


def test_tier_named_is_the_one_lookup_and_names_parameter_value_and_allowed(tmp_path):
    from experiments.settings.config import ConfigError
    from experiments.host.tiers import Tier, tier_named
    tiers = [Tier(name="mem", path=str(tmp_path / "m")), Tier(name="disk", path=str(tmp_path / "d"))]
    assert tier_named("disk", tiers, "x.tier") is tiers[1]
    with pytest.raises(ConfigError, match=r"^x\.tier = 'ssd': no such tier; allowed: mem, disk$"):
        tier_named("ssd", tiers, "x.tier")
    # a path is a tier only where the caller allows it
    with pytest.raises(ConfigError, match="no such tier; allowed: mem, disk"):
        tier_named(str(tmp_path / "c"), tiers, "x.tier")
    custom = tier_named(str(tmp_path / "c"), tiers, "tier", or_path=True)
    assert custom.name == "custom" and (tmp_path / "c").is_dir()
    with pytest.raises(ConfigError, match="tier = 'ssd': no such tier; allowed: a directory path or one of mem, disk"):
        tier_named("ssd", tiers, "tier", or_path=True)
