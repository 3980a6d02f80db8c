"""What one emulated run achieved: ``summary.json`` and ``summary.md`` in its run folder.

Measured from the ranks' own records (no model of the result):

- **training time** ``train_s``: from the first rank's first ``train`` begin to the last rank's
  last ``train`` end, minus the evaluation and checkpoint phases in between (DLRM's training is
  interrupted by them); ``run_s`` is the whole run, initialization to the last phase's end;
- **samples**: training samples of all accelerators (steps x batch per accelerator x G; DLRM:
  steps x global batch);
- **throughput** (MLPerf Storage's figure): samples / ``train_s``, samples/s;
- **data read**: bytes the loaders read for training, from their own records (UNET3D: the
  file sizes of every case a DataLoader worker loaded, ``np.load`` reads the whole file; DLRM:
  the ``pread`` sizes; BERT: tf.data reads inside the graph, so the growth of the rank's
  ``/proc/self/io`` ``rchar`` over the training phase); ``data_bytes_per_s`` = bytes / ``train_s``;
- **data throughput as the thesis measures it** (Sec 4.4): per-accelerator batch / median data
  wait of the steady steps, samples/s;
- **accelerator utilization** (thesis Eq 3.1, 3.2): ideal compute time = samples / (batch per
  accelerator x G) x sleep time, with the mean of the times actually slept (so it is exactly
  the time one accelerator slept), over ``train_s``; pass at >= 90 % (MLPerf Storage).
  ``au_model`` uses the model's mean instead of the draws;
- per rank: ``au_by_rank`` (its steps x its mean sleep over its own training seconds) and
  ``data_bytes_by_rank``; per node ``data_bytes_by_node`` (ranks in blocks of G / nodes);
- **checkpoints**: per checkpoint the files, writes, bytes and seconds every writer reported;
- **device audit** (``device_audit``, :func:`audit`): the bytes the device under the data read
  over the run beside ``data_bytes`` (:mod:`experiments.host.device_audit`); a run whose reads were
  the page cache's gets ``bound`` ``no verdict``;
- **bound** (``storage``, ``client`` or ``undetermined``) and the figures behind it
  (``client_cpu``): :mod:`.bound` (the data bytes/s against the tier's ``fio_baseline``, the
  busiest thread of the data path from the launcher's ``threads.csv``, the ranks' CPU), and
  ``where_time_went`` (read syscalls, preprocessing, the CPU per thread group).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..workloads import compute_model as cm
from ..workloads.launch import collect


def _train_seconds(phases: pd.DataFrame) -> tuple[float, float]:
    """(training seconds, whole-run seconds) from the phase intervals of all ranks."""
    if not len(phases):
        return float("nan"), float("nan")
    tr = phases[phases["phase"] == "train"]
    start, end = tr["start"].min(), tr["end"].max()
    # time inside [start, end] taken by evaluation / checkpoint phases (union over ranks)
    other = phases[phases["phase"].isin(["eval", "checkpoint"]) & (phases["start"] < end)
                   & (phases["end"] > start)]
    spans = sorted((max(s, start), min(e, end)) for s, e in zip(other["start"], other["end"]))
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in spans:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return float(end - start - busy), float(phases["end"].max() - phases["start"].min())


def _by_node(by_rank: dict, ranks: int, nodes: int) -> dict:
    """Bytes per node: ranks are dealt to nodes in blocks of ranks / nodes (torchrun's order)."""
    per = max(1, ranks // max(1, nodes))
    out: dict[str, int] = {}
    for r, b in sorted(by_rank.items()):
        out[str(int(r) // per)] = out.get(str(int(r) // per), 0) + int(b)
    return out


def data_bytes(run: dict, got: dict) -> tuple[dict, str]:
    """Training bytes read per rank, and how they were measured."""
    w = run["workload"]
    lo = got["loader"]
    if w == "unet3d":
        from ..workloads.data_unet3d import read_manifest

        m = read_manifest(run["data_dir"])
        m = m[m["split"] == "train"].reset_index(drop=True)
        size = (m["bytes_x"] + m["bytes_y"]).to_numpy()
        tr = lo[lo["split"] == "train"] if len(lo) else lo
        out = {int(r): int(size[g["case"].astype(int)].sum()) for r, g in tr.groupby("rank")} if len(tr) else {}
        return out, "file sizes of the cases the DataLoader workers loaded (np.load reads whole files)"
    if w == "dlrm":
        out = {int(r): int(g["bytes"].sum()) for r, g in lo.groupby("rank")} if len(lo) else {}
        return out, "pread sizes of the training batches (BatchReader's records)"
    if w == "retinanet":
        tr = lo[lo["split"] == "train"] if len(lo) else lo
        out = {int(r): int(g["bytes"].sum()) for r, g in tr.groupby("rank")} if len(tr) else {}
        return out, "bytes of the JPEGs the DataLoader workers read (one whole-file read each)"
    return ({int(r["rank"]): int(r.get("io", {}).get("rchar", 0)) for r in got["ranks"]},
            "growth of /proc/self/io rchar of each TensorFlow worker from its first batch (the "
            "shuffle buffer's first fill, read during init, is data_bytes_first_batch) to the end "
            "of training (tf.data reads inside the graph; a few small /proc and /dev reads included)")


def summarize(run_dir) -> dict:
    """Read a finished run folder; returns the summary (see the module docstring)."""
    from ..workloads.fits import step_summary

    run_dir = Path(run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    emu = run["emulator"]
    got = collect(run_dir)
    steps = got["steps"]
    if not len(steps):
        raise RuntimeError(f"{run_dir}: no steps-r*.csv; the run did not finish")
    w, G, B = run["workload"], run["ranks"], run["batch_size"]
    # the compute model as resolved into run.json at launch (an old folder without it: NaN)
    c = run.get("compute") or {}
    mean, std = float(c.get("mean_s", float("nan"))), float(c.get("std_s", float("nan")))
    per_rank = steps.groupby("rank")
    n_steps = int(per_rank.size().max())
    local_b = B / G if w == "dlrm" else B
    samples = int(n_steps * B) if w == "dlrm" else int(steps["samples"].sum())
    train_s, run_s = _train_seconds(got["phases"])
    slept = steps.loc[steps["rank"] == steps["rank"].min(), "sleep_drawn_ns"] / 1e9
    sleep_s = float(slept.mean())
    ideal = cm.ideal_compute_s(samples, local_b, G, sleep_s)
    ideal_model = cm.ideal_compute_s(samples, local_b, G, mean) if mean == mean else float("nan")
    au = cm.accelerator_utilization(ideal, train_s)
    au_by_rank = {}
    for r, g in per_rank:  # each rank's own steps x mean sleep over its own training seconds
        ph = got["phases"]
        tr_r = _train_seconds(ph[ph["rank"] == r])[0] if len(ph) else float("nan")
        au_by_rank[str(int(r))] = cm.accelerator_utilization(
            len(g) * float(g["sleep_drawn_ns"].mean()) / 1e9, tr_r)
    by_rank, how = data_bytes(run, got)
    nbytes = int(sum(by_rank.values()))
    st = step_summary(steps.assign(workload=w), None)
    med = st.iloc[0] if len(st) else {}
    cps = [c | {"rank": r["rank"]} for r in got["ranks"] for c in r.get("checkpoints", [])]
    ck = pd.DataFrame(cps)
    check = {}
    if len(ck):
        key = [c for c in ("tag", "step", "epoch") if c in ck.columns]
        check = {"checkpoints": int(ck.groupby(key, dropna=False).ngroups) if key else 1,
                 "files": int(ck["files"].sum()), "writes": int(ck["writes"].sum()),
                 "bytes": int(ck["bytes"].sum()), "max_seconds": float(ck["seconds"].max())}
    from .bound import classify, host_cores, reference
    nodes = int(emu.get("nodes", 1) or 1)
    cores = int(emu.get("host_cores") or host_cores())  # a run may record its own; else this host's
    ranks = got["ranks"]
    if run.get("launched_at"):  # each rank's life: launch to its rank-r*.json (written at exit)
        ranks = [r | {"life_s": (run_dir / f"rank-r{r['rank']}.json").stat().st_mtime - run["launched_at"]}
                 if (run_dir / f"rank-r{r['rank']}.json").exists() else r for r in ranks]
    th = sorted(run_dir.glob("threads*.csv"))
    thread_rows = pd.concat([pd.read_csv(f) for f in th], ignore_index=True) if th else None
    bnd = classify(steps, ranks, got["phases"], cores, max(1, G // nodes), threads=thread_rows, loader=got["loader"],
                   client_bps=nbytes / train_s if train_s > 0 else float("nan"),
                   ref=reference(w, run["data_dir"]))
    notes = []
    if nodes > 1 and len(th) < nodes:
        notes.append(f"thread CPU samples of {len(th)} of {nodes} nodes (the others' threads-node<k>.csv "
                     "were not in the folder when node 0 summarized): the bound is judged on those")
    if mean == mean and mean <= 0 and emu["compute_model"] != "zero":
        notes.append(f"the compute model's mean at G={G}, B={B} is {mean:.3g} s (<= 0: the fit is used "
                     "outside the range it was fitted on), so steps sleep 0 s and AU is 0; pick a batch "
                     "size the model covers")
    out = {
        "workload": w, "accelerators": G, "nodes": emu.get("nodes", 1), "batch_size": B,
        "batch_is": "global" if w == "dlrm" else "per accelerator",
        "data_dir": run["data_dir"], "checkpoint_dir": run["checkpoint_dir"],
        "compute_model": {"source": emu["compute_model"], "host": c.get("host"),
                          "mean_s": mean, "std_s": std},
        "checkpoint_pattern": emu["checkpoint_pattern"],
        "steps_per_accelerator": n_steps, "samples": samples,
        "train_s": train_s, "run_s": run_s,
        "throughput_samples_per_s": samples / train_s if train_s > 0 else float("nan"),
        "data_bytes": nbytes, "data_bytes_per_s": nbytes / train_s if train_s > 0 else float("nan"),
        "data_bytes_by_rank": {str(k): v for k, v in sorted(by_rank.items())},
        "data_bytes_by_node": _by_node(by_rank, G, int(emu.get("nodes", 1) or 1)),
        "data_bytes_measured_as": how,
        "data_bytes_first_batch": int(sum(r.get("io_first_batch", {}).get("rchar", 0) for r in got["ranks"])),
        "data_wait_median_s": float(med.get("data_s", float("nan"))) if len(st) else float("nan"),
        "data_wait_samples_per_s": float(med.get("data_sps", float("nan"))) if len(st) else float("nan"),
        "sleep_mean_s": sleep_s,
        "ideal_compute_s": ideal, "au": au, "au_by_rank": au_by_rank, "au_model": cm.accelerator_utilization(ideal_model, train_s),
        "au_threshold": cm.au_pass_mark(w), "au_pass": bool(au >= cm.au_pass_mark(w)),
        "checkpoint": check,
        "bound": bnd["bound"], "bound_why": bnd["why"], "where_time_went": bnd["where_time_went"],
        "client_cpu": {k: bnd[k] for k in ("data_wait_share", "cpu_share", "cpu_measured_as", "cpu_near_cores",
                                           "thread_full", "storage_close", "wait_matters", "host", "cpu_by_rank",
                                           "threads", "time_split", "client_bytes_per_s", "reference_bytes_per_s",
                                           "reference_how", "client_fraction_of_reference") if k in bnd},
        # the ranks' own /proc/self/io over their measured windows (the device audit's job count)
        "io_window": {k: int(sum(r.get("io", {}).get(k, 0) for r in got["ranks"])) for k in ("read_bytes", "rchar")},
        "evaluations": int(sum(len(r.get("evals", [])) for r in got["ranks"])),
        "peak_rss_bytes_per_rank": int(max(r.get("peak_rss_bytes", 0) for r in got["ranks"])),
        "run_dir": str(run_dir), "notes": notes,
    }
    return out


def audit(s: dict, span) -> dict:
    """The device audit of a run (``span``: the :class:`experiments.host.device_audit.Span` it ran
    in) into its summary ``s``: ``device_audit`` judges ``data_bytes`` against the device's
    and the ranks' block reads (``io_window``), and the checkpoint bytes against the device's
    writes when the checkpoints went to the same device. When the reads were the page cache's
    the run gives no storage verdict: ``bound`` becomes ``no verdict`` (the verdict it would
    have had: ``bound_unaudited``)."""
    from ..host import device_audit
    from ..host.device_audit import block_device

    same = Path(s["checkpoint_dir"]).exists() and block_device(s["checkpoint_dir"])[1] == span.device
    a = span.judge(s["data_bytes"], (s["checkpoint"] or {}).get("bytes") if same else None,
                   job_processes=s.get("io_window"))
    s["device_audit"] = a
    if device_audit.cache_served(a):
        s["bound_unaudited"] = s["bound"]
        s["bound"], s["bound_why"] = "no verdict", f"{device_audit.words(a)}; unaudited: {s['bound_why']}"
    return s


def markdown(s: dict) -> str:
    """The short text a person reads first."""
    ok = "PASS" if s["au_pass"] else "FAIL"
    cm_ = s["compute_model"]
    ck = s["checkpoint"]
    lines = [
        f"# Emulated {s['workload'].upper()}: {s['accelerators']} accelerator(s), batch {s['batch_size']} "
        f"({s['batch_is']})",
        "",
        f"**Accelerator utilization {100 * s['au']:.1f} % -> {ok}** (MLPerf Storage needs >= "
        f"{100 * s['au_threshold']:.0f} %; thesis Eq 3.1, 3.2).",
        "",
        "| | |", "|---|---|",
        f"| throughput | {s['throughput_samples_per_s']:.4g} samples/s |",
        f"| data read | {s['data_bytes'] / 1e6:.4g} MB in {s['train_s']:.3g} s of training = "
        f"{s['data_bytes_per_s'] / 1e6:.4g} MB/s |",
        *([f"| read before the first step | {s['data_bytes_first_batch'] / 1e6:.4g} MB (tf.data's shuffle "
            f"buffer filled during init) |"] if s.get("data_bytes_first_batch") else []),
        *(["| data read per node | " + ", ".join(f"node {k}: {v / 1e6:.4g} MB" for k, v in
                                                   s["data_bytes_by_node"].items()) + " |"]
          if len(s.get("data_bytes_by_node", {})) > 1 else []),
        *(["| AU per rank | " + ", ".join(f"{k}: {100 * v:.1f} %" for k, v in s["au_by_rank"].items()) + " |"]
          if len(s.get("au_by_rank", {})) > 1 else []),
        f"| data wait (median step) | {1e3 * s['data_wait_median_s']:.3g} ms "
        f"({s['data_wait_samples_per_s']:.4g} samples/s per accelerator) |",
        f"| compute model | {cm_['source']} ({cm_['host']}): mean {cm_['mean_s']:.4g} s, std {cm_['std_s']:.3g} s per step |",
        f"| slept per step (mean) | {s['sleep_mean_s']:.4g} s; ideal compute {s['ideal_compute_s']:.4g} s |",
        f"| steps per accelerator | {s['steps_per_accelerator']} ({s['samples']} samples) |",
        "| checkpoints | " + (f"{ck['checkpoints']} checkpoint(s): {ck['files']} file(s), {ck['writes']} writes, "
                             f"{ck['bytes'] / 1e6:.4g} MB ({s['checkpoint_pattern']})" if ck else
                             f"none written ({s['checkpoint_pattern']})") + " |",
        f"| bound | {s.get('bound', 'unknown')} |",
        f"| device | {_audit_cell(s.get('device_audit'))} |",
        f"| whole run | {s['run_s']:.3g} s (initialization, evaluation, checkpoints included) |",
        f"| data | {s['data_dir']} |",
        "",
        f"Data bytes measured as: {s['data_bytes_measured_as']}.",
        "",
        *([f"**Bound: {s['bound']}.** {s['bound_why'][0].upper()}{s['bound_why'][1:]}.", ""]
          if s.get("bound_why") else []),
        *([f"Where the client's time went: {s['where_time_went']}.", ""] if s.get("where_time_went") else []),
    ] + [f"Note: {n}." for n in s.get("notes", [])]
    return "\n".join(lines)


def _audit_cell(a: dict | None) -> str:
    from ..host import device_audit

    return device_audit.words(a).removeprefix("device audit: ")


def write(run_dir, summary: dict | None = None) -> dict:
    """Write ``summary.json`` and ``summary.md`` into ``run_dir`` (atomically); returns the summary."""
    from ..output.results import atomic_write, write_json

    run_dir = Path(run_dir)
    s = summary or summarize(run_dir)
    atomic_write(run_dir / "summary.md", lambda p: p.write_text(markdown(s)))
    write_json(run_dir / "summary.json", s)
    return s


def steps_table(run_dir) -> pd.DataFrame:
    """Every rank's step records of a run folder (the real run's columns, plus ``sleep_ns``)."""
    return collect(run_dir)["steps"]
