"""Re-judge the shipped reference run's findings on the runs a cut profile keeps, with the
package's own report code (the report notebooks' code cells, figures not drawn): a scratch
project root (DLIO_ROOT) whose results/ link to the reference run's stage folders (read only),
except the folders a cut changes (copied, filtered to the runs the cut keeps) and the report
stage judged (empty: its outputs land there).

Scenarios (python subsample.py SCENARIO [REFERENCE_CHECKOUT]; prints {id: verdict} as JSON):
  control                       nothing cut (the report code of this checkout on the reference rows)
  ckpt:ROUNDS[:SEED]            alexnet_checkpoint: its warm-up and ROUNDS of its 14 rounds (the
                                first ROUNDS, what a run of repeats: ROUNDS makes; with SEED, a
                                random draw of ROUNDS rounds), judged by alexnet_report
  validation[:SLEEP_BATCH]      workload_sleep's 1-rank runs (and of its batch sizes: ends, the
                                default, largest or smallest) and workload_random's largest batch
                                size (the profile's cuts), judged by workload_validation
  filter:STAGE:COLUMN:V1,V2:REPORT
                                every table of STAGE with COLUMN keeps the rows whose value is one of
                                V1, V2, ... (or empty: a row the column does not apply to), judged
                                by REPORT (fewer configurations; not in the profile: what they
                                would cost)
  steps:BERT:DLRM               the first BERT and DLRM steps of every run of the bert and dlrm
                                stages (shorter runs, the rest of a run as it was), judged by
                                workload_fits (steps:20:20 checks that re-making the summaries
                                alone moves nothing)
"""
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve()
ROOT = HERE.parents[3]   # the checkout whose code judges
NOTEBOOK = {"alexnet_report": "13-alexnet-report.ipynb", "workload_validation": "37-workload-validation.ipynb",
            "workload_fits": "34-workload-fits.ipynb", "lmdbio_report": "43-lmdbio-report.ipynb",
            "blog_report": "45-blog-report.ipynb"}


def tables(folder: Path):
    for f in sorted(folder.iterdir()):
        if f.suffix in (".csv", ".parquet") and f.name != "variance.csv":
            yield f


def read(f: Path) -> pd.DataFrame:
    return pd.read_parquet(f) if f.suffix == ".parquet" else pd.read_csv(f)


def write(d: pd.DataFrame, f: Path) -> None:
    f.unlink()
    d.to_parquet(f) if f.suffix == ".parquet" else d.to_csv(f, index=False)


def scratch(ref: Path, name: str, judged: list[str], copied: list[str]) -> Path:
    root = Path("/tmp/budget64/roots") / name
    shutil.rmtree(root, ignore_errors=True)
    (root / "results").mkdir(parents=True)
    shutil.copy(ref / "params.yaml", root / "params.yaml")
    for d in (ref / "results").iterdir():
        if not d.is_dir():
            continue
        if d.name in judged:
            (root / "results" / d.name).mkdir()
        elif d.name in copied:
            shutil.copytree(d, root / "results" / d.name, ignore=shutil.ignore_patterns("*.ipynb", "trace_*"))
        else:
            (root / "results" / d.name).symlink_to(d)
    return root


def cut_ckpt(root: Path, rounds: int, seed: int | None) -> None:
    sys.path.insert(0, str(ROOT))
    from experiments.chien.alexnet_checkpoint import summarize_checkpoint

    folder = root / "results/alexnet_checkpoint"
    raw = read(folder / "raw.parquet")
    timed = sorted(raw.loc[~raw["warmup"], "repeat"].unique())
    keep = set(timed[:rounds] if seed is None else random.Random(seed).sample(list(timed), rounds))
    keep |= set(raw.loc[raw["warmup"], "repeat"])
    for f in tables(folder):
        d = read(f)
        if "repeat" in d:
            write(d[d["repeat"].isin(keep)], f)
    fast = json.loads((folder / "env.json").read_text())["params"]["alexnet_checkpoint"]["fast"]
    runs, saves = read(folder / "raw.parquet"), read(folder / "saves.csv")
    write(summarize_checkpoint(runs, fast, saves), folder / "summary.csv")


def cut_validation(root: Path, sleep_batch: str = "ends") -> None:
    params = __import__("yaml").safe_load((root / "params.yaml").read_text())
    pick = {"ends": lambda b: {b[0], b[-1]}, "largest": lambda b: {b[-1]}, "smallest": lambda b: {b[0]}}[sleep_batch]
    for f in tables(root / "results/workload_sleep"):
        d = read(f)
        if "ranks" in d:
            d = d[d["ranks"] == 1]
        if "batch_size" in d and "workload" in d:
            d = d[[b in pick(params[w]["sweep"]["batch_sizes"]) for w, b in zip(d["workload"], d["batch_size"])]]
        write(d, f)
    for f in tables(root / "results/workload_random"):
        d = read(f)
        if "batch_size" in d and "workload" in d:
            largest = d["workload"].map(lambda w: max(params[w]["sweep"]["batch_sizes"]))
            write(d[d["batch_size"] == largest], f)


def cut_steps(root: Path, steps: dict[str, int]) -> None:
    """Every table with a step column keeps each BERT and DLRM run's first steps (a shorter run
    of the same kind); the stage's summary.csv is made again from them, as the stage makes it
    (fits.step_summary of its steps and loader rows)."""
    sys.path.insert(0, str(ROOT))
    from experiments.workloads import fits

    for st in ("bert", "dlrm"):
        folder = root / "results" / st
        for f in tables(folder):
            d = read(f)
            if "step" in d and "workload" in d:
                keep = d["workload"].map(lambda w: steps.get(w, 10 ** 9))
                write(d[d["step"] < keep], f)
        loader = read(folder / "loader.csv") if (folder / "loader.csv").exists() else pd.DataFrame()
        write(fits.step_summary(read(folder / "raw.parquet"), loader), folder / "summary.csv")


def judge(root: Path, stage: str) -> dict:
    nb = json.loads((ROOT / "notebooks" / NOTEBOOK[stage]).read_text())
    code = [("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "code"
            and "parameters" not in (c.get("metadata", {}).get("tags") or [])]
    prog = ("figures = None\nimport experiments.style as _s\n_s.save = lambda *a, **k: None\n"
            + "\n".join(code) + "\nimport json, sys\n"
            "json.dump({c['id']: c['verdict'] for c in claim_list if c['kind'] == 'finding'}, open(sys.argv[1], 'w'))\n")
    (root / "judge.py").write_text(prog)
    out = root / f"{stage}.verdicts.json"
    env = {**os.environ, "DLIO_ROOT": str(root), "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, str(root / "judge.py"), str(out)], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{stage} in {root}: {r.stderr[-3000:]}")
    return json.loads(out.read_text())


def main() -> None:
    scen = sys.argv[1]
    ref = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/ref1")
    kind, *args = scen.split(":")
    if kind == "control":
        root = scratch(ref, "control", list(NOTEBOOK), [])
        res = {s: judge(root, s) for s in NOTEBOOK}
    elif kind == "ckpt":
        rounds, seed = int(args[0]), (int(args[1]) if len(args) > 1 else None)
        root = scratch(ref, scen.replace(":", "-"), ["alexnet_report"], ["alexnet_checkpoint"])
        cut_ckpt(root, rounds, seed)
        res = {"alexnet_report": judge(root, "alexnet_report")}
    elif kind == "validation":
        root = scratch(ref, scen.replace(":", "-"), ["workload_validation"], ["workload_sleep", "workload_random"])
        cut_validation(root, *args)
        res = {"workload_validation": judge(root, "workload_validation")}
    elif kind == "filter":
        stage, column, values, report = args
        root = scratch(ref, scen.replace(":", "-").replace(",", "_"), [report], [stage])
        for f in tables(root / "results" / stage):
            d = read(f)
            if column in d:
                keep = {str(v) for v in values.split(",")}
                as_text = d[column].map(lambda x: str(int(x)) if isinstance(x, float) and x.is_integer() else str(x))
                write(d[d[column].isna() | as_text.isin(keep)], f)
        res = {report: judge(root, report)}
    elif kind == "steps":
        steps = {"bert": int(args[0]), "dlrm": int(args[1])}
        root = scratch(ref, scen.replace(":", "-"), ["workload_fits"], ["bert", "dlrm"])
        cut_steps(root, steps)
        res = {"workload_fits": judge(root, "workload_fits")}
    else:
        raise SystemExit(f"scenario {scen!r}: allowed: control, ckpt:ROUNDS[:SEED], validation[:ends|largest|smallest], steps:BERT:DLRM")
    print(json.dumps({"scenario": scen, "verdicts": res}))


if __name__ == "__main__":
    main()
