"""Start the N ranks of a multi-process experiment, on one host or over a Slurm allocation.

MPI programs (LMDBIO's strategies, DeepIO's loaders): ``mpiexec -n N`` on one host (MPICH's
Hydra from the ``mpich`` wheel, in the venv's ``bin``, beside this Python); inside a Slurm
allocation (``SLURM_JOB_ID`` set) ``srun --nodes K --ntasks N --mpi=pmi2`` over K of the
allocation's nodes (ranks dealt to nodes in blocks, as ``--distribution=block``). A site's own
MPI works where mpi4py is built against it (its ``mpiexec`` first on PATH).

PyTorch programs (the emulator, the thesis's workloads): ``torchrun`` with
``--standalone`` on one machine, or a c10d rendezvous on the first node across machines
(:func:`torchrun`; the emulator's Slurm script starts one per node).

:func:`record` is what a stage's ``env.json`` says about it: the launcher, the nodes, the ranks
per node, the MPI library and its version. :func:`check_nodes` stops a sweep asking for more
nodes than the allocation holds, before any work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator

from . import envinfo
from ..settings.config import ConfigError

ALL = "all"  # a ``nodes`` entry: every node of the allocation (1 off Slurm)


def in_slurm() -> bool:
    """Inside a Slurm allocation (``salloc``, ``sbatch``): ``SLURM_JOB_ID`` is set."""
    return bool(os.environ.get("SLURM_JOB_ID"))


def allocation_nodes() -> int:
    """Nodes this process may use: ``SLURM_JOB_NUM_NODES`` (or ``SLURM_NNODES``) inside an
    allocation, 1 outside."""
    if not in_slurm():
        return 1
    for k in ("SLURM_JOB_NUM_NODES", "SLURM_NNODES"):
        v = os.environ.get(k, "")
        if v.isdigit() and int(v) >= 1:
            return int(v)
    return 1


def _where() -> str:
    return (f"the Slurm allocation {os.environ['SLURM_JOB_ID']} holds {allocation_nodes()} node(s)"
            if in_slurm() else "outside a Slurm allocation only this host (1 node) is available")


def check_nodes(values, param: str) -> list:
    """``values`` (node counts, or ``"all"``) if every count fits the allocation; a ConfigError
    naming ``param``, the value and the allocation otherwise."""
    have = allocation_nodes()
    for v in values:
        if v == ALL:
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{param} = {v!r}: allowed: a node count >= 1 or {ALL!r}")
        if v > have:
            raise ConfigError(f"{param} = {v} nodes, but {_where()}; allowed: 1..{have} or "
                              f"{ALL!r} (run inside a larger allocation, e.g. salloc -N {v} make paper)")
    return list(values)


# A sweep's ``nodes`` parameter (LMDBIO, DeepIO): node counts or "all", checked on load.
NodeCounts = Annotated[list[int | Literal["all"]], AfterValidator(lambda v: check_nodes(v, "nodes"))]


def resolve_nodes(values) -> list[int]:
    """The node counts of a sweep, ``"all"`` replaced by the allocation's count; sorted, unique."""
    have = allocation_nodes()
    return sorted({have if v == ALL else int(v) for v in check_nodes(values, "nodes")})


def ranked(procs: list[int], nodes: list | None) -> int:
    """The (P, nodes) pairs a launcher sweep runs: every node count (``all``: the allocation's)
    no larger than P."""
    return sum(1 for q in procs for n in resolve_nodes(nodes or [1]) if n <= q)


def _bin(name: str) -> str:
    """``name`` from this Python's bin folder (the venv's, where the mpich wheel puts mpiexec),
    else from PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise ConfigError(f"{name} was not found beside {sys.executable} nor on PATH; allowed: "
                          "the mpich wheel in the venv (make setup) or a site MPI on PATH")
    return found


def mpi_command(ranks: int, argv: list[str], nodes: int = 1) -> list[str]:
    """The command that starts ``ranks`` ranks of ``python argv...`` over ``nodes`` nodes:
    ``srun`` inside an allocation, ``mpiexec`` outside (where ``nodes`` must be 1)."""
    if ranks < 1 or nodes < 1 or nodes > ranks:
        raise ConfigError(f"ranks = {ranks}, nodes = {nodes}: allowed: 1 <= nodes <= ranks")
    if in_slurm():
        return ["srun", f"--nodes={nodes}", f"--ntasks={ranks}", "--distribution=block",
                "--mpi=pmi2", "--kill-on-bad-exit=1", "--overlap", "--overcommit",
                sys.executable, *argv]
    if nodes != 1:
        raise ConfigError(f"nodes = {nodes}: {_where()}")
    return [_bin("mpiexec"), "-n", str(ranks), sys.executable, *argv]


# MPICH's waits (a window's fence, a barrier) poll and yield the CPU; with more ranks than cores
# the polling ranks take the cores from the ones with work: ~30,000 involuntary switches a rank
# and LMDBIO's hand-over strategies 1.3-3x slower at P = 8 on the 2-core reference box. Raising
# MPIR_CVAR_POLLS_BEFORE_YIELD changes nothing; heavy yield (a sleep in place of sched_yield)
# gives the cores back (experiments.lmdbio.waits_bench, docs/lmdbio.md). Open MPI makes the
# same switch by itself when it oversubscribes (mpi_yield_when_idle).
HEAVY_YIELD = "MPIR_CVAR_ENABLE_HEAVY_YIELD"


def oversubscribed(ranks: int) -> bool:
    """Whether ``ranks`` ranks on this host outnumber the cores this process may use (off Slurm,
    where every rank runs here)."""
    return not in_slurm() and ranks > envinfo.host_cores()


class RankPool:
    """``ranks`` ranks of the MPI program ``python -m module`` over ``nodes`` nodes, started
    once (:func:`mpi_command`) and given one run after another: :meth:`call` sends every rank
    the run's spec over its own TCP connection to this process and returns rank 0's list of
    rows. Between runs the ranks sleep in ``recv`` (no CPU, no MPI polling), so pools of
    several sizes can wait side by side while another runs; starting Python, numpy and MPI once
    instead of per run saves about half a second a run. A rank that fails aborts the job
    (:func:`experiments.host.mpi_node.serve`); :meth:`call` then raises with the output's tail.
    Use as a context manager (or :meth:`close`)."""

    def __init__(self, ranks: int, module: str, nodes: int = 1, timeout_s: float = 3600):
        import socket
        import tempfile

        self.ranks, self.module, self.nodes, self.timeout_s = ranks, module, nodes, timeout_s
        # in an allocation the ranks may run on other hosts than this one (salloc's shell may be
        # on a login node), even on one node: listen on every interface there, on loopback off it
        host = socket.gethostname() if in_slurm() else "127.0.0.1"
        self._server = socket.create_server(("" if in_slurm() else host, 0))
        self._server.settimeout(1.0)
        addr = f"{host}:{self._server.getsockname()[1]}"
        self._log = tempfile.TemporaryFile("w+")
        e = dict(os.environ)
        if oversubscribed(ranks):
            e.setdefault(HEAVY_YIELD, "1")   # a value set by the user is kept
        root = str(Path(__file__).resolve().parents[2])   # the project (experiments/host/launcher.py)
        e["PYTHONPATH"] = root + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
        self.cmd = mpi_command(ranks, ["-m", module, "--serve", addr], nodes)
        # a session of its own: a forced stop signals the launcher and every process it started
        # (Hydra's proxies), and the notebook's Ctrl-C does not reach the ranks half-way
        self._proc = subprocess.Popen(self.cmd, env=e, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self._conns, self._closed, self.removed_shm = {}, False, []
        self.ranks_info: dict[int, dict] = {}  # rank -> host, pid, shm (experiments.host.mpi_node.serve)
        try:
            while len(self._conns) < ranks:
                self._alive("starting")
                try:
                    c, _ = self._server.accept()
                except TimeoutError:
                    continue
                f = c.makefile("rw")
                rank, info = f.readline().split(" ", 1)
                self._conns[int(rank)] = (c, f)
                self.ranks_info[int(rank)] = json.loads(info)
        except BaseException:
            self.close()
            raise

    def _tail(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read()[-3000:]

    def _alive(self, doing: str) -> None:
        code = self._proc.poll()
        if code is not None:
            raise RuntimeError(f"{' '.join(self.cmd)}: exit {code} while {doing}; output tail:\n"
                               f"{self._tail()}")

    def call(self, spec: dict) -> list:
        """Run ``spec`` on every rank; rank 0's rows (one per rank, in rank order)."""
        import select
        import time

        line = json.dumps(spec) + "\n"
        try:
            for _, f in self._conns.values():
                f.write(line)
                f.flush()
        except OSError:  # a rank is gone: its launcher says why once it has ended
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            self._alive("sending a spec")
            raise RuntimeError(f"{' '.join(self.cmd)}: a rank hung up; output tail:\n{self._tail()}")
        conn0, f0 = self._conns[0]
        deadline = time.monotonic() + self.timeout_s
        while not select.select([conn0], [], [], 1.0)[0]:
            self._alive("running a spec")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{' '.join(self.cmd)}: no result in {self.timeout_s:.0f} s")
        try:
            reply = f0.readline()
        except OSError:   # ECONNRESET: rank 0's end went away with the reply unread (a rank killed)
            reply = ""
        if not reply:
            self._proc.wait(timeout=30)
            self._alive("running a spec")
            raise RuntimeError(f"{' '.join(self.cmd)}: rank 0 hung up; output tail:\n{self._tail()}")
        return json.loads(reply)

    def ask_exit(self) -> None:
        """Send every rank ``exit`` (they leave their loop and MPI_Finalize runs); not waiting."""
        for c, f in self._conns.values():
            try:
                f.write("exit\n")
                f.flush()
            except OSError:
                pass

    def close(self, grace_s: float = 30) -> None:
        """Stop the ranks cleanly: ``exit`` to each and wait up to ``grace_s`` s, so that every
        rank's MPI_Finalize unlinks MPICH's shared-memory files. Ranks still running then are
        stopped by force (:meth:`_stop`). Either way, the files this pool's ranks mapped on this
        host and no live process maps any more are removed (:func:`remove_shm`): a rank that
        aborts (``MPI_Abort``) or is killed leaves them in /dev/shm otherwise."""
        if self._closed:
            return
        self._closed = True
        self.ask_exit()
        try:
            if self._proc.wait(timeout=grace_s) != 0:
                _reap_session(self._proc.pid)  # a launcher that failed may leave a rank behind
        except subprocess.TimeoutExpired:
            self._stop()
        for c, f in self._conns.values():
            try:
                f.close()  # flushes what a dead rank's socket would not take
            except OSError:
                pass
            c.close()
        self._conns = {}
        self._server.close()
        self._log.close()
        self.removed_shm = remove_shm(self.shm_segments())

    def _stop(self, term_s: float = 5) -> None:
        """SIGTERM to the launcher's session (mpiexec and srun pass it on to the ranks), SIGKILL
        to what is left after ``term_s`` s."""
        import signal

        for sig, wait_s in ((signal.SIGTERM, term_s), (signal.SIGKILL, None)):
            try:
                os.killpg(self._proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self._proc.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        _reap_session(self._proc.pid)

    def shm_segments(self) -> list[str]:
        """MPICH's shared-memory files this pool's ranks on this host mapped at start (one per
        node and job); sorted."""
        import socket

        here = socket.gethostname()
        return sorted({p for i in self.ranks_info.values() if i.get("host") == here for p in i["shm"]})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _reap_session(sid: int, wait_s: float = 5) -> None:
    """SIGKILL every process still in session ``sid`` (a rank that outlived its launcher: Hydra
    killed with SIGKILL cannot pass the signal on), and wait up to ``wait_s`` s for them to go."""
    import signal
    import time

    def members() -> list[int]:
        out = []
        for d in Path("/proc").glob("[0-9]*"):
            try:
                if os.getsid(int(d.name)) == sid:
                    out.append(int(d.name))
            except OSError:  # gone meanwhile
                pass
        return out

    deadline = time.monotonic() + wait_s
    while (left := members()) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def mapped_files() -> set[str]:
    """Every file some live process on this host maps or holds open (``/proc/*/maps`` and
    ``/proc/*/fd``; the processes this one may read)."""
    out: set[str] = set()
    for d in Path("/proc").glob("[0-9]*"):
        try:
            out |= {ln.split()[-1] for ln in (d / "maps").read_text().splitlines() if "/" in ln}
            fds = list((d / "fd").iterdir())
        except OSError:  # gone meanwhile, or not ours to read
            continue
        for f in fds:
            try:
                out.add(os.readlink(f))
            except OSError:  # closed meanwhile (the listing's own descriptor, for one)
                pass
    return out


def remove_shm(paths: list[str]) -> list[str]:
    """Unlink those of ``paths`` (MPICH shared-memory files a pool's ranks reported) that still
    exist and no live process maps or holds open; the ones removed. Files of other jobs are
    never in ``paths``, and one still in use is left."""
    present = [p for p in paths if os.path.exists(p)]
    if not present:
        return []
    busy = mapped_files()
    removed = []
    for p in present:
        if p in busy:
            continue
        try:
            os.unlink(p)
            removed.append(p)
        except FileNotFoundError:
            pass
    return removed


def call(module: str, spec: dict, ranks: int, nodes: int = 1, pool: RankPool | None = None) -> list:
    """Rank 0's rows of one run of ``spec``: in ``pool``, or in ranks of ``module`` started for
    this run alone."""
    if pool is not None:
        return pool.call(spec)
    with RankPool(ranks, module, nodes) as own:
        return own.call(spec)


class Pools:
    """One :class:`RankPool` of ``module`` per (ranks, nodes), started when first asked for and
    closed together (a sweep keeps each size's ranks for all its runs)."""

    def __init__(self, module: str):
        self.module, self._pools = module, {}

    def get(self, ranks: int, nodes: int = 1) -> RankPool:
        if (ranks, nodes) not in self._pools:
            self._pools[(ranks, nodes)] = RankPool(ranks, self.module, nodes)
        return self._pools[(ranks, nodes)]

    def close(self) -> None:
        """Ask every pool's ranks to exit at once, then close each (:meth:`RankPool.close`)."""
        for p in self._pools.values():
            p.ask_exit()
        while self._pools:
            self._pools.popitem()[1].close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def torchrun(nproc_per_node: int, argv: list[str], nnodes: int = 1,
             rdzv_endpoint: str | None = None, rdzv_id: str = "torchrun") -> list[str]:
    """``torchrun`` (``python -m torch.distributed.run``) of one node: ``--standalone`` for one
    node without an endpoint; else a c10d rendezvous at ``rdzv_endpoint`` (HOST:PORT, the first
    node), the same command on every node."""
    cmd = [sys.executable, "-m", "torch.distributed.run"]
    if nnodes == 1 and not rdzv_endpoint:
        cmd += ["--standalone", "--nnodes=1"]
    else:
        cmd += [f"--nnodes={nnodes}", "--rdzv-backend=c10d",
                f"--rdzv-endpoint={rdzv_endpoint or 'HOST:PORT'}", f"--rdzv-id={rdzv_id}"]
    return cmd + [f"--nproc-per-node={nproc_per_node}", *argv]


def mpi_library() -> dict:
    """The MPI library mpi4py loads: its name and version line, mpi4py's version (``None`` when
    mpi4py cannot be imported). Queried in a child process, so this one never starts MPI."""
    code = ("import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; "
            "print(mpi4py.__version__); print(MPI.Get_library_version().splitlines()[0].strip())")
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {"mpi4py": None, "library": None}
    if p.returncode != 0:
        return {"mpi4py": None, "library": None, "error": p.stderr.strip()[-300:]}
    lines = p.stdout.strip().splitlines()
    return {"mpi4py": lines[0], "library": lines[1] if len(lines) > 1 else None}


def record(nodes: list[int], ranks_per_node: int | None = None) -> dict:
    """What ``env.json`` says about how a stage started its ranks: launcher (``mpiexec`` or
    ``srun``), the node counts its sweep used, the allocation's nodes and hosts, the ranks per
    node (the emulated node size on one host), the MPI library and version."""
    return {"launcher": "srun" if in_slurm() else "mpiexec", "nodes": list(nodes),
            "allocation_nodes": allocation_nodes(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "slurm_nodelist": os.environ.get("SLURM_JOB_NODELIST"),
            "ranks_per_node": ranks_per_node, "mpi": mpi_library(),
            "oversubscribed_waits": (f"{HEAVY_YIELD}={os.environ[HEAVY_YIELD]} (set by the user)"
                                     if HEAVY_YIELD in os.environ else
                                     f"{HEAVY_YIELD}=1 for pools whose ranks outnumber this host's "
                                     f"{envinfo.host_cores()} cores (off Slurm)")}
