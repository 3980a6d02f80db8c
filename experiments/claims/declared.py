"""The papers' side of every claim, declared once per source (``papers/<source>.yaml``), and the
join of a stage's measurements with it.

A declaration says what a paper claims and how we judge it: the quote it rests on (verbatim
from ``../shared/papers/<source>.txt``), the statement in our words, the paper's value (and,
when the quote does not hold that number as written, how it was ``derived``), the rule and its
margin, the stage that measures it, and for a row no code can measure what a measurement would
need. A stage's report measures (:class:`Measured`: a value, its interval and a note for a
declared id) and :func:`join` makes the claims: the verdict logic stays in
:func:`experiments.verdicts.verdict.claim`.

Validated on load: an unknown field, a ``stated`` finding without a quote, a rule that does
not parse, a ``margin_why`` without a ``margin`` (its reason would never be shown), a paper
value on a template (an id with ``{name}`` fields stands for every tier, data set or count a
user configures, a paper value for the one the paper ran: it belongs on a plain id that names
that configuration), an id declared twice stop with the row's id and file. So do four kinds of
rule that cannot test their statement (issue 66): a level (a unit that is neither a ratio nor a
difference: MB/s, images/s, a share of wall time) judged by ``> 0``, which only the magnitude
decides; a level given a ratio's default 5 % margin (a rule ``> 1`` with no margin of its own:
:func:`experiments.verdicts.rules.default_margin` reads 1 as "no effect"); a quote that names an
exception ("Except for the 4 GPU case", "excluding ...") on a rule over every configuration (its
unit or statement says "every", "all", "max", "lowest", "over configurations") that does not say,
in ``excludes``, what it leaves out; a threshold that is the paper's value as the text prints it,
rounded, judged unrounded (``precision``: the text's last digit, the threshold at its rounding
edge, and the note says so). :func:`join` stops
on a claim whose note or statement holds an absolute path (a path of this host in the table a
reviewer reads elsewhere: :func:`experiments.settings.paths.shown` gives one relative to the project).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Iterable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..verdicts.measured import Measured  # noqa: F401 (what a stage's measure functions return)
from ..verdicts.rules import _missing, _parse, _parse_magnitude
from ..verdicts.verdict import claim

PAPERS = Path(__file__).with_name("papers")


# a unit that is a ratio of two quantities ("x", "x (...)", "ratio", "DLIO / real") or a
# difference ("similarity difference", "R² of A - R² of B", "accuracy points", "% ... lost"):
# against 0 or 1 a rule of these tests a direction; any other unit is a level (MB/s, images/s,
# GB/s, "% of the wall time", a similarity, an R²)
_RATIO_UNIT = re.compile(r"^\s*(x\b|ratio\b)|\s/\s")
_DIFFERENCE_UNIT = re.compile(r"difference|\s-\s|\bminus\b|\bpoints\b|\blost\b|\bgain\b", re.I)
# words of a quote that name an exception to what it says of the configurations
_EXCEPTION = re.compile(r"\b(except|exception|excluding|apart from|other than)\b", re.I)
# words of a unit or statement that make its rule one over every configuration run
_OVER_ALL = re.compile(r"\b(every|all|each|over (?:the )?configurations|lowest|highest|max|min|worst|best)\b",
                       re.I)
# words that make the number beside them a bound the text states, not a value it printed rounded
_BOUND_WORDS = re.compile(r"\b(over|above|below|under|at least|at most|more than|less than|or more|"
                          r"or above|or less|up to)\b", re.I)


def unit_kind(unit: str) -> str:
    """``ratio``, ``difference`` or ``level``: what a rule's threshold is in ``unit`` (see
    :data:`_RATIO_UNIT`)."""
    if _RATIO_UNIT.search(unit or ""):
        return "ratio"
    if _DIFFERENCE_UNIT.search(unit or ""):
        return "difference"
    return "level"


# what a template (an id with {name} fields) does not carry: they belong to the configuration the
# paper ran, which a plain id names
TEMPLATE_NOT = ("paper_value", "magnitude", "derived")


class Declaration(BaseModel):
    """One claim's paper side. ``where``: section, figure or table of the text; ``quote``: the
    sentence or table cell it rests on, verbatim (at most about two sentences);
    ``paper_value``: the paper's number (or a range/words as the text gives them);
    ``derived``: how ``paper_value`` follows from the text when the quote does not hold it as
    written (a ratio of two numbers, a reading of a figure); ``needs``: for a row that may go
    unmeasured, what a measurement would need."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["finding", "check"]
    stage: str
    where: str
    statement: str
    unit: str
    rule: str
    basis: Literal["stated", "implied", "extension"] | None = None
    quote: str | None = None
    paper_value: float | int | str | None = None
    derived: str | None = None
    magnitude: str | None = None
    margin: float | None = None
    margin_why: str = ""
    needs: str | None = None
    # the configurations the quote leaves out ("Except for the 4 GPU case": "G = 4"), in words; the
    # measure leaves them out too, and the statement says so
    excludes: str | None = None
    # the text's precision for a value it prints rounded (95 % -> 0.01): the rule's threshold sits
    # at the rounding edge (">= 0.945"), every value the text would print as its number passing
    precision: float | None = None
    # the configurations the finding compares, per measuring stage: {stage: {key: value or list}};
    # a string value may name a field of a templated id or of the stage's context ("{tier}",
    # "{storage_tier}"). What the stage's rounds focus on and what make decide buys
    # (experiments/repeats/findings.py); none: the finding steers no stage's rounds
    compares: dict[str, dict[str, Any]] | None = None

    @property
    def template(self) -> re.Pattern | None:
        """For an id with ``{name}`` fields (``lmdbio_lmm_faster_than_lmdb_{dataset}``: one
        declaration for every data set, tier or count a user configures), the pattern its
        measured ids match; None for a plain id."""
        if "{" not in self.id:
            return None
        parts = re.split(r"\{(\w+)\}", self.id)
        return re.compile("".join(re.escape(x) if i % 2 == 0 else f"(?P<{x}>.+?)"
                                  for i, x in enumerate(parts)) + "$")

    @field_validator("rule")
    @classmethod
    def _rule_parses(cls, v: str) -> str:
        _parse(v)
        return v

    @field_validator("compares")
    @classmethod
    def _compares_names_measuring_stages(cls, v):
        from ..repeats.purchases import BUYING

        bad = sorted(set(v or {}) - set(BUYING))
        if bad:
            raise ValueError(f"compares names {bad}; allowed: measuring stages {', '.join(BUYING)}")
        for stage, sel in (v or {}).items():
            if not isinstance(sel, dict):
                raise ValueError(f"compares.{stage} = {sel!r}; allowed: a mapping of configuration keys "
                                 "to a value or a list of values")
        return v

    @field_validator("magnitude")
    @classmethod
    def _magnitude_parses(cls, v: str | None) -> str | None:
        if v is not None:
            _parse_magnitude(v)
        return v

    @model_validator(mode="after")
    def _consistent(self):
        if self.kind == "finding" and self.basis is None:
            raise ValueError("a finding needs a basis: stated, implied or extension")
        if self.kind == "check" and self.basis is not None:
            raise ValueError(f"basis = {self.basis!r} on a check; allowed: none (a check is ours)")
        if self.basis == "stated" and not (self.quote or "").strip():
            raise ValueError("a stated finding needs the quote of the text it rests on")
        if self.compares and self.kind != "finding":
            raise ValueError("compares on a check; allowed: on a finding (a check steers no rounds)")
        if self.basis == "extension" and self.paper_value is not None:
            raise ValueError("an extension has no paper value")
        if self.margin_why.strip() and self.margin is None:
            raise ValueError("margin_why without a margin: the reason is shown only beside a margin "
                             "other than the default; allowed: a margin with it, or the reason in the "
                             "statement (a 'between' rule or a check has no margin)")
        self._rule_can_test_its_statement()
        if self.template is not None and any(getattr(self, f) is not None for f in TEMPLATE_NOT):
            given = ", ".join(f"{f} = {getattr(self, f)!r}" for f in TEMPLATE_NOT if getattr(self, f) is not None)
            raise ValueError(f"{given} on a template: an id with {{name}} fields stands for every tier, "
                             "data set or count a user configures, a paper value for the one the paper "
                             "ran; allowed: the value on a plain id naming that configuration (the tier "
                             "it belongs to), the template without paper value, magnitude or derived")
        if self.kind == "finding" and isinstance(self.paper_value, (int, float)) and not self.magnitude:
            raise ValueError(f"paper_value = {self.paper_value!r} without a magnitude: a finding with a "
                             "paper number shows ours beside it; allowed: magnitude ('within 25%', "
                             "'within 2x', ...) saying how close ours must be to read as the paper's")
        return self

    def _rule_can_test_its_statement(self) -> None:
        """The four kinds of rule that cannot test their statement (module docstring)."""
        r = _parse(self.rule)
        kind = unit_kind(self.unit)
        if self.kind == "finding" and r.threshold == 0 and kind == "level":
            raise ValueError(
                f"rule = {self.rule!r} on a level (unit = {self.unit!r}): a level is never below 0, so "
                "only the magnitude could decide; allowed: a level threshold in its unit ('> X', X the "
                "smallest value the statement means) with a margin and margin_why in that unit, or a "
                "unit that is a ratio ('x', 'A / B') or a difference")
        if self.kind == "finding" and r.threshold == 1 and kind == "level" and self.margin is None:
            raise ValueError(
                f"rule = {self.rule!r} on a level (unit = {self.unit!r}) takes a ratio's default margin of "
                "5 % (1 as 'no effect'), which means nothing in this unit; allowed: margin and "
                "margin_why stating the margin in the level's own unit")
        over_all = _OVER_ALL.search(f"{self.unit} {self.statement}")
        if self.quote and (m := _EXCEPTION.search(self.quote)) and over_all and not (self.excludes or "").strip():
            raise ValueError(
                f"the quote names an exception ({m.group(0)!r}: "
                f"{self.quote[max(0, m.start() - 20):m.end() + 40].strip()!r}) and excludes is empty: a "
                f"rule over every configuration ({over_all.group(0)!r}) would judge the case the text leaves "
                "out; allowed: "
                "excludes naming what the row leaves out (its measure leaves it out too), or a quote "
                "without the exception")
        numeric = isinstance(self.paper_value, (int, float)) and not isinstance(self.paper_value, bool)
        if (self.kind == "finding" and self.basis == "stated" and numeric and r.threshold is not None
                and self.precision is None and math.isclose(r.threshold, float(self.paper_value), rel_tol=1e-9)
                and not _BOUND_WORDS.search(self.quote or "")):
            raise ValueError(
                f"rule = {self.rule!r} takes the paper's value {self.paper_value!r} as its threshold, as "
                "the text prints it, rounded: a value the text would print the same fails it; allowed: "
                "precision = the text's last digit (0.01 for '95 %') with the threshold at its rounding "
                "edge ('>= 0.945'), or a threshold the text states as a bound ('over', 'at least')")
        if self.precision is not None:
            p = self.precision
            if not (p > 0 and r.threshold is not None):
                raise ValueError(f"precision = {p!r} with rule = {self.rule!r}; allowed: a number > 0 on a "
                                 "comparison rule ('>= X', '< X')")
            # the rounding edge: a printed number k p minus half a digit for a lower bound, plus
            # half a digit for an upper one
            k = (r.threshold + (p / 2 if math.isinf(r.upper) else -p / 2)) / p
            if not math.isclose(k, round(k), abs_tol=1e-6):
                # the edge of the number the threshold was printed as
                edge = r.threshold - p / 2 if math.isinf(r.upper) else r.threshold + p / 2
                raise ValueError(
                    f"precision = {p!r} with rule = {self.rule!r}: the threshold is not at a rounding edge "
                    f"of the text's digits; allowed: a threshold half a digit from a printed number "
                    f"(here {edge:.6g}), so that every value the text would print as that number passes")


@dataclass
class Source:
    """One source's declarations: ``name`` as the table shows it (``Chien 2018``), ``text``
    the stem of its text in ``../shared/papers/`` (None: not at hand here)."""

    file: Path
    name: str
    text: str | None
    claims: list[Declaration] = field(default_factory=list)


def _load(file: Path) -> Source:
    raw = yaml.safe_load(file.read_text()) or {}
    unknown = set(raw) - {"source", "text", "claims"}
    if unknown:
        raise ValueError(f"{file}: unknown top-level field(s) {sorted(unknown)}; allowed: source, "
                         "text, claims")
    src = Source(file, raw.get("source") or "", raw.get("text"))
    if not src.name:
        raise ValueError(f"{file}: 'source' is missing (the paper's name as the table shows it)")
    for i, row in enumerate(raw.get("claims") or []):
        rid = (row or {}).get("id", f"#{i + 1}")
        try:
            src.claims.append(Declaration(**row))
        except (ValidationError, ValueError, TypeError) as e:
            raise ValueError(f"{file.name}: claim {rid!r}: {e}") from None
    return src


@cache
def sources() -> tuple[Source, ...]:
    """Every declared source, one per ``papers/*.yaml``."""
    out = tuple(_load(f) for f in sorted(PAPERS.glob("*.yaml")))
    seen: dict[str, Path] = {}
    for s in out:
        for d in s.claims:
            if d.id in seen:
                raise ValueError(f"claim {d.id!r} declared twice: {seen[d.id].name} and {s.file.name}")
            seen[d.id] = s.file
    return out


def declared(stage: str | None = None) -> dict[str, tuple[Source, Declaration]]:
    """{id: (source, declaration)} of every declared claim, or of those ``stage`` measures, in
    file order."""
    return {d.id: (s, d) for s in sources() for d in s.claims if stage is None or d.stage == stage}


def lookup(stage: str, claim_id: str) -> tuple[Source, Declaration, dict[str, str]] | None:
    """The declaration of ``claim_id`` among ``stage``'s: the plain id first, else the first
    template it matches, with the template's fields ({"dataset": "cifar"}); None when
    undeclared."""
    decl = declared(stage)
    if claim_id in decl:
        return (*decl[claim_id], {})
    for s, d in decl.values():
        if d.template is not None and (m := d.template.match(claim_id)):
            return s, d, m.groupdict()
    return None


def join(stage: str, measured: Iterable[Measured]) -> list[dict]:
    """The claims of ``stage``: each measurement joined with its declaration (verdict by
    :func:`experiments.claims.claim`), then every declared claim of the stage no measurement
    names, as ``not measured`` with its declared ``needs``. A measured id that is not declared
    for ``stage`` is an error."""
    out, seen = [], set()
    for m in measured:
        found = lookup(stage, m.id)
        if found is None:
            other = [d.stage for _, d in declared().values()
                     if d.id == m.id or (d.template is not None and d.template.match(m.id))]
            where = (f"it is declared for the stage {other[0]!r}" if other else
                     "declare it in experiments/claims/papers/<source>.yaml")
            raise ValueError(f"stage {stage!r} measured the claim {m.id!r}, which it does not "
                             f"declare: {where}")
        if m.id in seen:
            raise ValueError(f"stage {stage!r} measured the claim {m.id!r} twice")
        seen.add(m.id)
        out.append(_claim(*found, m))
    for i, (s, d) in declared(stage).items():
        if i not in seen and d.template is None:
            out.append(_claim(s, d, {}, Measured(i, why_not=d.needs or "no code of this stage measured it")))
    return out


# an absolute path: "/" after a space, an opening bracket or quote, or at the start, then two or
# more name segments ("/home/u/run/model.json"); not "MB/s", "1/3" or "a /proc sampler".
# The kernel's interfaces (/proc/..., /sys/...) are the same on every Linux host and may be named.
_ABSOLUTE = re.compile(r"(?:^|(?<=[\s(\[{'\"=:,;]))(/(?!proc/|sys/)[\w.@+~-]+(?:/[\w.@+~<>-]+)+)")


def absolute_paths(text: str) -> list[str]:
    """The absolute paths of this host ``text`` names (see :data:`_ABSOLUTE`)."""
    return _ABSOLUTE.findall(text or "")


def _no_absolute_path(stage: str, c: dict) -> None:
    """Stop on a claim whose note or statement names an absolute path: the table is read on other
    hosts, where it names nothing (:func:`experiments.settings.paths.shown`: a path relative to the project)."""
    for part in ("note", "statement"):
        found = absolute_paths(c.get(part) or "")
        if found:
            raise ValueError(f"stage {stage!r}, claim {c['id']!r}: its {part} names the absolute path "
                             f"{found[0]!r}; allowed: a path relative to the project root "
                             "(experiments.settings.paths.shown) or a file's name")


def _claim(s: Source, d: Declaration, fields: dict[str, str], m: Measured) -> dict:
    value = None if _missing(m.value) else m.value
    statement = d.statement.format(**fields) if fields else d.statement
    statement = f"{statement} ({m.context})" if m.context else statement
    # a template measured on a memory-backed tier (tmpfs): the papers read their data from storage
    # devices, so the configuration is ours whatever the declared basis
    if (m.extension or (m.memory_backed and d.template is not None)) and d.kind == "finding":
        d = d.model_copy(update={"basis": "extension", "paper_value": None, "quote": None,
                                 "magnitude": None, "derived": None})
    note = m.note
    if d.precision is not None and d.kind == "finding":
        # the row says it is judged at the text's precision, and where the edge lies
        note = "; ".join(x for x in (note, f"judged at the text's precision ({d.precision:g}): the rule's "
                                            f"threshold {_parse(d.rule).threshold:g} is the rounding edge "
                                            "of the number the text prints") if x)
    c = claim(m.id, s.name, d.where, statement, value, d.unit, d.rule, paper_value=d.paper_value,
              note=note, why_not=m.why_not or (d.needs or "" if value is None else ""),
              kind=d.kind, magnitude=d.magnitude, resident_fraction=m.resident_fraction,
              memory_backed=m.memory_backed, interval=m.interval, basis=d.basis,
              margin=d.margin, margin_why=d.margin_why, not_comparable=m.not_comparable)
    out = {**c, "quote": d.quote, "derived": d.derived}
    _no_absolute_path(d.stage, out)
    return out
