"""The papers' side of every claim, declared once per source (``papers/<source>.yaml``), and the
join of a stage's measurements with it.

A declaration says what a paper claims and how we judge it: the quote it rests on (verbatim
from ``../shared/papers/<source>.txt``), the statement in our words, the paper's value (and,
when the quote does not hold that number as written, how it was ``derived``), the rule and its
margin, the stage that measures it, and for a row no code can measure what a measurement would
need. A stage's report measures (:class:`Measured`: a value, its interval and a note for a
declared id) and :func:`join` makes the claims: the verdict logic stays in
:func:`experiments.claims.verdict.claim`.

Validated on load: an unknown field, a ``stated`` finding without a quote, a rule that does
not parse, a ``margin_why`` without a ``margin`` (its reason would never be shown), a paper
value on a template (an id with ``{name}`` fields stands for every tier, data set or count a
user configures, a paper value for the one the paper ran: it belongs on a plain id that names
that configuration), an id declared twice stop with the row's id and file. :func:`join` stops
on a claim whose note or statement holds an absolute path (a path of this host in the table a
reviewer reads elsewhere: :func:`experiments.paths.shown` gives one relative to the project).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Iterable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from .measured import Measured  # noqa: F401 (what a stage's measure functions return)
from .rules import _missing, _parse, _parse_magnitude
from .verdict import claim

PAPERS = Path(__file__).with_name("papers")


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
        if self.template is not None and any(getattr(self, f) is not None for f in TEMPLATE_NOT):
            given = ", ".join(f"{f} = {getattr(self, f)!r}" for f in TEMPLATE_NOT if getattr(self, f) is not None)
            raise ValueError(f"{given} on a template: an id with {{name}} fields stands for every tier, "
                             "data set or count a user configures, a paper value for the one the paper "
                             "ran; allowed: the value on a plain id naming that configuration (the tier "
                             "it belongs to), the template without paper value, magnitude or derived")
        return self


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
    hosts, where it names nothing (:func:`experiments.paths.shown`: a path relative to the project)."""
    for part in ("note", "statement"):
        found = absolute_paths(c.get(part) or "")
        if found:
            raise ValueError(f"stage {stage!r}, claim {c['id']!r}: its {part} names the absolute path "
                             f"{found[0]!r}; allowed: a path relative to the project root "
                             "(experiments.paths.shown) or a file's name")


def _claim(s: Source, d: Declaration, fields: dict[str, str], m: Measured) -> dict:
    value = None if _missing(m.value) else m.value
    statement = d.statement.format(**fields) if fields else d.statement
    statement = f"{statement} ({m.context})" if m.context else statement
    # a template measured on a memory-backed tier (tmpfs): the papers read their data from storage
    # devices, so the configuration is ours whatever the declared basis
    if (m.extension or (m.memory_backed and d.template is not None)) and d.kind == "finding":
        d = d.model_copy(update={"basis": "extension", "paper_value": None, "quote": None,
                                 "magnitude": None, "derived": None})
    c = claim(m.id, s.name, d.where, statement, value, d.unit, d.rule, paper_value=d.paper_value,
              note=m.note, why_not=m.why_not or (d.needs or "" if value is None else ""),
              kind=d.kind, magnitude=d.magnitude, resident_fraction=m.resident_fraction,
              memory_backed=m.memory_backed, interval=m.interval, basis=d.basis,
              margin=d.margin, margin_why=d.margin_why)
    out = {**c, "quote": d.quote, "derived": d.derived}
    _no_absolute_path(d.stage, out)
    return out
