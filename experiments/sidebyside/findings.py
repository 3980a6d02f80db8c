"""The traced comparison's claims (the ``traced_comparison_report`` stage): the ``measure_*``
functions measure each finding (value, interval, note) from the stage's tables
(:mod:`.compare`), and :func:`claims` joins them with the declarations of
``experiments/claims/papers/hovon2023-thesis-dl-io-patterns.yaml``. Only the report imports
this module: the measuring stage (:mod:`.stage`) reads no declaration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import reference, stats
from ..claims.declared import Measured, join
from ..trace.vector import KEYS
from .compare import (ONE_RUN, STAGE, THESIS_TABLE, WINDOW_METHOD, WINDOWS,  # noqa: F401
                      _fmt, _nan, checkpoint_distance, similarities, step_rates, window_samples)


def _benchmark_data_gap(w: str):
    """The thesis's MLPerf Storage data throughput against the real run's, as the paper value of
    workload ``w``: a number (benchmark / real) where the thesis gives one, else its words."""
    r = reference.HOVON_BENCHMARK_DATA_THROUGHPUT_RATIO.get(w)
    if r is not None:
        return r
    lat = reference.HOVON_BENCHMARK_DATA_LATENCY_S[w]
    (b0, b1), (r0, r1) = lat["benchmark"], lat["real"]
    return f"~0.1 (data latency 10x: {b0:g}-{b1:g} s vs {r0:g}-{r1:g} s)"


GAP_WHERE = {"unet3d": "Sec 5.1.3, Fig 5.5", "bert": "Sec 5.2.2, Fig 5.11", "dlrm": "Sec 5.3.2, Fig 5.17"}


def claims(sims: pd.DataFrame, throughput: pd.DataFrame, vectors: dict[str, dict[str, dict | None]],
           why: dict[str, dict[str, str]] | None = None, note: str = "",
           steps: pd.DataFrame | None = None, windows: pd.DataFrame | None = None,
           phases: pd.DataFrame | None = None) -> list[dict]:
    """The stage's claims from its tables: ``sims`` (:func:`similarity_table` of every
    workload), ``throughput`` (one row per workload and side with ``data_sps``, ``compute_sps``:
    the thesis's Sec 4.4 throughputs, samples/s), ``vectors`` ({workload: {side: vector}}), the
    reasons a side was not measured ({workload: {side: why}}), ``steps`` (the sides' steady
    steps, :func:`step_rates`) and ``windows`` (:func:`.stage.window_vectors`: each side's
    trace cut into :data:`WINDOWS` windows, equal shares of its reads of the data set), whose
    per-window values are noted beside the whole run's (:func:`window_samples`). Every finding
    is the whole runs', as the thesis's Tables 5.1-5.3 are, one value from one traced run per
    side, without an interval: the run is the unit of an interval, and steps or windows of one
    run are not independent samples, so a finding stays ``inconclusive`` until the stage
    repeats its runs (:data:`ONE_RUN_NOTE`); ``phases``
    (``phases.csv``: each side's phases, column ``variant`` = the side) gives the epochs a run
    trained. The measures (``measure_*``) are joined with the declarations of
    ``experiments/claims/papers/hovon2023-thesis-dl-io-patterns.yaml``; a declared claim no
    measure names is ``not measured`` with its declared need."""
    t = _Tables(sims, throughput, vectors, why or {}, note, steps, windows, phases)
    return join(STAGE, [*measure_similarity(t), *measure_throughput(t), *measure_checkpoint(t),
                        *measure_storage_share(t)])


@dataclass
class _Tables:
    """The stage's tables as :func:`claims` takes them (``why``: {workload: {side: why}})."""

    sims: pd.DataFrame
    throughput: pd.DataFrame
    vectors: dict
    why: dict
    note: str = ""
    steps: pd.DataFrame | None = None
    windows: pd.DataFrame | None = None
    phases: pd.DataFrame | None = None

    def epochs(self, w: str, side: str = "real") -> int:
        """The training epochs ``side`` of ``w`` ran (distinct ``epoch`` of its ``train``
        phases in ``phases.csv``, column ``variant`` = the side); 0 when none are recorded."""
        p = self.phases
        if p is None or not len(p) or not {"workload", "variant", "phase", "epoch"} <= set(p.columns):
            return 0
        d = p[(p["workload"] == w) & (p["variant"] == side) & (p["phase"] == "train")]
        return int(d["epoch"].dropna().nunique())

    def get(self, df, w, side, col) -> float:
        r = df[(df["workload"] == w) & (df["side"] == side)]
        return float(r[col].iloc[0]) if len(r) and not _nan(r[col].iloc[0]) else float("nan")

    def pre(self, *texts: str) -> str:
        """The stage's note (back ends, tier) before ``texts``."""
        return "; ".join(x for x in (self.note, *texts) if x)

    def audit(self, w, *sides) -> str:
        """The device audit of ``sides`` of ``w`` (``throughput.csv``'s ``read_from`` and
        ``device_read_ratio``), for a note: where each side's reads came from."""
        if "read_from" not in self.throughput:
            return ""
        bits = []
        for s in sides:
            r = self.throughput[(self.throughput["workload"] == w) & (self.throughput["side"] == s)]
            if len(r) and isinstance(r["read_from"].iloc[0], str):
                ratio = r["device_read_ratio"].iloc[0]
                bits.append(f"{s} {r['read_from'].iloc[0]}" + ("" if _nan(ratio) else f" ({ratio:.2f})"))
        return "device audit, reads from (device / job bytes): " + ", ".join(bits) if bits else ""

    def reason(self, w, *sides) -> str:
        """Why a claim of ``w`` that needs ``sides`` has no value: each missing side's reason."""
        parts = [f"{s}: {self.why.get(w, {}).get(s) or 'not measured'}" for s in sides
                 if self.vectors.get(w, {}).get(s) is None]
        return "; ".join(parts) or "a value is missing (see throughput.csv)"

    def farthest(self, w, side, n=3) -> str:
        """The ``n`` components of ``side`` farthest from the real run's (1 - min/max)."""
        real, v = self.vectors.get(w, {}).get("real"), self.vectors.get(w, {}).get(side)
        if real is None or v is None:
            return self.reason(w, "real", side)
        d = []
        for k in KEYS:
            a, b = real.get(k), v.get(k)
            if not (_nan(a) or _nan(b)) and max(a, b) > 0:
                d.append((1 - min(a, b) / max(a, b), k, a, b))
        top = sorted(d, reverse=True)[:n]
        return "farthest components (real vs " + side + "): " + ", ".join(
            f"{k} {a:.4g} vs {b:.4g}" for _, k, a, b in top)

    def ratio(self, w, side, col):
        """side / real throughput ``col`` of the whole runs (the tables' values), no interval: the
        run is the unit of an interval and the stage traces each side once (its steps are not
        independent samples); with the two throughputs (samples/s)."""
        e, r = self.get(self.throughput, w, side, col), self.get(self.throughput, w, "real", col)
        v = e / r if r and not (_nan(e) or _nan(r)) else float("nan")
        return v, None, (e, r)

    def window_ci(self, w, side, what, other=None):
        """((value, interval) or None, why not) of a trace finding from its per-window samples
        (:func:`window_samples`): None and why there is no interval where windows cannot be had."""
        windows = self.windows
        x = window_samples(windows, w, side, what, other)
        k = int(windows[windows["workload"] == w]["window"].nunique()) if windows is not None and len(windows) else 0
        how = WINDOW_METHOD.format(k=k)
        if what == "bio_vfs":
            x = x[np.isfinite(x).all(axis=1) & (x[:, 1] > 0)] if len(x) else x
            if len(x) < 2:
                return None, f"{len(x)} window(s) with VFS reads: no interval ({ONE_RUN})"
            share = lambda i: 100 * x[i.astype(int), 0].sum() / x[i.astype(int), 1].sum()  # noqa: E731
            v, ci = stats.bootstrap(share, np.arange(len(x)), method="BIO / VFS read bytes summed over the "
                                    "windows, bootstrap of the windows " + how)
            return (v, ci), ""
        x = x[np.isfinite(x)] if len(x) else x
        if len(x) < 2:
            why_ = ("the trace could not be cut into windows (a /proc-sampled trace holds the run's "
                    "totals, not timed calls)" if not k
                    else f"{len(x)} window(s) in which a side wrote a checkpoint (the checkpoints fall in "
                         "too few windows to give samples)" if what == "distance_minus"
                    else f"{len(x)} window(s) measured on both sides")
            return None, f"{why_}: no interval ({ONE_RUN})"
        v, ci = stats.median_ci(x)
        return (v, stats.Interval(ci.low, ci.high, ci.n, "median " + how + ", " + ci.method, ci.level,
                                  ci.coverage)), ""


ONE_RUN_NOTE = ("one traced run per side: no interval (the run is the unit of an interval; steps and "
                "windows of one run are not independent samples); inconclusive until the stage gives "
                "it at least 3 runs per side (it traces 1)")


def _windows_words(got, why_w: str) -> str:
    """The per-window median and its interval (:meth:`_Tables.window_ci`), for a note beside the
    whole run's value: what the windows of the one traced run per side show, or why none."""
    if got is None:
        return why_w
    v, ci = got
    return (f"median over the windows {v:.4g}" + (f" [{ci.low:.4g}, {ci.high:.4g}] n={ci.n}" if ci.ok else "")
            + " (window-to-window, not run-to-run, variation)")


def measure_similarity(t: _Tables) -> list[Measured]:
    """Per workload, the thesis's quantity: each side's weighted cosine similarity (Eq 4.1, 0-1)
    of the whole run's vector to the real run's: DLIO's (the thesis's benchmark), the emulator's
    and the sleep run's (our rows beside it), emulator minus DLIO, and the real run against
    itself. One traced run per side gives the whole run one value and no interval; the median
    over the windows (:func:`window_samples`) with its interval is in the note."""
    out = []
    for w in t.vectors:
        sim = {s_: t.get(t.sims, w, s_, "similarity") for s_ in ("dlio", "emulator", "sleep")}
        for side, v in sim.items():
            got, why_w = t.window_ci(w, side, "similarity") if not _nan(v) else (None, "")
            out.append(Measured(f"traced-similarity-{side}-{w}", v, why_not=t.farthest(w, side),
                                note=t.pre(_windows_words(got, why_w))))
        emu, dl = sim["emulator"], sim["dlio"]
        both = not (_nan(emu) or _nan(dl))
        got, why_w = t.window_ci(w, "emulator", "similarity_minus", "dlio") if both else (None, "")
        out.append(Measured(
            f"traced-similarity-emulator-vs-dlio-{w}", emu - dl if both else float("nan"),
            why_not=t.farthest(w, "emulator") if both else t.reason(w, "real", "emulator", "dlio"),
            note=t.pre(_windows_words(got, why_w))))
        out.append(Measured(f"traced-self-similarity-{w}", t.get(t.sims, w, "real", "similarity"),
                            why_not=t.reason(w, "real")))
    return out


def _dlrm_below_gap(t: _Tables, w: str) -> tuple[bool, float]:
    """(whether workload ``w`` is DLRM run below the thesis's batch 16k, where its benchmark's
    data throughput was "all very similar" to the real run's; the global batch)."""
    batch = t.get(t.throughput, w, "real", "batch_size") if "batch_size" in t.throughput else float("nan")
    return w == "dlrm" and not (batch >= reference.HOVON_DLRM_BENCHMARK_GAP_FROM_BATCH), batch


def _gap_words(t: _Tables, w: str) -> str:
    """What the thesis's MLPerf Storage emulation reached of the real run's data throughput."""
    gap = _benchmark_data_gap(w)
    words = f"{gap:g} of the real run's" if isinstance(gap, float) else gap
    if w != "dlrm":
        return f"{words} data throughput"
    similar, batch = _dlrm_below_gap(t, w)
    at_b = f"batch {batch:g}" if not _nan(batch) else "batch not recorded"
    return (f"about the real run's data throughput below batch 16k (ours: {at_b}), and {gap:g} of it "
            "only at its highest batch" if similar else f"{words} data throughput from batch 16k up (ours: {at_b})")


def measure_throughput(t: _Tables) -> list[Measured]:
    """Per workload: the emulator's data and compute throughputs (Sec 4.4: samples per step /
    median data wait, / median compute time) over the real run's, and DLIO's data throughput
    over the real run's (DLRM: the row of the thesis's batch range, below or from 16k); each the
    ratio of the whole runs' throughputs, without an interval (:meth:`_Tables.ratio`: one run per side)."""
    out = []
    for w in t.vectors:
        similar, _ = _dlrm_below_gap(t, w)
        gap_where = GAP_WHERE[w]
        for col in ("data_sps", "compute_sps"):
            v, ci, (e, r) = t.ratio(w, "emulator", col)
            sl = t.get(t.throughput, w, "sleep", col)
            measured = (f"{col}: real {r:.4g}, emulator {e:.4g}, sleep run {sl:.4g} samples/s; a sleep run "
                        "as far off says the compute model (or the load on the box when it was fitted) "
                        "differs from this run, not the emulator's data path")
            # The thesis reports its benchmark's data throughput as a miss (UNET3D "an order of
            # magnitude higher" latency, BERT "consistently 5 times lower"): within 10 % is our
            # goal for our emulator, an extension; the thesis's gap is its context.
            context = (f"context: the thesis's MLPerf Storage emulation reached {_gap_words(t, w)} ({gap_where})"
                       + ("" if similar else ", a gap it reports, not a target") if col == "data_sps"
                       else "context: the thesis's benchmark recreated its real run's (DLIO's row)")
            out.append(Measured(f"traced-{col.split('_')[0]}-throughput-emulator-{w}", v, ci,
                                why_not=measured if not _nan(v) else t.reason(w, "real", "emulator"),
                                note=t.pre(context, t.audit(w, "real", "emulator"), ONE_RUN_NOTE)))
        # The thesis's benchmark recreated the real run's compute throughput: DLIO's side
        v, ci, (d_, r) = t.ratio(w, "dlio", "compute_sps")
        out.append(Measured(
            f"traced-compute-throughput-dlio-{w}", v, ci, note=t.pre(ONE_RUN_NOTE),
            why_not=(f"compute_sps: real {r:.4g}, DLIO {d_:.4g} samples/s (DLIO: its per-step sleep, "
                     "computation_time from the compute model)" if not _nan(v) else t.reason(w, "real", "dlio"))))
        # The thesis's own finding, reproduced with MLPerf Storage's base on this box.
        v, ci, (d_, r) = t.ratio(w, "dlio", "data_sps")
        out.append(Measured(
            "traced-data-throughput-dlio-dlrm-from-16k" if w == "dlrm" and not similar
            else f"traced-data-throughput-dlio-{w}", v, ci,
            context=f"thesis: its benchmark reached {_gap_words(t, w)}",
            note=t.pre(("Sec 5.3.2: 'the median latencies and throughputs are all very similar. This does "
                        "not hold for the benchmark starting at batch sizes of 16k and up'" if w == "dlrm" else ""),
                       t.audit(w, "real", "dlio"), ONE_RUN_NOTE),
            why_not=(f"data_sps: real {r:.4g}, DLIO {d_:.4g} samples/s (DLIO: its per-step load time)"
                     if not _nan(v) else t.reason(w, "real", "dlio"))))
    return out


def measure_checkpoint(t: _Tables) -> list[Measured]:
    """Per workload: DLIO's checkpoint distance from the real run minus the emulator's
    (:func:`checkpoint_distance`, 0-1), the median over the windows with a checkpoint."""
    out = []
    for w in t.vectors:
        de = checkpoint_distance(t.vectors[w].get("real"), t.vectors[w].get("emulator"))
        dd = checkpoint_distance(t.vectors[w].get("real"), t.vectors[w].get("dlio"))
        both = not (_nan(dd) or _nan(de))
        got, why_w = t.window_ci(w, "emulator", "distance_minus", "dlio") if both else (None, "")
        # a check, not a finding: why, in its note and docs/statistics.md; of the whole runs, as the
        # statement's components are
        out.append(Measured(
            f"traced-checkpoint-closer-than-dlio-{w}", dd - de if both else float("nan"),
            why_not=t.reason(w, "real", "emulator", "dlio"),
            note=t.pre(f"whole-run distance emulator {de:.3g}, DLIO {dd:.3g}"
                       + (f"; over the windows with a checkpoint: {_windows_words(got, why_w)}" if both else "")
                       + "; a check of the replay (the emulator writes the pattern traced from the real "
                         "run, and every checkpoint of a run writes the same calls), judged on its value")))
    return out


def measure_storage_share(t: _Tables) -> list[Measured]:
    """The share of the requested (VFS) read bytes that went to storage (BIO), Tables 5.1-5.2's
    row: BERT's DLIO over its real run (ratio of shares), and UNET3D's real run in passes over
    the data set (:func:`_storage_passes`); the whole runs' shares, no interval (one traced run
    per side: :data:`ONE_RUN_NOTE`), the windows' spread in the note."""
    out = []
    if "bert" in t.vectors:
        # Table 5.2 and Sec 5.2.3: BIO / VFS read bytes 86.97 % (benchmark) against 107.0 %.
        pct = {side: (t.vectors["bert"].get(side) or {}).get("bio_vfs_read_pct", float("nan"))
               for side in ("real", "emulator", "dlio")}
        r_, d_ = pct["real"], pct["dlio"]
        v = d_ / r_ if not (_nan(r_) or _nan(d_)) and r_ > 0 else float("nan")
        why_b = ""
        if not _nan(v):
            # the windows of one run per side: their spread in the note, not an interval
            xd, xr = (window_samples(t.windows, "bert", s_, "bio_vfs") for s_ in ("dlio", "real"))
            xd, xr = ([x[np.isfinite(x).all(axis=1) & (x[:, 1] > 0)] if len(x) else x for x in (xd, xr)])
            if min(len(xd), len(xr)) >= 2:
                per = [100 * a_[0] / a_[1] for a_ in xd], [100 * a_[0] / a_[1] for a_ in xr]
                why_b = (f"over the windows (window-to-window, not run-to-run, variation): DLIO "
                         f"{min(per[0]):.3g}-{max(per[0]):.3g} %, real {min(per[1]):.3g}-{max(per[1]):.3g} %")
        ci = None
        out.append(Measured(
            "traced-bio-vfs-dlio-below-real-bert", v, ci,
            note=t.pre(ONE_RUN_NOTE, why_b) + "; BIO / VFS read bytes here: " + ", ".join(
                f"{k} {x:.3g} %" for k, x in pct.items() if not _nan(x)),
            why_not=(t.reason("bert", "real", "dlio") if _nan(r_) or _nan(d_) else
                     "the real run read nothing from storage (a memory-backed tier has no block device)"
                     if r_ <= 0 else
                     f"BIO / VFS read bytes: real {r_:.3g} %, DLIO {d_:.3g} %: "
                     + ("DLIO read about all it requested from storage, so its data did not stay in "
                        "the page cache between its reads, where the real run's did" if d_ >= 90 else
                        "the page cache held more of the real run's data than of DLIO's"))))
    if "unet3d" in t.vectors:
        out.append(_storage_passes(t))
    return out


def _storage_passes(t: _Tables) -> Measured:
    """UNET3D's real run: the bytes read from storage (BIO) over the bytes one training epoch
    requests (VFS read bytes / epochs), i.e. the BIO / VFS share times the epochs: about 1 when
    the data set crosses from storage once and the later epochs read it from the page cache,
    the epoch count when nothing is cached. The share alone is about 1 / epochs even with
    perfect caching, so it tests the run's epoch count, not the caching Sec 5.1.4 states."""
    real = t.vectors["unet3d"].get("real")
    share = float("nan") if real is None else real.get("bio_vfs_read_pct", float("nan"))
    k = t.epochs("unet3d")
    if real is None or _nan(share) or not k:
        why_ = t.reason("unet3d", "real") if real is None or _nan(share) else (
            "the run's phases (phases.csv) hold no training epoch of the real UNET3D run")
        return Measured("traced-unet3d-vfs-reads-to-storage", why_not=why_)
    got, why_w = t.window_ci("unet3d", "real", "bio_vfs")
    v = share
    passes = v * k / 100
    return Measured(
        "traced-unet3d-vfs-reads-to-storage", passes, None, context=f"{k} training epochs",
        note=t.pre(ONE_RUN_NOTE, f"BIO / VFS read bytes {v:.3g} % of the whole run over {k} epochs; "
                   + _windows_words(got, why_w)) + "; 0 on a memory-backed tier (no block device)",
        why_not="" if passes <= 1 else (
            f"BIO / VFS read bytes {v:.3g} % over {k} epochs: more than one pass came from storage (the "
            "page cache did not hold all of the data set between epochs, or other programs on the "
            "box evicted its pages)"))
