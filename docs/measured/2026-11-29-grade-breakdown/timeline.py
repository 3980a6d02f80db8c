"""Grade one lab's solution (as bench.py does: grade() on the smoke profile) with timestamps.

Usage: python timeline.py LAB OUTDIR
Marker cells (time.monotonic() to the kernel's real stderr -> log.txt) are inserted into a copy of
the solution: kernel up, before the TensorFlow import (lab 3), after it, end of notebook.
"""
import json, os, sys, time
from pathlib import Path
import nbformat

T = {}
def stamp(k):
    T.setdefault(k, time.monotonic())

lab_name, out = sys.argv[1], Path(sys.argv[2])
os.environ.setdefault("DLIO_COURSE_PROFILE", "smoke")
stamp("0 driver start")
from experiments.course import grade as g
from experiments.course import lab as find_lab, solution_notebook
from experiments.course.build import otter_env
otter_env()
lab = find_lab(lab_name)
MARK = "import time as _mt, sys as _ms; print('MARK', {!r}, _mt.monotonic(), file=_ms.__stderr__, flush=True)"
nb = nbformat.read(solution_notebook(lab), 4)
cells = []
first = True
for c in nb.cells:
    src = "".join(c.source)
    if c.cell_type == "code" and first:
        cells.append(nbformat.v4.new_code_cell(MARK.format("kernel up (first cell)") + "\nprint('MARK no-iri', repr(_ms.modules.get('rfc3987_syntax', 'absent')), _mt.monotonic(), file=_ms.__stderr__, flush=True)"))
        first = False
    if c.cell_type == "code" and "epochs = pd.DataFrame" in src:
        cells.append(nbformat.v4.new_code_cell(MARK.format("measurement start")))
    if c.cell_type == "code" and "tf.data" in src and "make_pipeline" not in src and lab.name.startswith("lab03"):
        pass
    cells.append(c)
    if c.cell_type == "code" and "epochs = pd.DataFrame" in src:
        cells.append(nbformat.v4.new_code_cell(MARK.format("measurement done")))
cells.append(nbformat.v4.new_code_cell(MARK.format("last cell") + "\nprint('MARK tf-in-kernel', 'tensorflow' in _ms.modules, _mt.monotonic(), file=_ms.__stderr__, flush=True)"))
nb.cells = cells
for c in nb.cells:
    c.pop("id", None)
nbformat.validator.normalize(nb)
sub = out / "marked" / solution_notebook(lab).name
sub.parent.mkdir(parents=True, exist_ok=True)
nbformat.write(nb, sub)

RealW = g.WitnessProcess
class W(RealW):
    def __init__(self, *a, **k):
        stamp("1 witness spawn")
        super().__init__(*a, **k)
        stamp("2 witness ready")
    def close(self):
        stamp("4 witness close")
        super().close()
        stamp("5 witness closed")
g.WitnessProcess = W
def stamped(fn, first, last):
    """``fn`` with a stamp before it and one after it returns."""
    def wrapped(*a, **k):
        stamp(first)
        try:
            return fn(*a, **k)
        finally:
            stamp(last)
    return wrapped
g._run_in = stamped(g._run_in, "3a child start", "3z child exit")
g._judged = stamped(g._judged, "6 judges start", "7 judges end")
real_quiet = g.quiet_imports
def quiet(tests):
    stamp("0a quiet_imports start")
    real_quiet(tests)
    stamp("0b quiet_imports end")
g.quiet_imports = quiet
def wrap(mod, name):
    f = getattr(mod, name)
    def w(*a, **k):
        t = time.monotonic()
        try:
            return f(*a, **k)
        finally:
            T.setdefault(f"W {name} ({time.monotonic() - t:.2f} s)", t)
    setattr(mod, name, w)
for n in ("autograder_zip", "code_of", "imports_package", "questions", "judges", "_keep_witness", "_cleanup_memory", "_feedback", "_collect_answers", "read_plain"):
    wrap(g, n)
wrap(g.sandbox, "available")
wrap(g.sandbox, "command")
g.CHILD = (g.NO_IRI.strip() + "; import time; print('MARK child-python-up', time.monotonic(), file=sys.stderr, flush=True); "
           "from otter.run import main; print('MARK child-otter-imported', time.monotonic(), file=sys.stderr, flush=True); "
           "main(sys.argv[1], autograder=sys.argv[2], output_dir=sys.argv[3], no_logo=True); "
           "print('MARK child-otter-done', time.monotonic(), file=sys.stderr, flush=True)")
stamp("0c grade() call")
r = g.grade(lab.name, sub, out / "grade")
stamp("8 grade() returned")
json.dump(T, open(out / "stamps.json", "w"))
d = Path(r["dir"])
log = (d / "log.txt").read_text(errors="replace")
for line in log.splitlines():
    if line.startswith("MARK "):
        _, rest = line.split(" ", 1)
        name, t = rest.rsplit(" ", 1)
        T["K " + name] = float(t)
w = json.loads((d / "witness.json").read_text())
spans = [{"key": s["key"], "label": s["label"], "t0": s["t0"], "t1": s["t1"], "seconds": s["seconds"]} for s in w["spans"]]
rec = []
for line in (d / "record.jsonl").read_text().splitlines():
    e = json.loads(line)
    rec.append({"case": e["case"], "seconds": e["seconds"], "pairs": e["values"].get("pairs") if isinstance(e["values"], dict) else None})
json.dump({"stamps": T, "spans": spans, "record": rec, "score": r["score"], "max": r["max_score"],
           "load": os.getloadavg()}, open(out / "timeline.json", "w"), indent=1)
t0 = T["0c grade() call"]
print(f"score {r['score']}/{r['max_score']} load {os.getloadavg()}")
for k, v in sorted(T.items(), key=lambda kv: kv[1]):
    print(f"{v - t0:8.2f}  {k}")
for s in spans:
    print(f"{s['t0'] - t0:8.2f} .. {s['t1'] - t0:8.2f} ({s['seconds']:.2f} s) span {s['key']} {s['label']}")
for e in rec:
    print(f"         record {e['case']}: {e['seconds']:.2f} s" + (f" pairs={e['pairs']}" if e['pairs'] else ""))
