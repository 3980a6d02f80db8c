"""The sandbox ``make grade`` runs each submission in: bubblewrap (``bwrap``), one per submission.

What a submission's process sees (:func:`command`):

- its own grading folder (read-write, at the same path): its copy of the notebook, the lab's
  autograder zip (the public tests and the hidden tests' runs, ``gradeharness``: no reference,
  no judge), the grader's witness socket (:mod:`experiments.course.witness`), ``kit/labkit.py``
  (the student bundle), its ``HOME`` and its scratch folder (``DLIO_COURSE_DIR``: the lab's
  folder on the disk tier);
- read-only: the system (``/usr``, a few files of ``/etc``: :data:`ETC`), the interpreter (``sys.base_prefix``) and the
  grading environment (``sys.prefix``: numpy, pandas, TensorFlow, PyTorch, otter), with the
  editable install of the package ``experiments`` blanked: the repository is not mounted, so
  the package cannot be imported;
- private: ``/tmp``, ``/dev/shm`` (the lab's memory tier: a tmpfs of its own, gone with the
  sandbox), ``/proc`` (its own processes only), no network (loopback only, for the kernel);
- as the real ``nobody`` (uid 65534, no capability, no new privileges) when the grader is root
  (bwrap makes the namespaces as root, ``setpriv`` then drops to nobody: it reads only what
  nobody may read, and only inside the mounts); as the grader's own user in a user namespace
  of its own otherwise; a new session (no terminal to inject into), killed with its parent.

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


class _Binds:
    """bwrap's mount arguments, each destination's missing parents made first as ``0755``
    folders (bwrap makes them ``0700``: the unprivileged user could not pass them)."""

    def __init__(self):
        self.args: list[str] = []
        self._made: set[Path] = {Path("/")}
        self._bound: set[Path] = set()

    def _parents(self, dest: Path) -> None:
        for d in reversed(dest.parents):
            if d in self._bound:   # inside a bound folder: there already
                return
            if d not in self._made:
                self._made.add(d)
                self.args += ["--perms", "0755", "--dir", str(d)]

    def add(self, op: str, src: str, dest: Path) -> None:
        self._parents(dest)
        self._made.add(dest)
        self._bound.add(dest)
        self.args += [op, src, str(dest)]

    def tmpfs(self, dest: Path) -> None:
        """A private memory-backed folder everyone may write to (``1777``)."""
        self._parents(dest)
        self._made.add(dest)
        self.args += ["--perms", "1777", "--tmpfs", str(dest)]


def _system_binds(b: _Binds) -> None:
    """``/usr`` read-only, and ``/bin``, ``/lib``, ... as on the host (links into /usr on a
    merged-/usr system, read-only binds otherwise); of ``/etc`` only :data:`ETC`."""
    b.add("--ro-bind", "/usr", Path("/usr"))
    for d in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / d
        if p.is_symlink():
            b.add("--symlink", os.readlink(p), p)
        elif p.is_dir():
            b.add("--ro-bind", str(p), p)
    for name in ETC:
        p = Path("/etc") / name
        if p.is_symlink():
            b.add("--symlink", os.readlink(p), p)
        elif p.exists():
            b.add("--ro-bind", str(p), p)


def _editable_hooks() -> list[Path]:
    """The files of the grading environment that put this checkout on ``sys.path``: the
    editable install's ``.pth`` and finder (blanked in the sandbox)."""
    site = Path(sysconfig.get_paths()["purelib"])
    return sorted(p for p in site.glob("__editable__*") if p.is_file())


def _drop_to_nobody() -> list[str]:
    """Inside the sandbox, before ``argv``: become ``nobody`` for good (no capability, no way
    back), when the grader is root."""
    return [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={UID}", f"--regid={GID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]


def command(work: Path, argv: list[str], env: dict[str, str]) -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` with ``env`` (and nothing else of this
    process's environment) in ``work``'s sandbox. As root, bwrap makes the namespaces and the
    submission then runs as the real ``nobody`` (``setpriv``: it reads what nobody may read,
    and only inside the mounts); as another user, in a user namespace of its own, as that user."""
    root = os.geteuid() == 0
    if root:
        ns = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        ns = ["--unshare-all"]
    b = _Binds()
    _system_binds(b)
    b.add("--ro-bind", "/sys", Path("/sys"))
    b.tmpfs(Path("/tmp"))   # before the grading folder, which lies in the host's /tmp
    for p in dict.fromkeys([Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.prefix)]):
        if not str(p).startswith("/usr"):
            b.add("--ro-bind", str(p), p)
    for hook in _editable_hooks():
        b.add("--ro-bind", "/dev/null", hook)
    b.add("--bind", str(work), work)
    cmd = ["bwrap", *ns, "--die-with-parent", "--new-session", "--clearenv", "--hostname", "grader",
           *b.args, "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",
           "--remount-ro", "/", "--chdir", str(work)]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    return cmd + ["--", *(_drop_to_nobody() if root else []), *argv]


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
        # otter and nbformat found, not imported: importing otter costs 2.4 s of an idle core
        # (nbformat's jsonschema grammars), paid again by every submission's child anyway
        code = ("import importlib.util, os; "
                "assert all(importlib.util.find_spec(m) for m in ('otter', 'nbformat')), 'otter or nbformat is missing'; "
                "assert importlib.util.find_spec('experiments') is None, 'experiments is importable'; "
                "print(os.getuid())")
        try:
            p = subprocess.run(command(Path(d), [sys.executable, "-c", code], {"PATH": "/usr/bin:/bin", "HOME": d}),
                               capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"bwrap did not run ({e})"
    if p.returncode != 0 or p.stdout.strip() != str(UID if os.geteuid() == 0 else os.getuid()):
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return False, f"bwrap cannot make the sandbox here ({last})"
    return True, ""
