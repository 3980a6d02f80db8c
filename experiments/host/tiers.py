"""Storage tiers: the one place that knows where each tier is and whether it can be used.

A tier is a named directory, ``{name: ssd, path: /mnt/ssd/dlio}``. The defaults are a memory
tier (``/dev/shm/dlio-artifact-{checkout}``, standing in for NVM/Optane) and the local disk
(``data/tiers/disk``). ``{checkout}`` in a path becomes a name unique to this checkout
(:func:`experiments.settings.paths.checkout_id`), so two clones on one host never share a tier. :func:`prepare` checks a
tier before any work (exists or can be made, writable, enough free space) and
:func:`stage_copy` puts a data set on a tier, verified, so every tier reads the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, RootModel, field_validator

from ..settings import paths
from ..settings.config import ConfigError, Section


class Tier(Section):
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$", max_length=32)
    path: str = Field(min_length=1)

    @property
    def dir(self) -> Path:
        return paths.resolve(self.path)


class TierList(RootModel[list[Tier]]):
    root: list[Tier] = Field(min_length=1)

    @field_validator("root")
    @classmethod
    def _unique(cls, v: list[Tier]) -> list[Tier]:
        names = [t.name for t in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tier names must be unique; repeated: {', '.join(dup)}")
        return v


@dataclass(frozen=True)
class TierInfo:
    """What the package found out about a tier's directory."""

    name: str
    path: str
    fstype: str
    device: str
    free_bytes: int
    total_bytes: int

    @property
    def memory_backed(self) -> bool:
        return self.fstype in MEMORY_FS


MEMORY_FS = ("tmpfs", "ramfs")  # file systems that are memory: nothing to evict


def mount_of(path: Path) -> tuple[str, str]:
    """(file-system type, device) of the mount that holds ``path``, from /proc/self/mounts."""
    best, fstype, dev = "", "unknown", "unknown"
    p = str(path.resolve())
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                d, mnt, typ = line.split()[:3]
                mnt = mnt.replace("\\040", " ")
                if (p == mnt or p.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, fstype, dev = mnt, typ, d
    except OSError:
        pass
    return fstype, dev


def prepare(tier: Tier, need_bytes: int = 0) -> TierInfo:
    """Create the tier's directory if needed and check it: writable, ``need_bytes`` free.

    A missing tier inside the project (a relative path) is created with its parents; outside
    the project only the last folder is created, so an unmounted file system is an error.

    Raises :class:`ConfigError` naming the tier, its path and what is wrong, before any work.
    """
    d = tier.dir
    outside = Path(paths.expand(tier.path)).is_absolute()
    if outside and not d.exists() and not d.parent.exists():
        # An unmounted device or a mistyped path: never quietly create it on the root disk.
        raise ConfigError(
            f"tiers[{tier.name}].path = {tier.path!r}: the tier directory does not exist, nor its "
            f"parent {str(d.parent)!r}; mount the file system or fix the path"
        )
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(
            f"tiers[{tier.name}].path = {tier.path!r}: cannot create the directory ({e.strerror}); "
            "a tier must be a writable directory"
        ) from None
    probe = d / f".probe-{os.getpid()}"
    try:
        probe.write_bytes(b"x")
        probe.unlink()
    except OSError as e:
        raise ConfigError(
            f"tiers[{tier.name}].path = {tier.path!r}: not writable ({e.strerror}); "
            "a tier must be a writable directory"
        ) from None
    st = os.statvfs(d)
    free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    if need_bytes > free:
        raise ConfigError(
            f"tiers[{tier.name}].path = {tier.path!r}: needs {need_bytes / 1e6:.1f} MB but only "
            f"{free / 1e6:.1f} MB are free; free space or point the tier elsewhere"
        )
    fstype, dev = mount_of(d)
    return TierInfo(tier.name, str(d), fstype, dev, free, total)


def require_free(folder: str | os.PathLike, need_bytes: int, what: str, param: str,
                 say: bool = False) -> int:
    """Stop before writing ``need_bytes`` (an estimate, stated up front) of ``what`` into
    ``folder`` when its file system has less free space; returns the free bytes.

    The message names the data set, its size, the free space and ``param``, the parameter
    that sizes it. Space already held by an earlier copy in ``folder`` counts as free (the
    caller removes it before writing). ``say`` prints the size and the free space first.
    """
    d = Path(folder)
    probe = d
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    if d.exists():
        free += sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    if need_bytes > free:
        raise ConfigError(
            f"{what}: needs {need_bytes / 1e9:.2f} GB in {d} but only {free / 1e9:.2f} GB are free "
            f"there; lower {param} (or free space / point the data elsewhere) and run again")
    if say:
        print(f"{what}: writing about {_human(need_bytes)} to {d} ({_human(free)} free)")
    return free


def _human(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def tier_named(name: str, tiers: list[Tier], param: str, *, or_path: bool = False) -> Tier:
    """The tier called ``name`` in ``tiers`` (every stage's one lookup of a tier by name).

    With ``or_path``, a directory path (containing ``/`` or starting with ``~``) is accepted
    too and gives a tier ``custom`` there, checked by :func:`prepare` (exists or can be made,
    writable). Anything else stops with a ConfigError naming ``param``, the value and the tiers
    allowed."""
    for t in tiers:
        if t.name == name:
            return t
    if or_path and ("/" in str(name) or str(name).startswith("~")):
        t = Tier(name="custom", path=str(name))
        prepare(t)
        return t
    known = ", ".join(t.name for t in tiers)
    allowed = f"a directory path or one of {known}" if or_path else known
    raise ConfigError(f"{param} = {name!r}: no such tier; allowed: {allowed}")


def storage_tier(tiers: list[Tier]) -> str:
    """The name of the first tier that is not memory-backed (its reads reach a device): the
    tier a stage's headline numbers are taken on; the first tier if all are in memory."""
    for t in tiers:
        if mount_of(t.dir)[0] not in MEMORY_FS:
            return t.name
    return tiers[0].name


def storage_tier_of(rows) -> str:
    """The tier a stage's storage findings are judged on, from its rows (a DataFrame with
    ``tier`` and ``memory_backed`` or ``device``): the first whose runs reached a block device
    (not memory-backed; a device named), else the first. :func:`storage_tier` from the rows a
    stage measured, so a report reads the tier its runs say, not the parameters of now."""
    tiers = list(dict.fromkeys(rows["tier"]))

    def on_device(t) -> bool:
        g = rows[rows["tier"] == t]
        if "memory_backed" in g and g["memory_backed"].notna().any():
            return not g["memory_backed"].fillna(False).astype(bool).any()
        return "device" in g and bool((g["device"].fillna("").astype(str) != "").any())

    disk = [t for t in tiers if on_device(t)]
    return (disk or tiers)[0]


def tier_of(path: Path, tiers: list[Tier]) -> Tier | None:
    """The tier whose file system holds ``path`` (same device number), if any."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    for t in tiers:
        try:
            if os.stat(t.dir).st_dev == dev:
                return t
        except OSError:
            continue
    return None


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stage_copy(src: Path, tier: Tier, manifest: str = "filelist.csv") -> Path:
    """Copy the data set folder ``src`` onto ``tier`` (once) and return the copy's path.

    The copy is reused when its manifest has the same checksum as the source's; otherwise it
    is rebuilt under a temporary name and renamed into place, so a half copy is never used
    (a copy that dies half way leaves only ``<name>.partial``, removed by the next copy).
    Stops before copying when the tier lacks the room (:func:`require_free`).
    """
    src = Path(src)
    dst = tier.dir / src.name
    if src.resolve() == dst.resolve():
        return dst
    want = _digest(src / manifest)
    if (dst / manifest).exists() and _digest(dst / manifest) == want:
        return dst
    size = sum(f.stat().st_size for f in src.rglob("*") if f.is_file())
    prepare(tier)
    tmp = dst.with_name(dst.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    require_free(dst, size, f"the copy of {src.name} on tier {tier.name}",
                 f"the size of {src.name} in params.yaml, or tiers[{tier.name}].path", say=True)
    shutil.rmtree(dst, ignore_errors=True)   # the stale copy goes first: its room counted as free
    # The manifest goes last, so a copy holding it is complete.
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(manifest))
    shutil.copy2(src / manifest, tmp / manifest)
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(tmp, dst)
    return dst


def outside_dirs(tiers: list[Tier]) -> list[Path]:
    """This checkout's tier directories that lie outside the project (what ``make clean`` and
    the smoke tests remove): only those whose path names ``{checkout}``, so a tier a user
    pointed at their own file system is never removed."""
    return [t.dir for t in tiers if paths.CHECKOUT in t.path and Path(paths.expand(t.path)).is_absolute()]


def main(argv=None) -> int:
    """``python -m experiments.host.tiers dirs``: this checkout's tier directories, one per line
    (``--own``: only the per-checkout ones outside the project, safe to remove)."""
    import argparse

    from ..settings import config

    ap = argparse.ArgumentParser(prog="python -m experiments.host.tiers")
    ap.add_argument("what", choices=["dirs"])
    ap.add_argument("--own", action="store_true", help="only per-checkout directories outside the project")
    a = ap.parse_args(argv)
    tiers = config.load(tiers=None).tiers
    for d in (outside_dirs(tiers) if a.own else [t.dir for t in tiers]):
        print(d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
