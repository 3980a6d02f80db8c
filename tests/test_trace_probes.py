"""The vector program's hooks (issue 70): the same program on the system-call functions'
fentry/fexit (``kfunc``/``kretfunc``) where the kernel allows it, the system-call tracepoints
elsewhere, and the trace says which one ran. The translation is checked on its text (it needs no
bpftrace); the fallback on a real run where bpftrace can trace."""

from __future__ import annotations

import sys

import pytest

from experiments.trace import bpftrace_backend as bt
from experiments.trace import tracer
from experiments.trace.tracer import backend_status

# tracefs format files as the kernel writes them (6.18, x86-64)
MMAP_FORMAT = """name: sys_enter_mmap
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned long addr;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long len;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned long prot;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long flags;\toffset:40;\tsize:8;\tsigned:0;
\tfield:unsigned long fd;\toffset:48;\tsize:8;\tsigned:0;
\tfield:unsigned long off;\toffset:56;\tsize:8;\tsigned:0;
"""
FORMATS = {"mmap": bt.parse_syscall_format(MMAP_FORMAT),
           "close": (("fd", "uint32"),),
           "sendfile64": (("out_fd", "int32"), ("in_fd", "int32"), ("offset", "uint64"), ("count", "uint64")),
           "copy_file_range": (("fd_in", "int32"), ("off_in", "uint64"), ("fd_out", "int32"),
                               ("off_out", "uint64"), ("len", "uint64"), ("flags", "uint32")),
           "splice": (("fd_in", "int32"), ("off_in", "uint64"), ("fd_out", "int32"), ("off_out", "uint64"),
                      ("len", "uint64"), ("flags", "uint32"))}


def _probe_text(prog: str, head: str) -> str:
    """The whole probe (its continuation lines too) that starts with ``head``."""
    lines = prog.split("\n")
    i = next(i for i, x in enumerate(lines) if x.startswith(head))
    j = next((k for k in range(i + 1, len(lines)) if lines[k] and not lines[k][0].isspace()), len(lines))
    return "\n".join(lines[i:j])


def _vector(probes: str) -> str:
    return bt.script(["vda"], False, "device", "/tmp/ready", "vector", "kernel", None, 16384, True,
                     probes=probes, args_of=lambda c: FORMATS.get(c, ()))


def test_format_file_gives_the_arguments_in_order_with_their_types():
    assert bt.parse_syscall_format(MMAP_FORMAT) == (
        ("addr", "uint64"), ("len", "uint64"), ("prot", "uint64"), ("flags", "uint64"), ("fd", "uint64"),
        ("off", "uint64"))
    text = ("\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
            "\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n"
            "\tfield:const struct iovec * vec;\toffset:24;\tsize:8;\tsigned:0;\n"
            "\tfield:loff_t pos;\toffset:32;\tsize:8;\tsigned:1;\n"
            "\tfield:rwf_t flags;\toffset:40;\tsize:8;\tsigned:0;\n")
    assert bt.parse_syscall_format(text) == (("fd", "uint32"), ("vec", "uint64"), ("pos", "int64"),
                                             ("flags", "int32"))


def test_kfunc_program_has_every_syscall_probe_on_the_function_and_nothing_else_changes():
    tp, kf = _vector("tracepoint"), _vector("kfunc")
    assert "tracepoint:syscalls:" not in kf and "kretfunc:__x64_sys_read {" in kf
    heads = lambda p: [x.split(" ")[0] for x in p.split("\n") if x and not x[0].isspace()]
    # one probe per call: the copies' shared exit probe becomes one per copy call
    want = []
    for h in heads(tp):
        for a in h.split(","):
            want.append(a.replace("tracepoint:syscalls:sys_enter_", "kfunc:__x64_sys_")
                        .replace("tracepoint:syscalls:sys_exit_", "kretfunc:__x64_sys_"))
    assert heads(kf) == want
    # the other probes (tree, END but for the registers' check) are the same text
    for line in tp.split("\n"):
        if line.startswith(("BEGIN", "END", "tracepoint:sched")):
            assert line.replace(" print(@badregs); clear(@badregs);", "") in kf
    # the read exit: saved registers from the function's argument, no stack walk, no check;
    # the count is the tracepoint program's
    read = _probe_text(kf, "kretfunc:__x64_sys_read ")
    assert "$r = args->regs;" in read and "retval" in read
    assert "orig_ax" not in read and "curtask->stack" not in read and "args->ret" not in read
    assert "@agg[$id, $ret * 64 + (1) * 2 + $seq] = count();" in read
    # the registers' check is gone, and so is its map (bpftrace refuses an undefined map)
    assert "@badregs" in tp and "@badregs" not in kf
    assert "print(@agg); print(@inode);" in kf and "@tot" not in kf
    # below the hook, the same statements as the tracepoint program's
    old = _probe_text(tp, "tracepoint:syscalls:sys_exit_read ")
    tail = lambda t: t.split("$fd = (int64)$r->di;", 1)[1]
    assert tail(read) == tail(old)


def _hot_path(body: str) -> str:
    """A read exit probe's statements on its cached path: without the branch a descriptor's
    first call takes (``if ($f == 0) { ... }``) and the registers' failed check."""
    body = body.replace("{ @badregs = count(); }", "{ }")
    i = body.index("if ($f == 0) {")
    depth, j = 0, body.index("{", i)
    for j in range(j, len(body)):
        depth += {"{": 1, "}": -1}.get(body[j], 0)
        if depth == 0:
            break
    return body[:i] + body[j + 1:]


@pytest.mark.parametrize("probes", ["tracepoint", "kfunc"])
def test_the_cached_path_has_three_map_operations(probes):
    """Issue 70: a call on a descriptor already seen costs one ``@tree`` read (the traced tree
    and the descriptor epoch), one ``@fd`` read (the file number) and the ``@agg`` count, on
    both hooks; no running total (``@tot``); the file's inode and name only where it misses."""
    prog = bt.script(["vda"], False, "device", "/tmp/ready", "vector", "kernel", None, 16384, False,
                     probes=probes, args_of=lambda c: FORMATS.get(c, ()))
    import re
    head = "kretfunc:__x64_sys_read " if probes == "kfunc" else "tracepoint:syscalls:sys_exit_read "
    hot = _hot_path(_probe_text(prog, head))
    assert re.findall(r"@\w+\[[^\]]*\]", hot) == ["@tree[pid]", "@fd[pid, $e, $fd]", "@agg[$id, $ret * 64 + (1) * 2 + $seq]"]
    assert hot.count("count()") == 1 and "@file" not in hot and "@inode" not in hot and "@seen" not in hot
    assert "@tot" not in prog


def test_the_packed_key_gives_back_operation_bytes_and_order():
    for op in (1, 10, 16, 19):
        for ret in (0, 1, 4096, 1 << 40, -1, -9, -4095):
            for seq in (0, 1):
                assert bt.unpack_opseq(ret * bt.OPSEQ + op * 2 + seq) == (op, ret, seq)
    assert max(bt.OP_ID.values()) * 2 + 1 < bt.OPSEQ   # every operation fits under the bytes


def test_entry_arguments_become_their_registers():
    kf = _vector("kfunc")
    mmap = next(x for x in kf.split("\n") if x.startswith("kfunc:__x64_sys_mmap "))
    # mmap(addr, len, prot, flags, fd, off): fd is the fifth argument (r8), flags the fourth (r10)
    assert "(int64)((uint64)args->regs->r8) >= 0" in mmap and "((uint64)args->regs->r10) & 32" in mmap
    close = next(x for x in kf.split("\n") if x.startswith("kfunc:__x64_sys_close "))
    assert "(int64)((uint32)args->regs->di)" in close
    send = next(x for x in kf.split("\n") if x.startswith("kfunc:__x64_sys_sendfile64 "))
    assert "((int32)args->regs->si)" in send   # sendfile(out_fd, in_fd, ...): the source is second


def test_translation_refuses_what_it_cannot_map():
    with pytest.raises(ValueError, match="args->fd is no argument of read"):
        bt.to_kfunc("tracepoint:syscalls:sys_enter_read { @x[args->fd] = 1; }", lambda c: ())
    with pytest.raises(ValueError, match="args->count in the exit probe"):
        bt.to_kfunc("tracepoint:syscalls:sys_exit_read { @x = args->count; }", lambda c: ())
    with pytest.raises(ValueError, match="probes = 'kfunc' is the vector mode's"):
        bt.script(None, False, mode="timeline", probes="kfunc")
    with pytest.raises(ValueError, match="probes = 'fentry'"):
        bt.script(None, False, mode="vector", probes="fentry")
    with pytest.raises(tracer.TraceError, match="trace probes = 'x'"):
        tracer.Tracer(probes="x")


STATUS = backend_status()
KERNEL_FILES, WHY = bt.kernel_files_available()


@pytest.mark.parametrize("probes", ["auto", "kfunc", "tracepoint"])
def test_trace_records_which_program_ran(tmp_path, probes):
    if not STATUS["bpftrace"]["ok"] or not KERNEL_FILES:
        pytest.skip(f"bpftrace vector mode cannot run here: {STATUS['bpftrace']['why'] or WHY}")
    (tmp_path / "a").write_bytes(b"x" * 5000)
    code = f"import os; f = os.open({str(tmp_path / 'a')!r}, 0); os.read(f, 3000); os.read(f, 3000)"
    tr, rc = tracer.run([sys.executable, "-S", "-c", code], watch=[tmp_path], quiet=True, mode="vector",
                        probes=probes)
    assert rc == 0 and tr.mode == "vector"
    kind, why = bt.probe_kind()
    want = "tracepoint" if probes == "tracepoint" else kind
    assert tr.meta["probes"] == want
    if want == "tracepoint":
        assert tr.meta["why_not_kfunc"]   # a reason, whichever it is
    c = tr.counts[tr.counts["path"] == str(tmp_path / "a")]
    assert int(c["calls"].sum()) == 2 and int((c["size"] * c["calls"]).sum()) == 5000


def test_bpftrace_parses_the_kfunc_program(tmp_path):
    """bpftrace's parser reads the translated program without a syntax error (the check this
    box can make: its kernel refuses kfunc probes, so the semantic pass stops at each of them
    with a reason that names kfunc, never at the program's text)."""
    import shutil
    import subprocess
    exe = shutil.which("bpftrace")
    if not exe:
        pytest.skip("bpftrace is not installed")
    prog = tmp_path / "kf.bt"
    prog.write_text(_vector("kfunc").replace('system("touch /tmp/ready");', ""))
    p = subprocess.run([exe, "-d", str(prog), "1"], capture_output=True, text=True, timeout=120)
    errors = [x for x in (p.stdout + p.stderr).splitlines() if "ERROR" in x and "RLIMIT_MEMLOCK" not in x]
    assert "syntax error" not in p.stdout + p.stderr
    assert all("kfunc" in x or "traceable functions" in x for x in errors), errors[:3]


def test_the_kfunc_bodies_pass_bpftraces_semantic_checks_on_the_tracepoints(tmp_path):
    """Where the kernel refuses kfunc probes, bpftrace's semantic pass stops at each probe
    before reading its body; so the bodies are checked hooked back on the tracepoints, the
    function's ``args->regs`` standing in as a ``struct pt_regs *`` and ``retval`` as the
    exit's ``args->ret``: types, maps and variables as bpftrace checks them (not the hook)."""
    import re
    import shutil
    import subprocess
    exe = shutil.which("bpftrace")
    if not exe:
        pytest.skip("bpftrace is not installed")
    kf = _vector("kfunc")
    kf = re.sub(r"^kretfunc:__x64_sys_(\w+)", r"tracepoint:syscalls:sys_exit_\1", kf, flags=re.M)
    kf = re.sub(r"^kfunc:__x64_sys_(\w+)", r"tracepoint:syscalls:sys_enter_\1", kf, flags=re.M)
    kf = kf.replace("args->regs", "((struct pt_regs *)curtask->stack)").replace("retval", "args->ret")
    prog = tmp_path / "kf_as_tp.bt"
    prog.write_text(kf)
    p = subprocess.run([exe, "--unsafe", "-d", str(prog), "1"], capture_output=True, text=True, timeout=120)
    errors = [x for x in (p.stdout + p.stderr).splitlines() if "ERROR" in x and "RLIMIT_MEMLOCK" not in x]
    if any("tracepoint" in x and "not found" in x.lower() for x in errors):
        pytest.skip(f"this kernel lacks a tracepoint the program uses: {errors[0]}")
    assert errors == []


def test_vector_cost_measures_the_kfunc_program_where_it_can_run(monkeypatch):
    from experiments.trace import vector_cost
    probe = {"syscalls": None, "exit_regs": 16384}
    monkeypatch.setattr(bt, "_probe", lambda: probe)
    monkeypatch.setattr(bt, "syscall_args", lambda c: FORMATS.get(c, ()))
    monkeypatch.setattr(bt, "probe_kind", lambda: ("tracepoint", "no kfunc"))
    assert "vector_kfunc" not in vector_cost.variants("fio")
    monkeypatch.setattr(bt, "probe_kind", lambda: ("kfunc", ""))
    v = vector_cost.variants("fio")
    assert "tracepoint:syscalls" not in v["vector_kfunc"] and "tracepoint:sched" not in v["vector_kfunc"]
    assert 'kretfunc:__x64_sys_read { $e = comm == "fio" ? (uint64)1 : (uint64)0;' in v["vector_kfunc"]
    assert v["count_only_kfunc"].count("kretfunc:__x64_sys_") >= 2


@pytest.mark.parametrize("sizes", [100, 1200])
def test_a_full_aggregation_is_told_by_its_entries(tmp_path, sizes):
    """Issue 70: no running total any more; a map at ``max_keys`` entries says it was full and
    the VFS components are not measured; below it every call is counted."""
    if not STATUS["bpftrace"]["ok"] or not KERNEL_FILES:
        pytest.skip(f"bpftrace vector mode cannot run here: {STATUS['bpftrace']['why'] or WHY}")
    from experiments.trace import vector
    data = tmp_path / "a"
    data.write_bytes(b"x" * 2000)
    # one (file, size) key per read: 1200 of them overflow a map of 1024
    code = f"import os\nf = os.open({str(data)!r}, 0)\nfor n in range(1, {sizes + 1}): os.pread(f, n, 0)\n"
    tr, rc = tracer.run([sys.executable, "-S", "-c", code], watch=[tmp_path], quiet=True, mode="vector",
                        max_keys=1024, sample=False)
    assert rc == 0 and tr.mode == "vector"
    why = vector.not_measured(tr, data=[data])
    if sizes > 1024:
        assert tr.meta["agg_full"] and tr.meta["agg_lost_calls"] is None
        assert "aggregation map was full" in why["vfs_reads"]
    else:
        assert not tr.meta["agg_full"] and tr.meta["agg_lost_calls"] == 0 and "vfs_reads" not in why
        c = tr.counts[tr.counts["path"] == str(data)]
        assert int(c["calls"].sum()) == sizes and int((c["size"] * c["calls"]).sum()) == sizes * (sizes + 1) // 2
