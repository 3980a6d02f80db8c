"""Throughputs, normal fits of compute time and the linear models of Eq 5.1 to 5.6.

Steady steps (:func:`steady`): the first step of every epoch is left out, and for UNET3D the
whole first epoch, as the thesis did (Section 4.3). Throughputs (Section 4.4), in samples/s:
VFS = samples read / VFS read latency (per sample for UNET3D, per batch read for DLRM), data =
samples / data wait, compute = samples / compute time. ``samples`` is the per-rank batch for
UNET3D and BERT and the global batch for DLRM (its batch is global, Section 4.1.3).

Fits: per configuration (ranks G, batch size B) a normal distribution of the compute times
(``scipy.stats.norm.fit``, Fig A.2, A.4, A.5); then ordinary least squares (statsmodels) of
its mean and of its standard deviation on G and B, ``y = a*G + b*B + c``, with R^2 and 95 %
confidence intervals. A regressor that does not vary in the sweep (a single G) is left out.
The model file (:func:`model_file`) is what the sleep emulation reads: seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KEYS = ["workload", "ranks", "batch_size"]
PARTS_MS = ["to_device_ns", "forward_ns", "loss_ns", "backward_ns", "optimizer_ns", "allreduce_ns", "sleep_ns"]


def _keys(df: pd.DataFrame) -> list[str]:
    """KEYS, plus ``variant`` (real, random, sleep, ...) when the table has several rows' runs."""
    return KEYS + (["variant"] if "variant" in df.columns else [])


def steady(steps: pd.DataFrame) -> pd.DataFrame:
    """The steps used for throughputs and fits (first step of each epoch out; UNET3D's first epoch out)."""
    s = steps.copy()
    run = _keys(s) + ["repeat"]
    first = s.groupby(run + ["rank", "epoch"])["step"].transform("min")
    keep = s["step"] != first
    keep &= ~((s["workload"] == "unet3d") & (s["epoch"] == s.groupby(run)["epoch"].transform("min")))
    return s[keep]


def _q(x, q):
    return float(np.quantile(x, q)) if len(x) else float("nan")


def step_summary(steps: pd.DataFrame, loader: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (workload, G, B): median and quartiles of each step part (seconds), throughputs
    (samples/s) and the share of the step spent waiting for data."""
    s = steady(steps)
    keys = _keys(s)
    rows = []
    for key, g in s.groupby(keys, sort=True):
        r = dict(zip(keys, key))
        r["steps"] = len(g)
        for p in ["data_ns", "compute_ns", "step_ns", *PARTS_MS]:
            if p not in g:  # a table written before the part existed
                continue
            v = g[p].to_numpy() / 1e9
            name = p.replace("_ns", "_s")
            r[name], r[name + "_q1"], r[name + "_q3"] = float(np.median(v)), _q(v, .25), _q(v, .75)
        data_sps = g["samples"] / (g["data_ns"].clip(lower=1) / 1e9)
        comp_sps = g["samples"] / (g["compute_ns"] / 1e9)
        r["data_sps"], r["data_sps_q1"], r["data_sps_q3"] = data_sps.median(), _q(data_sps, .25), _q(data_sps, .75)
        r["compute_sps"], r["compute_sps_q1"], r["compute_sps_q3"] = comp_sps.median(), _q(comp_sps, .25), _q(comp_sps, .75)
        r["data_share"] = float((g["data_ns"] / g["step_ns"]).median())
        for c in ("vfs_s", "prep_s", "vfs_sps"):
            r[c] = r[f"{c}_q1"] = r[f"{c}_q3"] = float("nan")
        if loader is not None and len(loader) and {"vfs_ns", "prep_ns"} <= set(loader.columns):
            sel = pd.Series(True, index=loader.index)
            for k, v in zip(keys, key):
                sel &= (loader[k] if k in loader else pd.Series("real", index=loader.index)) == v
            lo = loader[sel]
            if "split" in lo.columns:
                lo = lo[lo["split"].fillna("train") == "train"]
            if "epoch" in lo.columns and key[0] == "unet3d":
                lo = lo[lo["epoch"] > lo["epoch"].min()]
            if len(lo):
                per = lo["samples"] if "samples" in lo.columns and lo["samples"].notna().all() else 1
                vfs_sps = per / (lo["vfs_ns"].clip(lower=1) / 1e9)
                for c in ("vfs", "prep"):
                    v = lo[f"{c}_ns"].to_numpy() / 1e9
                    r[f"{c}_s"], r[f"{c}_s_q1"], r[f"{c}_s_q3"] = float(np.median(v)), _q(v, .25), _q(v, .75)
                r["vfs_sps"], r["vfs_sps_q1"], r["vfs_sps_q3"] = vfs_sps.median(), _q(vfs_sps, .25), _q(vfs_sps, .75)
        rows.append(r)
    return pd.DataFrame(rows)


def normal_fits(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, G, B): the normal fitted to the steady compute times, seconds."""
    from scipy import stats

    rows = []
    for key, g in steady(steps).groupby(KEYS, sort=True):
        v = g["compute_ns"].to_numpy() / 1e9
        mu, sd = stats.norm.fit(v)
        rows.append({**dict(zip(KEYS, key)), "n": len(v), "mean_s": mu, "std_s": sd,
                     "median_s": float(np.median(v))})
    return pd.DataFrame(rows)


def ols(fits: pd.DataFrame, target: str) -> dict:
    """OLS of ``target`` (``mean_s`` or ``std_s``) on G and B for one workload's fits."""
    import statsmodels.api as sm

    regs = [c for c, name in (("ranks", "G"), ("batch_size", "B")) if fits[c].nunique() > 1]
    X = sm.add_constant(fits[regs].astype(float), has_constant="add")
    res = sm.OLS(fits[target].astype(float), X).fit()
    ci = res.conf_int(0.05) if res.df_resid > 0 else None
    names = {"const": "c", "ranks": "G", "batch_size": "B"}
    coef = {names[k]: float(v) for k, v in res.params.items()}
    coef = {"G": coef.get("G", 0.0), "B": coef.get("B", 0.0), "c": coef["c"]}
    out = {"coef": coef, "r2": float(res.rsquared) if len(fits) > len(regs) + 1 else float("nan"),
           "n_configs": int(len(fits)), "regressors": [names[r] for r in regs],
           "ci95": ({names[k]: [float(a), float(b)] for k, (a, b) in ci.iterrows()} if ci is not None else {})}
    return out


def fit_models(fits: pd.DataFrame) -> dict:
    """Per workload: the mean and std models (see :func:`ols`)."""
    return {w: {"mean": ols(g, "mean_s"), "std": ols(g, "std_s")} for w, g in fits.groupby("workload")}


def predict(model: dict, G, B):
    c = model["coef"]
    return c["G"] * np.asarray(G, float) + c["B"] * np.asarray(B, float) + c["c"]


def model_file(models: dict, host: str, reference: dict, unet3d_eval: dict | None = None,
               measured: pd.DataFrame | None = None) -> dict:
    """The compute-time model the sleep emulation reads: per workload, mean and std in seconds
    as ``a*G + b*B + c`` (G: ranks, B: batch size, global for DLRM), beside the thesis's; with
    ``measured`` (:func:`normal_fits`), each workload's ``measured``: the per-configuration
    normal fits the model was made from ({G, B, mean_s, std_s, n}), against which a later stage
    measures how the box's speed moved since (:mod:`.hour_level`)."""
    from .compute_model import SCHEMA

    def points(w):
        if measured is None or not len(measured):
            return {}
        m = measured[measured["workload"] == w]
        return {"measured": [{"G": int(r.ranks), "B": int(r.batch_size), "mean_s": float(r.mean_s),
                              "std_s": float(r.std_s), "n": int(r.n)} for r in m.itertuples()]}

    return {
        "schema": SCHEMA,
        "format": "compute time ~ Normal(mean, std); mean = G*coef.G + B*coef.B + coef.c, "
                  "std likewise (clip std at 0); seconds; G = ranks (emulated accelerators), "
                  "B = batch size (per rank for unet3d and bert, global for dlrm)",
        "host": host,
        "workloads": {w: {**m, "thesis": reference.get(w), **points(w)} for w, m in models.items()},
        "unet3d_eval": unet3d_eval,
    }


def coefficient_table(models: dict, reference: dict) -> pd.DataFrame:
    """Our coefficients beside the thesis's (Eq 5.1 to 5.6), one row per (workload, stat, term)."""
    rows = []
    for w, m in models.items():
        for stat in ("mean", "std"):
            ref = (reference.get(w) or {}).get(stat, {})
            for term in ("G", "B", "c"):
                ci = m[stat]["ci95"].get(term, [float("nan")] * 2)
                rows.append({"workload": w, "stat": stat, "term": term, "ours": m[stat]["coef"][term],
                             "ci95_low": ci[0], "ci95_high": ci[1], "r2": m[stat]["r2"],
                             "paper_value": ref.get(term), "paper_r2": ref.get("r2")})
    return pd.DataFrame(rows)


def eval_model(evals: pd.DataFrame) -> dict:
    """UNET3D's evaluation (sliding window, batch 1; Fig 5.3, Section 5.1.3): a normal fitted to
    the per-case window times (seconds, the thesis's N(8.403, 4.442)), and OLS of the time on
    the case's image size in MB (the thesis: linear in the image size)."""
    import statsmodels.api as sm
    from scipy import stats

    t = evals["window_s"].astype(float)
    mu, sd = stats.norm.fit(t)
    out = {"mean_s": float(mu), "std_s": float(sd), "n": int(len(t))}
    mb = evals["bytes"].astype(float) / 1e6
    if mb.nunique() > 1:
        res = sm.OLS(t, sm.add_constant(mb)).fit()
        out.update({"s_per_MB": float(res.params.iloc[1]), "intercept_s": float(res.params.iloc[0]),
                    "r2": float(res.rsquared)})
    return out


def emulation_inputs(steps: pd.DataFrame, evals: pd.DataFrame | None) -> tuple[pd.DataFrame, dict, dict]:
    """What the sleep emulation runs on (``compute_model.json``): the per-configuration normal
    fits of the compute times (:func:`normal_fits`), their models (:func:`fit_models`) and
    UNET3D's evaluation model (:func:`eval_model`; {} without evaluations), all from the stages'
    own runs (``made_by`` repro): the rounds a ``make decide`` run appends add to the findings'
    samples but leave the model, and the sleep runs kept beside the bought ones, as they were."""
    from ..repeats.purchases import first_run

    nfits = normal_fits(first_run(steps))
    ev = first_run(evals) if evals is not None else pd.DataFrame()
    return nfits, fit_models(nfits), (eval_model(ev) if len(ev) else {})

