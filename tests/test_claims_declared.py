"""The papers' side of the claims (experiments/claims/papers/*.yaml): it loads, each stated
finding's quote is in its paper's text, each paper value its quote does not hold is marked
derived, and the join of a stage's measurements with it rejects what is not declared."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest
import yaml

from experiments.claims import declared as D

REPO = Path(__file__).resolve().parents[1]
TEXTS = Path(os.environ.get("DLIO_PAPERS") or REPO.parent / "shared" / "papers")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def normalized(text: str) -> str:
    """A text as quotes are matched in it: markdown emphasis and superscripts out, a word
    hyphenated at a line's end joined, typographic quotes and dashes straight, whitespace one
    space."""
    t = re.sub(r"<sup>.*?</sup>", "", text)
    t = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", t)
    t = t.replace("*", "").replace("\u2019", "'").replace("\u2018", "'")
    t = t.replace("\u201c", '"').replace("\u201d", '"').replace("\u2013", "-").replace("\u2014", "-")
    return re.sub(r"\s+", " ", t).strip()


def numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in _NUMBER.findall(text)}


def test_every_declaration_loads_and_names_a_stage_of_the_pipeline():
    stages = set(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])
    rows = D.declared()
    assert rows, "no claim declared"
    unknown = {i: d.stage for i, (_, d) in rows.items() if d.stage not in stages}
    assert not unknown, f"declared for stages dvc.yaml does not have: {unknown}"


def _stated():
    return [(s, d) for s in D.sources() for d in s.claims if d.quote]


@pytest.mark.parametrize("source", [s.file.stem for s in D.sources()])
def test_every_quote_is_in_its_papers_text(source):
    src = next(s for s in D.sources() if s.file.stem == source)
    quoted = [d for d in src.claims if d.quote]
    if not quoted:
        pytest.skip(f"{source}: no quotes")
    if src.text is None:
        pytest.fail(f"{source}: quotes but no text named ('text:' in {src.file.name})")
    f = TEXTS / f"{src.text}.txt"
    if not f.exists():
        pytest.skip(f"the papers' texts are not at hand ({f}): set DLIO_PAPERS to their folder")
    text = normalized(f.read_text())
    missing = [d.id for d in quoted if normalized(d.quote) not in text]
    assert not missing, f"{source}: quotes not found verbatim in {f.name}: {missing}"


def _paper_numbers(v) -> set[float]:
    if isinstance(v, bool) or v is None:
        return set()
    if isinstance(v, (int, float)):
        return {float(v)}
    return numbers(str(v).split("(")[0])


def test_a_paper_value_its_quote_does_not_hold_is_marked_derived():
    bad = []
    for s, d in _stated():
        want = _paper_numbers(d.paper_value)
        have = numbers(normalized(d.quote))
        if want and not all(any(math.isclose(w, h, rel_tol=1e-9) for h in have) for w in want) \
                and not (d.derived or "").strip():
            bad.append(f"{d.id} ({d.paper_value!r})")
    for s in D.sources():
        for d in s.claims:
            if d.basis == "stated" and d.paper_value is not None and not d.quote:
                bad.append(f"{d.id}: stated with a paper value and no quote")
    assert not bad, "paper values their quote does not hold, with no 'derived': " + ", ".join(bad)


def _write(tmp_path, rows, name="x.yaml"):
    (tmp_path / name).write_text(yaml.safe_dump({"source": "X", "text": None, "claims": rows}))
    return tmp_path / name


ROW = dict(id="x_faster", kind="finding", stage="s", where="Fig 1", statement="A is faster",
           unit="x", rule="> 1", basis="stated", quote="A is faster than B.")


@pytest.mark.parametrize("change,words", [
    ({"colour": "red"}, "colour"),
    ({"quote": None}, "quote"),
    ({"rule": "bigger than 1"}, "not understood"),
    ({"basis": "extension", "quote": None, "paper_value": 2.0}, "extension has no paper value"),
    ({"kind": "check"}, "basis"),
    # a reason with no margin is never shown: the validator stops it
    ({"margin_why": "the band every 'unchanged' row uses"}, "margin_why without a margin"),
    ({"kind": "check", "basis": None, "rule": "between 0.9 and 1", "margin_why": "rounded"},
     "margin_why without a margin"),
    # a template stands for every tier a user configures; a paper value belongs to the one the
    # paper ran, declared on a plain id naming it
    ({"id": "x_faster_{tier}", "paper_value": 1.65, "magnitude": "within 25%"},
     r"paper_value = 1.65, magnitude = 'within 25%' on a template.*plain id naming that configuration"),
    ({"id": "x_faster_{tier}", "paper_value": 2.0, "derived": "'almost double'"}, "on a template"),
    # a paper number is shown beside ours with how close ours must be (the smoke claims table
    # found three rows of the headline pass without it)
    ({"paper_value": 2.0}, "paper_value = 2.0 without a magnitude"),
])
def test_a_bad_declaration_stops_with_its_id(tmp_path, change, words):
    f = _write(tmp_path, [{**ROW, **change}])
    with pytest.raises(ValueError, match=words) as e:
        D._load(f)
    assert "x_faster" in str(e.value)


def test_a_margin_with_its_reason_and_a_plain_id_with_its_paper_value_load(tmp_path):
    src = D._load(_write(tmp_path, [
        {**ROW, "margin": 0.1, "margin_why": "the paper's own spread"},
        {**ROW, "id": "x_faster_disk", "paper_value": 1.65, "magnitude": "within 25%"},
        {**ROW, "id": "x_faster_{tier}"}]))
    assert [d.id for d in src.claims] == ["x_faster", "x_faster_disk", "x_faster_{tier}"]


def test_join_judges_the_measured_fills_the_unmeasured_and_rejects_the_undeclared(monkeypatch, tmp_path):
    from experiments.statistics.stats import Interval

    src = D._load(_write(tmp_path, [
        ROW, {**ROW, "id": "x_faster_{tier}", "basis": "extension", "quote": None,
              "statement": "A is faster on {tier}"},
        {**ROW, "id": "x_at_scale", "needs": "9,216 processes"}]))
    monkeypatch.setattr(D, "sources", lambda: (src,))
    iv = Interval(1.2, 1.5, 10, "bootstrap")
    out = {c["id"]: c for c in D.join("s", [D.Measured("x_faster", 1.3, iv),
                                            D.Measured("x_faster_nvme", 0.5, Interval(0.4, 0.6, 10, "bootstrap"))])}
    assert out["x_faster"]["verdict"] == "holds" and out["x_faster"]["basis"] == "stated"
    assert out["x_faster_nvme"]["verdict"] == "fails" and out["x_faster_nvme"]["statement"] == "A is faster on nvme"
    assert out["x_faster_nvme"]["basis"] == "extension"
    assert out["x_at_scale"]["verdict"] == "not measured" and "9,216 processes" in out["x_at_scale"]["note"]
    with pytest.raises(ValueError, match="x_slower"):
        D.join("s", [D.Measured("x_slower", 1.0)])


def test_a_measurement_on_a_configuration_the_paper_did_not_run_is_an_extension(monkeypatch, tmp_path):
    src = D._load(_write(tmp_path, [{**ROW, "paper_value": 2.0, "magnitude": "within 2x",
                                     "derived": "x"}]))
    monkeypatch.setattr(D, "sources", lambda: (src,))
    c = D.join("s", [D.Measured("x_faster", 1.3, extension=True)])[0]
    assert (c["basis"], c["paper_value"], c["magnitude"], c["quote"]) == ("extension", None, None, None)


def test_a_note_or_statement_naming_an_absolute_path_stops_the_join(monkeypatch, tmp_path):
    """The table is read on other hosts: a path of this one names nothing there. The join stops,
    naming the stage, the claim and the path; a path relative to the project passes."""
    from experiments.settings import paths

    src = D._load(_write(tmp_path, [ROW, {**ROW, "id": "x_other"}]))
    monkeypatch.setattr(D, "sources", lambda: (src,))
    model = paths.root() / "results" / "workload_fits" / "compute_model.json"
    with pytest.raises(ValueError, match=r"stage 's', claim 'x_faster': its note names the absolute "
                                         r"path '/.*compute_model.json'"):
        D.join("s", [D.Measured("x_faster", 1.3, note=f"model: {model}; mean of max(0, N)")])
    with pytest.raises(ValueError, match=r"claim 'x_other': its statement names .*'/dev/shm/tier-x/a'"):
        D.join("s", [D.Measured("x_other", 1.3, context="tier mem at /dev/shm/tier-x/a")])
    with pytest.raises(ValueError, match=r"claim 'x_faster': its note names .*'/home/u/run.log'"):
        D.join("s", [D.Measured("x_faster", why_not="see /home/u/run.log")])
    ok = D.join("s", [D.Measured("x_faster", 1.3, note=f"model: {paths.shown(model)}; 12 MB/s, 1/3 "
                                                         "of reads, /proc/<pid>/io read_bytes")])
    assert "model: results/workload_fits/compute_model.json" in ok[0]["note"]
    assert paths.shown("/elsewhere/my_model.json") == "my_model.json" and paths.shown("thesis-v100") == "thesis-v100"


def test_a_template_measured_on_a_memory_backed_tier_is_our_extension(monkeypatch, tmp_path):
    """The papers read from storage devices: on tmpfs a template's row is ours whatever its
    declared basis (no quote shown as its ground); a plain id keeps its basis."""
    src = D._load(_write(tmp_path, [{**ROW, "id": "x_faster_{tier}"}, {**ROW, "id": "x_plain"}]))
    monkeypatch.setattr(D, "sources", lambda: (src,))
    out = {c["id"]: c for c in D.join("s", [D.Measured("x_faster_mem", 1.3, memory_backed=True),
                                           D.Measured("x_faster_disk", 1.3),
                                           D.Measured("x_plain", 1.3, memory_backed=True)])}
    assert (out["x_faster_mem"]["basis"], out["x_faster_mem"]["quote"]) == ("extension", None)
    assert (out["x_faster_disk"]["basis"], out["x_faster_disk"]["quote"]) == ("stated", ROW["quote"])
    assert out["x_plain"]["basis"] == "stated"


def test_no_template_takes_the_ids_of_another_declaration_of_its_stage():
    """The first template an id matches is its declaration (:func:`D.lookup`): a template that
    also matches the ids of a later declaration of the same stage (``x-{w}`` before ``x-vs-y-{w}``)
    would take them, with its own statement and rule."""
    wrong = []
    for stage in {d.stage for _, d in D.declared().values()}:
        rows = [d for _, d in D.declared(stage).values()]
        for i, d in enumerate(rows):
            sample = re.sub(r"\{\w+\}", "zz", d.id)
            found = D.lookup(stage, sample)
            if found is None or found[1].id != d.id:
                wrong.append(f"{d.id} (as {sample!r}) resolves to {found[1].id if found else None}")
    assert not wrong, wrong


# -- rules that cannot test their statement (issue 66): a planted declaration of each kind stops
# -- with the row's id, the field and what is allowed

@pytest.mark.parametrize("change,field,allowed", [
    # a level judged by "> 0": a bandwidth is never below 0, only the magnitude could decide
    ({"unit": "MB/s", "rule": "> 0", "paper_value": 7411.98, "magnitude": "within 25%"},
     r"rule = '> 0' on a level \(unit = 'MB/s'\)", r"allowed: a level threshold in its unit"),
    # a level given a ratio's default 5 % margin (1 read as "no effect")
    ({"unit": "GB/s", "rule": "> 1"}, r"rule = '> 1' on a level \(unit = 'GB/s'\) takes a ratio's default margin",
     r"allowed: margin and margin_why stating the margin in the level's own unit"),
    ({"unit": "% of the private threads' wall time", "rule": "> 1", "basis": "implied"},
     r"on a level .* default margin", r"allowed: margin and margin_why"),
    # a quote naming an exception, on a row that does not say what it leaves out
    ({"quote": "Except for the 4 GPU case however, we see that the sleep times approximate the original.",
      "unit": "max |sleep / real - 1| over configurations", "rule": "<= 0.1"},
     r"the quote names an exception \('Except'.*excludes is empty", r"allowed: excludes naming what the row leaves out"),
    ({"quote": "A is faster than B, excluding the smallest batch.", "statement": "A is faster at every batch"},
     r"exception \('excluding'.*over every configuration \('every'\)", r"allowed: excludes"),
    # the paper's rounded value as the threshold, judged unrounded
    ({"unit": "similarity (0-1)", "rule": ">= 0.95", "paper_value": 0.95,
      "quote": "These workload runs achieve a similarity of 95%."},
     r"takes the paper's value 0.95 as its threshold.*rounded", r"allowed: precision = the text's last digit"),
    # a precision whose threshold is not at a rounding edge
    ({"unit": "similarity (0-1)", "rule": ">= 0.95", "paper_value": 0.95, "precision": 0.01,
      "quote": "These workload runs achieve a similarity of 95%."},
     r"precision = 0.01 with rule = '>= 0.95': the threshold is not at a rounding edge", r"allowed: .*here 0.945"),
])
def test_a_rule_that_cannot_test_its_statement_stops_with_its_id(tmp_path, change, field, allowed):
    f = _write(tmp_path, [{**ROW, **change}])
    with pytest.raises(ValueError) as e:
        D._load(f)
    msg = str(e.value)
    assert "claim 'x_faster'" in msg and re.search(field, msg) and re.search(allowed, msg), msg


def test_the_same_rows_done_right_load(tmp_path):
    """Each kind above, declared so that its rule can fail: a level threshold with a margin in
    its unit, a ratio or a difference against 0 or 1, the exception left out and said, the
    threshold at the rounding edge, a bound the text states in words."""
    src = D._load(_write(tmp_path, [
        {**ROW, "id": "a", "unit": "MB/s", "rule": "> 5559", "paper_value": 7411.98, "magnitude": "within 25%",
         "margin": 0.1, "margin_why": "±556 MB/s: fio's runs spread by 10 %"},
        {**ROW, "id": "b", "unit": "GB/s", "rule": "> 1", "margin": 0.1, "margin_why": "±0.1 GB/s"},
        {**ROW, "id": "c", "unit": "similarity difference", "rule": "> 0", "margin": 0.01, "margin_why": "w"},
        {**ROW, "id": "d", "unit": "x (A / B)", "rule": "> 1"},
        {**ROW, "id": "e", "quote": "Except for the 4 GPU case, A is faster.", "excludes": "G = 4"},
        # a row of the exception itself judges no rule over every configuration
        {**ROW, "id": "e2", "quote": "The exception to this pattern is the 4GPU case.", "statement": "4 GPUs is fastest"},
        {**ROW, "id": "f", "unit": "similarity (0-1)", "rule": ">= 0.945", "paper_value": 0.95, "precision": 0.01,
         "magnitude": "within 6%", "quote": "These workload runs achieve a similarity of 95%."},
        {**ROW, "id": "g", "unit": "GB/s", "rule": "> 1", "paper_value": 1.0, "margin": 0.1, "margin_why": "w",
         "magnitude": "within 25%", "quote": "fast enough at a little over 1GB/s for large reads."}]))
    assert [d.id for d in src.claims] == ["a", "b", "c", "d", "e", "e2", "f", "g"]
    assert [D.unit_kind(u) for u in ("x", "ratio", "DLIO / real", "similarity difference",
                                     "% of images/s lost without XLA", "MB/s", "lowest AU (fraction)")] == \
        ["ratio", "ratio", "ratio", "difference", "difference", "level", "level"]


def test_a_row_judged_at_the_texts_precision_says_so(monkeypatch, tmp_path):
    """0.9476 is what the thesis would print as 95 %: at the text's precision it passes "95 %",
    and the note says the threshold is the rounding edge."""
    from experiments.statistics.stats import Interval

    src = D._load(_write(tmp_path, [{**ROW, "unit": "similarity (0-1)", "rule": ">= 0.945", "paper_value": 0.95,
                                     "precision": 0.01, "magnitude": "within 6%",
                                     "quote": "These runs achieve a similarity of 95%."}]))
    monkeypatch.setattr(D, "sources", lambda: (src,))
    c = D.join("s", [D.Measured("x_faster", 0.9476, Interval(0.9462, 0.949, 6, "t"))])[0]
    assert c["verdict"] == "holds" and "judged at the text's precision (0.01)" in c["note"]
    assert "threshold 0.945 is the rounding edge" in c["note"]


def test_every_declared_row_passes_the_four_kinds():
    """The declarations as committed: no level judged by > 0 or with a ratio's default margin, no
    exception in a quote left unsaid, no rounded paper value judged unrounded (they load)."""
    for s in D.sources():
        for d in s.claims:
            if d.quote and D._EXCEPTION.search(d.quote) and D._OVER_ALL.search(f"{d.unit} {d.statement}"):
                assert d.excludes, d.id
            if d.kind == "finding" and D.unit_kind(d.unit) == "level":
                assert d.rule.strip() not in ("> 0", ">= 0"), d.id
