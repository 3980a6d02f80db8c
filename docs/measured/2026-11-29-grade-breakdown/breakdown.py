"""The table of breakdown.txt from timeline.py's timeline.json files (python3 breakdown.py RUN ...)."""
import json
import sys
runs = sys.argv[1:]
PH = [("grader start: sandbox probe, witness process", "0c grade() call", "3a child start"),
      ("child: python + `from otter.run import main`", "3a child start", "K child-otter-imported"),
      ("otter: unzip, kernel start, otter's init cell", "K child-otter-imported", "K kernel up (first cell)"),
      ("kernel: setup cells + q1's tests (witnessed spans)", "K kernel up (first cell)", ("K before tf import", "K measurement start")),
      ("student's notebook: TensorFlow import", "K before tf import", "K tf imported"),
      ("student's notebook: the measurement epochs", ("K tf imported", "K measurement start"), "K measurement done"),
      ("q2's tests (q2.2 re-measures: witnessed epochs)", "K measurement done", "K last cell"),
      ("otter: results, kernel shutdown, child exit", "K last cell", "3z child exit"),
      ("grader: witness close, judges, feedback", "3z child exit", "8 grade() returned")]
def get(T, k):
    for x in (k if isinstance(k, tuple) else (k,)):
        if x in T:
            return T[x]
    return None
out = []
hdr = f"{'phase':52s}" + "".join(f"{r:>15s}" for r in runs)
out.append(hdr)
data = {r: json.load(open(f"/tmp/course67d/{r}/timeline.json")) for r in runs}
tot = {r: data[r]["stamps"]["8 grade() returned"] - data[r]["stamps"]["0c grade() call"] for r in runs}
for name, a, b in PH:
    row = f"{name:52s}"
    for r in runs:
        T = data[r]["stamps"]
        x, y = get(T, a), get(T, b)
        row += f"{'-':>15s}" if x is None or y is None else f"{y - x:7.1f} s {100 * (y - x) / tot[r]:3.0f} %"
    out.append(row)
row = f"{'  of which witnessed spans of q1 (overlap etc.)':52s}"
for r in runs:
    s = sum(x["seconds"] for x in data[r]["spans"] if x["key"].startswith("q1"))
    row += f"{s:7.1f} s {100 * s / tot[r]:3.0f} %"
out.append(row)
row = f"{'  of which q2.2 first pair / second pair':52s}"
for r in runs:
    sp = [x for x in data[r]["spans"] if x["key"] == "q2.2"]
    a = sum(x["seconds"] for x in sp if x["label"].endswith("#0")); b = sum(x["seconds"] for x in sp if x["label"].endswith("#1"))
    row += f"{a:6.1f}/{b:3.1f} s{100 * (a + b) / tot[r]:3.0f}%"
out.append(row)
out.append(f"{'total (grade() call to return)':52s}" + "".join(f"{tot[r]:7.1f} s {100:3d} %" for r in runs))
out.append(f"{'score':52s}" + "".join(f"{str(data[r]['score']) + '/' + str(data[r]['max']):>15s}" for r in runs))
out.append(f"{'1-min load at the end':52s}" + "".join(f"{data[r]['load'][0]:15.2f}" for r in runs))
print("\n".join(out))
