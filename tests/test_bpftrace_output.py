"""bpftrace's output parsed (experiments.trace.bpftrace_output) on a hand-written file: each
record goes to its parser, a line none takes is counted, never dropped; no bpftrace needed."""

from experiments.trace import bpftrace_output as bo

LINES = [
    "Attaching 12 probes...", "READY\t100", "",
    "F\t110\t1\t2\tpython", "E\t112\t2\tworker",
    "V\t1\t200\t50\t2\t2\t3\t0\t0\t0\t4096\t0",          # read of 4096 B by the worker
    "V\t17\t210\t5\t2\t5\t-100\t0\t0\t0\t7\t524288",     # openat (descriptors): path from N
    "V\t99\t220\t5\t2\t5\t7\t0\t0\t0\t10\t-1",           # unknown operation id
    "BI\t240\t8388608\t100\t8\t4096\tR\t1\t1\t1\tpython",
    "BC\t250\t8388608\t100\t8\tR",
    "garbage line",
    # the maps (issue 70): counts by (file number, bytes * 64 + op * 2 + sequential), each
    # number's inode (two numbers for one inode: counted together); a failed read (-9) of no
    # file (number 0)
    "AGG", "@agg[77, 262147]: 5", "@agg[78, 262147]: 1", "@agg[0, -574]: 2",
    "@inode[77]: (8388609, 12, 3)", "@inode[78]: (8388609, 12, 3)",
    "@badregs: 1", "@badregs: 0", "@other: 3",
]


def test_each_record_goes_to_its_parser_and_the_rest_is_counted(tmp_path):
    out = tmp_path / "bt.out"
    # the openat's path (N) comes before its exit line (V), as the program prints them
    lines = LINES[:6] + ["N\t5\t/data/x"] + LINES[6:]
    out.write_text("\n".join(lines) + "\n")
    p = bo.parse_output(out, 1000, {1: "root"}, mountinfo="")
    assert p.forks == [(1110, 1, 2)]
    v = p.vfs.set_index("op")
    assert v.loc["read", "comm"] == "worker" and v.loc["read", "timestamp_ns"] == 1200
    assert v.loc["openat", "filename"] == "/data/x" and v.loc["openat", "fd"] == 7
    assert len(p.block) == 1 and p.block["latency_s"].iloc[0] == 10 / 1e9
    assert p.counts[["op", "dev", "ino", "gen", "ret", "sequential", "calls"]].values.tolist() == [
        ["read", 8388609, 12, 3, 4096, 1, 5], ["read", 8388609, 12, 3, 4096, 1, 1], ["read", 0, 0, 0, -9, 0, 2]]
    # the cleared scalar bpftrace prints again at exit is not kept; each map's entries counted
    assert p.totals == {"agg_entries": 3, "inode_entries": 2, "badregs": 1}
    assert p.unparsed == 3 and p.unparsed_examples[1] == "garbage line"


def test_a_requeued_request_is_counted_once_with_its_first_submitter(tmp_path):
    # fio (pid 7) reads sector 100; the device is busy, the request is requeued and kblockd
    # (pid 44) issues it again; a later read of the same sector is a new request
    out = tmp_path / "bt.out"
    out.write_text("\n".join([
        "B\t240\t8388608\t100\t8\t4096\tR\t7",
        "BQ\t245\t8388608\t100",
        "B\t260\t8388608\t100\t8\t4096\tR\t44",
        "B\t300\t8388608\t100\t8\t4096\tR\t7",
        "B\t310\t8388608\t200\t8\t4096\tR\t7",
    ]) + "\n")
    p = bo.parse_output(out, 0, {7: "fio", 44: "kworker/1:1H"}, mountinfo="")
    assert p.unparsed == 0
    assert p.block[["pid", "sector"]].values.tolist() == [[7, 100], [7, 100], [7, 200]]
    assert p.block["timestamp_ns"].tolist() == [240, 300, 310]
