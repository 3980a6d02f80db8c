"""bpftrace back end: system-call tracepoints (VFS layer) and block-layer tracepoints (BIO).

What it traces (the thesis's Section 4.2, made portable):

- ``tracepoint:syscalls:sys_{enter,exit}_*`` of the traced process tree only: ``read``,
  ``pread64``, ``readv``, ``preadv``, ``preadv2``, ``write``, ``pwrite64``, ``writev``,
  ``pwritev``, ``pwritev2``; the copies ``sendfile64``, ``copy_file_range``, ``splice`` (two
  rows each: ``<call>_in`` names the source, ``<call>_out`` the destination, both with the
  bytes moved); ``mmap`` of a file; ``openat`` and ``close`` (timeline mode). The tree is
  followed in the kernel: the root pid is seeded in a map and ``sched:sched_process_fork``
  adds every child (DataLoader workers, torchrun ranks, a shell's pipeline), so no process name
  has to be guessed (the thesis's filter).
- **Which file** (``files="kernel"``, the default where the kernel has BTF): at the system
  call the program takes the kernel's own ``struct file`` from the task's descriptor table
  (``curtask->files->fdt->fd[fd]``), the object the VFS call is about to operate on, and keys
  the call by the file's inode (device, inode number, generation); the file's name is read
  once per inode from its dentry chain (one ``P`` line per file and per directory, the path
  is put together in user space with the mount table). So a descriptor duplicated with
  ``dup``/``dup2``/``dup3``/``fcntl(F_DUPFD)``, inherited across ``fork``/``exec``, set up by
  a shell redirection or opened before tracing began is attributed to the right file without
  any descriptor bookkeeping, and the offset of ``read``/``write``/``readv``/``writev`` is the
  file's own position (``f_pos``) at the call. The thesis resolved names with kprobes on
  ``vfs_read``/``vfs_open``; kernels built without ``CONFIG_KPROBES`` (like the reference box)
  refuse kprobes, while the descriptor table is reachable from any tracepoint. Without BTF
  (``files="descriptors"``) the calls carry descriptor numbers, and
  :func:`experiments.trace.resolve.resolve` follows ``openat``, ``dup*``, ``fcntl``,
  ``close`` and ``fork`` (the ``dup*``/``fcntl`` tracepoints are added for that).
- Two modes. ``timeline``: one printed line per call (latency, offset, file), as before.
  ``vector``: the calls are **aggregated in the kernel** in a map keyed by (operation, file,
  bytes returned, whether the call started where the same process's previous call on that
  file ended) with exact counts; only the per-file name lines, the ``mmap`` calls and one
  line per block request are printed. That gives Table 4.2's counts, bytes, unique files and
  size quartiles exactly (sizes are discrete, so a count per size is the whole distribution)
  at a fraction of the cost of a line per call; there is no timeline. A descriptor's file is
  resolved so only at its first read or write in a process and kept in a map until the number
  stops naming it (``close``, ``dup2``/``dup3`` onto it, ``exec``, ``close_range``; issue 56):
  one map lookup per call instead of a dozen kernel-memory reads.
- **Which hook** (vector mode; issue 70): where the kernel lets bpftrace attach ``fentry``/
  ``fexit`` programs (``kfunc:``/``kretfunc:``; BTF, a trampoline-capable x86-64 kernel, and a
  bpftrace that finds the kernel's traceable functions), the vector program's system-call
  probes go on the system-call functions themselves (``kretfunc:__x64_sys_read`` and so on,
  :func:`to_kfunc`): the same calls, arguments and return values as the tracepoints, so every
  count is the same, without the syscall tracepoints' slow path and record copy. Elsewhere the
  ``tracepoint:syscalls`` program runs (the fallback); the trace's metadata says which one ran
  (``probes``: ``kfunc`` or ``tracepoint``, and ``why_not_kfunc``).
- ``tracepoint:block:block_rq_issue`` / ``block_rq_complete`` on the devices that hold the traced
  files (all devices when none is known): one row per request, latency = completion - issue
  (timeline mode; vector mode prints the request at issue only). The submitter of each
  request is recorded in the kernel at ``block_getrq`` (in the submitting process's context;
  the request is often issued later from a kernel worker). By default every request to the
  device is kept (``block_scope="device"``, as the thesis did, since write-back happens in
  kernel threads); ``"tree"`` keeps only requests the tree submitted.
- Time: bpftrace's ``nsecs`` is the kernel's CLOCK_MONOTONIC. Python reads the same clock
  (``time.monotonic_ns``) next to ``time.time_ns`` several times and keeps the pair with the
  smallest gap; that offset maps every kernel timestamp to wall-clock time (the thesis's
  "time alignment", to well under a microsecond of uncertainty instead of one second).
- Lines of bpftrace's output that do not parse are counted (``unparsed_lines`` in the trace's
  metadata, with up to five examples), never silently dropped (the parsing:
  :mod:`.bpftrace_output`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path

from ..host.procs import interrupt

TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
# the tracepoints every variant needs (the rest are used where the kernel has them)
SYSCALLS = ("read", "pread64", "readv", "write", "pwrite64", "writev", "openat", "close", "lseek")
OPTIONAL_SYSCALLS = ("preadv", "preadv2", "pwritev", "pwritev2", "sendfile64", "copy_file_range",
                     "splice", "mmap", "dup", "dup2", "dup3", "fcntl", "close_range")
AT_FDCWD = -100
MODES = ("timeline", "vector")
PROBE_KINDS = ("kfunc", "tracepoint")  # the vector program's system-call hooks, preferred first
FILE_NAMING = ("auto", "kernel", "descriptors")

# operation ids used inside the bpftrace program; names as in the trace schema
OPS: dict[int, str] = {
    1: "read", 2: "pread64", 3: "readv", 4: "preadv", 5: "preadv2",
    6: "write", 7: "pwrite64", 8: "writev", 9: "pwritev", 10: "pwritev2",
    11: "sendfile_in", 12: "sendfile_out", 13: "copy_file_range_in", 14: "copy_file_range_out",
    15: "splice_in", 16: "splice_out", 17: "openat", 18: "close", 19: "mmap", 20: "lseek",
    21: "dup", 22: "dup2", 23: "dup3", 24: "fcntl",
}
OP_ID = {v: k for k, v in OPS.items()}
# single-file I/O calls: tracepoint name -> (op id, how the offset is found)
_IO = {"read": "fpos", "readv": "fpos", "write": "fpos", "writev": "fpos",
       "pread64": "pos", "pwrite64": "pos", "preadv": "pos_l", "pwritev": "pos_l",
       "preadv2": "pos_l2", "pwritev2": "pos_l2"}
_COPIES = {"sendfile64": ("sendfile", "in_fd", "out_fd", "count"),
           "copy_file_range": ("copy_file_range", "fd_in", "fd_out", "len"),
           "splice": ("splice", "fd_in", "fd_out", "len")}
MAP_ANONYMOUS = 0x20
S_IFMT, S_IFREG = 0o170000, 0o100000


def tracefs_dir(mount: bool = True) -> tuple[str | None, str]:
    """The tracefs directory holding ``events/`` (mounting it when missing and root), or
    (None, why)."""
    for d in TRACEFS:
        if Path(d, "events").is_dir():
            return d, ""
    if mount and os.geteuid() == 0 and Path(TRACEFS[0]).is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS[0]], capture_output=True)
        if Path(TRACEFS[0], "events").is_dir():
            return TRACEFS[0], ""
    why = ("tracefs is not mounted and this user may not mount it (run as root: "
           "mount -t tracefs nodev /sys/kernel/tracing)") if os.geteuid() != 0 else \
        "tracefs is not mounted and `mount -t tracefs nodev /sys/kernel/tracing` failed"
    return None, why


def _try(exe: str, prog: str, cmd: str | None = None) -> tuple[bool, str, str]:
    """(loaded and ran, why not, its output) of ``prog`` (with ``-c cmd``)."""
    args = [exe, "-e", prog] + (["-c", cmd] if cmd else [])
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        return False, "bpftrace did not start within 90 s", ""
    if p.returncode != 0:
        last = [line for line in p.stderr.splitlines()
                if "RLIMIT_MEMLOCK" not in line and "WARNING" not in line and line.strip()]
        errors = [line for line in last if "ERROR" in line]  # not the source line under it
        return False, (errors or last or ["?"])[-1].strip(), p.stdout
    return True, "", p.stdout


# Where a task's saved user registers are: the top of its kernel stack (x86-64: no padding).
# At a syscall's exit they still hold its arguments, so one probe at the exit can see both the
# descriptor and the bytes returned (vector mode; the check below confirms the layout).
_STACK_SIZES = (16384, 32768)  # THREAD_SIZE without and with KASAN
_REGS = "(struct pt_regs *)((uint64)curtask->stack + {size} - sizeof(struct pt_regs))"
# x86-64 system-call argument registers, in order
ARG_REGS = ("di", "si", "dx", "r10", "r8", "r9")


@lru_cache(maxsize=None)
def _probe() -> dict:
    """What bpftrace can do here, tried once per process (each try is a bpftrace start-up)."""
    exe = shutil.which("bpftrace")
    out = {"ok": False, "why": "", "block": False, "kernel_files": False, "why_no_kernel_files": "",
           "syscalls": (), "exit_regs": 0, "kfunc": False, "why_no_kfunc": ""}
    if not exe:
        out["why"] = "bpftrace is not installed"
        return out
    if os.geteuid() != 0:
        out["why"] = "bpftrace needs root (CAP_BPF and CAP_PERFMON); running as an ordinary user"
        return out
    d, why = tracefs_dir()
    if d is None:
        out["why"] = why
        return out
    ev = Path(d, "events")
    missing = [s for s in SYSCALLS if not (ev / "syscalls" / f"sys_enter_{s}").is_dir()]
    if missing:
        out["why"] = f"kernel lacks syscall tracepoints for {', '.join(missing)}"
        return out
    out["syscalls"] = tuple(s for s in SYSCALLS + OPTIONAL_SYSCALLS
                            if (ev / "syscalls" / f"sys_enter_{s}").is_dir())
    out["block"] = all((ev / "block" / t).is_dir() for t in ("block_rq_issue", "block_rq_complete",
                                                              "block_getrq"))
    # the descriptor table of the current task, through BTF: the "kernel" file naming; and
    # (x86-64) whether the saved registers at a syscall's exit are where we look for them
    regs = " ".join(f'$r{i} = {_REGS.format(size=n)}; printf("REGS\\t%d\\t%lld\\n", {n}, '
                    f'(int64)$r{i}->orig_ax == (int64)args->__syscall_nr);'
                    for i, n in enumerate(_STACK_SIZES)) if os.uname().machine == "x86_64" else ""
    prog = ("tracepoint:syscalls:sys_exit_getppid /pid == cpid/ { $t = curtask->files->fdt->max_fds; "
            f"{regs} exit(); }}")
    import sys
    ok, why, text = _try(exe, prog, f"{sys.executable} -S -c __import__('os').getppid()")
    if ok:
        out.update(ok=True, kernel_files=True)
        for line in text.splitlines():
            f = line.split("\t")
            if len(f) == 3 and f[0] == "REGS" and f[2] == "1" and not out["exit_regs"]:
                out["exit_regs"] = int(f[1])
        out["kfunc"], out["why_no_kfunc"] = _kfunc_check(exe)
        return out
    out["why_no_kernel_files"] = f"no BTF access to the task's descriptor table ({why})"
    ok, why, _ = _try(exe, "tracepoint:syscalls:sys_enter_getppid { } BEGIN { exit(); }")
    out["ok"] = ok
    out["why"] = "" if ok else f"bpftrace cannot load programs here: {why}"
    return out


# the one-probe program that says whether this kernel and bpftrace attach fexit programs to the
# x86-64 system-call functions, with their saved registers (what :func:`to_kfunc` needs)
KFUNC_CHECK = "kretfunc:__x64_sys_read { $r = args->regs; @n = count(); } BEGIN { exit(); }"


def _kfunc_check(exe: str) -> tuple[bool, str]:
    """(whether the vector program can use ``kfunc``/``kretfunc`` probes here, why not)."""
    if os.uname().machine != "x86_64":
        return False, f"kfunc probes on the system-call functions are written for x86-64, not {os.uname().machine}"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return False, "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
    ok, why, _ = _try(exe, KFUNC_CHECK)
    if ok:
        return True, ""
    d, _ = tracefs_dir(mount=False)
    try:  # bpftrace 0.17 checks kfunc targets against the kernel's list of traceable functions
        Path(d or TRACEFS[0], "available_filter_functions").open().close()
    except PermissionError:
        why += (" [the kernel refuses to open available_filter_functions even to root (EPERM): "
                "it is mounted, but its list of traceable functions is withheld]")
    except OSError:
        pass
    return False, f"bpftrace cannot attach kfunc/kretfunc probes here: {why}"


def probe_kind() -> tuple[str, str]:
    """(the vector program's hook kind here, of :data:`PROBE_KINDS`; why not ``kfunc``)."""
    p = _probe()
    return ("kfunc", "") if p["kfunc"] else ("tracepoint", p["why_no_kfunc"] or p["why_no_kernel_files"] or p["why"])


def available() -> tuple[bool, str, bool]:
    """(usable, why not, block tracepoints usable). Tries a one-probe program, so a kernel
    that forbids eBPF (a container without CAP_BPF) is found before any tracing."""
    p = _probe()
    return p["ok"], p["why"], p["ok"] and p["block"]


def kernel_files_available() -> tuple[bool, str]:
    """(whether files can be named from the kernel's ``struct file`` here, why not)."""
    p = _probe()
    return p["kernel_files"], p["why_no_kernel_files"] or p["why"]


def kernel_dev(device: str) -> int | None:
    """The kernel's dev_t (major << 20 | minor, as block tracepoints report it) of the whole
    disk ``device`` (``vda``; a partition maps to its disk)."""
    sysdir = Path("/sys/class/block", device)
    if not sysdir.exists():
        return None
    if (sysdir / "partition").exists():
        sysdir = sysdir.resolve().parent
    try:
        major, minor = map(int, (sysdir / "dev").read_text().split(":"))
    except (OSError, ValueError):
        return None
    return (major << 20) | minor


def disk_of(device: str) -> str:
    sysdir = Path("/sys/class/block", device)
    if (sysdir / "partition").exists():
        return sysdir.resolve().parent.name
    return device


# ----------------------------------------------------------------------------- the program

_NAME_FMT = '"P\\t%llu\\t%llu\\t%llu\\t%llu\\t%llu\\t%u\\t%s\\n"'


def _file_of(var: str, fd: str) -> str:
    """bpftrace statements: ``var`` = the ``struct file *`` (as uint64, 0 if none) behind
    descriptor ``fd`` of the current task, read from its descriptor table."""
    return (f"{var} = (uint64)0; "
            f"if ((uint64)({fd}) < (uint64)$fdt->max_fds) {{ {var} = (uint64)*($fdt->fd + (uint64)({fd})); }} ")


NAME_LEN = 128  # bytes of each file or directory name kept (the BPF stack is 512 bytes)


def _name_walk(fvar: str, dev: str, ino: str, gen: str) -> str:
    """Once per inode: the file's name and, up to a known directory or the file system's
    root, its directories' names (``P dev ino gen parent_ino parent_gen mode name``)."""
    return f"""
    if (@seen[{dev}, {ino}] != {gen} + 1) {{
      @seen[{dev}, {ino}] = {gen} + 1;
      $d = ((struct file *){fvar})->f_path.dentry; $p = $d->d_parent; $pi = $p->d_inode;
      printf({_NAME_FMT}, {dev}, {ino}, {gen}, (uint64)$pi->i_ino, (uint64)$pi->i_generation,
             (uint32)((struct file *){fvar})->f_inode->i_mode, str($d->d_name.name, {NAME_LEN}));
      $n = 0;
      while ($n < 48) {{
        if ($p == $d) {{ break; }}
        if (@seen[{dev}, (uint64)$pi->i_ino] == (uint64)$pi->i_generation + 1) {{ break; }}
        @seen[{dev}, (uint64)$pi->i_ino] = (uint64)$pi->i_generation + 1;
        $d = $p; $p = $d->d_parent; $di = $d->d_inode; $pi = $p->d_inode;
        printf({_NAME_FMT}, {dev}, (uint64)$di->i_ino, (uint64)$di->i_generation, (uint64)$pi->i_ino,
               (uint64)$pi->i_generation, (uint32)$di->i_mode, str($d->d_name.name, {NAME_LEN}));
        $n = $n + 1;
      }}
    }}"""


def _inode(fvar: str, dev: str, ino: str, gen: str) -> str:
    return (f"{dev} = (uint64)0; {ino} = (uint64)0; {gen} = (uint64)0; "
            f"if ({fvar}) {{ $i = ((struct file *){fvar})->f_inode; {dev} = (uint64)$i->i_sb->s_dev; "
            f"{ino} = (uint64)$i->i_ino; {gen} = (uint64)$i->i_generation; }} ")


def _stash(ts: str, op: int, f: str, pos: str, fd: str, f2: str = "0", fd2: str = "-1", x: str = "0") -> str:
    # one tuple layout for every call, so the map has one type
    return (f"@s[tid] = ((uint64){ts}, (int64){op}, (uint64){f}, (int64){pos}, (int64){fd}, "
            f"(uint64){f2}, (int64){fd2}, (int64){x}); ")


_V_FMT = '"V\\t%lld\\t%llu\\t%llu\\t%d\\t%d\\t%lld\\t%llu\\t%llu\\t%llu\\t%lld\\t%lld\\n"'


# The aggregation's second key packs the operation and the sequential flag under the bytes
# returned: ret * OPSEQ + op * 2 + sequential (op < OPSEQ / 2), so that a call's count is one
# key of two words, (file number, this), instead of six (issue 70). :func:`unpack_opseq` undoes it.
OPSEQ = 64


def unpack_opseq(key: int) -> tuple[int, int, int]:
    """(op id, bytes returned, sequential 0/1) of the aggregation's packed second key."""
    key = int(key)
    return (key % OPSEQ) >> 1, key // OPSEQ, key % 2


def _file_number(fvar: str, dev: str, ino: str, gen: str, out: str = "$id") -> str:
    """``out`` = the file number of the ``struct file`` ``fvar`` with inode (``dev``, ``ino``,
    ``gen``): 0 when there is no file, else the number ``@file[dev, ino, gen]`` gave the inode
    when the program first met it: that time in ns shifted over the CPU's number, unique
    without a counter shared by the CPUs. ``@inode[number]`` keeps each number's inode, printed
    at END: two CPUs meeting a new inode at once may give it two numbers (the later one stays
    in ``@file``), and both stay in ``@inode``, so user space adds their counts up. Only where a
    descriptor is first resolved (or a copy or an uncached call is seen), never on the cached
    path."""
    # (no file: dev, ino and gen are 0, a key never stored, so the lookup gives 0)
    return (f"{out} = @file[{dev}, {ino}, {gen}]; if ({out} == 0 && {fvar}) {{ "
            f"{out} = (nsecs << 8) | ((uint64)cpu & 255); @file[{dev}, {ino}, {gen}] = {out}; "
            f"@inode[{out}] = ({dev}, {ino}, {gen}); }} ")


def _vector_count(op: str, fid: str, ret: str, pos: str | None) -> str:
    """Count one call in the kernel: ``@agg[file number, packed (bytes, op, sequential)]``, a
    per-CPU count (bpftrace 0.17: one lookup and one update). No separate total: the calls
    counted are the aggregation's sum, and a full map is told by its entry count (the tracer's
    ``meta['agg_full']``)."""
    seq = "$seq = (int64)0; "
    if pos is not None:  # the Listing A.1 rule on file offsets, per (process, file, read|write)
        seq += (f"if ({ret} >= 0 && {pos} >= 0) {{ $k = {op} > 5 ? 1 : 0; "
                f"if (@end[pid, {fid}, $k] == {pos} + 1) {{ $seq = 1; }} "
                f"@end[pid, {fid}, $k] = {pos} + {ret} + 1; }} ")
    return seq + f"@agg[{fid}, {ret} * {OPSEQ} + ({op}) * 2 + $seq] = count(); "


def script(devices: list[str] | None, block: bool, block_scope: str = "device",
           ready_file: str | None = None, mode: str = "timeline", files: str = "kernel",
           syscalls=None, exit_regs: int = 0, sequential: bool = True, fd_cache: bool = True,
           probes: str = "tracepoint", args_of=None, follow=()) -> str:
    """The bpftrace program; ``$1`` is the root pid of the traced tree, ``follow`` more pids
    whose trees are traced beside it (processes started before the trace, such as a warm parent
    whose forks are the runs). BEGIN runs once every
    probe is attached; it touches ``ready_file`` (output is block-buffered, so a printed line
    would not be seen until much later). ``mode``: ``timeline`` or ``vector`` (see the module
    docstring); ``files``: ``kernel`` (names from ``struct file``, needs BTF) or
    ``descriptors`` (descriptor numbers, resolved in user space; timeline mode only).
    ``syscalls``: the tracepoints this kernel has (default: all of them). ``exit_regs``: the
    kernel stack size where a task's saved registers have been checked to be (x86-64; 0: not
    checked): vector mode then needs one probe per read or write, at its exit, instead of two
    (half the probe cost, see :func:`_probe`). ``sequential``: vector mode also counts the
    calls that start where the same process's previous call on the file ended (a map lookup
    and update per call). ``fd_cache`` (vector mode with ``exit_regs``): each process's
    descriptors are resolved to their file once, at their first read or write, into a map keyed
    by (process, its descriptor epoch, descriptor), instead of at every call (see
    :func:`_io_probes_at_exit`). One group of probes per helper, in this order: the tree
    (:func:`_tree_probes`), single-file reads and writes (:func:`_io_probes_at_exit`,
    :func:`_io_probes`), the descriptor cache's invalidation (:func:`_fd_cache_probes`), copies (:func:`_copy_probes`), ``mmap`` (:func:`_mmap_probes`), the
    descriptors' life cycle (timeline mode: :func:`_open_close_probes`,
    :func:`_descriptor_probes`), block requests (:func:`_block_probes`) and END
    (:func:`_end_probe`). ``probes`` (vector mode): ``tracepoint`` (the system-call
    tracepoints) or ``kfunc`` (the same program on the system-call functions' fentry/fexit,
    :func:`to_kfunc`; ``args_of``: the calls' arguments, default :func:`syscall_args`)."""
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}; allowed: {', '.join(MODES)}")
    if files not in ("kernel", "descriptors"):
        raise ValueError(f"files = {files!r}; allowed: kernel, descriptors")
    if mode == "vector" and files != "kernel":
        raise ValueError("vector mode needs files='kernel' (BTF)")
    if probes not in PROBE_KINDS:
        raise ValueError(f"probes = {probes!r}; allowed: {', '.join(PROBE_KINDS)}")
    if probes == "kfunc" and mode != "vector":
        raise ValueError("probes = 'kfunc' is the vector mode's; allowed in timeline mode: tracepoint")
    if probes == "kfunc":  # the saved registers come as the function's argument
        exit_regs = exit_regs or _STACK_SIZES[0]
    have = set(syscalls or SYSCALLS + OPTIONAL_SYSCALLS)
    vec, kern = mode == "vector", files == "kernel"
    io = [s for s in _IO if s in have]
    cache = bool(vec and exit_regs and fd_cache)
    lines = _tree_probes(ready_file, epochs=cache, follow=follow)
    if vec and exit_regs:  # one probe per call: the arguments from the saved registers
        lines += _io_probes_at_exit(io, exit_regs, sequential, cache)
        if cache:
            lines += _fd_cache_probes(have)
    else:
        lines += _io_probes(io, vec, kern, sequential)
    lines += _copy_probes([s for s in _COPIES if s in have], vec, kern)
    if "mmap" in have:
        lines += _mmap_probes(kern)
    if not vec:
        lines += _open_close_probes() if kern else _descriptor_probes(have)
    if block:
        lines += _block_probes(devices, block_scope, vec)
    lines.append(_end_probe(block, kern, vec, sequential, exit_regs, cache))
    prog = "\n".join(lines)
    if probes == "kfunc":
        prog = to_kfunc(prog, args_of or syscall_args)
    return prog + "\n"


_IN_TREE = "/@tree[pid]/"


@lru_cache(maxsize=None)
def syscall_args(name: str) -> tuple[tuple[str, str], ...]:
    """(argument name, bpftrace type) of system call ``name``'s arguments, in order, as its
    ``sys_enter`` tracepoint names them (its tracefs ``format`` file); () where there is none."""
    d, _ = tracefs_dir(mount=False)
    try:
        text = Path(d or TRACEFS[0], "events", "syscalls", f"sys_enter_{name}", "format").read_text()
    except OSError:
        return ()
    return parse_syscall_format(text)


def parse_syscall_format(text: str) -> tuple[tuple[str, str], ...]:
    """The arguments of a ``sys_enter`` tracepoint's ``format`` text: (name, bpftrace type),
    the type as bpftrace reads the field (``unsigned int``: uint32, ``int``/``rwf_t``: int32,
    other signed fields int64, the rest uint64)."""
    out, seen_nr = [], False
    for line in text.splitlines():
        m = re.match(r"\s*field:(.+?)\s+(\w+);.*signed:(\d)", line)
        if not m:
            continue
        ctype, field, signed = m.group(1).strip(), m.group(2), m.group(3) == "1"
        if field == "__syscall_nr":
            seen_nr = True
            continue
        if not seen_nr:
            continue
        if "*" in ctype:
            t = "uint64"
        elif ctype in ("unsigned int", "unsigned", "u32", "__u32", "umode_t"):
            t = "uint32"
        elif ctype in ("int", "rwf_t", "__kernel_rwf_t"):
            t = "int32"
        else:
            t = "int64" if signed else "uint64"
        out.append((field, t))
    return tuple(out)


_SYSCALL_TP = re.compile(r"^tracepoint:syscalls:sys_(enter|exit)_(\w+)$")
# the exit probes' check that the saved registers are the call's (a fexit program gets them)
_REGS_CHECK = re.compile(r"\$r = \(struct pt_regs \*\)\(.*?\); if \(\(int64\)\$r->orig_ax != "
                         r"\(int64\)args->__syscall_nr\) \{ @badregs = count\(\); \} else \{")


def to_kfunc(prog: str, args_of=syscall_args) -> str:
    """``prog`` with every ``tracepoint:syscalls`` probe moved to the system-call function's
    ``fentry``/``fexit`` (``kfunc:__x64_sys_<call>``/``kretfunc:__x64_sys_<call>``; a probe on
    several calls becomes one per call). At entry an argument ``args->NAME`` becomes the saved
    register it was passed in (``args->regs->di`` ...; ``args_of(call)``: the call's arguments
    in order, :func:`syscall_args`), read as the tracepoint's field type; at exit ``args->ret``
    becomes ``retval``, and the saved registers are the function's argument (no stack walk, no
    check). The calls, their arguments and their results are the tracepoints', so the program
    counts the same. x86-64 only (its register order, its ``__x64_sys_`` functions)."""
    blocks: list[list[str]] = []
    for line in prog.split("\n"):
        if blocks and (not line or line[0].isspace()):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    out = []
    for block in blocks:
        text = "\n".join(block)
        head, _, rest = text.partition(" ")
        points = [_SYSCALL_TP.match(a) for a in head.split(",")]
        if not head or not all(points):
            out.append(text)
            continue
        for m in points:
            kind, call = m.group(1), m.group(2)
            if kind == "exit":
                body = _REGS_CHECK.sub("$r = args->regs; if (1) {", rest).replace("args->ret", "(int64)retval")
                bad = re.search(r"args->(?!regs\b)\w+", body)
                if bad:
                    raise ValueError(f"to_kfunc: {bad.group(0)} in the exit probe of {call}; an fexit "
                                     "probe has the return value and the saved registers only")
                out.append(f"kretfunc:__x64_sys_{call} {body}")
                continue
            args = dict((name, (ARG_REGS[i], t)) for i, (name, t) in enumerate(args_of(call)[:len(ARG_REGS)]))

            def reg(mm, call=call, args=args):
                if mm.group(1) not in args:
                    raise ValueError(f"to_kfunc: args->{mm.group(1)} is no argument of {call} "
                                     f"(arguments: {', '.join(args) or 'none known'})")
                r, t = args[mm.group(1)]
                return f"(({t})args->regs->{r})"
            out.append(f"kfunc:__x64_sys_{call} " + re.sub(r"args->(\w+)", reg, rest))
    prog = "\n".join(out)
    # a map only the dropped check wrote (@badregs): bpftrace refuses to print an undefined map
    for m in set(re.findall(r"(?:print|clear)\((@\w+)\)", prog)):
        if not re.search(re.escape(m) + r"(\[[^\]]*\])? = ", prog):
            prog = prog.replace(f" print({m});", "").replace(f" clear({m});", "")
    return prog


def _fdt(kern: bool) -> str:
    return "$fdt = curtask->files->fdt; " if kern else ""


def _tree_probes(ready_file: str | None, epochs: bool = False, follow=()) -> list[str]:
    """BEGIN (seed the tree with ``$1`` and the pids of ``follow``, say READY, touch ``ready_file``) and the tree's
    forks and execs (``F`` and ``E`` lines). ``epochs``: each process's value in ``@tree`` is
    its descriptor epoch, a new one (``nsecs``, never 0) at ``fork`` and at ``exec`` (whose
    close-on-exec descriptors are closed without a ``close`` call), so the descriptor cache's
    entries of an earlier epoch, or of an earlier process with the same pid, are never hit."""
    touch = f' system("touch {ready_file}");' if ready_file else ""
    child, execd = ("nsecs", " @tree[pid] = nsecs;") if epochs else ("1", "")
    seeds = "".join(f" @tree[{int(p)}] = 1;" for p in follow)
    return [
        f'BEGIN {{ @tree[$1] = 1;{seeds} printf("READY\\t%llu\\n", nsecs);{touch} }}',
        f'tracepoint:sched:sched_process_fork /@tree[pid]/ {{ @tree[args->child_pid] = {child}; '
        'printf("F\\t%llu\\t%d\\t%d\\t%s\\n", nsecs, pid, args->child_pid, comm); }',
        f'tracepoint:sched:sched_process_exec /@tree[pid]/ {{{execd} '
        'printf("E\\t%llu\\t%d\\t%s\\n", nsecs, pid, comm); }',
    ]


def _io_probes_at_exit(io: list[str], exit_regs: int, sequential: bool, fd_cache: bool = True) -> list[str]:
    """Vector mode with checked saved registers: one probe per single-file read or write, at
    its exit, counting it in the kernel (descriptor and offset from the saved registers).

    ``fd_cache``: the file behind a descriptor is looked up in ``@fd[pid, epoch, fd]`` (the
    ``struct file`` and its inode's device, number and generation), and resolved from the
    task's descriptor table (and named, once per inode) only where the map has no entry: at a
    descriptor's first read or write in a process, whichever way it came (``open*``, ``dup*``,
    ``fcntl(F_DUPFD)``, a redirection, inherited across ``fork``/``exec``, opened before tracing
    began). That replaces about a dozen checked kernel-memory reads per call by one map lookup
    (``python -m experiments.trace.vector_cost``). An entry lives while its descriptor names the
    same file: ``close`` and ``dup2``/``dup3`` onto it delete it, ``close_range`` and ``exec``
    start a new epoch for the process (:func:`_fd_cache_probes`, :func:`_tree_probes`)."""
    lines = []
    regs = _REGS.format(size=int(exit_regs))
    for s in io:
        how = _IO[s]
        resolve = ("$fdt = curtask->files->fdt; " + _file_of("$f", "$fd") + _inode("$f", "$dev", "$ino", "$gen")
                   + "if ($f) {" + _name_walk("$f", "$dev", "$ino", "$gen") + "} ")
        number = _file_number("$f", "$dev", "$ino", "$gen")
        if fd_cache:  # one map read on the cached path: the descriptor's file and its number
            find = ("$c = @fd[pid, $e, $fd]; $f = $c.0; $id = $c.1; "
                    "if ($f == 0) { " + resolve + number + "if ($f) { @fd[pid, $e, $fd] = ($f, $id); } } ")
        else:
            find = resolve + number
        body = (f"$r = {regs}; if ((int64)$r->orig_ax != (int64)args->__syscall_nr) {{ @badregs = count(); }} "
                f"else {{ $ret = (int64)args->ret; $fd = (int64)$r->di; " + find)
        if sequential:  # the file's position (already advanced) or the call's offset argument
            body += "$pos = (int64)-1; if ($f) { "
            if how == "fpos":
                body += "$pos = ((struct file *)$f)->f_pos - $ret; "
            else:
                body += f"$pos = (int64)$r->{ARG_REGS[3]}; "
                if how == "pos_l2":  # offset -1: the file's position, already advanced
                    body += "if ($pos == -1) { $pos = ((struct file *)$f)->f_pos - $ret; } "
            body += "} "
        body += _vector_count(str(OP_ID[s]), "$id", "$ret", "$pos" if sequential else None) + "} "
        if fd_cache:  # one lookup of the tree gives the process's descriptor epoch too
            lines.append(f"tracepoint:syscalls:sys_exit_{s} {{ $e = @tree[pid]; if ($e) {{ {body}}} }}")
        else:
            lines.append(f"tracepoint:syscalls:sys_exit_{s} {_IN_TREE} {{ {body}}}")
    return lines


def _fd_cache_probes(have: set[str]) -> list[str]:
    """What ends a descriptor cache entry (:func:`_io_probes_at_exit`): ``close`` (at entry,
    before the slot can be reused), ``dup2``/``dup3`` onto a descriptor (at exit: the new
    descriptor's entry), ``close_range`` (a new epoch for the process; so does ``exec``, in
    :func:`_tree_probes`). ``dup``, ``fcntl(F_DUPFD)`` and ``open*`` take free slots, whose
    entries these have already ended."""
    lines = ["tracepoint:syscalls:sys_enter_close { $e = @tree[pid]; if ($e) { "
             "delete(@fd[pid, $e, (int64)args->fd]); } }"]
    dups = [f"tracepoint:syscalls:sys_exit_{s}" for s in ("dup2", "dup3") if s in have]
    if dups:
        lines.append(f"{','.join(dups)} {{ $e = @tree[pid]; if ($e && args->ret >= 0) {{ "
                     "delete(@fd[pid, $e, (int64)args->ret]); } }")
    if "close_range" in have:
        lines.append(f"tracepoint:syscalls:sys_exit_close_range {_IN_TREE} {{ @tree[pid] = nsecs; }}")
    return lines


def _io_probes(io: list[str], vec: bool, kern: bool, sequential: bool) -> list[str]:
    """Single-file reads and writes, two probes each: the file and offset stashed at entry;
    at exit a ``V`` line (timeline) or an in-kernel count (vector)."""
    lines = []
    for s in io:
        how = _IO[s]
        pos = {"pos": "args->pos", "pos_l": "(int64)args->pos_l", "pos_l2": "(int64)args->pos_l",
               "fpos": "-1"}[how]
        body = _fdt(kern) + (_file_of("$f", "args->fd") if kern else "$f = (uint64)0; ")
        body += f"$pos = (int64){pos}; "
        if kern and how in ("fpos", "pos_l2"):  # the file's own position (preadv2: offset -1)
            body += "if ($f && $pos < 0) { $pos = ((struct file *)$f)->f_pos; } "
        body += _stash("nsecs", OP_ID[s], "$f", "$pos", "args->fd")
        lines.append(f"tracepoint:syscalls:sys_enter_{s} {_IN_TREE} {{ {body}}}")
    if not io:
        return lines
    exits = ",".join(f"tracepoint:syscalls:sys_exit_{s}" for s in io)
    body = _EXIT + _identity("$s.2", "", kern)
    if vec:
        body += (_file_number("$s.2", "$dev", "$ino", "$gen")
                 + _vector_count("$s.1", "$id", "$ret", "$s.3" if sequential else None))
    else:
        body += (f"printf({_V_FMT}, $s.1, $s.0, nsecs - $s.0, pid, tid, $s.4, $dev, $ino, $gen, "
                 f"$ret, $s.3); ")
    lines.append(f"{exits} /@s[tid].0/ {{ {body}}}")
    return lines


# an exit probe's start: the call's stashed entry and its return value
_EXIT = "$s = @s[tid]; delete(@s[tid]); $ret = (int64)args->ret; "


def _identity(file: str, suffix: str, kern: bool) -> str:
    """``$dev<suffix>``, ``$ino<suffix>``, ``$gen<suffix>`` of the stashed ``struct file``
    ``file`` (its inode, and the names of a file seen the first time), or zeros when files
    are resolved from descriptors in user space."""
    d, i, g = (f"${x}{suffix}" for x in ("dev", "ino", "gen"))
    if kern:
        return _inode(file, d, i, g) + f"if ({file}) {{" + _name_walk(file, d, i, g) + "} "
    return f"{d} = (uint64)0; {i} = (uint64)0; {g} = (uint64)0; "


def _copy_probes(cps: list[str], vec: bool, kern: bool) -> list[str]:
    """Copies: two files, bytes moved between them without passing through user space (two
    rows or counts per call, ``<call>_in`` and ``<call>_out``)."""
    lines = []
    for s in cps:
        name, fin, fout, cnt = _COPIES[s]
        body = _fdt(kern)
        if kern:
            body += _file_of("$f", f"args->{fin}") + _file_of("$g", f"args->{fout}")
        else:
            body += "$f = (uint64)0; $g = (uint64)0; "
        body += _stash("nsecs", OP_ID[name + "_in"], "$f", "-1", f"args->{fin}", "$g", f"args->{fout}",
                       f"args->{cnt}")
        lines.append(f"tracepoint:syscalls:sys_enter_{s} {_IN_TREE} {{ {body}}}")
    if not cps:
        return lines
    exits = ",".join(f"tracepoint:syscalls:sys_exit_{s}" for s in cps)
    body = _EXIT + _identity("$s.2", "", kern) + _identity("$s.5", "2", kern)
    if vec:
        body += (_file_number("$s.2", "$dev", "$ino", "$gen") + _vector_count("$s.1", "$id", "$ret", None)
                 + _file_number("$s.5", "$dev2", "$ino2", "$gen2", "$id2")
                 + _vector_count("$s.1 + 1", "$id2", "$ret", None))
    else:
        body += (f"printf({_V_FMT}, $s.1, $s.0, nsecs - $s.0, pid, tid, $s.4, $dev, $ino, $gen, $ret, -1); "
                 f"printf({_V_FMT}, $s.1 + 1, $s.0, nsecs - $s.0, pid, tid, $s.6, $dev2, $ino2, $gen2, "
                 f"$ret, -1); ")
    lines.append(f"{exits} /@s[tid].0/ {{ {body}}}")
    return lines


def _mmap_probes(kern: bool) -> list[str]:
    """``mmap`` of a file, an ``M`` line in both modes (reads through a mapping are page
    faults, never calls)."""
    body = _fdt(kern) + f"if ((int64)args->fd >= 0 && !(args->flags & {MAP_ANONYMOUS})) {{ "
    body += (_file_of("$f", "args->fd") if kern else "$f = (uint64)0; ")
    body += _stash("nsecs", OP_ID["mmap"], "$f", "(int64)args->off", "(int64)args->fd",
                   "args->prot", "(int64)args->flags", "(int64)args->len") + "} "
    enter = f"tracepoint:syscalls:sys_enter_mmap {_IN_TREE} {{ {body}}}"
    body = "$s = @s[tid]; delete(@s[tid]); "
    body += _inode("$s.2", "$dev", "$ino", "$gen")
    if kern:
        body += "if ($s.2) {" + _name_walk("$s.2", "$dev", "$ino", "$gen") + "} "
    body += ('printf("M\\t%llu\\t%d\\t%d\\t%lld\\t%llu\\t%llu\\t%llu\\t%lld\\t%lld\\t%llu\\t%lld\\t%lld\\n", '
             "$s.0, pid, tid, $s.4, $dev, $ino, $gen, $s.7, $s.3, $s.5, $s.6, (int64)args->ret); ")
    return [enter, f"tracepoint:syscalls:sys_exit_mmap /@s[tid].0/ {{ {body}}}"]


def _open_close_probes() -> list[str]:
    """Timeline mode, kernel file naming: ``openat`` and ``close`` rows (the file from the
    descriptor table: the new descriptor's at ``openat``'s exit, the closed one's at entry)."""
    lines = [f"tracepoint:syscalls:sys_enter_openat {_IN_TREE} {{ "
             + _stash("nsecs", OP_ID["openat"], "0", "-1", "args->dfd", "0", "-1", "args->flags") + "}"]
    body = ("$s = @s[tid]; delete(@s[tid]); $ret = (int64)args->ret; $fdt = curtask->files->fdt; "
            "$f = (uint64)0; if ($ret >= 0) { " + _file_of("$f", "$ret") + "} "
            + _inode("$f", "$dev", "$ino", "$gen") + "if ($f) {" + _name_walk("$f", "$dev", "$ino", "$gen")
            + "} " + f"printf({_V_FMT}, $s.1, $s.0, nsecs - $s.0, pid, tid, $ret, $dev, $ino, $gen, $ret, -1); ")
    lines.append(f"tracepoint:syscalls:sys_exit_openat /@s[tid].0/ {{ {body}}}")
    body = _fdt(True) + _file_of("$f", "args->fd") + _stash("nsecs", OP_ID["close"], "$f", "-1", "args->fd")
    lines.append(f"tracepoint:syscalls:sys_enter_close {_IN_TREE} {{ {body}}}")
    body = ("$s = @s[tid]; delete(@s[tid]); " + _inode("$s.2", "$dev", "$ino", "$gen")
            + "if ($s.2) {" + _name_walk("$s.2", "$dev", "$ino", "$gen") + "} "
            + f"printf({_V_FMT}, $s.1, $s.0, nsecs - $s.0, pid, tid, $s.4, $dev, $ino, $gen, "
            "(int64)args->ret, -1); ")
    lines.append(f"tracepoint:syscalls:sys_exit_close /@s[tid].0/ {{ {body}}}")
    return lines


def _descriptor_probes(have: set[str]) -> list[str]:
    """Timeline mode, descriptor naming: what :func:`experiments.trace.resolve.resolve` needs
    to follow descriptors (``openat`` with its path in an ``N`` line, ``close``, ``lseek``,
    ``dup*``, ``fcntl``)."""
    lines = [f"tracepoint:syscalls:sys_enter_openat {_IN_TREE} {{ "
             + _stash("nsecs", OP_ID["openat"], "0", "-1", "args->dfd", "0", "-1", "args->flags")
             + 'printf("N\\t%d\\t%s\\n", tid, str(args->filename)); }']
    simple = {"close": "args->fd", "lseek": "args->fd"}
    dups = {"dup": ("args->fildes", "-1", "0"), "dup2": ("args->oldfd", "args->newfd", "0"),
            "dup3": ("args->oldfd", "args->newfd", "0"), "fcntl": ("args->fd", "-1", "args->cmd")}
    for s, fd in simple.items():
        lines.append(f"tracepoint:syscalls:sys_enter_{s} {_IN_TREE} {{ "
                     + _stash("nsecs", OP_ID[s], "0", "-1", fd) + "}")
    for s, (fd, fd2, x) in dups.items():
        if s in have:
            lines.append(f"tracepoint:syscalls:sys_enter_{s} {_IN_TREE} {{ "
                         + _stash("nsecs", OP_ID[s], "0", "-1", fd, "0", fd2, x) + "}")
    ex = ["openat", "close", "lseek"] + [s for s in dups if s in have]
    exits = ",".join(f"tracepoint:syscalls:sys_exit_{s}" for s in ex)
    # fcntl's command goes out in the offset column, the second descriptor in `ino`
    body = ("$s = @s[tid]; delete(@s[tid]); "
            f"printf({_V_FMT}, $s.1, $s.0, nsecs - $s.0, pid, tid, $s.4, (uint64)0, (uint64)$s.6, "
            "(uint64)0, (int64)args->ret, $s.1 == 17 ? $s.7 : ($s.1 == 24 ? $s.7 : (int64)-1)); ")
    lines.append(f"{exits} /@s[tid].0/ {{ {body}}}")
    return lines


def _block_probes(devices: list[str] | None, block_scope: str, vec: bool) -> list[str]:
    """Block requests on ``devices`` (all when none is known): the submitter at
    ``block_getrq``, a ``B`` (vector) or ``BI`` (timeline) line at issue, ``BC`` at completion
    (timeline)."""
    devs = [kernel_dev(d) for d in (devices or [])]
    devs = [d for d in devs if d is not None]
    dev_pred = " || ".join(f"args->dev == {d}" for d in devs)
    # the submitter of each request, in its own context (block_getrq: a new request for a
    # bio); requests are often issued later from a kernel worker
    qconds = [f"({dev_pred})"] if devs else []
    if block_scope == "tree":
        qconds.append("@tree[pid]")
    qpred = f"/{' && '.join(qconds)}/ " if qconds else ""
    lines = [f"tracepoint:block:block_getrq {qpred}{{ @q[args->dev, args->sector] = pid; }}"]
    pred = f"/{dev_pred}/ " if devs else ""
    pick = "$p = @q[args->dev, args->sector]; delete(@q[args->dev, args->sector]); "
    if vec:
        out = ('printf("B\\t%llu\\t%u\\t%llu\\t%u\\t%u\\t%s\\t%d\\n", nsecs, args->dev, args->sector, '
               "args->nr_sector, args->bytes, args->rwbs, $p); ")
    else:
        out = ('printf("BI\\t%llu\\t%u\\t%llu\\t%u\\t%u\\t%s\\t%d\\t%d\\t%d\\t%s\\n", nsecs, args->dev, '
               "args->sector, args->nr_sector, args->bytes, args->rwbs, $p, pid, tid, comm); ")
    if block_scope == "tree":
        body = pick + "if ($p != 0) { " + out + "} "
    else:
        body = pick + "if ($p == 0) { $p = pid; } " + out
    lines.append(f"tracepoint:block:block_rq_issue {pred}{{ {body}}}")
    if block_scope != "tree":
        # a requeued request (the device was busy) is issued again, often by kblockd or by
        # whichever process next runs the queue: the parser drops that second issue (a CI run
        # counted 3 of 69 reads twice). In the tree scope the second issue has no submitter
        # left in @q and is not printed.
        lines.append(f'tracepoint:block:block_rq_requeue {pred}{{ '
                     'printf("BQ\\t%llu\\t%u\\t%llu\\n", nsecs, args->dev, args->sector); }')
    if not vec:
        lines.append(
            f"tracepoint:block:block_rq_complete {pred}{{ "
            'printf("BC\\t%llu\\t%u\\t%llu\\t%u\\t%s\\n", nsecs, args->dev, args->sector, '
            "args->nr_sector, args->rwbs); }")
    return lines


def _end_probe(block: bool, kern: bool, vec: bool, sequential: bool, exit_regs: int,
               fd_cache: bool = False) -> str:
    """END: clear the working maps; vector mode prints the aggregation (after ``AGG``)."""
    maps = (["@tree", "@s"] + (["@q"] if block else []) + (["@seen"] if kern else [])
            + (["@end"] if vec and sequential else []) + (["@fd"] if fd_cache else []))
    end = " ".join(f"clear({m});" for m in maps)
    if vec:
        end += (' printf("AGG\\n"); print(@agg); print(@inode); clear(@agg); clear(@inode); clear(@file);'
                + (" print(@badregs); clear(@badregs);" if exit_regs else ""))
    return f"END {{ {end} }}"


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (0.0 when it is gone)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def clock_offset_ns(samples: int = 20) -> tuple[int, int]:
    """(wall - monotonic in ns, uncertainty in ns): the pair read with the smallest gap."""
    best = None
    for _ in range(samples):
        a = time.monotonic_ns()
        w = time.time_ns()
        b = time.monotonic_ns()
        cand = (b - a, w - (a + b) // 2)
        if best is None or cand[0] < best[0]:
            best = cand
    return best[1], best[0]


class BpftraceSession:
    """One running bpftrace writing to ``out_file``; ``start(root_pid)``, then ``stop()``.
    ``mode``: timeline | vector; ``files``: kernel | descriptors (see :func:`script`);
    ``max_keys``: entries per bpftrace map (the in-kernel aggregation and the per-file maps).
    ``probes`` (vector mode): ``auto`` (``kfunc`` where :func:`probe_kind` finds it, else
    ``tracepoint``), ``kfunc`` or ``tracepoint``; a ``kfunc`` program that fails to start is
    replaced by the ``tracepoint`` one. After :meth:`start`, ``self.probes`` is the kind that
    runs and ``self.why_not_kfunc`` why it is not ``kfunc``."""

    def __init__(self, out_file: Path, devices: list[str] | None, block: bool,
                 block_scope: str = "device", mode: str = "timeline", files: str = "kernel",
                 max_keys: int = 65536, sequential: bool = True, probes: str = "auto", follow=()):
        if probes not in ("auto",) + PROBE_KINDS:
            raise ValueError(f"probes = {probes!r}; allowed: auto, {', '.join(PROBE_KINDS)}")
        self.out_file = Path(out_file)
        self.err_file = self.out_file.with_suffix(".err")
        self.devices = [disk_of(d) for d in (devices or [])]
        self.block = block
        self.block_scope = block_scope
        self.mode = mode
        self.files = files
        self.max_keys = int(max_keys)
        self.sequential = sequential
        self.follow = tuple(int(p) for p in follow)   # more roots: see script()
        self.proc: subprocess.Popen | None = None
        self.ready_ns = 0
        self.probes, self.why_not_kfunc = "tracepoint", ""
        if mode != "vector":
            self.why_not_kfunc = "timeline mode runs on the system-call tracepoints"
        elif probes == "auto":
            self.probes, self.why_not_kfunc = probe_kind()
        else:
            self.probes = probes
            self.why_not_kfunc = "tracepoint probes requested" if probes == "tracepoint" else ""

    def start(self, root_pid: int, timeout_s: float = 90.0) -> None:
        try:
            self._start(root_pid, timeout_s)
        except RuntimeError as e:
            if self.probes != "kfunc":
                raise
            self.probes, self.why_not_kfunc = "tracepoint", f"the kfunc program failed to start: {e}"
            self._start(root_pid, timeout_s)

    def _start(self, root_pid: int, timeout_s: float) -> None:
        ready = self.out_file.with_suffix(".ready")
        ready.unlink(missing_ok=True)
        prog = script(self.devices, self.block, self.block_scope, str(ready), self.mode, self.files,
                      _probe()["syscalls"] or None, _probe()["exit_regs"] if self.mode == "vector" else 0,
                      self.sequential, probes=self.probes, follow=self.follow)
        self.out_file.with_suffix(".bt").write_text(prog)
        # strings live on the 512-byte BPF stack: 128 B names from the kernel; 200 B (bpftrace's
        # maximum) for the whole paths openat passes when naming by descriptors
        strlen = str(NAME_LEN) if self.files == "kernel" else "200"
        env = {**os.environ, "BPFTRACE_STRLEN": strlen, "BPFTRACE_PERF_RB_PAGES": "4096",
               "BPFTRACE_MAP_KEYS_MAX": str(self.max_keys)}
        self._err = open(self.err_file, "w")
        self.proc = subprocess.Popen(["bpftrace", "--unsafe", "-o", str(self.out_file),
                                      str(self.out_file.with_suffix(".bt")), str(root_pid)],
                                     stdout=subprocess.DEVNULL, stderr=self._err, env=env,
                                     start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                self._err.close()
                lines = [ln for ln in self.err_file.read_text().splitlines()
                         if "ERROR" in ln and "RLIMIT_MEMLOCK" not in ln]
                raise RuntimeError("bpftrace exited before tracing: " + (lines[0].strip() if lines else "?"))
            if ready.exists():
                self.cpu_at_ready = self.cpu_s()
                return
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"bpftrace did not attach its probes within {timeout_s:.0f} s")

    def cpu_s(self) -> float:
        """CPU seconds (user + system) bpftrace itself has used so far (0 once it has exited)."""
        return proc_cpu_s(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            time.sleep(0.05)  # let the last events reach the ring buffer
            self.cpu_at_stop = self.cpu_s()
            interrupt(self.proc)
        if hasattr(self, "_err") and not self._err.closed:
            self._err.close()

    def lost_events(self) -> int:
        n = 0
        for p in (self.out_file, self.err_file):
            if p.exists():
                with open(p, errors="replace") as f:
                    for line in f:
                        if line.startswith("Lost ") and "events" in line:
                            try:
                                n += int(line.split()[1])
                            except ValueError:
                                pass
        return n
