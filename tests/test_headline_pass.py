"""The rows the headline pass added (issue 66, item 5): each measure function's value on tiny
steps where the answer is known, and its failing side."""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.workloads import report as R


def _run(workload, G, B, repeat, data, compute, epochs=2, parts=None, variant="real"):
    """One run's steps: ``data``(step) and ``compute``(G, B) in seconds, the parts of ``parts``."""
    rows = []
    for e in range(epochs):
        for i in range(6):
            r = {"workload": workload, "variant": variant, "ranks": G, "batch_size": B, "repeat": repeat,
                 "rank": 0, "epoch": e, "step": i, "samples": B, "data_ns": int(data(i) * 1e9),
                 "compute_ns": int(compute(G, B) * 1e9)}
            r["step_ns"] = r["data_ns"] + r["compute_ns"]
            for p, s in (parts or {}).items():
                r[p] = int(s * 1e9 * (1 + 0.01 * ((i + repeat) % 3)))
            rows.append(r)
    return rows


def _frame(*runs):
    return pd.DataFrame([r for run in runs for r in run])


def _by_id(ms):
    return {m.id: m for m in ms}


def test_the_second_batch_is_quicker_when_the_first_step_waits_longest():
    waits = _frame(*[_run("unet3d", 2, 2, k, lambda i: 1.0 if i == 0 else 0.1, lambda G, B: 1, epochs=3)
                     for k in range(6)])
    m = R._second_batch(waits)
    assert abs(m.value - 10) < 1e-6 and m.interval is not None and m.interval.low > 2
    flat = _frame(*[_run("unet3d", 2, 2, k, lambda i: 0.1, lambda G, B: 1, epochs=3) for k in range(6)])
    assert abs(R._second_batch(flat).value - 1) < 1e-6


def test_the_cumulative_loss_is_compared_with_the_longest_other_part_on_more_than_one_rank():
    parts = {"to_device_ns": 0.01, "forward_ns": 0.2, "loss_ns": 0.01, "backward_ns": 0.3,
             "optimizer_ns": 0.05, "allreduce_ns": 0.6}
    d = _frame(*[_run("unet3d", G, 2, k, lambda i: 0.01, lambda G, B: 1, parts=parts)
                 for G in (1, 2) for k in range(6)])
    m = R._cumulative_loss(d)
    assert abs(m.value - 2) < 0.05 and m.interval is not None
    one = d[d["ranks"] == 1]
    assert R._cumulative_loss(one).value is None   # an all-reduce over one rank is not judged


def test_bert_compute_grows_slightly_with_ranks_bends_and_its_data_wait_is_uncorrelated():
    rng = np.random.default_rng(0)
    runs = []
    for G in (1, 2):
        for B in (1, 2, 4, 8):
            for k in range(6):
                runs.append(_run("bert", G, B, k, lambda i: 0.01 + 0.001 * rng.random(),
                                 lambda G, B: 0.2 + 0.05 * B + 0.01 * G))
    got = _by_id(R._bert_pass(_frame(*runs)))
    g = got["bert-compute-slight-increase-with-gpus"]
    assert 1.0 < g.value < 1.1 and g.interval is not None
    a = got["bert-compute-throughput-asymptote"]
    assert a.value < 1 and a.interval is not None   # B / (0.2 + 0.05 B) bends towards 20
    c = got["bert-data-no-correlation-with-batch-or-gpus"]
    assert c.value < 0.9
    # a data wait that follows the batch size is correlated with it
    runs = [_run("bert", G, B, k, lambda i, B=B: 0.01 * B, lambda G, B: 1.0) for G in (1, 2)
            for B in (1, 2, 4, 8) for k in range(6)]
    assert _by_id(R._bert_pass(_frame(*runs)))["bert-data-no-correlation-with-batch-or-gpus"].value > 0.8


def test_without_steps_every_row_says_why():
    for m in R.measure_headline_pass(None):
        assert m.value is None and m.why_not


def _passes(workload, shares: dict, passes=6):
    """The traced comparison's throughput.csv: one row per pass and side, ``bio_vfs_read_pct``
    from ``shares`` ({side: %})."""
    return pd.DataFrame([{"workload": workload, "side": s, "run": k, "status": "measured", "why": "",
                          "bio_vfs_read_pct": v + 0.1 * k, "epochs": 1, "data_sps": np.nan, "compute_sps": np.nan}
                         for k in range(passes) for s, v in shares.items()])


def test_the_storage_share_rows_judge_each_side_alone():
    from experiments.sidebyside import findings as F

    t = F._Tables(_passes("dlrm", {"real": 100.2, "dlio": 60.0}), None, {})
    got = _by_id(F.measure_caching(t))
    assert got["traced-dlrm-no-caching-real"].value > 99 and not got["traced-dlrm-no-caching-real"].why_not
    assert got["traced-dlrm-no-caching-dlio"].value < 61 and "page cache" in got["traced-dlrm-no-caching-dlio"].why_not
    b = _by_id(F.measure_caching(F._Tables(_passes("bert", {"real": 107.0}), None, {})))
    assert b["traced-bert-real-reads-more-than-requested"].interval.n == 6
    # no block device under the passes (tmpfs): not measured, never a fail
    z = _by_id(F.measure_caching(F._Tables(_passes("bert", {"real": 0.0}, passes=1), None, {})))
    assert z["traced-bert-real-reads-more-than-requested"].value is None


def test_the_new_traced_rows_join_with_their_declarations():
    from experiments.sidebyside import findings as F

    rows = pd.concat([_passes("dlrm", {"real": 100.0, "dlio": 103.0}), _passes("bert", {"real": 107.0})])
    cl = {c["id"]: c for c in F.claims(rows)}
    assert cl["traced-dlrm-no-caching-dlio"]["verdict"] == "holds"
    assert cl["traced-bert-real-reads-more-than-requested"]["verdict"] == "holds"
    assert cl["traced-vfs-dlio-unet3d"]["verdict"] == "not measured"


def test_the_random_rise_is_compared_across_rank_counts_and_the_sleep_spread_with_the_real():
    rise = {1: 8.0, 4: 2.0}     # random / real data latency at 1 and 4 ranks
    runs = []
    for G in (1, 4):
        for k in range(6):
            for row, f in (("real", 1.0), ("random", rise[G])):
                r = _run("unet3d", G, 2, k, lambda i, f=f: 0.01 * f * (1 + 0.05 * (i % 3)), lambda G, B: 1.0, epochs=3)
                runs.append([{**x, "row": row} for x in r])
    m = R._random_rise_by_ranks(_frame(*runs))
    assert abs(m.value - 4) < 0.1 and m.interval is not None and m.interval.low > 1
    assert R._random_rise_by_ranks(None).value is None

    rows = []
    for k in range(6):
        for row, spread in (("real", 0.02), ("sleep", 0.1)):
            r = _run("unet3d", 2, 2, k, lambda i: 0.01, lambda G, B: 1.0, epochs=3)
            for x in r:
                x["compute_ns"] = int(1e9 * (1 + spread * ((x["step"] % 4) - 1.5)))
            rows.append([{**x, "row": row} for x in r])
    s = R._sleep_compute_spread(_frame(*rows))
    assert s.value > 3 and s.interval is not None


def test_the_rest_of_the_images_is_judged_on_the_bins_outside_64k_and_128k():
    from experiments.blog import report as B

    mix = {2: 1, 4: 2, 8: 4, 16: 8, 32: 13, 64: 38, 128: 33, 256: 1}     # the blog's bssplit, KiB: %
    hist = pd.DataFrame({"bucket_bytes": [k * 1024 for k in mix], "bucket": [f"{k}K" for k in mix],
                         "mix_percent": list(mix.values()), "files_percent": list(mix.values())})
    m = B.measure_histogram_rest(hist)
    assert abs(m.value - 28 / 29 * 100) < 1e-9
    big = hist.assign(files_percent=[0, 0, 0, 0, 5, 40, 40, 15])
    assert abs(B.measure_histogram_rest(big).value - 25) < 1e-9
    assert B.measure_histogram_rest(pd.DataFrame()).value is None


def test_the_drain_outlasts_the_run_only_when_a_copy_is_left_at_the_end():
    from experiments.chien import alexnet_report as A

    runs = pd.DataFrame({"mode": ["burst"] * 6 + ["direct"] * 6, "warmup": [False] * 12,
                         "seconds": [10.0] * 12, "drain_done_s": [12.0 + 0.1 * k for k in range(6)] + [10.0] * 6})
    m = A.measure_drain_after_end(runs, "tmpfs", "disk")
    assert abs(m.value - 1.225) < 1e-9 and m.interval is not None and m.interval.low > 1.01
    kept_up = runs.assign(drain_done_s=10.0)
    assert A.measure_drain_after_end(kept_up, "tmpfs", "disk").value == 1.0
    assert A.measure_drain_after_end(None, "tmpfs", "disk").value is None


# ------------------------------------------------------------------ docs/claims.md's list

import re  # noqa: E402
from pathlib import Path  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "claims.md"


def _sections():
    s = DOC.read_text()
    sec = s[s.index("## Every headline result, and its row"):s.index("### The count")]
    return {p.splitlines()[0]: p for p in re.split(r"^### ", sec, flags=re.M)[1:]}, s[s.index("### The count"):]


def _declared(i: str, decl: dict) -> bool:
    """Whether ``i`` is a declared id, or an id of a declared template (``...-{side}``)."""
    return i in decl or any(d.template is not None and d.template.match(i) for _, d in decl.values())


def _rows(part):
    """Each numbered result's row cell: the ids it names, each with the words after it."""
    out = []
    for line in part.splitlines():
        if re.match(r"\| \d+ \|", line):
            cell = line.rstrip(" |").split(" | ")[-1]
            t = re.split(r"`([^`]+)`", cell)
            out.append([(t[i], t[i + 1]) for i in range(1, len(t), 2)])
    return out


def test_every_id_the_headline_list_names_is_declared_and_every_new_row_is_listed():
    from experiments.claims import declared as D

    decl = D.declared()
    sections, _ = _sections()
    named = {i for part in sections.values() for row in _rows(part) for i, _ in row}
    files = {"fio_baseline"} | {f"table_5_{k}_{w}.csv" for k, w in ((1, "unet3d"), (2, "bert"), (3, "dlrm"))}
    unknown = sorted(i for i in named - files if not _declared(i, decl))
    assert not unknown, unknown
    for f in sorted(D.PAPERS.glob("*.yaml")):
        text = f.read_text()
        if "the headline pass (issue 66" not in text:
            continue
        new = re.findall(r"^  - id: (\S+)", text.split("the headline pass (issue 66", 1)[1], flags=re.M)
        listed = named | {d.id for _, d in decl.values() if d.template is not None and any(d.template.match(i) for i in named)}
        assert set(new) <= listed, (f.name, sorted(set(new) - listed))


def test_the_count_table_counts_the_list():
    from experiments.claims import declared as D

    decl = D.declared()
    sections, count = _sections()
    table = {r[0]: [int(x) for x in r[1:5]] for r in
             (line.strip("| ").split(" | ") for line in count.splitlines() if re.match(r"\| [A-Z]", line))
             if r[0] != "source"}
    for name, part in sections.items():
        m = nm = none = 0
        for row in _rows(part):
            ids = [(i, after) for i, after in row if _declared(i, decl)]
            if not ids:
                none += 1
            elif any(not re.match(r"\s*\*?\((new, )?nm", after) for _, after in ids):
                m += 1
            else:
                nm += 1
        key = next(k for k in table if name.startswith(k))
        assert table[key] == [m + nm + none, m, nm, none], (name, table[key], [m + nm + none, m, nm, none])
