"""The sandbox ``make grade`` runs each submission in: bubblewrap (``bwrap``), one per submission.

What a submission's process sees (:func:`command`):

- its own grading folder (read-write, at the same path): its copy of the notebook, the lab's
  autograder zip (the tests and the grader's side of them, ``gradekit``), ``kit/labkit.py``
  (the student bundle), its ``HOME`` and its scratch folder (``DLIO_COURSE_DIR``: the lab's
  folder on the disk tier);
- read-only: the system (``/usr``, a few files of ``/etc``: :data:`ETC`), the interpreter (``sys.base_prefix``) and the
  grading environment (``sys.prefix``: numpy, pandas, TensorFlow, PyTorch, otter), with the
  editable install of the package ``experiments`` blanked: the repository is not mounted, so
  the package cannot be imported;
- private: ``/tmp``, ``/dev/shm`` (the lab's memory tier: a tmpfs of its own, gone with the
  sandbox), ``/proc`` (its own processes only), no network (loopback only, for the kernel);
- as ``nobody`` (uid 65534 in a user namespace of its own, no capabilities), a new session (no
  terminal to inject into), killed with its parent.

Nothing else: no other submission, no master notebook, no repository, no home of anyone.
Where bubblewrap is missing or cannot make namespaces here, :func:`available` says why and the
grader falls back (experiments/course/grade.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

UID = GID = 65534   # nobody / nogroup
WHY_NOT: list[str] = []   # why bubblewrap cannot run here (filled by available())
_OK: list[bool] = []


# what of /etc a sandbox sees (read-only): the loader's, the users' names, time, certificates,
# fonts and the alternatives /usr/bin links through; never shadow, ssh keys or services' secrets
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf", "hosts",
       "localtime", "timezone", "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "fonts", "alternatives", "mime.types",
       "os-release", "debian_version", "matplotlibrc", "xdg")


def _system_binds() -> list[str]:
    """``/usr`` read-only, and ``/bin``, ``/lib``, ... as on the host (links into /usr on a
    merged-/usr system, read-only binds otherwise); of ``/etc`` only :data:`ETC`."""
    out = ["--ro-bind", "/usr", "/usr"]
    for d in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / d
        if p.is_symlink():
            out += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            out += ["--ro-bind", str(p), str(p)]
    for name in ETC:
        p = Path("/etc") / name
        if p.is_symlink():
            out += ["--symlink", os.readlink(p), str(p)]
        elif p.exists():
            out += ["--ro-bind", str(p), str(p)]
    return out


def _editable_hooks() -> list[Path]:
    """The files of the grading environment that put this checkout on ``sys.path``: the
    editable install's ``.pth`` and finder (blanked in the sandbox)."""
    site = Path(sysconfig.get_paths()["purelib"])
    return sorted(p for p in site.glob("__editable__*") if p.is_file())


def command(work: Path, argv: list[str], env: dict[str, str]) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` with ``env`` (and nothing else of this
    process's environment) in ``work``'s sandbox."""
    cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
           "--uid", str(UID), "--gid", str(GID), "--clearenv", "--hostname", "grader",
           *_system_binds(), "--ro-bind", "/sys", "/sys",
           "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",
           "--perms", "1777", "--tmpfs", "/tmp"]
    for p in dict.fromkeys([Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.prefix)]):
        if not str(p).startswith("/usr"):
            cmd += ["--ro-bind", str(p), str(p)]
    for hook in _editable_hooks():
        cmd += ["--ro-bind", "/dev/null", str(hook)]
    cmd += ["--bind", str(work), str(work), "--remount-ro", "/", "--chdir", str(work)]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    return cmd + ["--", *argv]


def available() -> bool:
    """Whether bubblewrap runs here: installed, and a sandbox as :func:`command` makes it can
    start this interpreter and cannot import ``experiments``. When not, :data:`WHY_NOT` says why
    (once)."""
    if _OK:
        return _OK[0]
    ok, why = _probe()
    if not ok:
        WHY_NOT.append(why)
    _OK.append(ok)
    return ok


def _probe() -> tuple[bool, str]:
    if not shutil.which("bwrap"):
        return False, "bubblewrap (bwrap) is not installed (env/system-tools.sh installs it: apt-get install bubblewrap)"
    import tempfile
    with tempfile.TemporaryDirectory(prefix="dlio-grade-probe-") as d:
        os.chmod(d, 0o755)
        code = ("import importlib.util, os, otter, nbformat; "
                "assert importlib.util.find_spec('experiments') is None, 'experiments is importable'; "
                "print(os.getuid())")
        try:
            p = subprocess.run(command(Path(d), [sys.executable, "-c", code], {"PATH": "/usr/bin:/bin", "HOME": d}),
                               capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"bwrap did not run ({e})"
    if p.returncode != 0 or p.stdout.strip() != str(UID):
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return False, f"bwrap cannot make the sandbox here ({last})"
    return True, ""
