"""The course guide's measured time table: run each lab's solution and time it.

For each lab (built first when ``course/dist`` lacks it), on the profile ``DLIO_COURSE_PROFILE``
names (``default`` unless set; the tests use ``smoke``):

- ``compute_s``: wall seconds to execute the solution notebook top to bottom in a fresh kernel
  (nbclient): the measurements a student waits for;
- ``grade_s``: wall seconds of ``make grade`` on that solution (otter re-runs the notebook, then
  every public and hidden test) on the profile ``make grade`` uses (``smoke`` unless
  ``DLIO_COURSE_PROFILE`` is set): the time an instructor sees per submission;
- ``score``: the autograded points it got, and ``answer``: the value of the lab's reported number
  on this box (the "answers the reference box gave").

Writes ``explore/course/bench/times.csv`` and replaces the block between ``<!-- course:times -->``
and ``<!-- /course:times -->`` in ``course/README.md``. A bench, not a test: timings differ per
machine and per load, and the table says which host and load it came from.

    python -m experiments.course.bench [LAB ...]       # make course-bench
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pandas as pd

from ..host import envinfo
from ..settings import paths
from ..pipeline.ae_table import _replace_block
from . import LABS
from . import lab as find_lab
from . import course_dir
from .build import autograder_zip, build, otter_env, solution_notebook
from .grade import grade
from .labkit import PROFILE_ENV

MARKS = ("<!-- course:times -->", "<!-- /course:times -->")


def lab_dir(*parts: str) -> Path:
    """``explore/course/bench/<parts>``, created: where the bench writes (never results/)."""
    d = paths.root() / "explore" / "course" / "bench" / Path(*parts)
    d.mkdir(parents=True, exist_ok=True)
    return d


def run_solution(lab) -> tuple[float, str]:
    """(wall seconds to execute ``lab``'s solution notebook, repr of its answer variable)."""
    from nbclient import NotebookClient

    nb = nbformat.read(solution_notebook(lab), 4)
    nb.cells.append(nbformat.v4.new_code_cell(
        f"_v = {lab.answer}\nprint('COURSE_ANSWER', f'{{float(_v):.4g}}' if hasattr(_v, '__float__') else repr(_v))"))
    work = lab_dir(lab.name)
    nbformat.write(nbformat.read(solution_notebook(lab), 4), work / solution_notebook(lab).name)  # otter.Notebook reads it
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
    s = time.perf_counter() - t0
    out = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []))
    return s, out.split("COURSE_ANSWER", 1)[-1].strip()


def measure(labs) -> pd.DataFrame:
    chosen = os.environ.get(PROFILE_ENV)       # a profile the caller set applies to both
    run_profile, grade_profile = chosen or "default", chosen or "smoke"
    os.environ[PROFILE_ENV] = run_profile       # before otter_env, which picks smoke for builds
    otter_env()
    rows = []
    for lab in labs:
        try:
            autograder_zip(lab)
        except FileNotFoundError:
            build(lab, run_tests=False)
        load0 = os.getloadavg()[0]
        os.environ[PROFILE_ENV] = run_profile
        compute_s, answer = run_solution(lab)
        os.environ[PROFILE_ENV] = grade_profile    # the grader's kernels inherit it
        t0 = time.perf_counter()
        g = grade(lab.name, solution_notebook(lab), lab_dir(lab.name, "grade"))
        rows.append({"lab": lab.name, "title": lab.title, "profile": run_profile, "grade_profile": grade_profile,
                     "compute_s": compute_s, "grade_s": time.perf_counter() - t0,
                     "score": g["score"], "max_score": g["max_score"], "answer": f"{lab.answer} = {answer}",
                     "load_1min": max(load0, os.getloadavg()[0])})
        print(f"{lab.name}: compute {compute_s:.0f} s, grade {rows[-1]['grade_s']:.0f} s, "
              f"score {g['score']:g}/{g['max_score']:g}, {rows[-1]['answer']}", flush=True)
    return pd.DataFrame(rows)


def _s(x: float) -> str:
    return f"{x:.0f} s" if x < 120 else f"{int(x // 60)} min {x % 60:.0f} s"


def markdown(df: pd.DataFrame) -> str:
    when = datetime.now(UTC).isoformat(timespec="seconds")
    gp = df["grade_profile"].iloc[0] if "grade_profile" in df else df["profile"].iloc[0]
    lines = [(f"Measured by `make course-bench` on {envinfo.host_label()}, {when}; 1-minute load average "
              f"up to {df['load_1min'].max():.1f}. Compute: the solution on the {df['profile'].iloc[0]} profile "
              f"(what a student waits for); grading: `make grade` of that solution on the {gp} profile "
              "(what an instructor waits for per submission, one at a time)."), "",
             "| lab | compute (solution run) | grading (otter re-run + tests) | autograded | the reference box's answer |",
             "|---|---|---|---|---|"]
    lines += [f"| {r.lab} ({r.title}) | {_s(r.compute_s)} | {_s(r.grade_s)} | {r.score:g} / {r.max_score:g} | `{r.answer}` |"
              for r in df.itertuples()]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.course.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("labs", nargs="*", help="lab names or numbers (default: all)")
    a = ap.parse_args(argv)
    labs = [find_lab(x) for x in a.labs] if a.labs else list(LABS)
    df = measure(labs)
    out = lab_dir() / "times.csv"
    if out.exists():  # keep the labs not re-run this time, in the course's order
        old = pd.read_csv(out)
        df = pd.concat([old[~old["lab"].isin(df["lab"])], df], ignore_index=True)
        order = {x.name: i for i, x in enumerate(LABS)}
        df = df.sort_values("lab", key=lambda s: s.map(order)).reset_index(drop=True)
    df.to_csv(out, index=False)
    readme = course_dir() / "README.md"
    readme.write_text(_replace_block(readme.read_text(), MARKS, markdown(df)))
    print(f"wrote {out} and the time table in {readme}")
    print(json.dumps(df.to_dict(orient="records"), default=str)[:2000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
