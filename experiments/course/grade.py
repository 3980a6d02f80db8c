"""``make grade LAB=... SUB=...``: grade one submitted notebook locally, without Docker.

Runs ``otter run`` (otter's non-containerized grader) with the lab's autograder zip on the
submission: the notebook is re-executed top to bottom (smoke profile unless
``DLIO_COURSE_PROFILE`` says otherwise), then every public and hidden test runs. Writes, under
``explore/course/grades/<lab>/<submission>/``, otter's ``results.json`` and ``feedback.md`` (the
score, one line per question with its points and the output of any failed test), and prints the
score. Written answers (manual questions) are not scored here: the instructor grades them with
the lab's ``rubric.md``; ``feedback.md`` lists them.

    python -m experiments.course.grade LAB SUBMISSION.ipynb
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat

from . import lab as find_lab
from .build import autograder_zip, master, otter_env
from .labkit import lab_dir


def manual_questions(master: Path) -> list[str]:
    """Names of the manually graded questions of a lab (``manual: true`` in its master notebook's
    ``# BEGIN QUESTION`` cells)."""
    names = []
    for c in nbformat.read(master, 4).cells:
        src = "".join(c.source)
        if c.cell_type == "raw" and src.lstrip().startswith("# BEGIN QUESTION") and re.search(r"^manual:\s*true", src, re.MULTILINE):
            m = re.search(r"^name:\s*(\S+)", src, re.MULTILINE)
            names.append(m.group(1) if m else "?")
    return names


def grade(lab_name: str, submission: str | Path, out: Path | None = None) -> dict:
    """Grade ``submission`` for lab ``lab_name``. Returns ``score``, ``max_score`` (autograded
    points), ``questions`` ({name: {score, max_score, output}}), ``manual`` (written answers
    left to the rubric) and ``dir`` (where results.json and feedback.md are)."""
    lab = find_lab(lab_name)
    sub = Path(submission)
    if not sub.is_file() or sub.suffix != ".ipynb":
        raise ValueError(f"SUB = {str(submission)!r}; allowed: an existing .ipynb file")
    zip_ = autograder_zip(lab)
    out = out or lab_dir("grades", f"{lab.name}/{sub.stem}")
    out.mkdir(parents=True, exist_ok=True)
    otter_env()
    from otter.run import main as otter_run
    res = out / "results.json"
    res.unlink(missing_ok=True)
    otter_run(str(sub.resolve()), autograder=str(zip_), output_dir=str(out), no_logo=True)
    if not res.is_file():
        raise RuntimeError(f"otter run wrote no results for {sub}")
    tests = json.loads(res.read_text())["tests"]
    qs = {t["name"]: {"score": float(t.get("score") or 0), "max_score": float(t["max_score"]), "output": t.get("output", "")}
          for t in tests if t.get("max_score") is not None}
    manual = manual_questions(master(lab))
    score, top = sum(q["score"] for q in qs.values()), sum(q["max_score"] for q in qs.values())
    lines = [f"# {lab.name}: {sub.name}", "", f"Autograded score: **{score:g} / {top:g}**", "",
             "| question | points | max |", "|---|---|---|"]
    lines += [f"| {n} | {q['score']:g} | {q['max_score']:g} |" for n, q in qs.items()]
    for n, q in qs.items():
        if q["score"] < q["max_score"]:
            lines += ["", f"## {n}: what failed", "", "```", q["output"].strip()[:4000], "```"]
    lines += ["", f"Written answers to grade with the lab's `rubric.md`: {', '.join(manual) or 'none'}."]
    (out / "feedback.md").write_text("\n".join(lines) + "\n")
    return {"score": score, "max_score": top, "questions": qs, "manual": manual, "dir": out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.course.grade", description=__doc__.split("\n\n")[0])
    ap.add_argument("lab")
    ap.add_argument("submission")
    a = ap.parse_args(argv)
    g = grade(a.lab, a.submission)
    for n, q in g["questions"].items():
        print(f"{n}: {q['score']:g} / {q['max_score']:g}")
    print(f"score: {g['score']:g} / {g['max_score']:g} (autograded; {len(g['manual'])} written answer(s) "
          f"to grade with the rubric); feedback: {g['dir'] / 'feedback.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
